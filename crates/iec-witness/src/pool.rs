//! A pool of warm bash witness servers, shared by threads. A server that fails is dropped and
//! replaced, so one bad text never poisons later checks.

use crate::gate::may_break_out;
use crate::server::{BashServer, Expansion, Parse, ENDED_EARLY};
use crate::spawn;
use crate::WitnessError;
use rustix::thread::CpuSet;
use std::collections::HashMap;
use std::sync::{Condvar, Mutex, OnceLock};

/// Warm bash witnesses, at most [`BashPool::limit`] at once (idle or busy): a caller beyond it
/// takes an idle server of another kind (ended and replaced) or waits for one to come back, so
/// that no number of threads asking at once starts more bash processes than that.
pub struct BashPool {
    idle: Mutex<Servers>,
    /// Signalled whenever a server comes back or ends.
    returned: Condvar,
    /// The bound given, or (when `None`) [`default_limit`], read when the first server starts:
    /// a hook that needs no witness does not pay for reading the CPU quota.
    limit: OnceLock<usize>,
    /// A cold pool starts a new bash for every question (the naive baseline of benchmarks).
    cold: bool,
    /// Verdicts of the separate `bash -n` / `dash -n` processes, by (shell, text). A syntax
    /// check is a pure function of the text, and a process start costs about a millisecond:
    /// `check --launch all` and repair ask the same text of many launches.
    syntax: Mutex<HashMap<SyntaxKey, Result<(), String>>>,
    /// Canonical forms found by [`BashPool::parse_many`] and [`BashPool::parse`], answered from
    /// here by [`BashPool::parse`] and [`BashPool::validate`] (extglob off).
    parsed: Mutex<HashMap<Vec<u8>, String>>,
}

/// Which separate parser a memoised syntax verdict came from: bash (with or without
/// `extglob`) or dash.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Shell {
    Bash { extglob: bool },
    Dash,
}

type SyntaxKey = (Shell, Vec<u8>);

/// The servers of a pool: the idle ones, and how many are alive (idle or serving).
#[derive(Default)]
struct Servers {
    idle: Vec<BashServer>,
    live: usize,
}

/// The default bound on a pool's servers: four per CPU, at least 8, at most 64
/// (`IEC_WITNESS_MAX_SERVERS` sets it, at least 1).
pub fn default_limit() -> usize {
    if let Some(n) = iec_core::config::current().witness_max_servers {
        return n;
    }
    let cpus = std::thread::available_parallelism().map_or(2, |n| n.get());
    (4 * cpus).clamp(8, 64)
}

/// Bounds of the syntax memo: texts longer than this are not kept, and the memo is emptied
/// when it holds this many entries (at most 64 MiB).
const SYNTAX_MEMO_TEXT: usize = 16 * 1024;
const SYNTAX_MEMO_ENTRIES: usize = 4096;

/// Bounds of the memo of [`BashPool::parse_many`]: at most this many forms (emptied when full,
/// at most 64 MiB of texts and forms), texts of at most [`SYNTAX_MEMO_TEXT`] bytes, and a batch
/// of at most this many texts or bytes.
const PARSE_MEMO_ENTRIES: usize = 32 * 1024;
const BATCH_TEXTS: usize = 64;
const BATCH_BYTES: usize = 64 * 1024;

/// Keeps the calling thread on the CPU it runs on until dropped, then restores its CPU mask.
/// `IEC_WITNESS_PIN=0` switches pinning off. Nested pins on one thread reuse the outer one.
pub struct CpuPin {
    cpu: usize,
    /// The mask to restore; `None` when an outer pin of this thread restores it.
    saved: Option<CpuSet>,
}

thread_local! {
    /// The CPU this thread is pinned to by a live [`CpuPin`], if any.
    static PINNED: std::cell::Cell<Option<usize>> = const { std::cell::Cell::new(None) };
}

impl CpuPin {
    /// Pinning is on (`IEC_WITNESS_PIN`), read once.
    fn enabled() -> bool {
        static ENABLED: OnceLock<bool> = OnceLock::new();
        *ENABLED.get_or_init(iec_core::config::witness_pin)
    }

    /// The outer pin of this thread, if it holds one.
    fn nested() -> Option<CpuPin> {
        PINNED.with(|p| p.get()).map(|cpu| CpuPin { cpu, saved: None })
    }

