//! Program substitution judged by behaviour. A harness's shell snapshot may define functions
//! in place of programs (Claude Code 2.1.332 runs `grep` and `find` as functions calling the
//! ugrep and bfs embedded in its binary). Every command that calls such a function is reported;
//! whether it changes the action is read from the launch's substitution table
//! (`launches/substitutes/*.toml`, see [`iec_launches::substitutes`]), whose rows say for which
//! options and operands the substitute behaves as the named program, each row shown with the
//! real programs on a fixture.
//!
//! The verdict of one command: `differs` when a `differs` row applies to its static words;
//! `unknown` when one of its words is known only at run time or an option is in no row; `same`
//! when only `same` rows apply. Rows that depend on input the call does not show (a binary
//! file) are listed as caveats and do not decide it.

use crate::action::{Seg, Token};
use iec_core::Substitution;
use iec_launches::substitutes::{case_match, Claim, Program, Table};

/// One simple command the text runs, as bash would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its words (the command name first).
    pub words: Vec<Vec<Seg>>,
    /// Its standard output goes to a file (`>`, `1>`, `&>`, …).
    pub stdout_redirected: bool,
    /// The words of the next command of its pipeline, when its output is piped.
    pub piped_to: Option<Vec<Vec<Seg>>>,
}

/// The simple commands of an action (not looking into command substitutions), and the
/// command substitutions' texts found in their words.
pub fn commands(tokens: &[Token]) -> (Vec<Command>, Vec<String>) {
    let mut out: Vec<Command> = Vec::new();
    let mut inner = Vec::new();
    let mut cur = Command {
        words: vec![],
        stdout_redirected: false,
        piped_to: None,
    };
    // After `for`/`select`/`case`, the words up to the next operator are not a command.
    let mut not_a_command = false;
    let mut pipe_from: Option<usize> = None;
    let mut i = 0;
    let finish = |cur: &mut Command, out: &mut Vec<Command>, pipe_from: &mut Option<usize>, nac: bool| {
        let c = std::mem::replace(
            cur,
            Command {
                words: vec![],
                stdout_redirected: false,
                piped_to: None,
            },
        );
        if c.words.is_empty() || nac {
            *pipe_from = None;
            return None;
        }
        if let Some(p) = pipe_from.take() {
            out[p].piped_to = Some(c.words.clone());
        }
        out.push(c);
        Some(out.len() - 1)
    };
    while i < tokens.len() {
        match &tokens[i] {
            Token::Op(op) => {
                let idx = finish(&mut cur, &mut out, &mut pipe_from, not_a_command);
                not_a_command = false;
                if op == "|" || op == "|&" {
                    pipe_from = idx;
                }
            }
            Token::Reserved(r) => {
                if cur.words.is_empty() {
                    if matches!(r.as_str(), "for" | "select" | "case" | "function" | "coproc") {
                        not_a_command = true;
                    }
                } else {
                    finish(&mut cur, &mut out, &mut pipe_from, not_a_command);
                    not_a_command = false;
                }
            }
            Token::Redirect(r) => {
                if r.starts_with("1>") || r.starts_with("&>") {
                    cur.stdout_redirected = true;
                }
                // The target word.
                if let Some(Token::Word(w)) = tokens.get(i + 1) {
                    inner.extend(substitutions_in(w));
                    i += 1;
                }
            }
            Token::Assign(_, v) => inner.extend(substitutions_in(v)),
            Token::Word(w) => {
                inner.extend(substitutions_in(w));
                cur.words.push(w.clone());
            }
            Token::Raw(_) => {}
        }
        i += 1;
    }
    finish(&mut cur, &mut out, &mut pipe_from, not_a_command);
    (out, inner)
}

/// The command texts of the command and process substitutions in a word.
fn substitutions_in(word: &[Seg]) -> Vec<String> {
    word.iter()
        .filter_map(|s| match s {
            Seg::Dyn(d, _) => {
                if d.starts_with("$((") {
                    None
                } else if let Some(rest) = d
                    .strip_prefix("$(")
                    .or(d.strip_prefix("<("))
                    .or(d.strip_prefix(">("))
                {
                    rest.strip_suffix(')').map(str::to_string)
                } else {
                    d.strip_prefix('`')
                        .and_then(|r| r.strip_suffix('`'))
                        .map(str::to_string)
                }
            }
            Seg::Lit(_) => None,
        })
        .collect()
}

/// A word's value, when it is static.
fn literal(word: &[Seg]) -> Option<String> {
    word.iter()
        .map(|s| match s {
            Seg::Lit(v) => Some(v.as_str()),
            Seg::Dyn(..) => None,
        })
        .collect()
}

