//! Harness renderings (sender side): validation, rewrite steps, payload quoting and template
//! filling. Each is named in launch files; each cites the harness code it reproduces.

use crate::{Launch, Validate};

/// Payload renderings a launch may name.
pub const PAYLOADS: &[&str] = &[
    "raw",
    "single-quote",
    "claude-code-2.1.72",
    "claude-code-2.0.76",
    "claude-code-1.0.0",
    "claude-code-1.0.21",
    "claude-code-1.0.65",
    "claude-code-1.0.76",
    "claude-code-2.1.3",
    "claude-code-2.1.75",
    "claude-code-2.1.79",
    "claude-code-2.1.84",
];

/// The Claude Code release lines whose eval payload a rendering named `claude-code-<version>`
/// reproduces (see `iec_shellquote::claude_code_2_1_72::Release`).
fn claude_code_release(kind: &str) -> Option<iec_shellquote::claude_code_2_1_72::Release> {
    use iec_shellquote::claude_code_2_1_72 as cc;
    Some(match kind {
        "claude-code-1.0.0" => cc::RELEASE_1_0_0,
        "claude-code-1.0.21" => cc::RELEASE_1_0_21,
        "claude-code-1.0.65" => cc::RELEASE_1_0_65,
        "claude-code-1.0.76" => cc::RELEASE_1_0_76,
        "claude-code-2.0.76" => cc::RELEASE_2_0_76,
        "claude-code-2.1.3" => cc::RELEASE_2_1_3,
        "claude-code-2.1.72" => cc::RELEASE_2_1_72,
        "claude-code-2.1.75" => cc::RELEASE_2_1_75,
        "claude-code-2.1.79" => cc::RELEASE_2_1_79,
        "claude-code-2.1.84" => cc::RELEASE_2_1_84,
        _ => return None,
    })
}
/// Rewrite steps a launch may name.
pub const REWRITES: &[&str] = &[
    "gemini-strip-shell-wrapper",
    "gemini-strip-shell-wrapper-0.1.15",
    "gemini-strip-shell-wrapper-0.11.3",
    "gemini-strip-shell-wrapper-0.36.0",
    "gemini-strip-shell-wrapper-0.44.0",
    "gemini-trim",
    "space-join",
    "openhands-escape-bash-special-chars",
    "claude-code-unescape-semicolon",
    "gemini-trim-semicolon",
];

/// Placeholder values used when filling templates. They are fixed, machine-independent paths:
/// the wrapper is parsed, never run, so only their shape matters.
pub const SNAPSHOT_PATH: &str = "/home/user/.claude/shell-snapshots/snapshot-bash-1764000000000-abc123.sh";
/// Temporary directory placeholder.
pub const TMP_DIR: &str = "/tmp";

/// A harness refusal: the call is rejected before any shell runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The rule that fired.
    pub rule: &'static str,
    /// The harness's own message.
    pub message: String,
    /// Byte offset of the offending character.
    pub offset: usize,
}

/// A control character Claude Code refuses (its `Ml`, 2.1.191 to 2.1.332: a UTF-16 code unit
/// below 32 other than tab and LF, or from 127 to 159, so DEL and the C1 controls U+0080–U+009F).
fn is_hidden_control(c: char) -> bool {
    (c.is_ascii_control() && c != '\t' && c != '\n') || ('\u{7f}'..='\u{9f}').contains(&c)
}

/// Applies the launch's input validation to a command text.
pub fn validate(v: &Validate, text: &str) -> Option<Rejection> {
    if let Some(msg) = &v.reject_control_chars {
        if let Some((i, _)) = text.char_indices().find(|&(_, c)| is_hidden_control(c)) {
            return Some(Rejection {
                rule: "control-characters",
                message: msg.clone(),
                offset: i,
            });
        }
    }
    if let Some(msg) = &v.reject_newlines {
        if let Some(i) = text.find(['\n', '\r']) {
            return Some(Rejection {
                rule: "newline",
                message: msg.clone(),
                offset: i,
            });
        }
    }
    if let Some(r) = &v.reject_substrings {
        if let Some(i) = r.find(text) {
            return Some(Rejection {
                rule: "substring",
                message: r.message_for(text),
                offset: i,
            });
        }
    }
    if let Some(msg) = &v.reject_command_substitution {
        let found = match v.command_substitution_detector.as_deref() {
            Some("gemini-0.1.15") => gemini_0_1_15_substitution(text, false),
            Some("gemini-0.8.2") => gemini_0_1_15_substitution(text, true),
            _ => command_substitution_outside_single_quotes(text),
        };
        if let Some(i) = found {
            return Some(Rejection {
                rule: "command-substitution",
                message: msg.clone(),
                offset: i,
            });
        }
    }
    if let Some(r) = &v.refuse_no_command_root {
        if !gemini_has_command_root(text, &r.rule) {
            return Some(Rejection {
                rule: "no-command-root",
                message: r.message.replace("{{command}}", text),
                offset: 0,
            });
        }
    }
    if let Some(msg) = &v.refuse_tree_sitter_error {
        if let crate::tree_sitter_gate::Decision::Refuses(f) =
            crate::tree_sitter_gate::decide(text, gate_of(v))
        {
            return Some(Rejection {
                rule: f.rule(),
                message: msg.clone(),
                offset: f.offset(),
            });
        }
    }
    if let Some(msg) = &v.refuse_unparsed_line {
        if let Some(u) = crate::unparsed::unparsed_line(text).filter(|u| certain_here(v, u)) {
            return Some(Rejection {
                rule: u.rule,
                message: msg.clone(),
                offset: u.offset,
            });
        }
    }
    None
}

