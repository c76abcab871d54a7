//! Gemini CLI's `stripShellWrapper` (`shell-utils`), in each of its generations. Every Gemini
//! CLI from 0.1.15 on removes a model-written `bash -c '…'` before it runs the rest inside its
//! own wrapper (`tools/shell.js` runs `stripShellWrapper(params.command)`), and checks that rest
//! for command substitution. The function changed five times; each generation is a rewrite step
//! of its own, named after the first release that ships it, so a launch learned on a version
//! names the strip that version runs. Read in the published packages (`@google/gemini-cli-core`
//! `dist/src/utils/shell-utils.js` up to 0.35, the `@google/gemini-cli` bundle from 0.36):
//!
//! | step | versions | pattern and unquoting |
//! |---|---|---|
//! | `gemini-strip-shell-wrapper-0.1.15` | 0.1.15–0.10.0 | `/^\s*(?:sh\|bash\|zsh\|cmd.exe)\s+(?:\/c\|-c)\s+/` (case-sensitive; `.` any character but a line end; `bash /c` too), outer quotes sliced off |
//! | `gemini-strip-shell-wrapper-0.11.3` | 0.11.3–0.35.3 | case-insensitive, `cmd\.exe\s+\/c` and PowerShell's `-Command` added, outer quotes sliced off |
//! | `gemini-strip-shell-wrapper-0.36.0` | 0.36.0–0.43.0, 0.45.0-nightly–0.47.0 | a path before the shell (`(?:\S+\/)?`), outer quotes sliced off |
//! | `gemini-strip-shell-wrapper-0.44.0` | 0.44.0 | as 0.36.0, then a leading `trap '' HUP; ` removed (`stripHupGuard`), wrapper or not |
//! | `gemini-strip-shell-wrapper` | 0.51.0 on | a rest in `"…"` after a POSIX `-c` re-parsed by shell-quote |
//!
//! JavaScript's `\s` and `String.prototype.trim` share one set of white space
//! ([`crate::render::is_js_whitespace`]); `/i` without the `u` flag folds ASCII letters only.

use crate::render::is_js_whitespace as ws;

/// A generation of `stripShellWrapper`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Generation {
    /// 0.1.15–0.10.0.
    V0_1_15,
    /// 0.11.3–0.35.3.
    V0_11_3,
    /// 0.36.0–0.43.0 and 0.45.0-nightly–0.47.0.
    V0_36_0,
    /// 0.44.0.
    V0_44_0,
    /// 0.51.0 on (observed with 0.61.0).
    V0_51_0,
}

/// Rewrite step names, one per generation.
pub const STEPS: &[(&str, Generation)] = &[
    ("gemini-strip-shell-wrapper-0.1.15", Generation::V0_1_15),
    ("gemini-strip-shell-wrapper-0.11.3", Generation::V0_11_3),
    ("gemini-strip-shell-wrapper-0.36.0", Generation::V0_36_0),
    ("gemini-strip-shell-wrapper-0.44.0", Generation::V0_44_0),
    ("gemini-strip-shell-wrapper", Generation::V0_51_0),
];

/// Which published versions ship which generation, as read in the packages (first and last
/// version of each stretch, inclusive; the last stretch is open). `crates/iec-launches/tests/
/// gemini_strip_ranges.rs` holds every learned Gemini CLI launch to it.
pub const SHIPPED: &[(Generation, &str, Option<&str>)] = &[
    (Generation::V0_1_15, "0.1.15", Some("0.10.0")),
    (Generation::V0_11_3, "0.11.3", Some("0.35.3")),
    (Generation::V0_36_0, "0.36.0", Some("0.43.0")),
    (Generation::V0_44_0, "0.44.0", Some("0.44.1")),
    (
        Generation::V0_36_0,
        "0.45.0-nightly.20260529.gc82e2b597",
        Some("0.47.0"),
    ),
    (Generation::V0_51_0, "0.50.0", None),
];

/// The generation a rewrite step names, if it is a strip.
pub fn generation(step: &str) -> Option<Generation> {
    STEPS.iter().find(|(s, _)| *s == step).map(|(_, g)| *g)
}

/// The note a change by generation `g` carries.
pub fn note(g: Generation) -> &'static str {
    match g {
        Generation::V0_44_0 => {
            "stripShellWrapper removed a model-written shell -c wrapper or a leading `trap '' HUP; `"
        }
        _ => "stripShellWrapper removed a model-written shell -c wrapper",
    }
}

/// Gemini CLI 0.44.0's `BASH_HUP_GUARD`.
const HUP_GUARD: &str = "trap '' HUP;";

/// What generation `g` hands on for `text`: `None` where it leaves the text as it was (but for
/// the `trim()` every generation ends with, which the `gemini-trim` steps model).
pub fn strip(g: Generation, text: &str) -> Option<String> {
    let out = strip_wrapper(g, text);
    if g != Generation::V0_44_0 {
        return out;
    }
    // `stripHupGuard(result)`, where `result` is the stripped rest or `command.trim()`.
    let result = out.clone().unwrap_or_else(|| text.trim_matches(ws).to_string());
    let t = result.trim_start_matches(ws);
    if let Some(rest) = t.strip_prefix(HUP_GUARD).and_then(|r| r.strip_prefix(' ')) {
        return Some(rest.to_string());
    }
    if t == HUP_GUARD {
        return Some(String::new());
    }
    out
}

