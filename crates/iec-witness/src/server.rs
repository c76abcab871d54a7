//! One warm bash witness process (see `server.bash` for what it does and refuses to do).

use crate::jail::{Jail, Kind};
use crate::WitnessError;
use std::io::PipeReader;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;

const SCRIPT: &str = include_str!("server.bash");

/// The server script for a kind of server: a parse-only one (which cannot fork) without the
/// lines marked `#<guarded>` … `#</guarded>` (they set and clear the DEBUG trap around parse
/// requests), an expansion one without those marked `#<nofork>` … `#</nofork>` (the refusal
/// of expansion requests).
fn script_for(kind: Kind) -> String {
    let drop = if kind == Kind::Parse { "guarded" } else { "nofork" };
    let mut out = String::with_capacity(SCRIPT.len());
    let mut section: Option<&str> = None;
    for line in SCRIPT.split_inclusive('\n') {
        let t = line.trim();
        if let Some(name) = t.strip_prefix("#</").and_then(|r| r.strip_suffix('>')) {
            debug_assert_eq!(section, Some(name));
            section = None;
        } else if let Some(name) = t.strip_prefix("#<").and_then(|r| r.strip_suffix('>')) {
            section = Some(name);
        } else if section != Some(drop) {
            out.push_str(line);
        }
    }
    out
}

/// How the error of a server that exited in the middle of a reply begins (its output follows).
pub(crate) const ENDED_EARLY: &str = "witness ended early: ";

/// A text whose canonical form every server gives the same way while its parser is sound. Some
/// syntax errors leave state behind in bash 5.2: after an unterminated `[[`, the next parse of
/// `echo [[ x ]]` fails. A server asks the canary after every parse error and is retired when the
/// answer changed.
const CANARY: &[u8] = b"[[ -n x && x == y* ]] && (( 1 + 2 )); case x in x) echo \"$(echo [[ a ]])\" ;; esac\nfor i in 1; do [ -n \"${i:-[[}\" ]; done <<'E'\n[[\nE";

use crate::jail::MAX_MEMORY;

/// What the witness jail needs from the kernel.
const JAIL_NEEDS: &str = "seccomp filters (Linux, x86_64 or aarch64); set IEC_ALLOW_UNJAILED=1 to run witnesses with bash's own guards only";

/// Whether witnesses may run without the kernel filter (`IEC_ALLOW_UNJAILED=1`).
pub(crate) fn unjailed_allowed() -> bool {
    iec_core::config::current().allow_unjailed
}

pub(crate) fn no_jail() -> WitnessError {
    WitnessError::Start {
        program: "the witness jail".into(),
        source: std::io::Error::new(std::io::ErrorKind::Unsupported, JAIL_NEEDS),
    }
}

/// bash's verdict on a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Parse {
    /// It parses; `canonical` is bash's own printing of it (`declare -f` body).
    Ok {
        /// The function body as bash prints it, header and closing brace removed.
        canonical: String,
    },
    /// It parses on its own only because the end of input closes it (an unterminated
    /// here-document, a trailing backslash): `bash -c` accepts it, but it has no canonical form
    /// and any text appended after it changes its meaning.
    EndOnly {
        /// bash's warning or the wrapped-parse error.
        message: String,
    },
    /// It does not parse; `message` is bash's diagnostic.
    Error {
        /// bash's message.
        message: String,
    },
}

impl Parse {
    /// The canonical form, if the text parses.
    pub fn canonical(&self) -> Option<&str> {
        match self {
            Parse::Ok { canonical } => Some(canonical),
            Parse::Error { .. } | Parse::EndOnly { .. } => None,
        }
    }

    /// True unless bash rejects the text.
    pub fn parses(&self) -> bool {
        !matches!(self, Parse::Error { .. })
    }
}

/// What the outer shell hands to a command whose arguments are harness-rendered words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Expansion {
    /// The words after expansion and quote removal.
    pub args: Vec<String>,
    /// Exit status of the expansion (non-zero: an expansion error such as `${x?}`).
    pub status: i32,
    /// bash's diagnostics while expanding.
    pub diagnostics: String,
    /// True when the words held more than one command (the rendering broke out of its word).
    pub broke_out: bool,
}

