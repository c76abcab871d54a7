//! Actions, not texts. Two texts correspond for bash when it would perform the same action:
//! the same lists, pipelines and compound commands, and for each simple command the same
//! words after quote removal where their values are static, the same expansions (the same
//! parameter, command substitution, arithmetic or pattern text, quoted or not) where they are
//! known only at run time, the same redirections and the same assignments.
//!
//! The structure comes from bash's own parse: [`action`] reads bash's canonical form of a text
//! (`declare -f`), where bash has already chosen one spelling for every operator, reserved word,
//! redirection and line break and turned `$'…'` into `'…'`. What is left to read is each
//! word's quoting, and that is what differs between a harness's rendering and the model's text
//! (`'a'` or `a`, `x\!y` or `x!y`, `a~b` or `'a~b'`). A word is cut into segments: literal text
//! (its value after quote removal) and expansions (kept as written, with whether they stood
//! inside double quotes, which decides splitting and globbing). A character stays literal only
//! where bash never expands it: `~` not at a word's start nor after an unquoted `=` or `:`,
//! `{`/`}` in a word without brace expansion, `!` not before `(`; `*`, `?` and `[` outside
//! quotes are patterns (literal only in an assignment's value). Where the form holds a
//! here-document, the texts are compared as bash printed them. `tests/action_property.rs` holds
//! this comparison to the argv and redirections real bash builds.

/// One segment of a word.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Seg {
    /// Literal text: its value after quote removal.
    Lit(String),
    /// An expansion or pattern known only at run time, as written, and whether it stood inside
    /// double quotes.
    Dyn(String, bool),
}

/// A word's value, when it is static (only literal segments).
pub fn literal(word: &[Seg]) -> Option<String> {
    word.iter()
        .map(|s| match s {
            Seg::Lit(v) => Some(v.as_str()),
            Seg::Dyn(..) => None,
        })
        .collect()
}

/// A word as bash would pass it, expansions kept as written.
pub fn shown(word: &[Seg]) -> String {
    word.iter()
        .map(|s| match s {
            Seg::Lit(v) => v.as_str(),
            Seg::Dyn(d, _) => d.as_str(),
        })
        .collect()
}

/// One token of a text's action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A control operator (`;`, `&&`, `|`, `(`, `;;`, …).
    Op(String),
    /// A reserved word where bash reads one (`if`, `{`, `!`, `in` after `for NAME`, …).
    Reserved(String),
    /// A redirection operator with its file descriptor (`0<`, `1>`, `2>&`, `&>`, `0<<<`, …).
    Redirect(String),
    /// An assignment before a command (or alone): the name with `=` or `+=`, and the value.
    Assign(String, Vec<Seg>),
    /// A word.
    Word(Vec<Seg>),
    /// A `[[ … ]]` or `(( … ))` command, kept as bash printed it (its words follow other rules).
    Raw(String),
}

const RESERVED: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do", "done",
    "function", "time", "coproc", "{", "}", "!",
];

/// The action of a canonical form, or `None` where it cannot be read as one (a here-document,
/// or quoting this reader does not close): such texts are compared as bash printed them.
pub fn action(canonical: &str) -> Option<Vec<Token>> {
    action_with_starts(canonical).map(|(t, _)| t)
}

/// [`action`] with the indices of the words that stand where a command's name does (after an
/// operator, a line break, a reserved word that starts a command, or assignments).
pub(crate) fn action_with_starts(canonical: &str) -> Option<(Vec<Token>, Vec<usize>)> {
    let mut r = Reader {
        s: canonical.as_bytes(),
        i: 0,
        text: canonical,
        starts: vec![],
    };
    let t = r.tokens()?;
    Some((t, r.starts))
}

/// Whether two canonical forms denote the same action (see the module documentation).
pub fn same(x: &str, y: &str) -> bool {
    x == y || matches!((action(x), action(y)), (Some(a), Some(b)) if a == b)
}

/// As [`same`], where `received` may hold the contract-neutral redirection `neutral` (the
/// tokens of `< /dev/null`, say) once more than `intended` does, wherever a harness put it, and
/// only where it is neutral (see [`compare_modulo`]).
pub fn same_modulo(intended: &str, received: &str, neutral: &str) -> bool {
    compare_modulo(intended, received, neutral) == Modulo::Same
}

/// How a received text compares with the intended one when a harness may add a contract-neutral
/// redirection (its stdin contract, `< /dev/null`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Modulo {
    /// The same action: the received text is the intended one, or it with the redirection added
    /// to a command that would read the harness's own descriptor anyway.
    Same,
    /// The intended action plus the redirection, added where it replaces what the command would
    /// have read: its own redirection of that descriptor, an enclosing compound's, or a pipe.
    /// Which command and which redirection, in words.
    Overrides(String),
    /// Another action.
    Differs,
}

/// Compares `intended` and `received` (canonical forms) where `received` may hold `neutral`
/// once more. The redirection is neutral only where the command it lands on would otherwise
/// read the descriptor the harness gave the whole text: no other redirection of that
/// descriptor on the command (`bc <<< '2+3' < /dev/null`, `sort < a.txt < /dev/null`, `cat 0<>f
/// < /dev/null`: the later one wins), none on a compound around it (`while …; do cat < /dev/null;
/// done < f`), and not a command (or inside a compound) whose standard input is a pipe. Bash
/// applies a command's redirections in order, each one replacing the descriptor, so the added
/// one takes the place of what the command meant to read.
pub fn compare_modulo(intended: &str, received: &str, neutral: &str) -> Modulo {
    if same(intended, received) {
        return Modulo::Same;
    }
    let (Some(a), Some((b, starts)), Some(n)) =
        (action(intended), action_with_starts(received), action(neutral))
    else {
        return Modulo::Differs;
    };
    if n.is_empty() || count(&b, &n) != count(&a, &n) + 1 {
        return Modulo::Differs;
    }
    let mut why = None;
    for i in (0..b.len()).filter(|&i| b[i..].starts_with(&n)) {
        if b[..i].iter().chain(&b[i + n.len()..]).eq(a.iter()) {
            match overrides(&b, &starts, i, n.len()) {
                None => return Modulo::Same,
                Some(w) => why = why.or(Some(w)),
            }
        }
        // After the text's last `;` or newline (which the intended text's canonical form does
        // not keep), the redirection is a command of its own (red team round 5).
        let ends = i > 0 && matches!(&b[i - 1], Token::Op(o) if o == ";" || o == "\n");
        if ends && b[..i - 1].iter().chain(&b[i + n.len()..]).eq(a.iter()) {
            if succeeds_anyway(&b, i - 1) {
                return Modulo::Same;
            }
            why = why.or(Some(format!(
                "the harness's `{}` lands after the text's last command as a command of its own, whose exit status (0) replaces that command's: a failing call reports success",
                pair(&b, i)
            )));
        }
    }
    why.map_or(Modulo::Differs, Modulo::Overrides)
}

