//! Reading a call's JSON document as people and programs write it: a UTF-8 byte-order mark at
//! the start is skipped (Windows editors and PowerShell's `Out-File` write one), and a lone
//! UTF-16 surrogate escape (`"\ud800"`), which JSON's grammar allows but no Unicode text can
//! hold, is named as such with its position instead of serde_json's `unexpected end of hex
//! escape`.

use serde_json::Value;

/// The UTF-8 byte-order mark.
pub const BOM: &[u8] = b"\xEF\xBB\xBF";

/// `bytes` without a leading UTF-8 byte-order mark.
pub fn strip_bom(bytes: &[u8]) -> &[u8] {
    bytes.strip_prefix(BOM).unwrap_or(bytes)
}

/// A lone surrogate escape inside a JSON string: its 1-based line and column (in bytes, as
/// serde_json counts) and the escape as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoneSurrogate {
    /// Byte offset of the backslash.
    pub offset: usize,
    /// Line of the backslash.
    pub line: usize,
    /// Column of the backslash.
    pub column: usize,
    /// The escape, e.g. `\ud800`.
    pub escape: String,
}

impl std::fmt::Display for LoneSurrogate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "line {} column {}: the string holds a lone UTF-16 surrogate escape `{}`: a surrogate \
             escape must come in a high-low pair (\\ud800-\\udbff then \\udc00-\\udfff); alone it \
             is no character, so no text (and no shell) can hold it",
            self.line, self.column, self.escape
        )
    }
}

fn hex4(b: &[u8]) -> Option<u16> {
    let s = std::str::from_utf8(b.get(..4)?).ok()?;
    u16::from_str_radix(s, 16).ok()
}

/// The first lone surrogate escape inside a string of the JSON text `bytes`, if any.
pub fn lone_surrogate(bytes: &[u8]) -> Option<LoneSurrogate> {
    let (mut line, mut line_start) = (1, 0);
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if b == b'\n' {
            line += 1;
            line_start = i + 1;
        }
        if !in_string {
            in_string = b == b'"';
            i += 1;
            continue;
        }
        match b {
            b'"' => in_string = false,
            b'\\' if bytes.get(i + 1) == Some(&b'u') => {
                let at = i;
                let Some(u) = hex4(&bytes[i + 2..]) else {
                    return None; // malformed otherwise: serde_json's message says so
                };
                i += 6;
                let lone = match u {
                    0xD800..=0xDBFF => {
                        let low = (bytes.get(i) == Some(&b'\\') && bytes.get(i + 1) == Some(&b'u'))
                            .then(|| hex4(&bytes[i + 2..]))
                            .flatten();
                        match low {
                            Some(0xDC00..=0xDFFF) => {
                                i += 6;
                                false
                            }
                            _ => true,
                        }
                    }
                    0xDC00..=0xDFFF => true,
                    _ => false,
                };
                if lone {
                    return Some(LoneSurrogate {
                        offset: at,
                        line,
                        column: at - line_start + 1,
                        escape: String::from_utf8_lossy(&bytes[at..at + 6]).into_owned(),
                    });
                }
                continue;
            }
            b'\\' => i += 1,
            _ => {}
        }
        i += 1;
    }
    None
}

/// Parses a JSON document (a byte-order mark at the start skipped). The error names a lone
/// surrogate escape when that is what stopped the parse.
pub fn parse(bytes: &[u8]) -> Result<Value, String> {
    let bytes = strip_bom(bytes);
    serde_json::from_slice(bytes).map_err(|e| match lone_surrogate(bytes) {
        Some(l) => l.to_string(),
        None => e.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bom_is_skipped() {
        assert_eq!(
            parse(b"\xEF\xBB\xBF{\"command\":\"ls\"}").unwrap()["command"],
            "ls"
        );
    }

    #[test]
    fn lone_surrogates_are_named() {
        let e = parse(br#"{"command": "echo \ud800 rest"}"#).unwrap_err();
        assert!(e.contains("lone UTF-16 surrogate escape `\\ud800`"), "{e}");
        assert!(e.starts_with("line 1 column 19:"), "{e}");
        let e = parse(b"{\n\"command\": \"a\\\\ \\udc00\"}").unwrap_err();
        assert!(
            e.contains("`\\udc00`") && e.starts_with("line 2 column 17:"),
            "{e}"
        );
        // A pair is a character; an escaped backslash before `u` is no escape.
        assert_eq!(parse(br#"{"c": "\ud83d\ude00"}"#).unwrap()["c"], "😀");
        assert_eq!(parse(br#"{"c": "\\ud800"}"#).unwrap()["c"], "\\ud800");
        assert!(lone_surrogate(br#"{"c": "\ud83d\ude00"}"#).is_none());
    }
}
