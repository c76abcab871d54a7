//! Which scripts perform the same action in a bash of their own and inside a harness's wrapper.
//!
//! Gemini CLI strips a model-written `bash -c SCRIPT` and runs SCRIPT inside its own wrapper:
//! `shopt -u promptvars nullglob extglob nocaseglob dotglob; _bgpids_file=…`, then SCRIPT in a
//! `( … )` subshell whose EXIT trap writes `jobs -p` to that file. SCRIPT is then parsed whole
//! before any of it runs, sees the wrapper's variables, options and trap, its line numbers start
//! after the wrapper's, and its background jobs are the subshell's. Whether the strip changes the
//! action is decided here by a whitelist, never a blacklist: SCRIPT corresponds only when every
//! construct in bash's own parse of it ([`crate::action`] tokens of its `declare -f` form) is in
//! one of the tables below, each row with the reason its action cannot depend on the wrapping.
//! Everything else stays a change of the text.
//!
//! What is not an action here: the shell's own diagnostics name `$0` and a line number (`bash:
//! line 1: x: command not found` in the model's bash, `/usr/bin/bash: line 4: …` in the
//! harness's). The wrapper shifts the line number of every call the harness runs, stripped or
//! not, and `iec check` never counted that for any wrapper (Claude Code's `eval` adds `eval:`);
//! an action is the structure, words, expansions, redirections and assignments. The same holds
//! for the subshell's report of a program killed by a signal (`line 5: PID Killed  TEXT`, which
//! quotes the command as the shell ran it). Programs run by SCRIPT also see another parent
//! process, and a different exported `SHLVL` than under a direct `bash -c` (which execs its last
//! command) or the unstripped call (whose own bash is one level deeper where it does not exec the
//! program: `printenv SHLVL; true`), with bash's exported `_` at another place in their
//! environment: the process tree and the environment bash exports are the wrapper's context, not
//! the call's action (argv, redirections, assignments), the same for every call the harness runs
//! (red team round 3; docs/limits.md). `tests/gemini_strip.rs` runs each row of
//! `tests/data/gemini-strip.toml` in real bash: the stripped text in the wrapper against the call
//! run directly and the call in the wrapper unstripped.
//!
//! One condition is assumed, not checked: `BASH_ENV` unset in the harness's environment (Gemini
//! CLI does not set it). The model's own `bash -c` would source that file (and its `shopt -s`
//! options would reach SCRIPT's globs); the stripped SCRIPT runs in no bash of its own and does
//! not (red team round 2). Old arithmetic (`$[…]`, which reads and assigns variables by bare
//! name) and descriptor-variable redirections (`{NAME}>f`, which assign NAME) are outside the
//! tables (red team round 3). Array assignments (`x=([LINENO]=a)`: subscripts are arithmetic on
//! any variable by name) and locale assignments (`LC_ALL=C` changes how `bash -c`, which parses
//! line by line, decodes `$'\u…'` on the next line; the subshell is parsed whole) are left out.

use crate::action::{self, literal, shown as show, Seg, Token};

/// One row of a whitelist: what is allowed and why it acts the same in both bashes.
#[derive(Debug, Clone, Copy)]
pub struct Allowed {
    /// The construct (operator, command name, variable name).
    pub name: &'static str,
    /// Why its action cannot depend on the wrapping.
    pub reason: &'static str,
}

const fn row(name: &'static str, reason: &'static str) -> Allowed {
    Allowed { name, reason }
}

/// Operators between commands. Not `&` (the job would be the wrapper subshell's: its pid lands
/// in Gemini's pid file), not `(`/`)` nor compound commands.
pub const OPERATORS: &[Allowed] = &[
    row(";", "runs the commands one after the other, in either bash"),
    row(
        "&&",
        "runs the next command on success; the status is the command's own",
    ),
    row(
        "||",
        "runs the next command on failure; the status is the command's own",
    ),
    row(
        "|",
        "a pipeline's commands run in child processes of either bash, and the pipeline is waited \
         for: no job is left for the wrapper's `jobs -p`",
    ),
    row("|&", "`2>&1 |`: a redirection and a pipe, as for `|`"),
];

/// Reserved words allowed where a command starts.
pub const RESERVED: &[Allowed] = &[row("!", "negates the pipeline's status; reads and sets no state")];