/// Whether the command that ends at the separator `b[sep]` leaves status 0 whatever happens, so
/// that the harness's wordless redirection after it (status 0) replaces nothing: a lone `true`,
/// `:` or `echo` with static words, no redirection and nothing before it in its list (`echo
/// done;`, a script's last `echo done` line); or a lone `exit` with static words, after which
/// nothing runs (`exit 3;`). Conservative: not in a text that defines a function
/// or alias (`echo() { return 3; }`), closes a descriptor (`exec >&-` makes `echo` fail) or sets
/// traps or shell options (`shopt`, `enable`).
fn succeeds_anyway(b: &[Token], sep: usize) -> bool {
    let mut start = sep;
    while start > 0 && matches!(b[start - 1], Token::Word(_)) {
        start -= 1;
    }
    let before = start.checked_sub(1).map(|k| &b[k]);
    let alone = match before {
        None => true,
        Some(Token::Op(o)) => matches!(o.as_str(), ";" | "\n" | "&"),
        Some(_) => false,
    };
    let words: Option<Vec<String>> = b[start..sep]
        .iter()
        .map(|t| match t {
            Token::Word(w) => literal(w),
            _ => None,
        })
        .collect();
    let quiet_name = matches!(
        words.as_deref().and_then(|w| w.first()).map(String::as_str),
        Some("true" | ":" | "echo" | "exit")
    );
    let risky = b.iter().enumerate().any(|(k, t)| match t {
        Token::Reserved(r) => r == "function",
        Token::Op(o) => o == "(" && k > 0 && matches!(b[k - 1], Token::Word(_)),
        Token::Word(w) => matches!(
            literal(w).as_deref(),
            Some(
                "exec" | "alias" | "enable" | "trap" | "shopt" | "set" | "builtin" | "eval" | "source" | "."
            )
        ),
        _ => false,
    });
    alone && quiet_name && !risky
}

/// The descriptor a redirection operator token names (`0<` → `0`, `{fd}<` → `{fd}`, `&>` → `&`).
fn redirect_fd(op: &str) -> &str {
    if op.starts_with('{') {
        return &op[..=op.find('}').unwrap_or(0)];
    }
    let d = op.bytes().take_while(u8::is_ascii_digit).count();
    if d == 0 {
        &op[..op.len().min(1)]
    } else {
        &op[..d]
    }
}

/// Whether the redirection `r` (with its target word) sets descriptor `fd` or copies it.
fn touches(r: &str, target: Option<&Token>, fd: &str) -> bool {
    let dup = r.ends_with("<&") || r.ends_with(">&");
    redirect_fd(r) == fd
        || (dup
            && matches!(target, Some(Token::Word(w)) if literal(w).as_deref().map(|t| t.trim_end_matches('-')) == Some(fd)))
}

/// A token as a reader would write it: a static word of plain characters bare, else as
/// [`show`] quotes it.
fn plain(t: &Token) -> String {
    match t {
        Token::Word(w) => match literal(w) {
            Some(v)
                if !v.is_empty() && v.chars().all(|c| c.is_alphanumeric() || "_./+:=,@%-".contains(c)) =>
            {
                v
            }
            _ => show(t),
        },
        _ => show(t),
    }
}

/// The redirection at `b[k]` with its target, as written (`< /dev/null`, `<<< 2+3`, `0<&3`).
fn pair(b: &[Token], k: usize) -> String {
    let op = match &b[k] {
        Token::Redirect(r) => r.strip_prefix('0').filter(|x| x.starts_with('<')).unwrap_or(r),
        t => return plain(t),
    };
    let target = b.get(k + 1).map(plain).unwrap_or_default();
    match op.ends_with('&') {
        true => format!("{op}{target}"),
        false => format!("{op} {target}"),
    }
}

/// A compound command's extent in a token list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frame {
    Brace,
    Subshell,
    If,
    Loop,
    Case,
}

/// Why the redirection at `b[i..i + len]` is not neutral: it replaces what the command it is
/// attached to would read (see [`compare_modulo`]). `None` where it is neutral.
fn overrides(b: &[Token], starts: &[usize], i: usize, len: usize) -> Option<String> {
    let Some(Token::Redirect(op)) = b.get(i) else {
        return None;
    };
    let fd = redirect_fd(op).to_string();
    let added = pair(b, i);
    // The redirections of the same command: the pairs before and after it.
    let mut s = i;
    while s >= 2 && matches!(b[s - 2], Token::Redirect(_)) {
        s -= 2;
    }
    let mut e = i + len;
    while matches!(b.get(e), Some(Token::Redirect(_))) {
        e += 2;
    }
    // Where each compound opens and closes, whether its input is a pipe, and the frames open
    // at each token.
    let mut stack: Vec<(Frame, usize, bool)> = vec![];
    let mut closes: Vec<(usize, usize)> = vec![];
    let mut open_at: Vec<Vec<(Frame, usize, bool)>> = Vec::with_capacity(b.len());
    let mut in_pattern = false;
    let mut function_parens = false;
    let piped = |j: usize| j > 0 && matches!(&b[j - 1], Token::Op(o) if o == "|" || o == "|&");
    let mut broken = false;
    for (j, t) in b.iter().enumerate() {
        open_at.push(stack.clone());
        let top = stack.last().map(|f| f.0);
        let mut close = |want: Frame, stack: &mut Vec<(Frame, usize, bool)>| match stack.pop() {
            Some((f, o, _)) if f == want => closes.push((o, j)),
            _ => broken = true,
        };
        match t {
            Token::Reserved(r) => match r.as_str() {
                "{" => stack.push((Frame::Brace, j, piped(j))),
                "if" => stack.push((Frame::If, j, piped(j))),
                "while" | "until" | "for" | "select" => stack.push((Frame::Loop, j, piped(j))),
                "case" => stack.push((Frame::Case, j, piped(j))),
                "in" if top == Some(Frame::Case) => in_pattern = true,
                "}" => close(Frame::Brace, &mut stack),
                "fi" => close(Frame::If, &mut stack),
                "done" => close(Frame::Loop, &mut stack),
                "esac" => {
                    in_pattern = false;
                    close(Frame::Case, &mut stack)
                }
                _ => {}
            },
            Token::Op(o) => match o.as_str() {
                ";;" | ";&" | ";;&" if top == Some(Frame::Case) => in_pattern = true,
                ")" if in_pattern && top == Some(Frame::Case) => in_pattern = false,
                "(" if in_pattern && top == Some(Frame::Case) => {}
                "(" if j > 0 && matches!(b[j - 1], Token::Word(_)) => function_parens = true,
                ")" if function_parens => function_parens = false,
                "(" => stack.push((Frame::Subshell, j, piped(j))),
                ")" => close(Frame::Subshell, &mut stack),
                _ => {}
            },
            _ => {}
        }
    }
    if broken || !stack.is_empty() {
        return Some(format!(
            "the harness adds `{added}`, and the compound commands around it could not be read to tell what it replaces"
        ));
    }
    let redirections = |from: usize, to: usize| {
        (from..to)
            .step_by(2)
            .filter_map(|k| match &b[k] {
                Token::Redirect(r) if touches(r, b.get(k + 1), &fd) => Some(pair(b, k)),
                _ => None,
            })
            .collect::<Vec<_>>()
    };
    // The command it lands on: a compound whose closing word precedes the redirections, or the
    // simple command whose words do.
    let closing = s
        .checked_sub(1)
        .and_then(|c| closes.iter().find(|&&(_, x)| x == c).copied());
    let (name, enclosing, is_piped, landing) = match closing {
        Some((o, c)) => (
            format!("`{} … {}`", plain(&b[o]), plain(&b[c])),
            open_at[o].clone(),
            piped(o),
            None,
        ),
        None => {
            let mut start = s;
            while start > 0 && matches!(b[start - 1], Token::Word(_) | Token::Assign(..) | Token::Raw(_)) {
                start -= 1;
            }
            let words: Vec<String> = b[start..s].iter().map(plain).collect();
            // No words: the redirection is a command of its own after the text's last `;` or
            // newline (`false; < /dev/null`), and its status, 0, replaces the status of the
            // command before it. After a `&` that status was 0 already.
            let after_background = start > 0 && matches!(&b[start - 1], Token::Op(o) if o == "&");
            // No static command name (only assignments, or words that are all expansions) and a
            // command substitution in it: without a name left after expansion, bash returns the
            // status of the last command substitution, and with a redirection 0 (`out=$(false)
            // < /dev/null`, `$(exit 3) < /dev/null`; red team round 6).
            let segs = |t: &Token| -> Vec<Seg> {
                match t {
                    Token::Word(w) | Token::Assign(_, w) => w.clone(),
                    _ => vec![],
                }
            };
            let named = b[start..s].iter().any(|t| match t {
                Token::Word(w) => w.iter().any(|g| matches!(g, Seg::Lit(v) if !v.is_empty())),
                _ => false,
            });
            let substitutes = b[start..s].iter().flat_map(segs).any(|g| match g {
                // `$((…))` is arithmetic, no command (red team round 7: `x=$((1))`).
                Seg::Dyn(d, _) => {
                    d.contains('`') || d.match_indices("$(").any(|(k, _)| !d[k + 2..].starts_with('('))
                }
                Seg::Lit(_) => false,
            });
            if !words.is_empty() && !named && substitutes {
                return Some(format!(
                    "the harness adds `{added}` to `{}`, a command without a static name whose status is its command substitution's: with a redirection bash returns 0, so a failing call reports success",
                    words.join(" ")
                ));
            }
            if words.is_empty() && !after_background && !(start > 0 && succeeds_anyway(b, start - 1)) {
                return Some(format!(
                    "the harness's `{added}` lands after the text's last command as a command of its own, whose exit status (0) replaces that command's: a failing call reports success"
                ));
            }
            let name = match words.first() {
                Some(w) if words.len() > 1 => format!("`{w} …`"),
                Some(w) => format!("`{w}`"),
                None => "a command without words".to_string(),
            };
            (name, open_at[s].clone(), piped(start), Some(start))
        }
    };
    let mut own = redirections(s, i);
    own.extend(redirections(i + len, e));
    // The command's own input redirections are all the one the harness adds (`argvprobe x <
    // /dev/null | cat` delivered as `… < /dev/null < /dev/null | cat` by Claude Code 1.0.76):
    // it reads the same file either way.
    if !own.is_empty() && own.iter().all(|r| *r == added) {
        return None;
    }
    if let Some(r) = own.first() {
        return Some(format!(
            "the harness adds `{added}` to {name}, which has its own `{r}`: bash applies both in order, and the added one replaces the input the command meant to read"
        ));
    }
    if is_piped {
        return Some(format!(
            "the harness adds `{added}` to {name}, whose standard input is the pipe from the command before it: the added one replaces the pipe"
        ));
    }
    for &(_, o, p) in enclosing.iter().rev() {
        let c = closes.iter().find(|&&(x, _)| x == o).map_or(o, |&(_, c)| c);
        let mut end = c + 1;
        while matches!(b.get(end), Some(Token::Redirect(_))) {
            end += 2;
        }
        let outer = format!("`{} … {}`", plain(&b[o]), plain(&b[c]));
        if let Some(r) = redirections(c + 1, end).first() {
            return Some(format!(
                "the harness adds `{added}` to {name} inside {outer}, whose `{r}` the command meant to read: the added one replaces it"
            ));
        }
        if p {
            return Some(format!(
                "the harness adds `{added}` to {name} inside {outer}, whose standard input is a pipe: the added one replaces it"
            ));
        }
    }
    if fd == "0" {
        if let Some(c) = changes_shell_stdin(b, starts, landing) {
            return Some(format!(
                "the harness adds `{added}` to {name}, and {c}: the added one replaces the input the command would read"
            ));
        }
    }
    None
}

