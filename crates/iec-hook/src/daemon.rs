/*!
The witness daemon: one process that keeps warm bash witnesses and answers hook requests over a
Unix socket, so that a hook process does not start its own witnesses for every call.

* **Socket.** `$IEC_DAEMON_SOCKET` when set; otherwise `hook-<id>.sock` in `$XDG_RUNTIME_DIR/iec`
  (or `~/.cache/iec/run` without a runtime directory). `<id>` names the executable (device,
  inode, size, modification time) and the environment variables that change a witness
  (`IEC_BASH`, `IEC_TMUX`), so a rebuilt binary never talks to a daemon of the old one. The
  directory is created with mode 0700 and must be owned by the user and closed to group and
  others, else the daemon is not used; the socket is mode 0600 and the daemon answers only peers
  of its own user id.
* **Protocol.** One request per connection: a JSON line `{"build", "launch", "launch_files",
  "tool_input"}`; the answer is a JSON line `{"stdout", "stderr"}` holding the exact bytes the
  hook writes (see [`crate::answer`]), or `{"error"}`.
* **Life.** The hook starts the daemon when it finds none (the executable again, with the
  daemon arguments, in a new session, stdio on `/dev/null`, other descriptors closed) and
  decides that call itself. A lock file beside the socket lets only one daemon serve a socket;
  a socket file left by a dead daemon is replaced. The daemon exits after
  [`DEFAULT_IDLE`] without requests (`IEC_DAEMON_IDLE_SECS` or `--idle-exit SECS`), on SIGTERM
  or SIGINT, when its socket file is removed or replaced, and when its executable is deleted or
  replaced (a rebuilt hook has another build id and starts its own daemon).
* **Concurrency.** A thread per connection (at most [`MAX_CONNECTIONS`] at once). A connection
  beyond that is answered `{"error":"busy"}` (and its request read and dropped, so the hook reads
  the answer rather than a reset): the hook then decides in its own process, as on any daemon
  failure.
* **Witnesses.** Checks run in [`witness_slots`] slots (two per CPU, at least 2, at most 16);
  each slot owns its own witness pool and pins the check's thread to one CPU, so a slot holds at
  most one parse and one expansion server, and the daemon at most two per slot, however many
  requests arrive at once. A request waits up to [`SLOT_WAIT`] for a free slot, else it is
  answered `busy`. The first slot of each CPU is warmed at start and kept; the witnesses of the
  other slots end after [`TRIM_AFTER`] unused (`IEC_DAEMON_TRIM_SECS`).
* **Bounds.** A request is one line of at most [`MAX_REQUEST`] bytes (room for a tool input
  carrying a text of [`iec_core::MAX_TEXT`] bytes); a longer one is answered
  `{"error":"too-large","limit":MAX_REQUEST}` as soon as the limit is passed (the rest of it, up
  to [`MAX_DRAIN`] bytes, is read and dropped so that the client's send does not fail), and the
  hook never sends one: it decides such a call in its own process. A text over the limit is
  answered as the hook answers it itself (`ask`, see [`crate`]).
*/