/// bash builtins a command may name: they print or test their arguments and read no shell state
/// the wrapper changed (no variable by name, no option, trap, job, alias or function). Each has
/// its argument rule in [`builtin_args`].
pub const BUILTINS: &[Allowed] = &[
    row("echo", "prints its arguments (xpg_echo is off in both bashes)"),
    row(
        "printf",
        "prints its arguments by a format; only when the first argument is a static format not \
         starting with `-` (`printf -v NAME` assigns a variable, such as the wrapper's \
         `_bgpids_file`)",
    ),
    row(
        "test",
        "tests files and strings; only the one-, two- and three-argument forms whose operator is \
         static and in TEST_UNARY/TEST_BINARY (not `-v`/`-R`, which read a variable by name, nor \
         `-o`, a shell option), with no unquoted expansion that could split into more arguments",
    ),
    row("[", "`test` with a closing `]`: the same rule"),
    row("true", "does nothing, status 0"),
    row("false", "does nothing, status 1"),
    row(
        ":",
        "does nothing, status 0 (its arguments are expanded by the same rules)",
    ),
];

/// `test` unary operators allowed (file and string tests: they read the file system and the
/// operand, nothing of the shell).
pub const TEST_UNARY: &[&str] = &[
    "-a", "-b", "-c", "-d", "-e", "-f", "-g", "-h", "-k", "-p", "-r", "-s", "-t", "-u", "-w", "-x", "-G",
    "-L", "-N", "-O", "-S", "-n", "-z",
];

/// `test` binary operators allowed (string, integer and file comparisons of the operands).
pub const TEST_BINARY: &[&str] = &[
    "=", "==", "!=", "<", ">", "-eq", "-ne", "-lt", "-le", "-gt", "-ge", "-nt", "-ot", "-ef",
];

/// Redirection operators allowed, of descriptors 0, 1 and 2 only (both bashes have the same
/// descriptors open: the wrapper opens none). Here-documents and here-strings are not read.
pub const REDIRECTIONS: &[Allowed] = &[
    row("<", "opens the file for reading"),
    row(">", "truncates or creates the file (noclobber is off in both)"),
    row(">|", "as `>`"),
    row(">>", "appends to the file"),
    row("<>", "opens the file for reading and writing"),
    row("&>", "stdout and stderr to the file"),
    row("&>>", "stdout and stderr appended to the file"),
    row(
        ">&",
        "duplicates 0, 1 or 2, or closes with `-` (no other descriptor)",
    ),
    row("<&", "as `>&`"),
];

/// Every bash 5.2 builtin (`compgen -b`) and reserved word (`compgen -k`): a command name in
/// this list and not in [`BUILTINS`] is not judged (`tests/gemini_strip.rs` holds the list to
/// the real bash's). A name not in it runs a program found on `PATH`, the same file in both.
pub const BASH_BUILTINS_AND_KEYWORDS: &[&str] = &[
    ".",
    ":",
    "[",
    "alias",
    "bg",
    "bind",
    "break",
    "builtin",
    "caller",
    "cd",
    "command",
    "compgen",
    "complete",
    "compopt",
    "continue",
    "declare",
    "dirs",
    "disown",
    "echo",
    "enable",
    "eval",
    "exec",
    "exit",
    "export",
    "false",
    "fc",
    "fg",
    "getopts",
    "hash",
    "help",
    "history",
    "jobs",
    "kill",
    "let",
    "local",
    "logout",
    "mapfile",
    "popd",
    "printf",
    "pushd",
    "pwd",
    "read",
    "readarray",
    "readonly",
    "return",
    "set",
    "shift",
    "shopt",
    "source",
    "suspend",
    "test",
    "times",
    "trap",
    "true",
    "type",
    "typeset",
    "ulimit",
    "umask",
    "unalias",
    "unset",
    "wait",
    "if",
    "then",
    "else",
    "elif",
    "fi",
    "case",
    "esac",
    "for",
    "select",
    "while",
    "until",
    "do",
    "done",
    "in",
    "function",
    "time",
    "{",
    "}",
    "!",
    "[[",
    "]]",
    "coproc",
];

/// Variables other than [`ordinary_name`]s that may be read or assigned: the environment both
/// bashes import unchanged from the harness (bash sets none of them at start-up when the
/// environment has them, and the wrapper sets none).
pub const ENVIRONMENT: &[Allowed] = &[
    row("HOME", "from the environment; also the value of `~`"),
    row(
        "PATH",
        "from the environment; the wrapper runs only builtins, so no program is hashed",
    ),
    row(
        "PWD",
        "from the environment, checked against the same working directory",
    ),
    row("USER", "from the environment"),
    row("LOGNAME", "from the environment"),
    row("TERM", "from the environment"),
    row("TMPDIR", "from the environment"),
];