/// Whether a text may hold a command that changes the shell's own standard input (see
/// [`changes_shell_stdin`]), told from its bytes alone, erring towards `true`: an expansion
/// (`$`, a backquote: a command name known only at run time) or a piece between blanks and
/// operators that, its quotes and backslashes removed, is `exec`, `eval`, `source`, `.`,
/// `trap`, `command` or `builtin`. A function can only do it through one of them.
pub fn may_change_shell_stdin(text: &str) -> bool {
    text.contains(['$', '`'])
        || text
            .split(|c: char| c.is_whitespace() || ";&|(){}".contains(c))
            .map(|p| p.replace(['\'', '"', '\\'], ""))
            .any(|p| ["exec", "eval", "source", ".", "trap", "command", "builtin"].contains(&p.as_str()))
}

/// A command in `b` (other than the one at `landing`, which the redirection lands on) that can
/// change the shell's own standard input for the commands after it, in words; `None` where
/// none can. Conservatively: `exec` with a redirection of descriptor 0 (or closing a descriptor
/// named by a variable), `eval`, `source`/`.`, `trap` (its action runs in the shell), also
/// after `command`/`builtin`; a call of a function the text defines; a command whose name is
/// known only at run time (it may be any of these).
fn changes_shell_stdin(b: &[Token], starts: &[usize], landing: Option<usize>) -> Option<String> {
    let word = |k: usize| match b.get(k) {
        Some(Token::Word(w)) => Some(w),
        _ => None,
    };
    let defines = |k: usize| matches!((b.get(k + 1), b.get(k + 2)), (Some(Token::Op(x)), Some(Token::Op(y))) if x == "(" && y == ")");
    let mut functions: Vec<String> = starts
        .iter()
        .filter(|&&k| defines(k))
        .filter_map(|&k| word(k).and_then(|w| literal(w)))
        .collect();
    functions.extend(
        (1..b.len())
            .filter(|&k| matches!(&b[k - 1], Token::Reserved(r) if r == "function"))
            .filter_map(|k| word(k).and_then(|w| literal(w))),
    );
    for &k in starts {
        if Some(k) == landing || defines(k) {
            continue;
        }
        // The simple command's extent: its words and redirections.
        let mut end = k;
        while let Some(t) = b.get(end) {
            match t {
                Token::Word(_) | Token::Raw(_) | Token::Assign(..) => end += 1,
                Token::Redirect(_) => end += 2,
                _ => break,
            }
        }
        let end = end.min(b.len());
        let words: Vec<&Vec<Seg>> = (k..end)
            .filter(|&j| !matches!(b.get(j.wrapping_sub(1)), Some(Token::Redirect(_))) || j == k)
            .filter_map(word)
            .collect();
        // `[` alone is no pattern (nothing closes it): the test builtin, a static name (red team
        // round 9: `[ -d /tmp ]; echo $?` was a false "diverges").
        let mut names = words
            .iter()
            .map(|w| literal(w).or_else(|| (shown(w) == "[").then(|| "[".to_string())));
        let mut name = names.next().flatten();
        while matches!(name.as_deref(), Some("command" | "builtin")) {
            name = names
                .find(|n| !n.as_deref().is_some_and(|n| n.starts_with('-')))
                .flatten();
        }
        let shown_cmd = match words.len() {
            1 => format!("`{}`", plain(&b[k])),
            _ => format!("`{} …`", plain(&b[k])),
        };
        let Some(name) = name else {
            return Some(format!(
                "{shown_cmd} in the text runs a command known only at run time, which may change the shell's own standard input (`exec 0<…`, `eval`, `.`) for the commands after it"
            ));
        };
        let why = match name.as_str() {
            "exec" => (k..end).find_map(|j| match &b[j] {
                Token::Redirect(r) => {
                    let fd = redirect_fd(r);
                    let zero = !fd.is_empty() && fd.bytes().all(|c| c == b'0');
                    let closes_var = fd.starts_with('{')
                        && r.ends_with('&')
                        && matches!(word(j + 1).and_then(|w| literal(w)).as_deref(), Some("-") | None);
                    (zero || closes_var).then(|| {
                        format!(
                            "`exec {}` in the text changes the shell's own standard input for the commands after it",
                            pair(b, j)
                        )
                    })
                }
                _ => None,
            }),
            "eval" | "source" | "." => Some(format!(
                "{shown_cmd} in the text runs shell code in the shell itself, which may change its own standard input (`exec 0<…`) for the commands after it"
            )),
            "trap" => {
                // `trap`, `trap -p`, `trap - INT`, `trap '' INT`, `trap 'rm f' EXIT`: nothing
                // runs before the commands after it.
                let dashes = usize::from(words.get(1).and_then(|w| literal(w)).as_deref() == Some("--"));
                let harmless = match words.get(1 + dashes).map(|w| literal(w)) {
                    None => true,
                    Some(Some(a)) if a.is_empty() || (dashes == 0 && a.starts_with('-')) => true,
                    _ => words
                        .iter()
                        .skip(2 + dashes)
                        .all(|w| matches!(literal(w).as_deref(), Some("EXIT" | "0"))),
                };
                (!harmless).then(|| format!(
                    "{shown_cmd} in the text sets shell code that runs in the shell itself, which may change its own standard input (`exec 0<…`) for the commands after it"
                ))
            }
            f if functions.iter().any(|x| x == f) => Some(format!(
                "{shown_cmd} in the text calls a function the text defines, which runs in the shell itself and may change its own standard input (`exec 0<…`) for the commands after it"
            )),
            _ => None,
        };
        if why.is_some() {
            return why;
        }
    }
    None
}