use crate::Reply;
use rustix::thread::CpuSet;
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// `IEC_DAEMON_SOCKET`: the socket path (its directory must be private to the user).
pub const SOCKET_ENV: &str = "IEC_DAEMON_SOCKET";
/// `IEC_DAEMON_IDLE_SECS`: seconds without a request after which the daemon exits.
pub const IDLE_ENV: &str = "IEC_DAEMON_IDLE_SECS";
/// Idle time after which the daemon exits (15 minutes).
pub const DEFAULT_IDLE: Duration = iec_core::config::DEFAULT_DAEMON_IDLE;
/// Connections served at once; beyond that a connection is answered `busy` and the hook
/// decides in its own process.
pub const MAX_CONNECTIONS: usize = 64;
/// Connections answered `busy` at once (each on a small thread until its request is read);
/// beyond that a connection is closed unanswered, which the hook takes as any other failure.
pub const MAX_BUSY: usize = 256;
/// The answer to a connection beyond [`MAX_CONNECTIONS`].
pub const BUSY: &str = "busy";
/// Longest request accepted: a tool input as long as the hook reads ([`iec_core::MAX_CALL_JSON`])
/// and 64 KiB for the request's other fields.
pub const MAX_REQUEST: usize = iec_core::MAX_CALL_JSON + (64 << 10);
/// The answer to a request longer than [`MAX_REQUEST`].
pub const TOO_LARGE: &str = "too-large";
/// Bytes of a request over [`MAX_REQUEST`] that the daemon still reads (and drops) after its
/// `too-large` answer, so that a client writing the whole of it does not get a broken pipe.
pub const MAX_DRAIN: usize = 64 << 20;
/// How long a request waits for a free witness slot before it is answered `busy`.
pub const SLOT_WAIT: Duration = Duration::from_secs(5);
/// `IEC_DAEMON_TRIM_SECS`: seconds after which an unused slot's witnesses end.
pub const TRIM_ENV: &str = "IEC_DAEMON_TRIM_SECS";
/// Default for [`TRIM_ENV`]: the witnesses of a slot unused this long end (those of the first
/// slot of each CPU are kept).
pub const TRIM_AFTER: Duration = iec_core::config::DEFAULT_DAEMON_TRIM;
/// Longest answer a hook reads: the decision for the longest text, its rendering written as
/// `\xHH` escapes and then as JSON, with room to spare.
pub const MAX_ANSWER: usize = 64 << 20;
/// How long a hook waits for the daemon's answer before deciding itself.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// Why the daemon did not answer.
#[derive(Debug)]
pub enum AskError {
    /// No daemon listens on this socket (none started yet, or a dead one's file).
    NotRunning(PathBuf),
    /// The daemon serves [`MAX_CONNECTIONS`] connections already, or no witness slot came free
    /// in time.
    Busy,
    /// The request would be longer than [`MAX_REQUEST`]; it is not sent.
    TooLarge(usize),
    /// Anything else: no private directory, a timeout, a refused or malformed request.
    Failed(String),
}

impl std::fmt::Display for AskError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AskError::NotRunning(p) => write!(f, "no daemon listens on {}", p.display()),
            AskError::Busy => write!(f, "the daemon is busy ({MAX_CONNECTIONS} connections)"),
            AskError::TooLarge(n) => write!(
                f,
                "the request would be {n} bytes; the daemon takes requests of at most {MAX_REQUEST}"
            ),
            AskError::Failed(m) => f.write_str(m),
        }
    }
}

/// This build's identity: the executable and the environment that changes a witness.
pub fn build_id() -> &'static str {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let mut h = Fnv::new();
        h.bytes(env!("CARGO_PKG_VERSION").as_bytes());
        if let Ok(m) = std::fs::metadata("/proc/self/exe") {
            for n in [
                m.dev(),
                m.ino(),
                m.size(),
                m.mtime() as u64,
                m.mtime_nsec() as u64,
            ] {
                h.bytes(&n.to_le_bytes());
            }
        }
        let config = iec_core::config::current();
        for (var, value) in [("IEC_BASH", config.bash), ("IEC_TMUX", config.tmux)] {
            h.bytes(var.as_bytes());
            match value {
                Some(v) => h.bytes(std::os::unix::ffi::OsStrExt::as_bytes(v.as_os_str())),
                None => h.bytes(&[0xff]),
            }
        }
        format!("{:016x}", h.0)
    })
}

struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn bytes(&mut self, b: &[u8]) {
        for &x in b {
            self.0 = (self.0 ^ x as u64).wrapping_mul(0x0000_0100_0000_01b3);
        }
        // A separator, so that field boundaries count.
        self.0 = (self.0 ^ 0x1f).wrapping_mul(0x0000_0100_0000_01b3);
    }
}

/// The socket this build uses (see the module documentation); its directory is created and
/// checked to be private.
pub fn socket_path() -> std::io::Result<PathBuf> {
    let config = iec_core::config::Config::from_env()
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    if let Some(p) = config.daemon_socket {
        let dir = match p.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        private_dir(&dir)?;
        return Ok(p);
    }
    let dir = match config.xdg_runtime_dir {
        Some(d) if d.is_absolute() && d.is_dir() => d.join("iec"),
        _ => match config.home {
            Some(h) if h.is_absolute() => h.join(".cache/iec/run"),
            _ => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "neither XDG_RUNTIME_DIR nor HOME names a directory for the daemon's socket",
                ))
            }
        },
    };
    private_dir(&dir)?;
    Ok(dir.join(format!("hook-{}.sock", build_id())))
}

