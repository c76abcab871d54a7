//! Claude Code's "unparsed line" refusal (2.1.317 and later): a model of when the harness asks
//! for approval, which `--dangerously-skip-permissions` does not lift, before any shell runs.
//!
//! What the harness does (read in the 2.1.332 native binary's embedded JavaScript; the names
//! are the bundle's minified ones):
//!
//! * Its bash permission check `wVe` parses the whole command with its own parser (`pj` →
//!   `Qy().parse`, a hand-written JavaScript parser that builds tree-sitter-bash-shaped nodes;
//!   no tree-sitter grammar is involved, though its telemetry is still called
//!   `tengu_tree_sitter_parse_abort`). When the analysis of that tree (`FK`) is "too-complex",
//!   and no permission rule decided, it calls `sSe(root, undefined, {budget}, …)`.
//! * `sSe` asks ("Claude Code can't be sure it read this command the way the shell will, so it
//!   can't rule out a dangerous removal. This requires explicit approval. …", decision reason a
//!   `safetyCheck` with `classifierApprovable: false`, `circuitBreaker: "dangerousRemoval"`,
//!   `removalRule: "unparsed_line"`) when the root node's type is `ERROR` or `NMs(root)` holds.
//!   A command longer than 10,000 UTF-16 code units is not parsed at all (`pj`: `Ct = 1e4`) and
//!   never refused this way ([`PARSE_LIMIT`]).
//!   Whether the text looks like `rm` (`one`) or holds a `$'…\x…'` escape (`SLt`) only changes
//!   the message ("This command could not be checked for dangerous rm operations: the shell may
//!   read it differently than it was parsed."), not the refusal.
//! * The parser (`Gn`, after `Kn` built the `program` node) wraps the whole tree in an `ERROR`
//!   node when it noticed a text that bash and zsh read differently:
//!   - `dollarOperandDiff`: `mDo = /\$\$[({[]/` matches anywhere in the text, quoted or not
//!     (behind the gates `tengu_deep_locket`, default on, and `tengu_moonlit_crayon`, default
//!     off);
//!   - `zshBraceDiff`: the text contains `$\` and a newline, or a `${…}` whose body the parser
//!     finds ambiguous (an inner `{`, a line continuation, `$[`, a blank or `|` first, …);
//!   - `zshCondParenDiff`: `[[` then `(` (line continuations between) where a command starts;
//!   - `zshMathDiff`: `$[…]` or `$((` that the lexer did not read as arithmetic outside
//!     single quotes, comments and quoted here-documents, `((` in an argument, `((`/`$[` in a
//!     backquoted body (gate `bot_protected_tengu_gilded_abacus`, default on);
//!   - `keywordDesync`: a reserved word (`if then elif else fi while until for in do done case
//!     esac function select`) or a function definition right after assignments or redirections.
//! * `NMs` re-parses each backquoted body with `\``, `\$`, `\\`, `\"` or a line continuation in
//!   it (a `backtick_escape_unsupported` node), unescaped, and holds when every re-parse is an
//!   `ERROR` (or, in one mode, when a re-parse fails).
//!
//! The parser is some 5,000 lines; this module does not port it. It finds the certain cases
//! (`$$(`, `$${`, `$$[` anywhere; `$\` newline; a text that starts with `[[(`; a backquote or a
//! single quote at the top level of an arithmetic expression), which the real 2.1.332 refuses
//! every time (`crates/iec-harness/tests/unparsed_line.rs`), and marks as possible every text
//! with a shape that can set one of the other flags, so that a check says `unknown` there rather
//! than "corresponds".
//!
//! Arithmetic expressions are those the parser reads with its arithmetic grammar: `$((…))`,
//! `$[…]`, `((…))` where a command starts (also after `if`, `while`, `do`, `!`, `{`, …) and the
//! three parts of a `for ((…))` head go through `ze`: where the grammar stops before the closing
//! `))` or `]`, the text it leaves must match `Rr` (`[\w\s$+\-*/%<>=!&|^~?:,.()[\];]` and
//! `${NAME}`, no `<<`), hold no `$(` or `$[`, the whole expression no quote, and (in `$((…))`,
//! `$[…]`, whose lexer is set back) no nested `$((…))` or `$[…]`, or `zshMathDiff` is set. A
//! `${NAME[…]}` subscript and a `${NAME:…}` offset and length are one expression each (`fr`),
//! after which the expansion must go on with `]`, `:` or `}` (a subscript also with an operator
//! of `${…}`), or `zshBraceDiff` is set. An assignment's subscript (`a[…]=`) is kept as text.
//! The grammar reads numbers, `BASE#DIGITS`, names and subscripts, `$…` expansions, `"…"`,
//! parentheses and the C operators, never a backquote or a single quote: one of those where it
//! stops (`` $((`echo 1`+1)) ``, `${m['k']}`, `` ${x:`n`} ``, `((x['k']++))`) is certain; other
//! places where the grammar modelled here stops are possible. A `for ((…))` head holding `<<`
//! can make the parser give up (no tree; the harness runs the text), so a quote there is only
//! possible.
//!
//! How close that is, measured against the harness's own parser run on texts (its module and
//! `NMs`, cut out of the installed 2.1.332 binary and run under node with its gates at their
//! defaults, judged as `sSe` does: root `ERROR` or `NMs`; a text it gives no tree for counts as
//! run; a one-off measurement, nothing of it kept in this repository; see
//! `docs/findings/harness-runs.md`). On 640 sampled texts of the four random and shape sets,
//! 320 of them refused, it agreed with runs of the real 2.1.332 on all 640. The second two sets
//! were generated after the first fixes and guided the later ones.
//!
//! | set (texts bash parses) | texts | refused | certain | possible | missed | others possible |
//! |---|---|---|---|---|---|---|
//! | random over the hazard alphabet | 9,229 | 2,564 | 183 | 2,371 | 10 | 95 of 6,665 |
//! | arithmetic, `${…}` and loop shapes | 1,105 | 274 | 161 | 113 | 0 | 0 of 831 |
//! | random, second seed | 5,882 | 1,825 | 120 | 1,693 | 12 | 74 of 4,057 |
//! | random arithmetic expressions in 20 contexts | 3,407 | 1,474 | 840 | 634 | 0 | 12 of 1,933 |
//! | hazard payloads (the agreement tests' families) | 2,400 | 7 | 7 | 0 | 0 | 0 of 2,393 |
//! | everyday commands | 48 | 0 | 0 | 0 | 0 | 0 of 48 |
//!
//! Before red team round 8 the same sets gave (certain / possible / missed / others possible)
//! 168 / 2,358 / 38 / 149; 0 / 131 / 143 / 231; 112 / 1,683 / 30 / 105; 0 / 655 / 819 / 431;
//! 7 / 0 / 0 / 0; 0 / 0 / 0 / 4. The missed random texts (`docs/limits.md`) nearly all hold an
//! unclosed quote or backquote or an escaped `\$((`.

/// What the model says of a text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unparsed {
    /// The parser flag the text sets (`dollar-operand`, `dollar-continuation`, `cond-paren`,
    /// `keyword-after-prefix`, `arithmetic`, `brace-expansion`, `backquote-escape`).
    pub rule: &'static str,
    /// Byte offset of the construct.
    pub offset: usize,
    /// True when the harness refuses the text for certain; false when it may.
    pub certain: bool,
}

/// The reserved words of the harness parser's `bDo` set.
const KEYWORDS: &[&str] = &[
    "if", "then", "elif", "else", "fi", "while", "until", "for", "in", "do", "done", "case", "esac",
    "function", "select",
];

/// The length (UTF-16 code units) above which the harness does not parse a command (`pj`:
/// `e.length > Ct`, `Ct = 1e4`): the parse is abandoned and `sSe` refuses nothing. Through the
/// real 2.1.332 `argvprobe '$$(' '…'` is refused at 10,000 code units and runs at 10,001.
pub const PARSE_LIMIT: usize = 10_000;

/// The model's finding for `text`, certain findings first.
pub fn unparsed_line(text: &str) -> Option<Unparsed> {
    if text.encode_utf16().count() > PARSE_LIMIT {
        return None;
    }
    certain(text).or_else(|| possible(text))
}

fn certain(text: &str) -> Option<Unparsed> {
    let b = text.as_bytes();
    let hit = |rule, offset| Unparsed {
        rule,
        offset,
        certain: true,
    };
    // `mDo` and `Gn`'s `dollarOperandDiff`.
    if let Some(i) = (0..b.len().saturating_sub(2))
        .find(|&i| b[i] == b'$' && b[i + 1] == b'$' && matches!(b[i + 2], b'(' | b'{' | b'['))
    {
        return Some(hit("dollar-operand", i));
    }
    // `zshBraceDiff: src.includes("$\\\n")`.
    if let Some(i) = text.find("$\\\n") {
        return Some(hit("dollar-continuation", i));
    }
    // The lexer's `[[(` at a command's start (`zshCondParenDiff`).
    let start = text.len() - text.trim_start().len();
    if text[start..].starts_with("[[(") {
        return Some(hit("cond-paren", start));
    }
    // A backquote or a single quote where the arithmetic parser wants an operand or an
    // operator (`zshMathDiff`: the text it leaves before the closing `))`, `]` or `}` fails
    // `Rr`).
    let lit = literal_mask(text);
    if let Some(i) = arithmetic_bodies(text, &lit).into_iter().find(|a| a.quote) {
        return Some(hit("arithmetic", i.at));
    }
    // With another here-document in the text it may run (real 2.1.332: `cat <<A <<\B` with
    // `$((1))` in B's body runs): left to `possible`.
    let heredocs = text
        .match_indices("<<")
        .filter(|(k, _)| !text[k + 2..].starts_with('<') && !text[..*k].ends_with('<'))
        .count();
    backslash_heredoc_arithmetic(text, &lit)
        .filter(|_| heredocs == 1)
        .map(|i| hit("heredoc-backslash", i))
}

