//! Harness mode: each pair's recorded texts go to a real harness binary as the model's tool
//! calls, emitted by the replay model server of `iec-harness`, and run for real; the final state
//! of each text's sandbox is checked as in replay mode, and the outcome is set beside replay
//! mode's for the launch that models that harness: `claude-code-VERSION-linux` for Claude Code
//! (`claude-code-2.1.72-linux` for 2.1.72), and for Codex and Gemini CLI the learned launch whose
//! `versions` range holds the version, as `iec check --harness NAME@VERSION` resolves it (Codex's
//! shell tool `exec_command` picks among the launches of one version: `codex@0.171.0` is
//! `codex-exec-command-linux`, `gemini-cli@0.61.0` is `gemini-cli-linux`).
//!
//! **Sessions.** Every pair variant (hazard, control) gets a fresh sandbox with the pair's
//! setup, a folder inside one root folder that is the harness's working directory. Each variant's
//! recorded text is one tool call, unchanged; how it gets into its own sandbox depends on the
//! harness:
//!
//! - **Claude Code** keeps the working directory from one call to the next (and a folder inside
//!   its own stays allowed), and its Bash tool has no working-directory parameter: the model
//!   emits two calls per variant, `cd 'SANDBOX'`, then the text. The `cd` calls must succeed; a
//!   launch that resets the working directory stops the bench with an error.
//! - **Codex** and **Gemini CLI** start every call in their own working directory (a `cd` does
//!   not carry over), and their shell tools take the call's directory as a parameter (Codex's
//!   `workdir`, Gemini CLI's `dir_path`, which must lie inside the workspace: the root folder
//!   is). The replay server puts each variant's sandbox there (`LaunchOptions::workdirs`), one
//!   call per variant. Each launch starts with a `pwd` call in a probe folder of its own: when its
//!   output is not that folder (a version whose tool has no such parameter, or ignores it) the
//!   bench stops with an error instead of running the texts in the wrong folder. The probe also
//!   keeps the texts off the first turn (Gemini CLI's start-up), and the replay model thinks
//!   [`Options::think`] before each call.
//!
//! All variants go through as few harness launches as [`Options::batch`] allows (Gemini CLI ends
//! a prompt after 100 model turns: at most [`GEMINI_MAX_VARIANTS`] per launch). A launch that
//! times out or ends early stops the bench with an error.
//!
//! **IntAct.** IntAct off is the harness as a user runs it. IntAct on adds the iec PreToolUse
//! hook ([`Options::hook`]), which repairs or refuses each call before the harness runs it: Claude
//! Code only. Codex 0.171.0 and Gemini CLI 0.61.0 have hook mechanisms of their own
//! (`PreToolUse`, `BeforeTool`), but iec has no hook for them (`iec hook` and `iec install` take
//! `claude-code`), so for them harness mode runs IntAct off only and says so in
//! [`HarnessReport::intact_on_unavailable`]; it never reports an "on" column it did not measure.
//!
//! **What is compared.** A variant passes when its sandbox's observables equal what `bash -c
//! TEXT` leaves in a fresh sandbox (replay mode's expected state). The `stdout` observable is
//! the command output the harness handed the model (Claude Code: the tool result without its
//! `<system-reminder>` blocks; Codex: after its `Output:` header; Gemini CLI: the `Output:` part
//! before its trailer lines), and both sides are compared without trailing white space: the
//! harnesses trim the output they report. Each pair agrees when every variant measured (hazard
//! and control, IntAct off and, when run, on) passes or fails as replay mode's emulated outcome
//! on the same launch says.

use crate::data::{Pair, Suite};
use crate::replay::{pair_reference, ItemResult, Report};
use crate::sandbox::Sandbox;
use iec_harness::agree::strip_reminders;
use iec_harness::codex::output_text;
use iec_harness::gemini::{run_gemini_with, GeminiOptions};
use iec_harness::gemini_api::shell_output;
use iec_harness::server::ToolResult;
use iec_harness::{
    run_claude_code_with, run_codex_with, HarnessRun, LaunchOptions, PayloadResult, RunOptions,
};
use iec_launches::Catalog;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The harness `--mode harness` drives by default.
pub const DEFAULT_HARNESS: &str = "claude-code@2.1.72";

/// Pair variants per harness launch by default (two calls each). Fewer launches are not
/// faster: every request carries the whole conversation, so a launch's cost grows faster than
/// its calls (`BENCHMARKS.md`: the 150 variants of IntAct off took 90 s in one launch, 45 s in
/// two, 40 s in three or six).
pub const DEFAULT_BATCH: usize = 50;

