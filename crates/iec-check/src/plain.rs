//! Plain texts: one simple command of literal words (letters, digits, space and `_./,:=+@-`),
//! whose first word is not a reserved word. For bash and dash such a text is its words split on
//! spaces, and every POSIX rendering in the catalog hands it on unchanged; a check of it needs
//! no witness process. `tests/plain.rs` proves, against the real witnesses, that the shortcut
//! gives the same verdict, hops and first divergence as the full check on every launch.

/// Bytes a plain text may hold.
fn plain_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" _./,:=+@-".contains(&b)
}

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done",
    "in", "function", "time", "coproc",
];

/// True for a plain text (see the module documentation).
pub fn is_plain(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 4096
        && text.bytes().all(plain_byte)
        && text
            .split(' ')
            .find(|w| !w.is_empty())
            .is_some_and(|w| !RESERVED.contains(&w))
}

/// The value of shell words made only of literal characters, `'…'` strings, `"…"` strings
/// without `$` or backquotes, and `\c` escapes, as bash and dash both expand them (no parameter,
/// command or glob expansion can occur). `None` when the words hold anything else. Harness
/// renderings are mostly of this kind (shell-quote's `'…'"'"'…'`), and bash's own expansion of
/// a long one costs more than the rest of a check; tests/literal_words.rs holds it to bash.
pub fn literal_words(words: &str) -> Option<Vec<String>> {
    let mut out = Vec::new();
    let mut cur: Option<String> = None;
    let mut chars = words.chars();
    while let Some(c) = chars.next() {
        match c {
            // A leading `~` whose tilde-prefix (up to an unquoted `/` or the word's end) holds a
            // quoted character is not expanded (bash and POSIX alike): it is a literal `~`.
            '~' if cur.is_none() && tilde_prefix_quoted(chars.as_str()) => {
                cur.get_or_insert_with(String::new).push('~')
            }
            ' ' | '\t' => {
                if let Some(w) = cur.take() {
                    out.push(w);
                }
            }
            '\'' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '\'' => break,
                        c => w.push(c),
                    }
                }
            }
            '"' => {
                let w = cur.get_or_insert_with(String::new);
                loop {
                    match chars.next()? {
                        '"' => break,
                        '$' | '`' => return None,
                        '\\' => match chars.next()? {
                            '\n' => return None,
                            c @ ('"' | '\\' | '$' | '`') => w.push(c),
                            c => {
                                w.push('\\');
                                w.push(c);
                            }
                        },
                        c => w.push(c),
                    }
                }
            }
            '\\' => {
                let n = chars.next()?;
                if n == '\n' {
                    return None;
                }
                cur.get_or_insert_with(String::new).push(n);
            }
            c if c.is_ascii_alphanumeric() || "_./,:=+@-%".contains(c) || !c.is_ascii() => {
                cur.get_or_insert_with(String::new).push(c)
            }
            _ => return None,
        }
    }
    if let Some(w) = cur {
        out.push(w);
    }
    Some(out)
}

fn tilde_prefix_quoted(rest: &str) -> bool {
    for c in rest.chars() {
        match c {
            ' ' | '\t' | '/' => return false,
            '\\' | '\'' | '"' => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_literal_words() {
        assert!(is_plain("ls -la src/main.rs"));
        assert!(is_plain("A=1 make -j2 all"));
        for t in [
            "",
            "fi",
            "ls 'x'",
            "echo $HOME",
            "a;b",
            "ls *",
            "do x",
            "echo ~",
            "x\ny",
        ] {
            assert!(!is_plain(t), "{t:?}");
        }
        assert_eq!(
            literal_words("'ls -la' \\< /dev/null"),
            Some(vec!["ls -la".into(), "<".into(), "/dev/null".into()])
        );
        assert_eq!(literal_words("a\\:b\\=c"), Some(vec!["a:b=c".into()]));
        assert_eq!(literal_words("$x"), None);
        assert_eq!(literal_words("'open"), None);
    }
}