/// Lowercase names bash gives a meaning to: not ordinary.
pub const SPECIAL_LOWERCASE: &[Allowed] = &[
    row("auto_resume", "read by bash's job control"),
    row("histchars", "read by bash's history expansion"),
];

/// An ordinary variable: a lowercase name (`[a-z][a-z0-9_]*`) bash gives no meaning to. Its
/// value is the environment's or what the script assigned, in either bash; the wrapper's own
/// variables (`_bgpids_file`, `__code`) and bash's (`BASH*`, `LINENO`, `SHLVL`, `PPID`, …) start
/// with `_` or an upper-case letter, and the special parameters (`$0`, `$$`, `$!`, `$-`, `$_`,
/// `$@`, …) are not names.
pub fn ordinary_name(name: &str) -> bool {
    let mut c = name.chars();
    c.next().is_some_and(|f| f.is_ascii_lowercase())
        && c.all(|x| x.is_ascii_lowercase() || x.is_ascii_digit() || x == '_')
        && !SPECIAL_LOWERCASE.iter().any(|r| r.name == name)
}

fn variable_allowed(name: &str) -> bool {
    ordinary_name(name) || ENVIRONMENT.iter().any(|r| r.name == name)
}

/// How deep command substitutions are followed.
const MAX_DEPTH: usize = 4;

/// Why `canonical` (bash's `declare -f` form of a script) may act differently inside the
/// wrapper than in a bash of its own: `None` when every construct is whitelisted. `parse` gives
/// bash's canonical form of a command substitution's text (`None` when it does not parse).
pub fn not_neutral(canonical: &str, parse: &mut dyn FnMut(&str) -> Option<String>) -> Option<String> {
    check(canonical, parse, 0).err()
}

fn check(canonical: &str, parse: &mut dyn FnMut(&str) -> Option<String>, depth: usize) -> Result<(), String> {
    let Some(tokens) = action::action(canonical) else {
        return Err("a here-document or quoting the action reader does not read".into());
    };
    let mut cmd = Command::default();
    let mut i = 0;
    while i < tokens.len() {
        match &tokens[i] {
            Token::Op(o) => {
                cmd.finish()?;
                if !OPERATORS.iter().any(|r| r.name == o) {
                    return Err(format!("the operator `{o}`"));
                }
            }
            Token::Reserved(r) => {
                if !(cmd.is_empty() && RESERVED.iter().any(|x| x.name == r)) {
                    return Err(format!("the reserved word `{r}` (a compound command)"));
                }
            }
            Token::Raw(r) => return Err(format!("`{}` (a conditional or arithmetic command)", short(r))),
            Token::Redirect(r) => {
                let Some(Token::Word(target)) = tokens.get(i + 1) else {
                    return Err(format!("the redirection `{r}` without a word"));
                };
                redirect(r, target)?;
                word(target, parse, depth)?;
                cmd.redirected = true;
                i += 1;
            }
            Token::Assign(name, value) => {
                let n = name.trim_end_matches('=').trim_end_matches('+');
                if !variable_allowed(n) {
                    return Err(format!("an assignment to `{n}`"));
                }
                // `x=([LINENO]=a)`: the subscripts of an array assignment are arithmetic, which
                // reads and assigns variables by name, without `$` (the wrapper's `_bgpids_file`,
                // `LINENO`, `BASH_SUBSHELL`; red team round 2).
                if show(value).starts_with('(') {
                    return Err(format!(
                        "an array assignment to `{n}` (its subscripts are arithmetic on any variable)"
                    ));
                }
                word(value, parse, depth)?;
                cmd.assigned = true;
            }
            Token::Word(segs) => {
                word(segs, parse, depth)?;
                if cmd.name.is_none() {
                    // A lone unquoted `[` is no pattern (nothing closes it): the word is `[`.
                    let lone_bracket = segs == &[Seg::Dyn("[".into(), false)];
                    let name = lone_bracket
                        .then(|| "[".to_string())
                        .or_else(|| literal(segs))
                        .ok_or_else(|| {
                            format!("the command name `{}` is known only at run time", show(segs))
                        })?;
                    command_name(&name)?;
                    cmd.name = Some(name);
                } else {
                    cmd.args.push(segs.clone());
                }
            }
        }
        i += 1;
    }
    cmd.finish()
}

