//! Recognising a harness wrapper and rebuilding it with the command delivered intact.
//!
//! Claude Code's bash wrapper is `<parts> && eval <P> && pwd -P >| <cwd file>`, where `<P>` is
//! the command quoted for `eval` (the parts are the snapshot `source`, the extglob line, ...).
//! For each recorded intent the shim renders `<P>` the way the harness does and looks for
//! `eval <P>` right before the last ` && pwd -P >| `. The renderers:
//! * Claude Code 2.1.72: shell-quote `quote()` and the payload builder ported in
//!   `iec-shellquote` (`\!` inside double quotes, `\< /dev/null` appended, pipe rebuild, ...);
//! * single-quote eval (Claude Code 2.1.332 and the Windows builds): `'…'` with `'` as
//!   `'"'"'`, optionally followed by ` < /dev/null`, after the same `>nul` rewrite.
//!
//! A match is only ever used to run the recorded command: the shim never runs text it has not
//! first seen the harness render from that very command.

use iec_shellquote::claude_code_2_1_72 as cc72;

/// The separator before the cwd file; the last occurrence in a wrapper is the harness's own.
const PWD: &str = " && pwd -P >| ";

/// Which rendering matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Renderer {
    ClaudeCode2_1_72,
    SingleQuoteEval,
}

impl Renderer {
    pub fn name(self) -> &'static str {
        match self {
            Renderer::ClaudeCode2_1_72 => "claude-code-2.1.72 shell-quote",
            Renderer::SingleQuoteEval => "single-quote eval",
        }
    }
}

/// A wrapper that carries an intended command.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Match {
    /// Everything before `eval ` (the harness's parts, each followed by ` && `; may be empty).
    pub prefix: String,
    /// From ` && pwd -P >| ` to the end (the cwd file).
    pub suffix: String,
    /// The harness added a `< /dev/null` for this command (its stdin is a pipe nobody writes).
    pub stdin_null: bool,
    pub renderer: Renderer,
}

/// Whether `w` has the shape of a tool-call wrapper (`eval ` somewhere before a final
/// ` && pwd -P >| FILE`). Other shell calls of a harness (snapshot creation, `$SHELL -c` of
/// user programs) do not, and pass through.
pub fn looks_like_wrapper(w: &str) -> bool {
    match w.rfind(PWD) {
        Some(i) => {
            let cwd = &w[i + PWD.len()..];
            !cwd.is_empty() && !cwd.contains('\n') && w[..i].contains("eval ")
        }
        None => false,
    }
}

/// The renderings of `command` for eval, each with whether it added `< /dev/null`.
pub fn renderings(command: &str) -> Vec<(Renderer, String, bool)> {
    let p = cc72::build_eval_payload(command);
    let mut v = vec![(
        Renderer::ClaudeCode2_1_72,
        p.payload,
        p.stdin_redirect != cc72::StdinRedirect::None,
    )];
    let (d, _) = cc72::rewrite_null_redirect(command);
    let q = format!("'{}'", d.replace('\'', "'\"'\"'"));
    v.push((Renderer::SingleQuoteEval, format!("{q} < /dev/null"), true));
    v.push((Renderer::SingleQuoteEval, q, false));
    v
}

/// Does `w` carry `command` (rendered by one of the known renderers)?
pub fn match_wrapper(w: &str, command: &str) -> Option<Match> {
    let i = w.rfind(PWD)?;
    let (head, suffix) = w.split_at(i);
    for (renderer, payload, stdin_null) in renderings(command) {
        let Some(before) = head.strip_suffix(payload.as_str()) else {
            continue;
        };
        let Some(prefix) = before.strip_suffix("eval ") else {
            continue;
        };
        if !(prefix.is_empty() || prefix.ends_with(" && ")) {
            continue;
        }
        return Some(Match {
            prefix: prefix.to_string(),
            suffix: suffix.to_string(),
            stdin_null,
            renderer,
        });
    }
    None
}

/// The wrapper with the quoted command replaced by a read of file descriptor `fd`, which holds
/// `command`'s bytes: `eval "$(</dev/fd/N)"` (plus the trailing newlines `$(…)` strips), `N<&-`
/// so the command and its children do not inherit the descriptor, and `< /dev/null` on the
/// whole command when the harness added one (it meant the command's stdin, not the pipe).
pub fn rebuild(m: &Match, command: &str, fd: i32) -> String {
    let newlines = command.len() - command.trim_end_matches('\n').len();
    let mut s = String::with_capacity(m.prefix.len() + m.suffix.len() + 48);
    s.push_str(&m.prefix);
    s.push_str(&format!("eval \"$(</dev/fd/{fd})\""));
    if newlines > 0 {
        s.push_str(&format!("$'{}'", "\\n".repeat(newlines)));
    }
    s.push_str(&format!(" {fd}<&-"));
    if m.stdin_null {
        s.push_str(" < /dev/null");
    }
    s.push_str(&m.suffix);
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_the_2_1_72_wrapper_and_rebuilds_it() {
        let cmd = "argvprobe 'a != b'";
        let w = cc72::wrapper(Some("/s/snap.sh"), "/t/claude-ab12-cwd", cmd);
        assert_eq!(
            w,
            "source /s/snap.sh && shopt -u extglob 2>/dev/null || true && eval \"argvprobe 'a \\!= b'\" \\< /dev/null && pwd -P >| /t/claude-ab12-cwd"
        );
        assert!(looks_like_wrapper(&w));
        let m = match_wrapper(&w, cmd).unwrap();
        assert_eq!(m.renderer, Renderer::ClaudeCode2_1_72);
        assert!(m.stdin_null);
        assert_eq!(
            rebuild(&m, cmd, 20),
            "source /s/snap.sh && shopt -u extglob 2>/dev/null || true && eval \"$(</dev/fd/20)\" 20<&- < /dev/null && pwd -P >| /t/claude-ab12-cwd"
        );
        assert_eq!(match_wrapper(&w, "argvprobe 'a != c'"), None);
        assert_eq!(match_wrapper(&w, "argvprobe 'a \\!= b'"), None);
    }

    #[test]
    fn matches_the_single_quote_form() {
        let cmd = "printf '%s' \"it's\"";
        let w = "source /s 2>/dev/null || true && eval 'printf '\"'\"'%s'\"'\"' \"it'\"'\"'s\"' < /dev/null && pwd -P >| /t/c";
        let m = match_wrapper(w, cmd).unwrap();
        assert_eq!(m.renderer, Renderer::SingleQuoteEval);
        assert!(m.stdin_null);
        assert_eq!(m.prefix, "source /s 2>/dev/null || true && ");
    }

    #[test]
    fn trailing_newlines_are_given_back() {
        let m = Match {
            prefix: String::new(),
            suffix: " && pwd -P >| /t/c".into(),
            stdin_null: false,
            renderer: Renderer::SingleQuoteEval,
        };
        assert_eq!(
            rebuild(&m, "echo a\\\n\n", 21),
            "eval \"$(</dev/fd/21)\"$'\\n\\n' 21<&- && pwd -P >| /t/c"
        );
    }

    #[test]
    fn non_wrappers() {
        assert!(!looks_like_wrapper("echo hi"));
        assert!(!looks_like_wrapper("SNAPSHOT_FILE=/x; source ~/.bashrc"));
        assert!(!looks_like_wrapper("pwd -P >| /t/c"));
        assert!(!looks_like_wrapper("eval x && pwd -P >| "));
    }
}