/// Creates `dir` (mode 0700) when missing and checks that it is a directory of this user that
/// group and others cannot enter.
fn private_dir(dir: &Path) -> std::io::Result<()> {
    if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)?;
    }
    match std::fs::DirBuilder::new().mode(0o700).create(dir) {
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        _ => {}
    }
    let m = std::fs::symlink_metadata(dir)?;
    let uid = rustix::process::geteuid().as_raw();
    if !m.is_dir() || m.uid() != uid || m.mode() & 0o077 != 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::PermissionDenied,
            format!(
                "{} is not a private directory of this user (mode {:o}, owner {})",
                dir.display(),
                m.mode() & 0o7777,
                m.uid()
            ),
        ));
    }
    Ok(())
}

/// Asks the daemon for the hook's answer.
pub fn ask(launch: &str, launch_files: &[PathBuf], tool_input: &Value) -> Result<Reply, AskError> {
    let socket = socket_path().map_err(|e| AskError::Failed(format!("no socket directory: {e}")))?;
    let mut stream = match UnixStream::connect(&socket) {
        Ok(s) => s,
        Err(e)
            if matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            return Err(AskError::NotRunning(socket))
        }
        Err(e) => {
            return Err(AskError::Failed(format!(
                "cannot connect to {}: {e}",
                socket.display()
            )))
        }
    };
    let failed = |what: &str, e: &dyn std::fmt::Display| AskError::Failed(format!("{what}: {e}"));
    // Relative launch files are the hook's, not the daemon's working directory's.
    let cwd = std::env::current_dir().unwrap_or_default();
    let files: Vec<String> = launch_files
        .iter()
        .map(|f| cwd.join(f).to_string_lossy().into_owned())
        .collect();
    let mut req = json!({
        "build": build_id(), "launch": launch, "launch_files": files, "tool_input": tool_input,
    })
    .to_string();
    req.push('\n');
    // The daemon would refuse it after reading 8 MiB: not worth sending.
    if req.len() > MAX_REQUEST {
        return Err(AskError::TooLarge(req.len()));
    }
    stream
        .set_write_timeout(Some(ANSWER_TIMEOUT))
        .and_then(|()| stream.set_read_timeout(Some(ANSWER_TIMEOUT)))
        .map_err(|e| failed("socket options", &e))?;
    // A daemon that answers before it has read the whole request (`busy`) may have closed its
    // end meanwhile: its answer is still there to read.
    let sent = stream.write_all(req.as_bytes());
    // One line: whatever follows it (a reset from a daemon that did not read the whole
    // request) does not matter.
    let mut buf = Vec::new();
    let read = BufReader::new(&stream)
        .take(MAX_ANSWER as u64)
        .read_until(b'\n', &mut buf);
    let v: Value = match (read, sent) {
        (Ok(_), _) if buf.last() == Some(&b'\n') => {
            serde_json::from_slice(&buf).map_err(|e| failed("malformed answer", &e))?
        }
        (_, Err(e)) => return Err(failed("cannot send the request", &e)),
        (Err(e), Ok(())) => return Err(failed("no answer", &e)),
        (Ok(_), Ok(())) => {
            return Err(AskError::Failed(
                "no answer: the daemon closed the connection".into(),
            ))
        }
    };
    if v.get("error").and_then(Value::as_str) == Some(BUSY) {
        return Err(AskError::Busy);
    }
    if v.get("error").and_then(Value::as_str) == Some(TOO_LARGE) {
        return Err(AskError::TooLarge(req.len()));
    }
    if let Some(e) = v.get("error").and_then(Value::as_str) {
        return Err(AskError::Failed(format!("the daemon refused the request: {e}")));
    }
    match (v["stdout"].as_str(), v["stderr"].as_str()) {
        (Some(o), Some(e)) => Ok(Reply {
            stdout: o.into(),
            stderr: e.into(),
        }),
        _ => Err(AskError::Failed(format!("malformed answer: {v}"))),
    }
}