    /// Keeps this thread on CPU `cpu` (and marks it pinned), restoring `saved` on drop.
    fn pin(cpu: usize, saved: CpuSet) -> Option<CpuPin> {
        let mut one = CpuSet::new();
        one.set(cpu);
        rustix::thread::sched_setaffinity(None, &one).ok()?;
        PINNED.with(|p| p.set(Some(cpu)));
        Some(CpuPin {
            cpu,
            saved: Some(saved),
        })
    }

    /// Keeps this thread on the `k`-th CPU (modulo their number) of those it may run on.
    fn nth(k: usize) -> Option<CpuPin> {
        if let Some(p) = CpuPin::nested() {
            return Some(p);
        }
        if !CpuPin::enabled() {
            return None;
        }
        let saved = rustix::thread::sched_getaffinity(None).ok()?;
        let n = saved.count() as usize;
        let cpu = (0..CpuSet::MAX_CPU)
            .filter(|&c| saved.is_set(c))
            .nth(k % n.max(1))?;
        CpuPin::pin(cpu, saved)
    }

    fn here() -> Option<CpuPin> {
        if let Some(p) = CpuPin::nested() {
            return Some(p);
        }
        if !CpuPin::enabled() {
            return None;
        }
        // glibc's, not rustix's: glibc reads the CPU from the thread's rseq area, where rustix
        // parses the vDSO's ELF image on its first call (a cost every hook process paid, and
        // one that valgrind cannot run).
        // SAFETY: no arguments; returns the CPU or -1.
        let cpu = unsafe { libc::sched_getcpu() };
        let cpu = usize::try_from(cpu).ok().filter(|&c| c < CpuSet::MAX_CPU)?;
        let saved = rustix::thread::sched_getaffinity(None).ok()?;
        CpuPin::pin(cpu, saved)
    }
}

impl Drop for CpuPin {
    fn drop(&mut self) {
        if let Some(saved) = &self.saved {
            PINNED.with(|p| p.set(None));
            // Restores the mask read in `here` on the same thread.
            let _ = rustix::thread::sched_setaffinity(None, saved);
        }
    }
}

/// The process-wide pool.
pub fn global() -> &'static BashPool {
    static POOL: OnceLock<BashPool> = OnceLock::new();
    POOL.get_or_init(BashPool::new)
}

impl Default for BashPool {
    fn default() -> Self {
        BashPool::new()
    }
}

impl BashPool {
    /// An empty pool; servers start on first use.
    pub fn new() -> BashPool {
        BashPool {
            idle: Mutex::new(Servers::default()),
            returned: Condvar::new(),
            limit: OnceLock::new(),
            cold: false,
            syntax: Mutex::new(HashMap::new()),
            parsed: Mutex::new(HashMap::new()),
        }
    }

    /// An empty pool of at most `limit` servers at once (at least 1).
    pub fn with_limit(limit: usize) -> BashPool {
        BashPool {
            idle: Mutex::new(Servers::default()),
            returned: Condvar::new(),
            limit: OnceLock::from(limit.max(1)),
            cold: false,
            syntax: Mutex::new(HashMap::new()),
            parsed: Mutex::new(HashMap::new()),
        }
    }

    /// A pool that keeps nothing warm: every question starts (and ends) its own bash.
    pub fn cold() -> BashPool {
        BashPool {
            cold: true,
            ..BashPool::new()
        }
    }

    /// The most servers this pool runs at once.
    pub fn limit(&self) -> usize {
        *self.limit.get_or_init(default_limit)
    }

    /// `bash -n -c TEXT` in its own process (see [`spawn::bash_n`]), memoised unless the pool
    /// is cold.
    pub fn bash_n(&self, text: &[u8], extglob: bool) -> Result<Result<(), String>, WitnessError> {
        self.syntax_memo(Shell::Bash { extglob }, text, || spawn::bash_n(text, extglob))
    }

    /// `dash -n -c TEXT` in its own process (see [`spawn::dash_n`]), memoised unless the pool
    /// is cold.
    pub fn dash_n(&self, text: &[u8]) -> Result<Result<(), String>, WitnessError> {
        self.syntax_memo(Shell::Dash, text, || spawn::dash_n(text))
    }

