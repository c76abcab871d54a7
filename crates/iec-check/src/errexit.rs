//! `set -e` inside a harness's `&&` list. Bash ignores errexit in every command of a `&&` or
//! `||` list except the last (and in `if`/`while` conditions and after `!`), in everything that
//! command runs: subshells, functions, `eval`. Claude Code's wrappers run the call as
//! `… && eval '…' && pwd -P >| …`, so a text that turns errexit on (`set -e`, `set -euo
//! pipefail`, `set -o errexit`) keeps running after a failing command there, where `bash -c`
//! stops (red team round 7: `set -e; false; echo after` prints `after` through every Claude
//! Code version tried). The action differs whenever a command fails, which the text cannot
//! rule out: the wrapper hop diverges.

use crate::action::{self, literal, Token};

/// The placeholder the template's payload is replaced with to find its command.
const MARK: &str = "IECPAYLOADMARK";

/// Why the launch's wrapper (its `template`, as bash printed it after `{{payload}}` was
/// replaced by a marker word) ignores errexit for the payload: the operator after the payload's
/// command, or a condition around it. `None` where errexit still works.
pub fn ignored_by(template_canonical: &str) -> Option<String> {
    let (b, _) = action::action_with_starts(template_canonical)?;
    let at = b
        .iter()
        .position(|t| matches!(t, Token::Word(w) if literal(w).as_deref() == Some(MARK)))?;
    let mut end = at;
    while let Some(t) = b.get(end) {
        match t {
            Token::Word(_) | Token::Assign(..) | Token::Raw(_) => end += 1,
            Token::Redirect(_) => end += 2,
            _ => break,
        }
    }
    match b.get(end) {
        Some(Token::Op(o)) if o == "&&" || o == "||" => Some(format!(
            "the harness runs the command as `… {o} …` with more after it, and bash ignores `set -e` in every command of a `&&`/`||` list but the last"
        )),
        _ => None,
    }
}

/// The template with its payload replaced by the marker word and its other placeholders by
/// plain words: a text bash can print.
pub fn marked(template: &str) -> String {
    template
        .replace("{{payload}}", MARK)
        .replace("{{snapshot}}", "/snapshot.sh")
        .replace("{{tmp}}", "/tmp")
}

/// Whether the text may mention errexit at all: a cheap filter before asking bash.
pub fn may_enable(text: &str) -> bool {
    text.contains("set") && (text.contains("errexit") || text.contains('-'))
}

/// The `set`/`shopt` command in the text's canonical form that turns errexit on, as written;
/// `None` where none does.
pub fn enabled_by(canonical: &str) -> Option<String> {
    let (b, starts) = action::action_with_starts(canonical)?;
    for &k in &starts {
        let name = match b.get(k) {
            Some(Token::Word(w)) => literal(w),
            _ => None,
        };
        let shopt = match name.as_deref() {
            Some("set") => false,
            Some("shopt") => true,
            _ => continue,
        };
        let words: Vec<String> = b[k + 1..]
            .iter()
            .map_while(|t| match t {
                Token::Word(w) => Some(literal(w).unwrap_or_default()),
                _ => None,
            })
            .collect();
        let on = if shopt {
            // `shopt -s -o errexit`, `shopt -so errexit`.
            let flags: String = words
                .iter()
                .filter(|w| w.starts_with('-'))
                .map(|w| &w[1..])
                .collect();
            flags.contains('s') && flags.contains('o') && words.iter().any(|w| w == "errexit")
        } else {
            let mut on = false;
            let mut it = words.iter().peekable();
            while let Some(w) = it.next() {
                if w == "--" || w == "-" || !w.starts_with('-') {
                    break;
                }
                let flags = &w[1..];
                if flags.contains('e') {
                    on = true;
                }
                // `-o errexit`, also in a bundle (`-eo pipefail`, `-uo errexit`).
                if flags.ends_with('o') && it.peek().is_some_and(|n| *n == "errexit") {
                    on = true;
                }
                if flags.ends_with('o') {
                    it.next();
                }
            }
            on
        };
        if on {
            let shown: Vec<&str> = std::iter::once(if shopt { "shopt" } else { "set" })
                .chain(words.iter().map(String::as_str))
                .collect();
            return Some(shown.join(" "));
        }
    }
    None
}

/// The texts `eval` runs in a canonical form, where its words are static (joined by spaces,
/// as `eval` joins them).
pub fn eval_bodies(canonical: &str) -> Vec<String> {
    let Some((b, starts)) = action::action_with_starts(canonical) else {
        return vec![];
    };
    starts
        .iter()
        .filter(|&&k| matches!(b.get(k), Some(Token::Word(w)) if literal(w).as_deref() == Some("eval")))
        .filter_map(|&k| {
            b[k + 1..]
                .iter()
                .map_while(|t| match t {
                    Token::Word(w) => Some(literal(w)),
                    _ => None,
                })
                .collect::<Option<Vec<String>>>()
                .map(|w| w.join(" "))
        })
        .filter(|body| may_enable(body))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn set_options_that_turn_errexit_on() {
        for (c, want) in [
            ("    set -e;\n    false", Some("set -e")),
            ("    set -euo pipefail", Some("set -euo pipefail")),
            ("    set -o errexit", Some("set -o errexit")),
            ("    set -uo errexit", Some("set -uo errexit")),
            ("    ( set -e;\n    false )", Some("set -e")),
            ("    shopt -so errexit", Some("shopt -so errexit")),
            ("    set -x", None),
            ("    set -o pipefail", None),
            ("    set +e", None),
            ("    set -- -e", None),
            ("    echo set -e", None),
            ("    bash -c 'set -e; false'", None),
        ] {
            assert_eq!(enabled_by(c).as_deref(), want, "{c:?}");
        }
    }

    #[test]
    fn a_payload_before_and_and_ignores_errexit() {
        assert!(ignored_by(&format!(
            "    source /s && eval {MARK} < /dev/null && pwd -P >| /tmp/x"
        ))
        .is_some());
        assert!(ignored_by(&format!("    source /s && eval {MARK}")).is_none());
        assert!(ignored_by(&format!("    ( trap 'x' EXIT;\n    {MARK} );\n    exit $?")).is_none());
    }
}