/// The parse gate a launch's validation names.
fn gate_of(v: &Validate) -> crate::tree_sitter_gate::Gate {
    crate::tree_sitter_gate::Gate {
        prompt_transform: v.tree_sitter_prompt_transform,
        parts: v.tree_sitter_parts,
    }
}

/// Whether the model's finding `u` is a certain refusal on this launch (its rule not listed in
/// `unparsed_possible_only`).
fn certain_here(v: &Validate, u: &crate::unparsed::Unparsed) -> bool {
    u.certain && !v.unparsed_possible_only.iter().any(|r| r == u.rule)
}

/// Where the launch's harness may refuse `text` and the model cannot tell (a possible finding
/// of [`crate::unparsed`]): a check is then `unknown`, never "corresponds". Certain refusals
/// are [`validate`]'s.
pub fn may_refuse(v: &Validate, text: &str) -> Option<Rejection> {
    if let Some(msg) = &v.refuse_tree_sitter_error {
        if let crate::tree_sitter_gate::Decision::Undecided(u) =
            crate::tree_sitter_gate::decide(text, gate_of(v))
        {
            return Some(Rejection {
                rule: u.rule(),
                message: msg.clone(),
                offset: 0,
            });
        }
    }
    let msg = v.refuse_unparsed_line.as_ref()?;
    let u = crate::unparsed::unparsed_line(text).filter(|u| !certain_here(v, u))?;
    Some(Rejection {
        rule: u.rule,
        message: msg.clone(),
        offset: u.offset,
    })
}

/// Gemini CLI `detectCommandSubstitution`: the offset of `$(`, `` ` ``, `<(` or `>(` outside
/// single quotes (single quotes inside double quotes do not quote; backslash escapes outside
/// single quotes).
pub fn command_substitution_outside_single_quotes(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let (mut in_single, mut in_double) = (false, false);
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if in_single {
            if c == b'\'' {
                in_single = false;
            }
        } else if c == b'\\' {
            i += 2;
            continue;
        } else if c == b'\'' && !in_double {
            in_single = true;
        } else if c == b'"' {
            in_double = !in_double;
        } else if c == b'`'
            || ((c == b'$' || (!in_double && (c == b'<' || c == b'>'))) && b.get(i + 1) == Some(&b'('))
        {
            return Some(i);
        }
        i += 1;
    }
    None
}

/// Whether Gemini CLI finds a command root in `text` (an empty text aside: the harness refuses
/// it first, "Command cannot be empty."). `rule` `gemini-0.1.1` (0.1.1–0.1.13's
/// `getCommandRoot`: `trim()`, `{}()` deleted, the part before the first run of white space,
/// `;`, `&` or `|`, its last `/`- or `\`-separated component, which must not be empty);
/// `gemini-0.1.15` (0.1.15–0.10's `getCommandRoots`: `splitCommands` outside quotes at `;`, `&`,
/// `|`, `&&`, `||`, and for each command its first word — a quoted one unquoted — by its last
/// path component; a root is found when any is not empty). Any other rule: found.
pub fn gemini_has_command_root(text: &str, rule: &str) -> bool {
    let last_component = |w: &str| !w.rsplit(['/', '\\']).next().unwrap_or("").is_empty();
    match rule {
        "gemini-0.1.1" => {
            let t: String = text
                .trim_matches(is_js_whitespace)
                .chars()
                .filter(|c| !"{}()".contains(*c))
                .collect();
            let first = t
                .split(|c: char| is_js_whitespace(c) || ";&|".contains(c))
                .next()
                .unwrap_or("");
            last_component(first)
        }
        "gemini-0.1.15" => gemini_split_commands(text).iter().any(|c| {
            let root = if let Some(q) = ['"', '\''].into_iter().find(|q| c.starts_with(*q)) {
                match c[1..].find(q) {
                    Some(n) if n > 0 => Some(&c[1..1 + n]),
                    _ => None,
                }
            } else {
                None
            };
            let root = root.unwrap_or_else(|| c.split(is_js_whitespace).next().unwrap_or(""));
            !root.is_empty() && last_component(root)
        }),
        _ => true,
    }
}