/// The simple command being read.
#[derive(Default)]
struct Command {
    name: Option<String>,
    args: Vec<Vec<Seg>>,
    redirected: bool,
    assigned: bool,
}

impl Command {
    fn is_empty(&self) -> bool {
        self.name.is_none() && !self.redirected && !self.assigned
    }

    /// Ends the command: its builtin's argument rule; a redirection needs a command.
    fn finish(&mut self) -> Result<(), String> {
        let c = std::mem::take(self);
        match &c.name {
            None if c.redirected => Err("a redirection without a command".into()),
            Some(n) => builtin_args(n, &c.args),
            None => Ok(()),
        }
    }
}

fn command_name(name: &str) -> Result<(), String> {
    if name.contains('/') || !BASH_BUILTINS_AND_KEYWORDS.contains(&name) {
        return Ok(());
    }
    if BUILTINS.iter().any(|r| r.name == name) {
        return Ok(());
    }
    Err(format!("the bash builtin or reserved word `{name}`"))
}

/// The argument rule of a whitelisted builtin (see [`BUILTINS`]); programs take any words.
fn builtin_args(name: &str, args: &[Vec<Seg>]) -> Result<(), String> {
    match name {
        "printf" => match args.first().and_then(|a| literal(a)) {
            Some(f) if !f.starts_with('-') => Ok(()),
            _ => Err("`printf` without a static first argument that is not an option".into()),
        },
        "test" | "[" => {
            let mut a: Vec<&Vec<Seg>> = args.iter().collect();
            if name == "[" {
                if a.last().and_then(|l| literal(l)).as_deref() != Some("]") {
                    return Err("`[` without a closing `]`".into());
                }
                a.pop();
            }
            test_args(&a).map_err(|e| format!("`{name}` {e}"))
        }
        _ => Ok(()),
    }
}

fn test_args(a: &[&Vec<Seg>]) -> Result<(), String> {
    // An unquoted expansion may split into several arguments or none: the form is then unknown.
    if a.iter()
        .flat_map(|w| w.iter())
        .any(|s| matches!(s, Seg::Dyn(d, false) if d != "~"))
    {
        return Err("with an unquoted expansion (the number of arguments is known at run time)".into());
    }
    let lit = |w: &Vec<Seg>| literal(w);
    let a = match a.first().map(|w| lit(w)) {
        Some(Some(b)) if b == "!" && a.len() > 1 => &a[1..],
        _ => a,
    };
    let ok = match a.len() {
        1 => true,
        2 => lit(a[0]).is_some_and(|o| TEST_UNARY.contains(&o.as_str())),
        3 => lit(a[1]).is_some_and(|o| TEST_BINARY.contains(&o.as_str())),
        _ => false,
    };
    if ok {
        Ok(())
    } else {
        Err("with operators outside TEST_UNARY/TEST_BINARY or more than three arguments".into())
    }
}

/// Redirections of the standard descriptors to files, or between them.
fn redirect(op: &str, target: &[Seg]) -> Result<(), String> {
    if let Some(name) = op.strip_prefix('{').and_then(|r| r.split('}').next()) {
        // `{NAME}>f`: bash opens a new descriptor and assigns its number to NAME (red team
        // round 3: `{_bgpids_file}>f` replaces the wrapper's pid file path).
        return Err(format!(
            "the redirection `{op}`, which assigns a descriptor number to the variable `{name}`"
        ));
    }
    let fd: String = op.chars().take_while(|c| c.is_ascii_digit()).collect();
    let bare = &op[fd.len()..];
    if !matches!(fd.as_str(), "" | "0" | "1" | "2") {
        return Err(format!(
            "the redirection `{op}` of a descriptor other than 0, 1 or 2"
        ));
    }
    if !REDIRECTIONS.iter().any(|r| r.name == bare) {
        return Err(format!("the redirection `{op}`"));
    }
    match bare {
        ">&" | "<&" => match literal(target).as_deref() {
            Some("0" | "1" | "2" | "-") => Ok(()),
            _ => Err(format!(
                "the redirection `{op}` to a descriptor other than 0, 1, 2 or -"
            )),
        },
        _ => Ok(()),
    }
}

