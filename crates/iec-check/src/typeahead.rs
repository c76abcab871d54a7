//! Typed lines read as input. A terminal launch types the whole text into an interactive shell
//! at once; the shell reads one complete command, runs it, and only then reads the next line.
//! A command that reads its standard input (the terminal) while it runs takes the lines typed
//! after it as its input: they never run as commands (red team round 6: `head -n1⏎touch F` on
//! `tmux-send-keys` printed `touch F; tmux wait -S done`, and the harness waited forever).
//!
//! [`readers`] reads the commands of the lines run before the last one (bash's canonical form,
//! read by [`crate::action`]) and says, for each simple command whose standard input is the
//! terminal (no `<`-redirection of fd 0, not behind a `|`), whether it reads it: `Reads` for
//! commands that always do (`read`, `cat` with no file, …), `Maybe` for programs this table
//! does not know, nothing for commands that never read it (most builtins, file utilities).

use crate::action::{Seg, Token};

/// What a command does with a standard input that is the terminal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stdin {
    /// It reads it: the typed lines after it are its input.
    Reads(String),
    /// It may read it (a program this table does not know, a command substitution).
    Maybe(String),
}

/// Builtins and programs that never read their standard input (whatever their operands).
const NEVER: &[&str] = &[
    // bash builtins (bash manual §4.1, §4.2) but `read`, `mapfile`/`readarray`, `source`/`.`,
    // `eval`, `exec`, `command`, `builtin`, `coproc` and `fc` (which run or read something).
    ":", "true", "false", "echo", "printf", "cd", "pwd", "pushd", "popd", "dirs", "export", "unset", "set",
    "shopt", "alias", "unalias", "declare", "typeset", "local", "readonly", "type", "hash", "umask", "let",
    "shift", "exit", "return", "break", "continue", "test", "[", "times", "trap", "wait", "jobs", "help",
    "history", "enable", "logout", "disown", "suspend", "ulimit", "getopts", "compgen", "complete",
    "compopt", "bind", "caller",
    // file utilities that take their input from operands, never from stdin (GNU coreutils).
    "ls", "mkdir", "rmdir", "touch", "chmod", "chown", "chgrp", "stat", "du", "df", "basename", "dirname",
    "realpath", "readlink", "date", "sleep", "whoami", "id", "uname", "hostname", "which", "mktemp",
    "truncate", "sync", "nproc", "seq", "yes", "printenv", "tty", "groups",
];

/// Programs that may ask on the terminal before acting on a file: always with `-i`, and `rm`
/// and `mv` for a write-protected file unless `-f`.
const PROMPTING: &[&str] = &["rm", "mv", "cp", "ln"];

/// The builtins among [`NEVER`]: for them `-` is an ordinary word.
const BUILTINS: &[&str] = &[
    ":", "true", "false", "echo", "printf", "cd", "pwd", "pushd", "popd", "dirs", "export", "unset", "set",
    "shopt", "alias", "unalias", "declare", "typeset", "local", "readonly", "type", "hash", "umask", "let",
    "shift", "exit", "return", "break", "continue", "test", "[", "times", "trap", "wait", "jobs", "help",
    "history", "enable", "logout", "disown", "suspend", "ulimit", "getopts", "compgen", "complete",
    "compopt", "bind", "caller",
];

/// Whether a file name is the terminal (or this process's standard input, which is it),
/// spelled with any number of `/`, `.` and `..` steps (`//dev/stdin`, `/dev/./tty`).
fn names_the_terminal(t: &str) -> bool {
    if !t.starts_with('/') {
        return false;
    }
    let mut parts: Vec<&str> = vec![];
    for p in t.split('/') {
        match p {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            p => parts.push(p),
        }
    }
    let t = format!("/{}", parts.join("/"));
    names_the_terminal_plainly(&t)
}