/// Starts this executable with `args` as a detached daemon serving `socket`: a new session,
/// working directory `/`, stdio on `/dev/null`, no inherited descriptors. Not waited for.
pub fn start_detached(socket: &Path, args: &[String]) -> std::io::Result<()> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe()?;
    let mut cmd = Command::new(exe);
    cmd.args(args)
        .env(SOCKET_ENV, socket)
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::setsid();
            libc::umask(0o077);
            // Descriptors the harness let this hook inherit must not be held open by the
            // daemon (a harness waits for the hook's pipes to close).
            if libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, libc::CLOSE_RANGE_CLOEXEC) != 0 {
                for fd in 3..1024 {
                    libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC);
                }
            }
            Ok(())
        });
    }
    // The child outlives this process; it is reparented when the hook exits.
    cmd.spawn().map(drop)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::SeqCst);
}

/// Serves `socket` until idle for `idle`, a SIGTERM or SIGINT, or the socket file is gone.
/// Returns `Ok(false)` at once when another daemon holds the socket's lock.
pub fn serve(socket: &Path, idle: Duration) -> anyhow::Result<bool> {
    use anyhow::Context;
    let config = iec_core::config::Config::from_env()?;
    let dir = match socket.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    };
    private_dir(&dir)?;
    let lock_path = socket.with_extension("lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    if rustix::fs::flock(&lock, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_err() {
        return Ok(false);
    }
    // Holding the lock, any socket file here is a dead daemon's.
    match std::fs::remove_file(socket) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(e).with_context(|| format!("cannot remove the stale {}", socket.display()))
        }
        _ => {}
    }
    let listener =
        UnixListener::bind(socket).with_context(|| format!("cannot listen on {}", socket.display()))?;
    std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600))?;
    let ino = std::fs::symlink_metadata(socket)?.ino();
    sweep(&dir, &lock_path);
    // SAFETY: installs a handler that only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    let started = Instant::now();
    static ACTIVE: AtomicUsize = AtomicUsize::new(0);
    static LAST: AtomicU64 = AtomicU64::new(0);
    let touch = move || LAST.store(started.elapsed().as_millis() as u64, Ordering::SeqCst);
    touch();
    std::thread::spawn(warm);
    let trim_after = config.daemon_trim;
    {
        let socket = socket.to_path_buf();
        std::thread::spawn(move || loop {
            std::thread::sleep(Duration::from_millis(200));
            slots().trim(trim_after);
            let ours = std::fs::symlink_metadata(&socket).is_ok_and(|m| m.ino() == ino);
            let idle_for = (started.elapsed().as_millis() as u64).saturating_sub(LAST.load(Ordering::SeqCst));
            let idle_out = ACTIVE.load(Ordering::SeqCst) == 0 && idle_for >= idle.as_millis() as u64;
            // A daemon whose executable was deleted or replaced (a rebuild, an uninstall) is
            // never asked again: hooks of the new file have another build id.
            let orphaned = std::fs::read_link("/proc/self/exe")
                .is_ok_and(|p| p.as_os_str().as_encoded_bytes().ends_with(b" (deleted)"));
            if !ours || idle_out || orphaned || STOP.load(Ordering::SeqCst) {
                if ours {
                    let _ = std::fs::remove_file(&socket);
                    let _ = std::fs::remove_file(&lock_path);
                }
                // Exit runs the witnesses' clean-up (their private directories).
                drop(lock);
                std::process::exit(0);
            }
        });
    }
    let uid = rustix::process::geteuid().as_raw();
    for conn in listener.incoming() {
        let Ok(stream) = conn else {
            std::thread::sleep(Duration::from_millis(10));
            continue;
        };
        touch();
        if peer_uid(&stream) != Some(uid) {
            continue;
        }
        if ACTIVE.fetch_add(1, Ordering::SeqCst) >= MAX_CONNECTIONS {
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
            busy(stream);
            continue;
        }
        let spawned = std::thread::Builder::new().spawn(move || {
            handle(stream);
            touch();
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
        });
        if spawned.is_err() {
            ACTIVE.fetch_sub(1, Ordering::SeqCst);
        }
    }
    Ok(true)
}

/// Removes the socket and lock files of other builds' daemons that are gone (their lock is
/// free), so that rebuilds do not pile up files in the directory.
fn sweep(dir: &Path, own_lock: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let path = e.path();
        let name = e.file_name();
        let Some(name) = name.to_str() else { continue };
        if !(name.starts_with("hook-") && name.ends_with(".lock")) || path == own_lock {
            continue;
        }
        let Ok(f) = std::fs::File::open(&path) else {
            continue;
        };
        if rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive).is_ok() {
            let _ = std::fs::remove_file(path.with_extension("sock"));
            let _ = std::fs::remove_file(&path);
        }
    }
}