/// A word's expansions: ordinary or environment variables by name, `~`, patterns, brace
/// expansion of static text, and command substitutions holding only whitelisted commands.
fn word(segs: &[Seg], parse: &mut dyn FnMut(&str) -> Option<String>, depth: usize) -> Result<(), String> {
    for s in segs {
        let Seg::Dyn(d, _) = s else { continue };
        if matches!(d.as_str(), "*" | "?" | "[" | "~") {
            // Pathname expansion: nullglob, dotglob, nocaseglob, extglob, failglob and globstar
            // are off in both bashes; `~` is HOME in both.
            continue;
        }
        if let Some(inner) = d.strip_prefix("$(").and_then(|x| x.strip_suffix(')')) {
            if inner.starts_with('(') || depth >= MAX_DEPTH {
                return Err(format!("`{}`", short(d)));
            }
            let Some(c) = parse(inner) else {
                return Err(format!("the command substitution `{}` does not parse", short(d)));
            };
            check(&c, parse, depth + 1).map_err(|e| format!("{e}, in `{}`", short(d)))?;
            continue;
        }
        if d.starts_with("$[") {
            // `$[…]`: bash's old arithmetic expansion, which reads and assigns variables by bare
            // name (`$[LINENO]`, `$[_bgpids_file=7]`; red team round 3).
            return Err(format!("the arithmetic expansion `{}`", short(d)));
        }
        let name = d
            .strip_prefix("${")
            .and_then(|x| x.strip_suffix('}'))
            .or_else(|| d.strip_prefix('$'));
        if let Some(n) = name {
            if variable_allowed(n) {
                continue;
            }
            return Err(format!("the expansion `{}`", short(d)));
        }
        if !d.starts_with(['$', '`', '~', '<', '>', '!', '@', '+']) && d.contains('{') {
            // A brace expansion (the whole word as written): static text, unless it holds an
            // expansion or substitution.
            if !d.contains(['$', '`', '(']) {
                continue;
            }
        }
        return Err(format!("the expansion `{}`", short(d)));
    }
    Ok(())
}

fn short(s: &str) -> String {
    let mut t: String = s.chars().take(40).collect();
    if t.len() < s.len() {
        t.push('…');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(canonical: &str) -> Option<String> {
        not_neutral(canonical, &mut |t| Some(format!("    {t}")))
    }

    #[test]
    fn constructs_by_table() {
        for ok in [
            "    argvprobe 'a b' x!y",
            "    echo a | cat && printf '%s\\n' \"$HOME\" || false",
            "    x=1;\n    echo $x ${y} ~/d *.rs {a,b}",
            "    [ -f \"$f\" ] && test a = \"$b\"",
            "    ! grep q f 2>&1 > out",
            "    echo \"$(date +%F)\"",
        ] {
            assert_eq!(verdict(ok), None, "{ok}");
        }
        for (bad, why) in [
            ("    sleep 1 &", "operator `&`"),
            ("    jobs", "builtin or reserved word `jobs`"),
            ("    echo $LINENO", "`$LINENO`"),
            ("    echo $_bgpids_file", "`$_bgpids_file`"),
            ("    echo ${x?}", "`${x?}`"),
            ("    _bgpids_file=x", "assignment to `_bgpids_file`"),
            ("    printf -v x %s y", "printf"),
            ("    test -v _bgpids_file", "operators"),
            ("    [ -f $f ]", "unquoted"),
            ("    $cmd a", "run time"),
            ("    echo 1>&3", "descriptor"),
            ("    echo \"$(trap -p)\"", "`trap`"),
            ("    if true; then\n        :;\n    fi", "reserved word `if`"),
            ("    echo $0 $$ $! $- $_", "`$0`"),
            ("    echo ${#x} $((1))", "`${#x}`"),
            ("    histchars=x", "`histchars`"),
            // Red team round 3: old arithmetic reads and assigns by bare name; `{NAME}>`
            // assigns a descriptor number.
            (
                "    echo hi > out$[LINENO].txt",
                "arithmetic expansion `$[LINENO]`",
            ),
            ("    echo $[_bgpids_file=7]", "`$[_bgpids_file=7]`"),
            ("    echo \"$[BASH_SUBSHELL]\"", "`$[BASH_SUBSHELL]`"),
            ("    /bin/kill $[PPID]", "`$[PPID]`"),
            ("    echo $[_]", "`$[_]`"),
            ("    true {_bgpids_file}> f", "variable `_bgpids_file`"),
            ("    cat {fd}< f", "variable `fd`"),
        ] {
            let got = verdict(bad).unwrap_or_else(|| panic!("{bad} judged neutral"));
            assert!(got.contains(why), "{bad}: {got}");
        }
    }
}