/// A word as bash would pass it, expansions kept as written.
fn shown(word: &[Seg]) -> String {
    word.iter()
        .map(|s| match s {
            Seg::Lit(v) => v.clone(),
            Seg::Dyn(d, _) => d.clone(),
        })
        .collect()
}

/// The program a command calls by name (a function is found only under its plain name:
/// `/usr/bin/grep` runs the file, `command grep`, `env grep`, `xargs grep` the program).
pub fn called_name(c: &Command) -> Option<String> {
    let first = literal(c.words.first()?)?;
    (!first.contains('/')).then_some(first)
}

/// The substitution report of command `c`, which calls `name`, a program the snapshot shadows.
pub fn judge(table: Option<&Table>, name: &str, c: &Command, note: &str) -> Substitution {
    let words: Vec<String> = c.words.iter().map(|w| shown(w)).collect();
    let program = table.and_then(|t| t.program(name).map(|p| (t, p)));
    let Some((table, program)) = program else {
        return Substitution {
            named: name.into(),
            runs: format!("the snapshot's function `{name}`"),
            words,
            behaviour: "differs".into(),
            rows: vec![],
            caveats: vec![],
            detail: format!(
                "`{name}` runs the snapshot's shell function, not the program the call names, and no table row \
                 says where it behaves alike: {note}"
            ),
        };
    };
    let args: Vec<Option<String>> = c.words[1..].iter().map(|w| literal(w)).collect();
    let mut j = Judgement::default();
    // The function hands the call to the real program when any word matches a pattern.
    let passthrough = args.iter().flatten().find_map(|w| {
        program
            .passthrough
            .iter()
            .find(|p| case_match(p, w))
            .map(|p| (w.clone(), p.clone()))
    });
    if let Some((w, p)) = passthrough {
        j.rows
            .extend(table.rows_when(name, "passthrough").map(|r| r.id.clone()));
        return j.into_report(
            name,
            name.to_string() + " (the real program: the snapshot's function hands this call to it)",
            words,
            format!("the word `{w}` matches the function's pattern `{p}`, so it runs `command {name}`"),
        );
    }
    if let Some(i) = args.iter().position(Option::is_none) {
        j.unknown.push(format!(
            "the word `{}` is known only at run time, so whether the substitute behaves as {name} cannot be told",
            words[i + 1]
        ));
    } else {
        let args: Vec<String> = args.into_iter().flatten().collect();
        match name {
            "grep" => grep(table, program, &args, &mut j),
            "find" => find(table, program, &args, c, &mut j),
            _ => j
                .unknown
                .push(format!("the table has no reading of {name}'s arguments")),
        }
    }
    j.into_report(name, program.runs.clone(), words, String::new())
}

#[derive(Default)]
struct Judgement {
    rows: Vec<String>,
    caveats: Vec<String>,
    differs: Vec<String>,
    unknown: Vec<String>,
}

impl Judgement {
    fn row(&mut self, table: &Table, id: &str) {
        if let Some(r) = table.rows.iter().find(|r| r.id == id) {
            if !self.rows.contains(&r.id) {
                self.rows.push(r.id.clone());
            }
            if r.claim == Claim::Differs {
                let d = format!("{} ({})", r.note, r.id);
                if !self.differs.contains(&d) {
                    self.differs.push(d);
                }
            }
        }
    }

    fn when(&mut self, table: &Table, program: &str, when: &str) {
        let ids: Vec<String> = table.rows_when(program, when).map(|r| r.id.clone()).collect();
        for id in ids {
            self.row(table, &id);
        }
    }

    fn option(&mut self, table: &Table, program: &str, shown: &str, key: &str) {
        match table.option_row(program, key) {
            Some(r) => {
                let id = r.id.clone();
                self.row(table, &id)
            }
            None => self.unknown.push(format!(
                "`{shown}` is in no row of the substitution table, so whether the substitute treats it as {program} does is not shown"
            )),
        }
    }

    fn into_report(self, name: &str, runs: String, words: Vec<String>, detail: String) -> Substitution {
        let (behaviour, detail) = if !self.differs.is_empty() {
            ("differs", self.differs.join("; "))
        } else if !self.unknown.is_empty() {
            ("unknown", self.unknown.join("; "))
        } else if detail.is_empty() {
            (
                "same",
                format!("{runs} behaves as {name} for these options and operands"),
            )
        } else {
            ("same", detail)
        };
        Substitution {
            named: name.into(),
            runs,
            words,
            behaviour: behaviour.into(),
            rows: self.rows,
            caveats: self.caveats,
            detail,
        }
    }
}

