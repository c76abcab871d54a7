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

/// Longest text given to `-n -c` as an argument: execve refuses a single argument of
/// `MAX_ARG_STRLEN` (131,072 bytes with its NUL) or more with E2BIG. A longer text (a repair
/// rendering writes each byte as four) is read from a script file instead.
const LONGEST_C_ARGUMENT: usize = 131_071;

/// `SHELL -n [OPTIONS] -c TEXT`, or for a text too long for an argument `SHELL -n [OPTIONS]
/// FILE` with the file's name in the messages put back as `-c` text names it (`/bin/bash: -c:
/// line 3: …`, `dash: 3: …`): the parse is the same, the line numbers too. Returns whether the
/// shell exited 0, and its diagnostics.
fn syntax_run(
    shell: &OsStr,
    options: &[&OsStr],
    text: &[u8],
    c_prefix: &str,
) -> Result<(bool, String), WitnessError> {
    let mut args: Vec<&OsStr> = vec![OsStr::new("-n")];
    args.extend(options);
    let (out, file) = if text.len() <= LONGEST_C_ARGUMENT {
        args.extend([OsStr::new("-c"), OsStr::from_bytes(text)]);
        (run(shell, &args)?, None)
    } else {
        let mut f = tempfile::Builder::new().prefix("iec-syntax-").tempfile()?;
        f.write_all(text)?;
        f.flush()?;
        args.push(f.path().as_os_str());
        (run(shell, &args)?, Some(f))
    };
    let mut message = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    if let Some(f) = file {
        message = message.replace(&format!("{}: ", f.path().display()), c_prefix);
    }
    Ok((out.status.success(), message))
}

fn syntax_check(
    shell: &OsStr,
    options: &[&OsStr],
    text: &[u8],
    c_prefix: &str,
) -> Result<Result<(), String>, WitnessError> {
    let (ok, message) = syntax_run(shell, options, text, c_prefix)?;
    Ok(if ok { Ok(()) } else { Err(message) })
}

/// What a `bash -n` that exited 0 says when bash gave up without reading the whole text.
pub const ABANDONED: &str = "bash abandons this text: a malformed `[[ … ]]` ends its parse (status 0, the rest of the text unread, nothing runs)";

/// Whether bash's parser reads `text` to its end. bash 5.2 abandons a text at a malformed
/// `[[ … ]]` (`[[ ]]`, `[[|a`, `[[ a b ]]`) and exits 0, sometimes without a word, so `bash -n`'s
/// status does not tell. With `-v` bash echoes each line as its parser reads it: a comment line
/// appended to the text is echoed only when the parser got there.
fn bash_reads_to_end(bash: &OsStr, options: &[&OsStr], text: &[u8]) -> Result<bool, WitnessError> {
    let mut end = format!("#iec-end-{}", std::process::id());
    while text.windows(end.len()).any(|w| w == end.as_bytes()) {
        end.push('x');
    }
    let mut probe = text.to_vec();
    probe.push(b'\n');
    probe.extend_from_slice(end.as_bytes());
    let mut opts = vec![OsStr::new("-v")];
    opts.extend(options);
    let (_, said) = syntax_run(bash, &opts, &probe, "")?;
    Ok(said.contains(&end))
}

/// `bash -n -c TEXT`: `Ok(Ok(()))` when it parses, `Ok(Err(message))` when it does not.
pub fn bash_n(text: &[u8], extglob: bool) -> Result<Result<(), String>, WitnessError> {
    let bash = bash_path();
    let options: &[&OsStr] = if extglob {
        &[OsStr::new("-O"), OsStr::new("extglob")]
    } else {
        &[]
    };
    let (ok, message) = syntax_run(
        bash.as_os_str(),
        options,
        text,
        &format!("{}: -c: ", bash.display()),
    )?;
    if !ok {
        return Ok(Err(message));
    }
    // Every abandoned parse found (bash 5.2.15) comes from the `[[` keyword, which a text can
    // only spell with those two bytes (aliases are off in `bash -c`): only such texts pay for
    // the second run.
    if text.windows(2).any(|w| w == b"[[") && !bash_reads_to_end(bash.as_os_str(), options, text)? {
        return Ok(Err(if message.is_empty() {
            ABANDONED.to_string()
        } else {
            format!("{message} ({ABANDONED})")
        }));
    }
    Ok(Ok(()))
}

/// `dash -n -c TEXT` (dash is `sh` on Debian): same contract as [`bash_n`].
pub fn dash_n(text: &[u8]) -> Result<Result<(), String>, WitnessError> {
    let dash = ["/usr/bin/dash", "/bin/dash", "/bin/sh"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("dash");
    syntax_check(OsStr::new(dash), &[], text, &format!("{dash}: "))
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A text longer than one execve argument is judged as the short text with the same lines
    /// is: the same verdict and, for an error, the same message (line number included).
    #[test]
    fn texts_beyond_an_argument_are_judged_like_short_ones() {
        let long_comment = format!("#{}\n", "x".repeat(200_000));
        for (short, long) in [
            ("#x\nif\n".to_string(), format!("{long_comment}if\n")),
            ("#x\necho 'a\n".to_string(), format!("{long_comment}echo 'a\n")),
            ("#x\necho ok\n".to_string(), format!("{long_comment}echo ok\n")),
            (
                "#x\nf() { :; }\n".to_string(),
                format!("{long_comment}f() {{ :; }}\n"),
            ),
        ] {
            assert!(long.len() > LONGEST_C_ARGUMENT);
            let (b_short, b_long) = (bash_n(short.as_bytes(), false), bash_n(long.as_bytes(), false));
            assert_eq!(b_long.unwrap(), b_short.unwrap(), "bash: {short:?}");
            let (d_short, d_long) = (dash_n(short.as_bytes()), dash_n(long.as_bytes()));
            assert_eq!(d_long.unwrap(), d_short.unwrap(), "dash: {short:?}");
        }
        let e = bash_n(format!("{long_comment}if\n").as_bytes(), true)
            .unwrap()
            .unwrap_err();
        assert!(
            e.ends_with(": -c: line 3: syntax error: unexpected end of file"),
            "{e}"
        );
        // The largest text a -c argument takes, and one byte more (from a file).
        for n in [LONGEST_C_ARGUMENT, LONGEST_C_ARGUMENT + 1] {
            let t = format!("#{}", "y".repeat(n - 1));
            assert_eq!(bash_n(t.as_bytes(), false).unwrap(), Ok(()), "{n}");
            assert_eq!(dash_n(t.as_bytes()).unwrap(), Ok(()), "{n}");
        }
    }
}