/// The user id of the process at the other end.
fn peer_uid(s: &UnixStream) -> Option<u32> {
    // SO_PEERCRED.
    rustix::net::sockopt::socket_peercred(s)
        .ok()
        .map(|cred| cred.uid.as_raw())
}

/// Answers a connection beyond [`MAX_CONNECTIONS`] with `busy`, on a small thread of its own
/// (at most [`MAX_BUSY`] at once; beyond that the connection is closed unanswered).
fn busy(stream: UnixStream) {
    static BUSY_NOW: AtomicUsize = AtomicUsize::new(0);
    if BUSY_NOW.fetch_add(1, Ordering::SeqCst) >= MAX_BUSY {
        BUSY_NOW.fetch_sub(1, Ordering::SeqCst);
        return;
    }
    let spawned = std::thread::Builder::new().stack_size(64 << 10).spawn(move || {
        let answer = format!("{}\n", json!({ "error": BUSY }));
        answer_and_close(&stream, answer.as_bytes(), Duration::from_secs(2));
        BUSY_NOW.fetch_sub(1, Ordering::SeqCst);
    });
    if spawned.is_err() {
        BUSY_NOW.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Writes `answer`, ends this side's writing, and reads what the client still sends (at most
/// [`MAX_REQUEST`] bytes, for at most `wait`) before the connection closes: a Unix socket
/// closed with unread data is reset, and the client would get the reset instead of the answer.
fn answer_and_close(stream: &UnixStream, answer: &[u8], wait: Duration) {
    answer_and_drain(stream, answer, wait, MAX_REQUEST)
}

/// [`answer_and_close`], reading at most `drain` bytes.
fn answer_and_drain(stream: &UnixStream, answer: &[u8], wait: Duration, drain: usize) {
    let _ = stream.set_write_timeout(Some(wait));
    let mut w = stream;
    let _ = w.write_all(answer);
    let _ = stream.shutdown(std::net::Shutdown::Write);
    let _ = stream.set_read_timeout(Some(wait));
    let started = Instant::now();
    let mut left = drain;
    let mut buf = [0u8; 8192];
    while left > 0 && started.elapsed() < wait {
        match w.read(&mut buf[..left.min(8192)]) {
            Ok(0) | Err(_) => break,
            Ok(n) => left -= n,
        }
    }
}

/// Answers one connection; a request that is malformed, too long or cut off gets an `error`
/// (or nothing, when the client is gone) and never stops the daemon.
fn handle(stream: UnixStream) {
    let _ = stream.set_write_timeout(Some(ANSWER_TIMEOUT));
    let mut line = Vec::new();
    let read = read_line_within(&stream, &mut line, MAX_REQUEST + 1, request_deadline());
    let too_large = line.len() > MAX_REQUEST;
    let answer = match read {
        Err(e) => json!({ "error": format!("cannot read the request: {e}") }),
        Ok(_) if too_large => json!({ "error": TOO_LARGE, "limit": MAX_REQUEST }),
        Ok(_) if line.last() != Some(&b'\n') => {
            json!({ "error": format!("the request is not one line of at most {MAX_REQUEST} bytes") })
        }
        Ok(_) => match request(&line) {
            Ok(r) => json!({ "stdout": r.stdout, "stderr": r.stderr }),
            Err(e) => json!({ "error": e }),
        },
    };
    drop(line);
    let mut out = answer.to_string();
    out.push('\n');
    // A client still writing a request that is too long reads its answer once it is done:
    // read (and drop) the rest, within bounds, so that its send does not fail halfway.
    let (wait, drain) = match too_large {
        true => (ANSWER_TIMEOUT, MAX_DRAIN),
        false => (Duration::from_secs(2), MAX_REQUEST),
    };
    answer_and_drain(&stream, out.as_bytes(), wait, drain);
}

/// How long a client may take to send its whole request line: [`ANSWER_TIMEOUT`], or
/// `IEC_DAEMON_REQUEST_SECS`. A per-read timeout alone let a client that sends a byte every few
/// seconds hold its connection (and with 64 of them every slot) for as long as it liked (red
/// team round 6).
fn request_deadline() -> Duration {
    // The configuration caps it at 10 s, the same as ANSWER_TIMEOUT.
    iec_core::config::current().daemon_request.min(ANSWER_TIMEOUT)
}

/// Reads into `line` up to and including the first newline, at most `max` bytes, within `within`
/// of now in all; `TimedOut` past it.
fn read_line_within(
    stream: &UnixStream,
    line: &mut Vec<u8>,
    max: usize,
    within: Duration,
) -> std::io::Result<usize> {
    let deadline = Instant::now() + within;
    let mut buf = [0u8; 8192];
    let mut r = stream;
    while line.len() < max && line.last() != Some(&b'\n') {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no whole request line within {} s", within.as_secs_f64()),
            ));
        }
        stream.set_read_timeout(Some(left))?;
        let want = (max - line.len()).min(buf.len());
        let n = match r.read(&mut buf[..want]) {
            Ok(n) => n,
            // (A read timed out: the deadline above says so.)
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::Interrupted
                        | std::io::ErrorKind::WouldBlock
                        | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue
            }
            Err(e) => return Err(e),
        };
        if n == 0 {
            break;
        }
        // Up to the newline: what follows it is not part of the request.
        let take = buf[..n].iter().position(|&b| b == b'\n').map_or(n, |i| i + 1);
        line.extend_from_slice(&buf[..take]);
    }
    Ok(line.len())
}

