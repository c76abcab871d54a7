//! The hops, one file each. A check walks its launch's plan ([`iec_launches::Launch::plan`]):
//! each hop observes what its receiver gets from what the hops before it handed on (the
//! [`State`]), reports it, and says whether the call goes on ([`Flow::Next`]) or the hop is
//! where it diverged or stopped ([`Flow::Stop`]). Windows launches walk their plan the same way:
//! the wrapper, spawn and shell hops have a part for each Windows receiver (`crate::windows`
//! reads the call and names the receiver), Git Bash's eval is POSIX bash's, and PowerShell's
//! native argument passing is the native hop.

pub(crate) mod eval;
pub(crate) mod native;
pub(crate) mod program;
pub(crate) mod rewrite;
pub(crate) mod shell;
pub(crate) mod spawn;
pub(crate) mod terminal;
pub(crate) mod tool_input;
pub(crate) mod wrapper;

use crate::run::Run;
use crate::CheckError;
use iec_core::Hop;
use iec_launches::render::Payload;
use serde_json::Value;

/// What the call means under its tool contract.
pub(crate) enum Intended {
    /// A command text.
    Text(String),
    /// An argv.
    Argv(Vec<String>),
}

/// Whether the call goes on to the next hop of the plan.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    /// It does.
    Next,
    /// This hop diverged, or ended the call (nothing after it is judged).
    Stop,
}

/// What the hops so far hand on.
pub(crate) struct State {
    /// The call as the agent meant it.
    pub(crate) intended: Intended,
    /// The tool-input hop's receipt (the decoded `command` value), until it is reported.
    pub(crate) decoded: Option<Value>,
    /// The command as one text (an argv joined with spaces), rewritten by the harness once the
    /// rewrite hop has run.
    pub(crate) text: String,
    /// An argv call the harness joined into one shell text.
    pub(crate) joined: Option<String>,
    /// The wrapper's payload (none without a wrapper).
    pub(crate) payload: Option<Payload>,
    /// What the wrapper hands the process: the wrapper text, or the text without a wrapper.
    pub(crate) wrapper_text: Option<String>,
    /// The process's argv.
    pub(crate) argv: Vec<String>,
    /// What eval (or the inner `bash -c`) receives.
    pub(crate) eval_text: String,
    /// Terminal launches: what was typed and read.
    pub(crate) terminal: terminal::Typing,
    /// Windows launches: the command line the sender rendered from `argv`.
    pub(crate) command_line: String,
    /// Windows launches: the argv the receiver rebuilt from the command line.
    pub(crate) received: Vec<String>,
    /// Windows launches: what the shell runs (the script Git Bash got after `-c`, the command
    /// cmd.exe extracted, the script PowerShell's CLI built).
    pub(crate) shell_text: String,
}

impl State {
    pub(crate) fn new(intended: Intended, decoded: Value) -> State {
        let text = match &intended {
            Intended::Text(t) => t.clone(),
            Intended::Argv(a) => a.join(" "),
        };
        State {
            intended,
            decoded: Some(decoded),
            text,
            joined: None,
            payload: None,
            wrapper_text: None,
            argv: vec![],
            eval_text: String::new(),
            terminal: Default::default(),
            command_line: String::new(),
            received: vec![],
            shell_text: String::new(),
        }
    }

    /// The intended text (an argv call's script, or its words joined).
    pub(crate) fn intended_text(&self) -> &str {
        match &self.intended {
            Intended::Text(t) => t,
            Intended::Argv(_) => &self.text,
        }
    }
}

/// [`Flow::Stop`] once a hop diverged.
pub(crate) fn flow(run: &Run<'_>) -> Flow {
    match run.fd {
        Some(_) => Flow::Stop,
        None => Flow::Next,
    }
}

/// Observes one hop of the plan.
pub(crate) fn observe(hop: Hop, run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    match hop {
        Hop::ToolInput => tool_input::observe(run, st),
        Hop::HarnessRewrite => rewrite::observe(run, st),
        Hop::Wrapper => wrapper::observe(run, st),
        Hop::Spawn => spawn::observe(run, st),
        Hop::Terminal => terminal::observe(run, st),
        Hop::Shell => shell::observe(run, st),
        Hop::Eval | Hop::InnerShell => eval::observe(run, st, hop),
        Hop::Program => program::observe(run, st),
        Hop::Native => native::observe(run, st),
    }
}