fn grep(table: &Table, program: &Program, args: &[String], j: &mut Judgement) {
    let mut patterns: Vec<String> = Vec::new();
    let mut operands: Vec<String> = Vec::new();
    let mut fixed = false;
    let mut ere = false;
    let mut i = 0;
    let mut options_done = false;
    let mut option = |j: &mut Judgement, shown: &str, key: &str, value: Option<&str>| {
        match key {
            "F" | "fixed-strings" => fixed = true,
            "E" | "extended-regexp" => (ere, fixed) = (true, false),
            "G" | "basic-regexp" => (ere, fixed) = (false, false),
            _ => {}
        }
        // Values the rows do not show are not covered by them.
        let covered = match key {
            "d" | "directories" => value == Some("recurse"),
            "color" | "colour" => matches!(value, Some("never") | Some("auto")),
            _ => true,
        };
        if covered {
            j.option(table, "grep", shown, key);
        } else {
            j.unknown.push(format!(
                "`{shown}` with this value is in no row of the substitution table"
            ));
        }
    };
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if options_done || a == "-" || !a.starts_with('-') {
            operands.push(a.clone());
            continue;
        }
        if a == "--" {
            options_done = true;
            continue;
        }
        if let Some(long) = a.strip_prefix("--") {
            let (key, mut value) = match long.split_once('=') {
                Some((k, v)) => (k, Some(v.to_string())),
                None => (long, None),
            };
            if value.is_none() && program.long_with_arg.iter().any(|l| l == key) {
                value = args.get(i).cloned();
                i += 1;
            }
            if key == "regexp" {
                patterns.extend(value.clone());
            }
            option(j, a, key, value.as_deref());
            continue;
        }
        let cluster: Vec<char> = a[1..].chars().collect();
        for (k, c) in cluster.iter().enumerate() {
            let key = c.to_string();
            if program.short_with_arg.contains(*c) {
                let rest: String = cluster[k + 1..].iter().collect();
                let value = if rest.is_empty() {
                    i += 1;
                    args.get(i - 1).cloned()
                } else {
                    Some(rest)
                };
                if *c == 'e' {
                    patterns.extend(value.clone());
                }
                option(j, &format!("-{c}"), &key, value.as_deref());
                break;
            }
            option(j, &format!("-{c}"), &key, None);
        }
    }
    if patterns.is_empty() {
        if operands.is_empty() {
            j.unknown.push("the call names no pattern".into());
            return;
        }
        patterns.push(operands.remove(0));
    }
    if !fixed {
        for p in &patterns {
            if let Some(issue) = regex_issue(p, ere) {
                j.when(table, "grep", issue);
            }
        }
    }
    if operands.len() >= 2 {
        j.when(table, "grep", "several-files");
    }
    if j.differs.is_empty() && j.unknown.is_empty() {
        j.when(table, "grep", "one-input");
    }
    j.caveats
        .extend(table.rows_when("grep", "binary-input").map(|r| r.id.clone()));
}

/// What in a basic (`ere` false) or extended regular expression GNU grep and the substitute
/// read differently: `backreference` or `regex-edge` (a repetition of nothing, an empty
/// alternative, `{,n}`).
pub fn regex_issue(p: &str, ere: bool) -> Option<&'static str> {
    let c: Vec<char> = p.chars().collect();
    let mut i = 0;
    // Something a repetition can follow; the last token was a repetition.
    let mut atom = false;
    let mut repeated = false;
    while i < c.len() {
        let ch = c[i];
        let escaped = ch == '\\' && i + 1 < c.len();
        let op = if escaped { c[i + 1] } else { ch };
        i += if escaped { 2 } else { 1 };
        // Which operator it is in this syntax (BRE writes \( \) \| \{ \+ \?, ERE without \).
        let special = |x: char| {
            if ere {
                !escaped && matches!(x, '(' | ')' | '|' | '{' | '+' | '?' | '*')
            } else {
                (escaped && matches!(x, '(' | ')' | '|' | '{' | '+' | '?')) || (!escaped && x == '*')
            }
        };
        if escaped && op.is_ascii_digit() && op != '0' {
            return Some("backreference");
        }
        if !escaped && op == '[' {
            // A bracket expression: `]` first (after `^`) is literal, `[:…:]` classes inside.
            let mut k = i;
            if c.get(k) == Some(&'^') {
                k += 1;
            }
            if c.get(k) == Some(&']') {
                k += 1;
            }
            while k < c.len() && c[k] != ']' {
                if c[k] == '[' && matches!(c.get(k + 1), Some(':') | Some('.') | Some('=')) {
                    let close = c.get(k + 1).copied().unwrap_or(':');
                    k += 2;
                    while k + 1 < c.len() && !(c[k] == close && c[k + 1] == ']') {
                        k += 1;
                    }
                    k += 2;
                } else {
                    k += 1;
                }
            }
            i = k + 1;
            (atom, repeated) = (true, false);
            continue;
        }
        if special(op) {
            match op {
                '(' => (atom, repeated) = (false, false),
                ')' => (atom, repeated) = (true, false),
                '|' => {
                    if !atom {
                        return Some("regex-edge");
                    }
                    (atom, repeated) = (false, false);
                }
                '{' => {
                    if !atom || repeated {
                        return Some("regex-edge");
                    }
                    let close: String = if ere { "}".into() } else { "\\}".into() };
                    let rest: String = c[i..].iter().collect();
                    let end = rest.find(&close)?;
                    let body = &rest[..end];
                    if body.starts_with(',')
                        || body.is_empty()
                        || !body.chars().all(|x| x.is_ascii_digit() || x == ',')
                    {
                        return Some("regex-edge");
                    }
                    i += body.chars().count() + close.chars().count();
                    repeated = true;
                }
                _ => {
                    // `*`, `+`, `?`
                    if !atom || repeated {
                        return Some("regex-edge");
                    }
                    repeated = true;
                }
            }
            continue;
        }
        if !escaped && op == '^' {
            // An anchor where it starts the expression (or a group or alternative).
            if !atom {
                continue;
            }
        }
        (atom, repeated) = (true, false);
    }
    if !atom && (c.last() == Some(&'|') || p.ends_with("\\|")) {
        return Some("regex-edge");
    }
    None
}

