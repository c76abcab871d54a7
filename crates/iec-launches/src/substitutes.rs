//! Program substitution tables (`crates/iec-launches/launches/substitutes/*.toml`): for a harness whose shell
//! snapshot runs another program in place of the one a call names (Claude Code 2.1.332's `grep`
//! and `find` functions), how the substitute is started and, row by row, for which options and
//! operands it behaves as the named program and for which it does not. A launch names its table
//! in `[snapshot] substitutes`. Every row carries a fixture and commands that show its claim
//! with the real programs (crates/iec-harness/tests/substitution.rs).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// The built-in tables, by id.
const BUILTIN: &[(&str, &str)] = &[
    (
        "claude-code-2.1.332",
        include_str!("../launches/substitutes/claude-code-2.1.332.toml"),
    ),
    (
        "claude-code-2.1.190",
        include_str!("../launches/substitutes/claude-code-2.1.190.toml"),
    ),
    (
        "claude-code-2.1.162",
        include_str!("../launches/substitutes/claude-code-2.1.162.toml"),
    ),
];

/// One table.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Table {
    /// Its id (the file's name without `.toml`).
    pub id: String,
    /// Where its programs' definitions were read.
    pub source: String,
    /// Another built-in table whose rows this one takes (a snapshot whose functions differ from
    /// that table's in a few ways): its rows, less those named in `exclude`, with each of this
    /// table's own rows replacing the taken row of the same id or added after them. Resolved
    /// when the table is loaded; a loaded table's `rows` are the whole set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rows_from: Option<String>,
    /// Rows of `rows_from` left out, each with the reason.
    #[serde(default, rename = "exclude", skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<Excluded>,
    /// The substituted programs (never taken from `rows_from`: they are this snapshot's).
    #[serde(rename = "program")]
    pub programs: Vec<Program>,
    /// The behaviour rows.
    #[serde(default, rename = "row")]
    pub rows: Vec<Row>,
}

/// A row of the `rows_from` table that does not hold for this table's programs.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Excluded {
    /// The row's id.
    pub id: String,
    /// Why it is left out.
    pub reason: String,
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
                .map(|(id, _)| {
                    let t = Table::load(id, 0)
                        .unwrap_or_else(|e| panic!("built-in substitution table {id}: {e}"));
                    (*id, t)
                })
                .collect()
        });
        tables.iter().find(|(name, _)| *name == id).map(|(_, t)| t)
    }

    /// Parses the built-in table `id` and resolves its `rows_from` (at most 4 deep).
    fn load(id: &str, depth: usize) -> Result<Table, String> {
        let text = BUILTIN
            .iter()
            .find(|(name, _)| *name == id)
            .map(|(_, t)| *t)
            .ok_or_else(|| format!("no built-in substitution table {id:?}"))?;
        let mut t: Table = toml::from_str(text).map_err(|e| e.to_string())?;
        let Some(from) = t.rows_from.clone() else {
            if !t.excluded.is_empty() {
                return Err("`exclude` without `rows_from`".into());
            }
            return Ok(t);
        };
        if depth >= 4 {
            return Err(format!("rows_from {from:?}: more than 4 tables deep"));
        }
        let base = Table::load(&from, depth + 1).map_err(|e| format!("rows_from {from:?}: {e}"))?;
        for x in &t.excluded {
            if !base.rows.iter().any(|r| r.id == x.id) {
                return Err(format!("exclude names {:?}, which {from} has no row of", x.id));
            }
        }
        let own = std::mem::take(&mut t.rows);
        let rows = merge_rows(base.rows, own, &t.excluded);
        t.rows = rows;
        Ok(t)
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

/// A substitute as the harness's own shell function starts it, read from the function's text as
/// `declare -f NAME` prints it (the learner runs that through the harness).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeenFunction {
    /// The function's name (`grep`).
    pub name: String,
    /// The `argv[0]` its `exec -a` gives the started binary (`ugrep`).
    pub argv0: String,
    /// The words it puts before the call's own.
    pub prefix: Vec<String>,
    /// The `case` patterns that make it run the real program instead.
    pub passthrough: Vec<String>,
}