fn names_the_terminal_plainly(t: &str) -> bool {
    t == "/dev/stdin"
        || t == "/dev/tty"
        || t.starts_with("/dev/pts/")
        || t.starts_with("/dev/fd/")
        || (t.starts_with("/proc/") && t.contains("/fd/"))
}

/// Filters: they read stdin when no file operand is given; `operands_before_files` is how many
/// leading operands are not files (grep's pattern, sed's and awk's script).
const FILTERS: &[(&str, usize)] = &[
    ("cat", 0),
    ("head", 0),
    ("tail", 0),
    ("sort", 0),
    ("uniq", 0),
    ("wc", 0),
    ("cut", 0),
    ("nl", 0),
    ("tac", 0),
    ("od", 0),
    ("base64", 0),
    ("md5sum", 0),
    ("sha256sum", 0),
    ("grep", 1),
    ("sed", 1),
    ("awk", 1),
];

/// Always read stdin (the terminal), whatever their operands.
const ALWAYS: &[&str] = &["read", "mapfile", "readarray", "tr", "tee", "xargs"];

/// The commands among `tokens` that read, or may read, the terminal. A compound command whose
/// standard input is redirected (`done < file`) or a pipe (`… | while read`) takes its inner
/// commands' reads off the terminal.
pub fn readers(tokens: &[Token]) -> Vec<Stdin> {
    let mut out = vec![];
    // For each open compound: how many readers were found before it, and whether it is piped.
    let mut open: Vec<(usize, bool)> = vec![];
    let mut i = 0;
    let mut piped = false;
    while i < tokens.len() {
        let closes = match &tokens[i] {
            Token::Reserved(w) if OPENERS.contains(&w.as_str()) => {
                open.push((out.len(), piped));
                false
            }
            Token::Op(op) if op == "(" => {
                open.push((out.len(), piped));
                false
            }
            Token::Reserved(w) => CLOSERS.contains(&w.as_str()),
            Token::Op(op) => op == ")",
            _ => {
                // One simple command: assignments, words and redirections up to an operator or
                // reserved word.
                let start = i;
                while i < tokens.len()
                    && !matches!(tokens[i], Token::Op(_) | Token::Reserved(_) | Token::Raw(_))
                {
                    i += 1;
                }
                if let Some(r) = simple(&tokens[start..i], piped) {
                    out.push(r);
                }
                piped = false;
                continue;
            }
        };
        if closes {
            if let Some((before, was_piped)) = open.pop() {
                let redirected = matches!(tokens.get(i + 1), Some(Token::Redirect(r)) if r.starts_with("0<"));
                if was_piped || redirected {
                    out.truncate(before);
                }
            }
        }
        piped = matches!(&tokens[i], Token::Op(op) if op == "|" || op == "|&");
        i += 1;
    }
    out
}

const OPENERS: &[&str] = &["if", "while", "until", "for", "select", "case", "{"];
const CLOSERS: &[&str] = &["fi", "done", "esac", "}"];