fn request(line: &[u8]) -> Result<Reply, String> {
    let v: Value = serde_json::from_slice(line).map_err(|e| format!("not JSON: {e}"))?;
    if v["build"].as_str() != Some(build_id()) {
        return Err(format!(
            "build {} asked a daemon of build {}",
            v["build"],
            build_id()
        ));
    }
    let launch = v["launch"].as_str().ok_or("no `launch`")?;
    let files = match &v["launch_files"] {
        Value::Null => vec![],
        Value::Array(a) => a
            .iter()
            .map(|f| {
                f.as_str()
                    .map(PathBuf::from)
                    .ok_or("`launch_files` must hold strings")
            })
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err("`launch_files` must be an array".into()),
    };
    let tool_input = v
        .get("tool_input")
        .filter(|t| t.get("command").is_some_and(Value::is_string))
        .ok_or("no `tool_input` with a string `command`")?;
    // Over the text limit: answered without a witness (and without waiting for one).
    if iec_core::limits::check_command(&tool_input["command"]).is_err() {
        return Ok(crate::answer_with(
            builtin(),
            launch,
            tool_input,
            iec_witness::global(),
        ));
    }
    let cat;
    let cat = match files.is_empty() {
        // The built-in launches never change: parse them once.
        true => builtin(),
        false => {
            cat = match crate::catalog_for(launch, &files) {
                Ok(c) => c,
                Err(e) => return Ok(crate::Reply::error(&e)),
            };
            &cat
        }
    };
    let slot = slots().acquire(SLOT_WAIT).ok_or(BUSY)?;
    Ok(slot.run(|pool| crate::answer_with(cat, launch, tool_input, pool)))
}

/// How many witness slots the daemon has: two per CPU it may run on, at least 2, at most 16
/// (see the module documentation).
pub fn witness_slots() -> usize {
    (2 * allowed_cpus().len()).clamp(2, 16)
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    let Ok(set) = rustix::thread::sched_getaffinity(None) else {
        return vec![];
    };
    (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect()
}

/// One witness slot: its own pool, the CPU its checks run on, and when it was last used.
struct Slot {
    pool: std::sync::Mutex<iec_witness::BashPool>,
    cpu: Option<usize>,
    /// Milliseconds since [`Slots::started`] at the end of its last check; `u64::MAX` once its
    /// witnesses were ended.
    last: AtomicU64,
}

/// The daemon's witness slots: a check runs only while it holds one, so no more witnesses exist
/// than the slots can hold.
struct Slots {
    slots: Vec<Slot>,
    /// Indices of the slots no check holds.
    free: std::sync::Mutex<Vec<usize>>,
    freed: std::sync::Condvar,
    /// Slots below this index keep their witnesses when unused (the first of each CPU).
    floor: usize,
    started: Instant,
}

fn slots() -> &'static Slots {
    static SLOTS: OnceLock<Slots> = OnceLock::new();
    SLOTS.get_or_init(|| {
        let cpus = allowed_cpus();
        let n = witness_slots();
        Slots {
            slots: (0..n)
                .map(|i| Slot {
                    pool: std::sync::Mutex::new(iec_witness::BashPool::new()),
                    cpu: (!cpus.is_empty()).then(|| cpus[i % cpus.len()]),
                    last: AtomicU64::new(u64::MAX),
                })
                .collect(),
            free: std::sync::Mutex::new((0..n).rev().collect()),
            freed: std::sync::Condvar::new(),
            floor: cpus.len().clamp(1, n),
            started: Instant::now(),
        }
    })
}

