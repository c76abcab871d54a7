//! Faithful Rust port of the npm package [`shell-quote`] **1.8.3**, the version bundled in
//! Claude Code 2.1.72's `cli.js`, plus a port of Claude Code 2.1.72's `eval` payload builder
//! ([`claude_code_2_1_72`]).
//!
//! The port follows the JavaScript semantics exactly, including its bugs (for example `$$x`
//! drops the `x`, `$_foo` yields `oo`, `$constructor` expands to the text of
//! `Object.prototype.constructor` when no env is given, and a `#` inside a word starts a
//! comment). See `README.md` for provenance. Indices are per Unicode scalar value; the only
//! place where JavaScript's UTF-16 code units make a difference (a lone surrogate produced by
//! the single-character-variable skip, or by quoting an operator that contains an astral
//! character) yields U+FFFD here, which is what `String.prototype.toWellFormed()` gives in JS.
//!
//! [`shell-quote`]: https://www.npmjs.com/package/shell-quote

pub mod claude_code_2_1_72;
mod js;

use std::fmt;

/// The shell-quote version this crate ports (and that Claude Code 2.1.72 bundles).
pub const SHELL_QUOTE_VERSION: &str = "1.8.3";

/// One element of the array passed to shell-quote's `quote(xs)`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QuoteArg {
    /// A plain string argument.
    Str(String),
    /// An operator object `{op: "..."}`; quote() backslash-escapes every character of it.
    Op(String),
}

impl From<&str> for QuoteArg {
    fn from(s: &str) -> Self {
        QuoteArg::Str(s.to_owned())
    }
}

impl From<String> for QuoteArg {
    fn from(s: String) -> Self {
        QuoteArg::Str(s)
    }
}

/// A token produced by shell-quote's `parse()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Token {
    /// A plain string (JS: a string element).
    Str(String),
    /// A control operator (JS: `{op: "..."}`).
    Op(String),
    /// A word that contained an unquoted `*` or `?` (JS: `{op: "glob", pattern: "..."}`).
    Glob(String),
    /// A comment: the rest of the whole input after `#` (JS: `{comment: "..."}`).
    Comment(String),
}

/// Value returned by an env lookup during `parse()`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EnvValue {
    /// A string (or any JS primitive, already converted with `String(v)`).
    Str(String),
    /// A JS object value, given as its `JSON.stringify` text. shell-quote embeds it as
    /// `TOKEN + json + TOKEN` where TOKEN is a per-process random hex string; this port uses
    /// the fixed [`OBJECT_TOKEN`] instead.
    Object(String),
}

/// Stand-in for shell-quote's random per-process `TOKEN` that brackets object env values.
pub const OBJECT_TOKEN: &str = "\u{1}shell-quote-token\u{1}";

/// Error thrown by `parse()` (`Error("Bad substitution: ...")`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParseError {
    /// The exact JS error message.
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ParseError {}

// ---------------------------------------------------------------------------------------------
// quote
// ---------------------------------------------------------------------------------------------