fn possible(text: &str) -> Option<Unparsed> {
    let hit = |rule, offset| {
        Some(Unparsed {
            rule,
            offset,
            certain: false,
        })
    };
    let lit = literal_mask(text);
    if let Some(i) = cond_paren(text, &lit) {
        return hit("cond-paren", i);
    }
    if let Some(i) = keyword_after_prefix(text) {
        return hit("keyword-after-prefix", i);
    }
    if let Some(i) = arithmetic(text, &lit) {
        return hit("arithmetic", i);
    }
    if let Some(a) = arithmetic_bodies(text, &lit).into_iter().find(|a| !a.parses) {
        return hit("arithmetic", a.at);
    }
    if let Some(i) = brace_expansion(text, &lit) {
        return hit("brace-expansion", i);
    }
    if let Some(i) = odd_shapes(text, &lit) {
        return hit("odd-shape", i);
    }
    if let Some(i) = backslash_heredoc_arithmetic(text, &lit) {
        return hit("heredoc-backslash", i);
    }
    for (start, body) in backquoted(text) {
        if has_escapes(body) {
            // `NMs`: the body is parsed again with its escapes removed (`\"` kept or not).
            let unescaped = unescape_backquoted(body);
            if unparsed_line(&unescaped).is_some() || unescaped.contains('`') {
                return hit("backquote-escape", start);
            }
        }
    }
    None
}

/// Bytes the parser reads as literal text: inside `'…'` or `$'…'` outside double quotes, and
/// comments (`#` where a word starts, to the end of the line). A construct there sets no flag
/// (`Gn` skips `raw_string`, `ansi_c_string` and `comment` nodes).
fn literal_mask(text: &str) -> Vec<bool> {
    let b = text.as_bytes();
    let mut mask = vec![false; b.len()];
    let (mut i, mut dq) = (0, false);
    while i < b.len() {
        match b[i] {
            b'\\' => i += 2,
            b'"' => {
                dq = !dq;
                i += 1;
            }
            b'\'' if !dq => {
                let s = i;
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    // `$'…'` ends at an unescaped quote.
                    i += if b[i] == b'\\' && s > 0 && b[s - 1] == b'$' {
                        2
                    } else {
                        1
                    };
                }
                i += 1;
                mask[s..i.min(b.len())].iter_mut().for_each(|m| *m = true);
            }
            b'#' if !dq
                && (i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'('))
                && !after_redirection_target(text, i) =>
            {
                let s = i;
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
                mask[s..i].iter_mut().for_each(|m| *m = true);
            }
            _ => i += 1,
        }
    }
    mask
}

/// Whether the `#` at `i` ends a simple command that has a redirection after its first word
/// (`argvprobe a > /dev/null # …`, `… 2>&1 # …`, `… > f b # …`): the harness's parser does not
/// take that text for a comment when it looks for texts bash and zsh read differently (red team
/// round 10, real 2.1.322 to 2.1.332: `argvprobe a > /dev/null # $(( 'x' ))` and `… > f #
/// ${x y}` are refused; `argvprobe a # $(( 'x' ))`, `> f argvprobe a # …`, `… > f; # …`,
/// `… > f | cat # …`, `… <<< x # …` and `{ argvprobe a; } > f # …` run).
fn after_redirection_target(text: &str, i: usize) -> bool {
    let line = text[..i].rsplit('\n').next().unwrap_or("");
    if !line.ends_with([' ', '\t']) {
        return false;
    }
    // The last simple command of the line: split at `;`, `|`, `&`, `(`, `)`, a backquote,
    // outside quotes, keeping the `&` and `|` of `2>&1`, `&>`, `>|`.
    let b = line.as_bytes();
    let (mut from, mut q) = (0, 0u8);
    for k in 0..b.len() {
        let c = b[k];
        if q != 0 {
            if c == q {
                q = 0;
            }
            continue;
        }
        match c {
            b'\'' | b'"' => q = c,
            b';' | b'(' | b')' | b'`' => from = k + 1,
            b'|' if k == 0 || b[k - 1] != b'>' => from = k + 1,
            b'&' if (k == 0 || !matches!(b[k - 1], b'>' | b'<')) && b.get(k + 1) != Some(&b'>') => {
                from = k + 1
            }
            _ => {}
        }
    }
    let ws: Vec<&str> = line[from..]
        .split([' ', '\t'])
        .filter(|w| !w.is_empty())
        .collect();
    // Skip the prefix: assignments and redirections (with their targets).
    let mut k = 0;
    while k < ws.len() {
        if is_assignment(ws[k]) {
            k += 1;
        } else if let Some(whole) = redirection(ws[k]) {
            k += if whole { 2 } else { 1 };
        } else {
            break;
        }
    }
    if ws
        .get(k)
        .is_none_or(|w| matches!(*w, "}" | "done" | "fi" | "esac"))
    {
        return false;
    }
    ws[k + 1..].iter().any(|w| {
        redirection(w).is_some()
            && !w
                .trim_start_matches(|c: char| c.is_ascii_digit())
                .starts_with("<<<")
    })
}

/// Bodies of here-documents whose delimiter starts with a backslash (`<<\EOF`, `<<-\EOF`): the
/// harness's parser (2.1.322 and later) reads `$((` or `$[` there as text the lexer did not take
/// for arithmetic and refuses the command (red team round 10: `cat <<\E` … `$((1+2))` … `E` is
/// refused by 2.1.322, 2.1.325, 2.1.331, 2.1.332 and run by 2.1.317; with `<<'E'`, `<<"E"`,
/// `<<E\X` or an unquoted `<<E` it runs).
fn backslash_heredoc_arithmetic(text: &str, lit: &[bool]) -> Option<usize> {
    let mask = heredoc_mask(text, lit, |raw| raw.starts_with('\\'));
    let b = text.as_bytes();
    (0..b.len().saturating_sub(1)).find(|&i| {
        mask[i] && b[i] == b'$' && (b[i + 1] == b'[' || (b[i + 1] == b'(' && b.get(i + 2) == Some(&b'(')))
    })
}

