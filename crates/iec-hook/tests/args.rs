//! The `iec-hook` command line: the forms it accepts, what `--help` and `--version` print, and
//! the exact message and exit status 1 of each usage error (Claude Code shows a hook's exit 1
//! without blocking the call).

mod support;
use support::{hook_command, pre, private_dir};

use std::ffi::OsStr;
use std::io::Write;
use std::os::unix::ffi::OsStrExt;

const USAGE: &str =
    "usage: iec-hook [hook] [claude-code] [--launch ID] [--launch-file F]... [--record-intent] [--no-daemon]
       iec-hook --daemon [--idle-exit SECS]
";

/// Runs `iec-hook ARGS` (no daemon) with `stdin`: exit status, stdout, stderr.
fn run<S: AsRef<OsStr>>(args: &[S], stdin: &[u8]) -> (i32, String, String) {
    let (_dir, socket) = private_dir();
    let mut c = hook_command(&socket, "0", &[]);
    c.args(args);
    let mut child = c.spawn().unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap(),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

#[test]
fn help_and_version_answer_at_once() {
    for a in ["--help", "-h"] {
        assert_eq!(run(&[a], b""), (0, USAGE.to_string(), String::new()), "{a}");
    }
    let version = format!("iec-hook {}\n", env!("CARGO_PKG_VERSION"));
    for a in ["--version", "-V"] {
        assert_eq!(run(&[a], b""), (0, version.clone(), String::new()), "{a}");
    }
    // Read left to right: an error before them wins, anything after them is not read.
    assert_eq!(run(&["--version", "--bogus"], b"").0, 0);
    assert_eq!(run(&["--bogus", "--version"], b"").0, 1);
}

#[test]
fn usage_errors_exit_1_with_the_reason() {
    let cases: &[(&[&str], &str)] = &[
        (&["--launch"], "--launch needs a value"),
        (&["--launch-file"], "--launch-file needs a value"),
        (&["--idle-exit"], "--idle-exit needs a value"),
        (&["--idle-exit", "abc"], "--idle-exit takes seconds, got \"abc\""),
        (&["--idle-exit=-1"], "--idle-exit takes seconds, got \"-1\""),
        (&["--bogus"], "unexpected argument \"--bogus\""),
        (&["--bogus=1"], "unexpected argument \"--bogus\""),
        (&["-x"], "unexpected argument \"-x\""),
        (&["claude-code", "hook"], "unexpected argument \"hook\""),
        (&["hook", "hook"], "unexpected argument \"hook\""),
        (&["codex"], "unexpected argument \"codex\""),
        (&[""], "unexpected argument \"\""),
    ];
    for (args, reason) in cases {
        assert_eq!(
            run(args, b""),
            (1, String::new(), format!("iec-hook: {reason}\n{USAGE}")),
            "{args:?}"
        );
    }
    let bad = OsStr::from_bytes(b"a\xffb");
    assert_eq!(
        run(&[bad], b""),
        (
            1,
            String::new(),
            format!("iec-hook: argument \"a\\xFFb\" is not UTF-8\n{USAGE}")
        )
    );
}

#[test]
fn option_values_inline_or_next_whatever_they_look_like() {
    let doc = pre("printf '%s' 'a != b'");
    let id = "claude-code-2.1.72-linux";
    let next = run(&["--launch", id], &doc);
    assert_eq!(next.0, 0);
    assert!(
        next.1.contains(r#""permissionDecision":"allow""#)
            && next
                .1
                .contains("claude-code-2.1.72-linux would change this command at hop eval"),
        "{next:?}"
    );
    // The same call with the optional words and the inline form.
    let launch = format!("--launch={id}");
    for args in [
        vec!["hook", "claude-code", &launch],
        vec!["claude-code", "--launch", id, "--no-daemon"],
        vec!["hook", &launch, "--no-daemon"],
    ] {
        let (code, out, _) = run(&args, &doc);
        assert_eq!((code, &out), (0, &next.1), "{args:?}");
    }
    // A value that looks like an option is the value: no such launch, and the hook fails open.
    let (code, out, err) = run(&["--launch", "--no-daemon"], &doc);
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(err.contains("--no-daemon"), "{err}");
}

#[test]
fn a_value_given_to_a_flag_is_an_error() {
    // (The hand-written loop before lexopt ignored the value.)
    assert_eq!(
        run(&["--no-daemon=1"], b""),
        (
            1,
            String::new(),
            format!("iec-hook: unexpected argument for option '--no-daemon': \"1\"\n{USAGE}")
        )
    );
}