    fn syntax_memo(
        &self,
        shell: Shell,
        text: &[u8],
        ask: impl FnOnce() -> Result<Result<(), String>, WitnessError>,
    ) -> Result<Result<(), String>, WitnessError> {
        if self.cold || text.len() > SYNTAX_MEMO_TEXT {
            return ask();
        }
        let key = (shell, text.to_vec());
        if let Some(v) = self.syntax.lock().unwrap().get(&key) {
            return Ok(v.clone());
        }
        let v = ask()?;
        let mut memo = self.syntax.lock().unwrap();
        if memo.len() >= SYNTAX_MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(key, v.clone());
        Ok(v)
    }

    /// Keeps the calling thread on its current CPU until the guard drops, so that the several
    /// questions of one check pay for pinning once (each question pins on its own otherwise).
    pub fn hold_cpu(&self) -> Option<CpuPin> {
        if self.cold {
            None
        } else {
            CpuPin::here()
        }
    }

    /// Keeps the calling thread on the `k`-th of the CPUs it may run on (counted modulo their
    /// number) until the guard drops: for worker `k` of a thread pool that runs many checks in
    /// turn, so that they pay for pinning once (each check pins on its own otherwise, two
    /// `sched_setaffinity` calls) and the workers spread over the CPUs. Within it, pins of
    /// this thread ([`BashPool::hold_cpu`], each question) reuse it.
    pub fn hold_cpu_for_worker(&self, k: usize) -> Option<CpuPin> {
        if self.cold {
            None
        } else {
            CpuPin::nth(k)
        }
    }

    fn with_server<T>(
        &self,
        parse_only: bool,
        f: impl FnOnce(&mut BashServer) -> Result<T, WitnessError>,
    ) -> Result<T, WitnessError> {
        // A request is a ping-pong over pipes. Waking a process on another CPU costs far more
        // than the request itself on a virtual machine (46 µs against 8 µs measured on the
        // project's CI machine kind), so the caller's thread stays on its current CPU for the
        // request and talks to a server pinned to the same CPU.
        let pin = if self.cold { None } else { CpuPin::here() };
        let cpu = pin.as_ref().map(|p| p.cpu);
        let server = self.take(cpu, parse_only);
        let started = match server {
            Some(s) => Ok(s),
            None if parse_only => BashServer::start_parse_only(cpu),
            None => BashServer::start_on(cpu),
        };
        let mut server = match started {
            Ok(s) => s,
            Err(e) => {
                self.ended();
                return Err(e);
            }
        };
        let out = f(&mut server);
        drop(pin);
        if out.is_ok() && !self.cold && !server.worn_out() {
            self.idle.lock().unwrap().idle.push(server);
            self.returned.notify_one();
        } else {
            drop(server);
            self.ended();
        }
        out
    }

    /// An idle server for `cpu` and the kind asked, or `None` with a place reserved for a new
    /// one: beyond the limit an idle server of another kind is ended to make room, or the
    /// caller waits for a server to come back.
    fn take(&self, cpu: Option<usize>, parse_only: bool) -> Option<BashServer> {
        let mut servers = self.idle.lock().unwrap();
        loop {
            if let Some(i) = servers
                .idle
                .iter()
                .rposition(|s| s.cpu() == cpu && s.for_parsing() == parse_only)
            {
                return Some(servers.idle.swap_remove(i));
            }
            if servers.live < self.limit() {
                servers.live += 1;
                return None;
            }
            if !servers.idle.is_empty() {
                // Its place goes to the new server (`live` unchanged); it ends when dropped.
                let other = servers.idle.remove(0);
                drop(servers);
                drop(other);
                return None;
            }
            servers = self.returned.wait(servers).unwrap();
        }
    }

    /// A server of this pool has ended (or never started): its place is free.
    fn ended(&self) {
        self.idle.lock().unwrap().live -= 1;
        self.returned.notify_one();
    }

    /// Parses `text` with real bash without running it. Texts that could close the wrapping
    /// function early are first checked on their own by a separate `bash -n`; texts that do not
    /// parse get bash's own `-c` diagnostic from `bash -n`.
    pub fn parse(&self, text: &[u8], extglob: bool) -> Result<Parse, WitnessError> {
        self.parse_mode(text, extglob, true)
    }

    /// Whether bash accepts `text`, without asking for its canonical form (cheaper). An accepted
    /// text is `Parse::Ok` with an empty canonical form, or `Parse::EndOnly`.
    pub fn validate(&self, text: &[u8], extglob: bool) -> Result<Parse, WitnessError> {
        self.parse_mode(text, extglob, false)
    }

