/*!
The vocabulary of the IEC protocol as types a library user can drive.

A [`Call`] is what the agent emitted. It crosses the hops of a launch; each hop's receiver gets a
[`Receipt`]. A hop [`corresponds`](HopReport::corresponds) when its receipt still denotes the
intended action under the receiver's own parser. The first hop that does not is the
[`FirstDivergence`], with a [`Mechanism`] and a silent/loud prediction. A [`CheckReport`] carries
the whole story; its JSON shape is a stable interface (fields are added, never renamed).
*/
#![deny(missing_docs)]

pub mod config;
mod diff;
mod exposure;
pub mod json;
pub mod limits;

pub use diff::byte_diff;
pub use exposure::{exposure, Exposure};
pub use limits::{MAX_CALL_JSON, MAX_TEXT};

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What the agent emitted: a tool name and its JSON arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Call {
    /// Tool name, e.g. `Bash`, `shell`, `run_shell_command`.
    #[serde(default = "default_tool")]
    pub tool: String,
    /// The JSON arguments as emitted.
    pub input: Value,
}

fn default_tool() -> String {
    "Bash".to_string()
}

impl Call {
    /// A call of `tool` with `{"command": text}`.
    pub fn command(tool: &str, text: &str) -> Call {
        Call {
            tool: tool.to_string(),
            input: serde_json::json!({ "command": text }),
        }
    }

    /// Reads a call from JSON. Accepts `{"tool": .., "input": {..}}`, a Claude Code PreToolUse
    /// document (`tool_name`/`tool_input`), an Anthropic `tool_use` block (`name`/`input`), or a
    /// bare arguments object such as `{"command": "..."}`.
    pub fn from_json(v: &Value) -> Result<Call, CallError> {
        let obj = v.as_object().ok_or(CallError::NotAnObject)?;
        let pick = |tool: &str, input: &str| -> Option<Call> {
            let input = obj.get(input)?;
            let tool = obj.get(tool).and_then(Value::as_str).unwrap_or("Bash");
            Some(Call {
                tool: tool.to_string(),
                input: input.clone(),
            })
        };
        if let Some(c) = pick("tool", "input") {
            return Ok(c);
        }
        if let Some(c) = pick("tool_name", "tool_input") {
            return Ok(c);
        }
        if let Some(c) = pick("name", "input") {
            return Ok(c);
        }
        if obj.contains_key("command") {
            return Ok(Call {
                tool: "Bash".to_string(),
                input: v.clone(),
            });
        }
        Err(CallError::NoInput)
    }
}

/// Why a JSON document is not a call.
#[derive(Debug, thiserror::Error)]
pub enum CallError {
    /// The document is not a JSON object.
    #[error("a call must be a JSON object")]
    NotAnObject,
    /// No `input`, `tool_input` or `command` field.
    #[error("a call needs `input` (with `tool`), `tool_input` (with `tool_name`) or `command`")]
    NoInput,
}

/// The kind of a hop: which sort of sender→receiver handoff it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum HopKind {
    /// JSON decode of the tool arguments (and the harness's input validation).
    StructuredDecode,
    /// Harness rewriting or wrapping of the text.
    Wrapper,
    /// How a process receives its arguments (execve argv, a Windows command line).
    ProcessInterface,
    /// Text typed into an interactive shell.
    TerminalTyping,
    /// A shell parses the text it received.
    ShellParse,
    /// `eval` parses the text again.
    EvalParse,
    /// The shell builds a child program's argv.
    ChildArgv,
    /// The target program parses its own input.
    TargetParse,
}

impl HopKind {
    /// The kebab-case name used in JSON and launch files.
    pub fn as_str(self) -> &'static str {
        match self {
            HopKind::StructuredDecode => "structured-decode",
            HopKind::Wrapper => "wrapper",
            HopKind::ProcessInterface => "process-interface",
            HopKind::TerminalTyping => "terminal-typing",
            HopKind::ShellParse => "shell-parse",
            HopKind::EvalParse => "eval-parse",
            HopKind::ChildArgv => "child-argv",
            HopKind::TargetParse => "target-parse",
        }
    }
}

