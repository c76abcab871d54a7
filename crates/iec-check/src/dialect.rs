//! Bash constructs that dash parses without a syntax error but runs differently. `dash -n`
//! (real) catches what dash cannot parse; this table covers what it parses into another
//! meaning. It is a model (dash has no canonical printer), marked `emulated` in reports.

use crate::classify::invoked_programs;
use iec_core::Mechanism;

/// A construct with another meaning under dash.
pub struct Dialect {
    /// The construct as written.
    pub construct: &'static str,
    /// What dash does with it.
    pub effect: &'static str,
    /// The mechanism.
    pub mechanism: Mechanism,
    /// True when dash runs it without an error message.
    pub silent: bool,
}

const COMMANDS: &[(&str, &str)] = &[
    ("[[", "`[[: not found`"),
    ("source", "`source: not found` (dash has only `.`)"),
    ("function", "`function: not found`"),
    ("declare", "`declare: not found`"),
    ("typeset", "`typeset: not found`"),
    ("let", "`let: not found`"),
    ("shopt", "`shopt: not found`"),
    ("mapfile", "`mapfile: not found`"),
    ("readarray", "`readarray: not found`"),
    ("pushd", "`pushd: not found`"),
    ("popd", "`popd: not found`"),
];

/// Scans unquoted text (outside '…'; "…" keeps `$` live) for bash-only constructs.
pub fn bash_only(text: &str) -> Option<Dialect> {
    let b = text.as_bytes();
    let (mut sq, mut dq) = (false, false);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if !text.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &text[i..];
        if sq {
            if c == b'\'' {
                sq = false;
            }
            i += 1;
            continue;
        }
        match c {
            b'\\' => {
                i += 2;
                continue;
            }
            b'\'' if !dq => sq = true,
            b'"' => dq = !dq,
            b'$' if !dq && rest.starts_with("$'") => {
                return Some(Dialect {
                    construct: "$'…'",
                    effect: "a `$` followed by a single-quoted string: ANSI-C escapes are not decoded",
                    mechanism: Mechanism::Other,
                    silent: true,
                });
            }
            b'$' if rest.starts_with("${") => {
                let end = rest.find('}').unwrap_or(rest.len());
                let inner = &rest[2..end];
                let bad = inner.starts_with('!')
                    || inner.contains("//")
                    || inner.contains('^')
                    || inner.contains(",,")
                    || inner.contains('@')
                    || inner.split_once(':').is_some_and(|(_, r)| {
                        r.starts_with(|c: char| c.is_ascii_digit() || c == ' ' || c == '$')
                    });
                if bad {
                    return Some(Dialect {
                        construct: "${…} bash expansion",
                        effect: "`Bad substitution` at run time",
                        mechanism: Mechanism::Other,
                        silent: false,
                    });
                }
            }
            b'$' if [
                "$RANDOM",
                "$BASHPID",
                "$EPOCHSECONDS",
                "$BASH_VERSION",
                "$SECONDS",
            ]
            .iter()
            .any(|v| rest.starts_with(v)) =>
            {
                return Some(Dialect {
                    construct: "bash-only variable",
                    effect: "expands to the empty string",
                    mechanism: Mechanism::ReExpansion,
                    silent: true,
                });
            }
            b'{' if !dq => {
                if let Some(end) = rest.find('}') {
                    let inner = &rest[1..end];
                    if !inner.contains([' ', '\t', '\n', ';', '$'])
                        && (inner.contains(',') || inner.contains(".."))
                        && end > 1
                    {
                        return Some(Dialect {
                            construct: "{a,b} brace expansion",
                            effect: "the braces stay literal: one word instead of several",
                            mechanism: Mechanism::ArityChange,
                            silent: true,
                        });
                    }
                }
            }
            b'&' if !dq && rest.starts_with("&>") => {
                return Some(Dialect {
                    construct: "&>",
                    effect: "runs the command in the background and truncates the file with `>`",
                    mechanism: Mechanism::Other,
                    silent: true,
                });
            }
            b'[' if !dq && rest.starts_with("[^") => {
                return Some(Dialect {
                    construct: "[^…] in a pattern",
                    effect: "dash reads `^` as one of the bracket's characters, not as negation (`[!…]` negates in both)",
                    mechanism: Mechanism::Other,
                    silent: true,
                });
            }
            b'.' if !dq
                && (i == 0 || b" \t\n;|&(<>".contains(&b[i - 1]))
                && rest[1..].starts_with(['*', '?', '[']) =>
            {
                return Some(Dialect {
                    construct: "pattern starting with `.`",
                    effect:
                        "dash matches `.` and `..` too (`.?` is `..` in every directory); bash 5.2 skips them",
                    mechanism: Mechanism::ReExpansion,
                    silent: true,
                });
            }
            _ => {}
        }
        i += 1;
    }
    for p in invoked_programs(text) {
        if let Some((_, effect)) = COMMANDS.iter().find(|(c, _)| *c == p) {
            return Some(Dialect {
                construct: "bash-only command",
                effect,
                mechanism: Mechanism::Other,
                silent: false,
            });
        }
        if p == "echo" && (text.contains("echo -e") || text.contains("echo -n")) {
            return Some(Dialect {
                construct: "echo -e / -n",
                effect: "dash's echo interprets backslash escapes always; -e is printed",
                mechanism: Mechanism::Other,
                silent: true,
            });
        }
    }
    if text.contains("((") && !text.contains("$((") {
        return Some(Dialect {
            construct: "((…)) arithmetic command",
            effect: "parsed as nested subshells running a command",
            mechanism: Mechanism::Other,
            silent: false,
        });
    }
    if text.contains("[ ") && text.contains(" == ") {
        return Some(Dialect {
            construct: "== in [ ]",
            effect: "`[: unexpected operator`",
            mechanism: Mechanism::Other,
            silent: false,
        });
    }
    None
}

#[cfg(test)]
mod tests {
    use super::bash_only;

    #[test]
    fn constructs() {
        for t in [
            "echo $'a\\nb'",
            "echo {a,b}",
            "echo {1..3}",
            "[[ -n x ]]",
            "cmd &> f",
            "echo ${x//a/b}",
            "source f",
            "echo -e 'a\\tb'",
            "ls .?",
            "rm -rf .*",
            "x=b; echo ${x#[^a]}",
            "case b in [^a]) echo y;; esac",
        ] {
            assert!(bash_only(t).is_some(), "{t}");
        }
        for t in [
            "echo 'a b'",
            "echo \"$x\"",
            "echo '{a,b}'",
            "find . -exec rm {} \\;",
            "echo ${x:-y}",
            "x=$((1+2))",
            "ls ./x",
            "echo '.?' a.? \".*\"",
            "case b in [!a]) echo y;; esac",
        ] {
            assert!(bash_only(t).is_none(), "{t}");
        }
    }
}
