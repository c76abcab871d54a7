//! Program substitution judged by behaviour. A harness's shell snapshot may define functions
//! in place of programs (Claude Code 2.1.332 runs `grep` and `find` as functions calling the
//! ugrep and bfs embedded in its binary). Every command that calls such a function is reported;
//! whether it changes the action is read from the launch's substitution table
//! (`crates/iec-launches/launches/substitutes/*.toml`, see [`iec_launches::substitutes`]), whose rows say for which
//! options and operands the substitute behaves as the named program, each row shown with the
//! real programs on a fixture.
//!
//! The verdict of one command: `differs` when a `differs` row applies to its static words;
//! `unknown` when one of its words is known only at run time or an option is in no row; `same`
//! when only `same` rows apply. Rows that depend on input the call does not show (a binary
//! file) are listed as caveats and do not decide it.

use crate::action::{literal, shown, Seg, Token};
use iec_core::Substitution;
use iec_launches::substitutes::{case_match, Claim, Program, Table};

/// One simple command the text runs, as bash would see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Command {
    /// Its words (the command name first).
    pub words: Vec<Vec<Seg>>,
    /// Its standard output goes to a file (`>`, `1>`, `&>`, …).
    pub stdout_redirected: bool,
    /// Its standard output goes to `/dev/null` (the last redirection of it does).
    pub stdout_discarded: bool,
    /// The words of the next command of its pipeline, when its output is piped.
    pub piped_to: Option<Vec<Vec<Seg>>>,
    /// The words of every later command of its pipeline, in order (`piped_to` first).
    pub rest: Vec<Vec<Vec<Seg>>>,
    /// Its standard error is kept where the text reads it: `2>&1`, `2>FILE`, `&>FILE` (not
    /// `/dev/null`) or `|&` (red team round 10: the substitute's diagnostics differ).
    pub stderr_kept: bool,
    /// A variable of [`LOCALE_VARIABLES`] the text assigns anywhere (a prefix assignment, a
    /// plain one, or a word such as `LC_ALL=C` after `export` or `env`).
    pub locale: Option<String>,
}

/// Variables that change how grep and find read their input, under which the table's rows
/// (shown in `C.UTF-8`, without `POSIXLY_CORRECT`) are not shown (red team round 9:
/// `LC_ALL=C grep -i 'é'` matches `É` only under the substitute).
pub const LOCALE_VARIABLES: &[&str] = &[
    "LC_ALL",
    "LC_CTYPE",
    "LC_COLLATE",
    "LANG",
    "LANGUAGE",
    "POSIXLY_CORRECT",
    "GREP_OPTIONS",
];

/// The first variable of [`LOCALE_VARIABLES`] that `tokens` assign (in backquotes), or what
/// else may set one ([`locale_named_otherwise`]).
fn locale_set(tokens: &[Token]) -> Option<String> {
    let named = |w: &str| {
        LOCALE_VARIABLES
            .iter()
            .find(|v| {
                w.strip_prefix(**v)
                    .is_some_and(|r| r.starts_with('=') || r.starts_with("+="))
            })
            .map(|v| format!("`{v}`"))
    };
    let assigned = assignments(tokens)
        .into_iter()
        .map(|(n, _)| n)
        .find(|n| LOCALE_VARIABLES.contains(&n.as_str()))
        .map(|n| format!("`{n}`"));
    assigned
        .or_else(|| {
            tokens.iter().find_map(|t| match t {
                Token::Word(w) => named(&shown(w)),
                _ => None,
            })
        })
        .or_else(|| locale_named_otherwise(tokens))
}

