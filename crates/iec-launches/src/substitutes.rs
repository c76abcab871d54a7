//! Program substitution tables (`crates/iec-launches/launches/substitutes/*.toml`): for a harness whose shell
//! snapshot runs another program in place of the one a call names (Claude Code 2.1.332's `grep`
//! and `find` functions), how the substitute is started and, row by row, for which options and
//! operands it behaves as the named program and for which it does not. A launch names its table
//! in `[snapshot] substitutes`. Every row carries a fixture and commands that show its claim
//! with the real programs (crates/iec-harness/tests/substitution.rs).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The built-in tables, by id.
const BUILTIN: &[(&str, &str)] = &[(
    "claude-code-2.1.332",
    include_str!("../launches/substitutes/claude-code-2.1.332.toml"),
)];

/// One table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// Its id (the file's name without `.toml`).
    pub id: String,
    /// Where its programs' definitions were read.
    pub source: String,
    /// The substituted programs.
    #[serde(rename = "program")]
    pub programs: Vec<Program>,
    /// The behaviour rows.
    #[serde(rename = "row")]
    pub rows: Vec<Row>,
}

/// How the harness runs a substitute for a named program.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Program {
    /// The name the call uses (`grep`).
    pub name: String,
    /// What runs instead, in words (`ugrep 7.8.4 embedded in the claude binary`).
    pub runs: String,
    /// The `argv[0]` the function gives the harness binary (`exec -a ugrep`).
    pub argv0: String,
    /// The arguments the function puts before the call's own.
    pub prefix: Vec<String>,
    /// bash `case` patterns: a call word matching one makes the function run the real program.
    #[serde(default)]
    pub passthrough: Vec<String>,
    /// Short options (letters) that take an argument.
    #[serde(default)]
    pub short_with_arg: String,
    /// Long options (without `--`) that take an argument.
    #[serde(default)]
    pub long_with_arg: Vec<String>,
    /// find primaries that take one argument.
    #[serde(default)]
    pub primaries_with_arg: Vec<String>,
}

/// Whether the substitute behaves as the named program under a row.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Claim {
    /// The same output, status and files.
    Same,
    /// Something differs.
    Differs,
}

/// One behaviour row.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Its id (`grep-recursive`), shown in reports.
    pub id: String,
    /// The program it is about.
    pub program: String,
    /// Its claim.
    pub claim: Claim,
    /// The condition the checker tests: `option` (one of `options` is used), `one-input`,
    /// `passthrough`, `several-files`, `backreference`, `regex-edge`, `empty-match`,
    /// `empty-group`, `escape` (one of `escapes` follows a backslash), `line-end`,
    /// `invert-with`, `max-count-context`, `directory-operand`, `binary-input`,
    /// `order-insensitive`, `ordered-output`, `no-output`.
    pub when: String,
    /// What it says, in words.
    pub note: String,
    /// The options it covers (short letters, long names without `--`, find primaries).
    #[serde(default)]
    pub options: Vec<String>,
    /// The characters it covers after a backslash in a regular expression (`\w`, `\d`, …).
    #[serde(default)]
    pub escapes: String,
    /// Standard input of its commands (default: empty).
    #[serde(default)]
    pub stdin: String,
    /// Shell commands that show the claim, each run with the real and the substitute program.
    pub commands: Vec<String>,
    /// The files the commands run among (path → content).
    #[serde(default)]
    pub fixture: BTreeMap<String, String>,
}

impl Table {
    /// The built-in table `id`.
    pub fn builtin(id: &str) -> Option<Table> {
        Table::builtin_ref(id).cloned()
    }

