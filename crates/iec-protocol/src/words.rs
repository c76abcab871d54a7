//! Static words compared by value. Two texts whose canonical parses (bash's `declare -f`)
//! differ only in how literal words are quoted — `"a b"` against `'a b'`, `x` against `'x'` —
//! hand every program the same argv: a harness that re-quotes words has not changed the call.
//! Each word of bash's canonical form that [`literal_words`] can value (quotes and escapes
//! only: no expansion, glob or tilde can occur) is replaced by one canonical quoting of its
//! value; everything else is kept byte for byte. Where quoting changes more than the value, the
//! text is left alone: reserved words, assignment words, `=~` regular expressions, arithmetic, here-documents.

use crate::plain::literal_words;

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done",
    "in", "function", "time", "coproc", "{", "}", "!", "[[", "]]",
];

/// `canonical` with every static word requoted, or `None` when the text holds constructs where
/// quoting is more than the value (see the module comment).
pub(crate) fn normalize(canonical: &str) -> Option<String> {
    // Inside `(( ))` single quotes are an error, not a quoting.
    if canonical.contains("<<") || canonical.contains("=~") || canonical.contains("((") {
        return None;
    }
    let mut out = String::with_capacity(canonical.len());
    let mut word = String::new();
    let (mut single, mut double, mut escaped) = (false, false, false);
    // Whether the next word stands where a command starts (an assignment word is only one
    // there; elsewhere `a=b` is an argument like any other).
    let mut at_start = true;
    for c in canonical.chars() {
        let boundary = !single && !double && !escaped && matches!(c, ' ' | '\t' | '\n');
        if boundary {
            flush(&mut out, &mut word, &mut at_start);
            if c == '\n' {
                at_start = true;
            }
            out.push(c);
            continue;
        }
        word.push(c);
        if escaped {
            escaped = false;
        } else if single {
            single = c != '\'';
        } else if c == '\\' {
            escaped = true;
        } else if c == '"' {
            double = !double;
        } else if c == '\'' && !double {
            single = true;
        }
    }
    if single || double || escaped {
        return None;
    }
    flush(&mut out, &mut word, &mut at_start);
    Some(out)
}

fn flush(out: &mut String, word: &mut String, at_start: &mut bool) {
    if word.is_empty() {
        return;
    }
    let assignment = *at_start && assignment_like(word);
    match (assignment, requote(word)) {
        (false, Some(q)) => out.push_str(&q),
        _ => out.push_str(word),
    }
    *at_start = assignment
        || RESERVED.contains(&word.as_str())
        || word.ends_with([';', '|', '&', '(', '{'])
        || word == "time";
    word.clear();
}

/// The canonical quoting of a static word's value; `None` keeps the word as written.
fn requote(word: &str) -> Option<String> {
    if RESERVED.contains(&word) {
        return None;
    }
    let mut v = literal_words(word)?;
    if v.len() != 1 {
        return None;
    }
    let value = v.pop()?;
    if RESERVED.contains(&value.as_str()) {
        return None;
    }
    Some(format!("'{}'", value.replace('\'', r"'\''")))
}

/// `NAME=…` or `NAME+=…` unquoted: an assignment where it stands before a command.
fn assignment_like(word: &str) -> bool {
    let Some(eq) = word.find('=') else { return false };
    let name = word[..eq].strip_suffix('+').unwrap_or(&word[..eq]);
    let name = name.split('[').next().unwrap_or(name);
    !name.is_empty()
        && !name.starts_with(|c: char| c.is_ascii_digit())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::normalize;

    #[test]
    fn requotes_static_words_only() {
        let n = |s: &str| normalize(s).unwrap();
        assert_eq!(n(r#"argvprobe "a b" | cat"#), n("argvprobe 'a b' | cat"));
        assert_eq!(n("echo x"), n("echo 'x'"));
        assert_eq!(n(r#"echo "it's""#), n(r"echo 'it'\''s'"));
        assert_eq!(n(r"echo a\ b"), n("echo 'a b'"));
        // Values that differ stay different.
        assert_ne!(n(r#"echo "a \!= b""#), n("echo 'a != b'"));
        assert_ne!(n(r#"echo "$x""#), n("echo '$x'"));
        assert_ne!(n("echo *"), n("echo '*'"));
        assert_ne!(n("echo ~"), n("echo '~'"));
        // Reserved words and assignments keep their quoting.
        assert_ne!(n("if true; then :; fi"), n("'if' true; then :; fi"));
        assert_ne!(n("a=b cmd"), n("'a=b' cmd"));
        assert_eq!(n("cmd -m 'a=b'"), n(r#"cmd -m "a=b""#));
        assert_eq!(n("argvprobe a=b | cat"), n(r"argvprobe a\=b | cat"));
        assert_ne!(n("x; a=b cmd"), n("x; 'a=b' cmd"));
        assert_eq!(n("argvprobe '~é&'"), n(r"argvprobe ~é\&"));
        // Constructs where quoting is more than the value are not normalised.
        assert_eq!(normalize("[[ $x =~ \"a.b\" ]]"), None);
        assert_eq!(normalize("cat <<'E'\nx\nE"), None);
        assert_eq!(normalize("(( x = \"1\" ))"), None);
    }
}
