//! The scan: files → calls → one check per distinct (launch, command) → records and summary.
//!
//! Calls are read in chunks; each chunk's distinct (launch, command) pairs not decided before
//! are checked in parallel (rayon, every core), the verdicts cached for the rest of the scan,
//! and each call of the chunk becomes a [`CallRecord`] handed to the caller and added to the
//! [`Summary`]. Memory holds the cache (one small entry per distinct pair), one chunk and the
//! summary's session sets, whatever the number of calls.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use iec_core::{Call, Exposure, FirstDivergence, Verdict};
use iec_launches::Catalog;
use rayon::prelude::*;
use serde_json::{json, Value};

use crate::attribution::{attribute, Attribution};
use crate::call::LoggedCall;
use crate::input::{Skip, Skips, Stop};
use crate::readers::{read_file, Bounds, Shared};
use crate::report::Summary;
use crate::resolve::{resolve, Resolution};

/// How to scan.
#[derive(Debug, Clone)]
pub struct Options {
    /// Check every call on this launch (`--launch ID`) instead of resolving it.
    pub launch: Option<String>,
    /// Stop at the first bad input.
    pub strict: bool,
    /// Line and document bounds.
    pub bounds: Bounds,
    /// How `iec check` observes (plain texts take its no-witness shortcut by default).
    pub check: iec_check::Options,
    /// Calls read before their checks run.
    pub chunk: usize,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            launch: None,
            strict: false,
            bounds: Bounds::default(),
            check: iec_check::Options::default(),
            chunk: 8192,
        }
    }
}

/// The check of one distinct (launch, command), kept for every call that repeats it.
#[derive(Debug)]
pub struct Decided {
    /// The verdict (`None`: the check itself failed, see `reason`).
    pub verdict: Option<Verdict>,
    /// Exposed.
    pub exposed: bool,
    /// Exposure classes.
    pub exposure: Vec<Exposure>,
    /// The first divergence, as `iec check` reports it (long strings elided).
    pub first_divergence: Option<FirstDivergence>,
    /// Why `unknown` (or why the check failed).
    pub reason: Option<String>,
    /// The check's attribution of `unknown` (`generation`, `text-limit`, …).
    pub attribution: Option<String>,
    /// Judged by the plain-text shortcut.
    pub shortcut: bool,
    /// The calls that repeat it.
    pub count: AtomicU64,
    /// The launch and command (for examples).
    pub launch: String,
    /// The command text.
    pub command: String,
}

/// One call with its verdict: a line of `--format jsonl`.
#[derive(Debug)]
pub struct CallRecord<'a> {
    /// The call as logged.
    pub call: &'a LoggedCall,
    /// Its launch, or why none covers it.
    pub resolution: &'a Resolution,
    /// The check (`None` when uncovered).
    pub decided: Option<&'a Decided>,
    /// For a failed call, who it is charged to.
    pub attribution: Option<Attribution>,
    /// Where the log disagrees with the prediction.
    pub disagreement: Option<String>,
}

impl CallRecord<'_> {
    /// The launch id, when covered.
    pub fn launch(&self) -> Option<&str> {
        match self.resolution {
            Resolution::Launch(id) => Some(id),
            Resolution::Uncovered(_) => None,
        }
    }

    /// The verdict, when checked.
    pub fn verdict(&self) -> Option<Verdict> {
        self.decided.and_then(|d| d.verdict)
    }

    /// The JSON Lines record.
    pub fn to_json(&self) -> Value {
        let c = self.call;
        let d = self.decided;
        let exposure: Vec<Exposure> = match d {
            Some(d) => d.exposure.clone(),
            None => iec_core::exposure(&c.command),
        };
        json!({
            "file": c.file,
            "line": c.line,
            "session": c.session,
            "harness": c.harness,
            "version": c.version,
            "os": c.os,
            "cwd": c.cwd,
            "timestamp": c.timestamp,
            "sidechain": c.sidechain,
            "tool": c.tool,
            "launch": self.launch(),
            "uncovered": match self.resolution { Resolution::Uncovered(r) => Some(r), _ => None },
            "command": c.command,
            "exposed": !exposure.is_empty(),
            "exposure": exposure,
            "verdict": self.verdict().map(Verdict::as_str),
            "first_divergence": d.and_then(|d| d.first_divergence.as_ref()),
            "reason": d.and_then(|d| d.reason.as_deref()),
            "unknown_attribution": d.and_then(|d| d.attribution.as_deref()),
            "shortcut": d.map(|d| d.shortcut),
            "outcome": c.outcome,
            "attribution": self.attribution.map(Attribution::as_str),
            "disagreement": self.disagreement,
        })
    }
}

