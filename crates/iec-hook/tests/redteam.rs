//! Red-team findings F3, F5 and F9 against the hook and its daemon. Each test is named after the
//! bug it holds down.

mod support;
use support::*;

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::time::{Duration, Instant};

/// `iec-hook ARGS` with stdin `input`, the daemon socket `socket` and `IEC_DAEMON=mode`.
fn hook(socket: &Path, mode: &str, args: &[&str], input: Vec<u8>) -> (i32, String, String) {
    let mut c = hook_command(socket, mode, args).spawn().unwrap();
    let mut stdin = c.stdin.take().unwrap();
    let w = std::thread::spawn(move || {
        let _ = stdin.write_all(&input);
    });
    let o = c.wait_with_output().unwrap();
    let _ = w.join();
    (
        o.status.code().expect("exit code"),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

/// The `ask` decision with its reason.
fn asked(out: &str) -> String {
    let v: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    let h = &v["hookSpecificOutput"];
    assert_eq!(h["hookEventName"], "PreToolUse", "{out}");
    assert_eq!(h["permissionDecision"], "ask", "{out}");
    assert_eq!(v.as_object().unwrap().len(), 1, "{out}");
    assert_eq!(h.as_object().unwrap().len(), 3, "{out}");
    h["permissionDecisionReason"].as_str().unwrap().to_string()
}

const REASON: &str =
    "iec could not check this Bash command, so it cannot tell whether it would run as written: ";

/// F5: a Bash call whose text iec cannot judge (over the text limit, a lone surrogate escape,
/// bytes that are not UTF-8, a document longer than the hook reads) got no output and exit 0,
/// so it ran unchanged: an agent could opt out of repair. Now the user is asked.
#[test]
fn hook_failed_open_on_texts_it_cannot_judge() {
    let (_dir, socket) = private_dir();
    let l72 = ["--launch", "claude-code-2.1.72-linux"];
    // `printf '%s' 'a != b'` and a 1 MiB comment: over the text limit, in every daemon mode.
    let text = format!("printf '%s' 'a != b' #{}", "x".repeat(1 << 20));
    for mode in ["0", "auto", "only"] {
        let (code, out, err) = hook(&socket, mode, &l72, pre(&text));
        assert_eq!((code, err.as_str()), (0, ""), "{mode}");
        assert_eq!(
            asked(&out),
            format!("{REASON}the command text is {} bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked", text.len())
        );
    }
    // A lone surrogate escape in the command: the document does not decode.
    let doc = String::from_utf8(pre("printf '%s' 'a != b' X"))
        .unwrap()
        .replace(" X", " \\ud800");
    let (code, out, err) = hook(&socket, "0", &l72, doc.into_bytes());
    assert_eq!((code, err.as_str()), (0, ""));
    let reason = asked(&out);
    assert!(
        reason.starts_with(&format!("{REASON}the hook's input is not JSON: ")),
        "{reason}"
    );
    assert!(reason.contains("\\ud800"), "{reason}");
    // Bytes that are not UTF-8 inside the command string.
    let mut doc = pre("printf '%s' 'a != b' X");
    let x = doc.windows(2).position(|w| w == b" X").unwrap() + 1;
    doc[x] = 0xff;
    let (code, out, _) = hook(&socket, "0", &l72, doc);
    assert_eq!(code, 0);
    assert!(asked(&out).starts_with(&format!("{REASON}the hook's input is not JSON: ")));
    // A document longer than the hook reads (8 MiB): cut off, still a Bash call (`tool_name`
    // comes before `tool_input`, in the order Claude Code writes the members).
    let text = "printf '%s' 'a != b'\n".repeat((9 << 20) / 21);
    let doc = format!(
        "{{\"session_id\":\"s\",\"hook_event_name\":\"PreToolUse\",\"tool_name\":\"Bash\",\"tool_input\":{{\"command\":{}}}}}",
        json!(text)
    );
    let (code, out, err) = hook(&socket, "0", &l72, doc.into_bytes());
    assert_eq!((code, err.as_str()), (0, ""));
    assert_eq!(
        asked(&out),
        format!("{REASON}the hook's input is more than 8388608 bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked")
    );
    // Not Claude Code's Bash tool: lowercase `bash`, another tool, a `tool_name` inside the
    // input. Nothing to judge, no output.
    let big = format!("printf '%s' 'a != b' #{}", "x".repeat(1 << 20));
    for doc in [
        String::from_utf8(pre(&big)).unwrap().replace("\"tool_name\":\"Bash\"", "\"tool_name\":\"bash\""),
        String::from_utf8(pre("x \\ud800")).unwrap().replace("\"tool_name\":\"Bash\"", "\"tool_name\":\"Write\""),
        json!({"tool_name": "Write", "tool_input": {"content": "\"tool_name\":\"Bash\"", "file_path": "\u{1}"}})
            .to_string()
            .replace("\\u0001", "\\udc00"),
    ] {
        let (code, out, _) = hook(&socket, "0", &l72, doc.clone().into_bytes());
        assert_eq!((code, out.as_str()), (0, ""), "{doc:.200}");
    }
    // An internal failure (a launch file that does not load) still fails open.
    let (code, out, err) = hook(
        &socket,
        "0",
        &["--launch-file", "/nonexistent.toml"],
        pre("printf '%s' 'a != b'"),
    );
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(
        err.starts_with("iec hook: cannot read /nonexistent.toml: "),
        "{err}"
    );
    assert!(
        err.ends_with("(the call is left to your permission settings)\n"),
        "{err}"
    );
    // The daemon answers an over-limit text the same way.
    let _daemon = Daemon::start(&socket, &[]);
    let over = "x".repeat((1 << 20) + 1);
    let a = ask(
        &socket,
        &json!({"build": build(&socket), "launch": "claude-code-2.1.72-linux", "launch_files": [], "tool_input": {"command": over}}),
    );
    assert_eq!(a["stderr"], "");
    assert_eq!(
        asked(a["stdout"].as_str().unwrap()),
        format!("{REASON}the command text is 1048577 bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked")
    );
}

/// F3: 64 concurrent distinct requests grew the daemon's warm witnesses from 4 to 192 processes,
/// kept until the daemon exited. Now no more than two per witness slot exist, and those of the
/// slots beyond the first of each CPU end when unused.
#[test]
fn daemon_pool_grew_without_bound() {
    let (_dir, socket) = private_dir();
    let daemon = Daemon::start(&socket, &[("IEC_DAEMON_TRIM_SECS", "2")]);
    let b = build(&socket);
    let slots = iec_hook::daemon::witness_slots();
    let cpus = std::thread::available_parallelism().unwrap().get().min(16);
    let burst = |round: usize| {
        let threads: Vec<_> = (0..64)
            .map(|i| {
                let socket = socket.clone();
                let b = b.clone();
                std::thread::spawn(move || {
                    let text = format!("echo \"$(x{round}_{i})\" {}", "y ".repeat(2000));
                    let a = ask(
                        &socket,
                        &json!({"build": b, "launch": "claude-code-2.1.72-linux", "launch_files": [],
                                "tool_input": {"command": text}}),
                    );
                    a.get("stdout").is_some() || a == json!({"error": "busy"})
                })
            })
            .collect();
        let answered = threads
            .into_iter()
            .map(|t| t.join().unwrap())
            .filter(|&ok| ok)
            .count();
        assert_eq!(answered, 64);
    };
    for round in 0..2 {
        burst(round);
        let n = daemon.children();
        assert!(
            n <= 2 * slots,
            "round {round}: {n} witness processes, {slots} slots"
        );
    }
    // Unused slots beyond the first of each CPU end their witnesses.
    let t = Instant::now();
    while daemon.children() > 2 * cpus {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "{} witnesses still",
            daemon.children()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // And the daemon still decides.
    let a = ask(
        &socket,
        &json!({"build": b, "launch": "claude-code-2.1.72-linux", "launch_files": [],
                "tool_input": {"command": "printf '%s' 'a != b'"}}),
    );
    assert!(a["stdout"].as_str().unwrap().contains("ansi-c-eval"), "{a}");
}

/// F9: a request over the daemon's limit got a generic `error`, and a 20 MB one a broken pipe
/// on the client's send. Now the daemon answers `too-large` and reads the rest, and the hook
/// never sends such a request (it decides the call in its own process).
#[test]
fn a_20_mb_daemon_request_got_an_error_and_a_broken_pipe() {
    let (_dir, socket) = private_dir();
    let _daemon = Daemon::start(&socket, &[]);
    let b = build(&socket);
    let max = iec_hook::daemon::MAX_REQUEST;
    let mut req = format!("{{\"build\":\"{b}\",\"x\":\"").into_bytes();
    req.resize(20 << 20, b'a');
    req.extend_from_slice(b"\"}\n");
    let s = UnixStream::connect(&socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut w = s.try_clone().unwrap();
    let writer = std::thread::spawn(move || w.write_all(&req).map_err(|e| e.to_string()));
    let mut out = String::new();
    (&s).read_to_string(&mut out).unwrap();
    assert_eq!(out, format!("{{\"error\":\"too-large\",\"limit\":{max}}}\n"));
    assert_eq!(writer.join().unwrap(), Ok(()), "the client's send completes");
    // The hook's client does not send a request over the limit.
    std::env::set_var("IEC_DAEMON_SOCKET", &socket);
    let input = json!({"command": "printf '%s' 'a != b'", "description": "d".repeat(max)});
    match iec_hook::daemon::ask("claude-code-2.1.72-linux", &[], &input) {
        Err(iec_hook::daemon::AskError::TooLarge(n)) => assert!(n > max),
        other => panic!("{other:?}"),
    }
}

/// Red team, round 4, F5: a Bash call whose `command` is an array got no answer (exit 0): the
/// call went through unjudged. Claude Code runs only strings; the hook now asks the user.
#[test]
fn a_bash_call_with_an_array_command_was_let_through() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("none.sock");
    for command in [json!(["rm", "-rf", "/tmp/x y"]), json!(7), json!({"a": 1})] {
        let doc = json!({
            "session_id": "s", "transcript_path": "/x.jsonl", "cwd": "/", "hook_event_name": "PreToolUse",
            "tool_name": "Bash", "tool_input": {"command": command}
        });
        for launch in ["claude-code-2.1.72-linux", "mcp-shell-server"] {
            let (code, out, _) = hook(&socket, "0", &["--launch", launch], doc.to_string().into_bytes());
            assert_eq!(code, 0);
            let v: Value =
                serde_json::from_str(&out).unwrap_or_else(|e| panic!("{launch} {command}: {e}: {out:?}"));
            assert_eq!(
                v["hookSpecificOutput"]["permissionDecision"], "ask",
                "{launch} {command}: {out}"
            );
        }
    }
}
