//! What the hook's integration tests share: the binary, a Claude Code PreToolUse document, a
//! private runtime directory, a daemon that ends with the test, and one daemon request.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub const BIN: &str = env!("CARGO_BIN_EXE_iec-hook");

/// A Claude Code PreToolUse document for a Bash call of `command`.
pub fn pre(command: &str) -> Vec<u8> {
    json!({
        "session_id": "s", "transcript_path": "/x.jsonl", "cwd": "/", "permission_mode": "default",
        "hook_event_name": "PreToolUse", "tool_name": "Bash",
        "tool_input": {"command": command, "description": "d"},
        "tool_use_id": "toolu_1"
    })
    .to_string()
    .into_bytes()
}

/// `iec-hook ARGS` against the daemon socket `socket` with `IEC_DAEMON=mode`, piped stdio, no
/// intent store.
pub fn hook_command(socket: &Path, mode: &str, args: &[&str]) -> Command {
    let mut c = Command::new(BIN);
    c.args(args)
        .env("IEC_DAEMON_SOCKET", socket)
        .env("IEC_DAEMON", mode)
        .env("IEC_DAEMON_IDLE_SECS", "60")
        .env_remove("IEC_INTENT_DIR")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    c
}

/// A private directory (0700) and a daemon socket path in it.
pub fn private_dir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix("iec-hook-test-")
        .tempdir()
        .unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let socket = dir.path().join("d.sock");
    (dir, socket)
}

/// Waits until something accepts connections on `socket`.
pub fn wait_listening(socket: &Path) {
    let t = Instant::now();
    while UnixStream::connect(socket).is_err() {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "no daemon on {}",
            socket.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// An `iec-hook --daemon` on `socket`, killed when dropped.
pub struct Daemon(pub Child);

impl Daemon {
    /// Starts it with `env` added and waits until it accepts connections.
    pub fn start(socket: &Path, env: &[(&str, &str)]) -> Daemon {
        let child = Command::new(BIN)
            .arg("--daemon")
            .env("IEC_DAEMON_SOCKET", socket)
            .envs(env.iter().copied())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_listening(socket);
        Daemon(child)
    }

    /// The daemon's child processes (its witnesses).
    pub fn children(&self) -> usize {
        let pid = self.0.id();
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
            .filter(|stat| {
                // pid (comm) state ppid …; comm may hold spaces and parentheses.
                let rest = &stat[stat.rfind(')').unwrap() + 2..];
                rest.split(' ').nth(1).and_then(|p| p.parse::<u32>().ok()) == Some(pid)
            })
            .count()
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// One request line on one connection; the answer line.
pub fn ask(socket: &Path, req: &Value) -> Value {
    let mut s = UnixStream::connect(socket).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    s.write_all(format!("{req}\n").as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out:?}"))
}

/// The daemon's build id (from its answer to a request of another build).
pub fn build(socket: &Path) -> String {
    let a = ask(socket, &json!({"build": "x"}));
    a["error"]
        .as_str()
        .unwrap()
        .rsplit(' ')
        .next()
        .unwrap()
        .to_string()
}
