//! The session-log readers, one module per format, and the detection of a file's format by its
//! content (never by its name).
//!
//! Line formats (Claude Code, Codex, Gemini CLI `.jsonl`) are read line by line through the
//! bounded [`Lines`] reader: memory holds one line and the calls still waiting for their result.
//! Document formats (Gemini CLI `.json`, OpenHands, Cline/Roo, Harbor ATIF) are one JSON
//! document per file, read whole up to the document bound.

pub mod atif;
pub mod claude_code;
pub mod cline;
pub mod codex;
pub mod gemini;
pub mod openhands;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read};
use std::path::Path;

use serde_json::Value;

use crate::call::LoggedCall;
use crate::input::{check_text, parse_json, Lines, Skip, Skips, Stop};

/// A session-log format.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Format {
    /// Claude Code project transcripts (`~/.claude/projects/**/*.jsonl`).
    ClaudeCode,
    /// Codex rollouts (`~/.codex/sessions/**/rollout-*.jsonl`), current and legacy.
    Codex,
    /// Gemini CLI chats, `.jsonl` (a metadata line, messages, `$set`/`$rewindTo`).
    GeminiLines,
    /// Gemini CLI chats, the older one-document `.json`.
    GeminiDocument,
    /// OpenHands: V0 events and trajectories, V1 (agent-sdk) events.
    OpenHands,
    /// Cline / Roo task histories (`api_conversation_history.json`) and Cline SDK messages.
    Cline,
    /// Cline / Roo `ui_messages.json`: the same calls as the task history beside it, read from
    /// there (this file yields none).
    ClineUi,
    /// Harbor ATIF trajectories (`agent/trajectory.json`).
    Atif,
}

impl Format {
    /// The format's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::ClaudeCode => "claude-code",
            Format::Codex => "codex",
            Format::GeminiLines => "gemini-cli",
            Format::GeminiDocument => "gemini-cli-json",
            Format::OpenHands => "openhands",
            Format::Cline => "cline",
            Format::ClineUi => "cline-ui",
            Format::Atif => "atif",
        }
    }

    fn is_lines(self) -> bool {
        matches!(self, Format::ClaudeCode | Format::Codex | Format::GeminiLines)
    }
}

/// Bounds of reading.
#[derive(Debug, Clone, Copy)]
pub struct Bounds {
    /// The longest line read (longer ones are skipped and counted).
    pub max_line: usize,
    /// The largest JSON document read whole.
    pub max_document: u64,
}

impl Default for Bounds {
    fn default() -> Self {
        Bounds {
            max_line: 16 << 20,
            max_document: 256 << 20,
        }
    }
}

/// What a reader writes to: the calls it finds and the skips it counts.
pub struct Ctx<'a> {
    /// The file, as shown in reports.
    pub file: &'a str,
    /// The skip counter.
    pub skips: &'a mut Skips,
    /// Where calls go.
    pub emit: &'a mut dyn FnMut(LoggedCall),
}

impl Ctx<'_> {
    /// Counts a skip at `line`.
    pub fn skip(&mut self, line: u64, reason: Skip, detail: impl Into<String>) -> Result<(), Stop> {
        self.skips.skip(self.file, line, reason, detail)
    }
}

/// A reader of a line format: one record at a time, then the end of the file.
pub trait LineReader {
    /// One JSON record (line `line`).
    fn record(&mut self, ctx: &mut Ctx, line: u64, v: Value) -> Result<(), Stop>;
    /// The end of the file: calls still waiting for a result are emitted without one.
    fn finish(&mut self, ctx: &mut Ctx) -> Result<(), Stop>;
}

