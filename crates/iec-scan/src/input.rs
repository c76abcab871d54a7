//! Reading untrusted log files: bounded lines, bad input counted by reason.
//!
//! A session log is read line by line through [`Lines`], which never holds more than
//! `max_line` bytes of one line: a longer line is read past and reported as
//! [`Skip::LineTooLong`]. Every line or file that cannot be read is counted in [`Skips`] by its
//! reason (and, with `--strict`, stops the scan at the first).

use std::collections::BTreeMap;
use std::io::{self, BufRead};

/// Why a line, record or file was skipped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Skip {
    /// A line that is not JSON.
    MalformedJson,
    /// A line that ends inside a JSON value (a log cut short while being written).
    TruncatedJson,
    /// A line or file with bytes that are not UTF-8.
    InvalidUtf8,
    /// A line or file holding a NUL byte (no JSON text has one).
    NulByte,
    /// A line longer than the line bound (read past, never held).
    LineTooLong,
    /// A document longer than the document bound (not read).
    FileTooLarge,
    /// A JSON line of a known format that is not an object, or lacks the fields its type needs.
    MalformedRecord,
    /// A record whose type the format's reader does not know.
    UnknownRecordType,
    /// A shell call whose arguments (a JSON string) do not decode to an object.
    MalformedArguments,
    /// A file that could not be opened or read.
    UnreadableFile,
    /// A file in none of the formats read.
    UnknownFormat,
}

impl Skip {
    /// Every reason, in report order.
    pub const ALL: [Skip; 11] = [
        Skip::MalformedJson,
        Skip::TruncatedJson,
        Skip::InvalidUtf8,
        Skip::NulByte,
        Skip::LineTooLong,
        Skip::FileTooLarge,
        Skip::MalformedRecord,
        Skip::UnknownRecordType,
        Skip::MalformedArguments,
        Skip::UnreadableFile,
        Skip::UnknownFormat,
    ];

    /// The reason's name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Skip::MalformedJson => "malformed-json",
            Skip::TruncatedJson => "truncated-json",
            Skip::InvalidUtf8 => "invalid-utf8",
            Skip::NulByte => "nul-byte",
            Skip::LineTooLong => "line-too-long",
            Skip::FileTooLarge => "file-too-large",
            Skip::MalformedRecord => "malformed-record",
            Skip::UnknownRecordType => "unknown-record-type",
            Skip::MalformedArguments => "malformed-arguments",
            Skip::UnreadableFile => "unreadable-file",
            Skip::UnknownFormat => "unknown-format",
        }
    }
}

/// The first skip of a `--strict` scan: where and why.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{file}:{line}: {} ({detail}); --strict stops at the first bad input", reason.as_str())]
pub struct Stop {
    /// The file.
    pub file: String,
    /// The line (1-based; 0 for the whole file).
    pub line: u64,
    /// Why.
    pub reason: Skip,
    /// What was wrong.
    pub detail: String,
}

/// Skips counted by reason, with the first place of each.
#[derive(Debug, Clone, Default)]
pub struct Skips {
    counts: BTreeMap<Skip, u64>,
    first: BTreeMap<Skip, String>,
    strict: bool,
}

impl Skips {
    /// Counts skips; `strict` makes the first one an error.
    pub fn new(strict: bool) -> Skips {
        Skips {
            strict,
            ..Skips::default()
        }
    }

    /// Counts one skip of `reason` at `file:line`; an error in strict mode.
    pub fn skip(
        &mut self,
        file: &str,
        line: u64,
        reason: Skip,
        detail: impl Into<String>,
    ) -> Result<(), Stop> {
        let detail = detail.into();
        *self.counts.entry(reason).or_default() += 1;
        self.first
            .entry(reason)
            .or_insert_with(|| format!("{file}:{line}: {detail}"));
        if self.strict {
            return Err(Stop {
                file: file.into(),
                line,
                reason,
                detail,
            });
        }
        Ok(())
    }

    /// The counts, by reason name (only reasons that occurred).
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.counts.iter().map(|(k, v)| (k.as_str(), *v)).collect()
    }

    /// The count of one reason.
    pub fn count(&self, reason: Skip) -> u64 {
        self.counts.get(&reason).copied().unwrap_or(0)
    }

    /// Where each reason first occurred (`file:line: detail`).
    pub fn first(&self) -> BTreeMap<&'static str, &str> {
        self.first.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
    }

    /// The total number of skips.
    pub fn total(&self) -> u64 {
        self.counts.values().sum()
    }
}

/// One line as read: its text, or why it cannot be used.
pub type LineResult<'a> = Result<&'a str, (Skip, String)>;

/// A bounded line reader: holds at most `max` bytes of a line.
pub struct Lines<R> {
    r: R,
    buf: Vec<u8>,
    max: usize,
    /// The number of the line last returned (1-based).
    pub line_no: u64,
}

impl<R: BufRead> Lines<R> {
    /// Reads `r` line by line, lines longer than `max` bytes skipped.
    pub fn new(r: R, max: usize) -> Lines<R> {
        Lines {
            r,
            buf: Vec::new(),
            max,
            line_no: 0,
        }
    }