/// Bytes inside double quotes or here-document bodies: the lexer reads a `((` there as string
/// text (`python3 -c "print((1,2))"` and `cat <<EOF` … `((x))` run).
fn string_mask(text: &str, lit: &[bool]) -> Vec<bool> {
    let b = text.as_bytes();
    let mut mask = vec![false; b.len()];
    let (mut i, mut dq) = (0, false);
    let mut pending: Vec<String> = Vec::new();
    while i < b.len() {
        if lit[i] && !dq {
            i += 1;
            continue;
        }
        match b[i] {
            b'\\' => {
                mask[i] = dq;
                i += 2;
                continue;
            }
            b'"' => dq = !dq,
            b'<' if !dq && b.get(i + 1) == Some(&b'<') && b.get(i + 2) != Some(&b'<') => {
                // `<<WORD`, `<<-WORD`, `<<'WORD'`, `<<"WORD"`: its delimiter.
                let rest = text[i + 2..]
                    .trim_start_matches('-')
                    .trim_start_matches([' ', '\t']);
                let word: String = rest
                    .chars()
                    .take_while(|c| !matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'))
                    .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                    .collect();
                if !word.is_empty() {
                    pending.push(word);
                }
            }
            b'\n' if !dq && !pending.is_empty() => {
                // The bodies follow, one after the other, each up to its delimiter line.
                let mut j = i + 1;
                for word in pending.drain(..) {
                    while j < b.len() {
                        let end = text[j..].find('\n').map_or(b.len(), |e| j + e);
                        let done = text[j..end].trim_start_matches('\t') == word;
                        if !done {
                            mask[j..end].iter_mut().for_each(|m| *m = true);
                        }
                        j = (end + 1).min(b.len());
                        if done {
                            break;
                        }
                    }
                }
                i = j;
                continue;
            }
            _ => {}
        }
        mask[i] = dq;
        i += 1;
    }
    mask
}

/// Bytes of the bodies of here-documents whose delimiter is quoted (`<<'EOF'`, `<<"EOF"`,
/// `<<\EOF`): literal text to the parser.
fn quoted_heredoc_mask(text: &str, lit: &[bool]) -> Vec<bool> {
    heredoc_mask(text, lit, |raw| raw.contains(['\'', '"', '\\']))
}

/// Bytes of the bodies of here-documents whose delimiter as written (`raw`) passes `which`.
fn heredoc_mask(text: &str, lit: &[bool], which: fn(&str) -> bool) -> Vec<bool> {
    let b = text.as_bytes();
    let mut mask = vec![false; b.len()];
    let (mut i, mut dq) = (0, false);
    let mut pending: Vec<(String, bool)> = Vec::new();
    while i < b.len() {
        if lit[i] && !dq {
            i += 1;
            continue;
        }
        match b[i] {
            b'\\' => {
                i += 2;
                continue;
            }
            b'"' => dq = !dq,
            b'<' if !dq && b.get(i + 1) == Some(&b'<') && b.get(i + 2) != Some(&b'<') => {
                let rest = text[i + 2..]
                    .trim_start_matches('-')
                    .trim_start_matches([' ', '\t']);
                let raw: String = rest
                    .chars()
                    .take_while(|c| !matches!(c, ' ' | '\t' | '\n' | ';' | '&' | '|' | '<' | '>' | '(' | ')'))
                    .collect();
                let quoted = which(&raw);
                let word: String = raw.chars().filter(|c| !matches!(c, '\'' | '"' | '\\')).collect();
                if !word.is_empty() {
                    pending.push((word, quoted));
                }
            }
            b'\n' if !dq && !pending.is_empty() => {
                let mut j = i + 1;
                for (word, quoted) in pending.drain(..) {
                    while j < b.len() {
                        let end = text[j..].find('\n').map_or(b.len(), |e| j + e);
                        let done = text[j..end].trim_start_matches('\t') == word;
                        if !done && quoted {
                            mask[j..end].iter_mut().for_each(|m| *m = true);
                        }
                        j = (end + 1).min(b.len());
                        if done {
                            break;
                        }
                    }
                }
                i = j;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    mask
}

/// `[[`, line continuations, `(` outside literal text.
fn cond_paren(text: &str, lit: &[bool]) -> Option<usize> {
    let b = text.as_bytes();
    let skip = |mut i: usize| {
        while b.get(i) == Some(&b'\\') && b.get(i + 1) == Some(&b'\n') {
            i += 2;
        }
        i
    };
    (0..b.len()).find(|&i| {
        b[i] == b'[' && !lit[i] && {
            let j = skip(i + 1);
            b.get(j) == Some(&b'[') && b.get(skip(j + 1)) == Some(&b'(')
        }
    })
}

/// A word of the text: its offset and whether a command may start there (the text's start, or
/// after `;`, `&`, `|`, `(`, `)`, `{`, `}`, `!`, a newline or a backquote; or after a word
/// that is a reserved word).
struct Word<'a> {
    at: usize,
    text: &'a str,
    command_start: bool,
}

/// Blank-separated words (a line continuation is a blank, as for the lexer).
fn words(text: &str) -> Vec<Word<'_>> {
    let b = text.as_bytes();
    let mut out: Vec<Word<'_>> = Vec::new();
    let mut i = 0;
    let mut start = true;
    let sep = |c: u8| matches!(c, b';' | b'&' | b'|' | b'(' | b')' | b'\n' | b'`');
    while i < b.len() {
        let blank = |i: usize| {
            matches!(b[i], b' ' | b'\t') || sep(b[i]) || (b[i] == b'\\' && b.get(i + 1) == Some(&b'\n'))
        };
        if blank(i) {
            if sep(b[i]) {
                start = true;
            }
            i += if b[i] == b'\\' { 2 } else { 1 };
            continue;
        }
        let s = i;
        while i < b.len() && !blank(i) {
            i += 1;
        }
        let w = &text[s..i];
        let after_keyword = out.last().is_some_and(|p| {
            p.command_start && (KEYWORDS.contains(&p.text) || matches!(p.text, "{" | "}" | "!"))
        });
        // The lexer splits a leading `{`, `}` or `[` off a word.
        let w = w.trim_start_matches(['{', '}', '[']);
        let split = s < i - w.len();
        if w.is_empty() {
            start = true;
            continue;
        }
        out.push(Word {
            at: i - w.len(),
            text: w,
            command_start: start || split || after_keyword,
        });
        start = false;
    }
    out
}

fn is_assignment(w: &str) -> bool {
    let Some(eq) = w.find('=') else { return false };
    let name = w[..eq].trim_end_matches('+');
    let name = name.split('[').next().unwrap_or("");
    let mut c = name.chars();
    matches!(c.next(), Some(ch) if ch == '_' || ch.is_ascii_alphabetic())
        && c.all(|ch| ch == '_' || ch.is_ascii_alphanumeric())
}

/// A word that is or starts a redirection (`>f`, `2>`, `&>`, `<<<x`); `Some(true)` when the
/// operator is the whole word (its target is the next word).
fn redirection(w: &str) -> Option<bool> {
    let rest = w.trim_start_matches(|c: char| c.is_ascii_digit());
    let rest = rest
        .strip_prefix('{')
        .map_or(rest, |r| r.split_once('}').map_or(r, |x| x.1));
    let op_len = rest
        .bytes()
        .take_while(|c| matches!(c, b'<' | b'>' | b'&' | b'|'))
        .count();
    if op_len == 0 || !(rest.starts_with('<') || rest.starts_with('>') || rest.starts_with("&>")) {
        return None;
    }
    Some(op_len == rest.len())
}

/// `keywordDesync`: a reserved word (or `NAME()`) right after assignments or redirections that
/// stand where a command starts.
fn keyword_after_prefix(text: &str) -> Option<usize> {
    keyword_after_prefix_in(text, words(text))
        .or_else(|| keyword_after_prefix_in(text, quoted_words(text, true)))
        .or_else(|| keyword_after_prefix_in(text, quoted_words(text, false)))
}

/// [`words`], with quoted text (`'…'`, `"…"`, `$'…'`, `$(…)`) and escaped characters kept inside
/// the word: an assignment's value with a quoted blank, `;`, `|` or `(` is one word (red team
/// round 10, real 2.1.332: `x="a b" done; argvprobe x`, `x='a;b' fi`, `x=$(echo a b) done`,
/// `x=a\ b done`, `> "a b" done` are refused).
fn quoted_words(text: &str, nest: bool) -> Vec<Word<'_>> {
    let b = text.as_bytes();
    let mut out: Vec<Word<'_>> = Vec::new();
    let mut i = 0;
    let mut start = true;
    let sep = |c: u8| matches!(c, b';' | b'&' | b'|' | b'(' | b')' | b'\n' | b'`');
    while i < b.len() {
        if matches!(b[i], b' ' | b'\t') || sep(b[i]) || (b[i] == b'\\' && b.get(i + 1) == Some(&b'\n')) {
            if sep(b[i]) {
                start = true;
            }
            i += if b[i] == b'\\' { 2 } else { 1 };
            continue;
        }
        let s = i;
        let mut depth = 0usize;
        while i < b.len() {
            match b[i] {
                b'\\' => i += 1,
                b'\'' => {
                    let ansi = i > 0 && b[i - 1] == b'$';
                    i += 1;
                    while i < b.len() && b[i] != b'\'' {
                        i += if ansi && b[i] == b'\\' { 2 } else { 1 };
                    }
                }
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        i += if b[i] == b'\\' { 2 } else { 1 };
                    }
                }
                // `$(…)` and an array's `=(…)` stay in the word (`nest`), or `$(` starts a
                // command (`echo $(x="a b" done)` is refused too).
                b'(' if nest && i > 0 && matches!(b[i - 1], b'$' | b'=') => depth += 1,
                b')' if depth > 0 => depth -= 1,
                c if depth == 0 && (matches!(c, b' ' | b'\t') || sep(c)) => break,
                _ => {}
            }
            i += 1;
        }
        let i_end = i.min(b.len());
        i = i_end;
        let Some(w) = text.get(s..i_end) else { break };
        // After a reserved word, `{`, `}` or `!` a command starts (`! x="a b" done` is refused).
        let after_keyword = out.last().is_some_and(|p| {
            p.command_start && (KEYWORDS.contains(&p.text) || matches!(p.text, "{" | "}" | "!"))
        });
        out.push(Word {
            at: s,
            text: w,
            command_start: start || after_keyword,
        });
        start = false;
    }
    out
}

fn keyword_after_prefix_in(text: &str, ws: Vec<Word<'_>>) -> Option<usize> {
    let keyword_like = |w: &str| {
        KEYWORDS.iter().any(|k| {
            w.strip_prefix(k).is_some_and(|r| {
                !r.starts_with(|c: char| c == '_' || c == '=' || c == '+' || c.is_ascii_alphanumeric())
            })
        })
    };
    for k in 1..ws.len() {
        let w = &ws[k];
        // `NAME (`; not `< <(cmd)`, a process substitution after a redirection.
        let parens = text[w.at + w.text.len()..]
            .trim_start_matches([' ', '\t'])
            .starts_with('(')
            && redirection(w.text).is_none();
        if !keyword_like(w.text) && !parens {
            continue;
        }
        // Walk back over the prefix: assignments, redirections and their targets.
        let mut j = k;
        while j > 0 && !ws[j].command_start {
            let p = ws[j - 1].text;
            let prefix = is_assignment(p)
                || redirection(p).is_some()
                || (j >= 2 && redirection(ws[j - 2].text) == Some(true) && !ws[j - 1].command_start);
            if !prefix {
                break;
            }
            j -= 1;
        }
        if j < k && ws[j].command_start {
            return Some(w.at);
        }
    }
    None
}