/// The format of one JSON value (a line or a whole document), if it is one of ours.
pub fn classify(v: &Value) -> Option<Format> {
    if let Some(a) = v.as_array() {
        let first = a.iter().find(|e| e.is_object())?;
        if first.get("role").is_some() && first.get("content").is_some() {
            return Some(Format::Cline);
        }
        if first.get("ts").is_some()
            && matches!(first.get("type").and_then(Value::as_str), Some("ask" | "say"))
        {
            return Some(Format::ClineUi);
        }
        if openhands::is_event(first) {
            return Some(Format::OpenHands);
        }
        return None;
    }
    let o = v.as_object()?;
    let s = |k: &str| o.get(k).and_then(Value::as_str);
    let has = |k: &str| o.contains_key(k);
    if s("schema_version").is_some_and(|x| x.starts_with("ATIF"))
        || (has("steps") && has("session_id") && has("agent"))
    {
        return Some(Format::Atif);
    }
    if has("sessionId") && has("projectHash") {
        return Some(if has("messages") {
            Format::GeminiDocument
        } else {
            Format::GeminiLines
        });
    }
    if has("$set") || has("$rewindTo") {
        return Some(Format::GeminiLines);
    }
    if let Some(t) = s("type") {
        if has("payload") && codex::ROLLOUT_TYPES.contains(&t) {
            return Some(Format::Codex);
        }
        if claude_code::RECORD_TYPES.contains(&t)
            && (has("sessionId") || has("uuid") || has("leafUuid") || has("messageId"))
        {
            return Some(Format::ClaudeCode);
        }
        if gemini::MESSAGE_TYPES.contains(&t)
            && has("id")
            && has("timestamp")
            && (has("content") || has("toolCalls"))
        {
            return Some(Format::GeminiLines);
        }
    }
    if has("record_type") || (has("id") && has("instructions") && has("timestamp")) {
        return Some(Format::Codex);
    }
    if openhands::is_event(v) || o.get("history").is_some_and(Value::is_array) {
        return Some(Format::OpenHands);
    }
    if o.get("messages").is_some_and(Value::is_array) && (has("sessionId") || has("version")) {
        return Some(Format::Cline);
    }
    None
}

/// How many lines detection reads before giving up on a line format.
const DETECT_LINES: usize = 32;

/// Shared state of readers across the files of one scan (OpenHands V0/V1 keep one event per
/// file: an action and its observation are in two files of one folder).
#[derive(Default)]
pub struct Shared {
    openhands: HashMap<String, openhands::Session>,
}

impl Shared {
    /// Emits what is still waiting (at the end of a scan).
    pub fn finish(&mut self, skips: &mut Skips, emit: &mut dyn FnMut(LoggedCall)) -> Result<(), Stop> {
        let mut dirs: Vec<String> = self.openhands.keys().cloned().collect();
        dirs.sort();
        for d in dirs {
            if let Some(mut s) = self.openhands.remove(&d) {
                let mut ctx = Ctx {
                    file: &d,
                    skips,
                    emit,
                };
                s.finish(&mut ctx)?;
            }
        }
        Ok(())
    }
}

/// Reads one file: detects its format and hands it to that reader. Returns the format, `None`
/// when the file was skipped (counted).
pub fn read_file(
    path: &Path,
    shown: &str,
    bounds: Bounds,
    shared: &mut Shared,
    skips: &mut Skips,
    emit: &mut dyn FnMut(LoggedCall),
) -> Result<Option<Format>, Stop> {
    let mut ctx = Ctx {
        file: shown,
        skips,
        emit,
    };
    let open = || std::fs::File::open(path).map(|f| BufReader::with_capacity(64 << 10, f));
    let f = match open() {
        Ok(f) => f,
        Err(e) => {
            ctx.skip(0, Skip::UnreadableFile, e.to_string())?;
            return Ok(None);
        }
    };
    let format = match detect(f, bounds) {
        Ok(f) => f,
        Err(e) => {
            ctx.skip(0, Skip::UnreadableFile, e.to_string())?;
            return Ok(None);
        }
    };
    let format = match format {
        Detected::Format(f) => f,
        Detected::UnknownJson => {
            ctx.skip(0, Skip::UnknownFormat, "JSON lines of no format iec scan reads")?;
            return Ok(None);
        }
        // Not a line format: maybe one document.
        Detected::NoLine => return read_document(path, &mut ctx, bounds, shared, None),
    };
    if !format.is_lines() {
        return read_document(path, &mut ctx, bounds, shared, Some(format));
    }
    let f = match open() {
        Ok(f) => f,
        Err(e) => {
            ctx.skip(0, Skip::UnreadableFile, e.to_string())?;
            return Ok(None);
        }
    };
    let mut reader: Box<dyn LineReader> = match format {
        Format::ClaudeCode => Box::new(claude_code::Reader::new(path)),
        Format::Codex => Box::new(codex::Reader::default()),
        _ => Box::new(gemini::Reader::default()),
    };
    read_lines(f, &mut ctx, bounds, reader.as_mut())?;
    Ok(Some(format))
}

