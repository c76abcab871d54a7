//! Byte-level diff of two receipts: the common prefix and suffix are elided, the differing
//! middle is shown with its offset, each side escaped so that invisible bytes are visible.

/// Describes where `a` and `b` differ, as `@OFFSET: -"…" +"…"` with up to 24 bytes of context.
/// Returns the empty string when they are equal.
pub fn byte_diff(a: &[u8], b: &[u8]) -> String {
    if a == b {
        return String::new();
    }
    let prefix = a.iter().zip(b).take_while(|(x, y)| x == y).count();
    let max_suffix = a.len().min(b.len()) - prefix;
    let suffix = a
        .iter()
        .rev()
        .zip(b.iter().rev())
        .take(max_suffix)
        .take_while(|(x, y)| x == y)
        .count();
    let ctx_start = prefix.saturating_sub(24);
    let before = escape(&a[ctx_start..prefix]);
    let del = escape(&a[prefix..a.len() - suffix]);
    let ins = escape(&b[prefix..b.len() - suffix]);
    let after_end = (a.len() - suffix + 24).min(a.len());
    let after = escape(&a[a.len() - suffix..after_end]);
    format!("@{prefix}: …{before}[-\"{del}\" +\"{ins}\"]{after}…")
}

fn escape(bytes: &[u8]) -> String {
    let mut out = String::new();
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02x}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::byte_diff;

    #[test]
    fn shows_the_inserted_backslash() {
        assert_eq!(
            byte_diff(b"printf '%s' 'a != b'", b"printf '%s' 'a \\!= b'"),
            "@15: …printf '%s' 'a [-\"\" +\"\\\\\"]!= b'…"
        );
    }

    #[test]
    fn equal_is_empty_and_invisible_bytes_are_escaped() {
        assert_eq!(byte_diff(b"x", b"x"), "");
        assert_eq!(byte_diff(b"a\r\nb", b"a\nb"), "@1: …a[-\"\\r\" +\"\"]\\nb…");
        assert_eq!(byte_diff(b"\xff", b""), "@0: …[-\"\\xff\" +\"\"]…");
    }
}
