//! Witnesses that start one process per question. They are exact and slow: the judge in tests
//! and the naive baseline in benchmarks.

use crate::server::bash_path;
use crate::WitnessError;
use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;
use std::process::{Command, Stdio};

/// Runs `program` with `args` in the witness jail (no new process, no write-open, no network:
/// see [`crate::jail`]) in a fresh empty directory, stdin closed, and collects its output.
/// `fd3` is handed to the program as descriptor 3 (the `BASH_ENV` witness writes there).
fn run_jailed(
    program: &OsStr,
    args: &[&OsStr],
    env: &[(&str, &OsStr)],
    fd3: Option<std::os::fd::OwnedFd>,
    readable: Option<&std::path::Path>,
) -> Result<std::process::Output, WitnessError> {
    use std::os::fd::AsRawFd;
    use std::os::unix::process::CommandExt;
    let dir = tempfile::Builder::new().prefix("iec-spawn-").tempdir()?;
    let program = resolve(program);
    let mut cmd = Command::new(&program);
    cmd.current_dir(dir.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let jail =
        crate::jail::Jail::new(crate::jail::Kind::Parse, program.as_os_str(), args, env, None)?.map(|j| {
            j.reading(
                &[Some(dir.path()), readable]
                    .into_iter()
                    .flatten()
                    .collect::<Vec<_>>(),
            )
        });
    let raw3 = fd3.as_ref().map(|f| f.as_raw_fd());
    match jail {
        Some(jail) => {
            if let Some((uid, gid)) = jail.owner() {
                std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
                // A shell opens descriptor 3 again through /dev/fd/3, which checks the pipe's
                // owner.
                if let Some(f) = &fd3 {
                    std::os::unix::fs::fchown(f, Some(uid), Some(gid))?;
                }
            }
            // SAFETY: dup2 and the jail's entry make only async-signal-safe syscalls on memory
            // built before the fork.
            unsafe {
                cmd.pre_exec(move || {
                    if let Some(fd) = raw3 {
                        give_fd3(fd)?;
                    }
                    Err(jail.enter_and_exec())
                });
            }
        }
        None if crate::server::unjailed_allowed() => {
            cmd.args(args).env_clear().envs(env.iter().map(|(k, v)| (*k, *v)));
            // SAFETY: dup2 only.
            unsafe {
                cmd.pre_exec(move || {
                    if let Some(fd) = raw3 {
                        give_fd3(fd)?;
                    }
                    Ok(())
                });
            }
        }
        None => return Err(crate::server::no_jail()),
    }
    let child = cmd.spawn().map_err(|source| WitnessError::Start {
        program: program.display().to_string(),
        source,
    })?;
    drop(cmd);
    drop(fd3);
    let pid = child.id();
    let out = child.wait_with_output();
    crate::jail::kill_group(pid);
    Ok(out?)
}

/// In the child: `fd` becomes descriptor 3, kept across exec (dup2 onto itself would keep
/// the close-on-exec flag).
fn give_fd3(fd: std::os::fd::RawFd) -> std::io::Result<()> {
    // SAFETY: plain descriptor syscalls in the forked child.
    let r = unsafe {
        if fd == 3 {
            libc::fcntl(3, libc::F_SETFD, 0)
        } else {
            libc::dup2(fd, 3)
        }
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// An absolute path for `program` (the jail execs by path, without a search).
fn resolve(program: &OsStr) -> std::path::PathBuf {
    let p = std::path::Path::new(program);
    if p.is_absolute() || p.components().count() > 1 {
        return p.to_path_buf();
    }
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|path| std::env::split_paths(&path).collect::<Vec<_>>())
        .chain(["/usr/bin".into(), "/bin".into()])
        .map(|d| d.join(p))
        .find(|c| c.is_file())
        .unwrap_or_else(|| p.to_path_buf())
}

fn run(program: &OsStr, args: &[&OsStr]) -> Result<std::process::Output, WitnessError> {
    run_jailed(
        program,
        args,
        &[("PATH", OsStr::new("")), ("LANG", OsStr::new("C.UTF-8"))],
        None,
        None,
    )
}

/// Where a shell reads a script too long for an argument.
const SCRIPT_FD: &str = "/dev/fd/3";

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
    let env = [("PATH", OsStr::new("")), ("LANG", OsStr::new("C.UTF-8"))];
    let (out, file) = if text.len() <= LONGEST_C_ARGUMENT {
        args.extend([OsStr::new("-c"), OsStr::from_bytes(text)]);
        (run(shell, &args)?, false)
    } else {
        // The script reaches the jailed shell on a pipe as descriptor 3 (it may not read a
        // file of this process's user).
        args.push(OsStr::new(SCRIPT_FD));
        let (reader, mut writer) = std::io::pipe()?;
        let body = text.to_vec();
        let feed = std::thread::spawn(move || {
            let _ = writer.write_all(&body);
        });
        let out = run_jailed(shell, &args, &env, Some(reader.into()), None)?;
        let _ = feed.join();
        (out, true)
    };
    let mut message = String::from_utf8_lossy(&out.stderr).trim_end().to_string();
    if file {
        message = message.replace(&format!("{SCRIPT_FD}: "), c_prefix);
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

/// What bash's history expansion makes of each line an interactive shell reads, as that shell
/// does it (`history -p` runs the same expansion, `pre_process_line`, on its argument), in a
/// jailed non-interactive bash with `set -H` and an empty history: for each line, `Some` of the
/// expanded line or `None` where the expansion fails (`event not found`, a bad modifier). The
/// terminal witness itself reads with history expansion off, so a text can never make its
/// shell read anything but the typed characters; a line this changes is judged here.
pub fn history_expand(lines: &[&str]) -> Result<Vec<Option<String>>, WitnessError> {
    let script = "set -H; set -o history
while IFS= builtin read -r -d '' -u 3 l; do
  builtin history -c
  if builtin history -p -- \"$l\"; then builtin printf '\\0'; else builtin printf '\\1\\0'; fi
done";
    let (reader, mut writer) = std::io::pipe()?;
    let mut body = Vec::new();
    for l in lines {
        if l.contains('\0') {
            return Err(WitnessError::Protocol("a NUL byte in a typed line".into()));
        }
        body.extend_from_slice(l.as_bytes());
        body.push(0);
    }
    let feed = std::thread::spawn(move || {
        let _ = writer.write_all(&body);
    });
    let bash = bash_path();
    let args = [
        OsStr::new("--norc"),
        OsStr::new("--noprofile"),
        OsStr::new("-c"),
        OsStr::new(script),
    ];
    let out = run_jailed(
        bash.as_os_str(),
        &args,
        &[("PATH", OsStr::new("")), ("LANG", OsStr::new("C.UTF-8"))],
        Some(reader.into()),
        None,
    )?;
    let _ = feed.join();
    let mut got = Vec::new();
    for rec in out.stdout.split(|&b| b == 0).take(lines.len()) {
        got.push(if rec == [1] {
            None
        } else {
            let line = rec.strip_suffix(b"\n").unwrap_or(rec);
            Some(String::from_utf8_lossy(line).into_owned())
        });
    }
    if got.len() != lines.len() {
        return Err(WitnessError::Protocol(format!(
            "history expansion witness answered {} of {} lines: {}",
            got.len(),
            lines.len(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(got)
}

/// Why bash, started with `args` (what follows argv\[0\]), would run something before or
/// instead of the `BASH_ENV` file: `None` when it reads `BASH_ENV` first and nothing else. bash
/// reads `BASH_ENV` only when it is not interactive, not a login shell, not in POSIX mode and
/// not privileged; a login shell reads `/etc/profile` and `~/.profile` first. Options may
/// follow `-c` (`bash -c -l TEXT` is a login shell), so every option word is read, up to the
/// first operand or `--`. Only options known not to change what runs first are accepted.
pub fn bash_env_skipped(argv0: &[u8], args: &[Vec<u8>]) -> Option<String> {
    let name = argv0.rsplit(|&b| b == b'/').next().unwrap_or(argv0);
    if name.starts_with(b"-") {
        return Some(
            "argv[0] starts with `-`: bash is a login shell and reads the profile files first".into(),
        );
    }
    if name == b"sh" {
        return Some("argv[0] is `sh`: bash starts in POSIX mode and does not read BASH_ENV".into());
    }
    if name != b"bash" {
        return Some(format!(
            "argv[0] is `{}`, not bash: the BASH_ENV witness observes bash only",
            String::from_utf8_lossy(argv0)
        ));
    }
    let mut i = 0;
    while i < args.len() {
        let a = String::from_utf8_lossy(&args[i]).into_owned();
        i += 1;
        if a == "--" || a == "-" || !(a.starts_with('-') || a.starts_with('+')) {
            break;
        }
        match a.as_str() {
            "--noprofile" | "--norc" | "--noediting" | "--verbose" => continue,
            "-o" | "+o" => {
                let v = args
                    .get(i)
                    .map(|v| String::from_utf8_lossy(v).into_owned())
                    .unwrap_or_default();
                i += 1;
                if matches!(v.as_str(), "posix" | "privileged") || v.is_empty() {
                    return Some(format!("`{a} {v}`: bash would skip BASH_ENV"));
                }
                continue;
            }
            "-O" | "+O" => {
                i += 1;
                continue;
            }
            _ => {}
        }
        if a.starts_with("--") {
            return Some(format!("`{a}`: an option the spawn witness does not accept (it may make bash read other startup files, or none)"));
        }
        for c in a.chars().skip(1) {
            match c {
                'c' | 'a' | 'b' | 'e' | 'f' | 'h' | 'k' | 'm' | 't' | 'u' | 'v' | 'x' | 'B' | 'C' | 'H'
                | 'P' | 'T' | 'E' => {}
                'l' => {
                    return Some(format!(
                        "`{a}`: a login shell reads /etc/profile and ~/.profile before BASH_ENV"
                    ))
                }
                'i' => {
                    return Some(format!(
                        "`{a}`: an interactive shell reads ~/.bashrc, not BASH_ENV"
                    ))
                }
                'p' => return Some(format!("`{a}`: a privileged shell does not read BASH_ENV")),
                'r' => {
                    return Some(format!(
                        "`{a}`: a restricted shell; the spawn witness does not accept it"
                    ))
                }
                's' => {
                    return Some(format!(
                        "`{a}`: commands from standard input; the spawn witness does not accept it"
                    ))
                }
                'n' => return Some(format!("`{a}`: noexec: bash would not run BASH_ENV either")),
                other => {
                    return Some(format!(
                        "`{a}`: option `{other}` is not one the spawn witness accepts"
                    ))
                }
            }
        }
    }
    None
}

/// The `BASH_ENV` witness: runs the real `bash` with `argv` (argv\[0\] is checked, bash is
/// started by path) and a `BASH_ENV` file that records `$BASH_EXECUTION_STRING` on an
/// inherited pipe and exits before the `-c` text runs. Returns the text bash received. An argv
/// with which bash would run anything before `BASH_ENV` (see [`bash_env_skipped`]) is refused
/// with [`WitnessError::Refused`] before anything starts, and the bash runs in the witness
/// jail all the same.
pub fn bash_env_witness(argv: &[Vec<u8>]) -> Result<Vec<u8>, WitnessError> {
    if let Some(why) = bash_env_skipped(
        argv.first().map(Vec::as_slice).unwrap_or(b"bash"),
        argv.get(1..).unwrap_or(&[]),
    ) {
        return Err(WitnessError::Refused(format!(
            "the spawn witness does not start this argv: {why}; nothing was run"
        )));
    }
    let dir = tempfile::Builder::new().prefix("iec-bashenv-").tempdir()?;
    let env_file = dir.path().join("witness.bash");
    let marker = format!(
        "iec-bashenv-{:x}",
        std::process::id() as u64
            ^ std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos() as u64)
                .unwrap_or(0)
    );
    let mut f = std::fs::File::create(&env_file)?;
    writeln!(f, "builtin printf '{marker}%s' \"$BASH_EXECUTION_STRING\" >&3")?;
    writeln!(f, "builtin exit 0")?;
    drop(f);
    std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))?;
    std::fs::set_permissions(&env_file, std::os::unix::fs::PermissionsExt::from_mode(0o644))?;
    let (mut reader, writer) = std::io::pipe()?;
    let bash = bash_path();
    let args: Vec<&OsStr> = argv.iter().skip(1).map(|a| OsStr::from_bytes(a)).collect();
    let collect = std::thread::spawn(move || {
        let mut got = Vec::new();
        std::io::Read::read_to_end(&mut reader, &mut got).map(|_| got)
    });
    let out = run_jailed(
        bash.as_os_str(),
        &args,
        &[("PATH", OsStr::new("")), ("BASH_ENV", env_file.as_os_str())],
        Some(writer.into()),
        Some(dir.path()),
    )?;
    let got = collect
        .join()
        .map_err(|_| WitnessError::Protocol("BASH_ENV witness reader failed".into()))??;
    if !out.status.success() {
        return Err(WitnessError::Protocol(format!(
            "BASH_ENV witness exited with {}",
            out.status
        )));
    }
    got.strip_prefix(marker.as_bytes())
        .map(<[u8]>::to_vec)
        .ok_or_else(|| {
            WitnessError::Protocol("the BASH_ENV witness wrote no record: bash did not read BASH_ENV".into())
        })
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

    /// Issue 16: `--witness spawn` ran the text when the argv kept bash from reading BASH_ENV
    /// (`bash --posix -c …` created its file), and ran the profile files for `-lc`.
    #[test]
    fn spawn_witness_refuses_argvs_that_skip_bash_env() {
        let v = |a: &[&str]| a.iter().map(|s| s.as_bytes().to_vec()).collect::<Vec<_>>();
        for (argv0, args) in [
            ("bash", v(&["--posix", "-c", "x"])),
            ("bash", v(&["-lc", "x"])),
            ("bash", v(&["-c", "-l", "x"])),
            ("bash", v(&["-o", "posix", "-c", "x"])),
            ("bash", v(&["-p", "-c", "x"])),
            ("bash", v(&["-ic", "x"])),
            ("bash", v(&["--login", "-c", "x"])),
            ("sh", v(&["-c", "x"])),
            ("-bash", v(&["-c", "x"])),
            ("python3", v(&["-c", "x"])),
        ] {
            assert!(
                bash_env_skipped(argv0.as_bytes(), &args).is_some(),
                "{argv0} {args:?}"
            );
            match bash_env_witness(&[vec![argv0.as_bytes().to_vec()], args.clone()].concat()) {
                Err(WitnessError::Refused(why)) => assert!(why.contains("nothing was run"), "{why}"),
                other => panic!("{argv0} {args:?}: {other:?}"),
            }
        }
        for (argv0, args) in [
            ("/bin/bash", v(&["-c", "echo 'a b'"])),
            (
                "bash",
                v(&["--norc", "-e", "-o", "pipefail", "-O", "extglob", "-c", "x", "-l"]),
            ),
        ] {
            assert_eq!(
                bash_env_skipped(argv0.as_bytes(), &args),
                None,
                "{argv0} {args:?}"
            );
        }
        let argv = v(&[
            "/bin/bash",
            "-c",
            "printf '%s' 'a != b'\n/usr/bin/touch /nonexistent",
        ]);
        assert_eq!(bash_env_witness(&argv).unwrap(), argv[2]);
    }

    #[test]
    fn history_expansion_as_the_interactive_shell_does_it() {
        let got = super::history_expand(&[
            "echo 'a != b'",
            "echo \"a!b\"",
            "x !# y",
            "echo 'a!b'",
            "",
            "!#:1:s/{x/}/",
            "^a^b",
        ])
        .unwrap();
        let want: Vec<Option<String>> = vec![
            Some("echo 'a != b'".into()),
            None,
            Some("x x  y".into()),
            Some("echo 'a!b'".into()),
            Some("".into()),
            None,
            None,
        ];
        assert_eq!(got, want);
    }
}