/// A slot held by one check; given back when dropped.
struct Held {
    i: usize,
}

impl Slots {
    /// The free slot with the lowest index (so that the others stay unused and are trimmed),
    /// waiting up to `wait` for one.
    fn acquire(&'static self, wait: Duration) -> Option<Held> {
        let deadline = Instant::now() + wait;
        let mut free = self.free.lock().unwrap();
        loop {
            if let Some(k) = (0..free.len()).min_by_key(|&k| free[k]) {
                return Some(Held {
                    i: free.swap_remove(k),
                });
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            free = self.freed.wait_timeout(free, left).unwrap().0;
        }
    }

    /// Ends the witnesses of free slots at or above the floor that were unused for `after`.
    fn trim(&self, after: Duration) {
        let now = self.started.elapsed().as_millis() as u64;
        for i in self.floor..self.slots.len() {
            let s = &self.slots[i];
            let last = s.last.load(Ordering::SeqCst);
            if last == u64::MAX || now.saturating_sub(last) < after.as_millis() as u64 {
                continue;
            }
            // Take it out of the free list while its pool is replaced.
            {
                let mut free = self.free.lock().unwrap();
                let Some(k) = free.iter().position(|&f| f == i) else {
                    continue;
                };
                free.swap_remove(k);
            }
            let old = std::mem::take(&mut *s.pool.lock().unwrap());
            s.last.store(u64::MAX, Ordering::SeqCst);
            drop(old);
            self.free.lock().unwrap().push(i);
            self.freed.notify_one();
        }
    }
}

impl Held {
    /// Runs `f` with this slot's pool, the thread pinned to the slot's CPU meanwhile.
    fn run<T>(&self, f: impl FnOnce(&iec_witness::BashPool) -> T) -> T {
        let slot = &slots().slots[self.i];
        let saved = slot.cpu.and_then(pin_to);
        let out = f(&slot.pool.lock().unwrap());
        if let Some(saved) = saved {
            // Restores the mask read in `pin_to` on the same thread.
            let _ = rustix::thread::sched_setaffinity(None, &saved);
        }
        out
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        let s = slots();
        s.slots[self.i]
            .last
            .store(s.started.elapsed().as_millis() as u64, Ordering::SeqCst);
        s.free.lock().unwrap().push(self.i);
        s.freed.notify_one();
    }
}

/// Pins this thread to `cpu`; the mask it had, to restore.
fn pin_to(cpu: usize) -> Option<CpuSet> {
    let saved = rustix::thread::sched_getaffinity(None).ok()?;
    let mut one = CpuSet::new();
    one.set(cpu);
    rustix::thread::sched_setaffinity(None, &one).ok()?;
    Some(saved)
}

fn builtin() -> &'static iec_launches::Catalog {
    static CAT: OnceLock<iec_launches::Catalog> = OnceLock::new();
    CAT.get_or_init(iec_launches::Catalog::builtin)
}

/// Starts the witnesses of the first slot of each CPU (those that are kept when unused), by
/// deciding two exposed calls in each.
fn warm() {
    let s = slots();
    let held: Vec<Held> = (0..s.floor).filter_map(|_| s.acquire(Duration::ZERO)).collect();
    let threads: Vec<_> = held
        .into_iter()
        .map(|slot| {
            std::thread::spawn(move || {
                slot.run(|pool| {
                    for launch in ["claude-code-2.1.72-linux", crate::DEFAULT_LAUNCH] {
                        let input = json!({ "command": "printf '%s' 'a != b' | grep -c \"$HOME\"" });
                        let _ = crate::answer_with(builtin(), launch, &input, pool);
                    }
                });
            })
        })
        .collect();
    for t in threads {
        let _ = t.join();
    }
}