    /// The built-in table `id`, parsed once per process (the program hop of every check on a
    /// launch with a snapshot asks for it; parsing its TOML took half of `iec scan`'s time).
    pub fn builtin_ref(id: &str) -> Option<&'static Table> {
        static TABLES: std::sync::OnceLock<Vec<(&str, Table)>> = std::sync::OnceLock::new();
        let tables = TABLES.get_or_init(|| {
            BUILTIN
                .iter()
                .map(|(id, text)| {
                    let t = toml::from_str(text)
                        .unwrap_or_else(|e| panic!("built-in substitution table {id}: {e}"));
                    (*id, t)
                })
                .collect()
        });
        tables.iter().find(|(name, _)| *name == id).map(|(_, t)| t)
    }

    /// The ids of the built-in tables.
    pub fn builtin_ids() -> Vec<&'static str> {
        BUILTIN.iter().map(|(id, _)| *id).collect()
    }

    /// The program named `name`.
    pub fn program(&self, name: &str) -> Option<&Program> {
        self.programs.iter().find(|p| p.name == name)
    }

    /// The rows of `program` with condition `when`.
    pub fn rows_when<'a>(&'a self, program: &'a str, when: &'a str) -> impl Iterator<Item = &'a Row> + 'a {
        self.rows
            .iter()
            .filter(move |r| r.program == program && r.when == when)
    }

    /// The row of `program` that covers the escape `\c`.
    pub fn escape_row(&self, program: &str, c: char) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.program == program && r.escapes.contains(c))
    }

    /// The row of `program` that covers `option`.
    pub fn option_row(&self, program: &str, option: &str) -> Option<&Row> {
        self.rows
            .iter()
            .find(|r| r.program == program && r.options.iter().any(|o| o == option))
    }
}

/// Whether `word` matches the bash `case` pattern `pat` (`*`, `?`, `[…]`, `[!…]`; no extglob).
pub fn case_match(pat: &str, word: &str) -> bool {
    fn m(p: &[char], w: &[char]) -> bool {
        match p.first() {
            None => w.is_empty(),
            Some('*') => (0..=w.len()).any(|i| m(&p[1..], &w[i..])),
            Some('?') => !w.is_empty() && m(&p[1..], &w[1..]),
            Some('[') => {
                let Some(c) = w.first() else { return false };
                let mut i = 1;
                let negate = matches!(p.get(1), Some('!') | Some('^'));
                if negate {
                    i += 1;
                }
                let start = i;
                let mut hit = false;
                while i < p.len() && (p[i] != ']' || i == start) {
                    if p.get(i + 1) == Some(&'-') && p.get(i + 2).is_some_and(|e| *e != ']') {
                        hit |= p[i] <= *c && *c <= p[i + 2];
                        i += 3;
                    } else {
                        hit |= p[i] == *c;
                        i += 1;
                    }
                }
                if i >= p.len() {
                    // No closing bracket: `[` is literal.
                    return *c == '[' && m(&p[1..], &w[1..]);
                }
                hit != negate && m(&p[i + 1..], &w[1..])
            }
            Some('\\') if p.len() > 1 => w.first() == Some(&p[1]) && m(&p[2..], &w[1..]),
            Some(c) => w.first() == Some(c) && m(&p[1..], &w[1..]),
        }
    }
    let p: Vec<char> = pat.chars().collect();
    let w: Vec<char> = word.chars().collect();
    m(&p, &w)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtin_table_loads_and_every_option_has_one_row() {
        for id in Table::builtin_ids() {
            let t = Table::builtin(id).unwrap();
            assert_eq!(t.id, id);
            for r in &t.rows {
                assert!(t.program(&r.program).is_some(), "{}", r.id);
                assert!(!r.commands.is_empty(), "{}", r.id);
                for c in r.escapes.chars() {
                    let owners = t
                        .rows
                        .iter()
                        .filter(|x| x.program == r.program && x.escapes.contains(c))
                        .count();
                    assert_eq!(owners, 1, "escape \\{c} of {}", r.program);
                }
                for o in &r.options {
                    let owners: Vec<&str> = t
                        .rows
                        .iter()
                        .filter(|x| x.program == r.program && x.options.contains(o))
                        .map(|x| x.id.as_str())
                        .collect();
                    assert_eq!(
                        owners.len(),
                        1,
                        "option {o} of {} is in rows {owners:?}",
                        r.program
                    );
                }
            }
        }
    }

    #[test]
    fn case_patterns() {
        assert!(case_match("-[!-]*[Zz]*", "-rlZ"));
        assert!(case_match("-[!-]*[Zz]*", "-size"));
        assert!(!case_match("-[!-]*[Zz]*", "--null"));
        assert!(case_match("-[Zz]*", "-Z"));
        assert!(case_match("-*-filter*", "--filter=x"));
        assert!(!case_match("-*-filter*", "-filter"));
        assert!(case_match("---*", "---x"));
        assert!(!case_match("-[Zz]*", "-c"));
        assert!(case_match("a?c", "abc"));
    }
}