/// Gemini CLI 0.1.15–0.10's `splitCommands`: the text cut at `;`, `&`, `|`, `&&` and `||` outside
/// quotes (a backslash keeps the next character), each command trimmed, empty ones dropped.
fn gemini_split_commands(text: &str) -> Vec<String> {
    let cs: Vec<char> = text.chars().collect();
    let (mut out, mut cur) = (Vec::new(), String::new());
    let (mut single, mut double) = (false, false);
    let mut push = |cur: &mut String| {
        let t = cur.trim_matches(is_js_whitespace).to_string();
        if !t.is_empty() {
            out.push(t);
        }
        cur.clear();
    };
    let mut i = 0;
    while i < cs.len() {
        let (c, next) = (cs[i], cs.get(i + 1).copied());
        if c == '\\' && next.is_some() {
            cur.push(c);
            cur.extend(next);
            i += 2;
            continue;
        }
        if c == '\'' && !double {
            single = !single;
        } else if c == '"' && !single {
            double = !double;
        }
        if !single && !double && (c == ';' || c == '&' || c == '|') {
            if (c == '&' || c == '|') && next == Some(c) {
                i += 1;
            }
            push(&mut cur);
        } else {
            cur.push(c);
        }
        i += 1;
    }
    push(&mut cur);
    out
}

/// Gemini CLI 0.1.15–0.10's `detectCommandSubstitution`: the offset where it finds command
/// substitution. A backslash outside single quotes skips the next character; quotes do not
/// toggle inside backticks; a backtick outside single quotes toggles the backtick state and
/// counts only where it closes one (an unclosed backtick is not found); `$(` counts anywhere
/// outside single quotes, `<(` (and, from 0.8, `>(`) outside double quotes and backticks.
pub fn gemini_0_1_15_substitution(text: &str, process_out: bool) -> Option<usize> {
    let b = text.as_bytes();
    let (mut single, mut double, mut backticks) = (false, false, false);
    let mut i = 0;
    while i < b.len() {
        let (c, next) = (b[i], b.get(i + 1).copied());
        if c == b'\\' && !single {
            i += 2;
            continue;
        }
        if c == b'\'' && !double && !backticks {
            single = !single;
        } else if c == b'"' && !single && !backticks {
            double = !double;
        } else if c == b'`' && !single {
            backticks = !backticks;
        }
        if !single {
            let unquoted = !double && !backticks;
            if (c == b'$' && next == Some(b'('))
                || (c == b'<' && next == Some(b'(') && unquoted)
                || (process_out && c == b'>' && next == Some(b'(') && unquoted)
                || (c == b'`' && !backticks)
            {
                return Some(i);
            }
        }
        i += 1;
    }
    None
}

/// The text the harness hands on after its rewrites, plus what each step did.
#[derive(Debug, Clone)]
pub struct Rewritten {
    /// The resulting text.
    pub text: String,
    /// Steps that changed something, with a note each.
    pub changes: Vec<String>,
}

/// Applies one named rewrite step.
pub fn rewrite_step(step: &str, text: &str) -> (String, Option<String>) {
    if let Some(g) = crate::gemini_strip::generation(step) {
        return match crate::gemini_strip::strip(g, text) {
            Some(t) => (t, Some(crate::gemini_strip::note(g).into())),
            None => (text.to_string(), None),
        };
    }
    match step {
        "gemini-trim" => {
            let mut t = text.trim_matches(is_js_whitespace).to_string();
            let trimmed = t != text;
            if t.ends_with('\\') {
                t.push(' ');
                return (
                    t,
                    Some("trim() and a space appended after a trailing backslash".into()),
                );
            }
            (
                t,
                trimmed.then(|| "trim() removed leading/trailing white space".into()),
            )
        }
        // Gemini CLI up to 0.39 (`tools/shell.js`, read in 0.8.2, 0.11.3, 0.17.1): `let command =
        // strippedCommand.trim(); if (!command.endsWith('&')) command += ';'` before
        // `{ ${command} }; __code=$?; …`. A background command gets no `;`, and a trailing
        // backslash escapes the `;` (no space is put between them).
        "gemini-trim-semicolon" => {
            let mut t = text.trim_matches(is_js_whitespace).to_string();
            if !t.ends_with('&') {
                t.push(';');
            }
            let note = if t.ends_with("\\;") {
                "trim() and a `;` appended: after the trailing backslash it is an escaped `;`, part of the last word"
            } else if t.ends_with(';') {
                "trim() and a `;` appended (the harness's own terminator)"
            } else {
                "trim(); no `;` after a trailing `&`"
            };
            (t, Some(note.into()))
        }
        "openhands-escape-bash-special-chars" => {
            let t = openhands_escape_bash_special_chars(text);
            let note = (t != text).then(|| {
                "escape_bash_special_chars doubled the backslash of \\; \\& \\| \\< or \\> outside quotes"
                    .into()
            });
            (t, note)
        }
        // Claude Code's tool-input normalisation (1.0.x to 2.1.x, `command.replace(/\\\\;/g,
        // "\\;")` after dropping a leading `cd <cwd> && `): every `\\;` becomes `\;`, in quotes
        // or not (it undoes a model's double escaping of `find -exec … \;`).
        "claude-code-unescape-semicolon" => {
            let t = text.replace("\\\\;", "\\;");
            let note = (t != text).then(|| {
                "the harness's input normalisation replaced each \\\\; with \\; (quoted or not)".into()
            });
            (t, note)
        }
        // argv-only step; see `space_join`.
        "space-join" => (text.to_string(), None),
        other => panic!("unknown rewrite step {other}"),
    }
}

