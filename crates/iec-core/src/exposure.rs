//! Exposure: a call is exposed when it carries code for another interpreter, escape sequences,
//! multi-line text or heredocs, or long text. These are the calls the paper found to change.

use serde::{Deserialize, Serialize};

/// One reason a call is exposed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Exposure {
    /// Code for another interpreter (`python -c`, `node -e`, `jq`, `awk`, `sed`, `perl -e`, ...).
    NestedCode,
    /// Backslashes, quotes inside quotes, `!`, `$`, `%`, or control characters.
    EscapeSequences,
    /// More than one line.
    MultiLine,
    /// A here-document.
    Heredoc,
    /// Longer than [`LONG_TEXT`] bytes.
    LongText,
}

/// Texts longer than this many bytes are exposed as long text (Git Bash truncates near 8 K).
pub const LONG_TEXT: usize = 4096;

const INTERPRETERS: &[&str] = &[
    "python",
    "python3",
    "node",
    "perl",
    "ruby",
    "php",
    "jq",
    "awk",
    "gawk",
    "sed",
    "osascript",
    "powershell",
    "pwsh",
    "bash -c",
    "sh -c",
    "zsh -c",
    "deno",
    "lua",
    "Rscript",
    "sqlite3",
    "psql",
    "mysql",
];

/// Classifies a command text.
pub fn exposure(text: &str) -> Vec<Exposure> {
    let mut out = Vec::new();
    let words: Vec<&str> = text
        .split(|c: char| c.is_whitespace() || "|;&()`$".contains(c))
        .filter(|w| !w.is_empty())
        .collect();
    let nested = INTERPRETERS.iter().any(|i| {
        if i.contains(' ') {
            text.contains(i)
        } else {
            words.iter().any(|w| w == i || w.rsplit('/').next() == Some(i))
        }
    });
    if nested {
        out.push(Exposure::NestedCode);
    }
    let nested_quotes = has_quote_inside_quote(text);
    if text.contains('\\')
        || text.contains('!')
        || text.contains('$')
        || text.contains('%')
        || nested_quotes
        || text.chars().any(|c| c.is_control() && c != '\n' && c != '\t')
    {
        out.push(Exposure::EscapeSequences);
    }
    if text.trim_end_matches('\n').contains('\n') {
        out.push(Exposure::MultiLine);
    }
    // `<<<` is a here-string, not a heredoc; a heredoc `<<` remains after removing them.
    if text.matches("<<").count() > text.matches("<<<").count() {
        out.push(Exposure::Heredoc);
    }
    if text.len() > LONG_TEXT {
        out.push(Exposure::LongText);
    }
    out
}

/// True when a quote character of the other kind appears inside a quoted span.
fn has_quote_inside_quote(text: &str) -> bool {
    let mut open: Option<char> = None;
    for c in text.chars() {
        match (open, c) {
            (None, '\'' | '"') => open = Some(c),
            (Some(q), c) if c == q => open = None,
            (Some(_), '\'' | '"') => return true,
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes() {
        assert_eq!(exposure("ls -la"), vec![]);
        assert_eq!(exposure("printf '%s' 'a != b'"), vec![Exposure::EscapeSequences]);
        assert_eq!(
            exposure("python3 -c 'print(\"hi\")'"),
            vec![Exposure::NestedCode, Exposure::EscapeSequences]
        );
        assert_eq!(
            exposure("cat <<EOF\nx\nEOF"),
            vec![Exposure::MultiLine, Exposure::Heredoc]
        );
        assert_eq!(exposure("cat <<<x"), vec![]);
        assert_eq!(exposure(&"a".repeat(5000)), vec![Exposure::LongText]);
    }
}