/// Whether one simple command reads the terminal (`piped`: its stdin is a pipe).
fn simple(cmd: &[Token], piped: bool) -> Option<Stdin> {
    let mut words: Vec<&[Seg]> = vec![];
    let mut stdin_redirected = piped;
    let mut k = 0;
    while k < cmd.len() {
        match &cmd[k] {
            Token::Redirect(r) => {
                let target = match cmd.get(k + 1) {
                    Some(Token::Word(w)) => literal(w),
                    _ => None,
                };
                if let Some(t) = target.as_deref().filter(|t| names_the_terminal(t)) {
                    return Some(Stdin::Reads(format!("a redirection from `{t}`")));
                }
                // `<&0`, `<&1`, `<&2`: the terminal again; `<&-` closes it.
                let dup_of_terminal = r == "0<&"
                    && target
                        .as_deref()
                        .is_some_and(|t| t == "0" || t == "1" || t == "2");
                if r.starts_with("0<") && !dup_of_terminal {
                    stdin_redirected = true;
                }
                // The redirection's target word is not an operand.
                k += 2;
                continue;
            }
            Token::Word(w) => words.push(w),
            Token::Assign(_, v) => {
                if let Some(s) = code_running(v) {
                    return Some(Stdin::Maybe(s));
                }
            }
            _ => {}
        }
        k += 1;
    }
    for w in &words {
        if let Some(s) = code_running(w) {
            return Some(Stdin::Maybe(s));
        }
    }
    if stdin_redirected {
        return None;
    }
    let Some(name) = words.first().and_then(|w| literal(w)) else {
        return words
            .first()
            .map(|_| Stdin::Maybe("a command whose name is known only when it runs".into()));
    };
    let operands: Vec<&[Seg]> = words[1..]
        .iter()
        .copied()
        .filter(|w| literal(w).is_none_or(|s| !s.starts_with('-') || s == "-"))
        .collect();
    // A file operand that is the terminal itself, whatever the command, also as an option's
    // attached argument (`-f/dev/stdin`, `--file=/dev/tty`).
    let attached = |w: &str| -> Vec<String> {
        let mut v = vec![w.to_string()];
        if let Some((_, a)) = w.split_once('=') {
            v.push(a.to_string());
        }
        if w.starts_with('-') && !w.starts_with("--") && w.len() > 2 {
            v.push(w[2..].to_string());
        }
        v
    };
    if let Some(t) = words[1..]
        .iter()
        .filter_map(|w| literal(w))
        .find(|w| attached(w).iter().any(|a| names_the_terminal(a)))
    {
        return Some(Stdin::Reads(format!("`{name} {t}`")));
    }
    // `-` as an operand of a program (not of a builtin such as `echo -` or `cd -`) is its
    // standard input (`date -f -`, `cat -`, `du --files0-from=-`).
    if !BUILTINS.contains(&name.as_str())
        && words[1..]
            .iter()
            .filter_map(|w| literal(w))
            .any(|w| w == "-" || w.ends_with("=-"))
    {
        return Some(Stdin::Reads(format!("`{name} -`")));
    } // Programs that ask before acting on a file unless told not to.
    if PROMPTING.contains(&name.as_str()) {
        let forced = words[1..]
            .iter()
            .filter_map(|w| literal(w))
            .any(|w| w == "--force" || (w.starts_with('-') && !w.starts_with("--") && w.contains('f')));
        let asked = words[1..].iter().filter_map(|w| literal(w)).any(|w| {
            w == "--interactive"
                || w.starts_with("--interactive=")
                || (w.starts_with('-') && !w.starts_with("--") && w.contains('i'))
        });
        if asked || (!forced && (name == "rm" || name == "mv")) {
            return Some(Stdin::Maybe(format!(
                "`{name}` (it may ask on the terminal before acting on a file)"
            )));
        }
        return None;
    }
    if NEVER.contains(&name.as_str()) {
        return None;
    }
    if ALWAYS.contains(&name.as_str()) {
        if (name == "read" || name == "mapfile" || name == "readarray")
            && words[1..]
                .iter()
                .any(|w| literal(w).is_some_and(|s| s.starts_with("-u")))
        {
            return Some(Stdin::Maybe(format!("`{name} -u`")));
        }
        return Some(Stdin::Reads(format!("`{name}`")));
    }
    if let Some(&(_, skip)) = FILTERS.iter().find(|(n, _)| *n == name) {
        let files: Vec<&&[Seg]> = operands.iter().skip(skip).collect();
        // An operand known only at run time may be empty (`cat $NOPE`): then no file is named.
        if files.iter().any(|w| literal(w).is_none()) {
            return Some(Stdin::Maybe(format!(
                "`{name}` with an operand known only when it runs"
            )));
        }
        let option_args = words[1..]
            .iter()
            .filter(|w| literal(w).is_some_and(|s| s.starts_with('-') && s != "-"))
            .count();
        // Options with their own arguments (`head -n 1`, `grep -e P`) make the operand count
        // uncertain: without a file operand it reads, with one it is judged unsure.
        if files.is_empty() {
            return Some(Stdin::Reads(format!("`{name}` without a file operand")));
        }
        if files.iter().any(|w| literal(w).as_deref() == Some("-")) {
            return Some(Stdin::Reads(format!("`{name} -`")));
        }
        if option_args > 0 {
            return Some(Stdin::Maybe(format!(
                "`{name}` with options that may take an operand"
            )));
        }
        return None;
    }
    Some(Stdin::Maybe(format!("`{name}`")))
}

