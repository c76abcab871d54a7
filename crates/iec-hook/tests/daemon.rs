//! The hook through the witness daemon, with real bash witnesses: the daemon's answers are the
//! hook process's own answers byte for byte, check mode runs nothing, and the daemon survives
//! malformed requests, clients that go away, stale socket files and concurrent hooks.
//!
//! Every test has its own private directory and socket (`IEC_DAEMON_SOCKET`); `IEC_DAEMON=0`
//! makes the hook decide in its own process, `IEC_DAEMON=only` makes it ask the daemon and fail
//! open (no output, a message on stderr) when the daemon does not answer.

mod support;
use support::{private_dir, wait_listening};

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_iec-hook");

const REPAIRED_2172: &str = concat!(
    r#"{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","#,
    r#""permissionDecisionReason":"iec: claude-code-2.1.72-linux would change this command at hop eval; "#,
    r#"delivered as ansi-c-eval (checked: corresponds)","updatedInput":{"command":"eval $'printf \\x27\\x25s\\x27 \\x27a \\x21= b\\x27'","#,
    r#""description":"d","timeout":120000}}}"#,
    "\n"
);

/// A PreToolUse document for a Bash call.
fn pre(command: &str) -> Vec<u8> {
    json!({
        "session_id": "s", "transcript_path": "/x.jsonl", "cwd": "/", "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "d", "timeout": 120000},
        "tool_use_id": "toolu_1"
    })
    .to_string()
    .into_bytes()
}