/// A warm bash witness process.
pub struct BashServer {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<TimedPipe>,
    dir: tempfile::TempDir,
    /// The request file, kept open: rewriting it in place costs two system calls instead of a
    /// path lookup, an open, a write and a close.
    req_file: std::fs::File,
    /// The file that tells an expansion request which command the words must make.
    exp_file: std::fs::File,
    /// Reused buffer for the request file.
    buf: Vec<u8>,
    /// The CPU the server is pinned to, if any.
    cpu: Option<usize>,
    /// Parse-only (cannot fork) or general.
    kind: Kind,
    /// What the server was started for (a parse server without the filter is a general one).
    role: Kind,
    /// Requests answered. A text that breaks out of its function body may leave functions
    /// defined in the server, and `declare -F` lists them in every later expansion reply, so a
    /// long-lived server grows: the pool retires servers after [`BashServer::RETIRE_AFTER`].
    served: usize,
    /// This server's own answer to [`CANARY`] when it was fresh.
    canary: Vec<u8>,
    /// A parse error left bash's parser in a state that changes later answers.
    poisoned: bool,
}

/// Whether this system lets us start the witness without network (`unshare -n`), probed once.
fn unshare_works() -> bool {
    static OK: OnceLock<bool> = OnceLock::new();
    *OK.get_or_init(|| {
        for args in [&["-n", "true"][..], &["-rn", "true"][..]] {
            let ok = Command::new(unshare_path())
                .args(args)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .map(|s| s.success())
                .unwrap_or(false);
            if ok {
                return true;
            }
        }
        false
    })
}

fn unshare_args() -> Option<&'static [&'static str]> {
    static ARGS: OnceLock<Option<&'static [&'static str]>> = OnceLock::new();
    *ARGS.get_or_init(|| {
        if !unshare_works() {
            return None;
        }
        let root = Command::new(unshare_path())
            .args(["-n", "true"])
            .stderr(Stdio::null())
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        Some(if root { &["-n"] } else { &["-rn"] })
    })
}

fn unshare_path() -> &'static str {
    ["/usr/bin/unshare", "/bin/unshare"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("unshare")
}

/// A per-server secret for the guard's variable names: the time, the pid and a counter, hashed.
fn nonce() -> String {
    use std::hash::{BuildHasher, Hasher};
    static N: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(N.fetch_add(1, std::sync::atomic::Ordering::Relaxed));
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos(),
    );
    h.write_u32(std::process::id());
    format!("{:016x}", h.finish())
}

/// True when witness servers run without network access on this system.
pub fn isolated_network() -> bool {
    unshare_args().is_some()
}

/// A private directory for request files, in memory (`/dev/shm`) where the system has it:
/// a request file is rewritten for every question, and on an overlay or disk file system that
/// costs more than the parse itself. The name carries the owner's pid: directories of processes
/// that are gone (killed before they could clean up) are removed by the next process, and a
/// normal exit removes the process's own (the global pool is never dropped).
pub(crate) fn private_dir(prefix: &str) -> std::io::Result<tempfile::TempDir> {
    static SWEPT: OnceLock<()> = OnceLock::new();
    SWEPT.get_or_init(|| {
        sweep(prefix);
        // SAFETY: registers a plain extern "C" function.
        unsafe { libc::atexit(remove_live_dirs) };
    });
    let named = format!("{prefix}{}-", std::process::id());
    let shm = std::path::Path::new("/dev/shm");
    let dir = match shm.is_dir() {
        true => tempfile::Builder::new().prefix(&named).tempdir_in(shm),
        false => tempfile::Builder::new().prefix(&named).tempdir(),
    }
    .or_else(|_| tempfile::Builder::new().prefix(&named).tempdir())?;
    live_dirs().lock().unwrap().push(dir.path().to_path_buf());
    Ok(dir)
}

fn live_dirs() -> &'static std::sync::Mutex<Vec<PathBuf>> {
    static LIVE: OnceLock<std::sync::Mutex<Vec<PathBuf>>> = OnceLock::new();
    LIVE.get_or_init(Default::default)
}