/// The result of a scan.
pub struct ScanResult {
    /// The summary.
    pub summary: Summary,
    /// Files read, by format (and `skipped`).
    pub files: BTreeMap<&'static str, u64>,
    /// The most repeated changed (launch, command) pairs, most first (at most 20).
    pub examples: Vec<Arc<Decided>>,
    /// Distinct (launch, command) pairs checked.
    pub distinct: usize,
}

/// The files to read under `paths`: a file as given; a folder's `.jsonl` and `.json` files,
/// recursively, sorted (other files in log folders, such as Claude Code's saved tool outputs,
/// are not logs). An unreadable folder is counted as skipped.
pub fn files_under(paths: &[PathBuf], skips: &mut Skips) -> Result<Vec<PathBuf>, Stop> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>, skips: &mut Skips) -> Result<(), Stop> {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) => return skips.skip(&dir.display().to_string(), 0, Skip::UnreadableFile, e.to_string()),
        };
        let mut entries: Vec<PathBuf> = rd.flatten().map(|e| e.path()).collect();
        entries.sort();
        for p in entries {
            let Ok(meta) = std::fs::metadata(&p) else {
                skips.skip(&p.display().to_string(), 0, Skip::UnreadableFile, "cannot stat")?;
                continue;
            };
            if meta.is_dir() {
                walk(&p, out, skips)?;
            } else if p
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| e == "jsonl" || e == "json")
            {
                out.push(p);
            }
        }
        Ok(())
    }
    let mut out = Vec::new();
    for p in paths {
        if p.is_dir() {
            walk(p, &mut out, skips)?;
        } else {
            out.push(p.clone());
        }
    }
    Ok(out)
}

/// The standard locations of the current user's session logs that exist: `~/.claude/projects`
/// (or `$CLAUDE_CONFIG_DIR/projects`), `$CODEX_HOME/sessions` (`~/.codex/sessions`),
/// `~/.gemini/tmp`, `~/.openhands/sessions`, `~/.cline/data`, and the VS Code global storage of
/// Cline and Roo Code.
pub fn standard_locations() -> Vec<PathBuf> {
    let config = iec_core::config::current();
    let home = config.home;
    let mut c: Vec<PathBuf> = Vec::new();
    match config.claude_config_dir {
        Some(d) => c.push(d.join("projects")),
        None => c.extend(home.as_ref().map(|h| h.join(".claude/projects"))),
    }
    match config.codex_home {
        Some(d) => c.push(d.join("sessions")),
        None => c.extend(home.as_ref().map(|h| h.join(".codex/sessions"))),
    }
    if let Some(h) = &home {
        for rel in [
            ".gemini/tmp",
            ".openhands/sessions",
            ".cline/data",
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/tasks",
            ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/tasks",
        ] {
            c.push(h.join(rel));
        }
    }
    c.into_iter().filter(|p| p.is_dir()).collect()
}

/// Scans `files` (see [`files_under`]): `on_record` gets every call with its verdict,
/// `on_file` is called after each file.
pub fn scan(
    catalog: &Catalog,
    files: &[PathBuf],
    opts: &Options,
    skips: Skips,
    on_record: &mut dyn FnMut(&CallRecord),
    on_file: &mut dyn FnMut(usize),
) -> Result<ScanResult, Stop> {
    if let Some(id) = &opts.launch {
        // A bad id is a usage error before anything is read.
        if catalog.get(id).is_err() {
            return Err(Stop {
                file: "--launch".into(),
                line: 0,
                reason: Skip::UnknownFormat,
                detail: format!("unknown launch {id:?}"),
            });
        }
    }
    let mut engine = Engine {
        catalog,
        opts,
        cache: HashMap::new(),
        resolved: HashMap::new(),
        summary: Summary::default(),
    };
    // The files are read on a thread of their own, a chunk ahead of the checks: reading and
    // parsing the logs' JSON is a third of the scan's own work, and it overlaps the checks
    // instead of waiting for them. Chunks end where they always did (after the file that
    // fills one, and at the end), and they are checked in order, so the records and the
    // summary are the same; a stop (`--strict`) comes after the chunks read before it.
    let (bounds, chunk_calls) = (opts.bounds, opts.chunk);
    let (skips, files_by_format) = std::thread::scope(|sc| {
        let (tx, rx) = std::sync::mpsc::sync_channel::<Read>(1);
        let reader = sc.spawn(move || read_all(files, bounds, chunk_calls, skips, &tx));
        for msg in rx {
            match msg {
                Read::Chunk(c) => engine.run(c, on_record),
                Read::File(k) => on_file(k),
            }
        }
        reader.join().expect("the reading thread does not panic")
    })?;
    engine.summary.skipped = skips.counts();
    engine.summary.skipped_first = skips
        .first()
        .into_iter()
        .map(|(k, v)| (k, v.to_string()))
        .collect();
    let distinct = engine.cache.len();
    let mut examples: Vec<Arc<Decided>> = engine
        .cache
        .into_values()
        .filter(|d| d.verdict == Some(Verdict::Diverges))
        .collect();
    examples.sort_by(|a, b| {
        b.count
            .load(Ordering::Relaxed)
            .cmp(&a.count.load(Ordering::Relaxed))
            .then_with(|| (&a.launch, &a.command).cmp(&(&b.launch, &b.command)))
    });
    examples.truncate(20);
    Ok(ScanResult {
        summary: engine.summary,
        files: files_by_format,
        examples,
        distinct,
    })
}