/// A hop of a launch's plan: one handoff of the call, named as `iec check` reports it. The
/// names and kinds of every hop are here and nowhere else; a launch's plan is
/// `iec_launches::Launch::plan`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hop {
    /// The harness decodes the tool call's JSON and validates the command.
    ToolInput,
    /// The harness rewrites the text before quoting it (or joins an argv).
    HarnessRewrite,
    /// The harness builds the text it hands on around the command.
    Wrapper,
    /// The process interface: execve's argv, or a Windows command line a runtime re-parses.
    Spawn,
    /// The shell parses what it received.
    Shell,
    /// `eval` parses the words the shell handed it.
    Eval,
    /// A second `bash -c` the wrapper starts parses its one argument.
    InnerShell,
    /// The program that runs: a snapshot's shell function may stand in for the one named.
    Program,
    /// PowerShell builds a native program's command line.
    Native,
    /// The text is typed into an interactive shell.
    Terminal,
}

impl Hop {
    /// Every hop, in the order they can occur.
    pub const ALL: [Hop; 10] = [
        Hop::ToolInput,
        Hop::HarnessRewrite,
        Hop::Wrapper,
        Hop::Spawn,
        Hop::Terminal,
        Hop::Shell,
        Hop::Eval,
        Hop::InnerShell,
        Hop::Program,
        Hop::Native,
    ];

    /// The name reports and `iec launches` use.
    pub const fn name(self) -> &'static str {
        match self {
            Hop::ToolInput => "tool-input",
            Hop::HarnessRewrite => "harness-rewrite",
            Hop::Wrapper => "wrapper",
            Hop::Spawn => "spawn",
            Hop::Shell => "shell",
            Hop::Eval => "eval",
            Hop::InnerShell => "inner-shell",
            Hop::Program => "program",
            Hop::Native => "native",
            Hop::Terminal => "terminal",
        }
    }

    /// Which sort of handoff it is.
    pub const fn kind(self) -> HopKind {
        match self {
            Hop::ToolInput => HopKind::StructuredDecode,
            Hop::HarnessRewrite | Hop::Wrapper => HopKind::Wrapper,
            Hop::Spawn => HopKind::ProcessInterface,
            Hop::Shell | Hop::InnerShell => HopKind::ShellParse,
            Hop::Eval => HopKind::EvalParse,
            Hop::Program | Hop::Native => HopKind::ChildArgv,
            Hop::Terminal => HopKind::TerminalTyping,
        }
    }

    /// The hop of a reported name.
    pub fn from_name(name: &str) -> Option<Hop> {
        Hop::ALL.into_iter().find(|h| h.name() == name)
    }
}

/// How a hop changed the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mechanism {
    /// Quotes meant for a later receiver were removed by an earlier parse.
    QuoteConsumption,
    /// A receiver reinterpreted a delivered literal (`!`, `$`, `%VAR%`, braces, globs).
    ReExpansion,
    /// Text was cut.
    Truncation,
    /// An operand was dropped, split or merged.
    ArityChange,
    /// Anything else: rejection, injected redirection, line endings, program substitution.
    Other,
}

impl Mechanism {
    /// The kebab-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Mechanism::QuoteConsumption => "quote-consumption",
            Mechanism::ReExpansion => "re-expansion",
            Mechanism::Truncation => "truncation",
            Mechanism::ArityChange => "arity-change",
            Mechanism::Other => "other",
        }
    }
}

/// The verdict of a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// Every hop's receipt denotes the intended action.
    Corresponds,
    /// Some hop's receipt does not.
    Diverges,
    /// The protocol cannot tell (see the report's `reason`).
    Unknown,
}

impl Verdict {
    /// The kebab-case name used in JSON.
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Corresponds => "corresponds",
            Verdict::Diverges => "diverges",
            Verdict::Unknown => "unknown",
        }
    }
    /// Exit code of `iec check`: 0 corresponds, 1 diverges, 3 unknown.
    pub fn exit_code(self) -> i32 {
        match self {
            Verdict::Corresponds => 0,
            Verdict::Diverges => 1,
            Verdict::Unknown => 3,
        }
    }
}