fn count(hay: &[Token], needle: &[Token]) -> usize {
    (0..hay.len()).filter(|&i| hay[i..].starts_with(needle)).count()
}

/// The first expansion in a list of words that would run code or read files when expanded
/// (command and process substitution, arithmetic, assignments and operators inside `${…}`,
/// prompt expansion), as written; `Some` also when words that spell an expansion cannot be
/// read. Words holding one
/// are never handed to an expansion witness: what they produce depends on run time anyway, and
/// bash performs `$(<file)` without a command a trap could skip.
pub fn runs_code(words: &str) -> Option<String> {
    runs_code_quoted(words).map(|(d, _)| d)
}

/// [`runs_code`] with whether the expansion stands inside double quotes (its result is then one
/// word, whatever it is).
pub fn runs_code_quoted(words: &str) -> Option<(String, bool)> {
    // Every such expansion is spelled with `$`, a backquote, `<(`/`>(`, or is an arithmetic or
    // conditional command (`((`, `[[`): words without any of them run nothing, readable or not
    // (most words: this is on every check's path).
    let b = words.as_bytes();
    if !b.iter().any(|&c| c == b'$' || c == b'`')
        && !["<(", ">(", "((", "[["].iter().any(|x| words.contains(x))
    {
        return None;
    }
    let Some(tokens) = action(words) else {
        return Some((words.chars().take(80).collect(), false));
    };
    let simple = |d: &str| {
        let inner = d.strip_prefix("${").and_then(|x| x.strip_suffix('}'));
        match inner {
            Some(i) => {
                let i = i.strip_prefix('#').filter(|r| !r.is_empty()).unwrap_or(i);
                (i.len() == 1 && "@*#?$!-0123456789".contains(i))
                    || i.chars().all(|c| c.is_ascii_digit())
                    || (i.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
                        && i.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
            }
            None => !["$(", "`", "<(", ">(", "$["].iter().any(|x| d.contains(x)),
        }
    };
    tokens.iter().find_map(|t| {
        let segs = match t {
            Token::Word(s) | Token::Assign(_, s) => s,
            Token::Raw(r) => return Some((r.clone(), false)),
            _ => return None,
        };
        segs.iter().find_map(|s| match s {
            Seg::Dyn(d, q) if !simple(d) => Some((d.clone(), *q)),
            _ => None,
        })
    })
}

/// The first token where two actions differ, as `(command number, intended, received)` with
/// the tokens shown as bash would read them; `None` when they do not differ or cannot be read.
pub fn first_difference(x: &str, y: &str) -> Option<(usize, String, String)> {
    let (a, b) = (action(x)?, action(y)?);
    let mut command = 0;
    for i in 0..a.len().max(b.len()) {
        let (p, q) = (a.get(i), b.get(i));
        if p != q {
            let show = |t: Option<&Token>| t.map(show).unwrap_or_else(|| "(nothing)".into());
            return Some((command, show(p), show(q)));
        }
        if matches!(p, Some(Token::Op(_))) {
            command += 1;
        }
    }
    None
}

fn show(t: &Token) -> String {
    let word = |segs: &[Seg]| {
        segs.iter()
            .map(|s| match s {
                Seg::Lit(v) => format!("'{}'", v.replace('\'', r"'\''")),
                Seg::Dyn(d, true) => format!("\"{d}\""),
                Seg::Dyn(d, false) => d.clone(),
            })
            .collect::<String>()
    };
    match t {
        Token::Op(o) | Token::Reserved(o) | Token::Redirect(o) | Token::Raw(o) => o.clone(),
        Token::Assign(n, v) => format!("{n}{}", word(v)),
        Token::Word(w) => word(w),
    }
}

struct Reader<'a> {
    s: &'a [u8],
    i: usize,
    text: &'a str,
    /// The indices of the words read where a command's name stands.
    starts: Vec<usize>,
}

