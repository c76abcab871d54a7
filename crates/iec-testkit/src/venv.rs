//! The Python venvs of the PyPI packages that tests drive as real clients (the `mcp` SDK, the
//! `duckdb` package), kept under `~/.cache/iec/venv-NAME` across runs.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The python of the venv `~/.cache/iec/venv-NAME` holding the PyPI package `package`
/// (imported as `module`), installing it on first use. `None` (after printing `SKIPPED: …`)
/// only when the install failed and `IEC_SKIP_PYPI=1` is set; otherwise a failure panics.
pub fn python(name: &str, package: &str, module: &str) -> Option<PathBuf> {
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
            run(Command::new("python3").arg("-m").arg("venv").arg(&dir))?;
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
        Err(e) if std::env::var("IEC_SKIP_PYPI").as_deref() == Ok("1") => {
            println!("SKIPPED: the PyPI package {package} could not be installed: {e}");
            None
        }
        Err(e) => panic!(
            "could not install the PyPI package {package} into {} (set IEC_SKIP_PYPI=1 to skip \
             this test): {e}",
            dir.display()
        ),
    }
}
