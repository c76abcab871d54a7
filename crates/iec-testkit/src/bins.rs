//! Workspace binaries a test runs (the `iec` command, the argv probe, the shell shim), found
//! beside the test executable or built there.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A workspace binary: `$env_var`, else `<target>/<profile>/<name>` (the parent of the running
/// test's `deps/`), else built there with cargo (`cargo build -p PACKAGE --bin NAME` for that
/// profile and target directory).
pub fn workspace_bin(name: &str, package: &str, env_var: &str) -> PathBuf {
    if let Some(p) = std::env::var_os(env_var) {
        let p = PathBuf::from(p);
        assert!(p.is_file(), "{env_var}={} is not a file", p.display());
        return p;
    }
    let exe = std::env::current_exe().expect("current_exe");
    let profile_dir = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test executable lives in target/<profile>/deps/");
    let candidate = profile_dir.join(name);
    if candidate.is_file() {
        return candidate;
    }
    let profile = profile_dir
        .file_name()
        .and_then(|n| n.to_str())
        .unwrap_or("debug")
        .to_string();
    let target_dir = profile_dir.parent().expect("target dir");
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(&cargo);
    cmd.args(["build", "-p", package, "--bin", name])
        .arg("--target-dir")
        .arg(target_dir)
        .current_dir(env!("CARGO_MANIFEST_DIR"));
    match profile.as_str() {
        "debug" => {}
        "release" => {
            cmd.arg("--release");
        }
        other => {
            cmd.args(["--profile", other]);
        }
    }
    match cmd.status() {
        Ok(s) if s.success() && candidate.is_file() => candidate,
        other => panic!(
            "cannot find or build {name}: set {env_var}, or build it with `cargo build -p {package}` \
             (looked for {}; the build gave {other:?})",
            candidate.display()
        ),
    }
}