    fn parse_mode(&self, text: &[u8], extglob: bool, canonical: bool) -> Result<Parse, WitnessError> {
        if let Some(i) = text.iter().position(|&b| b == 0) {
            return Err(WitnessError::Nul(i));
        }
        if !extglob {
            if let Some(c) = self.parsed.lock().unwrap().get(text) {
                return Ok(Parse::Ok { canonical: c.clone() });
            }
        }
        if may_break_out(text) {
            if let Err(message) = self.bash_n(text, extglob)? {
                return Ok(Parse::Error { message });
            }
        }
        let wrapped = match self.with_server(true, |s| s.parse_mode(text, extglob, canonical)) {
            Ok(p) => p,
            // bash ends a non-interactive shell on some syntax errors inside `$(` (a fatal
            // parser error); the server is gone and a separate `bash -n` gives the verdict.
            Err(WitnessError::Protocol(m)) if m.starts_with("witness ended early") => {
                return Ok(match self.bash_n(text, extglob)? {
                    Err(message) => Parse::Error { message },
                    Ok(()) => Parse::EndOnly { message: m },
                });
            }
            Err(e) => return Err(e),
        };
        match wrapped {
            Parse::Ok { canonical: c } if canonical && !extglob => {
                self.remember(text, &c);
                Ok(Parse::Ok { canonical: c })
            }
            ok @ (Parse::Ok { .. } | Parse::EndOnly { .. }) => Ok(ok),
            Parse::Error { message: wrapped } => match self.bash_n(text, extglob)? {
                Err(message) => Ok(Parse::Error { message }),
                // Parses alone but not as a function body: an unterminated here-document or a
                // trailing backslash. bash -c accepts it; there is no canonical form to print.
                Ok(()) => Ok(Parse::EndOnly { message: wrapped }),
            },
        }
    }

