//! Issue 16, items 6 and 7, as a user of `iec` meets them: bounded input, bounded reports, and
//! the smaller input bugs. Each test is named after the bug it holds down.

use serde_json::Value;
use std::io::Write;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

const LIMIT: usize = 1 << 20;
/// A report (or `--launch all`'s array of them) is never longer than this.
const REPORT_MAX: usize = 1 << 20;

/// Runs `iec ARGS` with `stdin`, its address space capped at 2 GiB: an unbounded read of an
/// endless input fails there instead of filling the machine.
fn iec(args: &[&str], stdin: &[u8]) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_iec"));
    cmd.args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // SAFETY: setrlimit with a constant argument between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: 2 << 30,
                rlim_max: 2 << 30,
            };
            libc::setrlimit(libc::RLIMIT_AS, &lim);
            Ok(())
        });
    }
    let mut c = cmd.spawn().unwrap();
    let mut input = c.stdin.take().unwrap();
    let stdin = stdin.to_vec();
    let writer = std::thread::spawn(move || {
        let _ = input.write_all(&stdin);
    });
    let o = c.wait_with_output().unwrap();
    let _ = writer.join();
    (
        o.status.code().expect("exit code"),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

fn json(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("not one JSON document ({e}): {s:.300}"))
}

/// A multi-line text of at least `n` bytes (shell words, quotes and expansions on each line).
fn lines(n: usize) -> String {
    let mut s = String::with_capacity(n + 100);
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!(
            "printf '%s\\n' \"$HOME\" 'a != b' w{i} | grep -c x{i}\n"
        ));
        i += 1;
    }
    s
}

fn launch_ids() -> Vec<String> {
    let (code, out, err) = iec(&["launches", "--format", "json"], b"");
    assert_eq!(code, 0, "{err}");
    json(&out)
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["id"].as_str().unwrap().to_string())
        .collect()
}