/// `zshMathDiff` shapes: `$(`, continuations, `(`; `((` not after `$` in an argument; `$[`
/// whose body holds more than an expression of words; `((` or `$[` in a backquoted body with
/// escapes.
fn arithmetic(text: &str, lit: &[bool]) -> Option<usize> {
    let b = text.as_bytes();
    // Quotes hide these; a comment does unless a redirection stands before it on its line: the
    // lexer does not read `#` as a comment everywhere bash does (`argvprobe > f #((` is
    // refused).
    // Per byte: whether a `<` or `>` stands on its line before a comment that holds it.
    let mut shown = vec![false; b.len()];
    let (mut redirection, mut in_comment, mut comment_shown) = (false, false, false);
    for k in 0..b.len() {
        if b[k] == b'\n' {
            (redirection, in_comment, comment_shown) = (false, false, false);
            continue;
        }
        if !in_comment && b[k] == b'#' && lit[k] {
            (in_comment, comment_shown) = (true, redirection);
        }
        if !in_comment && matches!(b[k], b'<' | b'>') {
            redirection = true;
        }
        shown[k] = in_comment && comment_shown;
    }
    let quoted = |i: usize| lit[i] && !shown[i];
    let strings = string_mask(text, lit);
    for i in (0..b.len()).filter(|&i| !quoted(i)) {
        if b[i] == b'$' && escaped(b, i) {
            continue;
        }
        if b[i] == b'$' && b.get(i + 1) == Some(&b'(') && b.get(i + 2) == Some(&b'\\') {
            let mut j = i + 2;
            while b.get(j) == Some(&b'\\') && b.get(j + 1) == Some(&b'\n') {
                j += 2;
            }
            if b.get(j) == Some(&b'(') {
                return Some(i);
            }
        }
        if b[i] == b'(' && b.get(i + 1) == Some(&b'(') && (i == 0 || b[i - 1] != b'$') && !strings[i] {
            // `((` is arithmetic where a command starts (and after `for`); elsewhere the harness
            // may read it as zsh would.
            if !arithmetic_command_start(text, i) && !for_head(text, i) {
                return Some(i);
            }
        }
        // `$((` with no `))` after it: not arithmetic to the lexer.
        if b[i] == b'$' && text[i..].starts_with("$((") && !text[i + 3..].contains("))") {
            return Some(i);
        }
        // `$[` with no `]` after it (a closed one is judged with the other arithmetic bodies).
        if b[i] == b'$' && b.get(i + 1) == Some(&b'[') && !text[i + 2..].contains(']') {
            return Some(i);
        }
    }
    // A backquoted body with escapes is kept as one node, whose text is tested for `((` and `$[`
    // (`U6n`) as it stands.
    // The same where the body does not parse up to its closing backquote
    // (`backtick_body_overrun`): unbalanced parentheses, here approximated.
    backquoted(text)
        .into_iter()
        .find(|(_, body)| {
            let opens = body.matches('(').count() != body.matches(')').count()
                || body.matches('\'').count() % 2 == 1
                || body.matches('"').count() % 2 == 1;
            (has_escapes(body) || opens) && (body.contains("((") || body.contains("$["))
        })
        .map(|(start, _)| start)
}

/// A backquoted body with `\``, `\$`, `\\`, `\"` or a line continuation: the parser keeps it as
/// one `backtick_escape_unsupported` node.
fn has_escapes(body: &str) -> bool {
    body.as_bytes()
        .windows(2)
        .any(|w| w[0] == b'\\' && matches!(w[1], b'`' | b'$' | b'\\' | b'"' | b'\n'))
}