extern "C" fn remove_live_dirs() {
    if let Ok(dirs) = live_dirs().lock() {
        for d in dirs.iter() {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

/// Removes `PREFIX<pid>-*` directories whose process is gone, and unnamed ones of an older
/// layout (`PREFIX<random>`) not touched for an hour.
fn sweep(prefix: &str) {
    for base in [std::path::PathBuf::from("/dev/shm"), std::env::temp_dir()] {
        let Ok(entries) = std::fs::read_dir(&base) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name();
            let Some(rest) = name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
                continue;
            };
            let stale = match rest.split_once('-').and_then(|(pid, _)| pid.parse::<i32>().ok()) {
                // Signal 0 only asks whether the process exists.
                Some(pid) => rustix::process::Pid::from_raw(pid).is_some_and(|pid| {
                    rustix::process::test_kill_process(pid) == Err(rustix::io::Errno::SRCH)
                }),
                None => e
                    .metadata()
                    .and_then(|m| m.modified())
                    .is_ok_and(|t| t.elapsed().is_ok_and(|a| a.as_secs() > 3600)),
            };
            if stale && e.file_type().is_ok_and(|t| t.is_dir()) {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
}

/// The bash program used by witnesses: `IEC_BASH` or `bash` from the usual places.
pub fn bash_path() -> PathBuf {
    if let Some(p) = iec_core::config::current().bash {
        return p;
    }
    for p in ["/bin/bash", "/usr/bin/bash", "/usr/local/bin/bash"] {
        if std::path::Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    PathBuf::from("bash")
}

impl BashServer {
    /// Starts a witness process in a fresh private directory, for any kind of request.
    pub fn start() -> Result<BashServer, WitnessError> {
        BashServer::start_on(None)
    }

    /// The CPU this server is pinned to.
    pub fn cpu(&self) -> Option<usize> {
        self.cpu
    }

    /// True when this server cannot start processes (a parse-only server under the seccomp
    /// filter); it refuses expansion requests.
    pub fn parse_only(&self) -> bool {
        self.kind == Kind::Parse
    }

    /// True when the server was started for parse requests (with or without the filter).
    pub(crate) fn for_parsing(&self) -> bool {
        self.role == Kind::Parse
    }

    /// As [`BashServer::start`], pinned to `cpu` when given (see the pool for why).
    pub fn start_on(cpu: Option<usize>) -> Result<BashServer, WitnessError> {
        BashServer::start_kind(Kind::Expand, cpu)
    }

    /// A parse-only server: under the kernel filter it cannot start any process, so its parse
    /// requests run without the DEBUG-trap guard; expansion requests are refused. Where the
    /// filter is not available it is an ordinary guarded server.
    pub fn start_parse_only(cpu: Option<usize>) -> Result<BashServer, WitnessError> {
        BashServer::start_kind(Kind::Parse, cpu)
    }

    fn start_kind(kind: Kind, cpu: Option<usize>) -> Result<BashServer, WitnessError> {
        BashServer::spawn(kind, cpu)
    }

    fn spawn(kind: Kind, cpu: Option<usize>) -> Result<BashServer, WitnessError> {
        let dir = private_dir("iec-witness-")?;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))?;
        let bash = bash_path();
        let nonce = nonce();
        let script = script_for(kind).replace("NONCE", &nonce);
        // The script runs parse requests without the guard: a parse server cannot fork.
        let mode = if kind == Kind::Parse { "nofork" } else { "guarded" };
        let args: [&std::ffi::OsStr; 7] = [
            "--noprofile".as_ref(),
            "--norc".as_ref(),
            "-c".as_ref(),
            script.as_ref(),
            "iec-witness".as_ref(),
            dir.path().as_os_str(),
            mode.as_ref(),
        ];
        let env: [(&str, &std::ffi::OsStr); 5] = [
            ("PATH", "".as_ref()),
            ("LANG", "C.UTF-8".as_ref()),
            ("LC_ALL", "C.UTF-8".as_ref()),
            ("HOME", dir.path().as_os_str()),
            ("IEC_WITNESS", "1".as_ref()),
        ];
        let req_path = dir.path().join(format!("req-{nonce}"));
        let req_file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&req_path)?;
        std::fs::set_permissions(&req_path, std::fs::Permissions::from_mode(0o600))?;
        let exp_path = dir.path().join(format!("exp-{nonce}"));
        let exp_file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&exp_path)?;
        std::fs::set_permissions(&exp_path, std::fs::Permissions::from_mode(0o600))?;
        let mut cmd = Command::new(&bash);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        cmd.current_dir(dir.path()).stdin(Stdio::piped());
        let jail = Jail::new(kind, bash.as_os_str(), &args, &env, cpu)?.map(|j| j.reading(&[dir.path()]));
        match jail {
            Some(jail) => {
                if let Some((uid, gid)) = jail.owner() {
                    std::os::unix::fs::chown(dir.path(), Some(uid), Some(gid))?;
                    std::os::unix::fs::chown(&req_path, Some(uid), Some(gid))?;
                    std::os::unix::fs::chown(&exp_path, Some(uid), Some(gid))?;
                }
                // SAFETY: `enter_and_exec` makes only async-signal-safe syscalls on memory built
                // before the fork, and execs (or fails).
                unsafe {
                    use std::os::unix::process::CommandExt;
                    cmd.pre_exec(move || Err(jail.enter_and_exec()));
                }
            }
            None if unjailed_allowed() => {
                cmd.args(args).env_clear().envs(env.iter().map(|(k, v)| (*k, *v)));
            }
            None => return Err(no_jail()),
        }
        // stdout and stderr share one pipe so that bash's diagnostics arrive in order.
        let (reader, writer) = std::io::pipe()?;
        let writer2 = writer.try_clone()?;
        cmd.stdout(writer).stderr(writer2);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(source) => {
                return Err(WitnessError::Start {
                    program: format!("{} (in the witness jail: {})", bash.display(), JAIL_NEEDS),
                    source,
                })
            }
        };
        drop(cmd);
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = BufReader::with_capacity(
            1 << 16,
            TimedPipe {
                pipe: reader,
                deadline: None,
            },
        );
        let mut server = BashServer {
            cpu,
            kind,
            role: kind,
            served: 0,
            canary: Vec::new(),
            poisoned: false,
            child,
            stdin,
            stdout,
            dir,
            req_file,
            exp_file,
            buf: Vec::new(),
        };
        let (body, status) = server.raw_request('P', CANARY)?;
        if status != "OK" {
            return Err(WitnessError::Protocol(format!(
                "a fresh witness does not parse its canary: {status} {}",
                String::from_utf8_lossy(&body)
            )));
        }
        server.canary = body;
        Ok(server)
    }

    /// Sends one request; after a parse error, asks the canary again and retires the server
    /// when the answer changed (see [`CANARY`]).
    fn request(&mut self, mode: char, text: &[u8]) -> Result<(Vec<u8>, String), WitnessError> {
        let out = self.raw_request(mode, text)?;
        if matches!(mode, 'P' | 'X' | 'V' | 'W' | 'Q' | 'R') && out.1 != "OK" {
            let (body, status) = self.raw_request('P', CANARY)?;
            if status != "OK" || body != self.canary {
                self.poisoned = true;
            }
        }
        Ok(out)
    }

    /// Canonical forms of many texts in one request (each as the body of its own function,
    /// `__iec_m0` …); `Ok(None)` when they do not parse together as that many function bodies
    /// (one of them does not parse, or one swallowed the next): the caller asks for each on its
    /// own. The caller must have passed every text through [`crate::gate`], and none may hold
    /// NUL or name the server's functions (`__iec_`), see [`crate::BashPool::parse_many`].
    pub fn parse_many(&mut self, texts: &[&[u8]]) -> Result<Option<Vec<String>>, WitnessError> {
        if texts.is_empty() {
            return Ok(Some(vec![]));
        }
        self.buf.clear();
        for (i, t) in texts.iter().enumerate() {
            if t.contains(&0) {
                return Ok(None);
            }
            self.buf
                .extend_from_slice(format!("__iec_m{i}() {{\n").as_bytes());
            self.buf.extend_from_slice(t);
            self.buf.extend_from_slice(b"\n}\n");
        }
        let (body, status) = self.exchange(true, format!("M{}\n", texts.len()).as_bytes())?;
        match status.as_slice() {
            b"OK" => {}
            b"ERR:1" => {
                self.poisoned = true;
                return Err(WitnessError::Protocol(
                    "a command ran during parse (guard tripped); the gate let a break-out through".into(),
                ));
            }
            _ => {
                // As after any failed parse: a server whose state changed is retired.
                let (body, status) = self.raw_request('P', CANARY)?;
                if status != "OK" || body != self.canary {
                    self.poisoned = true;
                }
                return Ok(None);
            }
        }
        // `declare -f` prints each function as `NAME () ⏎{ ⏎BODY⏎}⏎`, in the order named; every
        // header must be where the previous function ended.
        let s = String::from_utf8_lossy(&body);
        let mut rest: &str = &s;
        let mut out = Vec::with_capacity(texts.len());
        for i in 0..texts.len() {
            let header = format!("__iec_m{i} () \n{{ \n");
            let Some(after) = rest.strip_prefix(header.as_str()) else {
                return Ok(None);
            };
            let end = if i + 1 < texts.len() {
                let next = format!("\n}}\n__iec_m{} () \n{{ \n", i + 1);
                match after.find(&next) {
                    Some(e) => e,
                    None => return Ok(None),
                }
            } else {
                match after.strip_suffix("\n}\n") {
                    Some(b) => b.len(),
                    None => return Ok(None),
                }
            };
            out.push(after[..end].to_string());
            rest = &after[end + 3..];
        }
        Ok(Some(out))
    }

    /// Sends one request; returns (body or diagnostics, status).
    fn raw_request(&mut self, mode: char, text: &[u8]) -> Result<(Vec<u8>, String), WitnessError> {
        if let Some(i) = text
            .iter()
            .position(|&b| b == 0)
            .filter(|_| !matches!(mode, 'Q' | 'R'))
        {
            return Err(WitnessError::Nul(i));
        }
        // The request file holds what bash sources: the text wrapped as a function body, or the
        // words as arguments of the recorder.
        self.buf.clear();
        match mode {
            'Q' | 'R' => {
                // A pair: `text` is A NUL B (NUL cannot occur in either).
                let i = text.iter().position(|&b| b == 0).unwrap_or(text.len());
                self.buf.extend_from_slice(b"__iec_f() {\n");
                self.buf.extend_from_slice(&text[..i]);
                self.buf.extend_from_slice(b"\n}\n__iec_g() {\n");
                self.buf.extend_from_slice(&text[(i + 1).min(text.len())..]);
                self.buf.extend_from_slice(b"\n}");
            }
            'P' | 'X' | 'V' | 'W' => {
                self.buf.extend_from_slice(b"__iec_f() {\n");
                self.buf.extend_from_slice(text);
                self.buf.extend_from_slice(b"\n}");
            }
            'E' | 'D' => {
                self.buf.extend_from_slice(b"__iec_rec ");
                self.buf.extend_from_slice(text);
            }
            _ => {}
        }
        let (body, status) = self.exchange(mode != 'F', &[mode as u8, b'\n'])?;
        Ok((body, String::from_utf8_lossy(&status).into_owned()))
    }

    /// One request: the prepared `buf` into the request file (when `with_file`), the command
    /// line on stdin, and the answer's body and status, read within the request timeout.
    fn exchange(&mut self, with_file: bool, command: &[u8]) -> Result<(Vec<u8>, Vec<u8>), WitnessError> {
        if with_file {
            use std::os::unix::fs::FileExt;
            self.req_file.write_all_at(&self.buf, 0)?;
            self.req_file.set_len(self.buf.len() as u64)?;
        }
        self.stdin.write_all(command)?;
        self.stdin.flush()?;
        self.served += 1;
        self.stdout.get_mut().deadline = Some(std::time::Instant::now() + request_timeout());
        let out = self.read_field().and_then(|body| Ok((body, self.read_field()?)));
        self.stdout.get_mut().deadline = None;
        out
    }

    /// Requests a server answers before the pool retires it.
    pub const RETIRE_AFTER: usize = 2000;
    /// The longest reply field read; a longer one ends the server (an expansion that explodes,
    /// such as a brace range of millions of words, must not exhaust the caller's memory).
    pub const MAX_REPLY: u64 = 64 << 20;

    /// Whether the server has answered enough requests to be retired.
    pub fn worn_out(&self) -> bool {
        self.served >= Self::RETIRE_AFTER || self.poisoned
    }

    fn read_field(&mut self) -> Result<Vec<u8>, WitnessError> {
        let mut buf = Vec::new();
        let n = match std::io::Read::take(&mut self.stdout, Self::MAX_REPLY).read_until(0, &mut buf) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::TimedOut => {
                // The server is mid-request; the caller drops it (which kills it).
                return Err(WitnessError::Limit(format!(
                    "no witness reply within {} s (IEC_WITNESS_TIMEOUT_SECS): the text asks bash for more work than a check does",
                    request_timeout().as_secs_f64()
                )));
            }
            Err(e) => return Err(e.into()),
        };
        if n as u64 >= Self::MAX_REPLY && buf.last() != Some(&0) {
            return Err(WitnessError::Limit(format!(
                "witness reply over {} MiB: the words expand to more than a check reads",
                Self::MAX_REPLY >> 20
            )));
        }
        if n == 0 || buf.last() != Some(&0) {
            let said = String::from_utf8_lossy(&buf);
            if said.contains("cannot allocate") {
                return Err(WitnessError::Limit(format!(
                    "the witness ran out of its {} MiB of memory: {}",
                    MAX_MEMORY >> 20,
                    said.trim_end()
                )));
            }
            return Err(WitnessError::Protocol(format!(
                "{ENDED_EARLY}{}",
                String::from_utf8_lossy(&buf)
            )));
        }
        buf.pop();
        Ok(buf)
    }

    /// Parses `text` as bash would, never running it. The caller must have passed the text
    /// through [`crate::gate`] (see [`crate::BashPool::parse`], which does).
    pub fn parse_unchecked(&mut self, text: &[u8], extglob: bool) -> Result<Parse, WitnessError> {
        self.parse_mode(text, extglob, true)
    }

    /// As [`BashServer::parse_unchecked`]; without `canonical` bash does not print the form and
    /// [`Parse::Ok`] carries an empty one (a cheaper "does it parse?").
    pub fn parse_mode(&mut self, text: &[u8], extglob: bool, canonical: bool) -> Result<Parse, WitnessError> {
        let mode = match (extglob, canonical) {
            (false, true) => 'P',
            (true, true) => 'X',
            (false, false) => 'V',
            (true, false) => 'W',
        };
        let (body, status) = self.request(mode, text)?;
        match status.as_str() {
            "OK" if !canonical => Ok(Parse::Ok {
                canonical: String::new(),
            }),
            "OK" => {
                let s = String::from_utf8_lossy(&body);
                let canonical = s
                    .strip_prefix("__iec_f () \n{ \n")
                    .and_then(|s| s.strip_suffix("\n}\n"))
                    .ok_or_else(|| WitnessError::Protocol(format!("unexpected declare -f: {s:?}")))?;
                Ok(Parse::Ok {
                    canonical: canonical.to_string(),
                })
            }
            "ERR:1" => Err(WitnessError::Protocol(
                "a command ran during parse (guard tripped); the gate let a break-out through".into(),
            )),
            "ERR:0" => Ok(Parse::Error {
                message: String::from_utf8_lossy(&body).trim_end().to_string(),
            }),
            other => Err(WitnessError::Protocol(format!("unexpected status {other:?}"))),
        }
    }

    /// Canonical forms of two texts in one request; `Ok(None)` when the pair does not parse as
    /// two function bodies (the caller asks for each on its own, which also tells which one).
    pub fn parse_pair(
        &mut self,
        a: &[u8],
        b: &[u8],
        extglob: bool,
    ) -> Result<Option<(Parse, Parse)>, WitnessError> {
        if a.contains(&0) || b.contains(&0) {
            return Ok(None);
        }
        let mut text = Vec::with_capacity(a.len() + b.len() + 1);
        text.extend_from_slice(a);
        text.push(0);
        text.extend_from_slice(b);
        let (body, status) = self.request(if extglob { 'R' } else { 'Q' }, &text)?;
        match status.as_str() {
            "OK" => {
                // `declare -f __iec_f __iec_g`: neither text names these functions (the pool
                // checks), so the second header occurs once. A function missing (its header
                // swallowed by the other text) or misshapen: the pair did not split where it was
                // joined.
                let s = String::from_utf8_lossy(&body);
                let pair = s
                    .strip_prefix("__iec_f () \n{ \n")
                    .and_then(|s| s.split_once("\n}\n__iec_g () \n{ \n"))
                    .and_then(|(a, b)| Some((a, b.strip_suffix("\n}\n")?)))
                    .map(|(a, b)| {
                        (
                            Parse::Ok {
                                canonical: a.to_string(),
                            },
                            Parse::Ok {
                                canonical: b.to_string(),
                            },
                        )
                    });
                Ok(pair)
            }
            "ERR:1" => Err(WitnessError::Protocol(
                "a command ran during parse (guard tripped); the gate let a break-out through".into(),
            )),
            _ => Ok(None),
        }
    }

    /// Expands `words` (harness-rendered shell words) the way the outer shell would before
    /// handing them to a command such as `eval`, with every command skipped.
    pub fn expand_words(&mut self, words: &[u8]) -> Result<Expansion, WitnessError> {
        self.expand_words_as(words, false)
    }

    /// As [`BashServer::expand_words`]; with `posix_words` brace expansion is off, as in dash
    /// (bash stands in for dash's word expansion: quotes, parameters, field splitting agree).
    /// The command the words must make is asked of this server first (the pool asks a parse
    /// server and passes it to [`BashServer::expand_words_expecting`]).
    pub fn expand_words_as(&mut self, words: &[u8], posix_words: bool) -> Result<Expansion, WitnessError> {
        let mut line = b"__iec_rec ".to_vec();
        line.extend_from_slice(words);
        let command = match self.parse_mode(&line, false, true) {
            Ok(Parse::Ok { canonical }) => Some(canonical),
            _ => None,
        };
        self.expand_words_expecting(words, posix_words, command.as_deref())
    }

    /// As [`BashServer::expand_words_as`], where `command` is bash's own printing of
    /// `__iec_rec WORDS` as the body of a function (what [`Parse::Ok`] holds for it): the
    /// server then runs only a command printed exactly so, and a request in which anything else
    /// would run is reported as `broke_out`. Without it the server runs the first `__iec_rec`
    /// command and reports anything else.
    pub fn expand_words_expecting(
        &mut self,
        words: &[u8],
        posix_words: bool,
        command: Option<&str>,
    ) -> Result<Expansion, WitnessError> {
        if self.kind == Kind::Parse {
            return Err(WitnessError::Protocol(
                "a parse-only witness cannot expand words".into(),
            ));
        }
        {
            use std::os::unix::fs::FileExt;
            // bash prints its internal quoting bytes (SOH, DEL) differently in `declare -f` and
            // `$BASH_COMMAND`: words with them are held to the first-recorder rule.
            let expect = match command.filter(|c| !c.contains(['\x01', '\x7f'])) {
                Some(c) => format!("={}", c.strip_prefix("    ").unwrap_or(c)),
                None => "*".to_string(),
            };
            self.exp_file.write_all_at(expect.as_bytes(), 0)?;
            self.exp_file.set_len(expect.len() as u64)?;
        }
        let (noise, status) = self.request(if posix_words { 'D' } else { 'E' }, words)?;
        // `rc:skipped:words`, then one field per word, then the defined functions.
        let bad = || WitnessError::Protocol(format!("bad expansion status {status:?}"));
        let mut parts = status.splitn(3, ':');
        let (rc, skipped, count) = (parts.next(), parts.next().ok_or_else(bad)?, parts.next());
        let status: i32 = rc.and_then(|r| r.parse().ok()).ok_or_else(bad)?;
        let count: usize = count.and_then(|c| c.parse().ok()).ok_or_else(bad)?;
        let mut args = Vec::with_capacity(count.min(1 << 12));
        let mut total = 0u64;
        for _ in 0..count {
            let word = self.read_field()?;
            total += word.len() as u64 + 1;
            if total > Self::MAX_REPLY {
                self.poisoned = true;
                return Err(WitnessError::Limit(format!(
                    "witness reply over {} MiB: the words expand to more than a check reads",
                    Self::MAX_REPLY >> 20
                )));
            }
            args.push(String::from_utf8_lossy(&word).into_owned());
        }
        let funcs = self.read_field()?;
        // Only the server's own functions, and the recorder among them: a request that put a
        // function in place of `declare` gets an empty list.
        let listed = String::from_utf8_lossy(&funcs);
        let extra_functions = listed.lines().any(|l| {
            !matches!(
                l,
                "declare -fr __iec_rec" | "declare -fr __iec_guard" | "declare -f __iec_f"
            )
        }) || !listed.lines().any(|l| l == "declare -fr __iec_rec")
            || !listed.lines().any(|l| l == "declare -fr __iec_guard");
        Ok(Expansion {
            args,
            status,
            diagnostics: String::from_utf8_lossy(&noise).trim_end().to_string(),
            broke_out: skipped == "1" || extra_functions,
        })
    }

    /// The functions defined in the server (only its own, unless something went wrong).
    pub fn functions(&mut self) -> Result<Vec<String>, WitnessError> {
        let (body, _) = self.request('F', b"")?;
        Ok(String::from_utf8_lossy(&body)
            .lines()
            .filter_map(|l| {
                l.strip_prefix("declare -f ")
                    .or_else(|| l.strip_prefix("declare -fr "))
                    .map(str::to_string)
            })
            .collect())
    }

    /// The private directory the server runs in (empty but for the request file).
    pub fn dir(&self) -> &std::path::Path {
        self.dir.path()
    }

    /// Process id of the bash (or unshare) process.
    pub fn pid(&self) -> u32 {
        crate::jail::witness_pid(self.child.id())
    }
}