impl Reader<'_> {
    fn tokens(&mut self) -> Option<Vec<Token>> {
        let mut out = Vec::new();
        let mut starts = Vec::new();
        // Where a command can start (reserved words and assignments are read there).
        let mut at_start = true;
        // After `for`/`select`/`case` and their word: `in` is reserved there.
        let mut want_in = 0u8;
        loop {
            self.skip_blanks(&mut at_start);
            let Some(&c) = self.s.get(self.i) else { break };
            let start = self.i;
            if at_start && (self.s[self.i..].starts_with(b"[[ ") || self.s[self.i..].starts_with(b"(( ")) {
                let close: &[u8] = if c == b'[' { b" ]]" } else { b" ))" };
                let end = find_closing(&self.s[self.i..], close)?;
                self.i += end + close.len();
                out.push(Token::Raw(self.text[start..self.i].to_string()));
                at_start = false;
                continue;
            }
            if matches!(out.last(), Some(Token::Reserved(r)) if r == "for")
                && self.s[self.i..].starts_with(b"((")
            {
                // `for ((…; …; …))`: arithmetic, kept as bash printed it.
                let end = find_closing(&self.s[self.i..], b"))")?;
                self.i += end + 2;
                out.push(Token::Raw(self.text[start..self.i].to_string()));
                want_in = 0;
                continue;
            }
            if let Some(op) = self.operator() {
                // After every control operator a command may start (after a case pattern's `)`
                // too).
                at_start = true;
                out.push(Token::Op(op));
                want_in = 0;
                continue;
            }
            if let Some(r) = self.redirect() {
                // A here-document (not a here-string, `<<<`, whose word is read as any other).
                if (r.ends_with("<<") && !r.ends_with("<<<")) || r.ends_with("<<-") {
                    return None;
                }
                out.push(Token::Redirect(r));
                self.skip_blanks(&mut false);
                let w = self.word()?;
                out.push(Token::Word(segments(w, false)?));
                continue;
            }
            let w = self.word()?;
            if at_start && RESERVED.contains(&w) {
                out.push(Token::Reserved(w.to_string()));
                want_in = u8::from(matches!(w, "for" | "select" | "case")) * 2;
                at_start = !matches!(w, "for" | "select" | "case" | "function" | "coproc");
                continue;
            }
            if want_in == 1 && w == "in" {
                out.push(Token::Reserved(w.to_string()));
                want_in = 0;
                continue;
            }
            want_in = want_in.saturating_sub(1);
            if at_start {
                if let Some(eq) = assignment(w) {
                    out.push(Token::Assign(w[..=eq].to_string(), segments(&w[eq + 1..], true)?));
                    continue;
                }
            }
            if at_start {
                starts.push(out.len());
            }
            out.push(Token::Word(segments(w, false)?));
            at_start = false;
        }
        self.starts = starts;
        Some(out)
    }

    /// Spaces and tabs; a line break ends a command as `;` does (bash prints one form of each).
    fn skip_blanks(&mut self, at_start: &mut bool) {
        while let Some(&c) = self.s.get(self.i) {
            match c {
                b' ' | b'\t' => {}
                b'\n' => *at_start = true,
                _ => break,
            }
            self.i += 1;
        }
    }

    fn operator(&mut self) -> Option<String> {
        const OPS: &[&str] = &[";;&", ";;", ";&", "&&", "||", "|&", ";", "|", "&", "(", ")"];
        let rest = &self.s[self.i..];
        // `&>` and `&>>` are redirections, `<(` and `>(` process substitutions (words).
        if rest.starts_with(b"&>") {
            return None;
        }
        let op = OPS.iter().find(|o| rest.starts_with(o.as_bytes()))?;
        self.i += op.len();
        Some(op.to_string())
    }

    /// A redirection operator with its file descriptor made explicit (`{NAME}` where bash
    /// assigns the descriptor it opens to the variable NAME: `{fd}< f`).
    fn redirect(&mut self) -> Option<String> {
        let rest = &self.s[self.i..];
        if let Some(name) = rest.strip_prefix(b"{") {
            let n = name
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            let after = name.get(n + 1..).unwrap_or_default();
            let op = ["<>", "<&", "<", ">>", ">&", ">|", ">"]
                .iter()
                .find(|o| after.starts_with(o.as_bytes()))?;
            if n == 0
                || name[0].is_ascii_digit()
                || name.get(n) != Some(&b'}')
                || after.get(op.len()) == Some(&b'(')
            {
                return None;
            }
            self.i += 1 + n + 1 + op.len();
            return Some(format!(
                "{{{}}}{op}",
                &self.text[self.i - op.len() - 1 - n..self.i - op.len() - 1]
            ));
        }
        let digits = rest.iter().take_while(|b| b.is_ascii_digit()).count();
        let after = &rest[digits..];
        const OPS: &[&str] = &[
            "<<<", "<<-", "<<", "<>", "<&", "<", "&>>", "&>", ">>", ">&", ">|", ">",
        ];
        let op = OPS.iter().find(|o| after.starts_with(o.as_bytes()))?;
        // A process substitution is a word.
        if (*op == "<" || *op == ">") && after.get(1) == Some(&b'(') {
            return None;
        }
        if digits > 0 && op.starts_with('&') {
            return None;
        }
        let fd = match (digits, op.as_bytes()[0]) {
            (0, b'<') => "0".to_string(),
            (0, b'>') => "1".to_string(),
            (0, _) => String::new(),
            _ => String::from_utf8_lossy(&rest[..digits]).into_owned(),
        };
        self.i += digits + op.len();
        Some(format!("{fd}{op}"))
    }

    /// The next word as written (quotes and expansions balanced).
    fn word(&mut self) -> Option<&str> {
        let start = self.i;
        let s = self.s;
        while let Some(&c) = s.get(self.i) {
            match c {
                b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b')' => break,
                b'(' => {
                    // Only inside a word (`<(…)`, `$(…)`, extglob) is `(` part of it.
                    if self.i == start {
                        break;
                    }
                    self.i = skip_balanced(s, self.i, b'(', b')')?;
                }
                b'<' | b'>' if s.get(self.i + 1) == Some(&b'(') => {
                    self.i = skip_balanced(s, self.i + 1, b'(', b')')?;
                }
                b'<' | b'>' => break,
                _ => self.i = skip_unit(s, self.i)?,
            }
        }
        (self.i > start).then(|| &self.text[start..self.i])
    }
}

/// The index after the quoted string, escape, expansion or character at `i`.
fn skip_unit(s: &[u8], i: usize) -> Option<usize> {
    Some(match s[i] {
        b'\\' => (i + 2).min(s.len()),
        b'\'' => i + 1 + s[i + 1..].iter().position(|&b| b == b'\'')? + 1,
        b'"' => {
            let mut j = i + 1;
            loop {
                match *s.get(j)? {
                    b'"' => break j + 1,
                    b'\\' => j += 2,
                    b'$' | b'`' => j = skip_unit(s, j)?,
                    _ => j += 1,
                }
            }
        }
        b'`' => {
            let mut j = i + 1;
            loop {
                match *s.get(j)? {
                    b'`' => break j + 1,
                    b'\\' => j += 2,
                    _ => j += 1,
                }
            }
        }
        b'$' => match s.get(i + 1) {
            Some(b'(') => skip_balanced(s, i + 1, b'(', b')')?,
            Some(b'{') => skip_balanced(s, i + 1, b'{', b'}')?,
            // `$[…]`: bash's old arithmetic expansion (it reads variables by bare name).
            Some(b'[') => skip_balanced(s, i + 1, b'[', b']')?,
            Some(b'"') => skip_unit(s, i + 1)?,
            Some(b'\'') => {
                // `$'…'`: backslash escapes inside.
                let mut j = i + 2;
                loop {
                    match *s.get(j)? {
                        b'\'' => break j + 1,
                        b'\\' => j += 2,
                        _ => j += 1,
                    }
                }
            }
            Some(c) if c.is_ascii_alphabetic() || *c == b'_' => {
                i + 1
                    + s[i + 1..]
                        .iter()
                        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                        .count()
            }
            Some(c) if c.is_ascii_digit() || b"@*#?-$!".contains(c) => i + 2,
            _ => i + 1,
        },
        _ => i + 1,
    })
}

/// The index after the bracket that closes the one at `open_at`, across quotes and expansions.
fn skip_balanced(s: &[u8], open_at: usize, open: u8, close: u8) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = open_at;
    loop {
        let c = *s.get(j)?;
        if c == open {
            depth += 1;
            j += 1;
        } else if c == close {
            depth -= 1;
            j += 1;
            if depth == 0 {
                return Some(j);
            }
        } else if matches!(c, b'\'' | b'"' | b'`' | b'\\' | b'$') {
            // Inside `${…}` a `'` is not always a quote; bash's printed form balances them.
            j = skip_unit(s, j)?;
        } else {
            j += 1;
        }
    }
}

fn find_closing(s: &[u8], close: &[u8]) -> Option<usize> {
    let mut j = 0;
    while j < s.len() {
        if s[j..].starts_with(close) && s.get(j + close.len()).is_none_or(|b| b" ;\n&|)".contains(b)) {
            return Some(j);
        }
        j = skip_unit(s, j)?;
    }
    None
}