/// `zshBraceDiff` shapes of `${…}`: an inner `{`, a continuation, `$[`, `<>&;|`, a blank or `|`
/// first, or no closing `}`.
fn brace_expansion(text: &str, lit: &[bool]) -> Option<usize> {
    let b = text.as_bytes();
    for i in 0..b.len().saturating_sub(1) {
        if b[i] != b'$' || b[i + 1] != b'{' || lit[i] || escaped(b, i) {
            continue;
        }
        let mut j = i + 2;
        let mut closed = false;
        let mut odd = false;
        let mut depth = 1;
        if matches!(b.get(j), Some(b' ' | b'\t' | b'\n' | b'|')) {
            return Some(i);
        }
        // A subscript, or an offset and length, is judged with the arithmetic expressions.
        let name = text[j..]
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .unwrap_or(text.len() - j);
        let substring = name > 0
            && b.get(j + name) == Some(&b':')
            && !matches!(b.get(j + name + 1), Some(b'-' | b'=' | b'?' | b'+'));
        if substring && closing(&text[j + name..], 1, b'}').is_some() {
            continue;
        }
        if name > 0 && b.get(j + name) == Some(&b'[') {
            if let Some(end) = closing(&text[j + name..], 1, b']') {
                j += name + end + 1;
            }
        }
        while j < b.len() {
            match b[j] {
                b'\\' => {
                    if b.get(j + 1) == Some(&b'\n') {
                        odd = true;
                    }
                    j += 2;
                    continue;
                }
                b'$' if b.get(j + 1) == Some(&b'{') => {
                    depth += 1;
                    j += 2;
                    continue;
                }
                b'{' | b'<' | b'>' | b'&' | b';' | b'|' => odd = true,
                b'$' if b.get(j + 1) == Some(&b'[') => odd = true,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        closed = true;
                        break;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        if odd || !closed {
            return Some(i);
        }
    }
    None
}

/// Shapes the real 2.1.332 refused where the rules above saw nothing (red team round 6), each
/// taken as possible: `((` where a command starts with no `))` before the next `;`, `)` or
/// newline (nested subshells, `((echo a); echo b)`); `${NAME` followed by a character that
/// neither closes nor starts an operator (`${x y}`, `${x\ }`, `${"x"}`); a `$(` with no `)`
/// after it (an unquoted here-document's `price: $(`).
fn odd_shapes(text: &str, lit: &[bool]) -> Option<usize> {
    let b = text.as_bytes();
    // A quoted here-document's body is literal text; not told apart here, so the `$(` rule is
    // left out where the text has one.
    let quoted_heredoc = ["<<'", "<<\"", "<<-'", "<<-\"", "<<\\"]
        .iter()
        .any(|q| text.contains(q));
    for i in (0..b.len()).filter(|&i| !lit[i] && text.is_char_boundary(i)) {
        let rest = &text[i..];
        // Not the inner `((` of `$(((`, `(((` or `for (((`.
        let inner = || {
            i > 0
                && b[i - 1] == b'('
                && (text[..i].ends_with("$(") || arithmetic_closes(&text[i + 1..]) || for_head(text, i - 1))
        };
        if rest.starts_with("((")
            && (i == 0 || b[i - 1] != b'$')
            && !inner()
            && arithmetic_command_start(text, i)
            && !arithmetic_closes(&rest[2..])
        {
            return Some(i);
        }
        if rest.starts_with("${") && !escaped(b, i) {
            let indirect = rest[2..].starts_with('!');
            let inner = rest[2..].trim_start_matches(['#', '!']);
            let name = inner
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len());
            let after = &inner[name..];
            let odd = match after.chars().next() {
                None => true,
                Some(' ' | '\t') => !after.trim_start().starts_with('}'),
                // A subscript is judged with the arithmetic expressions.
                Some('[') => false,
                // `${!x*}`: the names that start with `x`.
                Some('*') => !indirect,
                Some(c) => !"}:-=?+#%/^,@".contains(c),
            };
            if odd {
                return Some(i);
            }
        }
        if rest.starts_with("$(")
            && !rest.starts_with("$((")
            && !escaped(b, i)
            && !quoted_heredoc
            && !rest[2..].contains(')')
        {
            return Some(i);
        }
    }
    None
}

/// Whether the byte at `i` follows an odd number of backslashes (a literal one).
fn escaped(b: &[u8], i: usize) -> bool {
    b[..i].iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 1
}

/// Whether an arithmetic command's body (after `((`) closes with `))` at its own depth before a
/// `;` or newline: otherwise bash reads nested subshells (`((echo a); echo b)`).
fn arithmetic_closes(body: &str) -> bool {
    let b = body.as_bytes();
    let mut depth = 0usize;
    let mut k = 0;
    while k < b.len() {
        match b[k] {
            b'(' => depth += 1,
            b')' if depth > 0 => depth -= 1,
            b')' => return b.get(k + 1) == Some(&b')'),
            b';' | b'\n' if depth == 0 => return false,
            _ => {}
        }
        k += 1;
    }
    false
}

/// Whether a `((` at `i` stands where a command starts: the text's start, after `;`, `&`, `|`,
/// a newline or `(`, or after a reserved word that a command follows (`if`, `then`, `do`, `!`,
/// `{`, …). After any other word (`time ((x))`) the harness reads it as zsh would.
fn arithmetic_command_start(text: &str, i: usize) -> bool {
    let before = text[..i].trim_end_matches([' ', '\t']);
    if before.is_empty() || before.ends_with([';', '&', '|', '\n', '(']) {
        return true;
    }
    let word = before
        .rsplit([' ', '\t', '\n', ';', '&', '|', '('])
        .next()
        .unwrap_or("");
    matches!(
        word,
        "if" | "then" | "elif" | "else" | "while" | "until" | "do" | "!" | "{"
    )
}

/// Whether the `((` at `i` opens a `for ((…; …; …))` head.
fn for_head(text: &str, i: usize) -> bool {
    let before = text[..i].trim_end_matches([' ', '\t']);
    before
        .strip_suffix("for")
        .is_some_and(|b| b.is_empty() || b.ends_with([' ', '\t', '\n', ';', '&', '|', '(', '{']))
        && arithmetic_command_start(text, before.len() - 3)
}

/// An arithmetic expression the harness's parser reads with its arithmetic grammar (`$((…))`,
/// `((…))` where a command starts, a `for ((…))` head, `$[…]`, the offset and length of
/// `${NAME:…}`, a subscript of `${NAME[…]}`).
struct ArithmeticBody {
    /// Offset of the construct.
    at: usize,
    /// A backquote or a single quote at its top level (outside nested `$(…)`, `${…}`, `"…"`):
    /// the grammar has no such operand, and the text it leaves fails `Rr` (refused for sure).
    quote: bool,
    /// Whether the grammar (as far as modelled here) reads the whole expression.
    parses: bool,
}

/// The arithmetic expressions of `text` outside literal text, quoted here-document bodies and
/// backquoted bodies with escapes (those the parser keeps as one node).
fn arithmetic_bodies(text: &str, lit: &[bool]) -> Vec<ArithmeticBody> {
    let b = text.as_bytes();
    let strings = string_mask(text, lit);
    let quoted_heredoc = quoted_heredoc_mask(text, lit);
    let mut hidden = vec![false; b.len()];
    for (start, body) in backquoted(text) {
        if has_escapes(body) {
            hidden[start..(start + 1 + body.len()).min(b.len())]
                .iter_mut()
                .for_each(|h| *h = true);
        }
    }
    // An assignment's subscript (`a[$((…))]=1`) is kept as text (`Yt`, `tr`).
    for (start, end) in assignment_subscripts(text, lit) {
        hidden[start..end].iter_mut().for_each(|h| *h = true);
    }
    let mut out = Vec::new();
    // `ze`: where the grammar stops before the closer, the text it leaves must match `Rr`, hold
    // no `$(`/`$[` (its end is unknown to the lexer) and the whole expression no quote.
    // In `$((…))` and `$[…]` the lexer is set back to the start when the grammar stops early,
    // which drops the ends of nested `$((…))` and `$[…]` it had read (then not arithmetic to
    // `Gn`).
    let judge = |at: usize, body: &str, sections: bool| {
        let dollar = text[at..].starts_with('$');
        let clean = |e: &str| {
            let rest = &e[arith_stop(e, false)..];
            rest.is_empty()
                || (rr_clean(rest)
                    && !rest.contains("$(")
                    && !rest.contains("$[")
                    && !e.contains(['"', '\''])
                    && !(dollar && (e.contains("$((") || e.contains("$["))))
        };
        let quote = top_level_quote(body);
        if sections {
            // A `for ((…))` head; with a `<<` in it the parser may give up on the whole text
            // (no tree: the harness runs it, `for (( '1'<<'1' ;;))`).
            let abort = body.contains("<<");
            ArithmeticBody {
                at,
                quote: quote && !abort,
                parses: !quote && split_top_level(body, b';').iter().all(|s| clean(s)),
            }
        } else {
            ArithmeticBody {
                at,
                quote,
                parses: clean(body),
            }
        }
    };
    // `${NAME[…]}` and `${NAME:…}` (`fr`): one expression each (no comma list), then the
    // expansion must go on with `]`, `:` or `}`; otherwise `zshBraceDiff`. A quote where the
    // grammar stops is refused for sure.
    let expansion = |at: usize, parts: &[&str]| {
        for part in parts {
            let stop = arith_stop(part, true);
            if stop < part.len() {
                let quote = matches!(part.as_bytes()[stop], b'\'' | b'`');
                return Some(ArithmeticBody {
                    at,
                    quote,
                    parses: false,
                });
            }
        }
        None
    };
    let unclosed = |at| ArithmeticBody {
        at,
        quote: false,
        parses: false,
    };
    let mut push = |a: ArithmeticBody| out.push(a);
    let mut i = 0;
    while i < b.len() {
        if lit[i] || hidden[i] || quoted_heredoc[i] || !text.is_char_boundary(i) {
            i += 1;
            continue;
        }
        let rest = &text[i..];
        let dollar = b[i] == b'$' && !escaped(b, i);
        // A `{` earlier in the same word (`x{$((1))`): the word is read as a brace expansion.
        let brace_word = || {
            b[..i]
                .iter()
                .enumerate()
                .rev()
                .take_while(|&(_, c)| !b" \t\n;&|()<>".contains(c))
                .any(|(k, &c)| c == b'{' && !lit[k] && (k == 0 || b[k - 1] != b'$'))
        };
        if dollar && (rest.starts_with("$((") || rest.starts_with("$[")) && brace_word() {
            push(unclosed(i));
        } else if dollar && rest.starts_with("$((") {
            match closing(rest, 3, b')').filter(|&e| rest.as_bytes().get(e + 1) == Some(&b')')) {
                Some(end) => push(judge(i, &rest[3..end], false)),
                None => push(unclosed(i)),
            }
        } else if dollar && rest.starts_with("$[") {
            match closing(rest, 2, b']') {
                Some(end) => push(judge(i, &rest[2..end], false)),
                None => push(unclosed(i)),
            }
        } else if dollar && rest.starts_with("${") {
            let inner = &rest[2..];
            let skip = usize::from(inner.starts_with(['#', '!']));
            let name = inner[skip..]
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(inner.len() - skip);
            let after = &inner[skip + name..];
            if name > 0 && after.starts_with('[') {
                match closing(after, 1, b']') {
                    Some(end) if matches!(&after[1..end], "@" | "*") => {}
                    Some(end) => {
                        let sub = &after[1..end];
                        let stop = arith_stop(sub, true);
                        // Stopped at an operator of `${…}` (`${m[i,j]}`): the parser reads the
                        // rest as that operator's word, not modelled where it holds quotes.
                        let operator = sub
                            .as_bytes()
                            .get(stop)
                            .is_some_and(|c| b":#%/^,-=?+".contains(c));
                        let plain =
                            !sub[stop..].contains(['`', '\'', '"', '{']) && !sub[stop..].contains("$(");
                        if !(operator && plain) {
                            if let Some(a) = expansion(i, &[sub]) {
                                push(a);
                            }
                        }
                    }
                    None => push(unclosed(i)),
                }
            } else if name > 0
                && skip == 0
                && after.starts_with(':')
                && !after[1..].starts_with(['-', '=', '?', '+'])
            {
                let Some(end) = closing(after, 1, b'}') else {
                    push(unclosed(i));
                    i += 1;
                    continue;
                };
                // The offset, then after a `:` the length.
                let expr = &after[1..end];
                let stop = arith_stop(expr, true);
                let parts = if expr.as_bytes().get(stop) == Some(&b':') {
                    vec![&expr[..stop], &expr[stop + 1..]]
                } else {
                    vec![expr]
                };
                if let Some(a) = expansion(i, &parts) {
                    push(a);
                }
            }
        } else if rest.starts_with("((") && (i == 0 || !matches!(b[i - 1], b'$' | b'(')) && !strings[i] {
            if for_head(text, i) {
                match closing(rest, 2, b')').filter(|&e| rest.as_bytes().get(e + 1) == Some(&b')')) {
                    Some(end) => push(judge(i, &rest[2..end], true)),
                    None => push(unclosed(i)),
                }
            } else if arithmetic_command_start(text, i) && arithmetic_closes(&rest[2..]) {
                if let Some(end) =
                    closing(rest, 2, b')').filter(|&e| rest.as_bytes().get(e + 1) == Some(&b')'))
                {
                    push(judge(i, &rest[2..end], false));
                }
            }
        }
        i += 1;
    }
    out
}

/// Whether `rest` matches the parser's `Rr`: bytes of `[\w\s$+\-*/%<>=!&|^~?:,.()[\];]` and
/// `${NAME}` or `${#NAME}`, no `<<`.
fn rr_clean(rest: &str) -> bool {
    let b = rest.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if rest[i..].starts_with("${") {
            let name = rest[i + 2..].strip_prefix('#').unwrap_or(&rest[i + 2..]);
            let n = name
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(name.len());
            if n > 0 && name[n..].starts_with('}') {
                i = rest.len() - name.len() + n + 1;
                continue;
            }
            return false;
        }
        let c = b[i];
        if !(c.is_ascii_alphanumeric() || b"_ \t\n$+-*/%<>=!&|^~?:,.()[];".contains(&c)) {
            return false;
        }
        i += 1;
    }
    !rest.contains("<<")
}

/// The subscripts of assignments (`a[…]=`, `a[…]+=` at a word's start): byte ranges.
fn assignment_subscripts(text: &str, lit: &[bool]) -> Vec<(usize, usize)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    for i in 0..b.len() {
        let word_start = i == 0 || matches!(b[i - 1], b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(');
        if !word_start || lit[i] || !(b[i].is_ascii_alphabetic() || b[i] == b'_') {
            continue;
        }
        let mut j = i;
        while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
            j += 1;
        }
        if b.get(j) != Some(&b'[') {
            continue;
        }
        if let Some(end) = closing(&text[j..], 1, b']') {
            let after = &text[j + end + 1..];
            if after.starts_with('=') || after.starts_with("+=") {
                out.push((j, j + end + 1));
            }
        }
    }
    out
}

/// The offset in `s` of the `close` byte that ends the construct whose body starts at `from`:
/// parentheses and brackets nest, quotes, backquotes, `$(…)` and `${…}` are skipped.
fn closing(s: &str, from: usize, close: u8) -> Option<usize> {
    closing_at(s, from, close, 0)
}

