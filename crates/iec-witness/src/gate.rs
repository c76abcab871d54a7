//! The break-out gate. A text is parsed as `__iec_f() {⏎TEXT⏎}`; it could end that function
//! early only through a `}` reserved word of its own. A `}` can be a reserved word only when it
//! stands alone as a token: at the start, or after a blank, newline or operator character, and
//! before one of those or the end. Quotes are ignored on purpose, so the check over-approximates:
//! a text it passes cannot break out; a text it flags is first checked by `bash -n` on its own.

fn delimits(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

/// True when `text` contains a `}` that could be a reserved word.
pub fn may_break_out(text: &[u8]) -> bool {
    text.iter().enumerate().any(|(i, &b)| {
        b == b'}' && (i == 0 || delimits(text[i - 1])) && (i + 1 == text.len() || delimits(text[i + 1]))
    })
}

#[cfg(test)]
mod tests {
    use super::may_break_out;

    #[test]
    fn flags_standalone_braces_only() {
        for t in ["}", "a\n}", "{ a; }", "x;}", "echo a }", "(})"] {
            assert!(may_break_out(t.as_bytes()), "{t}");
        }
        for t in [
            "${x}",
            "awk '{print}'",
            "find . -exec rm {} \\;",
            "echo \\}",
            "a}",
            "}a",
        ] {
            assert!(!may_break_out(t.as_bytes()), "{t}");
        }
    }
}