/// Reads the substitute that function `name` starts from its `declare -f` text: every `exec -a
/// ARGV0 BINARY WORD… "$@"` line in it must give the same `argv[0]` and words, each a plain word
/// (no quote, `$`, backslash or glob), and a `case` over the call's words (`for x in "$@"`) gives
/// the passthrough patterns. `None` when the text has no such line or anything is not plain:
/// the learner then names no table, and every call of the name stays "diverges".
pub fn read_function(name: &str, text: &str) -> Option<SeenFunction> {
    let mut started: Option<(String, Vec<String>)> = None;
    for line in text.lines() {
        let Some(at) = line.find("exec -a ") else { continue };
        let mut words = line[at + "exec -a ".len()..].split_whitespace();
        let argv0 = plain_word(words.next()?)?;
        words.next()?; // the binary: a path or "$_cc_bin", which differs per install
        let mut prefix = Vec::new();
        loop {
            let w = words.next()?.trim_end_matches(';');
            if w == "\"$@\"" || w == "${1+\"$@\"}" {
                break;
            }
            prefix.push(plain_word(w)?);
        }
        if words.any(|w| !matches!(w, ")" | ");" | ";")) {
            return None;
        }
        match &started {
            Some(s) if *s != (argv0.clone(), prefix.clone()) => return None,
            _ => started = Some((argv0, prefix)),
        }
    }
    let (argv0, prefix) = started?;
    Some(SeenFunction {
        name: name.to_string(),
        argv0,
        prefix,
        passthrough: read_passthrough(text)?,
    })
}

/// The patterns of the function's one `case` over the call's words (none without a `case`).
fn read_passthrough(text: &str) -> Option<Vec<String>> {
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let cases: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("case ") && lines[i].ends_with(" in"))
        .collect();
    match cases[..] {
        [] => Some(Vec::new()),
        [i] => {
            let over_words = lines[..i].iter().any(|l| {
                l.starts_with("for ") && (l.ends_with(" in \"$@\";") || l.ends_with(" in ${1+\"$@\"};"))
            });
            let pats = lines.get(i + 1)?.strip_suffix(')')?;
            if !over_words || pats.contains(['(', '"', '\'', '$', '\\']) {
                return None;
            }
            Some(pats.split('|').map(|p| p.trim().to_string()).collect())
        }
        _ => None,
    }
}

/// `w` when it is a plain word (the same after quote removal and without expansion).
fn plain_word(w: &str) -> Option<String> {
    let plain = !w.is_empty()
        && w.chars().all(|c| {
            c.is_ascii_alphanumeric()
                || matches!(c, '-' | '_' | '=' | '.' | ',' | '/' | ':' | '+' | '@' | '%')
        });
    plain.then(|| w.to_string())
}

impl Table {
    /// Whether `seen` (the functions of a harness's shell) start this table's programs: each
    /// of its programs is among them with the same `argv[0]`, words and passthrough patterns.
    pub fn describes(&self, seen: &[SeenFunction]) -> bool {
        self.programs.iter().all(|p| {
            seen.iter().any(|f| {
                f.name == p.name
                    && f.argv0 == p.argv0
                    && f.prefix == p.prefix
                    && f.passthrough == p.passthrough
            })
        })
    }

    /// The built-in tables that describe `seen`, by id.
    pub fn describing(seen: &[SeenFunction]) -> Vec<&'static str> {
        Table::builtin_ids()
            .into_iter()
            .filter(|id| Table::builtin_ref(id).is_some_and(|t| t.describes(seen)))
            .collect()
    }
}