/// JavaScript `String.prototype.trim` white space.
pub fn is_js_whitespace(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

/// Gemini CLI `stripShellWrapper` as 0.51.0 on run it (0.61.0 bundle, `shell-utils`): the
/// case-insensitive
/// `^\s*(?:(?:(?:\S+\/)?(?:sh|bash|zsh))\s+-c|cmd\.exe\s+\/c|powershell(?:\.exe)?\s+(?:-NoProfile\s+)?-Command|pwsh(?:\.exe)?\s+(?:-NoProfile\s+)?-Command)\s+`
/// removed and the rest trimmed; a rest fully enclosed in `"…"` after a literal `-c` is re-parsed
/// with shell-quote `parse(rest, key => '$' + key)` and replaced by its single token; otherwise
/// outer quote characters (`"…"` or `'…'`) are sliced off. (Observed with gemini-cli 0.61.0:
/// `BASH -c`, `powershell -Command` and `cmd.exe /c` are stripped too, and the rest runs in bash.)
/// Earlier generations: [`crate::gemini_strip`].
pub fn gemini_strip_shell_wrapper(text: &str) -> Option<String> {
    crate::gemini_strip::strip(crate::gemini_strip::Generation::V0_51_0, text)
}

/// tumf/mcp-shell-server: `" ".join(argv)`.
pub fn space_join(argv: &[String]) -> String {
    argv.join(" ")
}

/// What a payload rendering produced.
#[derive(Debug, Clone)]
pub struct Payload {
    /// The words placed in the wrapper's slot.
    pub words: String,
    /// The text a faithful delivery would hand to eval (the rewritten command plus contract-
    /// neutral additions such as `< /dev/null`).
    pub designed: String,
    /// Rewrites done inside the rendering (`>nul`, pipe re-tokenisation), as notes.
    pub changes: Vec<String>,
    /// The command text after the rendering's own rewrites (before quoting).
    pub rewritten: String,
}

/// Renders a command into a wrapper slot.
pub fn payload(kind: &str, text: &str, stdin_suffix: Option<&str>) -> Payload {
    match kind {
        "raw" => Payload {
            words: text.to_string(),
            designed: text.to_string(),
            changes: vec![],
            rewritten: text.to_string(),
        },
        "single-quote" => Payload {
            words: single_quote(text),
            designed: text.to_string(),
            changes: vec![],
            rewritten: text.to_string(),
        },
        kind if claude_code_release(kind).is_some() => {
            use iec_shellquote::claude_code_2_1_72::{build_eval_payload_for, PayloadPath, StdinRedirect};
            let release = claude_code_release(kind).expect("a Claude Code release");
            let p = build_eval_payload_for(&release, text, false);
            let mut changes = vec![];
            if p.null_redirect_rewritten {
                changes.push(">nul rewritten to >/dev/null (not quote-aware)".to_string());
            }
            // What the harness means eval to run: its rewritten command, plus the stdin redirect
            // that its `\<` word appends (the tool contract gives the command an empty stdin).
            let suffix = match p.stdin_redirect {
                StdinRedirect::AppendedToEval => stdin_suffix.unwrap_or(""),
                _ => "",
            };
            let mut designed = format!("{}{}", p.rewritten_command, suffix);
            if p.path == PayloadPath::PipeRearranged {
                changes.push("piped command re-tokenised by shell-quote parse() and re-quoted per token, `< /dev/null` before the first |".into());
                // What the harness means eval to run is the rebuilt text itself.
                if let Some(rebuilt) = &p.rebuilt_command {
                    designed = rebuilt.clone();
                }
            }
            Payload {
                words: p.payload.clone(),
                designed,
                changes,
                rewritten: p.rewritten_command.clone(),
            }
        }
        other => panic!("unknown payload rendering {other}"),
    }
}

/// `'…'` with each `'` written as `'"'"'` (Claude Code 2.1.332, Windows 2.1.2xx).
pub fn single_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\"'\"'"))
}

/// Inverts [`single_quote`] when `s` is exactly such a rendering.
pub fn unsingle_quote(s: &str) -> Option<String> {
    let inner = s.strip_prefix('\'')?.strip_suffix('\'')?;
    let text = inner.replace("'\"'\"'", "'");
    (single_quote(&text) == s).then_some(text)
}

/// Fills a wrapper template.
pub fn fill(template: &str, payload: &str) -> String {
    template
        .replace("{{snapshot}}", SNAPSHOT_PATH)
        .replace("{{tmp}}", TMP_DIR)
        .replace("{{payload}}", payload)
}