    /// Parses many texts (extglob off) in few questions, the batches spread over the calling
    /// threads' CPUs, and keeps each canonical form found for [`BashPool::parse`] and
    /// [`BashPool::validate`] to answer: what a scan of many distinct calls asks before checking
    /// them. Only texts a batch can hold are sent (no NUL, none the gate sends to `bash -n`, none
    /// naming the server's functions, no here-document or trailing backslash that could reach
    /// into the next text, at most [`SYNTAX_MEMO_TEXT`] bytes); a batch that does not parse as
    /// one function per text is halved until the text that spoils it is alone, which is then
    /// left to [`BashPool::parse`]. Returns how many forms were found.
    pub fn parse_many(&self, texts: &[&[u8]]) -> usize {
        if self.cold {
            return 0;
        }
        let fits = |t: &[u8]| {
            !t.is_empty()
                && t.len() <= SYNTAX_MEMO_TEXT
                && !t.contains(&0)
                && !t.ends_with(b"\\")
                && !t.windows(2).any(|w| w == b"<<")
                && !t.windows(6).any(|w| w == b"__iec_")
                && t.iter().any(|b| !b.is_ascii_whitespace())
                && !may_break_out(t)
        };
        let todo: Vec<&[u8]> = {
            let memo = self.parsed.lock().unwrap();
            texts
                .iter()
                .copied()
                .filter(|t| fits(t) && !memo.contains_key(*t))
                .collect()
        };
        let mut batches: Vec<&[&[u8]]> = Vec::new();
        let mut start = 0;
        let mut bytes = 0;
        for (i, t) in todo.iter().enumerate() {
            if i > start && (i - start >= BATCH_TEXTS || bytes + t.len() > BATCH_BYTES) {
                batches.push(&todo[start..i]);
                start = i;
                bytes = 0;
            }
            bytes += t.len();
        }
        if start < todo.len() {
            batches.push(&todo[start..]);
        }
        let found = std::sync::atomic::AtomicUsize::new(0);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let workers = std::thread::available_parallelism()
            .map_or(2, |n| n.get())
            .min(batches.len());
        std::thread::scope(|sc| {
            for _ in 0..workers {
                sc.spawn(|| loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let Some(b) = batches.get(i) else { break };
                    found.fetch_add(self.parse_batch(b), std::sync::atomic::Ordering::Relaxed);
                });
            }
        });
        found.into_inner()
    }

    /// Keeps the canonical form of `text` (extglob off) for [`BashPool::parse`] and
    /// [`BashPool::validate`] to answer the next time it is asked: a parse is a pure function
    /// of the text, and a scan asks the same text for many calls (a command substitution's
    /// body, `date +%F`, in many commands).
    fn remember(&self, text: &[u8], canonical: &str) {
        if self.cold || text.len() > SYNTAX_MEMO_TEXT {
            return;
        }
        let mut memo = self.parsed.lock().unwrap();
        if memo.len() >= PARSE_MEMO_ENTRIES {
            memo.clear();
        }
        memo.insert(text.to_vec(), canonical.to_string());
    }

    /// One batch of [`BashPool::parse_many`], halved while it fails.
    fn parse_batch(&self, texts: &[&[u8]]) -> usize {
        match self.with_server(true, |s| s.parse_many(texts)) {
            Ok(Some(forms)) => {
                let mut memo = self.parsed.lock().unwrap();
                if memo.len() + forms.len() > PARSE_MEMO_ENTRIES {
                    memo.clear();
                }
                let n = forms.len();
                for (t, f) in texts.iter().zip(forms) {
                    memo.insert(t.to_vec(), f);
                }
                n
            }
            Ok(None) if texts.len() > 1 => {
                let (a, b) = texts.split_at(texts.len() / 2);
                self.parse_batch(a) + self.parse_batch(b)
            }
            _ => 0,
        }
    }

    /// Canonical forms of two texts in one question (a check compares the intended text with
    /// what a hop received). Falls back to two [`BashPool::parse`] calls whenever either text
    /// needs the gate's separate `bash -n`, does not parse as a function body, or names the
    /// server's functions.
    pub fn parse_pair(&self, a: &[u8], b: &[u8], extglob: bool) -> Result<(Parse, Parse), WitnessError> {
        // Neither text may name the server's own functions: joined, one text could then define
        // the other's function.
        let simple = |t: &[u8]| !t.contains(&0) && !may_break_out(t) && !t.windows(6).any(|w| w == b"__iec_");
        if simple(a) && simple(b) {
            if let Ok(Some(pair)) = self.with_server(true, |s| s.parse_pair(a, b, extglob)) {
                return Ok(pair);
            }
        }
        Ok((self.parse(a, extglob)?, self.parse(b, extglob)?))
    }

    /// Expands harness-rendered `words` as the outer shell would (see
    /// [`BashServer::expand_words`]).
    pub fn expand_words(&self, words: &[u8]) -> Result<Expansion, WitnessError> {
        self.expand_words_as(words, false)
    }

    /// As [`BashPool::expand_words`], with dash's word rules where bash can follow them (see
    /// [`BashServer::expand_words_as`]).
    pub fn expand_words_as(&self, words: &[u8], posix_words: bool) -> Result<Expansion, WitnessError> {
        // Words that do not parse are answered by a parse server, never sent to an expansion
        // server: bash 5.2 keeps the state of an unterminated `[[` after the syntax error, so
        // the guard's own `[[ … ]]` in the DEBUG trap no longer parses, every later command of
        // the server is skipped (the guard fails closed) and it loops printing the error.
        let mut line = b"__iec_rec ".to_vec();
        line.extend_from_slice(words);
        let command = match self.parse(&line, false)? {
            Parse::Error { message } => {
                return Ok(Expansion {
                    args: vec![],
                    status: 2,
                    diagnostics: message,
                    broke_out: false,
                })
            }
            Parse::Ok { canonical } => Some(canonical),
            Parse::EndOnly { .. } => None,
        };
        self.with_server(false, |s| {
            let e = s.expand_words_expecting(words, posix_words, command.as_deref())?;
            if e.broke_out {
                // Never reuse a server whose state the words may have touched.
                return Err(WitnessError::Protocol(format!("broke-out:{}", e.diagnostics)));
            }
            Ok(e)
        })
        .or_else(|e| match e {
            WitnessError::Protocol(m) if m.starts_with("broke-out:") => Ok(Expansion {
                args: vec![],
                status: -1,
                diagnostics: m["broke-out:".len()..].to_string(),
                broke_out: true,
            }),
            // A fatal expansion error (`${9?}`, `${x:?msg}`) ends a non-interactive shell, the
            // server as the real receiving shell: that is the expansion's outcome, with bash's
            // message and `bash -c`'s status for it (127, measured), not a witness failure.
            WitnessError::Protocol(m) if m.starts_with(ENDED_EARLY) => Ok(Expansion {
                args: vec![],
                status: 127,
                diagnostics: m[ENDED_EARLY.len()..].trim_end().to_string(),
                broke_out: false,
            }),
            e => Err(e),
        })
    }
}