fn find(table: &Table, program: &Program, args: &[String], c: &Command, j: &mut Judgement) {
    let mut i = 0;
    // Options before the starting points (-H, -L, -P, -O3, -D …).
    while i < args.len() && matches!(args[i].as_str(), "-H" | "-L" | "-P")
        || args.get(i).is_some_and(|a| a.starts_with("-O") || a == "-D")
    {
        j.option(table, "find", &args[i], &args[i]);
        i += 1;
    }
    while i < args.len()
        && !(args[i].starts_with('-') && args[i].len() > 1)
        && !matches!(args[i].as_str(), "(" | "!" | ")")
    {
        i += 1;
    }
    let mut output = false;
    let mut action = false;
    while i < args.len() {
        let p = args[i].clone();
        i += 1;
        if matches!(p.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            while i < args.len() && args[i] != ";" && args[i] != "+" {
                i += 1;
            }
            i += 1;
        } else if program.primaries_with_arg.contains(&p) {
            i += 1;
        }
        if matches!(
            p.as_str(),
            "-print"
                | "-print0"
                | "-printf"
                | "-ls"
                | "-fprint"
                | "-fprint0"
                | "-fprintf"
                | "-fls"
                | "-exec"
                | "-execdir"
                | "-ok"
                | "-okdir"
        ) {
            output = true;
        }
        if matches!(p.as_str(), "-delete" | "-quit") {
            action = true;
        }
        j.option(table, "find", &p, &p);
    }
    if !output && !action {
        output = true;
    }
    if !output {
        j.when(table, "find", "no-output");
    } else if !c.stdout_redirected && order_insensitive(c.piped_to.as_deref()) {
        j.when(table, "find", "order-insensitive");
    } else {
        j.when(table, "find", "ordered-output");
    }
}

/// Whether a pipeline's next command reads its input in any order: `sort` (not merging
/// presorted input) or `wc`.
fn order_insensitive(next: Option<&[Vec<Seg>]>) -> bool {
    let Some(words) = next else { return false };
    let words: Option<Vec<String>> = words.iter().map(|w| literal(w)).collect();
    let Some(words) = words else { return false };
    match words.first().map(String::as_str) {
        Some("wc") => true,
        Some("sort") => !words[1..]
            .iter()
            .any(|w| w == "--merge" || (w.starts_with('-') && !w.starts_with("--") && w.contains('m'))),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_expressions() {
        for (p, ere, want) in [
            ("TODO", false, None),
            ("a.b*c", false, None),
            ("\\(foo\\)\\1", false, Some("backreference")),
            ("(foo)\\1", true, Some("backreference")),
            ("*a", false, Some("regex-edge")),
            ("a**", false, Some("regex-edge")),
            ("\\|foo", false, Some("regex-edge")),
            ("+a", true, Some("regex-edge")),
            ("a++", true, Some("regex-edge")),
            ("a{,2}x", true, Some("regex-edge")),
            ("a{2}", true, None),
            ("a{2}", false, None),
            ("a\\{2\\}", false, None),
            ("TODO \\(a\\|b\\)", false, None),
            ("TODO (a|b)", true, None),
            ("[[:digit:]]\\+", false, None),
            ("[]*]*", false, None),
            ("^foo$", false, None),
            ("x+", false, None),
            ("[status] $ok", false, None),
        ] {
            assert_eq!(regex_issue(p, ere), want, "{p} ere={ere}");
        }
    }
}