/// Port of shell-quote 1.8.3 `quote(xs)`:
///
/// ```js
/// if (s === '') return "''";
/// if (s && typeof s === 'object') return s.op.replace(/(.)/g, '\\$1');
/// if (/["\s\\]/.test(s) && !/'/.test(s)) return "'" + s.replace(/(['])/g, '\\$1') + "'";
/// if (/["'\s]/.test(s)) return '"' + s.replace(/(["\\$`!])/g, '\\$1') + '"';
/// return String(s).replace(/([A-Za-z]:)?([#!"$&'()*,:;<=>?@[\\\]^`{|}])/g, '$1\\$2');
/// ```
/// joined with single spaces.
pub fn quote(args: &[QuoteArg]) -> String {
    args.iter()
        .map(|a| match a {
            QuoteArg::Str(s) => quote_one(s),
            QuoteArg::Op(op) => quote_op(op),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// `quote([s])` for a single string.
pub fn quote_str(s: &str) -> String {
    quote_one(s)
}

/// `quote(xs)` for a list of plain strings.
pub fn quote_strs<S: AsRef<str>>(xs: &[S]) -> String {
    xs.iter()
        .map(|s| quote_one(s.as_ref()))
        .collect::<Vec<_>>()
        .join(" ")
}

/// `quote(xs)` for plain strings as the older shell-quote bundled in Claude Code 1.0.0 (read in
/// its `cli.js`) does it: a string with `"` or white space and no `'` is single-quoted with `'`
/// and `\` backslash-escaped inside the quotes (`/(['\\])/g`), so a backslash reaches the
/// shell doubled; a backslash alone does not pick the single-quote branch.
///
/// ```js
/// if (/["\s]/.test(s) && !/'/.test(s)) return "'" + s.replace(/(['\\])/g, '\\$1') + "'";
/// ```
/// The other branches are [`quote`]'s.
pub fn quote_strs_escaping_backslash<S: AsRef<str>>(xs: &[S]) -> String {
    xs.iter()
        .map(|s| {
            let s = s.as_ref();
            if !s.is_empty() && !s.contains('\'') && s.chars().any(|c| c == '"' || js::is_space(c)) {
                format!("'{}'", s.replace('\\', "\\\\"))
            } else if s.contains('\\') && !s.chars().any(|c| c == '"' || c == '\'' || js::is_space(c)) {
                // No branch-1 or branch-2 character: the last branch escapes each metacharacter.
                quote_last_branch(s)
            } else {
                quote_one(s)
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn quote_op(op: &str) -> String {
    // `.` matches one UTF-16 code unit except line terminators.
    let mut out = String::new();
    for c in op.chars() {
        if js::is_line_terminator(c) {
            out.push(c);
        } else if c.len_utf16() == 2 {
            // "\\" + high + "\\" + low: both halves become lone surrogates (U+FFFD when
            // made well-formed).
            out.push_str("\\\u{FFFD}\\\u{FFFD}");
        } else {
            out.push('\\');
            out.push(c);
        }
    }
    out
}

fn is_quote_meta(c: char) -> bool {
    matches!(
        c,
        '#' | '!'
            | '"'
            | '$'
            | '&'
            | '\''
            | '('
            | ')'
            | '*'
            | ','
            | ':'
            | ';'
            | '<'
            | '='
            | '>'
            | '?'
            | '@'
            | '['
            | '\\'
            | ']'
            | '^'
            | '`'
            | '{'
            | '|'
            | '}'
    )
}

fn quote_one(s: &str) -> String {
    if s.is_empty() {
        return "''".to_owned();
    }
    let has_sq = s.contains('\'');
    if !has_sq && s.chars().any(|c| c == '"' || c == '\\' || js::is_space(c)) {
        // Branch 1: single quotes, nothing escaped (there is no ' to escape).
        return format!("'{s}'");
    }
    if s.chars().any(|c| c == '"' || c == '\'' || js::is_space(c)) {
        // Branch 2: double quotes with " \ $ ` ! backslash-escaped.
        let mut out = String::with_capacity(s.len() + 2);
        out.push('"');
        for c in s.chars() {
            if matches!(c, '"' | '\\' | '$' | '`' | '!') {
                out.push('\\');
            }
            out.push(c);
        }
        out.push('"');
        return out;
    }
    quote_last_branch(s)
}

/// Branch 3: /([A-Za-z]:)?([#!"$&'()*,:;<=>?@[\\\]^`{|}])/g -> '$1\\$2'
fn quote_last_branch(s: &str) -> String {
    let cs: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len() * 2);
    let mut i = 0;
    while i < cs.len() {
        if cs[i].is_ascii_alphabetic() && i + 2 < cs.len() && cs[i + 1] == ':' && is_quote_meta(cs[i + 2]) {
            out.push(cs[i]);
            out.push(':');
            out.push('\\');
            out.push(cs[i + 2]);
            i += 3;
        } else if is_quote_meta(cs[i]) {
            out.push('\\');
            out.push(cs[i]);
            i += 1;
        } else {
            out.push(cs[i]);
            i += 1;
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// parse
// ---------------------------------------------------------------------------------------------

/// `META = '|&;()<> \t'`
fn is_meta(c: char) -> bool {
    matches!(c, '|' | '&' | ';' | '(' | ')' | '<' | '>' | ' ' | '\t')
}

/// Single-character members of `CONTROL` (`[&;()|<>]`).
fn is_control_char(c: char) -> bool {
    matches!(c, '&' | ';' | '(' | ')' | '|' | '<' | '>')
}

/// Length of the `CONTROL` alternation matched at `i`, in alternation order:
/// `\|\|`, `\&\&`, `;;`, `\|\&`, `\<\(`, `\<\<\<`, `>>`, `>\&`, `<\&`, `[&;()|<>]`.
fn control_at(s: &[char], i: usize) -> Option<usize> {
    let at = |k: usize| s.get(i + k).copied();
    let two = |a: char, b: char| at(0) == Some(a) && at(1) == Some(b);
    if two('|', '|') || two('&', '&') || two(';', ';') || two('|', '&') || two('<', '(') {
        return Some(2);
    }
    if two('<', '<') && at(2) == Some('<') {
        return Some(3);
    }
    if two('>', '>') || two('>', '&') || two('<', '&') {
        return Some(2);
    }
    match at(0) {
        Some(c) if is_control_char(c) => Some(1),
        _ => None,
    }
}

/// `controlRE = /^CONTROL$/`
fn is_control_exact(h: &[char]) -> bool {
    control_at(h, 0) == Some(h.len()) && !h.is_empty()
}

/// End of `"((\\"|[^"])*?)"` (or the `'` variant) starting at the opening quote `o`,
/// reproducing the lazy-quantifier backtracking order. `last_q` is the index of the last
/// occurrence of the quote character in the input.
fn quoted_end(s: &[char], o: usize, q: char, last_q: Option<usize>) -> Option<usize> {
    let mut p = o + 1;
    loop {
        if p >= s.len() {
            return None;
        }
        if s[p] == q {
            return Some(p + 1);
        }
        if s[p] == '\\' && p + 1 < s.len() && s[p + 1] == q {
            // Prefer `\q`; that path succeeds iff another q exists at >= p+2, otherwise the
            // engine backtracks, takes `\` as [^q] and closes at p+1.
            if matches!(last_q, Some(l) if l >= p + 2) {
                p += 2;
                continue;
            }
            return Some(p + 2);
        }
        p += 1;
    }
}

/// `matchAll(string, chunker)` with
/// `chunker = /(CONTROL)|((BAREWORD|SINGLE_QUOTE|DOUBLE_QUOTE)+)/g`,
/// `BAREWORD = (\\['"|&;()<> \t]|[^\s'"|&;()<> \t])+`.
fn chunk(s: &[char]) -> Vec<(usize, usize)> {
    let last_dq = s.iter().rposition(|&c| c == '"');
    let last_sq = s.iter().rposition(|&c| c == '\'');
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < s.len() {
        if let Some(len) = control_at(s, pos) {
            out.push((pos, pos + len));
            pos += len;
            continue;
        }
        let mut p = pos;
        loop {
            // BAREWORD (greedy)
            let start = p;
            while p < s.len() {
                let c = s[p];
                if c == '\\' && p + 1 < s.len() && (s[p + 1] == '\'' || s[p + 1] == '"' || is_meta(s[p + 1]))
                {
                    p += 2;
                } else if !js::is_space(c) && c != '\'' && c != '"' && !is_meta(c) {
                    p += 1;
                } else {
                    break;
                }
            }
            if p > start {
                continue;
            }
            let end = match s.get(p) {
                Some('"') => quoted_end(s, p, '"', last_dq),
                Some('\'') => quoted_end(s, p, '\'', last_sq),
                _ => None,
            };
            match end {
                Some(e) => p = e,
                None => break,
            }
        }
        if p > pos {
            out.push((pos, p));
            pos = p;
        } else {
            pos += 1;
        }
    }
    out
}

fn get_var(
    h: &[char],
    x: &mut usize,
    env: &dyn Fn(&str) -> Option<EnvValue>,
    skip_astral: &mut bool,
) -> Result<String, ParseError> {
    *x += 1;
    let varname: String;
    match h.get(*x) {
        Some('{') => {
            *x += 1;
            if h.get(*x) == Some(&'}') {
                let m: String = h[*x - 2..(*x + 1).min(h.len())].iter().collect();
                return Err(ParseError {
                    message: format!("Bad substitution: {m}"),
                });
            }
            let close = h[(*x).min(h.len())..].iter().position(|&c| c == '}');
            match close {
                None => {
                    let m: String = h[(*x).min(h.len())..].iter().collect();
                    return Err(ParseError {
                        message: format!("Bad substitution: {m}"),
                    });
                }
                Some(off) => {
                    varname = h[*x..*x + off].iter().collect();
                    *x += off;
                }
            }
        }
        Some(&c) if matches!(c, '*' | '@' | '#' | '?' | '$' | '!' | '_' | '-') => {
            varname = c.to_string();
            *x += 1;
            // The caller's loop increment then skips h[*x] (upstream bug). If that is an
            // astral character JS skips only its high surrogate.
            if let Some(&n) = h.get(*x) {
                if n.len_utf16() == 2 {
                    *skip_astral = true;
                }
            }
        }
        _ => {
            let rest = &h[(*x).min(h.len())..];
            match rest.iter().position(|&c| !js::is_word(c)) {
                None => {
                    varname = rest.iter().collect();
                    *x = h.len();
                }
                Some(idx) => {
                    varname = rest[..idx].iter().collect();
                    if idx == 0 {
                        *x -= 1;
                    } else {
                        *x += idx - 1;
                    }
                }
            }
        }
    }
    Ok(match env(&varname) {
        None if !varname.is_empty() => String::new(),
        None => "$".to_owned(),
        Some(EnvValue::Str(v)) => v,
        Some(EnvValue::Object(json)) => format!("{OBJECT_TOKEN}{json}{OBJECT_TOKEN}"),
    })
}

/// Port of shell-quote 1.8.3 `parse(s, env)` where `env` is a plain object (or `undefined`);
/// `env(name)` plays the role of `env[name]` (`None` = `undefined`).
///
/// (shell-quote's function-env mode, which re-splits strings on the object TOKEN, is not
/// ported: Claude Code's eval-payload builder calls `parse(s)` with no env.)
pub fn parse(s: &str, env: &dyn Fn(&str) -> Option<EnvValue>) -> Result<Vec<Token>, ParseError> {
    let input: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut commented = false;
    'outer: for (ms, me) in chunk(&input) {
        let h = &input[ms..me];
        if h.is_empty() || commented {
            continue;
        }
        if is_control_exact(h) {
            out.push(Token::Op(h.iter().collect()));
            continue;
        }
        let mut quote: Option<char> = None;
        let mut esc = false;
        let mut m = String::new();
        let mut glob = false;
        let mut x = 0usize;
        while x < h.len() {
            let mut w = h[x];
            let mut skip_astral = false;
            glob = glob || (quote.is_none() && (w == '*' || w == '?'));
            if esc {
                m.push(w);
                esc = false;
            } else if let Some(q) = quote {
                if w == q {
                    quote = None;
                } else if q == '\'' {
                    m.push(w);
                } else if w == '\\' {
                    x += 1;
                    match h.get(x) {
                        Some(&c) => {
                            w = c;
                            if w == '"' || w == '\\' || w == '$' {
                                m.push(w);
                            } else {
                                m.push('\\');
                                m.push(w);
                            }
                        }
                        None => m.push('\\'),
                    }
                } else if w == '$' {
                    m.push_str(&get_var(h, &mut x, env, &mut skip_astral)?);
                } else {
                    m.push(w);
                }
            } else if w == '"' || w == '\'' {
                quote = Some(w);
            } else if is_control_char(w) {
                out.push(Token::Op(h.iter().collect()));
                continue 'outer;
            } else if w == '#' {
                commented = true;
                let comment: String = input[ms + x + 1..].iter().collect();
                if !m.is_empty() {
                    out.push(Token::Str(m));
                }
                out.push(Token::Comment(comment));
                continue 'outer;
            } else if w == '\\' {
                esc = true;
            } else if w == '$' {
                m.push_str(&get_var(h, &mut x, env, &mut skip_astral)?);
            } else {
                m.push(w);
            }
            if skip_astral {
                // JS skipped only the high surrogate; the low one is appended by the next
                // iteration in every state.
                m.push('\u{FFFD}');
            }
            x += 1;
        }
        if glob {
            out.push(Token::Glob(m));
        } else {
            out.push(Token::Str(m));
        }
    }
    Ok(out)
}

/// The lookup `env[name]` performs on a fresh JS object `{}` (what `parse(s)` uses when no env
/// is given): `Object.prototype` members are visible.
pub fn js_empty_object_env(name: &str) -> Option<EnvValue> {
    const FNS: &[&str] = &[
        "__defineGetter__",
        "__defineSetter__",
        "hasOwnProperty",
        "__lookupGetter__",
        "__lookupSetter__",
        "isPrototypeOf",
        "propertyIsEnumerable",
        "toString",
        "valueOf",
        "toLocaleString",
    ];
    match name {
        "constructor" => Some(EnvValue::Str("function Object() { [native code] }".to_owned())),
        "__proto__" => Some(EnvValue::Object("{}".to_owned())),
        n if FNS.contains(&n) => Some(EnvValue::Str(format!("function {n}() {{ [native code] }}"))),
        _ => None,
    }
}

/// `parse(s)` with no env, exactly as Claude Code 2.1.72 calls it (`Gz(q)` → `parse(q, undefined)`).
pub fn parse_no_env(s: &str) -> Result<Vec<Token>, ParseError> {
    parse(s, &js_empty_object_env)
}

#[cfg(test)]
mod tests;