fn closing_at(s: &str, from: usize, close: u8, depth: usize) -> Option<usize> {
    // Deeper nesting than any command an agent sends is taken as unclosed.
    if depth > 64 {
        return None;
    }
    let b = s.as_bytes();
    let mut open: Vec<u8> = Vec::new();
    let mut i = from;
    while i < b.len() {
        match b[i] {
            b'\\' => i += 1,
            b'\'' | b'"' | b'`' => {
                let q = b[i];
                i += 1;
                while i < b.len() && b[i] != q {
                    if b[i] == b'\\' && q != b'\'' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'$' if matches!(b.get(i + 1), Some(b'(' | b'{')) => {
                let c = if b[i + 1] == b'(' { b')' } else { b'}' };
                i = i + 2 + closing_at(&s[i + 2..], 0, c, depth + 1)?;
            }
            c if c == close && open.is_empty() => return Some(i),
            b'(' => open.push(b')'),
            b'[' => open.push(b']'),
            b'{' => open.push(b'}'),
            c @ (b')' | b']' | b'}') => open.pop().filter(|&o| o == c).map(drop)?,

            _ => {}
        }
        i += 1;
    }
    None
}

/// `s` split at `sep` bytes outside nesting and quotes.
fn split_top_level(s: &str, sep: u8) -> Vec<&str> {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut last = 0;
    let mut i = 0;
    while i <= b.len() {
        if i == b.len() {
            out.push(&s[last..]);
            break;
        }
        if b[i] == sep {
            out.push(&s[last..i]);
            last = i + 1;
            i += 1;
            continue;
        }
        match b[i] {
            b'(' | b'[' | b'{' | b'\'' | b'"' | b'`' | b'$' => {
                let close = match b[i] {
                    b'(' => b')',
                    b'[' => b']',
                    b'{' => b'}',
                    b'$' if matches!(b.get(i + 1), Some(b'(' | b'{')) => {
                        i += 1;
                        if b[i] == b'(' {
                            b')'
                        } else {
                            b'}'
                        }
                    }
                    b'$' => {
                        i += 1;
                        continue;
                    }
                    q => {
                        i += 1;
                        while i < b.len() && b[i] != q {
                            i += 1;
                        }
                        i += 1;
                        continue;
                    }
                };
                match closing(&s[i + 1..], 0, close) {
                    Some(e) => i += e + 2,
                    None => i = b.len(),
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// A backquote or a single quote at the top level of an arithmetic expression.
fn top_level_quote(body: &str) -> bool {
    let b = body.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'$' if b.get(i + 1) == Some(&b'\'') && !escaped(b, i) => {
                // `$'…'`: an operand.
                i += 2;
                while i < b.len() && b[i] != b'\'' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'`' | b'\'' if !escaped(b, i) => return true,
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            b'$' if matches!(b.get(i + 1), Some(b'(' | b'{')) && !escaped(b, i) => {
                let c = if b[i + 1] == b'(' { b')' } else { b'}' };
                match closing(&body[i + 2..], 0, c) {
                    Some(e) => i += e + 2,
                    None => return false,
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

/// Where the arithmetic grammar of the harness's parser (numbers, `BASE#DIGITS`, `0x…`, names
/// with a subscript, `$…` expansions, `"…"`, parentheses, unary, binary, assignment and
/// conditional operators, and unless `single` commas) stops reading `body`, blanks after it
/// skipped: `body.len()` when it reads all of it. It never stops inside a `"…"` or `$…` it
/// does not model, but before it.
fn arith_stop(body: &str, single: bool) -> usize {
    let mut p = Arith {
        b: body.as_bytes(),
        i: 0,
        depth: 0,
    };
    if single {
        p.conditional();
    } else {
        p.list();
    }
    p.blank();
    p.i.min(body.len())
}

struct Arith<'a> {
    b: &'a [u8],
    i: usize,
    /// Nesting of lists and conditionals; deeper than 64 is not read (no stack overflow).
    depth: usize,
}

impl Arith<'_> {
    fn blank(&mut self) {
        while self
            .b
            .get(self.i)
            .is_some_and(|c| matches!(c, b' ' | b'\t' | b'\n'))
        {
            self.i += 1;
        }
    }
    fn eat(&mut self, s: &str) -> bool {
        self.blank();
        if self.b[self.i..].starts_with(s.as_bytes()) {
            self.i += s.len();
            true
        } else {
            false
        }
    }
    fn list(&mut self) -> bool {
        if self.depth > 64 {
            return false;
        }
        self.depth += 1;
        let read = loop {
            if !self.conditional() {
                break false;
            }
            if !self.eat(",") {
                break true;
            }
        };
        self.depth -= 1;
        read
    }
    fn conditional(&mut self) -> bool {
        if self.depth > 64 || !self.binary() {
            return false;
        }
        self.depth += 1;
        let read = !self.eat("?") || (self.list() && self.eat(":") && self.conditional());
        self.depth -= 1;
        read
    }
    fn binary(&mut self) -> bool {
        const OPS: &[&str] = &[
            "<<=", ">>=", "**", "<<", ">>", "==", "!=", "<=", ">=", "&&", "||", "+=", "-=", "*=", "/=", "%=",
            "&=", "^=", "|=", "+", "-", "*", "/", "%", "<", ">", "&", "|", "^", "=",
        ];
        loop {
            if !self.unary() {
                return false;
            }
            self.blank();
            let rest = &self.b[self.i..];
            match OPS.iter().find(|op| rest.starts_with(op.as_bytes())) {
                // `++`/`--` after an operand is a postfix operator, taken in `unary`.
                Some(op) => self.i += op.len(),
                None => return true,
            }
        }
    }
    fn unary(&mut self) -> bool {
        loop {
            self.blank();
            let rest = &self.b[self.i..];
            if rest.starts_with(b"++") || rest.starts_with(b"--") {
                self.i += 2;
            } else if rest
                .first()
                .is_some_and(|c| matches!(c, b'+' | b'-' | b'!' | b'~'))
            {
                self.i += 1;
            } else {
                break;
            }
        }
        if !self.primary() {
            return false;
        }
        self.blank();
        if self.b[self.i..].starts_with(b"++") || self.b[self.i..].starts_with(b"--") {
            self.i += 2;
        }
        true
    }
    fn primary(&mut self) -> bool {
        self.blank();
        let b = self.b;
        let Some(&c) = b.get(self.i) else { return false };
        let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_';
        match c {
            b'(' => {
                self.i += 1;
                self.list() && self.eat(")")
            }
            b'0'..=b'9' => {
                while b.get(self.i).is_some_and(|c| c.is_ascii_digit()) {
                    self.i += 1;
                }
                if matches!(b.get(self.i), Some(b'x' | b'X')) && b[self.i - 1] == b'0' {
                    self.i += 1;
                    while b.get(self.i).is_some_and(|c| c.is_ascii_hexdigit()) {
                        self.i += 1;
                    }
                } else if b.get(self.i) == Some(&b'#') {
                    self.i += 1;
                    while b.get(self.i).is_some_and(|&c| word(c) || c == b'@') {
                        self.i += 1;
                    }
                }
                !b.get(self.i).is_some_and(|&c| word(c))
            }
            b'a'..=b'z' | b'A'..=b'Z' | b'_' => {
                while b.get(self.i).is_some_and(|&c| word(c)) {
                    self.i += 1;
                }
                if b.get(self.i) == Some(&b'[') {
                    self.i += 1;
                    return self.list() && self.eat("]");
                }
                true
            }
            b'"' => {
                let start = self.i;
                self.i += 1;
                // Expansions inside are read too; a backquote is not modelled.
                while b.get(self.i).is_some_and(|&c| c != b'"') {
                    match b[self.i] {
                        b'`' => {
                            self.i = start;
                            return false;
                        }
                        b'\\' => self.i += 2,
                        _ => self.i += 1,
                    }
                }
                let closed = self.eat("\"");
                if !closed {
                    self.i = start;
                }
                closed
            }
            b'$' => {
                let start = self.i;
                self.i += 1;
                let read = match b.get(self.i) {
                    Some(b'\'') => {
                        self.i += 1;
                        while b.get(self.i).is_some_and(|&c| c != b'\'') {
                            self.i += if b[self.i] == b'\\' { 2 } else { 1 };
                        }
                        self.i += 1;
                        self.i <= b.len()
                    }
                    Some(b'(' | b'{') => {
                        let close = if b[self.i] == b'(' { b')' } else { b'}' };
                        let s = std::str::from_utf8(&b[self.i + 1..]).unwrap_or("");
                        match closing(s, 0, close) {
                            Some(e) => {
                                let inner = &s[..e];
                                self.i += e + 2;
                                // `${…}` with a backquote or a quote inside is not modelled.
                                close == b')' || !inner.contains(['`', '\'', '"', '{'])
                            }
                            None => false,
                        }
                    }
                    Some(&c) if word(c) => {
                        while b.get(self.i).is_some_and(|&c| word(c)) {
                            self.i += 1;
                        }
                        true
                    }
                    Some(b'#' | b'?' | b'$' | b'!' | b'@' | b'*' | b'-') => {
                        self.i += 1;
                        true
                    }
                    _ => false,
                };
                if !read {
                    self.i = start;
                }
                read
            }
            _ => false,
        }
    }
}

/// Backquoted bodies (offset of the opening backquote, body without the backquotes; an
/// unclosed one runs to the end).
fn backquoted(text: &str) -> Vec<(usize, &str)> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            i += 2;
            continue;
        }
        if b[i] == b'`' {
            let s = i;
            i += 1;
            while i < b.len() && b[i] != b'`' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            let e = i.min(b.len());
            out.push((s, &text[s + 1..e]));
        }
        i += 1;
    }
    out
}

/// A backquoted body as the harness parses it again (`H` in `NMs`'s module): `\x` for x in
/// `` ` $ \ " `` becomes x, a line continuation goes.
fn unescape_backquoted(body: &str) -> String {
    let mut out = String::with_capacity(body.len());
    let mut it = body.chars().peekable();
    while let Some(c) = it.next() {
        if c == '\\' {
            match it.peek() {
                Some('\n') => {
                    it.next();
                    continue;
                }
                Some(&n @ ('`' | '$' | '\\' | '"')) => {
                    it.next();
                    out.push(n);
                    continue;
                }
                _ => {}
            }
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(t: &str) -> Option<(&'static str, bool)> {
        unparsed_line(t).map(|u| (u.rule, u.certain))
    }

    /// Each text with what the harness's own parser said of it (root `ERROR` or not), gates at
    /// their defaults; the first group was also run through the real 2.1.332
    /// (`crates/iec-harness/tests/unparsed_line.rs`).
    #[test]
    fn certain_and_possible_and_clean() {
        let cases: &[(&str, Option<(&str, bool)>)] = &[
            ("argvprobe '$$(~$'", Some(("dollar-operand", true))),
            ("argvprobe '$${x}'", Some(("dollar-operand", true))),
            ("argvprobe \"$$[\"", Some(("dollar-operand", true))),
            ("argvprobe $'$$('", Some(("dollar-operand", true))),
            ("argvprobe # $$(", Some(("dollar-operand", true))),
            ("argvprobe \"$\\\nx\"", Some(("dollar-continuation", true))),
            ("[[(1 == 1)]] && argvprobe x", Some(("cond-paren", true))),
            ("argvprobe ${x:-{a}", Some(("brace-expansion", false))),
            ("argvprobe `echo ((`", Some(("arithmetic", false))),
            ("x=1 if", Some(("keyword-after-prefix", false))),
            ("> f if", Some(("keyword-after-prefix", false))),
            ("x=1 then argvprobe", Some(("keyword-after-prefix", false))),
            ("echo x; x=1 do", Some(("keyword-after-prefix", false))),
            ("x=1 f() { :; }", Some(("keyword-after-prefix", false))),
            ("x=1 \\\nfi argvprobe x", Some(("keyword-after-prefix", false))),
            ("echo a; [[\\\n(1 == 1)]]", Some(("cond-paren", false))),
            ("argvprobe *${>&}", Some(("brace-expansion", false))),
            ("argvprobe $> f # )$((", Some(("arithmetic", false))),
            ("argvprobe fi {=$[]", Some(("arithmetic", false))),
            ("argvprobe `'$((\"))`> f ", Some(("arithmetic", false))),
            (
                "[[x=1 for \\>#< argvprobe x",
                Some(("keyword-after-prefix", false)),
            ),
            ("}\\\nx=1 for  argvprobe x", Some(("keyword-after-prefix", false))),
            (
                "argvprobe `do \\\nx=1 then `",
                Some(("keyword-after-prefix", false)),
            ),
            ("argvprobe [[(", Some(("cond-paren", false))),
            // Red team round 6: refused by the real 2.1.332 where the rules above saw nothing.
            ("((echo a); echo b)", Some(("odd-shape", false))),
            ("((cd /tmp && ls) )", Some(("odd-shape", false))),
            ("((argvprobe $((1)) ) )", Some(("odd-shape", false))),
            ("cat <<EOF\nprice: $(\nEOF", Some(("odd-shape", false))),
            ("echo ${x y}", Some(("odd-shape", false))),
            ("argvprobe ${x!}", Some(("odd-shape", false))),
            ("argvprobe ${#x y}", Some(("odd-shape", false))),
            ("argvprobe ${x[a b]}", Some(("arithmetic", false))),
            ("echo ${\"x\"}", Some(("odd-shape", false))),
            // Their neighbours that ran.
            ("argvprobe ${!x*} ${x }", None),
            ("(( (1) ))&&argvprobe a", None),
            ("((x=(1)+(2)));argvprobe $x", None),
            ("cat <<'EOF'\n$(\nEOF", None),
            ("argvprobe \\${x y}", None),
            ("argvprobe '$(x'", None),
            ("python3 -c \"print((1,2))\"", None),
            ("cat <<EOF\n$((1+2)) ((x))\nEOF", None),
            ("echo a # ((comment))", None),
            ("find . -name \"*.rs\" -exec grep -l \"((\" {} +", None),
            ("argvprobe \"$((2*3))\"", None),
            ("argvprobe $((1+2))", None),
            ("((x=1)); argvprobe $x", None),
            ("argvprobe `echo $((1+2))`", None),
            ("argvprobe $[1+2]", None),
            ("argvprobe \"$[1+2]\"", None),
            ("argvprobe ${x:-'a b'}", None),
            ("argvprobe \"${x:-'a b'}\"", None),
            ("argvprobe ${x:-$(echo a)}", None),
            ("argvprobe ${x:-${y}}", None),
            ("argvprobe ${#x} ${x/a/b} ${!x} ${x[0]}", None),
            ("argvprobe `echo \\\"a\\\"`", None),
            ("argvprobe `echo \\$x`", None),
            ("argvprobe \\$\\$\\(", None),
            ("argvprobe $$ (x)", None),
            ("f() { x; }; argvprobe", None),
            ("[[ (1 == 1) ]] && argvprobe x", None),
            ("argvprobe '!*$HOME~'", None),
            ("x=1 argvprobe if", None),
            ("argvprobe x=1", None),
            ("argvprobe '日本!foo$' \"é$((1))\" `x`", None),
        ];
        for (t, want) in cases {
            assert_eq!(rule(t), *want, "{t:?}");
        }
    }

    /// Checks `cases` (text, what the harness's own parser said: refused or not) against the
    /// model: a refused text is certain (`Some(true)`) or possible (`Some(false)`), a text it
    /// runs has no finding (`None`).
    fn judge(cases: &[(&str, Option<bool>)]) {
        for (t, want) in cases {
            let got = unparsed_line(t).map(|u| u.certain);
            assert_eq!(got, *want, "{t:?}: {:?}", unparsed_line(t));
        }
    }

    /// Red team round 8 (a): a backquote in `$((…))` was judged "corresponds"; the harness's
    /// arithmetic grammar has no backquoted operand and refuses the text every time.
    #[test]
    fn backquote_in_arithmetic_expansion_is_certain() {
        judge(&[
            ("echo $((`echo 1`+1))", Some(true)),
            ("echo $((1+`echo 1`))", Some(true)),
            ("echo \"$((`echo 1`+1))\"", Some(true)),
            ("x=$((`date +%s`-1))", Some(true)),
            ("echo $(( `echo 1` ))", Some(true)),
            ("echo $[`echo 1`+1]", Some(true)),
            ("cat <<EOF\n$((`echo 1`+1))\nEOF", Some(true)),
            // Inside a command substitution, in single quotes, in a quoted here-document.
            ("echo $(( $(echo `echo 1`) ))", None),
            ("echo '$((`echo 1`+1))'", None),
            ("cat <<'EOF'\n$((`echo 1`+1))\nEOF", None),
            // Operands and operators the grammar reads, or leaves as text `Rr` allows.
            ("echo $((1<<2)) $((16#ff)) $[2**3]", None),
            ("echo $((x y))", None),
            ("echo $(((1)+(2)))", None),
            // A brace-expansion word around it: possible.
            ("x{$((1))", Some(false)),
        ]);
    }

    /// Red team round 8 (a): `((…))` commands with a backquote or a quoted subscript were
    /// judged "corresponds", and `((…))` after `if`, `while`, `!`, `{` was `unknown` though the
    /// harness runs it.
    #[test]
    fn arithmetic_command_positions() {
        judge(&[
            ("((`echo 1`))", Some(true)),
            ("((x=`echo 1`))", Some(true)),
            ("((x['k']++))", Some(true)),
            ("for ((i=`echo 0`;i<3;i++)); do :; done", Some(true)),
            ("for ((i=0;i<'3';i++)); do :; done", Some(true)),
            ("if ((x>1)); then echo a; fi", None),
            ("while ((i<3)); do ((i++)); done", None),
            ("until ((i>3)); do ((i++)); done", None),
            ("! ((i++))", None),
            ("{ ((i++)); }", None),
            ("(((1)+(2)))", None),
            // After a word that is not a reserved word.
            ("time ((i++))", Some(false)),
        ]);
    }

    /// Red team round 8 (a): `${x:…}` offsets and lengths are arithmetic to the harness; a
    /// backquote or a quote there is refused, an offset it cannot read may be.
    #[test]
    fn substring_offset_and_length() {
        judge(&[
            ("echo ${x:`echo 1`}", Some(true)),
            ("echo ${x:1:`echo 2`}", Some(true)),
            ("echo ${x:'1'}", Some(true)),
            ("echo \"${x:`echo 1`}\"", Some(true)),
            ("echo ${x:1a}", Some(false)),
            ("echo ${x:1:2}", None),
            ("echo ${x: -1}", None),
            ("echo ${x:(-1)}", None),
            ("echo ${x:$((1))}", None),
            ("echo ${x:i+1}", None),
            // Default, alternative: not arithmetic.
            ("echo ${x:-`echo 1`}", None),
            ("echo ${x:+'a'}", None),
        ]);
    }

    /// Red team round 8 (a): a single-quoted or backquoted subscript (`${m['k']}`) was judged
    /// "corresponds"; the harness refuses it every time.
    #[test]
    fn associative_subscript_quote() {
        judge(&[
            ("echo ${m['k']}", Some(true)),
            ("echo \"${m['k']}\"", Some(true)),
            ("echo ${m['k']:-x}", Some(true)),
            ("echo ${m[`k`]}", Some(true)),
            ("echo $((m['k']+1))", Some(true)),
            ("echo ${m[\"k\"]}", None),
            ("echo \"${m[$k]}\" \"${m[\"$k\"]}\"", None),
            ("echo ${m[$'k']}", None),
            ("echo ${m[k]} ${m[@]} ${!m[*]} ${#m[@]}", None),
            // An assignment's subscript is not read as arithmetic.
            ("m['k']=1", None),
        ]);
    }

    /// Red team round 8 (b): `for ((…; …; …))` was `unknown` (a `((` in an argument); the
    /// harness runs it.
    #[test]
    fn for_arithmetic_head_runs() {
        judge(&[
            ("for ((i=0;i<3;i++)); do echo $i; done", None),
            ("for (( i=0 ; i<3 ; i++ )) ; do echo $i; done", None),
            ("for ((;;)); do break; done", None),
        ]);
    }

    /// Red team round 8 (b): `done < <(cmd)` was `unknown` (the process substitution's `(`
    /// taken for a function definition after a redirection); the harness runs it.
    #[test]
    fn while_read_process_substitution_runs() {
        judge(&[
            ("while read l; do echo $l; done < <(ls)", None),
            ("while read -r l; do :; done < <(ls) > out 2>&1", None),
            ("f() { :; } > >(cat)", None),
        ]);
    }

    /// Round 8 measurement: an escaped `\${` is literal text to the lexer, and a comment hides
    /// `$((` unless a redirection stands before the comment (not inside it).
    #[test]
    fn escaped_brace_and_redirection_inside_comment() {
        judge(&[
            ("argvprobe \\${x", None),
            ("argvprobe \\${{}", None),
            ("# < $((", None),
            ("argvprobe # > $((", None),
            ("argvprobe > f # $((", Some(false)),
        ]);
    }

    /// The property test's crab: a multibyte character right after `(` was sliced inside (a
    /// panic in the `((` rules).
    #[test]
    fn multibyte_after_open_paren_does_not_panic() {
        judge(&[("echo \"(é\"", None), ("echo \"(🦀)\" $((1))", None)]);
    }

    /// Held-out measurement of round 8: an assignment's subscript is text to the parser
    /// (`a[$((`…`))]=1` runs); a `for ((…))` head with a quote and a `<<` makes the parser give
    /// up (no tree; the real 2.1.332 ran it); a subscript stopped at an operator of `${…}` goes
    /// on as that operator's word (with a quote after it: not modelled, possible, though the
    /// harness runs `${m["1",'1']}`); a nested `$((…))` in a `$((…))` the grammar does not
    /// read to its end is refused.
    #[test]
    fn held_out_arithmetic_shapes() {
        judge(&[
            ("a[$((`echo 1`))]=1", None),
            ("a[$((m['k']))]=1", None),
            ("for (( '1'<<'1',m[k] ;;)); do break; done", Some(false)),
            ("echo ${m[\"1\",'1']}", Some(false)),
            ("echo ${m[i,j]} ${m[#]}", None),
            ("echo ${m[1<2#101]} ${x:(a[i+1]*${#a}<=${i})}", None),
            ("echo $(($((1))%x.y))", Some(false)),
            ("echo \"$(( $((1)) ${#a} ))\"", Some(false)),
            ("echo $(($(echo 1)==${#a} $i))", None),
            ("x=1 <(#${m['k']]]:<(argvprobe}- argvprobe x", None),
        ]);
    }

    /// Round 8 measurement: the harness does not parse a command longer than 10,000 UTF-16
    /// code units (`pj`), so nothing is refused there (the real 2.1.332 refused `argvprobe
    /// '$$(' '…'` at 10,000 and ran it at 10,001); the model said "diverges" at any length.
    #[test]
    fn longer_than_the_parse_limit_is_never_refused() {
        let text = |n: usize, c: char| {
            let head = "argvprobe '$$(' '";
            format!("{head}{}'", c.to_string().repeat(n - head.len() - 1))
        };
        let certain = Some(("dollar-operand", true));
        assert_eq!(rule(&text(PARSE_LIMIT, 'x')), certain);
        assert_eq!(rule(&text(PARSE_LIMIT + 1, 'x')), None);
        // Code units, not bytes: 10,000 with a two-byte character is still parsed.
        let wide = text(PARSE_LIMIT, 'é');
        assert!(wide.len() > PARSE_LIMIT);
        assert_eq!(rule(&wide), certain);
        assert_eq!(
            rule(&format!("echo $((`echo 1`)) #{}", "x".repeat(PARSE_LIMIT))),
            None
        );
    }

    /// Round 8 measurement: deep nesting (the harness's parser gives up on it, no tree, and
    /// runs the text) overflowed the model's stack or took seconds; now bounded.
    #[test]
    fn deep_nesting_is_bounded() {
        let parens = format!("{}{}", "(".repeat(4995), ")".repeat(4995));
        let arith = format!("echo $(({}1{}))", "(".repeat(3000), ")".repeat(3000));
        let ternary = format!("echo $(({}1{}))", "1?".repeat(2000), ":1".repeat(2000));
        let t = std::time::Instant::now();
        for text in [&parens, &arith, &ternary] {
            assert_eq!(rule(text), None, "{}", &text[..20]);
        }
        assert!(t.elapsed().as_secs() < 20, "{:?}", t.elapsed());
    }

    /// Red team round 10, each text run through the real 2.1.332 (`iec harness agree`): a
    /// reserved word after an assignment whose value holds a quoted blank, `;`, `|`, `(` or an
    /// escaped blank was "corresponds" (the blank-split words missed the prefix); the harness
    /// refuses each.
    #[test]
    fn keyword_after_quoted_assignment_red_team_round10() {
        judge(&[
            ("x=\"a b\" done; argvprobe x", Some(false)),
            ("x='a;b' fi; argvprobe x", Some(false)),
            ("x=\"(\" then; argvprobe x", Some(false)),
            ("x='|' esac; argvprobe x", Some(false)),
            ("x=\"$(echo a b)\" done; argvprobe x", Some(false)),
            ("x=$(echo a b) done; argvprobe x", Some(false)),
            ("> \"a b\" done; argvprobe x", Some(false)),
            ("x=$'a b' fi; argvprobe x", Some(false)),
            ("x=a\\ b done; argvprobe x", Some(false)),
            ("x=(a b) done; argvprobe x", Some(false)),
            ("! x=\"a b\" done; argvprobe x", Some(false)),
            ("echo $(x=\"a b\" done; argvprobe x)", Some(false)),
            // Their neighbours that run.
            ("x=\"a b\" argvprobe done", None),
            ("echo \"a b\" done", None),
        ]);
    }

    /// Red team round 10 (real 2.1.332): the text after a redirection and its target is not a
    /// comment to the harness's flag scan (`argvprobe a > /dev/null # $(( 'x' ))` was
    /// "corresponds", the harness refuses it); elsewhere it is.
    #[test]
    fn comment_after_redirection_red_team_round10() {
        judge(&[
            ("argvprobe a > /dev/null # $(( 'x' ))\nargvprobe b", Some(true)),
            ("argvprobe a >f # $(( 'x' ))\nargvprobe b", Some(true)),
            ("argvprobe a 2>&1 # $(( 'x' ))\nargvprobe b", Some(true)),
            ("argvprobe a < /dev/null # $(( 'x' ))\nargvprobe b", Some(true)),
            ("argvprobe a > f # ${x y}\nargvprobe b", Some(false)),
            ("argvprobe a >> f # $(( 'x' ))\nargvprobe b", Some(true)),
            ("argvprobe a >&2 # $(( 'x' ))\nargvprobe b", Some(true)),
            ("argvprobe a > f\t# $(( 'x' ))\nargvprobe b", Some(true)),
            ("argvprobe a > \"f g\" # $(( 'x' ))\nargvprobe b", Some(true)),
            ("argvprobe a > f b # $(( 'x' ))\nargvprobe b", Some(true)),
            // They run.
            ("argvprobe a # $(( 'x' ))\nargvprobe b", None),
            ("argvprobe a > f; # $(( 'x' ))\nargvprobe b", None),
            ("> f argvprobe a # $(( 'x' ))\nargvprobe b", None),
            ("argvprobe a > /dev/null # don't care\nargvprobe b", None),
            ("argvprobe a > f # $((1))\nargvprobe b", None),
            ("argvprobe a > f # x=1 done\nargvprobe b", None),
            ("argvprobe a <<< x # $(( 'x' ))\nargvprobe b", None),
            ("argvprobe a > f | cat # $(( 'x' ))\nargvprobe b", None),
            ("argvprobe a > f & # $(( 'x' ))\nwait; argvprobe b", None),
            ("{ argvprobe a; } > f # $(( 'x' ))\nargvprobe b", None),
        ]);
    }

    /// Red team round 10 (real 2.1.322, 2.1.325, 2.1.331, 2.1.332 refuse; 2.1.317 runs): `$((`
    /// or `$[` in the body of a here-document whose delimiter starts with a backslash was
    /// "corresponds".
    #[test]
    fn backslash_heredoc_arithmetic_red_team_round10() {
        let certain = Some(("heredoc-backslash", true));
        assert_eq!(rule("cat <<\\E\n$((1+2))\nE\nargvprobe x"), certain);
        assert_eq!(rule("cat <<\\E\n$[1]\nE\nargvprobe x"), certain);
        assert_eq!(rule("cat <<-\\E\n\t$(( 'x' ))\n\tE\nargvprobe x"), certain);
        assert_eq!(rule("y=$(cat <<\\E\n$((1))\nE\n); argvprobe \"$y\""), certain);
        assert_eq!(rule("cat <<\\E >/dev/null\n$[1]\nE\nargvprobe x"), certain);
        // With a second here-document it ran (`cat <<A <<\B`): possible.
        assert_eq!(
            rule("cat <<A <<\\B\nx\nA\n$((1))\nB\nargvprobe x"),
            Some(("heredoc-backslash", false))
        );
        judge(&[
            ("cat <<\\E\n((x))\nE\nargvprobe x", None),
            ("cat <<\\E\n$(echo hi)\nE\nargvprobe x", None),
            ("cat <<E\n$((1+2))\nE\nargvprobe x", None),
            ("cat <<'E'\n$((1+2))\nE\nargvprobe x", None),
            ("cat <<\"E\"\n$(( 'x' ))\nE\nargvprobe x", None),
            ("cat <<E\\X\n$(( 'x' ))\nEX\nargvprobe x", None),
            ("cat <<\\E\nhi\nE\nargvprobe $((1+2))", None),
        ]);
    }
}