#[derive(Debug, PartialEq, Eq)]
struct Out {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `iec-hook ARGS` with `stdin`, the daemon socket `socket` and `IEC_DAEMON=mode`.
fn hook(socket: &Path, mode: &str, args: &[&str], stdin: &[u8]) -> Out {
    let mut c = spawn_hook(socket, mode, args);
    c.stdin.take().unwrap().write_all(stdin).unwrap();
    finish(c)
}

fn spawn_hook(socket: &Path, mode: &str, args: &[&str]) -> Child {
    support::hook_command(socket, mode, args).spawn().unwrap()
}

fn finish(c: Child) -> Out {
    let o = c.wait_with_output().unwrap();
    Out {
        code: o.status.code().expect("exit code"),
        stdout: String::from_utf8(o.stdout).unwrap(),
        stderr: String::from_utf8(o.stderr).unwrap(),
    }
}

/// A daemon in the foreground, stopped with SIGTERM when dropped.
struct Daemon(Child);

impl Daemon {
    fn start(socket: &Path, extra: &[&str]) -> Daemon {
        let child = Command::new(BIN)
            .arg("--daemon")
            .args(extra)
            .env("IEC_DAEMON_SOCKET", socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        wait_listening(socket);
        Daemon(child)
    }

    /// SIGTERM, then its exit status and stderr.
    fn stop(mut self) -> (i32, String) {
        // SAFETY: signals our own child.
        unsafe { libc::kill(self.0.id() as i32, libc::SIGTERM) };
        let mut err = String::new();
        self.0.stderr.take().unwrap().read_to_string(&mut err).unwrap();
        let code = self.0.wait().unwrap().code().expect("exit code");
        std::mem::forget(self);
        (code, err)
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Sends raw bytes on one connection (then closes the writing side) and returns the answer.
fn raw(socket: &Path, bytes: &[u8]) -> String {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    s.write_all(bytes).unwrap();
    s.shutdown(std::net::Shutdown::Write).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

/// The daemon's build id, as the hook computes it: read from a refusal that names it.
fn daemon_build(socket: &Path) -> String {
    let a: Value = serde_json::from_str(&raw(socket, b"{\"build\":\"x\"}\n")).unwrap();
    let e = a["error"].as_str().unwrap();
    e.rsplit(' ').next().unwrap().to_string()
}

#[test]
fn daemon_answers_are_the_hook_process_answers_byte_for_byte() {
    let (_dir, socket) = private_dir();
    let launch_file = _dir.path().join("mine.toml");
    let builtin = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../iec-launches/launches/claude-code-2.1.72-linux.toml"
    ))
    .unwrap();
    std::fs::write(
        &launch_file,
        builtin.replacen("id = \"claude-code-2.1.72-linux\"", "id = \"mine-2.1.72\"", 1),
    )
    .unwrap();
    let daemon = Daemon::start(&socket, &[]);
    let lf = launch_file.to_str().unwrap();
    let l72 = ["--launch", "claude-code-2.1.72-linux"];
    // Without --launch the hook follows the calling Claude Code's version (none here: the call
    // passes through); 2.1.332's snapshot and validation are named.
    let l332 = ["--launch", "claude-code-2.1.332-linux"];
    let mine = ["--launch", "mine-2.1.72", "--launch-file", lf];
    let cases: Vec<(&[&str], Vec<u8>)> = vec![
        // Unexposed: no output.
        (&l72, pre("ls -la src")),
        (&[], pre("ls -la src")),
        // Repaired.
        (&l72, pre("printf '%s' 'a != b'")),
        (
            &["hook", "claude-code", "--launch", "claude-code-2.1.332-linux"],
            pre("printf 'a\\r\\n' | cat"),
        ),
        (&l332, pre("echo \"PID=$$\" | cat\r\n")),
        // Refused: a snapshot function, a text that does not parse.
        (&l332, pre("grep -r x .")),
        (&l332, pre("echo 'unterminated")),
        // Other tools, other inputs, bad documents: no decision.
        (
            &[],
            br#"{"tool_name":"Write","tool_input":{"file_path":"x"}}"#.to_vec(),
        ),
        (
            &[],
            br#"{"tool_name":"Bash","tool_input":{"command":7}}"#.to_vec(),
        ),
        // Errors fail open with the same message.
        (&["--launch", "no-such-launch"], pre("printf '%s' 'a != b'")),
        // A launch file, named relative to the hook's directory.
        (&mine, pre("printf '%s' 'a != b'")),
    ];
    for (args, stdin) in &cases {
        let own = hook(&socket, "0", args, stdin);
        let via = hook(&socket, "only", args, stdin);
        assert_eq!(
            own,
            via,
            "args {args:?}, stdin {}",
            String::from_utf8_lossy(stdin)
        );
        assert_eq!(own.code, 0);
    }
    // The exact bytes of the main cases.
    let via = |args: &[&str], stdin: &[u8]| hook(&socket, "only", args, stdin);
    assert_eq!(
        via(&l72, &pre("printf '%s' 'a != b'")),
        Out {
            code: 0,
            stdout: REPAIRED_2172.into(),
            stderr: String::new()
        }
    );
    assert_eq!(
        via(&l72, &pre("ls -la src")),
        Out {
            code: 0,
            stdout: String::new(),
            stderr: String::new()
        }
    );
    let denied = via(&l332, &pre("grep -r x ."));
    let doc: Value = serde_json::from_str(&denied.stdout).unwrap();
    assert_eq!(doc["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(denied
        .stdout
        .ends_with("Write `command grep` to run the real program instead of the snapshot's function.\"}}\n"));
    assert_eq!(
        via(&["--launch", "no-such-launch"], &pre("printf '%s' 'a != b'")),
        Out {
            code: 0,
            stdout: String::new(),
            stderr: "iec hook: no launch \"no-such-launch\"; `iec launches` lists them (the call is left to your permission settings)\n".into()
        }
    );
    let relative = Command::new(BIN)
        .args(["--launch", "mine-2.1.72", "--launch-file", "mine.toml"])
        .current_dir(_dir.path())
        .env("IEC_DAEMON_SOCKET", &socket)
        .env("IEC_DAEMON", "only")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut relative = relative;
    relative
        .stdin
        .take()
        .unwrap()
        .write_all(&pre("printf '%s' 'a != b'"))
        .unwrap();
    let out = finish(relative);
    assert_eq!(
        out.stdout,
        REPAIRED_2172.replace("claude-code-2.1.72-linux", "mine-2.1.72")
    );
    assert_eq!(daemon.stop(), (0, String::new()));
}

#[test]
fn check_mode_executes_nothing_via_the_daemon() {
    let (dir, socket) = private_dir();
    let canary = dir.path().join("CANARY");
    let c = canary.to_str().unwrap();
    let daemon = Daemon::start(&socket, &[]);
    let payloads = [
        format!("touch {c}"),
        format!("touch {c}; printf '%s' 'a != b'"),
        format!("echo \"$(touch {c})\""),
        format!("echo `touch {c}`"),
        format!("x=$(touch {c}) printf '%s\\n' \"$x\" | cat"),
        format!("cat <<EOF\n$(touch {c})\nEOF"),
        format!("printf '%s' \"${{x:=$(touch {c})}}\""),
        format!("eval 'touch {c}'"),
        format!("bash -c 'touch {c}'"),
        format!("touch {c} \\"),
        format!("printf a\r\ntouch {c}"),
    ];
    for launch in [
        "claude-code-2.1.72-linux",
        "claude-code-2.1.332-linux",
        "bash-c",
        "sh-c",
    ] {
        for p in &payloads {
            let out = hook(&socket, "only", &["--launch", launch], &pre(p));
            assert_eq!(out.code, 0);
            assert!(
                !out.stderr.contains("did not answer"),
                "{launch} {p:?}: {}",
                out.stderr
            );
            assert!(!canary.exists(), "{launch}: {p:?} ran");
        }
    }
    let entries: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    assert_eq!(entries, ["d.lock", "d.sock"]);
    assert_eq!(daemon.stop(), (0, String::new()));
}

#[test]
fn daemon_survives_malformed_requests_and_clients_that_go_away() {
    let (_dir, socket) = private_dir();
    let daemon = Daemon::start(&socket, &[]);
    let build = daemon_build(&socket);
    assert_eq!(build.len(), 16, "{build}");
    // Not JSON, not one line, the wrong build, missing fields.
    assert!(raw(&socket, b"not json\n").starts_with("{\"error\":\"not JSON: "));
    assert_eq!(
        raw(&socket, b"{\"build\":"),
        format!(
            "{{\"error\":\"the request is not one line of at most {} bytes\"}}\n",
            iec_hook::daemon::MAX_REQUEST
        )
    );
    assert_eq!(
        raw(&socket, b"{\"build\":\"0000000000000000\"}\n"),
        format!("{{\"error\":\"build \\\"0000000000000000\\\" asked a daemon of build {build}\"}}\n")
    );
    assert_eq!(
        raw(
            &socket,
            format!("{{\"build\":\"{build}\",\"launch\":\"bash-c\"}}\n").as_bytes()
        ),
        "{\"error\":\"no `tool_input` with a string `command`\"}\n"
    );
    assert_eq!(
        raw(&socket, format!("{{\"build\":\"{build}\"}}\n").as_bytes()),
        "{\"error\":\"no `launch`\"}\n"
    );
    // A request longer than the limit.
    let mut long = format!("{{\"build\":\"{build}\",\"x\":\"").into_bytes();
    long.resize(iec_hook::daemon::MAX_REQUEST + (1 << 20), b'a');
    {
        let mut s = UnixStream::connect(&socket).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
        // The daemon stops reading at the limit; the rest may not be taken.
        let _ = s.write_all(&long);
        let _ = s.shutdown(std::net::Shutdown::Write);
        let mut out = String::new();
        let _ = s.read_to_string(&mut out);
        assert_eq!(
            out,
            format!(
                "{{\"error\":\"too-large\",\"limit\":{}}}\n",
                iec_hook::daemon::MAX_REQUEST
            )
        );
    }
    // Clients that disconnect: at once, and in the middle of a request.
    drop(UnixStream::connect(&socket).unwrap());
    {
        let mut s = UnixStream::connect(&socket).unwrap();
        s.write_all(
            format!("{{\"build\":\"{build}\",\"launch\":\"claude-code-2.1.72-linux\",\"tool_in").as_bytes(),
        )
        .unwrap();
    }
    // A client that disconnects before reading a real answer.
    {
        let mut s = UnixStream::connect(&socket).unwrap();
        let req = json!({"build": build, "launch": "claude-code-2.1.72-linux", "launch_files": [],
                         "tool_input": {"command": "printf '%s' 'a != b'"}});
        s.write_all(format!("{req}\n").as_bytes()).unwrap();
    }
    // The daemon still answers, with the same bytes as before.
    let l72 = ["--launch", "claude-code-2.1.72-linux"];
    assert_eq!(
        hook(&socket, "only", &l72, &pre("printf '%s' 'a != b'")).stdout,
        REPAIRED_2172
    );
    assert_eq!(daemon.stop(), (0, String::new()));
    assert!(!socket.exists(), "the daemon removes its socket when it stops");
    assert!(!socket.with_extension("lock").exists());
}

#[test]
fn files_of_other_builds_daemons_are_swept_when_they_are_gone() {
    let (dir, _) = private_dir();
    let p = |n: &str| dir.path().join(n);
    // A dead daemon's files, and a live one's (its lock is held).
    std::fs::write(p("hook-dead.lock"), "").unwrap();
    drop(std::os::unix::net::UnixListener::bind(p("hook-dead.sock")).unwrap());
    let live = std::fs::File::create(p("hook-live.lock")).unwrap();
    // SAFETY: flock on a descriptor of this test.
    assert_eq!(
        unsafe {
            libc::flock(
                std::os::fd::AsRawFd::as_raw_fd(&live),
                libc::LOCK_EX | libc::LOCK_NB,
            )
        },
        0
    );
    std::fs::write(p("hook-live.sock"), "").unwrap();
    std::fs::write(p("other.lock"), "").unwrap();
    let socket = p("hook-mine.sock");
    let daemon = Daemon::start(&socket, &[]);
    let names = |d: &Path| -> Vec<String> {
        let mut v: Vec<String> = std::fs::read_dir(d)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        v.sort();
        v
    };
    assert_eq!(
        names(dir.path()),
        [
            "hook-live.lock",
            "hook-live.sock",
            "hook-mine.lock",
            "hook-mine.sock",
            "other.lock"
        ]
    );
    assert_eq!(daemon.stop(), (0, String::new()));
    assert_eq!(
        names(dir.path()),
        ["hook-live.lock", "hook-live.sock", "other.lock"]
    );
    drop(live);
}

#[test]
fn a_stale_socket_file_is_replaced_by_a_new_daemon() {
    let (_dir, socket) = private_dir();
    // A socket file nobody listens on, as a killed daemon leaves it.
    drop(std::os::unix::net::UnixListener::bind(&socket).unwrap());
    assert!(UnixStream::connect(&socket).is_err());
    let l72 = ["--launch", "claude-code-2.1.72-linux"];
    // Only mode neither starts a daemon nor decides: it fails open.
    let out = hook(&socket, "only", &l72, &pre("printf '%s' 'a != b'"));
    assert_eq!((out.code, out.stdout.as_str()), (0, ""));
    assert_eq!(
        out.stderr,
        format!(
            "iec hook: the witness daemon did not answer: no daemon listens on {} (the call is left to your permission settings)\n",
            socket.display()
        )
    );
    // The default mode decides in its own process and starts a detached daemon.
    let out = hook(&socket, "auto", &l72, &pre("printf '%s' 'a != b'"));
    assert_eq!(
        out,
        Out {
            code: 0,
            stdout: REPAIRED_2172.into(),
            stderr: String::new()
        }
    );
    wait_listening(&socket);
    assert_eq!(
        hook(&socket, "only", &l72, &pre("printf '%s' 'a != b'")).stdout,
        REPAIRED_2172
    );
    // A second daemon on the same socket steps aside.
    let second = Command::new(BIN)
        .arg("--daemon")
        .env("IEC_DAEMON_SOCKET", &socket)
        .output()
        .unwrap();
    assert_eq!(second.status.code(), Some(0));
    assert_eq!(
        String::from_utf8(second.stderr).unwrap(),
        "iec-hook: another daemon serves this socket\n"
    );
    // The detached daemon exits when its socket file is removed.
    std::fs::remove_file(&socket).unwrap();
    let lock = socket.with_extension("lock");
    let t = Instant::now();
    loop {
        let f = std::fs::File::open(&lock).unwrap();
        // SAFETY: flock on a descriptor of this test.
        let free =
            unsafe { libc::flock(std::os::fd::AsRawFd::as_raw_fd(&f), libc::LOCK_EX | libc::LOCK_NB) } == 0;
        if free {
            break;
        }
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "the detached daemon still holds its lock"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn concurrent_hooks_all_get_their_answers() {
    let (_dir, socket) = private_dir();
    let daemon = Daemon::start(&socket, &[]);
    let l72 = ["--launch", "claude-code-2.1.72-linux"];
    let calls: Vec<String> = (0..8).map(|i| format!("printf '%s' 'a != b{i}'")).collect();
    let children: Vec<Child> = calls
        .iter()
        .map(|c| {
            let mut child = spawn_hook(&socket, "only", &l72);
            child.stdin.take().unwrap().write_all(&pre(c)).unwrap();
            child
        })
        .collect();
    for (i, child) in children.into_iter().enumerate() {
        let out = finish(child);
        assert_eq!(
            out,
            Out {
                code: 0,
                stdout: REPAIRED_2172.replace(r"b\\x27", &format!(r"b{i}\\x27")),
                stderr: String::new()
            }
        );
    }
    assert_eq!(daemon.stop(), (0, String::new()));
}

#[test]
fn a_socket_directory_open_to_others_is_not_used() {
    let (dir, _) = private_dir();
    let open = dir.path().join("open");
    std::fs::create_dir(&open).unwrap();
    std::fs::set_permissions(&open, std::fs::Permissions::from_mode(0o755)).unwrap();
    let socket = open.join("d.sock");
    let l72 = ["--launch", "claude-code-2.1.72-linux"];
    let why = format!(
        "no socket directory: {} is not a private directory of this user (mode 755, owner {})",
        open.display(),
        // SAFETY: geteuid has no preconditions.
        unsafe { libc::geteuid() }
    );
    let out = hook(&socket, "auto", &l72, &pre("printf '%s' 'a != b'"));
    assert_eq!(
        out,
        Out {
            code: 0,
            stdout: REPAIRED_2172.into(),
            stderr: format!(
                "iec hook: the witness daemon did not answer ({why}); checking in this process\n"
            )
        }
    );
    let daemon = Command::new(BIN)
        .arg("--daemon")
        .env("IEC_DAEMON_SOCKET", &socket)
        .output()
        .unwrap();
    assert_eq!(daemon.status.code(), Some(2));
    assert!(!socket.exists());
}

#[test]
fn an_idle_daemon_exits_by_itself() {
    let (_dir, socket) = private_dir();
    let mut daemon = Daemon::start(&socket, &["--idle-exit", "1"]);
    let t = Instant::now();
    let status = loop {
        if let Some(s) = daemon.0.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "still running");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    assert!(!socket.exists());
}

#[test]
fn a_daemon_whose_executable_is_deleted_exits() {
    let (dir, socket) = private_dir();
    let copy = dir.path().join("iec-hook");
    std::fs::copy(BIN, &copy).unwrap();
    // Another test thread forking while the copy was open for writing leaves that descriptor in
    // its child until the child's exec: this exec then fails with ETXTBSY for a moment.
    let t = Instant::now();
    let mut child = loop {
        match Command::new(&copy)
            .arg("--daemon")
            .env("IEC_DAEMON_SOCKET", &socket)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && t.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(20));
            }
            r => break r.unwrap(),
        }
    };
    wait_listening(&socket);
    assert!(child.try_wait().unwrap().is_none());
    std::fs::remove_file(&copy).unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        assert!(t.elapsed() < Duration::from_secs(30), "still running");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(status.code(), Some(0));
    assert!(!socket.exists());
}