/// What the reading thread hands the checks: a chunk of calls, or "file k read".
enum Read {
    Chunk(Vec<LoggedCall>),
    File(usize),
}

/// Reads `files` into chunks of at least `chunk_calls` calls (a chunk ends after the file that
/// fills it; the last one after every file and the calls [`Shared::finish`] gives), sent with
/// the files' progress to `tx`. Returns the skips and the files read by format.
fn read_all(
    files: &[PathBuf],
    bounds: Bounds,
    chunk_calls: usize,
    mut skips: Skips,
    tx: &std::sync::mpsc::SyncSender<Read>,
) -> Result<(Skips, BTreeMap<&'static str, u64>), Stop> {
    let mut shared = Shared::default();
    let mut files_by_format: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut chunk: Vec<LoggedCall> = Vec::new();
    for (k, f) in files.iter().enumerate() {
        let shown = f.display().to_string();
        let mut emit = |c: LoggedCall| chunk.push(c);
        let format = read_file(f, &shown, bounds, &mut shared, &mut skips, &mut emit)?;
        *files_by_format
            .entry(format.map_or("skipped", |f| f.as_str()))
            .or_default() += 1;
        if chunk.len() >= chunk_calls {
            // The receiver lives as long as this thread: a send does not fail.
            let _ = tx.send(Read::Chunk(std::mem::take(&mut chunk)));
        }
        let _ = tx.send(Read::File(k + 1));
    }
    {
        let mut emit = |c: LoggedCall| chunk.push(c);
        shared.finish(&mut skips, &mut emit)?;
    }
    let _ = tx.send(Read::Chunk(chunk));
    Ok((skips, files_by_format))
}

struct Engine<'a> {
    catalog: &'a Catalog,
    opts: &'a Options,
    cache: HashMap<(String, String), Arc<Decided>>,
    /// Resolutions by (harness, version, OS, tool): one catalog look-up for each.
    resolved: HashMap<ResolveKey, Resolution>,
    summary: Summary,
}

type ResolveKey = (String, Option<String>, Option<String>, String);