/// The argv the harness starts, given the wrapper text (or the call's own argv).
pub fn spawn_argv(launch: &Launch, wrapper: &str, call_argv: Option<&[String]>) -> Vec<String> {
    let mut out = Vec::new();
    for a in &launch.spawn.argv {
        if a == "{{argv}}" {
            out.extend(call_argv.unwrap_or_default().iter().cloned());
        } else {
            out.push(a.replace("{{wrapper}}", wrapper));
        }
    }
    out
}

/// OpenHands V1 `escape_bash_special_chars` (openhands-tools `terminal/utils/command.py`):
/// `\\([;&|<>])` becomes `\\\\\1` everywhere except in regions bash takes verbatim (quoted
/// strings, `$(…)`, `${…}`, `$name`, heredoc bodies, comments); an empty or blank text becomes
/// empty. The original walks a tree-sitter-bash tree and returns the text unchanged when the
/// tree has an error; this port scans those regions by hand (see the tests) and the caller only
/// hands it texts bash parses.
pub fn openhands_escape_bash_special_chars(text: &str) -> String {
    if text.trim().is_empty() {
        return String::new();
    }
    let b = text.as_bytes();
    // Pass 1: the preserved regions, lexed the way bash reads them.
    let mut keep: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    let mut heredocs: Vec<(Vec<u8>, bool)> = Vec::new();
    let mut word_start = true;
    while i < b.len() {
        let c = b[i];
        let start = i;
        let mut kept = true;
        match c {
            b'\\' => {
                i += 2;
                kept = false;
            }
            b'\'' => i = skip_single(b, i + 1),
            b'"' => i = skip_double(b, i + 1),
            b'$' if i + 1 < b.len() && b[i + 1] == b'\'' => i = skip_ansi_c(b, i + 2),
            b'$' if i + 1 < b.len() && b[i + 1] == b'"' => i = skip_double(b, i + 2),
            b'$' if i + 1 < b.len() && (b[i + 1] == b'(' || b[i + 1] == b'{') => i = skip_balanced(b, i + 1),
            b'$' if i + 1 < b.len()
                && (b[i + 1].is_ascii_alphanumeric() || b"_@*#?$!-".contains(&b[i + 1])) =>
            {
                i += 2;
                if b[i - 1].is_ascii_alphabetic() || b[i - 1] == b'_' {
                    while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                        i += 1;
                    }
                }
            }
            b'`' => {
                i += 1;
                while i < b.len() && b[i] != b'`' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'#' if word_start => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'<' if b[i..].starts_with(b"<<") && !b[i..].starts_with(b"<<<") => {
                let mut j = i + 2;
                let strip = j < b.len() && b[j] == b'-';
                if strip {
                    j += 1;
                }
                while j < b.len() && (b[j] == b' ' || b[j] == b'\t') {
                    j += 1;
                }
                let ds = j;
                while j < b.len() && !b" \t\n;&|<>()".contains(&b[j]) {
                    j += 1;
                }
                let delim: Vec<u8> = b[ds..j]
                    .iter()
                    .copied()
                    .filter(|&x| x != b'\'' && x != b'"' && x != b'\\')
                    .collect();
                if !delim.is_empty() {
                    heredocs.push((delim, strip));
                }
                i = j;
                kept = false;
            }
            b'\n' if !heredocs.is_empty() => {
                // The bodies follow the line, each up to and including its delimiter line.
                i += 1;
                for (delim, strip) in std::mem::take(&mut heredocs) {
                    while i < b.len() {
                        let end = b[i..].iter().position(|&x| x == b'\n').map_or(b.len(), |p| i + p);
                        let mut line = &b[i..end];
                        if strip {
                            let k = line.iter().position(|&x| x != b'\t').unwrap_or(line.len());
                            line = &line[k..];
                        }
                        i = (end + 1).min(b.len());
                        if line == delim.as_slice() {
                            break;
                        }
                    }
                }
            }
            _ => {
                i += 1;
                kept = false;
            }
        }
        i = i.min(b.len());
        if kept {
            keep.push((start, i));
        }
        word_start = i - start == 1 && b" \t\n;&|()<>".contains(&c);
    }
    // Pass 2: the original's regular expression over everything else.
    let mut out = Vec::with_capacity(b.len() + 8);
    let mut cursor = 0;
    let sub = |seg: &[u8], out: &mut Vec<u8>| {
        let mut k = 0;
        while k < seg.len() {
            if seg[k] == b'\\' && k + 1 < seg.len() && b";&|<>".contains(&seg[k + 1]) {
                out.extend_from_slice(&[b'\\', b'\\', seg[k + 1]]);
                k += 2;
            } else {
                out.push(seg[k]);
                k += 1;
            }
        }
    };
    for (s, e) in keep {
        sub(&b[cursor..s], &mut out);
        out.extend_from_slice(&b[s..e]);
        cursor = e;
    }
    sub(&b[cursor..], &mut out);
    String::from_utf8(out).unwrap_or_else(|_| text.to_string())
}