/// The most pair variants one Gemini CLI launch takes (one call each, and the `pwd` probe): it
/// ends a prompt after 100 model turns.
pub const GEMINI_MAX_VARIANTS: usize = 89;

/// The replay model's thinking time before each call for Codex and Gemini CLI by default: Gemini
/// CLI 0.61.0 can race its own start-up when the model answers at once.
pub const DEFAULT_THINK: Duration = Duration::from_millis(50);

/// The harnesses harness mode drives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Kind {
    /// Claude Code: a `cd` call before each text.
    ClaudeCode,
    /// Codex: each text in its sandbox through `exec_command`'s `workdir`.
    Codex,
    /// Gemini CLI: each text in its sandbox through `run_shell_command`'s `dir_path`.
    GeminiCli,
}

impl Kind {
    /// How people call it.
    pub fn title(self) -> &'static str {
        match self {
            Kind::ClaudeCode => "Claude Code",
            Kind::Codex => "Codex",
            Kind::GeminiCli => "Gemini CLI",
        }
    }
}

/// What Claude Code says in a tool result when it moved the shell back to its own working
/// directory (a `cd` outside the folders it allows).
const CWD_RESET: &str = "Shell cwd was reset";

/// Errors that stop harness mode.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Replay mode's part (the expected states) failed.
    #[error(transparent)]
    Replay(#[from] crate::replay::Error),
    /// A sandbox could not be made.
    #[error("sandbox: {0}")]
    Io(#[from] std::io::Error),
    /// The harness could not be installed or run, or a launch did not run every call.
    #[error("{0}")]
    Harness(String),
}

/// How to run harness mode.
#[derive(Debug, Clone)]
pub struct Options {
    /// The harness, as given (`claude-code@2.1.72`).
    pub harness: String,
    /// Which harness it is.
    pub kind: Kind,
    /// Its version (`2.1.72`).
    pub version: String,
    /// The launch that models it in replay mode (`claude-code-2.1.72-linux`).
    pub launch: String,
    /// A prebuilt harness (a `.js` file runs under `node`); `None` installs the pinned npm
    /// package into iec's cache.
    pub bin: Option<PathBuf>,
    /// The argv probe the driver links into its sandbox; `None` finds it as `iec-harness` does.
    pub probe: Option<PathBuf>,
    /// The PreToolUse hook command of IntAct on (e.g. `'/path/to/iec' hook claude-code --launch
    /// claude-code-2.1.72-linux`); `None` runs IntAct off only. Claude Code only.
    pub hook: Option<String>,
    /// Pair variants per harness launch.
    pub batch: usize,
    /// The replay model's thinking time before each call (Codex and Gemini CLI;
    /// [`DEFAULT_THINK`]).
    pub think: Duration,
}

impl Options {
    /// Options for `spec`: `claude-code@VERSION`, whose launch `claude-code-VERSION-linux` must be
    /// in `cat`, or `codex@VERSION` / `gemini-cli@VERSION`, whose launch is the one of `cat` whose
    /// version range holds VERSION on Linux (as `iec check --harness` resolves it; for Codex the
    /// one of its shell tool `exec_command` when several hold it); IntAct off only, the default
    /// batch.
    pub fn new(spec: &str, cat: &Catalog) -> Result<Options, Error> {
        let unsupported = || {
            Error::Harness(format!(
                "harness mode drives Claude Code, Codex and Gemini CLI: expected claude-code@VERSION, \
                 codex@VERSION or gemini-cli@VERSION, got {spec:?}"
            ))
        };
        let (name, version) = spec
            .split_once('@')
            .filter(|(_, v)| !v.is_empty())
            .ok_or_else(unsupported)?;
        let (kind, launch) = match name {
            "claude-code" => {
                let launch = format!("claude-code-{version}-linux");
                if cat.get(&launch).is_err() {
                    return Err(Error::Harness(format!(
                        "no launch {launch} models {spec}: harness mode compares with replay mode on \
                         that launch (`iec launches` lists them)"
                    )));
                }
                (Kind::ClaudeCode, launch)
            }
            "codex" | "gemini-cli" => {
                let (kind, tool) = match name {
                    "codex" => (Kind::Codex, Some("exec_command")),
                    _ => (Kind::GeminiCli, None),
                };
                let (l, _) =
                    iec_launches::resolve::resolve(cat, name, "linux", version, tool).map_err(|e| {
                        Error::Harness(format!(
                            "no launch models {spec}: harness mode compares with replay mode on the \
                             launch whose version range holds it: {e}"
                        ))
                    })?;
                (kind, l.id.clone())
            }
            _ => return Err(unsupported()),
        };
        Ok(Options {
            harness: spec.to_string(),
            kind,
            version: version.to_string(),
            launch,
            bin: None,
            probe: None,
            hook: None,
            batch: DEFAULT_BATCH,
            think: DEFAULT_THINK,
        })
    }

    /// Why IntAct on cannot run for this harness (`None`: it can, through [`Options::hook`]).
    pub fn intact_unavailable(&self) -> Option<String> {
        let (title, mechanism) = match self.kind {
            Kind::ClaudeCode => return None,
            Kind::Codex => ("Codex", "PreToolUse hooks"),
            Kind::GeminiCli => ("Gemini CLI", "BeforeTool hooks"),
        };
        Some(format!(
            "not available for {}: {title} has {mechanism} of its own, but iec has no hook for it \
             (`iec hook` and `iec install` take claude-code only), so only IntAct off was run",
            self.harness
        ))
    }
}

/// Agreement over one IntAct mode.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    /// Pairs measured.
    pub items: usize,
    /// Pairs whose hazard and control both agree with the emulated outcome.
    pub agree: usize,
}