/// How a receipt was obtained.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum WitnessKind {
    /// The real receiver ran (bash, dash, serde_json) and was stopped before it acted.
    Real,
    /// A faithful model computed it (Windows receivers, harness rendering code ported from source).
    Emulated,
}

/// One hop's result: what its receiver got and whether that still denotes the intended action.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HopReport {
    /// Hop name from the launch file (`tool-input`, `wrapper`, `spawn`, `shell`, `eval`, ...).
    pub name: String,
    /// Hop kind.
    pub kind: HopKind,
    /// How the receipt was obtained.
    pub witness: WitnessKind,
    /// `Some(true)` corresponds, `Some(false)` diverges, `None` not judged (after a divergence
    /// that stops delivery, or when the hop is only a carrier).
    pub corresponds: Option<bool>,
    /// The receipt in the receiver's own terms (text, canonical parse, argv, JSON value).
    pub receipt: Value,
    /// A short remark (why not judged, which rule applied).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The first hop whose receipt no longer denotes the intended action.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FirstDivergence {
    /// Index of the hop in the launch (0-based).
    pub hop: usize,
    /// Hop name.
    pub hop_name: String,
    /// Hop kind.
    pub kind: HopKind,
    /// How it changed.
    pub mechanism: Mechanism,
    /// True when the tool result would carry no error flag or parser/quoting message.
    pub silent: bool,
    /// What the receiver should have got.
    pub intended: String,
    /// What it got.
    pub received: String,
    /// Byte-level diff of the two.
    pub diff: String,
    /// Human-readable explanation.
    pub detail: String,
    /// Where the receiver's action differs from the intended one, when both are bash texts
    /// whose parse was read as actions: the first command and word (or operator) that differ.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<ActionDifference>,
}

/// The first difference between two actions (see `FirstDivergence::action`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActionDifference {
    /// The command it is in, counted from 0 by control operators (`;`, `|`, `&&`, …).
    pub command: usize,
    /// The intended word or operator, quoted as bash would read its value (`(nothing)` when
    /// the intended action has ended).
    pub intended: String,
    /// The received one.
    pub received: String,
}

/// The result of checking one call on one launch.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct CheckReport {
    /// Launch id.
    pub launch: String,
    /// Verdict.
    pub verdict: Verdict,
    /// Whether the call is exposed (see [`exposure`]).
    pub exposed: bool,
    /// Exposure classes.
    pub exposure: Vec<Exposure>,
    /// The first divergence, `null` unless the verdict is `diverges`.
    pub first_divergence: Option<FirstDivergence>,
    /// Every hop, in order.
    pub hops: Vec<HopReport>,
    /// Why the verdict is `unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Attribution of an `unknown` that is the agent's own error (`generation`), when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub attribution: Option<String>,
    /// Set when a shortcut stood in for a witness process (plain texts; see the protocol crate).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub shortcut: Option<String>,
    /// Every command the call names whose program the harness replaces (a shell snapshot's
    /// function), whether or not the replacement changes the verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub substitutions: Vec<Substitution>,
}

/// A command whose program the harness replaces: what it names, what runs, and how the
/// replacement behaves for this command's options and operands (by the rows of the launch's
/// substitution table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Substitution {
    /// The program the command names (`grep`).
    pub named: String,
    /// What runs instead (`ugrep 7.8.4 embedded in the claude binary`, or the named program
    /// itself when the replacement hands this call to it).
    pub runs: String,
    /// The command's words as bash would pass them (expansions known only at run time kept as
    /// written).
    pub words: Vec<String>,
    /// `same`, `differs` or `unknown`.
    pub behaviour: String,
    /// The ids of the table rows that apply (`grep-one-input`, `grep-recursive`, ...).
    pub rows: Vec<String>,
    /// Rows that apply only for some inputs the call does not show (a binary file): listed,
    /// not judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub caveats: Vec<String>,
    /// Why, in words.
    pub detail: String,
}