/// `NAME=`, `NAME+=` or `NAME[…]=` (unquoted): the index of its `=`.
fn assignment(w: &str) -> Option<usize> {
    let b = w.as_bytes();
    let mut j = 0;
    while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
        j += 1;
    }
    if j == 0 || b[0].is_ascii_digit() {
        return None;
    }
    if b.get(j) == Some(&b'[') {
        j = skip_balanced(b, j, b'[', b']')?;
    }
    if b.get(j) == Some(&b'+') {
        j += 1;
    }
    (b.get(j) == Some(&b'=')).then_some(j)
}

/// An unquoted brace expansion or `${…}` with its `\!` spelled `!` where the two expand alike:
/// quote removal takes the backslash, and `!` is literal there but before `(` (an extglob) or
/// right after `${` (indirection), which are left alone (Claude Code 2.1.72 writes `{\!,x}` and
/// `${HOME:+\!}` for `{!,x}` and `${HOME:+!}`: red team round 11,
/// bang_in_unquoted_brace_or_parameter_word_is_literal). Only where no quote, backquote or other
/// `$` could change the context: `"\!"` keeps its backslash, `$((\!0))` is an error.
fn unescape_bang(d: &str, from: usize) -> String {
    let b = d.as_bytes();
    if !d.contains("\\!") || d[from.min(d.len())..].contains(['\'', '"', '`', '$']) {
        return d.to_string();
    }
    let mut out = String::with_capacity(d.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' && i + 1 < b.len() {
            let c = d[i + 1..].chars().next().unwrap_or('\\');
            if c == '!' && i > from && b.get(i + 2) != Some(&b'(') {
                out.push('!');
            } else {
                out.push('\\');
                out.push(c);
            }
            i += 1 + c.len_utf8();
            continue;
        }
        let n = d[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&d[i..i + n]);
        i += n;
    }
    out
}

/// The segments of one word as written. `value`: the word is an assignment's value (no
/// pathname expansion; `~` expands after `:` too).
fn segments(w: &str, value: bool) -> Option<Vec<Seg>> {
    let s = w.as_bytes();
    if brace_expands(s) {
        return Some(vec![Seg::Dyn(unescape_bang(w, 0), false)]);
    }
    let mut out: Vec<Seg> = Vec::new();
    let mut lit = String::new();
    // A quoted part since the last segment: it keeps an empty literal (`''$x` is one word
    // even where `$x` is empty).
    let mut quoted = false;
    let push_dyn = |out: &mut Vec<Seg>, lit: &mut String, quoted: &mut bool, d: &str, q: bool| {
        // An empty quoted literal next to a quoted expansion adds nothing (`"""$x"` is `"$x"`).
        if !lit.is_empty() || (*quoted && !q) {
            out.push(Seg::Lit(std::mem::take(lit)));
        }
        *quoted = false;
        let d = match q {
            false if d.starts_with("${") => unescape_bang(d, 2),
            _ => d.to_string(),
        };
        out.push(Seg::Dyn(d, q));
    };
    let mut quoted_any = false;
    let mut i = 0;
    // In an assignment, and in a word that looks like one (`NAME=…`, unquoted), bash expands a
    // `~` after the `=` and after every unquoted `:`.
    let assignment_like = value || assignment(w).is_some();
    let mut after_sep = value;
    while i < s.len() {
        let c = s[i];
        match c {
            b'\'' => {
                let end = skip_unit(s, i)?;
                lit.push_str(&w[i + 1..end - 1]);
                (quoted_any, quoted) = (true, true);
                i = end;
            }
            b'\\' => {
                // A backslash that ends the input is itself (bash and dash alike).
                let n = w[i + 1..].chars().next().unwrap_or('\\');
                lit.push(n);
                (quoted_any, quoted) = (true, true);
                i += 1 + if i + 1 < w.len() { n.len_utf8() } else { 0 };
            }
            b'"' => {
                (quoted_any, quoted) = (true, true);
                let mut j = i + 1;
                loop {
                    match *s.get(j)? {
                        b'"' => break,
                        b'\\' if matches!(s.get(j + 1), Some(b'$' | b'`' | b'"' | b'\\')) => {
                            lit.push(s[j + 1] as char);
                            j += 2;
                        }
                        b'$' if matches!(s.get(j + 1), Some(b'\'' | b'"')) || c_is_literal_dollar(s, j) => {
                            // Inside double quotes `$'` and `$"` are a `$` and a quote.
                            lit.push('$');
                            j += 1;
                        }
                        b'$' | b'`' => {
                            let end = skip_unit(s, j)?;
                            if end == j + 1 && c_is_literal_dollar(s, j) {
                                lit.push('$');
                            } else {
                                push_dyn(&mut out, &mut lit, &mut quoted, &w[j..end], true);
                            }
                            j = end;
                        }
                        _ => {
                            let ch = w[j..].chars().next()?;
                            lit.push(ch);
                            j += ch.len_utf8();
                        }
                    }
                }
                i = j + 1;
            }
            b'$' | b'`' => {
                let end = skip_unit(s, i)?;
                if end == i + 1 && c_is_literal_dollar(s, i) {
                    lit.push('$');
                } else if s.get(i + 1) == Some(&b'"') {
                    // `$"…"`: a translated string, known only at run time.
                    push_dyn(&mut out, &mut lit, &mut quoted, &w[i..end], true);
                } else {
                    push_dyn(&mut out, &mut lit, &mut quoted, &w[i..end], false);
                }
                i = end;
            }
            b'<' | b'>' if s.get(i + 1) == Some(&b'(') => {
                let end = skip_balanced(s, i + 1, b'(', b')')?;
                push_dyn(&mut out, &mut lit, &mut quoted, &w[i..end], false);
                i = end;
            }
            b'*' | b'?' | b'[' if !value => {
                push_dyn(&mut out, &mut lit, &mut quoted, &w[i..i + 1], false);
                i += 1;
            }
            b'!' | b'@' | b'+' if s.get(i + 1) == Some(&b'(') => {
                let end = skip_balanced(s, i + 1, b'(', b')')?;
                push_dyn(&mut out, &mut lit, &mut quoted, &w[i..end], false);
                i = end;
            }
            b'~' if ((i == 0 && !quoted_any && lit.is_empty() && out.is_empty()) || after_sep)
                && !tilde_prefix_quoted(&s[i + 1..], value) =>
            {
                // A tilde-prefix: up to an unquoted `/` (or `:` in a value), expanded at run time.
                let end = s[i..]
                    .iter()
                    .position(|&b| b == b'/' || (b == b':' && value))
                    .map_or(s.len(), |p| i + p);
                push_dyn(&mut out, &mut lit, &mut quoted, &w[i..end], false);
                i = end;
            }
            _ => {
                let ch = w[i..].chars().next()?;
                lit.push(ch);
                i += ch.len_utf8();
            }
        }
        after_sep = assignment_like && i > 0 && matches!(s.get(i - 1), Some(b'=' | b':'));
    }
    let after_quoted_dyn = matches!(out.last(), Some(Seg::Dyn(_, true)));
    if !lit.is_empty() || (quoted && !after_quoted_dyn) || out.is_empty() {
        out.push(Seg::Lit(lit));
    }
    Some(out)
}

/// A tilde-prefix (up to an unquoted `/`, or `:` in an assignment's value) holding a quoted
/// character is not expanded: the `~` is literal.
fn tilde_prefix_quoted(rest: &[u8], value: bool) -> bool {
    for &c in rest {
        match c {
            b'/' => return false,
            b':' if value => return false,
            b'\\' | b'\'' | b'"' => return true,
            _ => {}
        }
    }
    false
}