    /// The next line that is not blank, with its number, or `None` at the end. An I/O error
    /// ends the file.
    pub fn next_line(&mut self) -> io::Result<Option<(u64, LineResult<'_>)>> {
        loop {
            self.buf.clear();
            let mut over = 0usize;
            let mut any = false;
            loop {
                let chunk = match self.r.fill_buf() {
                    Ok(c) => c,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if chunk.is_empty() {
                    break;
                }
                any = true;
                let (part, done) = match chunk.iter().position(|b| *b == b'\n') {
                    Some(i) => (&chunk[..i], i + 1),
                    None => (chunk, chunk.len()),
                };
                let ended = done > part.len();
                if over > 0 || self.buf.len() + part.len() > self.max {
                    over += self.buf.len() + part.len();
                    self.buf.clear();
                } else {
                    self.buf.extend_from_slice(part);
                }
                self.r.consume(done);
                if ended {
                    break;
                }
            }
            if !any {
                return Ok(None);
            }
            self.line_no += 1;
            if over > 0 {
                return Ok(Some((
                    self.line_no,
                    Err((
                        Skip::LineTooLong,
                        format!("a line of {over} bytes or more; the bound is {} bytes", self.max),
                    )),
                )));
            }
            if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            return Ok(Some((self.line_no, check_text(&self.buf))));
        }
    }
}

/// The text of `bytes`, or why it is not a JSON text: a NUL byte, or bytes that are not UTF-8.
pub fn check_text(bytes: &[u8]) -> LineResult<'_> {
    if let Some(i) = bytes.iter().position(|b| *b == 0) {
        return Err((Skip::NulByte, format!("a NUL byte at offset {i}")));
    }
    std::str::from_utf8(bytes).map_err(|e| {
        (
            Skip::InvalidUtf8,
            format!("not UTF-8 from offset {}", e.valid_up_to()),
        )
    })
}

/// Parses a JSON text, a parse error named as a skip reason (a value cut short is
/// [`Skip::TruncatedJson`]).
pub fn parse_json(text: &str) -> Result<serde_json::Value, (Skip, String)> {
    serde_json::from_str(text).map_err(|e| {
        let reason = if e.is_eof() {
            Skip::TruncatedJson
        } else {
            Skip::MalformedJson
        };
        (reason, e.to_string())
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8], max: usize) -> Vec<Result<String, Skip>> {
        let mut l = Lines::new(input, max);
        let mut out = Vec::new();
        while let Some((_, r)) = l.next_line().unwrap() {
            out.push(r.map(String::from).map_err(|e| e.0));
        }
        out
    }

    #[test]
    fn lines_are_bounded_and_bad_bytes_named() {
        let mut input = b"{\"a\":1}\n\n   \n".to_vec();
        input.extend(vec![b'x'; 100]);
        input.extend(b"\nok\r\nnul\0here\n\xff\xfe\nlast");
        assert_eq!(
            all(&input, 50),
            vec![
                Ok("{\"a\":1}".into()),
                Err(Skip::LineTooLong),
                Ok("ok\r".into()),
                Err(Skip::NulByte),
                Err(Skip::InvalidUtf8),
                Ok("last".into()),
            ]
        );
    }

    #[test]
    fn a_long_line_across_buffer_refills_is_skipped_whole() {
        let mut input = vec![b'y'; 20_000];
        input.extend(b"\nafter\n");
        let r = std::io::BufReader::with_capacity(64, &input[..]);
        let mut l = Lines::new(r, 1000);
        let (n, r) = l.next_line().unwrap().unwrap();
        assert_eq!((n, r.unwrap_err().0), (1, Skip::LineTooLong));
        let (n, r) = l.next_line().unwrap().unwrap();
        assert_eq!((n, r.unwrap()), (2, "after"));
        assert!(l.next_line().unwrap().is_none());
    }

    #[test]
    fn truncated_json_is_told_from_malformed() {
        assert_eq!(parse_json("{\"a\": [1, 2").unwrap_err().0, Skip::TruncatedJson);
        assert_eq!(parse_json("{\"a\": ]").unwrap_err().0, Skip::MalformedJson);
        assert_eq!(parse_json("not json").unwrap_err().0, Skip::MalformedJson);
    }

    #[test]
    fn strict_stops_at_the_first() {
        let mut s = Skips::new(true);
        let e = s.skip("f.jsonl", 3, Skip::NulByte, "x").unwrap_err();
        assert_eq!(
            e.to_string(),
            "f.jsonl:3: nul-byte (x); --strict stops at the first bad input"
        );
        let mut s = Skips::new(false);
        s.skip("f", 1, Skip::NulByte, "x").unwrap();
        s.skip("f", 2, Skip::NulByte, "y").unwrap();
        assert_eq!(s.counts().get("nul-byte"), Some(&2));
        assert_eq!(s.first().get("nul-byte"), Some(&"f:1: x"));
    }
}