/// One variant whose measured outcome is not the emulated one.
#[derive(Debug, Clone, Serialize)]
pub struct Disagreement {
    /// The pair.
    pub item: String,
    /// `off` or `on`.
    pub intact: &'static str,
    /// `hazard` or `control`.
    pub variant: &'static str,
    /// Replay mode's outcome: `pass` or `fail`.
    pub emulated: &'static str,
    /// The real harness's outcome: `pass` or `fail`.
    pub measured: &'static str,
    /// What the real run showed: the observables that differ from the expected state, the
    /// harness's own record of the call and what its hook received when either is not the
    /// emitted text, what its bash received, and its tool result when it was an error.
    pub why: String,
    /// The text the model emitted (the recorded text).
    pub emitted: String,
    /// The call as the harness echoed it back to the model in its next request (its own record).
    pub echoed: Option<String>,
    /// The command the PreToolUse hook received (IntAct on; `None` off).
    pub hook_input: Option<String>,
}

/// One variant's measured outcome beside the emulated one.
#[derive(Debug, Clone, Serialize)]
pub struct VariantResult {
    /// The pair.
    pub item: String,
    /// `off` or `on`.
    pub intact: &'static str,
    /// `hazard` or `control`.
    pub variant: &'static str,
    /// Replay mode's outcome passes.
    pub emulated: bool,
    /// The real harness's outcome passes.
    pub measured: bool,
    /// The harness reported the call as an error (a failed command, or IntAct's refusal).
    pub tool_error: bool,
}

/// Harness mode's report for one harness.
#[derive(Debug, Clone, Serialize)]
pub struct HarnessReport {
    /// The harness (`claude-code@2.1.72`).
    pub harness: String,
    /// The launch replay mode emulates it with.
    pub launch: String,
    /// Pairs.
    pub items: usize,
    /// Pairs that agree in every mode run.
    pub agree: usize,
    /// IntAct off.
    pub intact_off: Agreement,
    /// IntAct on (the iec hook); `None` when it was not run.
    pub intact_on: Option<Agreement>,
    /// Why IntAct on was not run when the harness has no iec hook (Codex, Gemini CLI); `None`
    /// for Claude Code (IntAct on ran, or `--no-intact` left it out).
    pub intact_on_unavailable: Option<String>,
    /// Harness launches.
    pub sessions: usize,
    /// Tool calls the model emitted (Claude Code: two per variant; Codex, Gemini CLI: one per
    /// variant and one `pwd` probe per launch).
    pub calls: usize,
    /// Wall time of the harness launches and their checks.
    pub elapsed_ms: u128,
    /// Every variant that disagrees.
    pub disagreements: Vec<Disagreement>,
    /// Every variant (pairs × hazard/control × IntAct modes).
    pub results: Vec<VariantResult>,
}

/// One variant as the real harness left it.
struct Measured {
    pass: bool,
    tool_error: bool,
    why: String,
    echoed: Option<String>,
    hook_input: Option<String>,
}

const VARIANTS: [&str; 2] = ["hazard", "control"];

