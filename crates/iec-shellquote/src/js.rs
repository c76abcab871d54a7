//! Tiny helpers reproducing JavaScript regex character classes (non-unicode mode).

/// JavaScript `\s` (ECMAScript WhiteSpace + LineTerminator).
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

/// JavaScript `\w` (ASCII only without the `u` flag).
pub fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// JavaScript `\d`.
pub fn is_digit(c: char) -> bool {
    c.is_ascii_digit()
}

/// Characters that `.` does NOT match (line terminators).
pub fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}