/// What 0.44.0 hands on for a text that holds no shell wrapper but starts with its guard
/// `trap '' HUP;` (alone or followed by a space): the rest. `None` otherwise.
pub fn hup_guard_rest(text: &str) -> Option<String> {
    match strip_wrapper(Generation::V0_44_0, text) {
        Some(_) => None,
        None => strip(Generation::V0_44_0, text),
    }
}

/// Whether a wrapper template starts by ignoring SIGHUP as 0.44.0's does (`trap '' HUP;`).
pub fn wrapper_ignores_hup(template: &str) -> bool {
    template.trim_start().starts_with(HUP_GUARD)
}

/// `\s+` at the start of `t`: its length, `None` without one white-space character.
fn spaces(t: &str) -> Option<usize> {
    let n = t.len() - t.trim_start_matches(ws).len();
    (n > 0).then_some(n)
}

/// Whether `t` starts with `word` in ASCII case-insensitively (JavaScript's `/i` without `u`).
fn starts_ci(t: &str, word: &str) -> bool {
    t.get(..word.len()).is_some_and(|p| p.eq_ignore_ascii_case(word))
}

/// The program word a pattern knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Program {
    /// `sh`, `bash`, `zsh` (with a path from 0.36.0); in 0.1.15 also `cmd.exe`.
    Shell,
    /// `cmd.exe` (0.11.3 on).
    Cmd,
    /// `powershell`, `pwsh` (0.11.3 on).
    PowerShell,
}

/// The regular expression's match: the rest after it (trimmed), and whether the flag was a
/// POSIX `-c` as written.
fn wrapper_rest(g: Generation, text: &str) -> Option<(&str, bool)> {
    let t = text.trim_start_matches(ws);
    let (program, after) = match g {
        Generation::V0_1_15 => (Program::Shell, program_0_1_15(t)?),
        _ => program(g, t)?,
    };
    let after = &after[spaces(after)?..];
    let flag_len = match (g, program) {
        (Generation::V0_1_15, _) => (after.starts_with("-c") || after.starts_with("/c")).then_some(2),
        (_, Program::Shell) => starts_ci(after, "-c").then_some(2),
        (_, Program::Cmd) => starts_ci(after, "/c").then_some(2),
        (_, Program::PowerShell) => {
            let skipped = match starts_ci(after, "-noprofile") {
                true => spaces(&after[10..]).map_or(0, |n| 10 + n),
                false => 0,
            };
            starts_ci(&after[skipped..], "-command").then_some(skipped + 8)
        }
    }?;
    let rest = &after[flag_len..];
    spaces(rest)?;
    let posix = program == Program::Shell && after.starts_with("-c");
    Some((rest.trim_matches(ws), posix))
}

/// 0.1.15's `(?:sh|bash|zsh|cmd.exe)\s+`: what follows the program word (white space first).
fn program_0_1_15(t: &str) -> Option<&str> {
    let end = t.find(ws)?;
    if matches!(&t[..end], "sh" | "bash" | "zsh") {
        return Some(&t[end..]);
    }
    // `cmd.exe` with an unescaped `.`: any character but a line terminator.
    let rest = t.strip_prefix("cmd")?;
    let c = rest.chars().next()?;
    if matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}') {
        return None;
    }
    rest[c.len_utf8()..].strip_prefix("exe")
}

/// 0.11.3 on: the program word (a shell, `cmd.exe` or PowerShell) and what follows it.
fn program(g: Generation, t: &str) -> Option<(Program, &str)> {
    let end = t.find(ws)?;
    let first = t[..end].to_ascii_lowercase();
    let path_shell = || {
        g != Generation::V0_11_3
            && ["/sh", "/bash", "/zsh"]
                .iter()
                .any(|n| first.ends_with(n) && first.len() > n.len())
    };
    let program = match first.as_str() {
        "sh" | "bash" | "zsh" => Program::Shell,
        "cmd.exe" => Program::Cmd,
        "powershell" | "powershell.exe" | "pwsh" | "pwsh.exe" => Program::PowerShell,
        _ if path_shell() => Program::Shell,
        _ => return None,
    };
    Some((program, &t[end..]))
}

/// The strip itself, before 0.44.0's guard removal.
fn strip_wrapper(g: Generation, text: &str) -> Option<String> {
    let (rest, posix) = wrapper_rest(g, text)?;
    let quoted = |q: char| rest.chars().count() >= 2 && rest.starts_with(q) && rest.ends_with(q);
    if g == Generation::V0_51_0 && quoted('"') && posix {
        let env = |k: &str| Some(iec_shellquote::EnvValue::Str(format!("${k}")));
        if let Ok(tokens) = iec_shellquote::parse(rest, &env) {
            if let [iec_shellquote::Token::Str(s)] = tokens.as_slice() {
                return Some(s.clone());
            }
        }
    }
    if quoted('"') || quoted('\'') {
        return Some(rest[1..rest.len() - 1].to_string());
    }
    Some(rest.to_string())
}