/// A word's value when it is all literal.
pub fn literal(w: &[Seg]) -> Option<String> {
    let mut s = String::new();
    for seg in w {
        match seg {
            Seg::Lit(l) => s.push_str(l),
            Seg::Dyn(..) => return None,
        }
    }
    Some(s)
}

/// A command substitution (or process substitution) in a word: it runs a command whose
/// standard input is the terminal too.
fn code_running(w: &[Seg]) -> Option<String> {
    w.iter().find_map(|s| match s {
        Seg::Dyn(d, _)
            if d.starts_with("$(") && !d.starts_with("$((") || d.starts_with('`') || d.starts_with("<(") =>
        {
            Some(format!("the command substitution `{d}`"))
        }
        _ => None,
    })
}

/// Bash's canonical form with each here-document made a plain input redirection (`0< HEREDOC`)
/// and its body removed: what [`crate::action`] reads, for this question only (a here-document
/// gives its command a standard input that is not the terminal).
pub fn without_heredocs(canonical: &str) -> String {
    let mut out = String::new();
    let mut pending: Vec<(String, bool)> = vec![];
    for line in canonical.split_inclusive('\n') {
        if let Some((delim, tabs)) = pending.first() {
            let body = line.trim_end_matches('\n');
            let body = if *tabs {
                body.trim_start_matches('\t')
            } else {
                body
            };
            if body == delim {
                pending.remove(0);
            }
            continue;
        }
        let b = line.as_bytes();
        let mut i = 0;
        let mut quote: Option<u8> = None;
        while i < b.len() {
            let c = b[i];
            match quote {
                Some(q) => {
                    if c == b'\\' && q == b'"' {
                        out.push(c as char);
                        i += 1;
                    } else if c == q {
                        quote = None;
                    }
                }
                None if c == b'\'' || c == b'"' => quote = Some(c),
                None if c == b'\\' => {
                    out.push(c as char);
                    i += 1;
                }
                None if b[i..].starts_with(b"<<") && !b[i..].starts_with(b"<<<") => {
                    let mut j = i + 2;
                    let tabs = b.get(j) == Some(&b'-');
                    j += usize::from(tabs);
                    while b.get(j) == Some(&b' ') {
                        j += 1;
                    }
                    let start = j;
                    let mut delim = String::new();
                    while j < b.len() && !b" \t\n;|&<>()".contains(&b[j]) {
                        match b[j] {
                            q @ (b'\'' | b'"') => {
                                let close = b[j + 1..]
                                    .iter()
                                    .position(|&x| x == q)
                                    .map_or(b.len(), |p| j + 1 + p);
                                delim.push_str(&line[j + 1..close.min(line.len())]);
                                j = close + 1;
                            }
                            b'\\' => {
                                if let Some(&n) = b.get(j + 1) {
                                    delim.push(n as char);
                                }
                                j += 2;
                            }
                            _ => {
                                let ch = line[j..].chars().next().unwrap();
                                delim.push(ch);
                                j += ch.len_utf8();
                            }
                        }
                    }
                    if j == start {
                        out.push_str(&line[i..]);
                        break;
                    }
                    pending.push((delim, tabs));
                    out.push_str("< HEREDOC");
                    i = j.min(b.len());
                    continue;
                }
                None => {}
            }
            // Whole characters (the line is UTF-8).
            let ch = line[i..].chars().next().unwrap();
            out.push(ch);
            i += ch.len_utf8();
        }
    }
    out
}