/// How long one request may take: `$IEC_WITNESS_TIMEOUT_SECS` (decimal seconds), else 20 s.
/// A warm request takes micro- to milliseconds; what runs longer is bash expanding something
/// huge (a brace range of millions of words), which no check needs.
pub fn request_timeout() -> std::time::Duration {
    static T: OnceLock<std::time::Duration> = OnceLock::new();
    *T.get_or_init(|| iec_core::config::current().witness_timeout)
}

/// The server's stdout pipe, with a deadline for the reply being read.
struct TimedPipe {
    pipe: PipeReader,
    deadline: Option<std::time::Instant>,
}

impl std::io::Read for TimedPipe {
    fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        if let Some(deadline) = self.deadline {
            loop {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                if left.is_zero() {
                    return Err(std::io::ErrorKind::TimedOut.into());
                }
                let mut fds = [PollFd::new(&self.pipe, PollFlags::IN)];
                let ms = left.as_millis().clamp(1, i32::MAX as u128) as i64;
                let timeout = Timespec {
                    tv_sec: ms / 1000,
                    tv_nsec: ms % 1000 * 1_000_000,
                };
                match poll(&mut fds, Some(&timeout)) {
                    Ok(n) if n > 0 => break,
                    Ok(_) | Err(rustix::io::Errno::INTR) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        self.pipe.read(out)
    }
}

impl Drop for BashServer {
    fn drop(&mut self) {
        crate::jail::kill_group(self.child.id());
        let _ = self.child.kill();
        let _ = self.child.wait();
        live_dirs().lock().unwrap().retain(|d| d != self.dir.path());
    }
}