fn skip_single(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'\'' {
        i += 1;
    }
    (i + 1).min(b.len())
}

fn skip_ansi_c(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'\'' {
        i += if b[i] == b'\\' { 2 } else { 1 };
    }
    (i + 1).min(b.len())
}

fn skip_double(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i] != b'"' {
        if b[i] == b'\\' {
            i += 2;
        } else if b[i] == b'$' && i + 1 < b.len() && (b[i + 1] == b'(' || b[i + 1] == b'{') {
            i = skip_balanced(b, i + 1);
        } else if b[i] == b'`' {
            i += 1;
            while i < b.len() && b[i] != b'`' {
                i += if b[i] == b'\\' { 2 } else { 1 };
            }
            i += 1;
        } else {
            i += 1;
        }
    }
    (i + 1).min(b.len())
}

/// From an opening `(` or `{` to just after its match, skipping quotes inside.
fn skip_balanced(b: &[u8], mut i: usize) -> usize {
    let (open, close) = if b[i] == b'(' { (b'(', b')') } else { (b'{', b'}') };
    let mut depth = 0usize;
    while i < b.len() {
        let c = b[i];
        if c == b'\\' {
            i += 2;
            continue;
        }
        if c == b'\'' && open == b'(' {
            i = skip_single(b, i + 1);
            continue;
        }
        if c == b'"' {
            i = skip_double(b, i + 1);
            continue;
        }
        if c == open {
            depth += 1;
        } else if c == close {
            depth -= 1;
            if depth == 0 {
                return i + 1;
            }
        }
        i += 1;
    }
    b.len()
}

/// A wrapper with the machine-specific files it names (shell snapshots, the cwd and
/// background-pid state files, home-directory paths) replaced by `/dev/null`, so that it runs
/// on this machine.
pub fn runnable(wrapper: &str) -> String {
    let mut w = wrapper
        .replace(SNAPSHOT_PATH, "/dev/null")
        .replace("/tmp/claude-0a1b-cwd", "/dev/null")
        .replace("/tmp/gemini-shell-0a1b/bgpids.tmp", "/dev/null");
    for home in ["/home/user/", "/c/Users/user/"] {
        while let Some(i) = w.find(home) {
            let end = w[i..].find(['\'', '"', ' ', '\n']).map_or(w.len(), |e| i + e);
            w.replace_range(i..end, "/dev/null");
        }
    }
    w
}