/// Variables an interactive shell acts on between the commands of a terminal launch, and
/// `bash -c` never: the prompt commands it runs (`PROMPT_COMMAND`, `PS0`, `$(…)` in `PS1`),
/// the prompt the harness waits for, and the history character (red team round 7:
/// `PROMPT_COMMAND='touch F'` made the next prompt run `touch F`).
const INTERACTIVE_VARS: &[&str] = &[
    "PROMPT_COMMAND",
    "PS0",
    "PS1",
    "PS2",
    "histchars",
    "BASH_ALIASES",
    "BASH_CMDS",
];

/// Builtins that assign a variable named by one of their words: a name known only at run time
/// may be any of [`INTERACTIVE_VARS`] (red team round 8: `v=PROMPT_COMMAND; read $v`).
const ASSIGNING: &[&str] = &[
    "declare",
    "typeset",
    "local",
    "export",
    "readonly",
    "unset",
    "read",
    "mapfile",
    "readarray",
    "let",
];

/// Builtins whose effect on an interactive shell reaches the lines it reads after them: key
/// bindings, aliases (expanded in an interactive shell only), and the options that change how
/// a line is read or expanded.
const READING_STATE: &[&str] = &["bind", "alias", "unalias", "shopt"];

/// The simple commands of an action, each as its tokens (assignments, words, redirections).
pub fn simple_commands(tokens: &[Token]) -> Vec<&[Token]> {
    let mut out = vec![];
    let mut i = 0;
    while i < tokens.len() {
        if matches!(tokens[i], Token::Op(_) | Token::Reserved(_) | Token::Raw(_)) {
            i += 1;
            continue;
        }
        let start = i;
        while i < tokens.len() && !matches!(tokens[i], Token::Op(_) | Token::Reserved(_) | Token::Raw(_)) {
            i += 1;
        }
        out.push(&tokens[start..i]);
    }
    out
}

