//! Issue 16, item 6 for the hook and its daemon: bounded reads, a text over the limit is
//! answered `ask` (the user decides), and a daemon beyond its connection limit
//! answers `busy`. Each test is named after the bug it holds down.

mod support;
use support::*;

use serde_json::json;
use std::io::Write;
use std::os::unix::net::UnixStream;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// `iec-hook ARGS` with the daemon socket `socket` and `IEC_DAEMON=mode`, its address space
/// capped at 2 GiB; stdin from `stdin`. Exit code, stdout, stderr.
fn hook(
    socket: &Path,
    mode: &str,
    args: &[&str],
    stdin: Stdio,
    feed: Option<Vec<u8>>,
) -> (i32, String, String) {
    let mut cmd = Command::new(BIN);
    cmd.args(args)
        .env("IEC_DAEMON_SOCKET", socket)
        .env("IEC_DAEMON", mode)
        .env("IEC_DAEMON_IDLE_SECS", "60")
        .env_remove("IEC_INTENT_DIR")
        .stdin(stdin)
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
    let writer = feed.map(|bytes| {
        let mut input = c.stdin.take().unwrap();
        std::thread::spawn(move || {
            let _ = input.write_all(&bytes);
        })
    });
    let o = c.wait_with_output().unwrap();
    if let Some(w) = writer {
        let _ = w.join();
    }
    (
        o.status.code().expect("exit code"),
        String::from_utf8(o.stdout).unwrap(),
        String::from_utf8(o.stderr).unwrap(),
    )
}

fn ask_answer(bytes: usize) -> String {
    format!(
        "{}\n",
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "ask",
            "permissionDecisionReason": format!("iec could not check this Bash command, so it cannot tell whether it would run as written: the command text is {bytes} bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked")}})
    )
}

#[test]
fn an_8_mb_hook_request_took_the_daemon_to_463_mb() {
    let (_dir, socket) = private_dir();
    let _daemon = Daemon::start(&socket, &[]);
    let l72 = ["--launch", "claude-code-2.1.72-linux"];
    // 4 MiB of text (multi-line, with quotes): over the limit, in every daemon mode the hook
    // asks the user (red team F5: it used to fail open, letting the call run unchanged).
    let text = "printf '%s' 'a != b'\n".repeat((4 << 20) / 21);
    for mode in ["only", "auto", "0"] {
        let (code, out, err) = hook(&socket, mode, &l72, Stdio::piped(), Some(pre(&text)));
        assert_eq!((code, err.as_str()), (0, ""), "{mode}");
        assert_eq!(out, ask_answer(text.len()), "{mode}");
    }
    // 8 MiB: the document itself is longer than the hook reads (8 MiB); it stops there. The
    // members are in JSON's sorted order here, `tool_input` before `tool_name`: the cut-off
    // document does not show a Bash call, and the hook fails open.
    let text = "printf '%s' 'a != b'\n".repeat((8 << 20) / 21);
    let (code, out, err) = hook(&socket, "only", &l72, Stdio::piped(), Some(pre(&text)));
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert!(err.starts_with("iec hook: the hook's input is more than 8388608 bytes; iec judges texts of at most 1048576 bytes"), "{err}");
    // One byte over the limit, asked of the daemon directly: the same fail-open answer.
    let b = build(&socket);
    let over = "x".repeat((1 << 20) + 1);
    let a = ask(
        &socket,
        &json!({"build": b, "launch": "claude-code-2.1.72-linux", "launch_files": [], "tool_input": {"command": over}}),
    );
    assert_eq!(a, json!({"stdout": ask_answer(over.len()), "stderr": ""}));
    // The daemon still decides ordinary calls.
    let (code, out, err) = hook(
        &socket,
        "only",
        &l72,
        Stdio::piped(),
        Some(pre("printf '%s' 'a != b'")),
    );
    assert_eq!(code, 0);
    assert!(out.contains("\"permissionDecision\":\"allow\""), "{out}{err}");
}

#[test]
fn hook_stdin_was_read_until_memory_ran_out() {
    let (_dir, socket) = private_dir();
    let zero = std::fs::File::open("/dev/zero").unwrap();
    let (code, out, err) = hook(&socket, "0", &[], Stdio::from(zero), None);
    assert_eq!((code, out.as_str()), (0, ""), "{err}");
    assert_eq!(
        err,
        "iec hook: the hook's input is more than 8388608 bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked (the call is left to your permission settings)\n"
    );
}