impl Engine<'_> {
    /// The call checked for a logged call on `launch`, and its cache key.
    fn call_on(launch: &iec_launches::Launch, c: &LoggedCall) -> (Call, String) {
        let call = match launch.command_of(&c.input) {
            Some(v) => Call {
                tool: launch.tool.clone(),
                input: json!({ launch.command_field(): v }),
            },
            None => iec_check::call_for_text(launch, &c.command),
        };
        let key = call.input.to_string();
        (call, key)
    }

    fn run(&mut self, chunk: Vec<LoggedCall>, on_record: &mut dyn FnMut(&CallRecord)) {
        let (catalog, launch) = (self.catalog, self.opts.launch.as_deref());
        let resolutions: Vec<Resolution> = chunk
            .iter()
            .map(|c| {
                let key = (c.harness.clone(), c.version.clone(), c.os.clone(), c.tool.clone());
                self.resolved
                    .entry(key)
                    .or_insert_with(|| match resolve(catalog, c, launch) {
                        // A launch id the catalog lacks cannot be checked: uncovered, with the
                        // reason.
                        Resolution::Launch(id) if catalog.get(&id).is_err() => {
                            Resolution::Uncovered(format!("launch {id} is not in the catalog"))
                        }
                        r => r,
                    })
                    .clone()
            })
            .collect();
        let keys: Vec<Option<(String, String)>> = chunk
            .iter()
            .zip(&resolutions)
            .map(|(c, r)| match r {
                Resolution::Launch(id) => {
                    let l = self.catalog.get(id).expect("resolved");
                    Some((id.clone(), Self::call_on(l, c).1))
                }
                Resolution::Uncovered(_) => None,
            })
            .collect();
        // The distinct pairs not decided yet, each with one call that makes it.
        let mut todo: HashMap<(String, String), &LoggedCall> = HashMap::new();
        for (c, k) in chunk.iter().zip(&keys) {
            if let Some(k) = k {
                if !self.cache.contains_key(k) {
                    todo.entry(k.clone()).or_insert(c);
                }
            }
        }
        let todo: Vec<((String, String), &LoggedCall)> = todo.into_iter().collect();
        let catalog = self.catalog;
        let opts = self.opts.check;
        // bash's parse of every text the checks will ask about first (the command, and what a
        // wrapper is designed to deliver), asked in batches: one question for many texts.
        if !opts.full_witness {
            let texts = prefetch_texts(
                todo.iter()
                    .map(|(k, c)| (catalog.get(&k.0).expect("resolved"), *c)),
            );
            let refs: Vec<&[u8]> = texts.iter().map(|t| t.as_bytes()).collect();
            iec_witness::global().parse_many(&refs);
        }
        // Each worker stays on one CPU for a run of checks (its own: worker k on the k-th),
        // instead of pinning and unpinning for every check.
        let decided: Vec<((String, String), Decided)> = todo
            .into_par_iter()
            .map_init(
                || iec_witness::global().hold_cpu_for_worker(rayon::current_thread_index().unwrap_or(0)),
                |_pin, (k, c)| {
                    let launch = catalog.get(&k.0).expect("resolved");
                    let (call, _) = Self::call_on(launch, c);
                    (k, decide(launch, &call, &c.command, opts))
                },
            )
            .collect();
        for (k, d) in decided {
            self.cache.insert(k, Arc::new(d));
        }
        for ((c, r), k) in chunk.iter().zip(&resolutions).zip(&keys) {
            let d = k.as_ref().map(|k| self.cache[k].clone());
            if let Some(d) = &d {
                d.count.fetch_add(1, Ordering::Relaxed);
            }
            let (attribution, disagreement) = attribute(c, d.as_deref());
            let rec = CallRecord {
                call: c,
                resolution: r,
                decided: d.as_deref(),
                attribution,
                disagreement,
            };
            self.summary.add(&rec);
            on_record(&rec);
        }
    }
}

/// The texts whose bash parse the checks of `calls` ask first: each shell text that is not
/// plain (plain ones need no bash), and the text a launch's wrapper is designed to deliver
/// where it is not the command plus the wrapper's stdin suffix (POSIX launches only).
fn prefetch_texts<'a>(
    calls: impl Iterator<Item = (&'a iec_launches::Launch, &'a LoggedCall)>,
) -> Vec<String> {
    let mut out = Vec::new();
    for (launch, c) in calls {
        if launch.windows.is_some() || launch.terminal.is_some() {
            continue;
        }
        let Some(Value::String(text)) = launch.command_of(&c.input) else {
            continue;
        };
        if iec_check::plain::is_plain(text) {
            continue;
        }
        out.push(text.clone());
        if let Some(w) = &launch.wrapper {
            let p = iec_launches::render::payload(&w.payload, text, w.stdin_suffix.as_deref());
            if p.designed != *text {
                out.push(p.designed);
            }
        }
    }
    out
}

/// Checks one call (`command`: its text, for examples).
fn decide(launch: &iec_launches::Launch, call: &Call, command: &str, opts: iec_check::Options) -> Decided {
    let base = |verdict, reason| Decided {
        verdict,
        exposed: false,
        exposure: iec_core::exposure(command),
        first_divergence: None,
        reason,
        attribution: None,
        shortcut: false,
        count: AtomicU64::new(0),
        launch: launch.id.clone(),
        command: command.to_string(),
    };
    match iec_check::check(launch, call, iec_witness::global(), opts) {
        Ok(mut r) => {
            // Only the reason and the first divergence are kept: the hops' receipts, which are
            // most of compacting, go unread.
            r.hops.clear();
            iec_core::limits::compact_report(&mut r);
            Decided {
                verdict: Some(r.verdict),
                exposed: r.exposed,
                exposure: r.exposure,
                first_divergence: r.first_divergence,
                reason: r.reason,
                attribution: r.attribution,
                shortcut: r.shortcut.is_some(),
                count: AtomicU64::new(0),
                launch: launch.id.clone(),
                command: command.to_string(),
            }
        }
        Err(e) => {
            let mut d = base(None, Some(format!("the check failed: {e}")));
            d.exposed = !d.exposure.is_empty();
            d
        }
    }
}