/// Where a text may set a variable of [`LOCALE_VARIABLES`] other than by an assignment or a
/// `NAME=value` word (red team round 10, each run through the real 2.1.332: `printf -v LC_ALL
/// C`, `read LC_ALL`, `for LC_ALL in C`, `: ${LC_ALL:=C}`, `declare -n r=LC_ALL`, `v=LC_ALL;
/// export $v=C`, `export LC_{ALL,X}=C`, then `export LC_ALL; grep -i 'été'` matched `Été` under
/// the substitute only): a mention of a locale variable's name (`LC_…`, `LANG…`,
/// `POSIXLY_CORRECT`, `GREP_OPTIONS`) in a word, a value or an expansion that is not a plain
/// read of it (`$LANG`, `${LC_ALL}`), in an assignment's value or in an operand of a builtin that
/// sets variables or runs text (`echo "LANG"` and `grep LANG` set nothing);
/// or a variable named only at run time given to a builtin that sets or exports variables
/// (`export "$v=C"`, `read "$v"`, `printf -v "$v"`). Returns what is shown in the reason.
fn locale_named_otherwise(tokens: &[Token]) -> Option<String> {
    const STEMS: &[&str] = &["LC_", "LANG", "POSIXLY_CORRECT", "GREP_OPTIONS"];
    let mentions = |s: &str| STEMS.iter().any(|st| s.contains(st));
    // A plain read of a variable: `$NAME` or `${NAME}` (no operator that could assign).
    let plain_read = |d: &str| {
        let name = d
            .strip_prefix("${")
            .and_then(|v| v.strip_suffix('}'))
            .or_else(|| d.strip_prefix('$'));
        name.is_some_and(|n| !n.is_empty() && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    };
    let seg_mentions = |w: &[Seg]| {
        w.iter().any(|s| match s {
            Seg::Lit(v) => mentions(v),
            Seg::Dyn(d, _) => mentions(d) && !plain_read(d),
        })
    };
    // Builtins that set or export the variables their operands name.
    const SETTERS: &[&str] = &[
        "export",
        "declare",
        "typeset",
        "local",
        "readonly",
        "read",
        "printf",
        "mapfile",
        "readarray",
        "unset",
        "for",
        "eval",
        "trap",
        "source",
        ".",
    ];
    let mut name: Option<String> = None;
    let mut first = true;
    let mut after_redirect = false;
    for t in tokens {
        match t {
            Token::Reserved(r) if matches!(r.as_str(), "for" | "select") => {
                // The loop variable (`for LC_ALL in C`).
                name = Some("for".into());
                first = false;
                after_redirect = false;
            }
            Token::Op(_) | Token::Reserved(_) => {
                name = None;
                first = true;
                after_redirect = false;
            }
            Token::Redirect(_) => after_redirect = true,
            Token::Assign(n, v) => {
                if mentions(n) || seg_mentions(v) {
                    return Some(format!("what may be a locale variable (`{n}{}`)", shown(v)));
                }
            }
            Token::Raw(r) => {
                if mentions(r) {
                    return Some(format!("what may be a locale variable (`{r}`)"));
                }
            }
            Token::Word(w) => {
                let redirect_target = std::mem::take(&mut after_redirect);
                if first && !redirect_target {
                    first = false;
                    name = Some(literal(w).unwrap_or_default());
                    if literal(w).is_none() && seg_mentions(w) {
                        return Some(format!("what may be a locale variable (`{}`)", shown(w)));
                    }
                    continue;
                }
                // Only where a word may name a variable to set: an operand of a builtin that
                // sets variables or runs text, or an expansion that may assign (`echo LANG` and
                // `grep LANG` set nothing).
                let setter = name.as_deref().is_some_and(|n| SETTERS.contains(&n));
                let dynamic_mention = w
                    .iter()
                    .any(|s| matches!(s, Seg::Dyn(d, _) if mentions(d) && !plain_read(d)));
                if dynamic_mention || (setter && seg_mentions(w)) {
                    return Some(format!("what may be a locale variable (`{}`)", shown(w)));
                }
                // A variable named only at run time given to a builtin that sets variables.
                if name.as_deref().is_some_and(|n| SETTERS.contains(&n)) && !redirect_target {
                    let written = shown(w);
                    let target = written.split('=').next().unwrap_or("");
                    if !written.starts_with('-') && target.contains('$') {
                        return Some(format!(
                            "what may be a locale variable, named only at run time (`{written}`)"
                        ));
                    }
                }
            }
        }
    }
    None
}

/// What a text passes on to the texts it runs (its command substitutions, `eval`s and trap
/// actions): a locale variable it sets ([`locale_set`]) and whether it keeps the standard error of
/// a group or of the shell ([`group_stderr_kept`]). Red team round 10: `export LC_ALL=C; x=$(grep
/// -c -i 'été' f.txt)` and `exec 2>&1; echo $(grep -c x nope.txt)` were "corresponds".
pub fn context(tokens: &[Token]) -> (Option<String>, bool) {
    (locale_set(tokens), group_stderr_kept(tokens))
}

/// The simple commands of an action (not looking into command substitutions), and the
/// command substitutions' texts found in their words.
pub fn commands(tokens: &[Token]) -> (Vec<Command>, Vec<String>) {
    let mut out: Vec<Command> = Vec::new();
    let mut inner = Vec::new();
    let locale = locale_set(tokens);
    let kept = group_stderr_kept(tokens);
    let mut cur = Command {
        words: vec![],
        stdout_redirected: false,
        stdout_discarded: false,
        piped_to: None,
        rest: vec![],
        stderr_kept: kept,
        locale: locale.clone(),
    };
    // After `for`/`select`/`case`, the words up to the next operator are not a command.
    let mut not_a_command = false;
    // Right after the reserved word `time`.
    let mut after_time = false;
    // Right after the reserved word `coproc`, before its name.
    let mut after_coproc = false;
    let mut after_coproc_name = false;
    let mut pipe_from: Option<usize> = None;
    // The commands of the pipeline being read, before the current one.
    let mut pipeline: Vec<usize> = Vec::new();
    let mut i = 0;
    let finish = |cur: &mut Command,
                  out: &mut Vec<Command>,
                  pipe_from: &mut Option<usize>,
                  pipeline: &mut Vec<usize>,
                  nac: bool| {
        let c = std::mem::replace(
            cur,
            Command {
                words: vec![],
                stdout_redirected: false,
                stdout_discarded: false,
                piped_to: None,
                rest: vec![],
                stderr_kept: kept,
                locale: locale.clone(),
            },
        );
        if c.words.is_empty() || nac {
            *pipe_from = None;
            pipeline.clear();
            return None;
        }
        if let Some(p) = pipe_from.take() {
            out[p].piped_to = Some(c.words.clone());
            for &k in pipeline.iter() {
                out[k].rest.push(c.words.clone());
            }
        } else {
            pipeline.clear();
        }
        out.push(c);
        pipeline.push(out.len() - 1);
        Some(out.len() - 1)
    };
    while i < tokens.len() {
        match &tokens[i] {
            Token::Op(op) => {
                if op == "|&" {
                    cur.stderr_kept = true;
                }
                let idx = finish(&mut cur, &mut out, &mut pipe_from, &mut pipeline, not_a_command);
                not_a_command = false;
                if op == "|" || op == "|&" {
                    pipe_from = idx;
                } else {
                    pipeline.clear();
                }
            }
            Token::Reserved(r) => {
                // `coproc grep …` runs `grep` (red team round 10: the real 2.1.332 ran the
                // substitute for `coproc grep -rn TODO d >out`, judged "corresponds" before);
                // bash prints it as `coproc COPROC grep …`, the name skipped below.
                after_time = r == "time";
                after_coproc = r == "coproc";
                if cur.words.is_empty() {
                    if matches!(r.as_str(), "for" | "select" | "case" | "function") {
                        not_a_command = true;
                    }
                } else {
                    finish(&mut cur, &mut out, &mut pipe_from, &mut pipeline, not_a_command);
                    not_a_command = false;
                }
            }
            Token::Redirect(r) => {
                let stdout = r.starts_with("1>") || r.starts_with("&>") || r.starts_with('>');
                if r.starts_with("1>") || r.starts_with("&>") {
                    cur.stdout_redirected = true;
                }
                // The target word.
                if let Some(Token::Word(w)) = tokens.get(i + 1) {
                    if (r.starts_with("2>") || r.starts_with("&>"))
                        && literal(w).as_deref() != Some("/dev/null")
                    {
                        cur.stderr_kept = true;
                    }
                    if stdout && !r.contains('&') || r.starts_with("&>") {
                        cur.stdout_discarded = literal(w).as_deref() == Some("/dev/null");
                    }
                    inner.extend(substitutions_in(w));
                    i += 1;
                }
            }
            Token::Assign(_, v) => inner.extend(substitutions_in(v)),
            // `time -p` (and `--`): options of the reserved word, not the command name (red team
            // round 10: `time -p grep -rn TODO d` ran the substitute and was "corresponds").
            Token::Word(w)
                if after_time
                    && cur.words.is_empty()
                    && matches!(literal(w).as_deref(), Some("-p" | "--")) => {}
            // bash prints a coprocess with its name (`coproc COPROC grep -r x .`): not a command.
            Token::Word(_) if after_coproc && cur.words.is_empty() => {
                after_coproc = false;
                after_coproc_name = true;
            }
            // … and its `{` is read as a word there (`coproc COPROC { grep …; }`).
            Token::Word(w)
                if after_coproc_name && cur.words.is_empty() && literal(w).as_deref() == Some("{") =>
            {
                after_coproc_name = false;
            }
            Token::Word(w) => {
                after_time = false;
                after_coproc_name = false;
                inner.extend(substitutions_in(w));
                cur.words.push(w.clone());
            }
            // `[[ … ]]` and `(( … ))`: their command substitutions run too (red team round 10).
            Token::Raw(r) => inner.extend(nested_substitutions(r, true)),
        }
        i += 1;
    }
    finish(&mut cur, &mut out, &mut pipe_from, &mut pipeline, not_a_command);
    (out, inner)
}

/// Whether the text keeps the standard error of a group or of the shell itself (`{ …; } 2>&1`,
/// `( … ) |& cat`, `done 2>FILE`, `exec 2>&1`): then every command's diagnostics may be read
/// (red team round 10; a simple command's own redirections are read in [`commands`]).
fn group_stderr_kept(tokens: &[Token]) -> bool {
    let closes = |t: Option<&Token>| match t {
        Some(Token::Reserved(r)) => matches!(r.as_str(), "}" | "done" | "fi" | "esac"),
        Some(Token::Op(o)) => o == ")",
        Some(Token::Raw(_)) => true,
        _ => false,
    };
    let keeps = |k: usize| match (&tokens[k], tokens.get(k + 1)) {
        (Token::Redirect(r), Some(Token::Word(w))) => {
            (r.starts_with("2>") || r.starts_with("&>")) && literal(w).as_deref() != Some("/dev/null")
        }
        _ => false,
    };
    (0..tokens.len()).any(|k| {
        let prev = k.checked_sub(1).and_then(|p| tokens.get(p));
        match &tokens[k] {
            Token::Op(o) if o == "|&" => closes(prev),
            Token::Redirect(_) if keeps(k) => {
                // After a group's closing word (and its other redirections), or on `exec`.
                let mut j = k;
                while j >= 2 && matches!(tokens[j - 2], Token::Redirect(_)) {
                    j -= 2;
                }
                let before = j.checked_sub(1).and_then(|p| tokens.get(p));
                closes(before)
                    || matches!(before, Some(Token::Word(w)) if literal(w).as_deref() == Some("exec")
                        && (j < 2 || !matches!(tokens[j - 2], Token::Word(_) | Token::Assign(..))))
            }
            _ => false,
        }
    })
}

/// The command texts of the command and process substitutions in a word.
fn substitutions_in(word: &[Seg]) -> Vec<String> {
    word.iter()
        .flat_map(|s| match s {
            // Red team round 10 (real 2.1.332 and 2.1.218): the command substitutions inside an
            // arithmetic expansion or a `${…}` run too (`$(( $(grep -rn x d | wc -l) ))`,
            // ``${y:-`grep -rn x d`}``); they were not read.
            Seg::Dyn(d, quoted) if d.starts_with("$((") || d.starts_with("${") => {
                nested_substitutions(d, !quoted)
            }
            _ => substitution_body(s).into_iter().collect(),
        })
        .collect()
}

/// The command and backquote substitutions anywhere in `s` (bash's printed text of a `[[ … ]]`,
/// `(( … ))`, `$((…))` or `${…}`), outermost first; single quotes hide them when
/// `single_quotes` (they are literal characters inside double quotes).
fn nested_substitutions(s: &str, single_quotes: bool) -> Vec<String> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'\'' if single_quotes => {
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    i += 1;
                }
                i += 1;
            }
            b'$' if b.get(i + 1) == Some(&b'(') && b.get(i + 2) != Some(&b'(') => {
                let (mut depth, mut j, mut q) = (1usize, i + 2, 0u8);
                while j < b.len() {
                    match (q, b[j]) {
                        (_, b'\\') => j += 1,
                        (0, b'\'' | b'"') => q = b[j],
                        (0, b'(') => depth += 1,
                        (0, b')') => {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        }
                        (c, x) if c != 0 && c == x => q = 0,
                        _ => {}
                    }
                    j += 1;
                }
                if let Some(body) = s.get(i + 2..j.min(b.len())) {
                    out.push(body.to_string());
                }
                i = j + 1;
            }
            b'`' => {
                let mut j = i + 1;
                while j < b.len() && b[j] != b'`' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                if let Some(body) = s.get(i + 1..j.min(b.len())) {
                    out.push(body.to_string());
                }
                i = j + 1;
            }
            _ => i += 1,
        }
    }
    out
}

/// The command text of one segment that is a command, process or backquote substitution.
fn substitution_body(s: &Seg) -> Option<String> {
    match s {
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
    }
}

/// The program a command calls by name (a function is found only under its plain name:
/// `/usr/bin/grep` runs the file, `command grep`, `env grep`, `xargs grep` the program).
pub fn called_name(c: &Command) -> Option<String> {
    let first = literal(c.words.first()?)?;
    (!first.contains('/')).then_some(first)
}

