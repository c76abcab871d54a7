//! Witnesses that start one process per question. They are exact and slow: the judge in tests
//! and the naive baseline in benchmarks.

use crate::server::bash_path;
use crate::WitnessError;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};

fn run(program: &OsStr, args: &[&OsStr]) -> Result<std::process::Output, WitnessError> {
    let dir = tempfile::Builder::new().prefix("iec-spawn-").tempdir()?;
    Command::new(program)
        .args(args)
        .env_clear()
        .env("PATH", "")
        .env("LANG", "C.UTF-8")
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .output()
        .map_err(|source| WitnessError::Start {
            program: program.to_string_lossy().into(),
            source,
        })
}

/// `bash -n -c TEXT`: `Ok(Ok(()))` when it parses, `Ok(Err(message))` when it does not.
pub fn bash_n(text: &[u8], extglob: bool) -> Result<Result<(), String>, WitnessError> {
    let bash = bash_path();
    let mut args: Vec<&OsStr> = vec![OsStr::new("-n")];
    if extglob {
        args.extend([OsStr::new("-O"), OsStr::new("extglob")]);
    }
    args.extend([OsStr::new("-c"), OsStr::from_bytes(text)]);
    let out = run(bash.as_os_str(), &args)?;
    if out.status.success() {
        Ok(Ok(()))
    } else {
        Ok(Err(String::from_utf8_lossy(&out.stderr).trim_end().to_string()))
    }
}

/// `dash -n -c TEXT` (dash is `sh` on Debian): same contract as [`bash_n`].
pub fn dash_n(text: &[u8]) -> Result<Result<(), String>, WitnessError> {
    let dash = ["/usr/bin/dash", "/bin/dash", "/bin/sh"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("dash");
    let out = run(
        OsStr::new(dash),
        &[OsStr::new("-n"), OsStr::new("-c"), OsStr::from_bytes(text)],
    )?;
    if out.status.success() {
        Ok(Ok(()))
    } else {
        Ok(Err(String::from_utf8_lossy(&out.stderr).trim_end().to_string()))
    }
}

/// The `BASH_ENV` witness: runs the real `bash` with `argv` (argv[0] is ignored, bash is
/// started by path) and a `BASH_ENV` file that records `$BASH_EXECUTION_STRING` and exits
/// before the `-c` text runs. Returns the text bash received.
pub fn bash_env_witness(argv: &[Vec<u8>]) -> Result<Vec<u8>, WitnessError> {
    let dir = tempfile::Builder::new().prefix("iec-bashenv-").tempdir()?;
    let env_file = dir.path().join("witness.bash");
    let out_file = dir.path().join("received");
    let mut f = std::fs::File::create(&env_file)?;
    writeln!(
        f,
        "printf '%s' \"$BASH_EXECUTION_STRING\" >| {}",
        shell_single_quote(out_file.as_os_str().as_bytes())
    )?;
    writeln!(f, "exit 0")?;
    drop(f);
    let bash = bash_path();
    let status = Command::new(&bash)
        .args(argv.iter().skip(1).map(|a| OsStr::from_bytes(a)))
        .env_clear()
        .env("PATH", "")
        .env("BASH_ENV", &env_file)
        .current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .map_err(|source| WitnessError::Start {
            program: bash.display().to_string(),
            source,
        })?;
    if !status.success() {
        return Err(WitnessError::Protocol(format!(
            "BASH_ENV witness exited with {status}"
        )));
    }
    Ok(std::fs::read(&out_file)?)
}

/// `'…'` quoting with `'\''` for embedded quotes.
pub fn shell_single_quote(s: &[u8]) -> String {
    let s = String::from_utf8_lossy(s);
    format!("'{}'", s.replace('\'', "'\\''"))
}
