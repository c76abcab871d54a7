//! The harnesses `iec harness learn` drives, behind one trait: how to start a real harness on a
//! list of shell commands (one tool call each, against the replay model), how to observe what
//! arrived, and what its shell tool is called. The learner ([`crate::learn`]) is one piece of
//! code over this trait; each harness is one file here.

use anyhow::bail;
use serde_json::Value;

use crate::agree::{observe, Observed, Payload, RunSpec};
use crate::codex::{install_codex, observe_codex};
use crate::driver::install_claude_code;
use crate::gemini::{install_gemini_cli, observe_gemini};
use crate::launch::{HarnessRun, Launcher, PayloadResult};

mod claude_code;
mod codex;
mod gemini;

/// A real harness the learner can drive.
pub trait Harness: Send + Sync {
    /// The harness name in launch files and `--harness NAME@VERSION` (`claude-code`, `codex`,
    /// `gemini-cli`).
    fn name(&self) -> &'static str;
    /// How people call it (`Claude Code`).
    fn title(&self) -> &'static str;
    /// Installs the pinned npm package (when `spec.bin` is not given).
    fn install(&self, version: &str) -> anyhow::Result<()>;
    /// One launch of the harness with `commands` as the model's tool calls, as a user runs it
    /// headless (the permission flags its version has, no hook of ours), then each command
    /// directly as `bash -c` for reference.
    fn run(&self, spec: &RunSpec, commands: &[&str]) -> anyhow::Result<HarnessRun>;
    /// The observed verdict of one result.
    fn observe(&self, id: &str, r: &PayloadResult) -> Observed;
    /// The shell tool's name and the tool-input field that carries the command (`None`:
    /// `command`), read from the requests the harness sent.
    fn tool(&self, run: &HarnessRun) -> Option<ShellTool>;
    /// The most tool calls one launch takes.
    fn max_calls(&self) -> usize {
        200
    }
}

/// A shell tool's name and the tool-input field that carries the command (`None`: `command`).
pub type ShellTool = (String, Option<String>);

/// One of the harnesses `iec` drives, as a row of what differs between them: names, the most
/// calls a launch takes, and its driver's install, run and observe, and how its model API
/// offers the shell tool (each harness's file below this module says more).
pub struct Driven {
    name: &'static str,
    title: &'static str,
    max_calls: usize,
    install: fn(&str) -> anyhow::Result<Launcher>,
    run: fn(&RunSpec, &[&str]) -> anyhow::Result<HarnessRun>,
    observe: fn(&str, &PayloadResult) -> Observed,
    shell_tool: fn(&Value) -> Option<ShellTool>,
}

/// Claude Code.
#[rustfmt::skip]
pub const CLAUDE_CODE: Driven = Driven { name: "claude-code", title: "Claude Code", max_calls: 200, install: install_claude_code, run: claude_code::run, observe, shell_tool: claude_code::shell_tool };
/// Codex CLI.
#[rustfmt::skip]
pub const CODEX: Driven = Driven { name: "codex", title: "Codex", max_calls: usize::MAX, install: install_codex, run: codex::run, observe: observe_codex, shell_tool: codex::shell_tool };
/// Gemini CLI.
#[rustfmt::skip]
pub const GEMINI_CLI: Driven = Driven { name: "gemini-cli", title: "Gemini CLI", max_calls: 90, install: install_gemini_cli, run: gemini::run, observe: observe_gemini, shell_tool: gemini::shell_tool };

impl Harness for Driven {
    fn name(&self) -> &'static str {
        self.name
    }
    fn title(&self) -> &'static str {
        self.title
    }
    fn install(&self, version: &str) -> anyhow::Result<()> {
        (self.install)(version).map(|_| ())
    }
    fn run(&self, spec: &RunSpec, commands: &[&str]) -> anyhow::Result<HarnessRun> {
        (self.run)(spec, commands)
    }
    fn observe(&self, id: &str, r: &PayloadResult) -> Observed {
        (self.observe)(id, r)
    }
    /// The shell tool of the first main-loop request that offers one.
    fn tool(&self, run: &HarnessRun) -> Option<ShellTool> {
        run.requests
            .iter()
            .filter(|q| q.role.starts_with("main"))
            .find_map(|q| (self.shell_tool)(&q.body))
    }
    fn max_calls(&self) -> usize {
        self.max_calls
    }
}