/// The words of `c` after the prefixes that run a builtin without changing how the rest is
/// looked up (`builtin eval`, `command eval`: `command` skips functions only for its own word).
fn after_prefixes(c: &Command) -> &[Vec<Seg>] {
    let mut w = &c.words[..];
    while let Some(first) = w.first() {
        match literal(first).as_deref() {
            Some("builtin") | Some("command") if w.len() > 1 && literal(&w[1]).as_deref() == Some("eval") => {
                w = &w[1..]
            }
            _ => break,
        }
    }
    w
}

/// The arguments of a command whose name (after [`after_prefixes`]) is one
/// of `names`, a leading `--` skipped; `None` for any other command.
fn builtin_args<'a>(c: &'a Command, names: &[&str]) -> Option<&'a [Vec<Seg>]> {
    let w = after_prefixes(c);
    let name = literal(w.first()?)?;
    if !names.contains(&name.as_str()) {
        return None;
    }
    let args = &w[1..];
    Some(match args.first().and_then(|a| literal(a)).as_deref() {
        Some("--") => &args[1..],
        _ => args,
    })
}

/// The text an `eval` command runs (its arguments joined by spaces, as bash does): `Some(Ok)`
/// when every argument is static, `Some(Err(word))` naming a word known only at run time,
/// `None` when `c` is not an `eval`. The snapshot's functions are defined in the shell that
/// evaluates it, so the names it calls are looked up as the text's own (a real 2.1.332 run:
/// `eval grep -r TODO d` runs ugrep).
pub fn eval_text(c: &Command) -> Option<Result<String, String>> {
    let args = builtin_args(c, &["eval"])?;
    let mut parts = Vec::new();
    for a in args {
        match literal(a) {
            Some(v) => parts.push(v),
            None => return Some(Err(shown(a))),
        }
    }
    Some(Ok(parts.join(" ")))
}

/// The action of a `trap ACTION SIGNAL…`: a text the same shell runs later, snapshot functions
/// defined (red team round 10, real 2.1.332 and 2.1.218: `trap 'grep -rn TODO d' EXIT` ran the
/// substitute and was "corresponds"). `Err` with the word when the action is known only at run
/// time; `None` for other commands, `trap -p`, `trap -l`, `trap - SIG` and `trap SIG`.
pub fn trap_text(c: &Command) -> Option<Result<String, String>> {
    let args = builtin_args(c, &["trap"])?;
    if args.len() < 2 {
        return None;
    }
    match literal(&args[0]) {
        Some(v) if v == "-" || (v.starts_with('-') && v.len() > 1) => None,
        Some(v) => Some(Ok(v)),
        None => Some(Err(shown(&args[0]))),
    }
}

/// The word of a `.`/`source` that reads a text made at run time: a process substitution
/// (`source <(echo …)`), standard input or a descriptor (`. /dev/stdin <<< '…'`, `/dev/fd/3`,
/// `/proc/self/fd/0`). Red team round 10 (real 2.1.332 and 2.1.218): `. /dev/stdin <<< 'grep -rn
/// TODO d'` ran the substitute and was "corresponds". Other sourced files are not looked into
/// (docs/limits.md).
pub fn sourced_stream(c: &Command) -> Option<String> {
    let args = builtin_args(c, &[".", "source"])?;
    let file = args.first()?;
    let stream = match literal(file) {
        Some(f) => {
            f == "/dev/stdin"
                || f.starts_with("/dev/fd/")
                || f.starts_with("/proc/self/fd/")
                || f.starts_with("/dev/tcp/")
        }
        None => file
            .iter()
            .any(|s| matches!(s, Seg::Dyn(d, _) if d.starts_with("<("))),
    };
    stream.then(|| shown(file))
}

/// The report of an `eval` whose text is known only at run time, when the launch shadows
/// programs: the text may call one of them.
pub fn dynamic_eval(c: &Command, word: &str, shadowed: &[String]) -> Substitution {
    let words: Vec<String> = c.words.iter().map(|w| shown(w)).collect();
    // `eval`, or `trap` (its action).
    let named = match after_prefixes(c).first().and_then(|f| literal(f)) {
        Some(n) if matches!(n.as_str(), "trap" | "." | "source") => n,
        _ => "eval".to_string(),
    };
    Substitution {
        named: named.clone(),
        runs: format!("a text known only at run time, in the shell where the snapshot defines {}", names(shadowed)),
        words,
        behaviour: "unknown".into(),
        rows: vec![],
        caveats: vec![],
        detail: format!(
            "`{named}` runs a text holding `{word}`, known only at run time: if it calls {}, the snapshot's function \
             runs instead of the program",
            names(shadowed)
        ),
    }
}