/// The first command of `tokens` that changes what an interactive shell does beyond `bash -c`:
/// an assignment (or `export`, `declare`, `unset`, `read`, `printf -v`, …) of a prompt
/// variable or `histchars`, anywhere; and, when `before_more_lines` (lines are read after it),
/// `bind`, `alias`, `unalias`, `shopt` and `set` of the line-reading options.
pub fn interactive_state(tokens: &[Token], before_more_lines: bool) -> Option<String> {
    let watched = |s: &str| {
        INTERACTIVE_VARS.iter().any(|v| {
            s == *v
                || s.strip_prefix(v)
                    .is_some_and(|r| r.starts_with('=') || r.starts_with("+=") || r.starts_with('['))
        })
    };
    // Any mention in an expansion or an arithmetic or conditional command (`${PS1:=…}`,
    // `((PS1=1))`) counts: the check does not tell reading from assigning there.
    let mentions = |t: &str| INTERACTIVE_VARS.iter().any(|v| t.contains(v));
    for t in tokens {
        match t {
            Token::Raw(r) if mentions(r) => return Some(format!("`{r}`")),
            Token::Word(w) | Token::Assign(_, w) => {
                if let Some(Seg::Dyn(d, _)) = w.iter().find(|s| matches!(s, Seg::Dyn(d, _) if mentions(d))) {
                    return Some(format!("`{d}`"));
                }
            }
            _ => {}
        }
    }
    for cmd in simple_commands(tokens) {
        for t in cmd {
            if let Token::Assign(name, _) = t {
                if watched(name) {
                    return Some(format!(
                        "the assignment to `{}`",
                        name.trim_end_matches(['=', '+'])
                    ));
                }
            }
        }
        let segs: Vec<&[Seg]> = cmd
            .iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(w.as_slice()),
                _ => None,
            })
            .collect();
        let head = segs.first().and_then(|w| literal(w));
        if let Some(h) = head.as_deref() {
            let dynamic_name = |w: &&[Seg]| matches!(w.first(), Some(Seg::Dyn(..)));
            // A variable named only at run time, a name reference, a trap (bash -c runs an EXIT
            // trap when it ends, an interactive shell never; a DEBUG trap runs for the prompt's
            // commands too), or an eval of words known only at run time.
            if ASSIGNING.contains(&h) && segs[1..].iter().any(dynamic_name) {
                return Some(format!("`{h}` of a variable named only when it runs"));
            }
            if h == "printf"
                && segs
                    .windows(2)
                    .any(|p| literal(p[0]).as_deref() == Some("-v") && dynamic_name(&p[1]))
            {
                return Some("`printf -v` of a variable named only when it runs".into());
            }
            if ["declare", "typeset", "local"].contains(&h)
                && segs[1..]
                    .iter()
                    .filter_map(|w| literal(w))
                    .any(|w| w.starts_with('-') && w.contains('n'))
            {
                return Some(format!("the name reference `{h} -n`"));
            }
            if h == "trap" && segs.len() >= 3 {
                return Some("`trap`".into());
            }
            if h == "eval" && segs[1..].iter().any(|w| literal(w).is_none()) {
                return Some("an `eval` of words known only when it runs".into());
            }
            if ["set", "shopt"].contains(&h) && segs[1..].iter().any(|w| literal(w).is_none()) {
                return Some(format!("`{h}` of options known only when it runs"));
            }
        }
        let words: Vec<Option<String>> = cmd
            .iter()
            .filter_map(|t| match t {
                Token::Word(w) => Some(literal(w)),
                _ => None,
            })
            .collect();
        let Some(Some(name)) = words.first() else {
            continue;
        };
        if let Some(w) = words[1..].iter().flatten().find(|w| watched(w)) {
            if name != "echo" && name != "printf"
                || w.starts_with("-v")
                || words.iter().flatten().any(|x| x == "-v")
            {
                return Some(format!("`{name} {w}`"));
            }
        }
        if before_more_lines {
            if READING_STATE.contains(&name.as_str()) {
                return Some(format!("`{name}`"));
            }
            if name == "set"
                && words[1..].iter().flatten().any(|w| {
                    ["vi", "emacs", "history", "histexpand"].contains(&w.as_str())
                        || (w.starts_with(['-', '+']) && w.contains('H'))
                })
            {
                return Some("`set` of a line-reading option".into());
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judge(canonical: &str) -> Vec<Stdin> {
        readers(&crate::action::action(&without_heredocs(canonical)).expect("readable"))
    }

    #[test]
    fn readers_of_the_terminal() {
        assert_eq!(
            judge("head -n1"),
            [Stdin::Reads("`head` without a file operand".into())]
        );
        assert_eq!(judge("read -r x"), [Stdin::Reads("`read`".into())]);
        assert_eq!(
            judge("cat"),
            [Stdin::Reads("`cat` without a file operand".into())]
        );
        assert_eq!(
            judge("grep x"),
            [Stdin::Reads("`grep` without a file operand".into())]
        );
        assert_eq!(judge("make"), [Stdin::Maybe("`make`".into())]);
        assert_eq!(
            judge("echo $(cat)"),
            [Stdin::Maybe("the command substitution `$(cat)`".into())]
        );
    }

    #[test]
    fn commands_whose_input_is_not_the_terminal() {
        for c in [
            "cd /tmp; ls -la",
            "cat file.txt",
            "grep x file",
            "head < f",
            "echo a | head -n1",
            "while read l; do\n    echo $l;\ndone < f",
            "cat f | while read l; do\n    echo $l;\ndone",
            "cat > f <<'EOF'\nhead\nEOF\n",
            "cat <<-EOF > f\n\tx $y\n\tEOF\n",
            "mkdir -p a && touch a/b",
        ] {
            assert_eq!(judge(c), [], "{c}");
        }
    }
}
