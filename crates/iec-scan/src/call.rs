//! A shell call as a session log records it, and its observed outcome.

use serde::Serialize;
use serde_json::Value;

/// One shell call read from a session log.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoggedCall {
    /// The file it was read from (as given, or found under a given folder).
    pub file: String,
    /// The line of the call (1-based; for a JSON document, the position of the call in it).
    pub line: u64,
    /// The session id the log gives (else the file).
    pub session: String,
    /// The harness that wrote the log (`claude-code`, `codex`, `gemini-cli`, `openhands`,
    /// `cline`, or an ATIF `agent.name`).
    pub harness: String,
    /// The harness version the log records (`None`: the format records none).
    pub version: Option<String>,
    /// The OS the log records or its paths show (`linux`, `macos`, `windows`), else `None`.
    pub os: Option<String>,
    /// The working directory, when recorded.
    pub cwd: Option<String>,
    /// The record's timestamp, when recorded.
    pub timestamp: Option<String>,
    /// A subagent's call (Claude Code sidechains).
    pub sidechain: bool,
    /// The tool name (`Bash`, `exec_command`, `run_shell_command`, …).
    pub tool: String,
    /// The tool input as emitted (for Codex, the decoded `arguments`).
    pub input: Value,
    /// The command text (an argv joined with spaces).
    pub command: String,
    /// What the log says happened.
    pub outcome: Outcome,
}

/// The observed outcome of a call, as its result record tells.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Outcome {
    /// A result record was found.
    pub seen: bool,
    /// The harness's error flag, or one derived from the exit code (`None`: neither known).
    pub error: Option<bool>,
    /// The exit code, when the log gives one.
    pub exit_code: Option<i64>,
    /// The result's text when it failed (at most [`ERROR_TEXT_MAX`] bytes).
    pub error_text: Option<String>,
}

/// The most bytes of a failed call's result text kept.
pub const ERROR_TEXT_MAX: usize = 2048;

impl Outcome {
    /// The outcome of a result with `error` flag, `exit_code` and `text`: the error flag
    /// derived from the exit code when not given, the text kept when the call failed.
    pub fn new(error: Option<bool>, exit_code: Option<i64>, text: &str) -> Outcome {
        let error = error.or(exit_code.map(|c| c != 0));
        Outcome {
            seen: true,
            error,
            exit_code,
            error_text: (error == Some(true)).then(|| clip(text, ERROR_TEXT_MAX)),
        }
    }

    /// True when the call failed.
    pub fn failed(&self) -> bool {
        self.error == Some(true) || self.exit_code.is_some_and(|c| c != 0)
    }
}

/// The first `max` bytes of `s` (at a character boundary).
pub fn clip(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_string();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    s[..end].to_string()
}

/// The number after `prefix` at the start of a line of `text` (first such line; leading
/// white space of the line ignored). `Exit code: 3` → 3 with prefix `Exit code:`.
pub fn number_after(text: &str, prefix: &str) -> Option<i64> {
    text.lines().find_map(|l| {
        let rest = l.trim_start().strip_prefix(prefix)?.trim_start();
        let end = rest
            .char_indices()
            .find(|(i, c)| !(c.is_ascii_digit() || (*i == 0 && *c == '-')))
            .map(|(i, _)| i)
            .unwrap_or(rest.len());
        rest[..end].parse().ok()
    })
}

/// The command text of a tool input's command value: a string as it is, an argv joined with
/// spaces.
pub fn command_text(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(a) => Some(
            a.iter()
                .map(|w| match w {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect::<Vec<_>>()
                .join(" "),
        ),
        _ => None,
    }
}

/// The OS a working directory's form shows: a drive letter or UNC path is Windows, `/Users/`
/// macOS, any other absolute path Linux.
pub fn os_of_cwd(cwd: &str) -> Option<String> {
    let b = cwd.as_bytes();
    if (b.len() >= 2 && b[0].is_ascii_alphabetic() && b[1] == b':') || cwd.starts_with("\\\\") {
        Some("windows".into())
    } else if cwd.starts_with("/Users/") {
        Some("macos".into())
    } else if cwd.starts_with('/') {
        Some("linux".into())
    } else {
        None
    }
}

/// The text of a tool result's content: a string, or the `text` of its blocks joined.
pub fn content_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Array(a) => a
            .iter()
            .filter_map(|b| b.get("text").and_then(Value::as_str).or(b.as_str()))
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other
            .get("text")
            .or_else(|| other.get("content"))
            .map(content_text)
            .unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_after_prefixes() {
        assert_eq!(number_after("Exit code 2\nls: x", "Exit code"), Some(2));
        assert_eq!(
            number_after(
                "Chunk ID: a\nProcess exited with code 127\n",
                "Process exited with code"
            ),
            Some(127)
        );
        assert_eq!(number_after("Output: x\nExit Code: -1", "Exit Code:"), Some(-1));
        assert_eq!(number_after("Exit code: none", "Exit code:"), None);
    }

    #[test]
    fn outcome_derives_error_from_code() {
        let o = Outcome::new(None, Some(3), "boom");
        assert_eq!((o.error, o.error_text.as_deref()), (Some(true), Some("boom")));
        let o = Outcome::new(None, Some(0), "fine");
        assert_eq!((o.error, o.error_text), (Some(false), None));
        assert!(!Outcome::default().failed());
    }

    #[test]
    fn os_from_cwd() {
        assert_eq!(os_of_cwd("C:\\Users\\me").as_deref(), Some("windows"));
        assert_eq!(os_of_cwd("/Users/me/p").as_deref(), Some("macos"));
        assert_eq!(os_of_cwd("/home/me").as_deref(), Some("linux"));
        assert_eq!(os_of_cwd("rel"), None);
    }

    #[test]
    fn clip_keeps_char_boundaries() {
        assert_eq!(clip("aé", 2), "a");
        assert_eq!(clip("abc", 5), "abc");
    }
}
