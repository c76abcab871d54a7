//! Bounds: the largest text iec judges, how much it reads to find out, and how much of a long
//! string a report repeats.
//!
//! * [`MAX_TEXT`]: a command text (or an argv, its elements joined with spaces) longer than
//!   1 MiB is not judged. Every entry enforces it: `iec check` / `iec repair` (`--command`,
//!   `--command-file`, `--call-json`), the hook's stdin, the daemon's requests, the MCP tools'
//!   inputs and the intents the shell shim reads.
//! * Readers never take more than the limit and one byte ([`read_at_most`]): `--command-file
//!   /dev/zero` stops there.
//! * A report repeats a string longer than [`REPORT_STRING`] bytes (or an array of more than
//!   [`REPORT_ARRAY`] elements) only as its head, its tail, its length and its SHA-256
//!   ([`compact_report`]); the report's `elided` list says where.

use crate::CheckReport;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::io::Read;

/// The longest command text iec judges: 1 MiB (1,048,576 bytes). Far above what one execve
/// argument carries (Linux: 131,071 bytes), so no call a Linux harness can start a shell with is
/// refused for its size; far below memory, so a check of the longest text stays within
/// seconds and a few hundred MB on every launch.
pub const MAX_TEXT: usize = 1 << 20;

/// The longest JSON document that carries one call (a `--call-json` file, the hook's stdin, a
/// daemon request): a text of [`MAX_TEXT`] bytes with every byte written as JSON's longest
/// escape (`\u00XX`, 6 bytes), and 2 MiB for the other fields.
pub const MAX_CALL_JSON: usize = 6 * MAX_TEXT + (2 << 20);

/// Strings longer than this many bytes are abbreviated in reports.
pub const REPORT_STRING: usize = 4096;
/// Bytes of an abbreviated string kept at its start (and, as many, at its end).
pub const REPORT_KEEP: usize = 512;
/// Arrays with more elements than this (and more than [`REPORT_STRING`] bytes of JSON) are
/// abbreviated in reports: the first and last [`REPORT_ARRAY`]` / 2` elements are kept.
pub const REPORT_ARRAY: usize = 64;

/// A text over [`MAX_TEXT`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLong {
    /// What was too long (`the command text`, `--command-file big.txt`).
    pub what: String,
    /// Its size in bytes, or the bytes read before stopping (see `at_least`).
    pub bytes: usize,
    /// True when reading stopped after the limit: the input holds at least `bytes` bytes.
    pub at_least: bool,
}

impl std::fmt::Display for TooLong {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let size = if self.at_least {
            format!("more than {}", self.bytes.saturating_sub(1))
        } else {
            self.bytes.to_string()
        };
        write!(
            f,
            "{} is {size} bytes; iec judges texts of at most {MAX_TEXT} bytes (1 MiB, its text limit), so it is not checked",
            self.what
        )
    }
}

impl std::error::Error for TooLong {}

/// The size that counts against [`MAX_TEXT`] for a tool's `command` value: a string's bytes,
/// an argv's elements joined with spaces; 0 for anything else.
pub fn command_bytes(command: &Value) -> usize {
    match command {
        Value::String(s) => s.len(),
        Value::Array(a) => {
            a.iter().map(|v| v.as_str().map_or(0, str::len)).sum::<usize>() + a.len().saturating_sub(1)
        }
        _ => 0,
    }
}

/// `Err` when `command` (see [`command_bytes`]) is longer than [`MAX_TEXT`].
pub fn check_command(command: &Value) -> Result<(), TooLong> {
    let bytes = command_bytes(command);
    if bytes > MAX_TEXT {
        return Err(TooLong {
            what: "the command text".into(),
            bytes,
            at_least: false,
        });
    }
    Ok(())
}

/// What [`read_at_most`] read.
#[derive(Debug)]
pub enum Bounded {
    /// The whole input, at most the limit.
    Whole(Vec<u8>),
    /// The input is longer than the limit; reading stopped after limit + 1 bytes.
    Over {
        /// The limit that was passed.
        limit: usize,
    },
}

/// Reads `r` to its end, but never more than `limit + 1` bytes.
pub fn read_at_most<R: Read>(r: R, limit: usize) -> std::io::Result<Bounded> {
    let mut buf = Vec::new();
    r.take(limit as u64 + 1).read_to_end(&mut buf)?;
    Ok(if buf.len() > limit {
        Bounded::Over { limit }
    } else {
        Bounded::Whole(buf)
    })
}

/// One string or array a report abbreviated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Elided {
    /// Where it is in the report's JSON (a JSON pointer, RFC 6901).
    pub path: String,
    /// The length of the original string in bytes (of an array: its compact JSON).
    pub bytes: usize,
    /// An array's original number of elements.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub elements: Option<usize>,
    /// Lowercase hex SHA-256 of the original string's UTF-8 bytes (of an array: its compact
    /// JSON).
    pub sha256: String,
}

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