fn names(shadowed: &[String]) -> String {
    shadowed
        .iter()
        .map(|s| format!("`{s}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The variable assignments of a text (`g=grep`, `x+=y`): each name, and its value when static.
pub fn assignments(tokens: &[Token]) -> Vec<(String, Option<String>)> {
    tokens
        .iter()
        .filter_map(|t| match t {
            Token::Assign(n, v) => Some((
                n.trim_end_matches('=').trim_end_matches('+').to_string(),
                literal(v),
            )),
            _ => None,
        })
        .collect()
}

/// The report of a command whose name is known only at run time (`$g -r x .`, `"$G"`,
/// `$(echo grep)`) and could be one the snapshot shadows: bash looks a function up by the
/// expanded name, so `g=grep; $g -r x .` runs the substitute (a real 2.1.332 run). `None` when
/// the name's static parts rule every shadowed name out (a `/` in it, a literal start or end no
/// shadowed name has), when it is a variable the text assigns only static values none of which
/// starts with a shadowed name (`e=exec; $e 0<a.txt`), or a command substitution whose text
/// names none (`$(exit 3)`).
pub fn dynamic_name(
    c: &Command,
    shadowed: &[String],
    assigns: &[(String, Option<String>)],
) -> Option<Substitution> {
    let first = c.words.first()?;
    if literal(first).is_some() {
        return None;
    }
    if let [Seg::Dyn(d, quoted)] = first.as_slice() {
        // An arithmetic expansion expands to a number.
        if d.starts_with("$((") {
            return None;
        }
        let var = d
            .strip_prefix("${")
            .and_then(|v| v.strip_suffix('}'))
            .or_else(|| d.strip_prefix('$'))
            .filter(|v| !v.is_empty() && v.chars().all(|ch| ch.is_ascii_alphanumeric() || ch == '_'));
        if let Some(var) = var {
            let values: Vec<&Option<String>> =
                assigns.iter().filter(|(n, _)| n == var).map(|(_, v)| v).collect();
            // Unquoted, the value is split into words: its first field is the name.
            let name = |v: &str| {
                if *quoted {
                    v.to_string()
                } else {
                    v.split_whitespace().next().unwrap_or("").to_string()
                }
            };
            if !values.is_empty()
                && values
                    .iter()
                    .all(|v| v.as_deref().is_some_and(|v| !shadowed.contains(&name(v))))
            {
                return None;
            }
        }
        let inner = d
            .strip_prefix("$(")
            .and_then(|r| r.strip_suffix(')'))
            .or_else(|| d.strip_prefix('`').and_then(|r| r.strip_suffix('`')));
        if let Some(inner) = inner {
            if !d.starts_with("$((")
                && !inner.contains('$')
                && !shadowed.iter().any(|n| inner.contains(n.as_str()))
            {
                return None;
            }
        }
    }
    let lits = |s: &Seg| match s {
        Seg::Lit(v) => Some(v.clone()),
        Seg::Dyn(..) => None,
    };
    if first.iter().filter_map(lits).any(|v| v.contains('/')) {
        return None;
    }
    // Only a pattern (`[`, `gr?p`): it stays as written unless a file in the working folder
    // matches it, so it reaches a shadowed name only as a pattern that matches one.
    let expansion = |s: &Seg| matches!(s, Seg::Dyn(d, _) if d.contains('$') || d.contains('`'));
    if !first.iter().any(expansion) {
        let pattern = shown(first);
        if !shadowed.iter().any(|n| case_match(&pattern, n)) {
            return None;
        }
    }
    let start = first.first().and_then(lits).unwrap_or_default();
    let end = first.last().and_then(lits).unwrap_or_default();
    let could: Vec<String> = shadowed
        .iter()
        .filter(|n| n.starts_with(&start) && n.ends_with(&end))
        .cloned()
        .collect();
    if could.is_empty() {
        return None;
    }
    let words: Vec<String> = c.words.iter().map(|w| shown(w)).collect();
    Some(Substitution {
        named: words[0].clone(),
        runs: format!("the snapshot's function if the name expands to {}", names(&could)),
        words: words.clone(),
        behaviour: "unknown".into(),
        rows: vec![],
        caveats: vec![],
        detail: format!(
            "the command name `{}` is known only at run time; bash looks functions up by the expanded name, so if it \
             is {} the snapshot's function runs instead of the program",
            words[0],
            names(&could)
        ),
    })
}

/// The report of a command that asks the shell what a shadowed name is (`type grep`,
/// `type -t grep`, `command -v grep`, `declare -f grep`): it answers "function" where bash
/// without the snapshot names the file (real 2.1.332 runs: `type -t grep` prints `function`,
/// `command -v grep` prints `grep`, not `file` and `/usr/bin/grep`). `type -P`/`-f` and `which`
/// look at the file only and print alike.
pub fn lookup(c: &Command, shadowed: &[String]) -> Option<Substitution> {
    let words: Option<Vec<String>> = c.words.iter().map(|w| literal(w)).collect();
    let shown_words: Vec<String> = c.words.iter().map(|w| shown(w)).collect();
    let words = words.unwrap_or_else(|| shown_words.clone());
    let (name, args) = words.split_first()?;
    let mut letters = String::new();
    let mut operands: Vec<&String> = Vec::new();
    let mut done = false;
    for a in args {
        if !done && a == "--" {
            done = true;
        } else if !done && a.len() > 1 && (a.starts_with('-') || a.starts_with('+')) {
            letters.push_str(&a[1..]);
        } else {
            operands.push(a);
        }
    }
    // With its output discarded only the status is seen, 0 for a function as for a file
    // (`command -v grep >/dev/null && …`); `declare -F` returns 1 for a name with no function.
    let asks = match name.as_str() {
        "type" | "command" if c.stdout_discarded => false,
        // `-P` searches PATH only; `-f` skips functions.
        "type" => !letters.contains('P') && !letters.contains('f'),
        "command" => letters.contains('v') || letters.contains('V'),
        // Without names, `declare -f`/`-F` lists every function, the snapshot's included.
        "declare" | "typeset" => letters.contains('f') || letters.contains('F'),
        _ => false,
    };
    if !asks {
        return None;
    }
    let named = if operands.is_empty() && matches!(name.as_str(), "declare" | "typeset") {
        shadowed.first()?.clone()
    } else {
        operands.iter().find(|o| shadowed.contains(o))?.to_string()
    };
    Some(Substitution {
        named: named.clone(),
        runs: format!("the snapshot's function `{named}`"),
        words: shown_words,
        behaviour: "differs".into(),
        rows: vec![],
        caveats: vec![],
        detail: format!(
            "`{name}` asks the shell what `{named}` is, and the snapshot made it a function: the answer names the \
             function where bash without the snapshot names the program's file"
        ),
    })
}

/// The report of a call of a program the snapshot shadows only when it is not on `PATH`
/// (`rg` in 2.1.332): whether the function or the program runs is known only at run time.
pub fn when_missing(name: &str, c: &Command) -> Substitution {
    Substitution {
        named: name.into(),
        runs: format!("the snapshot's function `{name}` when no `{name}` is on PATH, else `{name}` itself"),
        words: c.words.iter().map(|w| shown(w)).collect(),
        behaviour: "unknown".into(),
        rows: vec![],
        caveats: vec![],
        detail: format!(
            "the snapshot defines `{name}` only when `hash {name}` fails: with a `{name}` on PATH the program runs, \
             without one the function runs where bash would report `{name}: command not found`; which one is known \
             only at run time"
        ),
    }
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
    if c.stderr_kept {
        j.unknown.push(format!(
            "the text keeps the call's standard error (`2>&1`, `|&`, a file), and the substitute's diagnostics differ from {name}'s (red team round 10: `{name}: nope.txt: No such file or directory` against `{}: …`); whether the call prints one (a missing file) is known only at run time",
            program.argv0
        ));
    }
    if let Some(v) = &c.locale {
        j.unknown.push(format!(
            "the text sets {v}, and the table's rows are shown in a UTF-8 locale without it, so whether the substitute behaves as {name} there cannot be told"
        ));
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
    let mut perl = false;
    // The options used, by short letter (long names mapped to theirs).
    let mut used: Vec<char> = Vec::new();
    // The matchers named (-E, -F, -G, -P): GNU grep refuses two different ones, exit 2.
    let mut matchers: Vec<char> = Vec::new();
    // -m 0, and a context of 0 lines (-A0, --context=0): the substitute reads them otherwise.
    let mut zero_max = false;
    let mut zero_context = false;
    // --binary-files=text or =without-match: both programs then read binary files alike.
    let mut binary_files = false;
    // The context options in the order given, with their values.
    let mut contexts: Vec<(char, String)> = Vec::new();
    let mut i = 0;
    let mut options_done = false;
    let mut option = |j: &mut Judgement, shown: &str, key: &str, value: Option<&str>| {
        let matcher = match key {
            "F" | "fixed-strings" => Some('F'),
            "E" | "extended-regexp" => Some('E'),
            "G" | "basic-regexp" => Some('G'),
            "P" | "perl-regexp" => Some('P'),
            _ => None,
        };
        if let Some(m) = matcher.filter(|m| !matchers.contains(m)) {
            matchers.push(m);
        }
        let zero = value.is_some_and(|v| !v.is_empty() && v.bytes().all(|b| b == b'0'));
        if key == "binary-files" && matches!(value, Some("text") | Some("without-match")) {
            binary_files = true;
        }
        match key {
            "m" | "max-count" => zero_max |= zero,
            "A" | "B" | "C" | "after-context" | "before-context" | "context" => {
                zero_context |= zero;
                let which = match key {
                    "A" | "after-context" => 'A',
                    "B" | "before-context" => 'B',
                    _ => 'C',
                };
                contexts.push((which, value.unwrap_or("").to_string()));
            }
            _ => {}
        }
        // A count that is not a plain decimal of at most nine digits: the two programs refuse
        // or read different ones (red team round 9: `-A -1` is an error for GNU grep only,
        // `-C 99999999999999999999` for the substitute only; `-m 0x1`, `--max-count=1k`).
        if matches!(
            key,
            "A" | "B" | "C" | "m" | "after-context" | "before-context" | "context" | "max-count"
        ) {
            if let Some(v) =
                value.filter(|v| v.is_empty() || v.len() > 9 || !v.bytes().all(|b| b.is_ascii_digit()))
            {
                j.unknown.push(format!(
                    "the count `{v}` of `{shown}` is not a plain decimal number, which the two programs read differently"
                ));
            }
        }
        match key {
            "F" | "fixed-strings" => (fixed, perl) = (true, false),
            "E" | "extended-regexp" => (ere, fixed, perl) = (true, false, false),
            "G" | "basic-regexp" => (ere, fixed, perl) = (false, false, false),
            "P" | "perl-regexp" => (perl, fixed) = (true, false),
            _ => {}
        }
        let letter = match key {
            "invert-match" => Some('v'),
            "ignore-case" => Some('i'),
            "only-matching" => Some('o'),
            "count" => Some('c'),
            "quiet" | "silent" => Some('q'),
            "files-with-matches" => Some('l'),
            "files-without-match" => Some('L'),
            "line-regexp" => Some('x'),
            "text" => Some('a'),
            "word-regexp" => Some('w'),
            "max-count" => Some('m'),
            "after-context" => Some('A'),
            "before-context" => Some('B'),
            "context" => Some('C'),
            k if k.chars().count() == 1 => k.chars().next(),
            _ => None,
        };
        used.extend(letter);
        // Values the rows do not show are not covered by them.
        let covered = match key {
            "d" | "directories" => value == Some("recurse"),
            "color" | "colour" => matches!(value, Some("never") | Some("auto")),
            "binary-files" => matches!(value, Some("text") | Some("without-match")),
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
        let p = operands.remove(0);
        // A lone `-` as the pattern operand: GNU grep searches for it, the substitute finds
        // nothing (red team round 5).
        if p == "-" {
            j.when(table, "grep", "dash-pattern");
        }
        patterns.push(p);
    }
    let has = |c: char| used.contains(&c);
    // Red team round 5: -o with context lines (the substitute prints them), -m with -c and -v
    // (it counts past the limit), -v -c with an empty pattern (GNU grep 3.8 prints no count).
    if has('o') && (has('A') || has('B') || has('C')) {
        j.when(table, "grep", "only-matching-context");
    }
    if has('m') && has('c') && has('v') {
        j.when(table, "grep", "max-count-invert-count");
    }
    // Red team round 10 (real 2.1.332): -c with -o counts matches in the substitute, lines in
    // GNU grep (`TODO a TODO` counts 2 against 1); with -m the limit was not shown.
    if has('c') && has('o') && !has('v') {
        if has('m') {
            j.unknown.push(
                "-c with -o and -m: the substitute counts matches, GNU grep lines, and no row shows how -m bounds either"
                    .into(),
            );
        } else {
            j.when(table, "grep", "count-only-matching");
        }
    }
    if has('v') && has('c') && patterns.iter().any(|p| p.is_empty()) {
        j.when(table, "grep", "invert-count-empty");
    }
    if matchers.len() > 1 {
        j.when(table, "grep", "conflicting-matchers");
    }
    if zero_max {
        j.when(table, "grep", "max-count-zero");
    }
    if zero_context {
        j.when(table, "grep", "context-zero");
    }
    // Red team round 10 (real 2.1.332): `-A 1 -C 2`: GNU grep keeps the -A or -B given, the
    // substitute takes the later -C for both.
    if contexts
        .iter()
        .enumerate()
        .any(|(k, (w, v))| *w != 'C' && contexts[k + 1..].iter().any(|(c, cv)| *c == 'C' && cv != v))
    {
        j.when(table, "grep", "context-override");
    }
    // A newline separates patterns; an empty one it leaves (`$'foo\n'`) selects every line in
    // GNU grep, not in the substitute (red team round 4).
    if patterns
        .iter()
        .any(|p| p.contains('\n') && p.split('\n').any(str::is_empty))
    {
        j.when(table, "grep", "newline-empty-pattern");
    }
    // Red team round 10 (real 2.1.191, 2.1.218, 2.1.332): with -F and -i the substitute folds
    // only ASCII letters (`grep -c -F -i 'ÉTÉ'` counts no `Été` line, GNU grep counts it; without
    // -F both fold); whether the input holds such a line is known only at run time.
    if fixed && has('i') {
        if let Some(p) = patterns
            .iter()
            .find(|p| p.chars().any(|c| !c.is_ascii() && c.is_alphabetic()))
        {
            j.unknown.push(format!(
                "-F with -i and the letter beyond ASCII in `{p}`: the substitute does not fold its case, GNU grep does; whether the input holds it in another case is known only at run time"
            ));
        }
    }
    let patterns: Vec<&str> = patterns.iter().flat_map(|p| p.split('\n')).collect();
    let mut line_end = has('x');
    for p in patterns {
        // A Perl pattern follows other rules than the basic and extended ones the rows read
        // (`\d` is a digit to both programs there): no row shows it, and the option's own row
        // question stands (red team round 7's escape rows made `grep -P 'a\d'` diverge).
        if perl {
            j.unknown.push(format!(
                "the Perl pattern `{p}` (-P): no row compares ugrep's Perl patterns with GNU grep's"
            ));
            continue;
        }
        let class = if fixed {
            Pattern {
                nullable: p.is_empty(),
                ..Pattern::default()
            }
        } else {
            pattern(p, ere)
        };
        for issue in &class.issues {
            j.when(table, "grep", issue);
        }
        j.unknown.extend(class.unknown.iter().cloned());
        for c in &class.escapes {
            match table.escape_row("grep", *c) {
                Some(r) => {
                    let id = r.id.clone();
                    j.row(table, &id);
                }
                None => j.unknown.push(format!(
                    "`\\{c}` is in no row of the substitution table, so whether the substitute reads it as grep does is not shown"
                )),
            }
        }
        line_end |= class.dollar;
        if class.nullable {
            // The substitute drops empty matches unless the pattern starts with `^` or ends
            // with `$`; with -o or -w it differs even then.
            let anchored =
                has('x') || p.is_empty() || p.starts_with('^') || (p.ends_with('$') && !p.ends_with("\\$"));
            if has('o') || has('w') || !anchored && !p.chars().all(|c| c == '.' || c == '*') {
                j.when(table, "grep", "empty-match");
            } else if !anchored || class.alternation {
                j.unknown.push(format!(
                    "the pattern `{p}` can match the empty string, and no row shows this form"
                ));
            }
        }
    }
    if line_end {
        // Whether an input line ends in CR LF is not known from the call.
        for r in table.rows_when("grep", "line-end") {
            j.unknown.push(format!(
                "{} ({}); whether an input line ends in CR LF is known only at run time",
                r.note, r.id
            ));
            if !j.rows.contains(&r.id) {
                j.rows.push(r.id.clone());
            }
        }
    }
    if has('v') && (has('o') && !has('c') || has('q') || has('l') || has('L')) {
        j.when(table, "grep", "invert-with");
    }
    if has('m') && (has('A') || has('C')) {
        j.when(table, "grep", "max-count-context");
    }
    if operands.len() >= 2 {
        j.when(table, "grep", "several-files");
    }
    // A directory operand: the substitute searches it recursively, GNU grep reports it.
    let directory = |o: &str| {
        matches!(o, "." | ".." | "/") || o.ends_with('/') || o.ends_with("/.") || o.ends_with("/..")
    };
    if operands.iter().any(|o| directory(o)) {
        j.when(table, "grep", "directory-operand");
    } else if operands.iter().any(|o| o != "-") {
        j.caveats
            .extend(table.rows_when("grep", "directory-operand").map(|r| r.id.clone()));
    }
    // -a/-I (and --binary-files) make both programs read binary files alike; otherwise an
    // operand named for a binary format (`logo.png`) is very likely one, and whether it holds a
    // match is known only at run time (red team round 8: the substitute's -I skips it).
    let binary_mode = has('a') || has('I') || binary_files;
    if !binary_mode && !has('r') && !has('R') {
        if let Some(o) = operands.iter().find(|o| binary_name(o)) {
            for r in table.rows_when("grep", "binary-input") {
                j.unknown.push(format!(
                    "{} ({}); `{o}` names a binary format, and whether it holds a match is known only at run time",
                    r.note, r.id
                ));
            }
        }
    }
    if j.differs.is_empty() && j.unknown.is_empty() {
        j.when(table, "grep", "one-input");
    }
    if !binary_mode {
        j.caveats
            .extend(table.rows_when("grep", "binary-input").map(|r| r.id.clone()));
    }
}

/// Whether a file name ends in the extension of a binary format (images, archives, objects,
/// compiled code, databases, fonts, media).
fn binary_name(name: &str) -> bool {
    const BINARY: [&str; 44] = [
        "png", "jpg", "jpeg", "gif", "bmp", "ico", "webp", "tiff", "pdf", "zip", "gz", "tgz", "bz2", "xz",
        "zst", "7z", "tar", "jar", "war", "class", "o", "a", "so", "dylib", "dll", "exe", "bin", "pyc",
        "wasm", "sqlite", "sqlite3", "db", "woff", "woff2", "ttf", "otf", "mp3", "mp4", "mov", "avi", "wav",
        "ogg", "flac", "rlib",
    ];
    let base = name.rsplit('/').next().unwrap_or(name);
    match base.rsplit_once('.') {
        Some((stem, ext)) if !stem.is_empty() => BINARY.contains(&ext.to_ascii_lowercase().as_str()),
        _ => false,
    }
}

/// What the table needs to know of one basic (`ere` false) or extended regular expression.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pattern {
    /// Conditions of `differs` rows it meets: `backreference`, `regex-edge` (a repetition of
    /// nothing, an empty alternative, `{,n}`), `empty-group`, `anchor-literal` (a basic
    /// expression's `^` not at its start or `$` not at its end: GNU grep reads the character),
    /// `negated-bracket` (`[^…]`), `punct-class` (`[:punct:]`), `bare-class` (`[:alpha:]`
    /// outside a bracket expression).
    pub issues: Vec<&'static str>,
    /// The characters that follow a backslash outside the syntax's operators (`w` of `\w`).
    pub escapes: Vec<char>,
    /// It can match the empty string.
    pub nullable: bool,
    /// It uses the `$` anchor.
    pub dollar: bool,
    /// It has an alternation.
    pub alternation: bool,
    /// Forms the table does not read.
    pub unknown: Vec<String>,
}

/// Reads a GNU basic (`ere` false) or extended regular expression for [`Pattern`].
pub fn pattern(p: &str, ere: bool) -> Pattern {
    let c: Vec<char> = p.chars().collect();
    let mut r = Parser {
        c: &c,
        i: 0,
        ere,
        out: Pattern::default(),
    };
    r.out.nullable = r.alternation(0);
    if r.i < c.len() {
        // An unmatched closing group.
        r.issue("regex-edge");
    }
    r.out
}

struct Parser<'a> {
    c: &'a [char],
    i: usize,
    ere: bool,
    out: Pattern,
}

impl Parser<'_> {
    fn issue(&mut self, i: &'static str) {
        if !self.out.issues.contains(&i) {
            self.out.issues.push(i);
        }
    }

    fn unknown(&mut self, why: String) {
        if !self.out.unknown.contains(&why) {
            self.out.unknown.push(why);
        }
    }

    /// The operator at `i` (`(`, `)`, `|`, `{`, `+`, `?`, `*`) in this syntax, and its length.
    fn op(&self, i: usize) -> Option<(char, usize)> {
        let ch = *self.c.get(i)?;
        if ch == '*' {
            return Some(('*', 1));
        }
        if self.ere {
            matches!(ch, '(' | ')' | '|' | '{' | '+' | '?').then_some((ch, 1))
        } else if ch == '\\' {
            let n = *self.c.get(i + 1)?;
            matches!(n, '(' | ')' | '|' | '{' | '+' | '?').then_some((n, 2))
        } else {
            None
        }
    }

    /// Alternatives up to a closing group or the end; whether it can match empty.
    fn alternation(&mut self, depth: usize) -> bool {
        let mut nullable = false;
        let mut branches = 0;
        loop {
            let (empty, n) = self.sequence(depth);
            branches += 1;
            nullable |= n;
            match self.op(self.i) {
                Some(('|', len)) => {
                    self.out.alternation = true;
                    if empty {
                        self.issue("regex-edge");
                    }
                    self.i += len;
                }
                _ => {
                    if empty {
                        if branches > 1 {
                            self.issue("regex-edge");
                        } else if depth > 0 {
                            self.issue("empty-group");
                        }
                    }
                    return nullable;
                }
            }
        }
    }

    /// One alternative: (whether it is empty, whether it can match empty).
    fn sequence(&mut self, depth: usize) -> (bool, bool) {
        let start = self.i;
        let mut nullable = true;
        // Something a repetition can follow; the last item was a repetition.
        let mut atom: Option<bool> = None;
        let mut repeated = false;
        while self.i < self.c.len() {
            if let Some((op, len)) = self.op(self.i) {
                match op {
                    ')' if depth > 0 => break,
                    '|' => break,
                    ')' => {
                        // An unmatched `)` in an extended expression.
                        self.unknown("an unmatched `)`".into());
                        self.i += len;
                        continue;
                    }
                    '(' => {
                        self.i += len;
                        let n = self.alternation(depth + 1);
                        match self.op(self.i) {
                            Some((')', l)) => self.i += l,
                            _ => self.unknown("an unclosed group".into()),
                        }
                        if let Some(prev) = atom.take() {
                            nullable &= prev;
                        }
                        atom = Some(n);
                        repeated = false;
                        continue;
                    }
                    _ => {
                        // `*`, `+`, `?`, `{…}`
                        self.i += len;
                        if atom.is_none() || repeated {
                            self.issue("regex-edge");
                            continue;
                        }
                        let mut zero = op == '*' || op == '?';
                        if op == '{' {
                            let close: &[char] = if self.ere { &['}'] } else { &['\\', '}'] };
                            let rest = &self.c[self.i..];
                            let Some(end) = rest.windows(close.len()).position(|w| w == close) else {
                                self.unknown("an unclosed interval".into());
                                self.i = self.c.len();
                                continue;
                            };
                            let body: String = rest[..end].iter().collect();
                            if body.is_empty()
                                || body.starts_with(',')
                                || !body.chars().all(|x| x.is_ascii_digit() || x == ',')
                            {
                                self.issue("regex-edge");
                            }
                            zero = body.split(',').next().is_some_and(|m| m.parse() == Ok(0u32));
                            self.i += end + close.len();
                        }
                        if zero {
                            atom = Some(true);
                        }
                        repeated = true;
                        continue;
                    }
                }
            }
            let ch = self.c[self.i];
            let item_nullable = if ch == '\\' && self.i + 1 < self.c.len() {
                let e = self.c[self.i + 1];
                self.i += 2;
                if e.is_ascii_digit() && e != '0' {
                    self.issue("backreference");
                    false
                } else {
                    if !self.out.escapes.contains(&e) {
                        self.out.escapes.push(e);
                    }
                    matches!(e, '<' | '>' | 'b' | 'B')
                }
            } else if ch == '[' {
                self.bracket();
                false
            } else if ch == '^' {
                self.i += 1;
                if atom.is_some() || self.i - 1 != start {
                    if self.ere {
                        self.unknown("a `^` that does not start the expression".into());
                    } else {
                        // A literal `^` in a basic expression (`a^b`, the second of `^^x`):
                        // the substitute reads an anchor.
                        self.issue("anchor-literal");
                    }
                    false
                } else {
                    // The anchor: matches empty, and a `*` after it is literal.
                    continue;
                }
            } else if ch == '$' {
                self.i += 1;
                let last =
                    self.i == self.c.len() || matches!(self.op(self.i), Some((')', _)) | Some(('|', _)));
                if last {
                    self.out.dollar = true;
                    continue;
                } else {
                    if self.ere {
                        self.unknown("a `$` that does not end the expression".into());
                    } else {
                        // A literal `$` in a basic expression (`$HOME`, `a$b`).
                        self.issue("anchor-literal");
                    }
                    false
                }
            } else {
                self.i += 1;
                false
            };
            if let Some(prev) = atom.take() {
                nullable &= prev;
            }
            atom = Some(item_nullable);
            repeated = false;
        }
        if let Some(prev) = atom {
            nullable &= prev;
        }
        (self.i == start, nullable)
    }

    /// A bracket expression starting at `[`: `]` first (after `^`) is literal, `[:…:]` classes
    /// inside; a backslash inside is read otherwise by the substitute.
    fn bracket(&mut self) {
        let c = self.c;
        let mut k = self.i + 1;
        if c.get(k) == Some(&'^') {
            self.issue("negated-bracket");
            k += 1;
        }
        let content = k;
        if c.get(k) == Some(&']') {
            k += 1;
        }
        while k < c.len() && c[k] != ']' {
            if c[k] == '\\' {
                self.unknown("a backslash in a bracket expression (GNU grep reads it as itself)".into());
            }
            if c[k] == '[' && matches!(c.get(k + 1), Some(':') | Some('.') | Some('=')) {
                let close = c[k + 1];
                if c[k..].starts_with(&['[', ':', 'p', 'u', 'n', 'c', 't', ':', ']']) {
                    self.issue("punct-class");
                }
                k += 2;
                let name_start = k;
                while k + 1 < c.len() && !(c[k] == close && c[k + 1] == ']') {
                    k += 1;
                }
                // A class name GNU grep does not know (`[[:word:]]`, `[[:Alpha:]]`): it refuses
                // the pattern (exit 2), the substitute reads one (red team round 6).
                let name: String = c[name_start..k.min(c.len())].iter().collect();
                const CLASSES: [&str; 12] = [
                    "alnum", "alpha", "blank", "cntrl", "digit", "graph", "lower", "print", "punct", "space",
                    "upper", "xdigit",
                ];
                if close == ':' && !CLASSES.contains(&name.as_str()) {
                    self.issue("unknown-class");
                }
                k += 2;
            } else {
                // A range with a character beyond ASCII at an end (`[a-é]`): GNU grep refuses
                // it, the substitute reads it (red team round 5).
                if c[k] == '-' && k > content && c.get(k + 1).is_some_and(|&e| e != ']') {
                    let (from, to) = (c[k - 1], c[k + 1]);
                    if !from.is_ascii() || !to.is_ascii() {
                        self.issue("non-ascii-range");
                    }
                }
                k += 1;
            }
        }
        if k >= c.len() {
            self.unknown("an unclosed bracket expression".into());
        } else if k >= content + 2 && c[content] == ':' && c[k - 1] == ':' {
            // `[:alpha:]` outside brackets: GNU grep rejects it (`character class syntax is
            // [[:space:]]`), the substitute reads a bracket of the characters (red team round 4).
            self.issue("bare-class");
        }
        self.i = k + 1;
    }
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
    let first_start = i;
    while i < args.len()
        && !(args[i].starts_with('-') && args[i].len() > 1)
        && !matches!(args[i].as_str(), "(" | "!" | ")")
    {
        i += 1;
    }
    // A starting point that is `/` or ends in two or more slashes: `%f` and `%h` print it
    // otherwise (red team round 10).
    let slashed_start = args[first_start..i]
        .iter()
        .any(|s| s.ends_with("//") || (!s.is_empty() && s.bytes().all(|b| b == b'/')));
    let mut output = false;
    let mut action = false;
    // `-maxdepth 0`: only the starting points, visited in the order named by both programs.
    let mut start_points_only = false;
    // How each record printed ends (`\n`, `\0`), `None` when a record's end or place does not
    // survive reordering (no terminator, several names on one line, a command's side effects).
    let mut ends: Vec<Option<char>> = Vec::new();
    while i < args.len() {
        let p = args[i].clone();
        i += 1;
        // `-exec rm {} +`, `-exec rm -f {} \;`: it prints nothing and removes the same files in
        // any order (red team round 10: a false "diverges" on a common call; row find-delete).
        let mut removes = false;
        if matches!(p.as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i;
            while i < args.len() && args[i] != ";" && args[i] != "+" {
                i += 1;
            }
            let batched = args.get(i).is_some_and(|a| a == "+");
            let words = &args[start..i.min(args.len())];
            removes = matches!(p.as_str(), "-exec" | "-execdir")
                && words.first().is_some_and(|w| w == "rm")
                && words[1..].iter().all(|w| w == "-f" || w == "{}")
                && words[1..].iter().filter(|w| *w == "{}").count() == 1;
            if !removes {
                ends.push(exec_end(words, batched));
            }
            i += 1;
        } else if program.primaries_with_arg.contains(&p) {
            if p == "-printf" {
                ends.push(args.get(i).and_then(|f| printf_end(f)));
                if slashed_start && args.get(i).is_some_and(|f| printf_names_start(f)) {
                    j.when(table, "find", "printf-slash-start");
                }
                match args.get(i).map(|f| printf_directives(f)) {
                    Some(Directives::Unsupported(d)) => {
                        j.when(table, "find", "printf-unsupported");
                        j.differs.push(format!("the -printf directive `{d}`"));
                    }
                    Some(Directives::Unread(d)) => j.unknown.push(format!(
                        "the -printf directive `{d}` is in no row of the substitution table"
                    )),
                    Some(Directives::Shown) => j.when(table, "find", "printf-shown"),
                    None => {}
                }
            }
            // Red team round 10 (real 2.1.332): `find t -iname 'é.log'` finds `t/É.log`, bfs
            // does not fold letters beyond ASCII; whether such a name exists is known at run time.
            if matches!(p.as_str(), "-iname" | "-ipath" | "-iwholename" | "-iregex")
                && args.get(i).is_some_and(|a| !a.is_ascii())
            {
                j.unknown.push(format!(
                    "`{p}` with a letter beyond ASCII: GNU find folds its case, the substitute does not, and whether a name differing only so exists is known only at run time"
                ));
            }
            if p == "-maxdepth" && args.get(i).is_some_and(|d| d == "0") {
                start_points_only = true;
            }
            i += 1;
        }
        match p.as_str() {
            "-print" | "-ls" => ends.push(Some('\n')),
            "-print0" => ends.push(Some('\0')),
            // They write files, in traversal order.
            "-fprint" | "-fprint0" | "-fprintf" | "-fls" => ends.push(None),
            _ => {}
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
        ) && !removes
        {
            output = true;
        }
        if matches!(p.as_str(), "-delete" | "-quit") || removes {
            action = true;
        }
        j.option(table, "find", &p, &p);
    }
    if !output && !action {
        output = true;
        ends.push(Some('\n'));
    }
    if !output {
        j.when(table, "find", "no-output");
    } else if start_points_only {
        j.when(table, "find", "start-points-only");
    } else if !c.stdout_redirected && order_insensitive(&c.rest, &ends) {
        j.when(table, "find", "order-insensitive");
    } else {
        j.when(table, "find", "ordered-output");
    }
}

/// What a `-printf` format holds that the rows decide.
#[derive(Debug, PartialEq, Eq)]
enum Directives {
    /// Only directives and escapes both programs print alike.
    Shown,
    /// A directive or escape the substitute rejects or prints otherwise (`%Z`, `%TX`, an
    /// unknown `%+` or `\q`).
    Unsupported(String),
    /// A form no row shows (flags other than `-` and `0`, a precision).
    Unread(String),
}

/// Reads a `-printf` format's directives (`%…`) and escapes (`\…`) against what the real runs
/// showed (the `find-printf-unsupported` row and the `find-primaries` commands).
fn printf_directives(format: &str) -> Directives {
    const SINGLE: &str = "%abcdDfFgGhHiklmMnpPsStuUyY";
    // `%TX` (and `%AX`, `%CX`): GNU find prints fractional seconds, the substitute none (seen
    // by hand; times differ between two fixtures, so no row shows it): unread.
    const TIME: &str = "+@aAbBcCdDeFgGhHIjklmMnprRsStTuUVwWxyYZ";
    let c: Vec<char> = format.chars().collect();
    let mut i = 0;
    while i < c.len() {
        let start = i;
        match c[i] {
            '%' => {
                i += 1;
                // The `0` flag (before any width digit) and any flag or width at all.
                let mut zero_flag = false;
                while i < c.len() && matches!(c[i], '-' | '0') {
                    zero_flag |= c[i] == '0';
                    i += 1;
                }
                while i < c.len() && c[i].is_ascii_digit() {
                    i += 1;
                }
                let flagged = i > start + 1;
                let Some(&d) = c.get(i) else {
                    return Directives::Unread("%".into());
                };
                i += 1;
                let shown: String = c[start..i.min(c.len())].iter().collect();
                // The substitute prints nothing for a `0` flag but on `%d`, and for a flag or
                // width on `%%` (red team round 5; `%05d` both print alike).
                if (zero_flag && d != 'd') || (flagged && d == '%') {
                    return Directives::Unsupported(shown);
                }
                if matches!(d, 'A' | 'C' | 'T') {
                    let k = c.get(i).copied();
                    i += 1;
                    let shown: String = c[start..i.min(c.len())].iter().collect();
                    match k {
                        Some(k) if TIME.contains(k) => {}
                        _ => return Directives::Unread(shown),
                    }
                } else if d == '.' || d == '#' || d == ' ' {
                    return Directives::Unread(shown);
                } else if !SINGLE.contains(d) {
                    return Directives::Unsupported(shown);
                }
            }
            '\\' => {
                i += 1;
                match c.get(i) {
                    Some(e) if "abfnrtvc\\".contains(*e) || e.is_digit(8) => i += 1,
                    Some(e) => return Directives::Unsupported(format!("\\{e}")),
                    None => return Directives::Unread("\\".into()),
                }
            }
            _ => i += 1,
        }
    }
    Directives::Shown
}

/// Whether a `-printf` format holds `%f` or `%h` (with any flags or width).
fn printf_names_start(format: &str) -> bool {
    let c: Vec<char> = format.chars().collect();
    let mut i = 0;
    while i < c.len() {
        if c[i] == '%' {
            i += 1;
            while i < c.len() && (matches!(c[i], '-' | '0' | '.' | '#' | ' ' | '+') || c[i].is_ascii_digit())
            {
                i += 1;
            }
            if matches!(c.get(i), Some('f' | 'h')) {
                return true;
            }
        } else if c[i] == '\\' {
            i += 1;
        }
        i += 1;
    }
    false
}

/// How a `-printf` format's output ends: the escape it ends with (`\n`, `\0`), `None` without
/// one or with `\c` (which stops the output).
fn printf_end(format: &str) -> Option<char> {
    if format.contains("\\c") {
        return None;
    }
    if format.ends_with("\\n") && !format.ends_with("\\\\n") {
        Some('\n')
    } else if format.ends_with("\\0") && !format.ends_with("\\\\0") {
        Some('\0')
    } else {
        None
    }
}

/// How the output of an `-exec` command ends, when it prints complete lines and changes
/// nothing: `echo` and `basename` of one name a line; `grep` and `wc` print lines of their own
/// (also with `+`, which gives one command several names). Any other command may have effects
/// in traversal order, or print several names on one line.
fn exec_end(words: &[String], batched: bool) -> Option<char> {
    let (name, rest) = words.split_first()?;
    let options = rest.iter().any(|w| w.starts_with('-'));
    match name.as_str() {
        "echo" | "basename" if !batched && !options => Some('\n'),
        "grep" | "wc" => Some('\n'),
        _ => None,
    }
}

/// What a `grep` reading find's lines from the pipe does with their order.
#[derive(Debug, PartialEq, Eq)]
enum Filter {
    /// It prints the lines it selects, in the order read (`grep -v x`, `grep -i -e a`).
    Passes,
    /// It prints a count or only sets its status (`-c`, `-q`): the order does not matter.
    Summary,
    /// Anything else (line numbers, context, a limit, file operands): not read.
    Other,
}

/// Reads a pipeline command as a `grep` line filter on its standard input (red team: `find |
/// grep -c x` and `find | grep x | sort` were judged by the traversal order, which they drop).
fn line_filter(words: &[String]) -> Filter {
    let Some((name, args)) = words.split_first() else {
        return Filter::Other;
    };
    if name != "grep" {
        return Filter::Other;
    }
    let mut summary = false;
    let mut pattern = false;
    let mut operands = 0;
    let mut i = 0;
    while i < args.len() {
        let a = &args[i];
        i += 1;
        if a == "--" {
            operands += args.len() - i;
            break;
        }
        if let Some(long) = a.strip_prefix("--") {
            match long {
                "invert-match" | "ignore-case" | "fixed-strings" | "extended-regexp" | "basic-regexp"
                | "word-regexp" | "line-regexp" | "no-messages" => {}
                "count" | "quiet" | "silent" => summary = true,
                l if l.starts_with("regexp=") => pattern = true,
                _ => return Filter::Other,
            }
            continue;
        }
        if a.starts_with('-') && a.len() > 1 {
            let letters: Vec<char> = a[1..].chars().collect();
            for (k, l) in letters.iter().enumerate() {
                match l {
                    'v' | 'i' | 'F' | 'E' | 'G' | 'w' | 'x' | 's' => {}
                    'c' | 'q' => summary = true,
                    'e' => {
                        pattern = true;
                        if k + 1 == letters.len() {
                            i += 1;
                        }
                        break;
                    }
                    _ => return Filter::Other,
                }
            }
            continue;
        }
        operands += 1;
    }
    // The pattern operand, and no file: it reads the pipe.
    if operands != usize::from(!pattern) {
        return Filter::Other;
    }
    if summary {
        Filter::Summary
    } else {
        Filter::Passes
    }
}

/// Whether the rest of find's pipeline reads the records find prints (each ending in `ends`) in
/// any order: `grep` filters of whole lines (see [`line_filter`]) and then `wc`, or `sort`
/// without options that keep the input order of equal lines (`-s`, `-u` with keys or folding,
/// `-m`) and with the record terminator find uses; or a `grep` that counts or only exits.
fn order_insensitive(rest: &[Vec<Vec<Seg>>], ends: &[Option<char>]) -> bool {
    let mut k = 0;
    while let Some(words) = rest.get(k) {
        let Some(words) = words.iter().map(|w| literal(w)).collect::<Option<Vec<String>>>() else {
            return false;
        };
        let lines = ends.iter().all(|e| *e == Some('\n'));
        match line_filter(&words) {
            Filter::Passes if lines => k += 1,
            Filter::Summary => return lines,
            _ => break,
        }
    }
    let Some(words) = rest.get(k) else { return false };
    let words: Option<Vec<String>> = words.iter().map(|w| literal(w)).collect();
    let Some(words) = words else { return false };
    let (name, options) = match words.split_first() {
        Some((n, o)) => (n.as_str(), o),
        None => return false,
    };
    let mut letters = String::new();
    // `sort` keys (`-k2`, `-t/ -k2,2`): without -s and -u, lines with equal keys are compared
    // whole, so the output does not depend on the input's order (red team round 10: `find … |
    // sort -t/ -k2` printed alike and was a false "diverges").
    let mut keyed = false;
    let mut takes_value = false;
    for o in options {
        if std::mem::take(&mut takes_value) {
            continue;
        }
        if name == "sort" {
            if let Some(v) = o.strip_prefix("-k").or(o.strip_prefix("-t")) {
                keyed = true;
                takes_value = v.is_empty();
                continue;
            }
            if o.starts_with("--key=") || o.starts_with("--field-separator=") {
                keyed = true;
                continue;
            }
        }
        match o.as_str() {
            "--reverse" => letters.push('r'),
            "--unique" => letters.push('u'),
            "--zero-terminated" => letters.push('z'),
            "--lines" => letters.push('l'),
            "--bytes" => letters.push('c'),
            o if o.starts_with('-') && !o.starts_with("--") && o.len() > 1 => letters.push_str(&o[1..]),
            // An operand (a file to read instead) or another long option.
            _ => return false,
        }
    }
    let zero = letters.contains('z');
    let terminated = |t: char| ends.iter().all(|e| *e == Some(t));
    match name {
        // Counting lines or bytes does not depend on order; words only when records end in `\n`.
        "wc" => {
            letters.chars().all(|l| matches!(l, 'l' | 'c'))
                && !letters.is_empty()
                && ends.iter().all(Option::is_some)
                || letters.chars().all(|l| matches!(l, 'l' | 'c' | 'w')) && terminated('\n')
        }
        "sort" if keyed => {
            !takes_value
                && letters.chars().all(|l| matches!(l, 'r' | 'z' | 'n' | 'f'))
                && terminated(if zero { '\0' } else { '\n' })
        }
        "sort" => {
            (letters.chars().all(|l| matches!(l, 'r' | 'u' | 'z'))
                || letters.chars().all(|l| matches!(l, 'r' | 'z' | 'n' | 'f')))
                && terminated(if zero { '\0' } else { '\n' })
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_expressions() {
        let issues = |p: &str, ere: bool| pattern(p, ere).issues;
        for (p, ere, want) in [
            ("TODO", false, vec![]),
            ("a.b*c", false, vec![]),
            ("\\(foo\\)\\1", false, vec!["backreference"]),
            ("(foo)\\1", true, vec!["backreference"]),
            ("*a", false, vec!["regex-edge"]),
            ("^*a", false, vec!["regex-edge"]),
            ("a**", false, vec!["regex-edge"]),
            ("\\|foo", false, vec!["regex-edge"]),
            ("foo|", true, vec!["regex-edge"]),
            ("x(a|)y", true, vec!["regex-edge"]),
            ("+a", true, vec!["regex-edge"]),
            ("a++", true, vec!["regex-edge"]),
            ("a{,2}x", true, vec!["regex-edge"]),
            ("()", true, vec!["empty-group"]),
            ("\\(\\)", false, vec!["empty-group"]),
            ("a()b", true, vec!["empty-group"]),
            ("()", false, vec![]),
            ("a{2}", true, vec![]),
            ("a{2}", false, vec![]),
            ("a\\{2\\}", false, vec![]),
            ("TODO \\(a\\|b\\)", false, vec![]),
            ("TODO (a|b)", true, vec![]),
            ("[[:digit:]]\\+", false, vec![]),
            ("[:alpha:]", false, vec!["bare-class"]),
            ("x[:digit:]", true, vec!["bare-class"]),
            ("[^:alpha:]", false, vec!["negated-bracket", "bare-class"]),
            ("[:]", false, vec![]),
            ("[[:alpha:]:]", false, vec![]),
            ("[]*]*", false, vec![]),
            ("^foo$", false, vec![]),
            ("x+", false, vec![]),
            ("[status] $ok", false, vec!["anchor-literal"]),
            ("[status] $ok", true, vec![]),
            // Red team round 3: literal anchors in a basic expression, negated brackets,
            // `[:punct:]`.
            ("$HOME", false, vec!["anchor-literal"]),
            ("$1", false, vec!["anchor-literal"]),
            ("a^b", false, vec!["anchor-literal"]),
            ("^^start", false, vec!["anchor-literal"]),
            ("a$b", false, vec!["anchor-literal"]),
            ("x\\|^a", false, vec![]),
            ("\\(^a\\)", false, vec![]),
            ("\\(b$\\)", false, vec![]),
            ("[^a]bar", false, vec!["negated-bracket"]),
            ("[^a]bar", true, vec!["negated-bracket"]),
            ("[a^]bar", false, vec![]),
            ("[[:punct:]]", false, vec!["punct-class"]),
            ("[^[:punct:]]", false, vec!["negated-bracket", "punct-class"]),
        ] {
            assert_eq!(issues(p, ere), want, "{p} ere={ere}");
        }
    }

    #[test]
    fn empty_matches_escapes_and_anchors() {
        for (p, ere, nullable) in [
            ("a*", false, true),
            ("z*", false, true),
            ("", false, true),
            ("()", true, true),
            ("\\<", false, true),
            ("^", false, true),
            ("^$", false, true),
            (".\\?", false, true),
            ("(x|y)*", true, true),
            ("a\\{0,2\\}", false, true),
            ("a*b", false, false),
            ("\\<bar", false, false),
            ("x*$", false, true),
            ("a\\{2\\}", false, false),
            ("(a|b)", true, false),
            ("\\d", false, false),
        ] {
            assert_eq!(pattern(p, ere).nullable, nullable, "{p} ere={ere}");
        }
        assert_eq!(pattern("\\d\\t\\w", false).escapes, vec!['d', 't', 'w']);
        assert_eq!(pattern("\\(a\\)\\+", false).escapes, Vec::<char>::new());
        assert_eq!(pattern("\\(a\\)\\+", true).escapes, vec!['(', ')', '+']);
        assert!(pattern("end$", false).dollar);
        assert!(pattern("a\\|b$", false).dollar);
        assert!(!pattern("$ok", false).dollar);
        assert!(!pattern("[status] $ok", false).dollar);
        assert!(!pattern("[\\d]", false).unknown.is_empty());
    }

    #[test]
    fn printf_directives_by_the_real_runs() {
        assert_eq!(printf_directives("%p %F %05d %-10f\\n"), Directives::Shown);
        assert_eq!(printf_directives("%p %Tk %A@ %C+\\0"), Directives::Shown);
        assert_eq!(
            printf_directives("%p %Z\\n"),
            Directives::Unsupported("%Z".into())
        );
        assert_eq!(printf_directives("%+"), Directives::Unsupported("%+".into()));
        assert_eq!(printf_directives("%p \\q"), Directives::Unsupported("\\q".into()));
        assert_eq!(printf_directives("%p %TX"), Directives::Unread("%TX".into()));
        assert_eq!(printf_directives("%.3p"), Directives::Unread("%.".into()));
    }

    #[test]
    fn find_output_ends() {
        assert_eq!(printf_end("%p\\n"), Some('\n'));
        assert_eq!(printf_end("%p %s\\n"), Some('\n'));
        assert_eq!(printf_end("%p\\0"), Some('\0'));
        assert_eq!(printf_end("%p\\c"), None);
        assert_eq!(printf_end("%p"), None);
        let w = |s: &[&str]| s.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(exec_end(&w(&["echo", "{}"]), false), Some('\n'));
        assert_eq!(exec_end(&w(&["echo", "{}"]), true), None);
        assert_eq!(
            exec_end(&w(&["sh", "-c", "echo $1 >> L", "_", "{}"]), false),
            None
        );
        assert_eq!(exec_end(&w(&["grep", "-l", "x", "{}"]), true), Some('\n'));
    }
}
