//! Who a failed call's failure is charged to, and where the log's evidence disagrees with the
//! prediction.
//!
//! * `generation`: the emitted text does not parse for the tool's shell (`iec check` says
//!   `unknown` with attribution `generation`): the model's error.
//! * `path`: it parses, and a hop of the launch changes it (`diverges`).
//! * `wrapper`: the error names a line or token the emitted text does not have (`bash: line 7:`
//!   for a one-line command, ``near unexpected token `)'`` with no `)`): the harness's own text
//!   around the command failed.
//! * `nested`: it arrives intact and fails in a further interpreter (`python3 -c`, `jq`, a `sed`
//!   script): the error is that interpreter's.
//! * `other`: anything else (the program's own failure: a missing file, a failed test).
//!
//! Evidence beats prediction: a harness refusal or a shell parser error in the result that the
//! prediction did not expect, or a predicted refusal that ran, is a disagreement.

use iec_core::{Exposure, HopKind, Verdict};
use serde::Serialize;

use crate::call::LoggedCall;
use crate::scan::Decided;

/// The attribution of a failed call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Attribution {
    /// The emitted text does not parse.
    Generation,
    /// A hop changed it.
    Path,
    /// The error names what only the harness's wrapper has.
    Wrapper,
    /// A further interpreter failed on intact code.
    Nested,
    /// Anything else.
    Other,
}

impl Attribution {
    /// Every attribution, in report order.
    pub const ALL: [Attribution; 5] = [
        Attribution::Generation,
        Attribution::Path,
        Attribution::Wrapper,
        Attribution::Nested,
        Attribution::Other,
    ];

    /// The name in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Attribution::Generation => "generation",
            Attribution::Path => "path",
            Attribution::Wrapper => "wrapper",
            Attribution::Nested => "nested",
            Attribution::Other => "other",
        }
    }
}

/// Harness refusals that reach the tool result (Claude Code's input validation, Gemini CLI's
/// command-substitution refusal, OpenHands' one-statement rule).
const REFUSALS: &[&str] = &[
    "InputValidationError",
    "Command injection detected",
    "Cannot execute multiple commands at once",
];

/// Shell parser errors.
const PARSE_ERRORS: &[&str] = &[
    "syntax error near unexpected token",
    "unexpected EOF while looking for matching",
    "syntax error: unexpected end of file",
    "Syntax error:",
];

/// Errors of the interpreters a shell command embeds code for.
const NESTED_ERRORS: &[&str] = &[
    "Traceback (most recent call last)",
    "SyntaxError",
    "IndentationError",
    "jq: error",
    "jq: compile error",
    "sed: -e expression",
    "awk: cmd. line",
    "awk: line",
    "awk: syntax error",
    "ReferenceError",
    "syntax error at -e line",
    "ERROR:  syntax error",
    "Parse error:",
];

/// The line numbers a shell error names (`line 7:`).
fn named_lines(err: &str) -> impl Iterator<Item = usize> + '_ {
    err.match_indices("line ").filter_map(|(i, _)| {
        let rest = &err[i + 5..];
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        if digits.is_empty() || !rest[digits.len()..].starts_with(':') {
            return None;
        }
        digits.parse().ok()
    })
}

/// The token of ``near unexpected token `X'`` or ``looking for matching `X'``.
fn named_token(err: &str) -> Option<&str> {
    for marker in ["unexpected token `", "looking for matching `"] {
        if let Some(i) = err.find(marker) {
            let rest = &err[i + marker.len()..];
            return rest.find('\'').map(|j| &rest[..j]);
        }
    }
    None
}

/// True when the error names a line or token the emitted text does not have.
pub fn names_wrapper(command: &str, err: &str) -> bool {
    let lines = command.lines().count().max(1);
    if named_lines(err).any(|n| n > lines) {
        return true;
    }
    named_token(err).is_some_and(|t| !t.is_empty() && t != "newline" && !command.contains(t))
}

/// The attribution of `call` (`None` when it did not fail) and a disagreement between the
/// log and the prediction `decided` (`None` for an uncovered call).
pub fn attribute(call: &LoggedCall, decided: Option<&Decided>) -> (Option<Attribution>, Option<String>) {
    let err = call.outcome.error_text.as_deref().unwrap_or_default();
    let failed = call.outcome.failed();
    let refusal = REFUSALS.iter().find(|r| err.contains(*r));
    let parse_error = PARSE_ERRORS.iter().find(|p| err.contains(*p));
    let verdict = decided.and_then(|d| d.verdict);
    let fd = decided.and_then(|d| d.first_divergence.as_ref());
    let generation = verdict == Some(Verdict::Unknown)
        && decided.and_then(|d| d.attribution.as_deref()) == Some("generation");
    let wrapper = failed && names_wrapper(&call.command, err);

    let mut disagreement = None;
    if verdict.is_some() {
        let predicted_loud_refusal = fd.is_some_and(|f| !f.silent && f.kind == HopKind::StructuredDecode);
        if let Some(r) = refusal.filter(|_| !predicted_loud_refusal) {
            disagreement = Some(format!(
                "the harness refused the call ({r}); the prediction did not"
            ));
        } else if let Some(p) = parse_error.filter(|_| verdict == Some(Verdict::Corresponds)) {
            disagreement = Some(format!(
                "a parser error in the result ({p}); the prediction says the text arrives intact"
            ));
        } else if wrapper && verdict == Some(Verdict::Corresponds) {
            disagreement = Some("the error names a line or token the emitted text does not have; the prediction says the text arrives intact".into());
        } else if predicted_loud_refusal && call.outcome.seen && call.outcome.exit_code == Some(0) {
            disagreement = Some(format!(
                "predicted a refusal at {}, but the call ran and exited 0",
                fd.map_or("", |f| f.hop_name.as_str())
            ));
        }
    }
    if !failed {
        return (None, disagreement);
    }
    // Intact (or not predicted) code for a further interpreter, and that interpreter's error.
    let nested = !matches!(decided, Some(d) if !d.exposure.contains(&Exposure::NestedCode))
        && NESTED_ERRORS.iter().any(|n| err.contains(n));
    let a = if generation {
        Attribution::Generation
    } else if verdict == Some(Verdict::Diverges) {
        Attribution::Path
    } else if wrapper {
        Attribution::Wrapper
    } else if nested {
        Attribution::Nested
    } else {
        Attribution::Other
    };
    (Some(a), disagreement)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapper_evidence() {
        assert!(names_wrapper(
            "echo hi",
            "bash: line 3: syntax error near unexpected token `)'"
        ));
        assert!(names_wrapper(
            "echo hi",
            "bash: -c: syntax error near unexpected token `)'"
        ));
        assert!(!names_wrapper(
            "echo hi)",
            "bash: -c: line 1: syntax error near unexpected token `)'"
        ));
        assert!(!names_wrapper("a\nb\nc", "bash: line 3: foo: command not found"));
        assert!(!names_wrapper(
            "ls /x",
            "ls: cannot access '/x': No such file or directory"
        ));
    }
}
