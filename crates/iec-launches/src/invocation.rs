//! How bash reads its own arguments (bash's `shell.c`: long options first, then `-`/`+` option
//! clusters, where `-c` takes no argument of its own: the command string is the first argument
//! after all options, so `bash -c -l CMD` runs `CMD` as a login shell). A harness's spawn argv
//! is read this way, never by assuming the text follows `-c`.

/// What bash makes of its arguments.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Invocation {
    /// Index in the argument list (argv without argv\[0\]) of the command string, with `-c`.
    pub command: Option<usize>,
    /// A login shell (`-l`, `--login`, or argv\[0\] starting with `-`): profile files run first.
    pub login: bool,
    /// An interactive shell (`-i`).
    pub interactive: bool,
    /// POSIX mode (`--posix`, `-o posix`, argv\[0\] `sh`).
    pub posix: bool,
}

/// bash's long options; `--init-file` and `--rcfile` take the next argument.
const LONG: &[&str] = &[
    "--debug",
    "--debugger",
    "--dump-po-strings",
    "--dump-strings",
    "--help",
    "--init-file",
    "--login",
    "--noediting",
    "--noprofile",
    "--norc",
    "--posix",
    "--pretty-print",
    "--protected",
    "--rcfile",
    "--restricted",
    "--verbose",
    "--version",
    "--wordexp",
];

/// Single-letter options bash accepts at invocation.
const SHORT: &str = "abefhkmnptuvxBCEHPTilrsDcOo";

/// Reads `args` (argv without argv\[0\]) as bash does for `argv0`. `Err` is bash's complaint
/// when it refuses the arguments and runs nothing (`-x echo: invalid option`, `-c: option
/// requires an argument`).
pub fn bash_invocation(argv0: &str, args: &[String]) -> Result<Invocation, String> {
    let name = argv0.rsplit('/').next().unwrap_or(argv0);
    let mut inv = Invocation {
        login: name.starts_with('-'),
        posix: name.trim_start_matches('-') == "sh",
        ..Invocation::default()
    };
    let mut i = 0;
    // Long options, before any other.
    while let Some(a) = args.get(i) {
        if !a.starts_with("--") || a == "--" {
            break;
        }
        if !LONG.contains(&a.as_str()) {
            return Err(format!("{a}: invalid option"));
        }
        match a.as_str() {
            "--login" => inv.login = true,
            "--posix" => inv.posix = true,
            "--init-file" | "--rcfile" => i += 1,
            _ => {}
        }
        i += 1;
    }
    let mut want_command = false;
    while let Some(a) = args.get(i) {
        let on = a.starts_with('-');
        if !(on || a.starts_with('+')) {
            break;
        }
        i += 1;
        if a == "--" || a == "-" {
            break;
        }
        if a == "+" {
            continue;
        }
        let mut needs_arg = 0;
        for c in a.chars().skip(1) {
            if !SHORT.contains(c) {
                return Err(format!("{}{c}: invalid option", &a[..1]));
            }
            match c {
                'c' if on => want_command = true,
                'l' => inv.login = on,
                'i' => inv.interactive = on,
                'o' | 'O' => needs_arg += 1,
                _ => {}
            }
        }
        for _ in 0..needs_arg {
            let Some(v) = args.get(i) else {
                // `-o` alone lists the options; `-O` alone, the shopt ones.
                break;
            };
            if a.contains('o') && v == "posix" {
                inv.posix = on;
            }
            i += 1;
        }
    }
    if want_command {
        if i >= args.len() {
            return Err("-c: option requires an argument".into());
        }
        inv.command = Some(i);
    }
    Ok(inv)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    #[test]
    fn options_after_dash_c_are_options() {
        let inv = bash_invocation("/bin/bash", &v(&["-c", "-l", "echo A"])).unwrap();
        assert_eq!((inv.command, inv.login), (Some(2), true));
        assert_eq!(
            bash_invocation("bash", &v(&["-c", "-o", "pipefail", "x"]))
                .unwrap()
                .command,
            Some(3)
        );
        assert_eq!(
            bash_invocation("bash", &v(&["-c", "--", "-x"])).unwrap().command,
            Some(2)
        );
        assert_eq!(
            bash_invocation("bash", &v(&["-lc", "x"])).unwrap().command,
            Some(1)
        );
        assert_eq!(
            bash_invocation("bash", &v(&["--norc", "-c", "x", "a", "b"]))
                .unwrap()
                .command,
            Some(2)
        );
        assert_eq!(
            bash_invocation("bash", &v(&["-c", "+", "x"])).unwrap().command,
            Some(2)
        );
        assert!(
            bash_invocation("bash", &v(&["--login", "-c", "x"]))
                .unwrap()
                .login
        );
        assert!(bash_invocation("-bash", &v(&["-c", "x"])).unwrap().login);
        assert!(bash_invocation("sh", &v(&["-c", "x"])).unwrap().posix);
        assert!(
            bash_invocation("bash", &v(&["-o", "posix", "-c", "x"]))
                .unwrap()
                .posix
        );
        assert_eq!(
            bash_invocation("bash", &v(&["-c", "--norc", "x"])),
            Err("--: invalid option".into())
        );
        assert_eq!(
            bash_invocation("bash", &v(&["-c", "-x echo"])),
            Err("- : invalid option".into())
        );
        assert_eq!(
            bash_invocation("bash", &v(&["-c"])),
            Err("-c: option requires an argument".into())
        );
        assert_eq!(bash_invocation("bash", &v(&["script.sh"])).unwrap().command, None);
    }

    /// The reading above, held to real bash: where it finds the command string, bash runs that
    /// argument; where it refuses, bash exits 2 having run nothing.
    #[test]
    fn held_to_real_bash() {
        let cases: &[&[&str]] = &[
            &["-c", "-l", "CMD"],
            &["-c", "-o", "pipefail", "CMD"],
            &["-c", "--", "CMD"],
            &["-lc", "CMD"],
            &["-cl", "CMD"],
            &["--norc", "-c", "CMD", "a", "b"],
            &["-c", "+", "CMD"],
            &["--noprofile", "--norc", "-e", "-c", "CMD"],
            &["-c", "-O", "extglob", "CMD"],
            &["-c", "+O", "extglob", "-e", "CMD"],
            &["-c", "--norc", "CMD"],
            &["-c", "-q", "CMD"],
            &["--bogus", "-c", "CMD"],
            &["-c"],
            &["-ce", "CMD", "name"],
            &["-e", "-c", "-u", "CMD"],
            &["-c", "+c", "CMD"],
        ];
        for case in cases {
            let args = v(case);
            let ours = bash_invocation("bash", &args);
            let mut real = std::process::Command::new("bash");
            real.args(case.iter().map(|a| if *a == "CMD" { "printf %s RAN" } else { a }));
            real.stdin(std::process::Stdio::null()).env_clear();
            let out = real.output().expect("bash");
            let ran = String::from_utf8_lossy(&out.stdout) == "RAN";
            match &ours {
                Ok(inv) => {
                    assert!(ran, "{case:?}: bash did not run the command: {out:?}");
                    assert_eq!(inv.command.map(|i| case[i]), Some("CMD"), "{case:?}");
                }
                Err(why) => {
                    assert!(
                        !ran && out.status.code() == Some(2),
                        "{case:?}: bash ran it ({why}): {out:?}"
                    );
                    let err = String::from_utf8_lossy(&out.stderr);
                    assert!(err.contains(why.as_str()), "{case:?}: {why} not in {err}");
                }
            }
        }
    }
}