/// A `$` bash reads as itself: before a blank, the word's end, or a character that starts no
/// expansion.
fn c_is_literal_dollar(s: &[u8], i: usize) -> bool {
    match s.get(i + 1) {
        None => true,
        Some(&b) => !(b.is_ascii_alphanumeric() || b"_{([@*#?-$!'\"".contains(&b)),
    }
}

/// Whether an unquoted `{…}` holding an unquoted `,` or `..` makes bash expand the word into
/// several (brace expansion: static, but not one word).
fn brace_expands(s: &[u8]) -> bool {
    let mut i = 0;
    let mut opens: Vec<usize> = vec![];
    while i < s.len() {
        match s[i] {
            b'{' if i == 0 || s[i - 1] != b'$' => opens.push(i),
            b'}' => {
                if let Some(o) = opens.pop() {
                    let inner = &s[o + 1..i];
                    if inner.contains(&b',') || inner.windows(2).any(|w| w == b"..") {
                        return true;
                    }
                }
            }
            b'\'' | b'"' | b'\\' | b'`' | b'$' => match skip_unit(s, i) {
                Some(e) => {
                    i = e;
                    continue;
                }
                None => return true,
            },
            _ => {}
        }
        i += 1;
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(x: &str) -> Vec<Seg> {
        segments(x, false).unwrap()
    }

    /// Red team round 11, real Claude Code 2.1.72 runs: `{\!,x}` and `${HOME:+\!}` (its
    /// rendering of `{!,x}` and `${HOME:+!}` in a text holding a `'`) gave the program `!` and
    /// `x`, and `!`, as the text did; `a{!,\\!}b` and bash give `a!b` and `a\!b`.
    #[test]
    fn bang_in_unquoted_brace_or_parameter_word_is_literal() {
        assert_eq!(w("{\\!,x}"), w("{!,x}"));
        assert_eq!(w("${HOME:+\\!}"), w("${HOME:+!}"));
        assert_eq!(w("a{\\!,\\\\!}b"), w("a{!,\\\\!}b"));
        // Not where the backslash stays or the `!` is special.
        assert_ne!(w("\"${HOME:+\\!}\""), w("\"${HOME:+!}\""));
        assert_ne!(w("${\\!v}"), w("${!v}"));
        assert_ne!(w("{\\!(a),b}"), w("{!(a),b}"));
        assert_ne!(w("{\\!,$x}"), w("{!,$x}"));
        assert_ne!(w("a{\\\\!,x}"), w("a{\\!,x}"));
    }

    #[test]
    fn words_by_value() {
        let lit = |v: &str| vec![Seg::Lit(v.into())];
        assert_eq!(w("'a b'"), lit("a b"));
        assert_eq!(w(r"a\ b"), lit("a b"));
        assert_eq!(w(r#""it's""#), lit("it's"));
        assert_eq!(w(r"x\!y"), lit("x!y"));
        assert_eq!(w("x!y"), lit("x!y"));
        assert_eq!(w("a~b"), lit("a~b"));
        assert_eq!(w("'{\"key\": \"value\"}'"), lit("{\"key\": \"value\"}"));
        assert_eq!(w("a{b"), lit("a{b"));
        assert_eq!(w("''"), lit(""));
        assert_eq!(w(r#""a \!= b""#), lit(r"a \!= b"));
        assert_eq!(w("$"), lit("$"));
        assert_eq!(w("\\"), lit("\\"));
        // Expansions and patterns stay as written.
        assert_eq!(w("~/x"), vec![Seg::Dyn("~".into(), false), Seg::Lit("/x".into())]);
        assert_eq!(w("a=~"), vec![Seg::Lit("a=".into()), Seg::Dyn("~".into(), false)]);
        assert_eq!(
            w("a=b:~"),
            vec![Seg::Lit("a=b:".into()), Seg::Dyn("~".into(), false)]
        );
        assert_eq!(w("b:~"), lit("b:~"));
        assert_eq!(w("--opt=~/x"), lit("--opt=~/x"));
        assert_eq!(w("'~'"), lit("~"));
        assert_eq!(w("\"$x\""), vec![Seg::Dyn("$x".into(), true)]);
        assert_eq!(w("$x"), vec![Seg::Dyn("$x".into(), false)]);
        assert_eq!(
            w("*.rs"),
            vec![Seg::Dyn("*".into(), false), Seg::Lit(".rs".into())]
        );
        assert_eq!(w("{a,b}"), vec![Seg::Dyn("{a,b}".into(), false)]);
        assert_eq!(w("$(date +%F)"), vec![Seg::Dyn("$(date +%F)".into(), false)]);
        assert_ne!(w("$x''"), w("$x"));
    }

    #[test]
    fn actions_compare_what_bash_does() {
        // Quoting of static words, anywhere in a list or pipeline.
        assert!(same("echo 'a';\n    echo b | cat", "echo a;\n    echo b | cat"));
        assert!(same("printf '%s\\n' ok x!y", "printf '%s\\n' ok x\\!y"));
        assert!(same("grep 'a~b'", "grep a~b"));
        assert!(same("a 2>&1 > f", "a 2>&1 1> 'f'"));
        assert!(same("cmd -m 'a=b'", "cmd -m \"a=b\""));
        // Values, expansions, structure and assignments that differ.
        assert!(!same("echo 'a != b'", "echo \"a \\!= b\""));
        assert!(!same("echo \"$x\"", "echo '$x'"));
        assert!(!same("echo *", "echo '*'"));
        assert!(!same("echo ~", "echo '~'"));
        assert!(!same("a=b cmd", "'a=b' cmd"));
        assert!(!same("if true; then\n    :;\nfi", "'if' true; then\n    :;\nfi"));
        assert!(!same("echo a | cat", "echo a; cat"));
        assert!(!same("echo a b", "echo 'a b'"));
        assert!(same("x; a=b cmd", "x; a='b' cmd"));
        // The cases of the word-by-word comparison this replaces.
        assert!(same(r#"argvprobe "a b" | cat"#, "argvprobe 'a b' | cat"));
        assert!(same("echo x", "echo 'x'"));
        assert!(same(r#"echo "it's""#, r"echo 'it'\''s'"));
        assert!(same(r"echo a\ b", "echo 'a b'"));
        assert!(same("argvprobe a=b | cat", r"argvprobe a\=b | cat"));
        assert!(same("argvprobe '~é&'", r"argvprobe ~é\&"));
        assert!(!same("x; a=b cmd", "x; 'a=b' cmd"));
        assert!(!same("[[ $x =~ \"a.b\" ]]", "[[ $x =~ a.b ]]"));
        assert!(!same("(( x = \"1\" ))", "(( x = 1 ))"));
        // Here-documents are compared as printed.
        assert!(!same("cat <<'E'\nx\nE\n", "cat <<E\nx\nE\n"));
    }

    #[test]
    fn words_that_run_code_are_found() {
        for w in [
            "echo $(<f)",
            "echo \"`cat f`\"",
            "${a:=$}${b:=(}${z:=a[$a$b<f)]}$((z))",
            "${x@P}",
            "<(ls)",
            "$((1))",
            "${a[$(id)]}",
        ] {
            assert!(runs_code(w).is_some(), "{w}");
        }
        for w in [
            "echo $x \"${y}\" ${#z} $1 \"$@\" '$(id)' \\$\\(id\\) ~/x *.rs {a,b}",
            "'a != b'",
        ] {
            assert_eq!(runs_code(w), None, "{w}");
        }
    }

    #[test]
    fn the_stdin_contract_is_neutral_wherever_it_is_put() {
        let n = "< /dev/null";
        assert!(same_modulo(
            "echo 'a';\n    echo b | cat",
            "echo a;\n    echo b < /dev/null | cat",
            n
        ));
        assert!(same_modulo(
            "echo x | grep 'a~b'",
            "echo x < /dev/null | grep a~b",
            n
        ));
        assert!(same_modulo("ls", "ls < /dev/null", n));
        assert!(!same_modulo("ls", "ls < /dev/null < /dev/null", n));
        assert!(!same_modulo("ls", "ls < /dev/zero", n));
    }

    #[test]
    fn the_stdin_contract_does_not_replace_a_command_s_own_input() {
        // Red team round 3: bash applies a command's redirections in order, so the harness's
        // `< /dev/null` replaces the command's own input, the one of a compound around it, and
        // a pipe.
        let n = "< /dev/null";
        for (intended, received, why) in [
            (
                "bc <<< '2+3'",
                "bc <<< '2+3' < /dev/null",
                "to `bc`, which has its own `<<< 2+3`",
            ),
            ("sort < a.txt", "sort < a.txt < /dev/null", "its own `< a.txt`"),
            ("wc -l < a.txt", "wc -l < a.txt < /dev/null", "to `wc …`"),
            ("cat 0<> a.txt", "cat 0<> a.txt < /dev/null", "its own `<> a.txt`"),
            ("cat 0<&3", "cat 0<&3 < /dev/null", "its own `<&3`"),
            ("cat 0> f", "cat 0> f < /dev/null", "its own `0> f`"),
            ("cat 2<&0", "cat 2<&0 < /dev/null", "its own `2<&0`"),
            (
                "while read l; do\n    echo \"$l\";\ndone <<< 'a b'",
                "while read l; do\n    echo \"$l\";\ndone <<< 'a b' < /dev/null",
                "to `while … done`",
            ),
            (
                "while read l; do\n    head -1 | cat;\ndone < a.txt",
                "while read l; do\n    head -1 < /dev/null | cat;\ndone < a.txt",
                "to `head …` inside `while … done`, whose `< a.txt`",
            ),
            (
                "{\n    a | b\n} < f",
                "{\n    a < /dev/null | b\n} < f",
                "inside `{ … }`",
            ),
            ("echo x | cat", "echo x | cat < /dev/null", "the pipe"),
            (
                "echo x | {\n    cat\n}",
                "echo x | {\n    cat < /dev/null\n}",
                "whose standard input is a pipe",
            ),
        ] {
            assert_overrides(intended, received, why);
        }
        // Neutral: nothing else sets the command's stdin.
        for (intended, received) in [
            ("cat {fd}< a.txt", "cat {fd}< a.txt < /dev/null"),
            ("cat < a.txt; cat", "cat < a.txt; cat < /dev/null"),
            (
                "if true; then\n    cat;\nfi",
                "if true; then\n    cat;\nfi < /dev/null",
            ),
            (
                "case x in\n    a)\n        cat\n    ;;\nesac",
                "case x in\n    a)\n        cat < /dev/null\n    ;;\nesac",
            ),
            (
                "for ((i=0; i<3; i++))\ndo\n    cat;\ndone",
                "for ((i=0; i<3; i++))\ndo\n    cat;\ndone < /dev/null",
            ),
            (
                "f () \n{ \n    cat\n};\ncat",
                "f () \n{ \n    cat\n};\ncat < /dev/null",
            ),
            ("cat > f 2>&1", "cat > f 2>&1 < /dev/null"),
        ] {
            assert_eq!(compare_modulo(intended, received, n), Modulo::Same, "{received}");
        }
    }

    /// `received` is `intended` with the stdin contract added where it is not neutral, for the
    /// reason `why`.
    fn assert_overrides(intended: &str, received: &str, why: &str) {
        match compare_modulo(intended, received, "< /dev/null") {
            Modulo::Overrides(w) => assert!(w.contains(why), "{received}: {w}"),
            m => panic!("{received}: {m:?}"),
        }
    }

    #[test]
    fn the_stdin_contract_does_not_replace_the_shell_s_own_input() {
        // Red team round 4: a command that changes the shell's own stdin for the commands
        // after it (or may: eval, `.`, a trap, a function, a name known at run time).
        let n = "< /dev/null";
        for (intended, received, why) in [
            (
                "exec 0< a.txt;\ncat",
                "exec 0< a.txt;\ncat < /dev/null",
                "`exec < a.txt`",
            ),
            (
                "command exec 0<> a.txt;\ncat",
                "command exec 0<> a.txt;\ncat < /dev/null",
                "`exec <> a.txt`",
            ),
            (
                "eval 'exec 0<a.txt';\ncat",
                "eval 'exec 0<a.txt';\ncat < /dev/null",
                "`eval …`",
            ),
            (". ./s.sh;\ncat", ". ./s.sh;\ncat < /dev/null", "`. …`"),
            (
                "$e 'x';\ncat",
                "$e 'x';\ncat < /dev/null",
                "known only at run time",
            ),
            (
                "trap -- 'x' DEBUG;\ncat",
                "trap -- 'x' DEBUG;\ncat < /dev/null",
                "`trap …`",
            ),
            (
                "f () \n{ \n    true\n};\nf;\ncat",
                "f () \n{ \n    true\n};\nf;\ncat < /dev/null",
                "`f` in the text calls a function",
            ),
        ] {
            assert_overrides(intended, received, why);
        }
        for (intended, received) in [
            ("exec 3< a.txt;\ncat", "exec 3< a.txt;\ncat < /dev/null"),
            (
                "echo exec eval . source;\ncat",
                "echo exec eval . source;\ncat < /dev/null",
            ),
            ("trap 'x' EXIT;\ncat", "trap 'x' EXIT;\ncat < /dev/null"),
            ("trap - INT;\ncat", "trap - INT;\ncat < /dev/null"),
            ("$e x", "$e x < /dev/null"),
        ] {
            assert_eq!(compare_modulo(intended, received, n), Modulo::Same, "{received}");
        }
        assert!(may_change_shell_stdin(". s.sh; cat"));
        assert!(may_change_shell_stdin("ev''al x; cat"));
        assert!(may_change_shell_stdin("sour\\ce s.sh; cat"));
        assert!(!may_change_shell_stdin("ls a.txt; echo .x evaluate"));
    }

    #[test]
    fn old_arithmetic_and_descriptor_variables_are_read_as_bash_reads_them() {
        // `$[…]` is an arithmetic expansion (red team round 3), not a `$` and a pattern.
        assert_eq!(
            w("out$[LINENO].txt"),
            vec![
                Seg::Lit("out".into()),
                Seg::Dyn("$[LINENO]".into(), false),
                Seg::Lit(".txt".into())
            ]
        );
        assert!(!same("echo $[x]", r"echo \$[x]"));
        assert!(runs_code("echo $[1+1]").is_some());
        // `{NAME}>` assigns the descriptor to NAME: a redirection, not a word.
        assert_eq!(
            action("true {fd}> f"),
            Some(vec![
                Token::Word(vec![Seg::Lit("true".into())]),
                Token::Redirect("{fd}>".into()),
                Token::Word(vec![Seg::Lit("f".into())]),
            ])
        );
        assert_eq!(action("echo {fd}").unwrap().len(), 2);
    }

    #[test]
    fn the_first_difference_names_the_command_and_word() {
        let (cmd, a, b) =
            first_difference("echo a;\n    echo 'a != b'", "echo a;\n    echo 'a \\!= b'").unwrap();
        assert_eq!((cmd, a.as_str(), b.as_str()), (1, "'a != b'", r"'a \!= b'"));
    }
}
