//! Process execution: argv straight to `execvp` (through tokio's `Command`),
//! no shell, no command line. Output is captured per stream with a byte cap,
//! the child runs in its own process group, and the whole group is killed on
//! timeout (or when the call is dropped, e.g. cancelled).

use std::collections::BTreeMap;
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;
use tokio::sync::watch;

/// Captured bytes per stream (stdout, stderr) are capped at this size.
pub const OUTPUT_CAP: usize = 1024 * 1024;
/// After the deadline kill, how long to wait for the pipes to reach EOF
/// (a process that left the group with `setsid` may still hold them).
const DRAIN_GRACE: Duration = Duration::from_millis(1000);

/// What to run. `program` is `argv[0]`.
#[derive(Debug, Clone)]
pub struct Spec {
    pub argv: Vec<String>,
    pub cwd: Option<PathBuf>,
    pub env: BTreeMap<String, String>,
    pub stdin: Option<Vec<u8>>,
    pub timeout: Duration,
}

/// One captured output stream.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct StreamOut {
    /// The captured bytes decoded as UTF-8; invalid sequences become U+FFFD.
    pub text: String,
    /// True when the captured bytes are valid UTF-8 (then `text` is exact).
    pub utf8: bool,
    /// Standard base64 of the captured bytes; present only when `utf8` is false.
    pub base64: Option<String>,
    /// Number of bytes captured (at most 1 MiB).
    pub captured_bytes: usize,
    /// Number of bytes the program wrote to the stream in total.
    pub total_bytes: u64,
    /// True when `total_bytes > captured_bytes` (output beyond 1 MiB was discarded).
    pub truncated: bool,
}

impl StreamOut {
    pub fn from_capture(bytes: Vec<u8>, total: u64) -> Self {
        let captured_bytes = bytes.len();
        let truncated = total > captured_bytes as u64;
        match String::from_utf8(bytes) {
            Ok(text) => StreamOut {
                text,
                utf8: true,
                base64: None,
                captured_bytes,
                total_bytes: total,
                truncated,
            },
            Err(e) => {
                let bytes = e.into_bytes();
                StreamOut {
                    text: String::from_utf8_lossy(&bytes).into_owned(),
                    utf8: false,
                    base64: Some(base64::engine::general_purpose::STANDARD.encode(&bytes)),
                    captured_bytes,
                    total_bytes: total,
                    truncated,
                }
            }
        }
    }
}

/// How the run ended.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    /// Exit code when the program exited normally.
    pub exit_code: Option<i32>,
    /// Signal number when the program was killed by a signal.
    pub signal: Option<i32>,
    /// True when the deadline passed before the program exited and closed its
    /// output; the process group was then killed with SIGKILL.
    pub timed_out: bool,
    pub duration_ms: u64,
    pub pid: Option<u32>,
    pub stdout: StreamOut,
    pub stderr: StreamOut,
}

/// Checks that nothing in the spec would be silently altered or rejected by
/// the OS interface (NUL bytes, `=` in env names) and that `cwd` exists.
pub fn validate(spec: &Spec) -> Result<(), String> {
    if spec.argv.is_empty() {
        return Err("argv must contain at least one element (the program)".into());
    }
    if spec.argv[0].is_empty() {
        return Err("argv[0] (the program) must not be empty".into());
    }
    for (i, a) in spec.argv.iter().enumerate() {
        if a.contains('\0') {
            return Err(format!(
                "argv[{i}] contains a NUL byte; a program argument cannot carry NUL, so the call is refused rather than truncated"
            ));
        }
    }
    for (k, v) in &spec.env {
        if k.is_empty() {
            return Err("env: variable name must not be empty".into());
        }
        if k.contains('=') {
            return Err(format!("env: variable name {k:?} contains '='"));
        }
        if k.contains('\0') || v.contains('\0') {
            return Err(format!("env: variable {k:?} contains a NUL byte"));
        }
    }
    if let Some(cwd) = &spec.cwd {
        let s = cwd.as_os_str().as_encoded_bytes();
        if s.contains(&0) {
            return Err("cwd contains a NUL byte".into());
        }
        match std::fs::metadata(cwd) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(format!("cwd {:?} is not a directory", cwd.display())),
            Err(e) => return Err(format!("cwd {:?} is not usable: {e}", cwd.display())),
        }
    }
    Ok(())
}