/// Reads the lines of `r` into `reader`, counting bad lines.
pub fn read_lines(
    r: impl BufRead,
    ctx: &mut Ctx,
    bounds: Bounds,
    reader: &mut dyn LineReader,
) -> Result<(), Stop> {
    let mut lines = Lines::new(r, bounds.max_line);
    loop {
        let next = match lines.next_line() {
            Ok(n) => n,
            Err(e) => {
                let at = lines.line_no + 1;
                ctx.skip(at, Skip::UnreadableFile, format!("read error: {e}"))?;
                break;
            }
        };
        let Some((at, line)) = next else { break };
        let parsed = line.and_then(parse_json);
        match parsed {
            Ok(v) => reader.record(ctx, at, v)?,
            Err((reason, detail)) => ctx.skip(at, reason, detail)?,
        }
    }
    reader.finish(ctx)
}

/// What the first lines of a file show.
enum Detected {
    /// The first line that is JSON is a record of this format.
    Format(Format),
    /// The first line that is JSON is of no format we read.
    UnknownJson,
    /// No line of the first few is JSON by itself (a pretty-printed document, or not JSON).
    NoLine,
}

/// The format of a file, from its first lines.
fn detect(r: impl BufRead, bounds: Bounds) -> std::io::Result<Detected> {
    let mut lines = Lines::new(r, bounds.max_line);
    let mut seen = 0;
    while let Some((_, line)) = lines.next_line()? {
        seen += 1;
        if let Ok(v) = line.and_then(parse_json) {
            // A bare scalar or a lone bracket line is no record.
            if v.is_object() || v.is_array() {
                return Ok(classify(&v).map_or(Detected::UnknownJson, Detected::Format));
            }
        }
        if seen >= DETECT_LINES {
            break;
        }
    }
    Ok(Detected::NoLine)
}

/// Reads a file as one JSON document (`format` when detection already knows it).
fn read_document(
    path: &Path,
    ctx: &mut Ctx,
    bounds: Bounds,
    shared: &mut Shared,
    format: Option<Format>,
) -> Result<Option<Format>, Stop> {
    let mut bytes = Vec::new();
    let read =
        std::fs::File::open(path).and_then(|f| f.take(bounds.max_document + 1).read_to_end(&mut bytes));
    if let Err(e) = read {
        ctx.skip(0, Skip::UnreadableFile, e.to_string())?;
        return Ok(None);
    }
    if bytes.len() as u64 > bounds.max_document {
        ctx.skip(
            0,
            Skip::FileTooLarge,
            format!("more than {} bytes; the document bound", bounds.max_document),
        )?;
        return Ok(None);
    }
    read_document_bytes(path, ctx, shared, format, &bytes)
}

/// Reads the bytes of a file of `format` (or, with `None`, of the format its content shows)
/// as one document, the way [`read_file`] reads a file: what the fuzz targets drive.
pub fn read_bytes(
    name: &str,
    bytes: &[u8],
    format: Option<Format>,
    shared: &mut Shared,
    skips: &mut Skips,
    emit: &mut dyn FnMut(LoggedCall),
) -> Result<Option<Format>, Stop> {
    let mut ctx = Ctx {
        file: name,
        skips,
        emit,
    };
    let path = Path::new(name);
    match format {
        Some(f) if f.is_lines() => {
            let mut reader: Box<dyn LineReader> = match f {
                Format::ClaudeCode => Box::new(claude_code::Reader::new(path)),
                Format::Codex => Box::new(codex::Reader::default()),
                _ => Box::new(gemini::Reader::default()),
            };
            read_lines(bytes, &mut ctx, Bounds::default(), reader.as_mut())?;
            Ok(Some(f))
        }
        f => read_document_bytes(path, &mut ctx, shared, f, bytes),
    }
}

