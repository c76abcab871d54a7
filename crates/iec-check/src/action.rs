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
    Reader {
        s: canonical.as_bytes(),
        i: 0,
        text: canonical,
    }
    .tokens()
}

/// Whether two canonical forms denote the same action (see the module documentation).
pub fn same(x: &str, y: &str) -> bool {
    x == y || matches!((action(x), action(y)), (Some(a), Some(b)) if a == b)
}

/// As [`same`], where `received` may hold the contract-neutral redirection `neutral` (the
/// tokens of `< /dev/null`, say) once more than `intended` does, wherever a harness put it.
pub fn same_modulo(intended: &str, received: &str, neutral: &str) -> bool {
    if same(intended, received) {
        return true;
    }
    let (Some(a), Some(b), Some(n)) = (action(intended), action(received), action(neutral)) else {
        return false;
    };
    if n.is_empty() || count(&b, &n) != count(&a, &n) + 1 {
        return false;
    }
    (0..b.len())
        .filter(|&i| b[i..].starts_with(&n))
        .any(|i| b[..i].iter().chain(&b[i + n.len()..]).eq(a.iter()))
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
}

impl Reader<'_> {
    fn tokens(mut self) -> Option<Vec<Token>> {
        let mut out = Vec::new();
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
            if let Some(op) = self.operator() {
                // After every control operator a command may start (after a case pattern's `)`
                // too).
                at_start = true;
                out.push(Token::Op(op));
                want_in = 0;
                continue;
            }
            if let Some(r) = self.redirect() {
                if r.ends_with("<<") || r.ends_with("<<-") {
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
            out.push(Token::Word(segments(w, false)?));
            at_start = false;
        }
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

    /// A redirection operator with its file descriptor made explicit.
    fn redirect(&mut self) -> Option<String> {
        let rest = &self.s[self.i..];
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

/// The segments of one word as written. `value`: the word is an assignment's value (no
/// pathname expansion; `~` expands after `:` too).
fn segments(w: &str, value: bool) -> Option<Vec<Seg>> {
    let s = w.as_bytes();
    if brace_expands(s) {
        return Some(vec![Seg::Dyn(w.to_string(), false)]);
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
        out.push(Seg::Dyn(d.to_string(), q));
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
        Some(&b) => !(b.is_ascii_alphanumeric() || b"_{(@*#?-$!'\"".contains(&b)),
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
    fn the_first_difference_names_the_command_and_word() {
        let (cmd, a, b) =
            first_difference("echo a;\n    echo 'a != b'", "echo a;\n    echo 'a \\!= b'").unwrap();
        assert_eq!((cmd, a.as_str(), b.as_str()), (1, "'a != b'", r"'a \!= b'"));
    }
}