fn assert_over_limit(r: &Value, ctx: &str) {
    assert_eq!(r["verdict"], "unknown", "{ctx}: {r}");
    assert_eq!(r["attribution"], "text-limit", "{ctx}: {r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.contains("at most 1048576 bytes (1 MiB"),
        "{ctx}: the reason names the limit: {reason}"
    );
    assert_eq!(r["hops"], serde_json::json!([]), "{ctx}: nothing judged");
}

#[test]
fn a_10_mb_text_made_one_launch_use_hundreds_of_mb_and_a_100_mb_report() {
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.txt");
    let text = lines(10 << 20);
    std::fs::write(&big, &text).unwrap();
    let big = big.to_str().unwrap();
    for id in launch_ids() {
        let (code, out, err) = iec(
            &[
                "check",
                "--launch",
                &id,
                "--command-file",
                big,
                "--format",
                "json",
            ],
            b"",
        );
        assert_eq!(code, 3, "{id}: {err}");
        assert!(out.len() <= REPORT_MAX, "{id}: {} bytes of report", out.len());
        let r = json(&out);
        assert_over_limit(&r, &id);
        assert!(
            r["reason"]
                .as_str()
                .unwrap()
                .contains("is more than 1048576 bytes"),
            "{id}: the reason gives the size: {r}"
        );
    }
    let (code, out, err) = iec(
        &[
            "check",
            "--launch",
            "all",
            "--command-file",
            big,
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 3, "{err}");
    assert!(out.len() <= REPORT_MAX, "{} bytes of report", out.len());
    let all = json(&out);
    assert_eq!(all.as_array().unwrap().len(), launch_ids().len());
    for r in all.as_array().unwrap() {
        assert_over_limit(r, "all");
    }
    // The text format says the same.
    let (code, out, _) = iec(&["check", "--launch", "bash-c", "--command-file", big], b"");
    assert_eq!(code, 3);
    assert!(out.starts_with("bash-c: unknown\n  reason: "), "{out}");
    assert!(out.contains("at most 1048576 bytes"), "{out}");
}

#[test]
fn command_file_dev_zero_read_until_memory_ran_out() {
    // The child's address space is capped at 2 GiB: reading /dev/zero to its end would fail.
    let (code, out, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--command-file",
            "/dev/zero",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 3, "{err}");
    let r = json(&out);
    assert_over_limit(&r, "/dev/zero");
    assert_eq!(
        r["reason"],
        "/dev/zero is more than 1048576 bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked"
    );
    // A repair cannot judge it either: an error (exit 2), nothing delivered.
    let (code, out, err) = iec(
        &["repair", "--launch", "bash-c", "--command-file", "/dev/zero"],
        b"",
    );
    assert_eq!((code, out.as_str()), (2, ""), "{err}");
    assert!(
        err.contains("/dev/zero is more than 1048576 bytes") && err.contains("1 MiB"),
        "{err}"
    );
    // --call-json too (a call's JSON may hold escapes: up to 8 MiB are read).
    let (code, out, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--call-json",
            "/dev/zero",
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 3, "{err}");
    assert!(json(&out)["reason"]
        .as_str()
        .unwrap()
        .starts_with("/dev/zero is more than 8388608 bytes;"));
    // And stdin of `iec receive`.
    let (code, _, err) = iec(&["receive", "cmd"], &vec![b'a'; 9 << 20]);
    assert_eq!(code, 2);
    assert!(err.contains("stdin is more than 8388608 bytes"), "{err}");
}

#[test]
fn a_text_one_byte_over_the_limit_is_unknown_at_the_limit_it_is_checked() {
    let dir = tempfile::tempdir().unwrap();
    // Exactly the limit: judged (bash-c: execve refuses an argument this long).
    let at = dir.path().join("at.txt");
    std::fs::write(&at, format!("#{}", "a".repeat(LIMIT - 1))).unwrap();
    let (code, out, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--command-file",
            at.to_str().unwrap(),
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 1, "{err}");
    assert_eq!(json(&out)["first_divergence"]["hop_name"], "spawn");
    // One byte more, through --call-json (escaped: the file is larger than the text).
    let over = dir.path().join("over.json");
    let call = serde_json::json!({ "command": format!("#{}", "\u{1}".repeat(LIMIT)) });
    std::fs::write(&over, call.to_string()).unwrap();
    let (code, out, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--call-json",
            over.to_str().unwrap(),
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 3, "{err}");
    let r = json(&out);
    assert_over_limit(&r, "call-json");
    assert!(r["reason"]
        .as_str()
        .unwrap()
        .starts_with("the command text is 1048577 bytes; iec judges texts of at most 1048576 bytes"));
    let (code, _, err) = iec(
        &[
            "repair",
            "--launch",
            "bash-c",
            "--call-json",
            over.to_str().unwrap(),
        ],
        b"",
    );
    assert_eq!(code, 2);
    assert!(err.contains("the command text is 1048577 bytes"), "{err}");
}

#[test]
fn reports_copied_a_multi_mb_receipt_many_times() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("long.txt");
    let text = lines(LIMIT - 4096);
    std::fs::write(&f, &text).unwrap();
    let f = f.to_str().unwrap();
    let sha = iec_core::limits::sha256_hex(text.as_bytes());
    for id in [
        "claude-code-2.1.72-linux",
        "goose-linux",
        "pwsh-native",
        "cline-windows-cmd",
    ] {
        let (code, out, err) = iec(
            &["check", "--launch", id, "--command-file", f, "--format", "json"],
            b"",
        );
        assert!(code == 1 || code == 0 || code == 3, "{id}: {code} {err}");
        assert!(out.len() <= 128 << 10, "{id}: {} bytes of report", out.len());
        let r = json(&out);
        let elided = r["elided"]
            .as_array()
            .unwrap_or_else(|| panic!("{id}: no `elided`: {r}"));
        // The decoded command: its head, its length and its hash stand in for it.
        let e = elided
            .iter()
            .find(|e| e["path"] == "/hops/0/receipt/command")
            .unwrap_or_else(|| panic!("{id}: {elided:?}"));
        assert_eq!(e["bytes"], text.len(), "{id}");
        assert_eq!(e["sha256"], sha, "{id}");
        let shown = r["hops"][0]["receipt"]["command"].as_str().unwrap();
        assert!(shown.starts_with(&text[..500]), "{id}");
        assert!(shown.ends_with(&text[text.len() - 500..]), "{id}");
        assert!(
            shown.contains(&format!("{} bytes in all, sha256 {sha}", text.len())),
            "{id}"
        );
    }
    let (_, out, _) = iec(
        &[
            "check",
            "--launch",
            "all",
            "--command-file",
            f,
            "--format",
            "json",
        ],
        b"",
    );
    // One report a launch, each the long text's head, tail, length and hash (about 12 KiB),
    // never the text itself: the whole grows with the catalog, not with the text.
    let reports = json(&out).as_array().map_or(0, Vec::len);
    assert!(reports >= 90, "{reports} reports");
    assert!(
        out.len() <= reports * (16 << 10),
        "{} bytes of report for all {reports} launches",
        out.len()
    );
    let (_, out, _) = iec(&["check", "--launch", "all", "--command-file", f], b"");
    assert!(
        out.len() <= 256 << 10,
        "{} bytes of text report for all launches",
        out.len()
    );
    // A short text's report is exactly as before: no `elided`.
    let (_, out, _) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--command",
            "ls",
            "--format",
            "json",
        ],
        b"",
    );
    assert!(json(&out).get("elided").is_none(), "{out}");
}