/// The calls of `bytes` read as [`read_bytes`] reads them, then the end of a scan (calls still
/// waiting emitted), each call's exposure computed and its JSON written: what a fuzz target of
/// each reader runs (bad input is skipped and counted, never a panic).
pub fn read_all(bytes: &[u8], format: Option<Format>) -> Vec<LoggedCall> {
    let mut shared = Shared::default();
    let mut skips = Skips::new(false);
    let mut calls = Vec::new();
    let _ = read_bytes("f/s.jsonl", bytes, format, &mut shared, &mut skips, &mut |c| {
        calls.push(c)
    });
    let _ = shared.finish(&mut skips, &mut |c| calls.push(c));
    for c in &calls {
        let _ = iec_core::exposure(&c.command);
        let _ = serde_json::to_string(c);
    }
    calls
}

/// [`read_document`] after reading: the bytes checked, parsed, classified and read.
fn read_document_bytes(
    path: &Path,
    ctx: &mut Ctx,
    shared: &mut Shared,
    format: Option<Format>,
    bytes: &[u8],
) -> Result<Option<Format>, Stop> {
    let text = match check_text(bytes) {
        Ok(t) => t,
        Err((reason, detail)) => {
            // A file of another kind altogether (binary) is not a log we know.
            ctx.skip(
                0,
                if format.is_some() {
                    reason
                } else {
                    Skip::UnknownFormat
                },
                detail,
            )?;
            return Ok(None);
        }
    };
    let v = match parse_json(text) {
        Ok(v) => v,
        Err((reason, detail)) => {
            let reason = if format.is_some() || text.trim_start().starts_with(['{', '[']) {
                reason
            } else {
                Skip::UnknownFormat
            };
            ctx.skip(0, reason, detail)?;
            return Ok(None);
        }
    };
    let Some(format) = format.or_else(|| classify(&v)) else {
        ctx.skip(0, Skip::UnknownFormat, "JSON of no format iec scan reads")?;
        return Ok(None);
    };
    match format {
        Format::GeminiDocument => gemini::read_document(ctx, v)?,
        Format::Cline => cline::read_document(ctx, v)?,
        Format::ClineUi => {}
        Format::Atif => atif::read_document(ctx, v)?,
        Format::OpenHands => openhands::read_document(ctx, path, v, &mut shared.openhands)?,
        // A line format whose file is one pretty-printed record: read as lines of one.
        Format::ClaudeCode | Format::Codex | Format::GeminiLines => {
            let mut reader: Box<dyn LineReader> = match format {
                Format::ClaudeCode => Box::new(claude_code::Reader::new(path)),
                Format::Codex => Box::new(codex::Reader::default()),
                _ => Box::new(gemini::Reader::default()),
            };
            reader.record(ctx, 1, v)?;
            reader.finish(ctx)?;
        }
    }
    Ok(Some(format))
}

/// Calls waiting for their result, by call id, bounded: beyond [`Pending::MAX`] the oldest goes
/// out without a result.
#[derive(Default)]
pub struct Pending(HashMap<String, LoggedCall>);

impl Pending {
    /// The most calls kept waiting.
    pub const MAX: usize = 50_000;

    /// Keeps `call` until the result of `id` (a call without an id goes out at once).
    pub fn wait(&mut self, ctx: &mut Ctx, id: &str, call: LoggedCall) {
        if id.is_empty() {
            (ctx.emit)(call);
            return;
        }
        if self.0.len() >= Self::MAX {
            if let Some(k) = self.0.iter().min_by_key(|(_, c)| c.line).map(|(k, _)| k.clone()) {
                let c = self.0.remove(&k).expect("present");
                (ctx.emit)(c);
            }
        }
        self.0.insert(id.to_string(), call);
    }

    /// The call waiting for `id`.
    pub fn take(&mut self, id: &str) -> Option<LoggedCall> {
        self.0.remove(id)
    }

    /// True when a call waits for `id`.
    pub fn contains(&self, id: &str) -> bool {
        self.0.contains_key(id)
    }

    /// Emits every waiting call without a result, in line order.
    pub fn finish(&mut self, ctx: &mut Ctx) -> Result<(), Stop> {
        let mut rest: Vec<LoggedCall> = self.0.drain().map(|(_, c)| c).collect();
        rest.sort_by_key(|c| c.line);
        for c in rest {
            (ctx.emit)(c);
        }
        Ok(())
    }
}