fn floor_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_char(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

/// `s` itself when it has at most [`REPORT_STRING`] bytes; otherwise its first and last
/// [`REPORT_KEEP`] bytes (whole characters) around a marker that gives the length and SHA-256
/// of the whole string, and the record of that.
pub fn abbreviate(s: &str, path: &str) -> Option<(String, Elided)> {
    if s.len() <= REPORT_STRING {
        return None;
    }
    let head = &s[..floor_char(s, REPORT_KEEP)];
    let tail = &s[ceil_char(s, s.len() - REPORT_KEEP)..];
    let sha = sha256_hex(s.as_bytes());
    let short = format!(
        "{head}…[iec: {} bytes in all, sha256 {sha}; {} bytes elided]…{tail}",
        s.len(),
        s.len() - head.len() - tail.len()
    );
    Some((
        short,
        Elided {
            path: path.into(),
            bytes: s.len(),
            elements: None,
            sha256: sha,
        },
    ))
}

fn pointer_token(t: &str) -> String {
    t.replace('~', "~0").replace('/', "~1")
}

/// Abbreviates, in place, every long string and array in `v` (see [`abbreviate`]); `path` is
/// `v`'s JSON pointer.
pub fn compact_value(v: &mut Value, path: &str, out: &mut Vec<Elided>) {
    match v {
        Value::String(s) => {
            if let Some((short, e)) = abbreviate(s, path) {
                *s = short;
                out.push(e);
            }
        }
        Value::Array(a) => {
            if a.len() > REPORT_ARRAY {
                let json = serde_json::to_string(&*a).unwrap_or_default();
                if json.len() > REPORT_STRING {
                    let n = a.len();
                    let keep = REPORT_ARRAY / 2;
                    let tail: Vec<Value> = a.split_off(n - keep);
                    a.truncate(keep);
                    let sha = sha256_hex(json.as_bytes());
                    a.push(Value::String(format!(
                        "…[iec: {n} elements in all ({} bytes of JSON, sha256 {sha}); {} elided]…",
                        json.len(),
                        n - 2 * keep
                    )));
                    a.extend(tail);
                    out.push(Elided {
                        path: path.into(),
                        bytes: json.len(),
                        elements: Some(n),
                        sha256: sha,
                    });
                }
            }
            for (i, x) in a.iter_mut().enumerate() {
                compact_value(x, &format!("{path}/{i}"), out);
            }
        }
        Value::Object(m) => {
            for (k, x) in m.iter_mut() {
                compact_value(x, &format!("{path}/{}", pointer_token(k)), out);
            }
        }
        _ => {}
    }
}

fn compact_string(s: &mut String, path: &str, out: &mut Vec<Elided>) {
    if let Some((short, e)) = abbreviate(s, path) {
        *s = short;
        out.push(e);
    }
}

/// Abbreviates every long string and array of `r` in place (receipts, the first divergence's
/// texts, notes, reason) and returns what it abbreviated. A report whose strings are all short
/// is left exactly as it is (and the list is empty).
pub fn compact_report(r: &mut CheckReport) -> Vec<Elided> {
    let mut out = Vec::new();
    if let Some(reason) = &mut r.reason {
        compact_string(reason, "/reason", &mut out);
    }
    if let Some(fd) = &mut r.first_divergence {
        compact_string(&mut fd.intended, "/first_divergence/intended", &mut out);
        compact_string(&mut fd.received, "/first_divergence/received", &mut out);
        compact_string(&mut fd.diff, "/first_divergence/diff", &mut out);
        compact_string(&mut fd.detail, "/first_divergence/detail", &mut out);
    }
    for (i, h) in r.hops.iter_mut().enumerate() {
        compact_value(&mut h.receipt, &format!("/hops/{i}/receipt"), &mut out);
        if let Some(note) = &mut h.note {
            compact_string(note, &format!("/hops/{i}/note"), &mut out);
        }
    }
    out
}

/// The JSON of a report for output: [`compact_report`] applied, and when anything was
/// abbreviated, an `elided` list (see [`Elided`]) added.
pub fn report_json(mut r: CheckReport) -> Value {
    let elided = compact_report(&mut r);
    let mut v = serde_json::to_value(&r).expect("a report serializes");
    if !elided.is_empty() {
        v["elided"] = serde_json::to_value(elided).expect("serializes");
    }
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_strings_are_kept() {
        assert!(abbreviate(&"x".repeat(REPORT_STRING), "/a").is_none());
        let (s, e) = abbreviate(&"é".repeat(REPORT_STRING), "/a").unwrap();
        assert!(s.len() < 2 * REPORT_KEEP + 200, "{}", s.len());
        assert_eq!(e.bytes, 2 * REPORT_STRING);
        assert!(s.starts_with('é') && s.ends_with('é'));
    }

    #[test]
    fn bounded_read_stops_after_the_limit() {
        let zero = std::io::repeat(0);
        assert!(matches!(
            read_at_most(zero, 10).unwrap(),
            Bounded::Over { limit: 10 }
        ));
        match read_at_most(&b"0123456789"[..], 10).unwrap() {
            Bounded::Whole(b) => assert_eq!(b.len(), 10),
            o => panic!("{o:?}"),
        }
    }

    #[test]
    fn long_arrays_keep_both_ends() {
        let mut v = serde_json::json!({ "args": (0..1000).map(|i| format!("word{i}")).collect::<Vec<_>>() });
        let mut out = vec![];
        compact_value(&mut v, "", &mut out);
        let a = v["args"].as_array().unwrap();
        assert_eq!(a.len(), REPORT_ARRAY + 1);
        assert_eq!(a[0], "word0");
        assert_eq!(a[REPORT_ARRAY], "word999");
        assert_eq!(out[0].path, "/args");
        assert_eq!(out[0].elements, Some(1000));
    }
}