/// The process argv the launch starts for a delivered tool input, when that process is a POSIX
/// shell (bash or dash), with [`runnable`] files; `None` for cmd, PowerShell and
/// terminal-typing launches and for argv calls executed without a shell. Input validation is
/// not applied (see [`validate`]). Git Bash launches get `bash` in place of `bash.exe`: only
/// right for a call whose check has shown that the MSYS2 runtime hands bash.exe this text.
pub fn process_argv(l: &Launch, input: &serde_json::Value) -> Option<Vec<String>> {
    let msys2 = l.windows.as_ref().is_some_and(|w| w.receiver == "msys2");
    if (l.windows.is_some() && !msys2) || l.terminal.is_some() {
        return None;
    }
    let mut argv = match l.input {
        crate::InputShape::String => {
            let mut text = l.command_of(input)?.as_str()?.to_string();
            for step in l.rewrite.iter().flat_map(|r| &r.steps) {
                text = rewrite_step(step, &text).0;
            }
            let wrapper = match &l.wrapper {
                Some(w) => {
                    let p = payload(&w.payload, &text, w.stdin_suffix.as_deref());
                    runnable(&fill(&w.template, &p.words))
                }
                None => text,
            };
            spawn_argv(l, &wrapper, None)
        }
        crate::InputShape::Argv => {
            let call: Vec<String> = l
                .command_of(input)?
                .as_array()?
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<_>>()?;
            if l.rewrite.iter().flat_map(|r| &r.steps).any(|s| s == "space-join") {
                spawn_argv(l, &space_join(&call), None)
            } else {
                spawn_argv(l, "", Some(&call))
            }
        }
    };
    if msys2 && argv.first()?.ends_with("bash.exe") {
        argv[0] = "bash".into();
    }
    let shell = argv.first()?.rsplit('/').next()?;
    matches!(shell, "bash" | "sh" | "dash").then_some(argv)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What real Gemini CLI 0.8.2 ran (`{ … }; __code=$?; …`, read by the BASH_ENV witness,
    /// 2026-12-07): `argvprobe P1 a` as `{ argvprobe P1 a; }`, `argvprobe B1 a &` as
    /// `{ argvprobe B1 a & }` (the launch's template was `{ {{payload}}; }`, which made every
    /// background command a false "diverges, loud").
    #[test]
    fn gemini_trim_semicolon_leaves_a_background_command_alone() {
        let r = |t: &str| rewrite_step("gemini-trim-semicolon", t).0;
        assert_eq!(r("argvprobe P1 a"), "argvprobe P1 a;");
        assert_eq!(r("  argvprobe B1 a &\n"), "argvprobe B1 a &");
        assert_eq!(r("echo a \\"), "echo a \\;");
        assert_eq!(r("a && b"), "a && b;");
    }

    #[test]
    fn openhands_escape() {
        let e = openhands_escape_bash_special_chars;
        assert_eq!(e("find . -exec rm {} \\;"), "find . -exec rm {} \\\\;");
        assert_eq!(
            e("echo 'a\\;b' \"c\\;d\" $(x \\;) e\\|f"),
            "echo 'a\\;b' \"c\\;d\" $(x \\;) e\\\\|f"
        );
        assert_eq!(
            e("cat <<EOF\na\\;b\nEOF\necho \\>"),
            "cat <<EOF\na\\;b\nEOF\necho \\\\>"
        );
        assert_eq!(e("echo x # a\\;b"), "echo x # a\\;b");
        assert_eq!(e("echo a#b\\;"), "echo a#b\\\\;");
        // As the regular expression: the second backslash of `\\;` pairs with the `;`.
        assert_eq!(e("echo \\\\;"), "echo \\\\\\;");
        assert_eq!(e("  "), "");
    }

    #[test]
    fn gemini_strip() {
        assert_eq!(
            gemini_strip_shell_wrapper("bash -c 'ls -la'").as_deref(),
            Some("ls -la")
        );
        assert_eq!(gemini_strip_shell_wrapper("ls -la"), None);
        assert_eq!(
            gemini_strip_shell_wrapper("bash -c 'a' && b 'c'").as_deref(),
            Some("a' && b 'c")
        );
        assert_eq!(
            gemini_strip_shell_wrapper("/bin/sh -c \"echo ${HOME}x\"").as_deref(),
            Some("echo $HOMEx")
        );
        // As the case-insensitive regular expression (observed with gemini-cli 0.61.0).
        let s = |t: &str| gemini_strip_shell_wrapper(t);
        assert_eq!(s("BASH -c 'x y'").as_deref(), Some("x y"));
        assert_eq!(s("bash\t-c\t'x'").as_deref(), Some("x"));
        assert_eq!(s("powershell -Command 'x'").as_deref(), Some("x"));
        assert_eq!(s("pwsh.exe -NoProfile -Command x").as_deref(), Some("x"));
        assert_eq!(s("cmd.exe /c x y").as_deref(), Some("x y"));
        // `-C` matches the regular expression but is not a POSIX `-c`: quotes are sliced.
        assert_eq!(s("bash -C \"a \\\"b\\\"\"").as_deref(), Some("a \\\"b\\\""));
        // `\S+\/` needs a character before the slash; a program word must be followed by space.
        assert_eq!(s("/bash -c x"), None);
        assert_eq!(s("xbash -c x"), None);
        assert_eq!(s("bash -cx y"), None);
        assert_eq!(s("bash -c"), None);
    }

    #[test]
    fn command_substitution() {
        assert_eq!(command_substitution_outside_single_quotes("echo '$(x)'"), None);
        assert_eq!(
            command_substitution_outside_single_quotes("echo \"$(x)\""),
            Some(6)
        );
        assert_eq!(command_substitution_outside_single_quotes("echo `x`"), Some(5));
        assert_eq!(command_substitution_outside_single_quotes("diff <(a) b"), Some(5));
        assert_eq!(command_substitution_outside_single_quotes("echo \\$(x)"), None);
    }

    #[test]
    fn gemini_0_1_15_finds_a_backtick_where_it_closes_and_no_process_output() {
        let d = |t: &str| gemini_0_1_15_substitution(t, false);
        // Red team, against Gemini CLI 0.1.19: these ran.
        assert_eq!(d("argvprobe a >(cat)"), None);
        assert_eq!(d("argvprobe a # use `x\nargvprobe b"), None);
        assert_eq!(d("argvprobe 'it'\\''s' # `\nargvprobe b"), None);
        assert_eq!(d("argvprobe $'a\\'`'"), None);
        // Found: the closing backtick's offset, `$(` anywhere outside single quotes.
        assert_eq!(d("echo `x`"), Some(7));
        assert_eq!(d("echo \"$(x)\""), Some(6));
        assert_eq!(d("echo `'$(x)'`"), Some(7));
        assert_eq!(d("echo '$(x)'"), None);
        assert_eq!(d("diff <(a) b"), Some(5));
        assert_eq!(d("echo \"<(a)\""), None);
        // 0.8–0.10 add `>(`.
        assert_eq!(gemini_0_1_15_substitution("argvprobe a >(cat)", true), Some(12));
        assert_eq!(gemini_0_1_15_substitution("echo \">(a)\"", true), None);
    }

    #[test]
    fn gemini_command_roots() {
        let old = |t: &str| gemini_has_command_root(t, "gemini-0.1.1");
        let new = |t: &str| gemini_has_command_root(t, "gemini-0.1.15");
        // Red team, real runs: refused by 0.1.1–0.1.13.
        for t in [
            "{ argvprobe a; }",
            "( argvprobe a )",
            "( cd /tmp && argvprobe a )",
            "(( 1 )) && argvprobe a",
            "x=/tmp/; argvprobe a",
            "{\nargvprobe a\n}",
            "arg\\\nvprobe a",
            "X=/ argvprobe a",
            "\\\nargvprobe a",
        ] {
            assert!(!old(t), "{t:?}");
        }
        assert!(old("argvprobe a") && old("  /usr/bin/env x") && old("a;b"));
        // 0.1.15 on: every command's root must be missing.
        for t in [
            "X=/ argvprobe a",
            "X=/ argvprobe a; Y=/ argvprobe b",
            "\"a/\" argvprobe b",
            "\\\nargvprobe a",
        ] {
            assert!(!new(t), "{t:?}");
        }
        for t in [
            "{ argvprobe a; }",
            "( argvprobe a )",
            "X=/ argvprobe a 2>&1",
            "X=/ a; b",
            "'a b' c",
            "\"\" x",
        ] {
            assert!(new(t), "{t:?}");
        }
        assert_eq!(
            gemini_split_commands("a && b || c; d | e & 'f;g' \"h|i\" j\\;k"),
            vec!["a", "b", "c", "d", "e", "'f;g' \"h|i\" j\\;k"]
        );
    }

    #[test]
    fn control_chars() {
        let v = Validate {
            reject_control_chars: Some("no".into()),
            ..Default::default()
        };
        assert_eq!(validate(&v, "a\r\nb").map(|r| r.offset), Some(1));
        assert!(validate(&v, "a\tb\nc").is_none());
        // C1 controls (2 bytes in UTF-8) too; the offset is the character's first byte.
        assert_eq!(validate(&v, "é\u{85}").map(|r| r.offset), Some(2));
        assert_eq!(validate(&v, "x\u{9f}").map(|r| r.offset), Some(1));
        assert!(validate(&v, "\u{a0}\u{100}\u{2028}").is_none());
    }

    #[test]
    fn substrings_are_refused_even_in_single_quotes() {
        // Gemini CLI 0.1.9: `command.includes('$(') || command.includes('`')`.
        let v = Validate {
            reject_substrings: Some(crate::RejectSubstrings {
                substrings: vec!["$(".into(), "`".into()],
                message: "Command rejected: {{command}}\nReason: Command is not allowed: {{command}}".into(),
            }),
            ..Default::default()
        };
        let r = validate(&v, "echo '`x` $(y)'").expect("refused");
        assert_eq!((r.rule, r.offset), ("substring", 6));
        assert_eq!(
            r.message,
            "Command rejected: echo '`x` $(y)'\nReason: Command is not allowed: echo '`x` $(y)'"
        );
        assert_eq!(validate(&v, "echo \\$(y)").map(|r| r.offset), Some(6));
        assert!(validate(&v, "echo $((1)) x").is_some());
        assert!(validate(&v, "echo $ ( x ) <(y)").is_none());
    }

    #[test]
    fn a_parse_gate_that_may_time_out_makes_a_possible_refusal() {
        let v = Validate {
            refuse_tree_sitter_error: Some("could not be parsed safely".into()),
            ..Default::default()
        };
        let long = "echo a; ".repeat(crate::tree_sitter_gate::TIMEOUT_RISK_BYTES / 8 + 1);
        assert!(validate(&v, &long).is_none());
        assert_eq!(
            may_refuse(&v, &long).map(|r| (r.rule, r.message)),
            Some((
                "tree-sitter-timeout-risk",
                "could not be parsed safely".to_string()
            ))
        );
        assert!(validate(&v, "echo a").is_none() && may_refuse(&v, "echo a").is_none());
        assert_eq!(validate(&v, "echo (").map(|r| r.rule), Some("tree-sitter-error"));
        // Without the gate, a long text is no possible refusal.
        assert!(may_refuse(&Validate::default(), &long).is_none());
    }

    #[test]
    fn unparsed_line_refusals() {
        let v = Validate {
            refuse_unparsed_line: Some("ask".into()),
            ..Default::default()
        };
        let r = validate(&v, "argvprobe '$$(~$'").expect("certain");
        assert_eq!(
            (r.rule, r.offset, r.message.as_str()),
            ("dollar-operand", 11, "ask")
        );
        assert!(may_refuse(&v, "argvprobe '$$(~$'").is_none());
        assert!(validate(&v, "x=1 if").is_none());
        assert_eq!(
            may_refuse(&v, "x=1 if").map(|r| r.rule),
            Some("keyword-after-prefix")
        );
        assert!(validate(&v, "argvprobe '$(x'").is_none());
        assert!(may_refuse(&v, "argvprobe '$(x'").is_none());
        // Without the launch's rule, nothing.
        assert!(validate(&Validate::default(), "argvprobe '$$('").is_none());
        assert!(may_refuse(&Validate::default(), "x=1 if").is_none());
    }
}