/// Kills the child's process group when dropped while armed.
struct GroupKill {
    pgid: Option<i32>,
}

impl GroupKill {
    fn kill(&self) {
        if let Some(pgid) = self.pgid {
            // pgid > 0 is the child's pid, which stays reserved while any member of its group
            // is alive.
            if let Some(pgid) = rustix::process::Pid::from_raw(pgid) {
                let _ = rustix::process::kill_process_group(pgid, rustix::process::Signal::KILL);
            }
        }
    }
}

impl Drop for GroupKill {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn read_capped<R: AsyncRead + Unpin>(
    mut r: R,
    cap: usize,
    mut stop: watch::Receiver<bool>,
) -> (Vec<u8>, u64) {
    let mut kept = Vec::new();
    let mut total: u64 = 0;
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = tokio::select! {
            res = r.read(&mut buf) => match res {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            },
            _ = stop.wait_for(|s| *s) => break,
        };
        total += n as u64;
        if kept.len() < cap {
            let take = n.min(cap - kept.len());
            kept.extend_from_slice(&buf[..take]);
        }
    }
    (kept, total)
}

fn spawn_error_message(program: &str, e: &std::io::Error) -> String {
    match e.kind() {
        std::io::ErrorKind::NotFound => {
            if program.contains('/') {
                format!("program not found: {program:?} (no such file)")
            } else {
                format!("program not found: {program:?} is not in PATH")
            }
        }
        std::io::ErrorKind::PermissionDenied => {
            format!("program {program:?} cannot be executed: permission denied")
        }
        _ => format!("program {program:?} could not be started: {e}"),
    }
}