/// The rows of a `rows_from` table: `base`'s, less `excluded`, each replaced by the row of `own`
/// with its id; then `own`'s other rows.
fn merge_rows(base: Vec<Row>, own: Vec<Row>, excluded: &[Excluded]) -> Vec<Row> {
    let mut rows: Vec<Row> = Vec::new();
    for r in base {
        if excluded.iter().any(|x| x.id == r.id) {
            continue;
        }
        match own.iter().find(|o| o.id == r.id) {
            Some(o) => rows.push(o.clone()),
            None => rows.push(r),
        }
    }
    for o in own {
        if !rows.iter().any(|r| r.id == o.id) {
            rows.push(o);
        }
    }
    rows
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
    fn rows_from_takes_the_other_tables_rows_with_overrides() {
        let base = Table::builtin("claude-code-2.1.332").unwrap();
        let t = Table::builtin("claude-code-2.1.162").unwrap();
        assert_eq!(t.rows_from.as_deref(), Some("claude-code-2.1.332"));
        // Every row of 2.1.332, one replaced, one added.
        assert_eq!(t.rows.len(), base.rows.len() + 1);
        let pass = t.rows.iter().find(|r| r.id == "grep-passthrough").unwrap();
        assert!(pass.options.is_empty(), "{pass:?}");
        assert_eq!(t.option_row("grep", "Z").unwrap().id, "grep-null-fuzzy");
        assert_eq!(t.option_row("grep", "Z").unwrap().claim, Claim::Differs);
        assert_eq!(base.option_row("grep", "Z").unwrap().id, "grep-passthrough");
        assert!(t.option_row("grep", "null").is_none());
        assert_eq!(t.option_row("grep", "n").unwrap().id, "grep-one-input");
        // Programs are the table's own.
        assert!(!t
            .program("grep")
            .unwrap()
            .prefix
            .iter()
            .any(|a| a == "--encoding=UTF-8"));
        let b = Table::builtin("claude-code-2.1.190").unwrap();
        assert_eq!(b.rows.len(), base.rows.len());
        assert_eq!(
            b.program("grep").unwrap().passthrough,
            base.program("grep").unwrap().passthrough
        );
    }

    #[test]
    fn merge_rows_excludes_replaces_and_adds() {
        let base = Table::builtin("claude-code-2.1.332").unwrap().rows;
        let row = |id: &str, note: &str| {
            let mut r = base[0].clone();
            r.id = id.into();
            r.note = note.into();
            r
        };
        let b = vec![row("a", "base a"), row("b", "base b"), row("c", "base c")];
        let own = vec![row("d", "own d"), row("b", "own b")];
        let ex = [Excluded {
            id: "c".into(),
            reason: "does not hold".into(),
        }];
        let m = merge_rows(b, own, &ex);
        let got: Vec<(&str, &str)> = m.iter().map(|r| (r.id.as_str(), r.note.as_str())).collect();
        assert_eq!(got, [("a", "base a"), ("b", "own b"), ("d", "own d")]);
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

    /// `declare -f grep find rg` as real Claude Code snapshots print it (read through each
    /// harness, 2026-12-07; install paths replaced by neutral ones).
    fn functions(version: &str) -> Vec<SeenFunction> {
        let text = match version {
            "2.1.162" => include_str!("../tests/data/snapshot-functions/claude-code-2.1.162.txt"),
            "2.1.185" => include_str!("../tests/data/snapshot-functions/claude-code-2.1.185.txt"),
            "2.1.186" => include_str!("../tests/data/snapshot-functions/claude-code-2.1.186.txt"),
            "2.1.325" => include_str!("../tests/data/snapshot-functions/claude-code-2.1.325.txt"),
            "2.1.332" => include_str!("../tests/data/snapshot-functions/claude-code-2.1.332.txt"),
            _ => unreachable!(),
        };
        // `declare -f a b c` prints the functions one after the other, each from `NAME () `.
        let mut out = Vec::new();
        let mut parts: Vec<(String, String)> = Vec::new();
        for line in text.lines() {
            match line.strip_suffix(" () ").or_else(|| line.strip_suffix(" ()")) {
                Some(name) if !name.starts_with(' ') => parts.push((name.to_string(), String::new())),
                _ => parts.last_mut().unwrap().1.push_str(&format!("{line}\n")),
            }
        }
        for (name, body) in parts {
            if let Some(f) = read_function(&name, &body) {
                out.push(f);
            }
        }
        out
    }

    #[test]
    fn each_real_snapshot_is_described_by_its_own_table_only() {
        for (version, table) in [
            ("2.1.162", "claude-code-2.1.162"),
            ("2.1.185", "claude-code-2.1.162"),
            ("2.1.186", "claude-code-2.1.190"),
            ("2.1.325", "claude-code-2.1.190"),
            ("2.1.332", "claude-code-2.1.332"),
        ] {
            let seen = functions(version);
            let names: Vec<&str> = seen.iter().map(|f| f.name.as_str()).collect();
            assert_eq!(names, ["grep", "find", "rg"], "{version}");
            assert_eq!(Table::describing(&seen), [table], "{version}");
        }
    }

    #[test]
    fn the_2_1_332_grep_function_reads_as_ugrep_with_its_words_and_passthrough() {
        let grep = &functions("2.1.332")[0];
        assert_eq!(grep.argv0, "ugrep");
        assert_eq!(
            grep.prefix[..5],
            ["-G", "--ignore-files", "--hidden", "-I", "--encoding=UTF-8"]
        );
        assert_eq!(grep.passthrough.len(), 12);
        assert_eq!(
            grep.passthrough[8..],
            ["-[Zz]*", "-[!-]*[Zz]*", "--null", "--null-data"]
        );
        let rg = &functions("2.1.332")[2];
        assert_eq!(
            (rg.argv0.as_str(), rg.prefix.len(), rg.passthrough.len()),
            ("rg", 0, 0)
        );
    }

    #[test]
    fn a_function_changed_in_one_word_is_described_by_no_table() {
        let text = include_str!("../tests/data/snapshot-functions/claude-code-2.1.332.txt");
        for (from, to) in [
            ("--encoding=UTF-8 ", "--encoding=UTF-16 "),
            (" | --null-data)", ")"),
            ("-S dfs ", "-S bfs "),
            ("exec -a bfs", "exec -a find"),
        ] {
            // Every occurrence changed: the function still reads, as another substitute.
            let changed = text.replace(from, to);
            assert_ne!(changed, text, "{from}");
            let seen: Vec<SeenFunction> = ["grep", "find"]
                .iter()
                .map(|n| {
                    let body = changed.split(&format!("{n} () ")).nth(1).unwrap();
                    read_function(n, body.split("\n}\n").next().unwrap()).unwrap()
                })
                .collect();
            assert_eq!(Table::describing(&seen), Vec::<&str>::new(), "{from} -> {to}");
        }
    }

    #[test]
    fn a_function_whose_words_are_not_plain_or_agree_not_is_not_read() {
        let ok = "( exec -a ugrep \"$b\" -G ${1+\"$@\"} );\n";
        assert_eq!(
            read_function("grep", ok).map(|f| f.prefix),
            Some(vec!["-G".to_string()])
        );
        for bad in [
            "( exec -a ugrep \"$b\" -G \"$x\" ${1+\"$@\"} );\n",
            "( exec -a ugrep \"$b\" -G ${1+\"$@\"} | cat );\n",
            "( exec -a ugrep \"$b\" -G );\n",
            "( exec -a ugrep \"$b\" -G ${1+\"$@\"} );\n( exec -a ugrep \"$b\" -E ${1+\"$@\"} );\n",
            "case \"$a\" in\n-x)\n;;\nesac\n( exec -a ugrep \"$b\" -G ${1+\"$@\"} );\n",
            "command grep \"$@\"\n",
        ] {
            assert_eq!(read_function("grep", bad), None, "{bad}");
        }
    }
}
