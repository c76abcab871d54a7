//! The harnesses `iec harness learn` drives, behind one trait: how to start a real harness on a
//! list of shell commands (one tool call each, against the replay model), how to observe what
//! arrived, and what its shell tool is called. The learner ([`crate::learn`]) is one piece of
//! code over this trait; each harness is one file here.

use anyhow::bail;

use crate::agree::{Observed, Payload, RunSpec};
use crate::launch::{HarnessRun, PayloadResult};

mod claude_code;
mod codex;
mod gemini;

pub use claude_code::ClaudeCode;
pub use codex::Codex;
pub use gemini::GeminiCli;

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
    fn tool(&self, run: &HarnessRun) -> Option<(String, Option<String>)>;
    /// The most tool calls one launch takes.
    fn max_calls(&self) -> usize {
        200
    }
}

/// Parses `NAME@VERSION` into the harness and the version.
pub fn parse(spec: &str) -> anyhow::Result<(Box<dyn Harness>, String)> {
    let Some((name, version)) = spec.split_once('@').filter(|(_, v)| !v.is_empty()) else {
        bail!("unsupported harness {spec:?} (expected claude-code@VERSION, codex@VERSION or gemini-cli@VERSION)");
    };
    let h: Box<dyn Harness> = match name {
        "claude-code" => Box::new(ClaudeCode),
        "codex" => Box::new(Codex),
        "gemini-cli" => Box::new(GeminiCli),
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
    anyhow::ensure!(
        !run.timed_out,
        "{title} {version} timed out on a launch of {n} calls; stderr:\n{}",
        run.stderr
    );
    anyhow::ensure!(
        run.results.len() == n,
        "{title} {version} returned {} results for {n} calls; stderr:\n{}",
        run.results.len(),
        run.stderr
    );
    Ok(run)
}
