//! The Python venvs of the PyPI packages that tests drive as real clients (the `mcp` SDK, the
//! `duckdb` package), kept under `~/.cache/iec/venv-NAME` across runs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The python of the venv `~/.cache/iec/venv-NAME` holding the PyPI package `package`
/// (imported as `module`), installing it on first use. `None` (after printing `SKIPPED: …`)
/// only when the install failed and `IEC_SKIP_PYPI=1` is set; otherwise a failure panics.
pub fn python(name: &str, package: &str, module: &str) -> Option<PathBuf> {
    python_from(name, package, module, Path::new("python3"), "IEC_SKIP_PYPI")
}

/// [`python`] with the venv made by `interpreter` (e.g. one of [`find_python`]), and `skip`
/// the variable whose value `1` turns a failed install into `SKIPPED`.
pub fn python_from(
    name: &str,
    package: &str,
    module: &str,
    interpreter: &Path,
    skip: &str,
) -> Option<PathBuf> {
    let home = std::env::var_os("HOME").expect("HOME is set");
    let dir = Path::new(&home).join(".cache/iec").join(format!("venv-{name}"));
    let py = dir.join("bin/python");
    let has = |py: &Path| {
        Command::new(py)
            .args(["-c", &format!("import {module}")])
            .status()
            .is_ok_and(|s| s.success())
    };
    if has(&py) {
        return Some(py);
    }
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(format!(
                "{cmd:?} failed: {}\n{}",
                out.status,
                String::from_utf8_lossy(&out.stderr)
            ))
        }
    };
    let install = || -> Result<(), String> {
        if !py.exists() {
            std::fs::create_dir_all(dir.parent().unwrap()).map_err(|e| e.to_string())?;
            run(Command::new(interpreter).arg("-m").arg("venv").arg(&dir))?;
        }
        run(Command::new(dir.join("bin/pip")).args(["install", "-q", package]))?;
        if has(&py) {
            Ok(())
        } else {
            Err(format!(
                "pip installed {package} but `import {module}` still fails"
            ))
        }
    };
    match install() {
        Ok(()) => Some(py),
        Err(e) if std::env::var(skip).as_deref() == Ok("1") => {
            println!("SKIPPED: the PyPI package {package} could not be installed: {e}");
            None
        }
        Err(e) => panic!(
            "could not install the PyPI package {package} into {} (set {skip}=1 to skip \
             this test): {e}",
            dir.display()
        ),
    }
}

/// A Python interpreter of version 3.`min_minor` or newer: `python3.N` on `PATH` (newest
/// first), `python3`, then pyenv's versions (`$PYENV_ROOT`, else `~/.pyenv`).
pub fn find_python(min_minor: u32) -> Option<PathBuf> {
    let fits = |py: &Path| {
        Command::new(py)
            .args([
                "-c",
                &format!("import sys; sys.exit(0 if sys.version_info >= (3, {min_minor}) else 1)"),
            ])
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success())
    };
    let mut candidates: Vec<PathBuf> = (min_minor..=20)
        .rev()
        .map(|m| PathBuf::from(format!("python3.{m}")))
        .collect();
    candidates.push("python3".into());
    let root = std::env::var_os("PYENV_ROOT")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".pyenv")));
    if let Some(Ok(rd)) = root.map(|r| std::fs::read_dir(r.join("versions"))) {
        let mut versions: Vec<PathBuf> = rd.flatten().map(|e| e.path().join("bin/python3")).collect();
        versions.sort();
        versions.reverse();
        candidates.extend(versions);
    }
    candidates.into_iter().find(|p| fits(p))
}
