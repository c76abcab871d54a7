//! Pinned npm packages in the project's cache: each in a directory of its own, installed into a
//! temporary sibling and renamed into place only when complete, so an interrupted install or two
//! concurrent ones never leave a half-filled directory that looks installed. Scripts are never
//! run (`--ignore-scripts`): the harness packages' postinstall steps only fetch or announce.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{bail, Context};

/// Refuses a version that could be anything but a version (it becomes part of a path and of
/// the npm spec).
pub fn check_version(what: &str, version: &str) -> anyhow::Result<()> {
    if version.is_empty()
        || !version
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '.' || c == '-')
    {
        bail!("bad {what} version {version:?}");
    }
    Ok(())
}

/// Where the pinned harness `package@version` (`what` names it in errors) is installed:
/// `~/.cache/iec/harnesses/<the package name's last part>-<version>`, and its npm spec.
pub fn pinned_harness(what: &str, package: &str, version: &str) -> anyhow::Result<(PathBuf, String)> {
    check_version(what, version)?;
    let name = package.rsplit('/').next().unwrap_or(package);
    Ok((
        crate::launch::harness_cache_dir()?.join(format!("{name}-{version}")),
        format!("{package}@{version}"),
    ))
}

/// What `installed` finds in `dir`, installing npm `spec` there first when it finds nothing.
/// Each of `passes` is one `npm install` attempt with those extra arguments, tried in order
/// until `installed` accepts the result (Claude Code: first without optional dependencies);
/// `missing` says what a finished install lacked when none does.
pub fn install_cached<T>(
    dir: &Path,
    spec: &str,
    passes: &[&[&str]],
    installed: impl Fn(&Path) -> Option<T>,
    missing: &str,
) -> anyhow::Result<T> {
    if let Some(t) = installed(dir) {
        return Ok(t);
    }
    let parent = dir.parent().context("an install directory has a parent")?;
    std::fs::create_dir_all(parent)?;
    let name = dir.file_name().unwrap_or_default().to_string_lossy();
    let tmp = tempfile::Builder::new()
        .prefix(&format!("{name}.tmp-"))
        .tempdir_in(parent)?;
    let mut last_err = String::new();
    for extra in passes {
        let out = Command::new("npm")
            .arg("install")
            .arg("--prefix")
            .arg(tmp.path())
            .args(["--ignore-scripts", "--no-audit", "--no-fund", "--loglevel=error"])
            .args(*extra)
            .arg(spec)
            .stdin(Stdio::null())
            .output()
            .context("cannot run npm (is node/npm installed?)")?;
        if !out.status.success() {
            last_err = format!(
                "npm install {spec} failed ({}): {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            );
            continue;
        }
        if installed(tmp.path()).is_none() {
            last_err = format!("npm installed {spec} but {missing}");
            continue;
        }
        let tmp_path = tmp.keep();
        if let Err(e) = std::fs::rename(&tmp_path, dir) {
            let _ = std::fs::remove_dir_all(&tmp_path);
            // Another process may have installed it meanwhile.
            if installed(dir).is_none() {
                return Err(e).context(format!("moving the install to {}", dir.display()));
            }
        }
        return installed(dir).with_context(|| format!("install vanished from {}", dir.display()));
    }
    bail!("{last_err}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_only_versions() {
        for ok in ["2.1.72", "0.171.0", "1.0.0-rc.1"] {
            check_version("X", ok).unwrap();
        }
        for bad in ["", "../x", "1.0 ", "1;rm", "@latest", "1/2"] {
            let e = check_version("X", bad).unwrap_err().to_string();
            assert_eq!(e, format!("bad X version {bad:?}"));
        }
    }

    #[test]
    fn a_complete_install_is_reused_without_npm() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("pkg-1.0.0");
        std::fs::create_dir(&dir).unwrap();
        std::fs::write(dir.join("entry.js"), "").unwrap();
        // A spec npm could not install: reaching npm would fail the call.
        let got = install_cached(
            &dir,
            "/nonexistent/pkg",
            &[&[]],
            |p| p.join("entry.js").is_file().then(|| p.to_path_buf()),
            "no entry.js",
        )
        .unwrap();
        assert_eq!(got, dir);
    }

    #[test]
    fn a_failed_install_leaves_nothing_behind() {
        let d = tempfile::tempdir().unwrap();
        let dir = d.path().join("pkg-1.0.0");
        let e = install_cached(
            &dir,
            "file:/nonexistent/iec-no-such-package",
            &[&[]],
            |p| p.join("entry.js").is_file().then_some(()),
            "no entry.js",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.starts_with("npm install file:/nonexistent/iec-no-such-package failed"),
            "{e}"
        );
        let left: Vec<_> = std::fs::read_dir(d.path()).unwrap().collect();
        assert!(left.is_empty(), "left behind: {left:?}");
    }
}