/// Runs every pair of `suite` through the harness of `opts` with IntAct off and, when
/// `opts.hook` is set, on (the two modes at once), and compares each variant with replay mode's
/// outcome in `replay` (a report with items, over `opts.launch`).
pub fn run(suite: &Suite, replay: &Report, opts: &Options) -> Result<HarnessReport, Error> {
    let started = Instant::now();
    if opts.hook.is_some() {
        if let Some(why) = opts.intact_unavailable() {
            return Err(Error::Harness(format!("IntAct on is {why}")));
        }
    }
    let emulated: BTreeMap<&str, &ItemResult> = replay
        .items
        .iter()
        .filter(|r| r.kind == "pair" && r.path == opts.launch)
        .map(|r| (r.id.as_str(), r))
        .collect();
    if let Some(p) = suite.pairs.iter().find(|p| !emulated.contains_key(p.id.as_str())) {
        return Err(Error::Harness(format!(
            "replay mode's report has no result for pair {} on {}",
            p.id, opts.launch
        )));
    }
    let mut wants = Vec::with_capacity(suite.pairs.len());
    for p in &suite.pairs {
        wants.push([pair_reference(p, &p.hazard)?, pair_reference(p, &p.control)?]);
    }
    let modes: &[bool] = if opts.hook.is_some() {
        &[false, true]
    } else {
        &[false]
    };
    let measured = std::thread::scope(|s| {
        let handles: Vec<_> = modes
            .iter()
            .map(|&on| {
                let wants = &wants;
                s.spawn(move || match opts.kind {
                    Kind::ClaudeCode => measure(&suite.pairs, wants, opts, on),
                    Kind::Codex | Kind::GeminiCli => measure_in_dirs(&suite.pairs, wants, opts),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect::<Result<Vec<_>, Error>>()
    })?;
    let mut report = HarnessReport {
        harness: opts.harness.clone(),
        launch: opts.launch.clone(),
        items: suite.pairs.len(),
        agree: 0,
        intact_off: Agreement { items: 0, agree: 0 },
        intact_on: None,
        intact_on_unavailable: opts.intact_unavailable(),
        sessions: measured.iter().map(|m| m.sessions).sum(),
        calls: measured.iter().map(|m| m.calls).sum(),
        elapsed_ms: 0,
        disagreements: vec![],
        results: vec![],
    };
    let mut pair_agrees = vec![true; suite.pairs.len()];
    for (&on, m) in modes.iter().zip(&measured) {
        let intact = if on { "on" } else { "off" };
        let mut agree = 0;
        for (i, p) in suite.pairs.iter().enumerate() {
            let e = emulated[p.id.as_str()];
            let want = match on {
                false => [e.off.pass, e.control_pass],
                true => [e.on.pass, e.control_on.pass],
            };
            let mut all = true;
            for (v, variant) in VARIANTS.iter().enumerate() {
                let got = &m.variants[2 * i + v];
                report.results.push(VariantResult {
                    item: p.id.clone(),
                    intact,
                    variant,
                    emulated: want[v],
                    measured: got.pass,
                    tool_error: got.tool_error,
                });
                if got.pass != want[v] {
                    all = false;
                    report.disagreements.push(Disagreement {
                        item: p.id.clone(),
                        intact,
                        variant,
                        emulated: pass_fail(want[v]),
                        measured: pass_fail(got.pass),
                        why: got.why.clone(),
                        emitted: if v == 0 {
                            p.hazard.clone()
                        } else {
                            p.control.clone()
                        },
                        echoed: got.echoed.clone(),
                        hook_input: got.hook_input.clone(),
                    });
                }
            }
            agree += all as usize;
            pair_agrees[i] &= all;
        }
        let a = Agreement {
            items: suite.pairs.len(),
            agree,
        };
        match on {
            false => report.intact_off = a,
            true => report.intact_on = Some(a),
        }
    }
    report.agree = pair_agrees.iter().filter(|a| **a).count();
    report.elapsed_ms = started.elapsed().as_millis();
    Ok(report)
}

fn pass_fail(pass: bool) -> &'static str {
    if pass {
        "pass"
    } else {
        "fail"
    }
}

/// Every variant of one IntAct mode, in pair order (hazard, then control).
struct ModeRun {
    variants: Vec<Measured>,
    sessions: usize,
    calls: usize,
}

/// The `cd` call into `dir`, single-quoted.
fn cd_call(dir: &std::path::Path) -> String {
    format!("cd '{}'", dir.display().to_string().replace('\'', r"'\''"))
}

/// Runs every variant of `pairs` through the harness with IntAct `on` or off, in launches of at
/// most `opts.batch` variants, and checks each sandbox against `wants`.
fn measure(
    pairs: &[Pair],
    wants: &[[BTreeMap<String, String>; 2]],
    opts: &Options,
    on: bool,
) -> Result<ModeRun, Error> {
    let root = tempfile::Builder::new().prefix("iec-bench-harness-").tempdir()?;
    let units: Vec<(usize, usize)> = (0..pairs.len()).flat_map(|i| [(i, 0), (i, 1)]).collect();
    let mut sandboxes = Vec::with_capacity(units.len());
    for &(i, v) in &units {
        let name = format!("{i:03}-{}-", VARIANTS[v]);
        sandboxes.push(Sandbox::new_in(root.path(), &name, &pairs[i].setup)?);
    }
    let mut out = ModeRun {
        variants: Vec::with_capacity(units.len()),
        sessions: 0,
        calls: 0,
    };
    let batch = opts.batch.max(1);
    for (c, chunk) in units.chunks(batch).enumerate() {
        let mut calls = Vec::with_capacity(2 * chunk.len());
        for (k, &(i, v)) in chunk.iter().enumerate() {
            calls.push(cd_call(sandboxes[c * batch + k].path()));
            calls.push(if v == 0 {
                pairs[i].hazard.clone()
            } else {
                pairs[i].control.clone()
            });
        }
        let refs: Vec<&str> = calls.iter().map(String::as_str).collect();
        let mut ro = RunOptions::new(&opts.version, opts.bin.clone(), &refs);
        // IntAct on: one hook command records what the hook received, then runs the iec hook.
        ro.hook_witness = on;
        ro.hook_command = if on { opts.hook.clone() } else { None };
        ro.launch.probe = opts.probe.clone();
        ro.launch.work_dir = Some(root.path().to_path_buf());
        ro.launch.timeout = Duration::from_secs(120) + Duration::from_secs(2) * refs.len() as u32;
        let run = run_claude_code_with(&ro).map_err(|e| Error::Harness(format!("{e:#}")))?;
        let mode = if on { "IntAct on" } else { "IntAct off" };
        session_ran(&run, &refs, mode)?;
        if !run.hook_stderr.is_empty() {
            return Err(Error::Harness(format!(
                "the IntAct hook wrote on stderr (it fails open, so IntAct was not applied): {}",
                clip(&run.hook_stderr)
            )));
        }
        out.sessions += 1;
        out.calls += refs.len();
        for (k, &(i, v)) in chunk.iter().enumerate() {
            let act = &run.results[2 * k + 1];
            let tool = act.tool_result.as_ref().expect("checked by session_ran");
            let sb = &mut sandboxes[c * batch + k];
            sb.push_stdout(strip_reminders(&tool.content).as_bytes());
            let got = sb.observe(&pairs[i].observe);
            let hook_input = act
                .hook_input
                .as_ref()
                .and_then(|v| v.get("command"))
                .and_then(|c| c.as_str())
                .map(String::from);
            // The wrapper's eval and what follows (the snapshot's path before it is the run's).
            let outer = act
                .outer
                .as_deref()
                .map(|o| o.find("eval ").map_or(o, |i| &o[i..]));
            out.variants
                .push(judge(&wants[i][v], &got, act, tool, hook_input, outer));
        }
    }
    drop(sandboxes);
    Ok(out)
}

/// One variant's outcome: its observables `got` against `want`, and when they differ, why (the
/// observables that differ, the harness's own record of the call and what its hook received when
/// either is not the emitted text, what its bash received (`outer`), its tool result when it was
/// an error).
fn judge(
    want: &BTreeMap<String, String>,
    got: &BTreeMap<String, String>,
    act: &PayloadResult,
    tool: &ToolResult,
    hook_input: Option<String>,
    outer: Option<&str>,
) -> Measured {
    let pass = same_state(want, got);
    let mut why = vec![];
    if !pass {
        for (key, w) in want {
            let g = got.get(key).map(String::as_str).unwrap_or_default();
            if !same_value(key, w, g) {
                why.push(format!("{key} is {:?}, bash -c gives {:?}", clip(g), clip(w)));
            }
        }
        if let Some(e) = act.echoed.as_ref().filter(|e| **e != act.emitted) {
            why.push(format!(
                "the harness changed the call before running anything: its own record of it (echoed to the model) is {:?}",
                clip(e)
            ));
        }
        if let Some(h) = hook_input.as_ref().filter(|h| **h != act.emitted) {
            why.push(format!(
                "its PreToolUse hook (IntAct) received {:?}, not the emitted text",
                clip(h)
            ));
        }
        why.push(format!("its bash received {:?}", outer.map(clip)));
        if tool.is_error {
            why.push(format!("tool result (error): {:?}", clip(&tool.content)));
        }
    }
    Measured {
        pass,
        tool_error: tool.is_error,
        why: why.join("; "),
        echoed: act.echoed.clone(),
        hook_input,
    }
}

/// The working directory of the `pwd` probe that starts each Codex or Gemini CLI launch, inside
/// the root folder.
const PWD_PROBE_DIR: &str = "pwd-probe";

/// The command output inside a tool result of `kind`.
fn command_output(kind: Kind, content: &str) -> String {
    match kind {
        Kind::ClaudeCode => strip_reminders(content),
        Kind::Codex => output_text(content),
        Kind::GeminiCli => shell_output(content).output,
    }
}

/// Runs every variant of `pairs` through Codex or Gemini CLI (IntAct off), one call per variant
/// in its own sandbox through the shell tool's working-directory parameter, after a `pwd` probe
/// per launch, in launches of at most `opts.batch` variants, and checks each sandbox against
/// `wants`.
fn measure_in_dirs(
    pairs: &[Pair],
    wants: &[[BTreeMap<String, String>; 2]],
    opts: &Options,
) -> Result<ModeRun, Error> {
    let root = tempfile::Builder::new().prefix("iec-bench-harness-").tempdir()?;
    let probe_dir = root.path().join(PWD_PROBE_DIR);
    std::fs::create_dir(&probe_dir)?;
    let units: Vec<(usize, usize)> = (0..pairs.len()).flat_map(|i| [(i, 0), (i, 1)]).collect();
    let mut sandboxes = Vec::with_capacity(units.len());
    for &(i, v) in &units {
        let name = format!("{i:03}-{}-", VARIANTS[v]);
        sandboxes.push(Sandbox::new_in(root.path(), &name, &pairs[i].setup)?);
    }
    let mut out = ModeRun {
        variants: Vec::with_capacity(units.len()),
        sessions: 0,
        calls: 0,
    };
    let batch = match opts.kind {
        Kind::GeminiCli => opts.batch.clamp(1, GEMINI_MAX_VARIANTS),
        _ => opts.batch.max(1),
    };
    for (c, chunk) in units.chunks(batch).enumerate() {
        let mut calls = vec!["pwd".to_string()];
        let mut dirs = vec![Some(probe_dir.clone())];
        for (k, &(i, v)) in chunk.iter().enumerate() {
            calls.push(if v == 0 {
                pairs[i].hazard.clone()
            } else {
                pairs[i].control.clone()
            });
            dirs.push(Some(sandboxes[c * batch + k].path().to_path_buf()));
        }
        let refs: Vec<&str> = calls.iter().map(String::as_str).collect();
        let mut lo = LaunchOptions::new(&opts.version, opts.bin.clone(), &refs);
        lo.workdirs = dirs;
        lo.probe = opts.probe.clone();
        lo.work_dir = Some(root.path().to_path_buf());
        lo.think = opts.think;
        lo.timeout = Duration::from_secs(120) + (Duration::from_secs(2) + opts.think) * refs.len() as u32;
        let run = match opts.kind {
            Kind::Codex => run_codex_with(&lo),
            _ => {
                let mut go = GeminiOptions::new(&opts.version, None, &[]);
                go.launch = lo;
                run_gemini_with(&go)
            }
        }
        .map_err(|e| Error::Harness(format!("{e:#}")))?;
        launch_ran(&run, &refs, opts.kind, &probe_dir)?;
        out.sessions += 1;
        out.calls += refs.len();
        for (k, &(i, _)) in chunk.iter().enumerate() {
            let act = &run.results[k + 1];
            let tool = act.tool_result.as_ref().expect("checked by launch_ran");
            let sb = &mut sandboxes[c * batch + k];
            sb.push_stdout(command_output(opts.kind, &tool.content).as_bytes());
            let got = sb.observe(&pairs[i].observe);
            let v = chunk[k].1;
            out.variants
                .push(judge(&wants[i][v], &got, act, tool, None, act.outer.as_deref()));
        }
    }
    drop(sandboxes);
    Ok(out)
}

/// A Codex or Gemini CLI launch of `calls` ran every call: no timeout, a tool result for each,
/// and the `pwd` probe (call 0) ran in `probe_dir`, so the harness honours the working-directory
/// parameter.
fn launch_ran(run: &HarnessRun, calls: &[&str], kind: Kind, probe_dir: &Path) -> Result<(), Error> {
    let title = kind.title();
    let fail = |what: String| {
        let tail: String = {
            let chars: Vec<char> = run.stderr.chars().collect();
            chars[chars.len().saturating_sub(2000)..].iter().collect()
        };
        Err(Error::Harness(format!(
            "{title} {}: {what}; its stderr ends:\n{tail}",
            run.version
        )))
    };
    if run.timed_out {
        return fail(format!("a launch of {} calls timed out", calls.len()));
    }
    if run.results.len() != calls.len() {
        return fail(format!("{} results for {} calls", run.results.len(), calls.len()));
    }
    for (k, r) in run.results.iter().enumerate() {
        if r.tool_result.is_none() {
            return fail(format!("no tool result for call {k} ({:?})", clip(calls[k])));
        }
    }
    let probe = run.results[0].tool_result.as_ref().expect("checked above");
    let printed = command_output(kind, &probe.content);
    let printed = printed.trim();
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    };
    if probe.is_error || !same(Path::new(printed), probe_dir) {
        let dir = probe_dir.display().to_string();
        let sent = iec_harness::server::echoed_input_in(&run.requests, 0).and_then(|v| {
            v.as_object()
                .map(|o| o.values().any(|x| x.as_str() == Some(dir.as_str())))
        });
        let how = match sent {
            Some(false) => {
                "the call went out without it: its shell tool declares no working-directory \
                            parameter the replay server knows (Codex `workdir`, Gemini CLI `dir_path` or \
                            `directory`)"
            }
            _ => "the harness ignored (or refused) the call's working-directory parameter",
        };
        return fail(format!(
            "the `pwd` probe in {dir} printed {:?} ({how}); harness mode does not run the texts in \
             the wrong folder",
            clip(&probe.content)
        ));
    }
    Ok(())
}

/// A launch of `calls` ran every call: no timeout, a tool result for each, every `cd` call
/// succeeded, and the harness never moved the shell back to its own working directory.
fn session_ran(run: &HarnessRun, calls: &[&str], mode: &str) -> Result<(), Error> {
    let fail = |what: String| {
        let tail: String = {
            let chars: Vec<char> = run.stderr.chars().collect();
            chars[chars.len().saturating_sub(2000)..].iter().collect()
        };
        Err(Error::Harness(format!(
            "Claude Code {} ({mode}): {what}; its stderr ends:\n{tail}",
            run.version
        )))
    };
    if run.timed_out {
        return fail(format!("a launch of {} calls timed out", calls.len()));
    }
    if run.results.len() != calls.len() {
        return fail(format!("{} results for {} calls", run.results.len(), calls.len()));
    }
    for (k, r) in run.results.iter().enumerate() {
        let Some(t) = &r.tool_result else {
            return fail(format!("no tool result for call {k} ({:?})", clip(calls[k])));
        };
        if k % 2 == 0 && t.is_error {
            return fail(format!("the call {:?} failed: {:?}", calls[k], clip(&t.content)));
        }
        if t.content.contains(CWD_RESET) {
            return fail(format!(
                "the harness reset the working directory at call {k} ({:?}): {:?}",
                clip(calls[k]),
                clip(&t.content)
            ));
        }
    }
    Ok(())
}

/// Two values of observable `key` are the same: byte for byte, but `stdout` without trailing
/// white space (the harness trims the output it reports).
fn same_value(key: &str, want: &str, got: &str) -> bool {
    if key == "stdout" {
        want.trim_end() == got.trim_end()
    } else {
        want == got
    }
}

/// Every observable of `want` has the same value in `got`.
fn same_state(want: &BTreeMap<String, String>, got: &BTreeMap<String, String>) -> bool {
    want.len() == got.len()
        && want
            .iter()
            .all(|(k, w)| got.get(k).is_some_and(|g| same_value(k, w, g)))
}

/// At most 160 characters of `s`, with the count of those left out.
fn clip(s: &str) -> String {
    const MAX: usize = 160;
    let n = s.chars().count();
    if n <= MAX {
        return s.to_string();
    }
    let head: String = s.chars().take(MAX).collect();
    format!("{head}… ({} more characters)", n - MAX)
}

#[cfg(test)]
mod tests {
    use super::*;
    use iec_harness::openai::call_id;
    use iec_harness::{DirectRun, Launcher, RecordedRequest};
    use serde_json::json;

    /// A Codex launch of `pwd` then `true` whose probe printed `printed`, and whose request for
    /// the next turn echoed the probe call's `arguments`.
    fn codex_run(printed: &str, arguments: serde_json::Value) -> HarnessRun {
        let result = |k: usize, output: &str| PayloadResult {
            payload: String::new(),
            emitted: String::new(),
            echoed: None,
            outer: None,
            bash_strings: vec![],
            probe: vec![],
            hook_input: None,
            tool_result: Some(ToolResult {
                tool_use_id: call_id(k),
                is_error: false,
                content: format!("Chunk ID: 1\nProcess exited with code 0\nOutput:\n{output}"),
            }),
            direct: DirectRun {
                bash_strings: vec![],
                probe: vec![],
                stdout: String::new(),
                stderr: String::new(),
                exit_code: Some(0),
                timed_out: false,
            },
        };
        HarnessRun {
            version: "0.171.0".into(),
            launcher: Launcher::for_bin(Path::new("codex")),
            results: vec![result(0, printed), result(1, "")],
            exit_code: Some(0),
            timed_out: false,
            elapsed_ms: 0,
            stdout: String::new(),
            stderr: String::new(),
            requests: vec![RecordedRequest {
                at_ms: 0,
                method: "POST".into(),
                uri: "/v1/responses".into(),
                body: json!({"input": [{"type": "function_call", "call_id": call_id(0),
                    "name": "exec_command", "arguments": arguments.to_string()}]}),
                raw: None,
                role: "main:1".into(),
            }],
            unknown_paths: vec![],
            bash_log: vec![],
            probe_log: vec![],
            bash_argvs: vec![],
            hook_log: vec![],
            hook_stderr: String::new(),
            session_logs: vec![],
            sandbox_root: PathBuf::new(),
        }
    }

    #[test]
    fn a_harness_that_runs_the_probe_elsewhere_stops_the_bench() {
        let root = tempfile::tempdir().unwrap();
        let probe = root.path().join(PWD_PROBE_DIR);
        std::fs::create_dir(&probe).unwrap();
        let dir = probe.display().to_string();
        let calls = ["pwd", "true"];
        // In its folder: the launch counts.
        let run = codex_run(&format!("{dir}\n"), json!({"cmd": "pwd", "workdir": dir}));
        launch_ran(&run, &calls, Kind::Codex, &probe).unwrap();
        // The directory went out, and the harness ran the call in its own folder.
        let run = codex_run(
            &format!("{}\n", root.path().display()),
            json!({"cmd": "pwd", "workdir": dir}),
        );
        let e = launch_ran(&run, &calls, Kind::Codex, &probe)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with(&format!("Codex 0.171.0: the `pwd` probe in {dir} printed "))
                && e.contains("the harness ignored (or refused) the call's working-directory parameter")
                && e.contains("harness mode does not run the texts in the wrong folder"),
            "{e}"
        );
        // The tool declared no such parameter, so the directory never went out.
        let run = codex_run(&format!("{}\n", root.path().display()), json!({"cmd": "pwd"}));
        let e = launch_ran(&run, &calls, Kind::Codex, &probe)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains(
                "the call went out without it: its shell tool declares no working-directory parameter"
            ),
            "{e}"
        );
        // A launch that lost a call's result is an error before the probe is read.
        let mut run = codex_run(&format!("{dir}\n"), json!({"cmd": "pwd", "workdir": dir}));
        run.results[1].tool_result = None;
        let e = launch_ran(&run, &calls, Kind::Codex, &probe)
            .unwrap_err()
            .to_string();
        assert!(e.contains("no tool result for call 1 (\"true\")"), "{e}");
    }

    #[test]
    fn each_harness_reports_the_command_output() {
        let codex = "Chunk ID: 1\nWall time: 0.0 seconds\nProcess exited with code 0\nOutput:\nfoo \\\n";
        assert_eq!(command_output(Kind::Codex, codex), "foo \\\n");
        let gemini =
            "<untrusted_context>\nOutput: foo\nExit Code: 1\nProcess Group PGID: 9\n</untrusted_context>";
        assert_eq!(command_output(Kind::GeminiCli, gemini), "foo");
    }
}