/// Runs the spec. `Err` means the program was never started (validation or
/// spawn failure); everything after a successful spawn is an `Outcome`.
pub async fn execute(spec: &Spec) -> Result<Outcome, String> {
    validate(spec)?;
    let start = Instant::now();
    let deadline = tokio::time::Instant::from_std(start + spec.timeout);

    let mut cmd = Command::new(&spec.argv[0]);
    cmd.args(&spec.argv[1..])
        .envs(&spec.env)
        .stdin(if spec.stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    if let Some(cwd) = &spec.cwd {
        cmd.current_dir(cwd);
    }
    let mut child = cmd.spawn().map_err(|e| spawn_error_message(&spec.argv[0], &e))?;
    let pid = child.id();
    let mut guard = GroupKill {
        pgid: pid.map(|p| p as i32),
    };

    if let (Some(mut w), Some(data)) = (child.stdin.take(), spec.stdin.clone()) {
        tokio::spawn(async move {
            // The program may exit without reading; a broken pipe is fine.
            let _ = w.write_all(&data).await;
            let _ = w.shutdown().await;
        });
    }
    let (stop_tx, stop_rx) = watch::channel(false);
    let out = child.stdout.take().expect("stdout piped");
    let err = child.stderr.take().expect("stderr piped");
    let mut out_task = tokio::spawn(read_capped(out, OUTPUT_CAP, stop_rx.clone()));
    let mut err_task = tokio::spawn(read_capped(err, OUTPUT_CAP, stop_rx));

    let mut timed_out = false;
    let status = tokio::select! {
        s = child.wait() => Some(s),
        _ = tokio::time::sleep_until(deadline) => None,
    };
    let status = match status {
        Some(s) => s,
        None => {
            timed_out = true;
            guard.kill();
            child.wait().await
        }
    }
    .map_err(|e| format!("waiting for the program failed: {e}"))?;

    // The leader has exited; its output may still be held open by other
    // members of its group. Wait for EOF until the deadline, then kill them.
    let both = async {
        let o = (&mut out_task).await;
        let e = (&mut err_task).await;
        (o, e)
    };
    tokio::pin!(both);
    let pipes = tokio::select! {
        r = &mut both => Some(r),
        _ = tokio::time::sleep_until(deadline) => None,
    };
    let (o, e) = match pipes {
        Some(r) => r,
        None => {
            timed_out = true;
            guard.kill();
            match tokio::time::timeout(DRAIN_GRACE, &mut both).await {
                Ok(r) => r,
                Err(_) => {
                    let _ = stop_tx.send(true);
                    both.await
                }
            }
        }
    };
    if !timed_out {
        // Normal completion: leave any detached members of the group alone.
        guard.pgid = None;
    }
    let (out_bytes, out_total) = o.unwrap_or_default();
    let (err_bytes, err_total) = e.unwrap_or_default();
    Ok(Outcome {
        exit_code: status.code(),
        signal: status.signal(),
        timed_out,
        duration_ms: start.elapsed().as_millis() as u64,
        pid,
        stdout: StreamOut::from_capture(out_bytes, out_total),
        stderr: StreamOut::from_capture(err_bytes, err_total),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(argv: &[&str]) -> Spec {
        Spec {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: None,
            env: BTreeMap::new(),
            stdin: None,
            timeout: Duration::from_secs(10),
        }
    }

    #[tokio::test]
    async fn echo_and_exit_code() {
        let o = execute(&spec(&["sh", "-c", "printf hi; printf err >&2; exit 3"]))
            .await
            .unwrap();
        assert_eq!(o.exit_code, Some(3));
        assert_eq!(o.stdout.text, "hi");
        assert_eq!(o.stderr.text, "err");
        assert!(!o.timed_out);
    }

    #[tokio::test]
    async fn non_utf8_and_cap() {
        let o = execute(&spec(&[
            "python3",
            "-c",
            "import sys; sys.stdout.buffer.write(b'\\xff\\x00a'); sys.stderr.buffer.write(b'x'*(2*1024*1024))",
        ]))
        .await
        .unwrap();
        assert!(!o.stdout.utf8);
        assert_eq!(o.stdout.base64.as_deref(), Some("/wBh"));
        assert!(o.stderr.truncated);
        assert_eq!(o.stderr.captured_bytes, OUTPUT_CAP);
        assert_eq!(o.stderr.total_bytes, 2 * 1024 * 1024);
    }

    #[tokio::test]
    async fn timeout_kills_group() {
        let mut s = spec(&["sh", "-c", "sleep 30 & sleep 30"]);
        s.timeout = Duration::from_millis(300);
        let t = Instant::now();
        let o = execute(&s).await.unwrap();
        assert!(o.timed_out);
        assert_eq!(o.signal, Some(libc::SIGKILL));
        assert!(t.elapsed() < Duration::from_secs(4));
    }

    #[tokio::test]
    async fn background_holder_of_stdout_is_killed_at_deadline() {
        let mut s = spec(&["sh", "-c", "sleep 30 & echo done"]);
        s.timeout = Duration::from_millis(500);
        let t = Instant::now();
        let o = execute(&s).await.unwrap();
        assert_eq!(o.exit_code, Some(0));
        assert!(o.timed_out);
        assert_eq!(o.stdout.text, "done\n");
        assert!(t.elapsed() < Duration::from_secs(4));
    }

    #[tokio::test]
    async fn refusals() {
        assert!(execute(&spec(&[])).await.unwrap_err().contains("at least one"));
        assert!(execute(&spec(&["a\0b"])).await.unwrap_err().contains("NUL"));
        assert!(execute(&spec(&["definitely-not-a-program-iec"]))
            .await
            .unwrap_err()
            .contains("not found"));
        let mut s = spec(&["true"]);
        s.cwd = Some("/nonexistent/iec".into());
        assert!(execute(&s).await.unwrap_err().contains("cwd"));
        let mut s = spec(&["true"]);
        s.env.insert("A=B".into(), "x".into());
        assert!(execute(&s).await.unwrap_err().contains("'='"));
    }

    #[tokio::test]
    async fn stdin_and_env() {
        let mut s = spec(&["sh", "-c", "cat; printf %s \"$IEC_X\""]);
        s.stdin = Some(b"in\n".to_vec());
        s.env.insert("IEC_X".into(), "v$(x)".into());
        let o = execute(&s).await.unwrap();
        assert_eq!(o.stdout.text, "in\nv$(x)");
    }
}