/// Parses `NAME@VERSION` into the harness and the version.
pub fn parse(spec: &str) -> anyhow::Result<(Box<dyn Harness>, String)> {
    let Some((name, version)) = spec.split_once('@').filter(|(_, v)| !v.is_empty()) else {
        bail!("unsupported harness {spec:?} (expected claude-code@VERSION, codex@VERSION or gemini-cli@VERSION)");
    };
    let h: Box<dyn Harness> = match name {
        "claude-code" => Box::new(CLAUDE_CODE),
        "codex" => Box::new(CODEX),
        "gemini-cli" => Box::new(GEMINI_CLI),
        _ => bail!("unsupported harness {spec:?} (expected claude-code@VERSION, codex@VERSION or gemini-cli@VERSION)"),
    };
    Ok((h, version.to_string()))
}

/// Runs `payloads` through the real harness in launches of `spec.batch` calls and observes each.
pub fn run_observed(h: &dyn Harness, spec: &RunSpec, payloads: &[Payload]) -> anyhow::Result<Vec<Observed>> {
    run_observed_checked(h, spec, payloads, |_, _, _| Ok(()))
}

/// [`run_observed`], with each result first accepted by `accept` (given the payload, its result
/// and the whole launch).
pub(crate) fn run_observed_checked(
    h: &dyn Harness,
    spec: &RunSpec,
    payloads: &[Payload],
    accept: impl Fn(&Payload, &PayloadResult, &HarnessRun) -> anyhow::Result<()>,
) -> anyhow::Result<Vec<Observed>> {
    observe_launches(
        h.title(),
        spec,
        spec.batch.clamp(1, h.max_calls()),
        payloads,
        |cmds| h.run(spec, cmds),
        |p, r, run| accept(p, r, run).map(|()| h.observe(&p.id, r)),
    )
}

/// Runs `payloads` through the harness `title` in launches of at most `batch` calls (`launch`
/// starts one, as `spec` says) and observes each result with `observe`.
pub(crate) fn observe_launches(
    title: &str,
    spec: &RunSpec,
    batch: usize,
    payloads: &[Payload],
    launch: impl Fn(&[&str]) -> anyhow::Result<HarnessRun>,
    observe: impl Fn(&Payload, &PayloadResult, &HarnessRun) -> anyhow::Result<Observed>,
) -> anyhow::Result<Vec<Observed>> {
    let mut out = Vec::new();
    for chunk in payloads.chunks(batch) {
        let cmds: Vec<&str> = chunk.iter().map(|p| p.command.as_str()).collect();
        let run = checked(title, &spec.version, chunk.len(), launch(&cmds)?)?;
        for (p, r) in chunk.iter().zip(&run.results) {
            out.push(observe(p, r, &run)?);
        }
    }
    Ok(out)
}

/// The launch of `n` calls through `title` `version`, refused when it timed out or did not
/// return one result per call.
pub(crate) fn checked(title: &str, version: &str, n: usize, run: HarnessRun) -> anyhow::Result<HarnessRun> {
    if run.timed_out {
        // The call the harness was on: the first without an answer.
        let answered = run.results.iter().take_while(|r| r.tool_result.is_some()).count();
        let on = run
            .results
            .get(answered)
            .map(|r| format!(", on call {} of {n} ({:?})", answered + 1, r.payload))
            .unwrap_or_default();
        anyhow::bail!(
            "{title} {version} timed out on a launch of {n} calls{on}; stderr:\n{}",
            run.stderr
        );
    }
    anyhow::ensure!(
        run.results.len() == n,
        "{title} {version} returned {} results for {n} calls; stderr:\n{}",
        run.results.len(),
        run.stderr
    );
    Ok(run)
}