#[test]
fn the_65th_daemon_connection_was_reset_not_answered_busy() {
    let (_dir, socket) = private_dir();
    let _daemon = Daemon::start(&socket, &[]);
    let b = build(&socket);
    let max = iec_hook::daemon::MAX_CONNECTIONS;
    // Hold every connection the daemon serves: each waits for its request line. The daemon may
    // still count the connections that found it listening and asked its build (it drains each
    // for up to 2 s): a held connection it answered `busy` for that reason is replaced, until
    // all are silent for longer than that.
    let hold = || {
        let mut s = UnixStream::connect(&socket).unwrap();
        s.write_all(b"{").unwrap();
        s.set_nonblocking(true).unwrap();
        s
    };
    let mut held: Vec<UnixStream> = (0..max).map(|_| hold()).collect();
    let t = Instant::now();
    let mut quiet_since = Instant::now();
    while quiet_since.elapsed() < Duration::from_secs(3) {
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "held connections kept being answered"
        );
        for s in held.iter_mut() {
            let mut b = [0u8; 64];
            match std::io::Read::read(s, &mut b) {
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                _ => {
                    *s = hold();
                    quiet_since = Instant::now();
                }
            }
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let req = json!({"build": b, "launch": "claude-code-2.1.72-linux", "launch_files": [],
                     "tool_input": {"command": "printf '%s' 'a != b'"}});
    for _ in 0..3 {
        assert_eq!(ask(&socket, &req), json!({"error": "busy"}));
    }
    // A hook that may only ask the daemon fails open, naming it; one that may decide itself
    // does so.
    let l72 = ["--launch", "claude-code-2.1.72-linux"];
    let (code, out, err) = hook(
        &socket,
        "only",
        &l72,
        Stdio::piped(),
        Some(pre("printf '%s' 'a != b'")),
    );
    assert_eq!((code, out.as_str()), (0, ""));
    assert_eq!(
        err,
        format!("iec hook: the witness daemon did not answer: the daemon is busy ({max} connections) (the call is left to your permission settings)\n")
    );
    let (code, out, err) = hook(
        &socket,
        "auto",
        &l72,
        Stdio::piped(),
        Some(pre("printf '%s' 'a != b'")),
    );
    assert_eq!(code, 0);
    assert!(out.contains("\"permissionDecision\":\"allow\""), "{out}");
    assert_eq!(
        err,
        format!("iec hook: the witness daemon did not answer (the daemon is busy ({max} connections)); checking in this process\n")
    );
    // Once the held connections are gone, the daemon serves again.
    drop(held);
    let t = Instant::now();
    loop {
        let a = ask(&socket, &req);
        if a.get("stdout").is_some() {
            assert!(a["stdout"].as_str().unwrap().contains("ansi-c-eval"), "{a}");
            break;
        }
        assert_eq!(a, json!({"error": "busy"}));
        assert!(t.elapsed() < Duration::from_secs(30), "still busy");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Red team round 6: the daemon's timeout was per read, so a client sending a byte every few
/// seconds held its connection for as long as it went on (64 such clients: every request
/// `busy`). The whole request line now has a deadline.
#[test]
fn a_client_trickling_one_byte_at_a_time_held_its_connection_forever() {
    let (_dir, socket) = private_dir();
    let _daemon = Daemon::start(&socket, &[("IEC_DAEMON_REQUEST_SECS", "1")]);
    let mut s = UnixStream::connect(&socket).unwrap();
    s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
    let t0 = Instant::now();
    let mut answer = Vec::new();
    // A byte every 200 ms for up to 20 s, each well within any per-read timeout.
    loop {
        assert!(
            t0.elapsed() < Duration::from_secs(20),
            "the daemon kept the connection open"
        );
        if s.write_all(b" ").is_err() {
            break;
        }
        let mut b = [0u8; 256];
        match std::io::Read::read(&mut s, &mut b) {
            Ok(0) => break,
            Ok(n) => answer.extend_from_slice(&b[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
    }
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.contains("no whole request line within 1 s"), "{answer:?}");
}