#[test]
fn command_starting_with_a_hyphen_was_taken_as_an_option() {
    for args in [
        &[
            "check",
            "--launch",
            "bash-c",
            "--command",
            "-x",
            "--format",
            "json",
        ][..],
        &["check", "--launch", "bash-c", "--command=-x", "--format", "json"],
        &[
            "check",
            "--launch",
            "bash-c",
            "--format",
            "json",
            "--command",
            "--help",
        ],
    ] {
        let (code, out, err) = iec(args, b"");
        assert_eq!(code, 1, "{args:?}: {err}");
        let r = json(&out);
        let text = args
            .iter()
            .find_map(|a| a.strip_prefix("--command="))
            .unwrap_or_else(|| args[args.iter().position(|a| *a == "--command").unwrap() + 1]);
        assert_eq!(r["hops"][0]["receipt"]["command"], text, "{args:?}");
        assert_eq!(r["first_divergence"]["hop_name"], "spawn", "{args:?}");
    }
}

#[test]
fn call_json_with_a_bom_failed_with_expected_value_at_column_1() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("bom.json");
    std::fs::write(&f, b"\xEF\xBB\xBF{\"command\": \"ls -la\"}\n").unwrap();
    let (code, out, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--call-json",
            f.to_str().unwrap(),
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(json(&out)["hops"][0]["receipt"]["command"], "ls -la");
}

#[test]
fn a_lone_surrogate_was_unexpected_end_of_hex_escape() {
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("s.json");
    std::fs::write(&f, b"{\"command\": \"echo \\ud800 and the rest\"}").unwrap();
    let (code, out, err) = iec(
        &["check", "--launch", "bash-c", "--call-json", f.to_str().unwrap()],
        b"",
    );
    assert_eq!((code, out.as_str()), (2, ""));
    assert!(!err.contains("unexpected end of hex escape"), "{err}");
    assert!(
        err.contains(&format!(
            "{} is not valid JSON: line 1 column 19: the string holds a lone UTF-16 surrogate escape `\\ud800`",
            f.display()
        )),
        "{err}"
    );
}

#[test]
fn twenty_thousand_nested_command_substitutions_were_the_agents_error() {
    let text = format!("echo {}", "$(".repeat(20_000));
    let (code, out, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--command",
            &text,
            "--format",
            "json",
        ],
        b"",
    );
    assert_eq!(code, 3, "{err}");
    let r = json(&out);
    assert_eq!(r["attribution"], "witness-limit", "{r}");
    let reason = r["reason"].as_str().unwrap();
    assert!(
        reason.starts_with("a witness could not answer: bash ended without a diagnostic"),
        "{reason}"
    );
    assert!(!reason.contains("generation"), "{reason}");
}

#[test]
fn iec_mcp_wrote_to_stderr() {
    // A client that goes away before initializing, and one that starts with a notification.
    let (code, out, err) = iec(&["mcp"], b"");
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    // A notification gets no reply (JSON-RPC), and does not end the session (red team F8).
    let (code, out, err) = iec(
        &["mcp"],
        b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n",
    );
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
}

/// Red team F4: `--launch-file` was read with `read_to_string`, without a limit:
/// `--launch-file /dev/zero` read until the machine ran out of memory.
#[test]
fn launch_file_dev_zero_was_read_until_memory_ran_out() {
    let (code, out, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--launch-file",
            "/dev/zero",
            "--command",
            "x",
        ],
        b"",
    );
    assert_eq!((code, out.as_str()), (2, ""));
    assert_eq!(
        err,
        "iec: launch file /dev/zero is more than 1048576 bytes; iec reads launch files of at most 1 MiB\n"
    );
    // A file one byte over the limit is refused the same way; one at the limit is read (and
    // then judged as TOML).
    let dir = tempfile::tempdir().unwrap();
    let over = dir.path().join("over.toml");
    std::fs::write(&over, "#".repeat(LIMIT + 1)).unwrap();
    let (code, _, err) = iec(
        &[
            "check",
            "--launch",
            "bash-c",
            "--launch-file",
            over.to_str().unwrap(),
            "--command",
            "x",
        ],
        b"",
    );
    assert_eq!(code, 2);
    assert_eq!(
        err,
        format!(
            "iec: launch file {} is more than 1048576 bytes; iec reads launch files of at most 1 MiB\n",
            over.display()
        )
    );
    let at = dir.path().join("at.toml");
    std::fs::write(&at, "#".repeat(LIMIT)).unwrap();
    let (code, _, err) = iec(&["launches", "--launch-file", at.to_str().unwrap()], b"");
    assert_eq!(code, 2);
    assert!(err.starts_with("iec: launch file: "), "{err}");
    // `iec install` reads the settings file no further than its limit either.
    let (code, _, err) = iec(
        &["install", "claude-code", "--settings", "/dev/zero", "--dry-run"],
        b"",
    );
    assert_eq!(code, 2);
    assert_eq!(
        err,
        "iec: /dev/zero is more than 16777216 bytes; iec reads settings files of at most 16 MiB\n"
    );
}
