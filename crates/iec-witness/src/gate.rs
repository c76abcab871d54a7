//! The break-out gate. A text is parsed as `__iec_f() {⏎TEXT⏎}`; it could end that function
//! early only through a `}` reserved word of its own. A `}` can be a reserved word only when it
//! stands alone as a token: at the start, or after a blank, newline or operator character, and
//! before one of those or the end. bash removes every backslash-newline pair outside single
//! quotes before it forms tokens, so `}\⏎;` is the token `}` followed by `;`: the neighbours
//! of a `}` are looked up across any run of such pairs, both with and without the pair (the
//! gate does not decide whether the backslash is itself quoted). Quotes are ignored on purpose,
//! so the check over-approximates: a text it passes cannot break out; a text it flags is first
//! checked by `bash -n` on its own, and a text that parses on its own cannot close the wrapper
//! (its reserved `}` words close its own `{`).

fn delimits(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

/// True when `text` contains a `}` that could be a reserved word.
pub fn may_break_out(text: &[u8]) -> bool {
    text.iter()
        .enumerate()
        .any(|(i, &b)| b == b'}' && before_delimits(text, i) && after_delimits(text, i + 1))
}

/// Whether the byte before position `i`, or before any run of backslash-newline pairs ending
/// there, is a delimiter or the start of the text.
fn before_delimits(text: &[u8], mut i: usize) -> bool {
    loop {
        if i == 0 || delimits(text[i - 1]) {
            return true;
        }
        if i >= 2 && text[i - 2] == b'\\' && text[i - 1] == b'\n' {
            i -= 2;
        } else {
            return false;
        }
    }
}

/// Whether the byte at position `i`, or after any run of backslash-newline pairs starting
/// there, is a delimiter or the end of the text.
fn after_delimits(text: &[u8], mut i: usize) -> bool {
    loop {
        if i >= text.len() || delimits(text[i]) {
            return true;
        }
        if text[i] == b'\\' && text.get(i + 1) == Some(&b'\n') {
            i += 2;
        } else {
            return false;
        }
    }
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

    /// Issue 16: `}\⏎;` is the reserved word `}` then `;` (bash joins the lines first), and the
    /// gate let `true⏎}\⏎;printf PWNED; __x() {⏎true` through.
    #[test]
    fn brace_before_or_after_a_line_continuation_is_flagged() {
        for t in [
            "true\n}\\\n;printf PWNED; __x() {\ntrue",
            "}\\\n\\\n;x",
            "x\\\n}",
            "a;\\\n}\\\n",
            "\\\n}",
            "}\\\n",
        ] {
            assert!(may_break_out(t.as_bytes()), "{t:?}");
        }
        for t in ["a\\\n}b", "a}\\\nb", "x\\\n\\\n}y"] {
            assert!(!may_break_out(t.as_bytes()), "{t:?}");
        }
    }
}
