//! Harness mode: each item's recorded calls go to a real harness binary as the model's tool
//! calls, emitted by the replay model server of `iec-harness`, and run for real; the final state
//! of each item's sandbox is checked as in replay mode, and the outcome is set beside replay
//! mode's for the launch that models that harness: `claude-code-VERSION-linux` for Claude Code
//! (`claude-code-2.1.72-linux` for 2.1.72), and for Codex and Gemini CLI the learned launch whose
//! `versions` range holds the version, as `iec check --harness NAME@VERSION` resolves it (Codex's
//! shell tool `exec_command` picks among the launches of one version: `codex@0.171.0` is
//! `codex-exec-command-linux`, `gemini-cli@0.61.0` is `gemini-cli-linux`).
//!
//! **Items.** Every pair (two units: its hazard and its control, one call each), every chain
//! with recorded steps and lookup tables (one unit: its steps, in order) and every task (one
//! unit: its recorded actions, in order). Each unit gets a fresh sandbox with its item's setup
//! (per IntAct mode), a folder inside one root folder that is the harness's working directory,
//! and its calls run there one after the other in the same launch.
//!
//! - **Tasks**: each action is one call, unchanged; the task's check reads the sandbox's final
//!   state. Git runs with replay mode's fixed identity and date: harness mode passes
//!   [`crate::sandbox::FIXED_ENV`] to the harness (`LaunchOptions::env`), whose shells inherit it.
//! - **Chains**: each step's recorded command text (`TOOL --PARAM VALUE …`) is one call. The
//!   lookup-table tools are programs on the harness's `PATH` (`LaunchOptions::tools`, linked
//!   beside the argv probe; [`crate::chain::HARNESS_TOOL_PROGRAM`]) that record the argv they
//!   receive in the sandbox they run in, and a step's output is what its table gives for that
//!   argv. In replay mode the recorded texts are fixed, a later step carrying the recorded
//!   output of the step before. Here a later step's call is decided when its turn comes
//!   (`LaunchOptions::next_command`), from what the previous step's tool actually received: the
//!   recorded text when that gives the recorded output; the call rebuilt with the output it gives
//!   (single-quoted) when it gives another; and when it gives none (no row for what the tool
//!   received, or the harness never ran the tool) the model stops the chain: its remaining turns
//!   are [`CHAIN_STOPPED`] (no tool runs), so the later steps read `<TOOL not called>`, and the
//!   result's `stopped` says after which step and why. A step's output is computed from the
//!   sandbox's tool log, not printed by the tool, so the harness's tool result for a step is
//!   empty. A chain passes only when every step's tool received its recorded arguments, as in
//!   replay mode, so the pass/fail of a chain is comparable; the steps after a failing one
//!   differ (replay mode still delivers them with the recorded output).
//!
//! **Sessions.** How a call gets into its unit's sandbox depends on the harness:
//!
//! - **Claude Code** keeps the working directory from one call to the next (and a folder inside
//!   its own stays allowed), and its Bash tool has no working-directory parameter: the model
//!   emits a `cd 'SANDBOX'` call before each unit's calls. The `cd` calls must succeed; a
//!   launch that resets the working directory stops the bench with an error. (A recorded
//!   action that itself changes directory would carry over to the unit's next action, as it
//!   does for a real agent; replay mode starts each action in the sandbox. No built-in task
//!   does.)
//! - **Codex** and **Gemini CLI** start every call in their own working directory (a `cd` does
//!   not carry over), and their shell tools take the call's directory as a parameter (Codex's
//!   `workdir`, Gemini CLI's `dir_path`, which must lie inside the workspace: the root folder
//!   is). The replay server puts each call's unit sandbox there (`LaunchOptions::workdirs`).
//!   Each launch starts with a `pwd` call in a probe folder of its own: when its output is not
//!   that folder (a version whose tool has no such parameter, or ignores it) the bench stops with
//!   an error instead of running the texts in the wrong folder. The probe also keeps the texts
//!   off the first turn (Gemini CLI's start-up), and the replay model thinks [`Options::think`]
//!   before each call.
//!
//! Units go through as few harness launches as [`Options::batch`] allows, a unit's calls never
//! split between launches: at most `2 × batch` calls per launch for Claude Code, `batch` for
//! Codex, and at most [`GEMINI_MAX_VARIANTS`] for Gemini CLI (it ends a prompt after 100 model
//! turns). A launch that times out or ends early stops the bench with an error.
//!
//! **IntAct.** IntAct off is the harness as a user runs it. IntAct on adds the iec PreToolUse
//! hook ([`Options::hook`]), which repairs or refuses each call before the harness runs it: Claude
//! Code only. Codex 0.171.0 and Gemini CLI 0.61.0 have hook mechanisms of their own
//! (`PreToolUse`, `BeforeTool`), but iec has no hook for them (`iec hook` and `iec install` take
//! `claude-code`), so for them harness mode runs IntAct off only and says so in
//! [`HarnessReport::intact_on_unavailable`]; it never reports an "on" column it did not measure.
//!
//! **What is compared.** A pair variant or a task passes when its sandbox's observables equal
//! what `bash -c` of each of its texts leaves in a fresh sandbox (replay mode's expected state);
//! a chain passes when every step's tool received its recorded arguments. The `stdout`
//! observable is the command output the harness handed the model (Claude Code: the tool result
//! without its `<system-reminder>` blocks; Codex: after its `Output:` header; Gemini CLI: the
//! `Output:` part before its trailer lines), each call's output without trailing white space
//! (the harnesses trim the output they report), one per line, on both sides. An item agrees
//! when every unit measured (a pair's hazard and control; a chain's steps; a task's actions),
//! IntAct off and, when run, on, passes or fails as replay mode's emulated outcome on the same
//! launch says (pairs: `off.pass`, `control_pass`, `on.pass`, `control_on.pass`; chains and
//! tasks: `off.pass`, `on.pass`).

use crate::chain::Chain;
use crate::data::{Observable, Suite};
use crate::replay::{ItemResult, Report};
use crate::sandbox::{Sandbox, Tools, TOOL_LOG};
use iec_harness::agree::strip_reminders;
use iec_harness::codex::output_text;
use iec_harness::gemini::{run_gemini_with, GeminiOptions};
use iec_harness::gemini_api::shell_output;
use iec_harness::server::{NextCommand, ToolResult};
use iec_harness::{
    run_claude_code_with, run_codex_with, HarnessRun, LaunchOptions, PayloadResult, RunOptions,
};
use iec_launches::Catalog;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The harness `--mode harness` drives by default.
pub const DEFAULT_HARNESS: &str = "claude-code@2.1.72";

/// The size of a harness launch by default, in pair variants: at most `2 × batch` calls for
/// Claude Code (a pair variant is two), `batch` calls for Codex and Gemini CLI (one); a
/// chain's or task's calls count one each (and Claude Code's `cd`). Fewer launches are not
/// faster: every request carries the whole conversation, so a launch's cost grows faster than
/// its calls (`BENCHMARKS.md`: the 150 variants of IntAct off took 90 s in one launch, 45 s in
/// two, 40 s in three or six).
pub const DEFAULT_BATCH: usize = 50;

/// The most calls one Gemini CLI launch takes besides the `pwd` probe (a pair variant is one,
/// a chain or task one per step or action): it ends a prompt after 100 model turns.
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
    /// The size of a harness launch, in pair variants ([`DEFAULT_BATCH`] says how it counts
    /// calls).
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
    /// Items measured.
    pub items: usize,
    /// Items whose every variant (pairs: hazard and control; chains, tasks: the recorded
    /// calls) agrees with the emulated outcome.
    pub agree: usize,
}

/// The figures of one kind of item (`pair`, `chain`, `task`).
#[derive(Debug, Clone, Serialize)]
pub struct KindSummary {
    /// Items of this kind.
    pub items: usize,
    /// Those that agree in every mode run.
    pub agree: usize,
    /// IntAct off.
    pub intact_off: Agreement,
    /// IntAct on; `None` when it was not run.
    pub intact_on: Option<Agreement>,
}

/// One variant whose measured outcome is not the emulated one.
#[derive(Debug, Clone, Serialize)]
pub struct Disagreement {
    /// The item.
    pub item: String,
    /// `pair`, `chain` or `task`.
    pub kind: &'static str,
    /// `off` or `on`.
    pub intact: &'static str,
    /// `hazard` or `control` (pairs), `steps` (chains), `actions` (tasks).
    pub variant: &'static str,
    /// Replay mode's outcome: `pass` or `fail`.
    pub emulated: &'static str,
    /// The real harness's outcome: `pass` or `fail`.
    pub measured: &'static str,
    /// What the real run showed: the observables that differ from the expected state, the
    /// harness's own record of a call and what its hook received when either is not the
    /// emitted text, what its bash received, its tool result when it was an error, and for a
    /// chain the step after which the model stopped (its tool gave no output).
    pub why: String,
    /// The text the model emitted (a pair's recorded text; chains and tasks: every call, one
    /// per line, also in [`Disagreement::calls`]).
    pub emitted: String,
    /// Chains and tasks: every call the model emitted, in order (a chain's step after a
    /// changed one is built from what actually ran); empty for pairs.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub calls: Vec<String>,
    /// The call as the harness echoed it back to the model in its next request (its own
    /// record); chains and tasks: the first call whose record is not the emitted text.
    pub echoed: Option<String>,
    /// The command the PreToolUse hook received (IntAct on; `None` off); chains and tasks: the
    /// first call whose hook input is not the emitted text.
    pub hook_input: Option<String>,
}

/// One variant's measured outcome beside the emulated one.
#[derive(Debug, Clone, Serialize)]
pub struct VariantResult {
    /// The item.
    pub item: String,
    /// `pair`, `chain` or `task`.
    pub kind: &'static str,
    /// `off` or `on`.
    pub intact: &'static str,
    /// `hazard` or `control` (pairs), `steps` (chains), `actions` (tasks).
    pub variant: &'static str,
    /// Replay mode's outcome passes.
    pub emulated: bool,
    /// The real harness's outcome passes.
    pub measured: bool,
    /// The harness reported a call as an error (a failed command, or IntAct's refusal).
    pub tool_error: bool,
    /// Chains: why the model stopped the chain before its last step (a step's tool gave no
    /// output, so the later steps were not called).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
}

/// Harness mode's report for one harness.
#[derive(Debug, Clone, Serialize)]
pub struct HarnessReport {
    /// The harness (`claude-code@2.1.72`).
    pub harness: String,
    /// The launch replay mode emulates it with.
    pub launch: String,
    /// Items (pairs, chains and tasks).
    pub items: usize,
    /// Items that agree in every mode run.
    pub agree: usize,
    /// IntAct off.
    pub intact_off: Agreement,
    /// IntAct on (the iec hook); `None` when it was not run.
    pub intact_on: Option<Agreement>,
    /// Why IntAct on was not run when the harness has no iec hook (Codex, Gemini CLI); `None`
    /// for Claude Code (IntAct on ran, or `--no-intact` left it out).
    pub intact_on_unavailable: Option<String>,
    /// The same figures per kind of item (`pair`, `chain`, `task`; kinds with no item left out).
    pub kinds: BTreeMap<&'static str, KindSummary>,
    /// Harness launches.
    pub sessions: usize,
    /// Tool calls the model emitted (Claude Code: a `cd` call per sandbox, then its calls;
    /// Codex, Gemini CLI: its calls, and one `pwd` probe per launch).
    pub calls: usize,
    /// Wall time of the harness launches and their checks.
    pub elapsed_ms: u128,
    /// Every variant that disagrees.
    pub disagreements: Vec<Disagreement>,
    /// Every variant (items × variants × IntAct modes).
    pub results: Vec<VariantResult>,
}

/// One unit as the real harness left it.
struct Measured {
    pass: bool,
    tool_error: bool,
    why: String,
    echoed: Option<String>,
    hook_input: Option<String>,
    /// Every call emitted, in order.
    calls: Vec<String>,
    /// Why a chain stopped.
    stopped: Option<String>,
}

const VARIANTS: [&str; 2] = ["hazard", "control"];

/// What decides a unit: observables of its sandbox, or a chain's tool log.
#[derive(Clone, Copy)]
enum Check<'s> {
    /// These observables (pairs, tasks); `stdout` is the harness's tool results.
    Observe(&'s [Observable]),
    /// What each step computed from the argv its tool received ([`crate::chain::observed`]).
    Chain(&'s Chain),
}

/// One sandbox of harness mode: a pair variant, a task or a chain, with its calls.
struct Unit<'s> {
    /// `hazard`, `control`, `steps` or `actions`.
    variant: &'static str,
    /// Its calls as recorded (a chain's later steps may be rebuilt from what ran).
    texts: Vec<&'s str>,
    setup: &'s BTreeMap<String, String>,
    check: Check<'s>,
    /// The expected state.
    want: BTreeMap<String, String>,
}

impl Unit<'_> {
    /// The unit's observables in `sb` after its calls, whose command outputs were `outputs`.
    fn observe(&self, sb: &Sandbox, outputs: &[String]) -> BTreeMap<String, String> {
        match self.check {
            Check::Chain(c) => crate::chain::observed(c, &sb.tool_log()),
            Check::Observe(o) => {
                let mut got = sb.observe(o);
                if let Some(s) = got.get_mut("stdout") {
                    *s = joined_outputs(outputs);
                }
                got
            }
        }
    }
}

/// The `stdout` observable of several calls: each call's output without trailing white space
/// (the harnesses trim what they report), one per line.
fn joined_outputs<S: AsRef<str>>(outputs: &[S]) -> String {
    outputs
        .iter()
        .map(|o| o.as_ref().trim_end())
        .collect::<Vec<_>>()
        .join("\n")
}

/// The expected state of a pair variant or a task: what `bash -c` of each text leaves in a fresh
/// sandbox with `setup` (as replay mode computes it), `stdout` as [`joined_outputs`] of each
/// text's output.
fn unit_reference(
    setup: &BTreeMap<String, String>,
    texts: &[&str],
    observe: &[Observable],
) -> Result<BTreeMap<String, String>, Error> {
    let mut sb = Sandbox::new(setup, None)?;
    let mut outputs = vec![];
    for t in texts {
        let o = sb.run_captured(&["bash".to_string(), "-c".to_string(), t.to_string()], false)?;
        outputs.push(String::from_utf8_lossy(&o.stdout).into_owned());
    }
    let mut want = sb.observe(observe);
    if let Some(s) = want.get_mut("stdout") {
        *s = joined_outputs(&outputs);
    }
    Ok(want)
}

/// An item of harness mode: its id, kind, replay mode's result and its units' indices.
struct Entry<'s> {
    id: &'s str,
    kind: &'static str,
    emulated: &'s ItemResult,
    units: Vec<usize>,
}

/// Runs every pair, chain (with recorded steps and tables) and task of `suite` through the
/// harness of `opts` with IntAct off and, when `opts.hook` is set, on (the two modes at once),
/// and compares each with replay mode's outcome in `replay` (a report with items, over
/// `opts.launch`).
pub fn run(suite: &Suite, replay: &Report, opts: &Options) -> Result<HarnessReport, Error> {
    let started = Instant::now();
    if opts.hook.is_some() {
        if let Some(why) = opts.intact_unavailable() {
            return Err(Error::Harness(format!("IntAct on is {why}")));
        }
    }
    let emulated: BTreeMap<(&str, &str), &ItemResult> = replay
        .items
        .iter()
        .filter(|r| r.path == opts.launch)
        .map(|r| ((r.kind, r.id.as_str()), r))
        .collect();
    let find = |kind: &'static str, id: &str| {
        emulated.get(&(kind, id)).copied().ok_or_else(|| {
            Error::Harness(format!(
                "replay mode's report has no result for {kind} {id} on {}",
                opts.launch
            ))
        })
    };
    let mut entries: Vec<Entry> = vec![];
    let mut units: Vec<Unit> = vec![];
    for p in &suite.pairs {
        let e = find("pair", &p.id)?;
        let mut ids = vec![];
        for (v, text) in VARIANTS.iter().zip([&p.hazard, &p.control]) {
            ids.push(units.len());
            units.push(Unit {
                variant: v,
                texts: vec![text.as_str()],
                setup: &p.setup,
                check: Check::Observe(&p.observe),
                want: unit_reference(&p.setup, &[text.as_str()], &p.observe)?,
            });
        }
        entries.push(Entry {
            id: &p.id,
            kind: "pair",
            emulated: e,
            units: ids,
        });
    }
    static NO_SETUP: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();
    for c in suite.chains.iter().filter(|c| c.replayable()) {
        let e = find("chain", &c.id)?;
        entries.push(Entry {
            id: &c.id,
            kind: "chain",
            emulated: e,
            units: vec![units.len()],
        });
        units.push(Unit {
            variant: "steps",
            texts: c.steps.iter().map(|s| s.command.as_str()).collect(),
            setup: NO_SETUP.get_or_init(BTreeMap::new),
            check: Check::Chain(c),
            want: crate::chain::expected(c),
        });
    }
    for t in &suite.tasks {
        let e = find("task", &t.id)?;
        let texts: Vec<&str> = t.actions.iter().map(String::as_str).collect();
        entries.push(Entry {
            id: &t.id,
            kind: "task",
            emulated: e,
            units: vec![units.len()],
        });
        units.push(Unit {
            want: unit_reference(&t.setup, &texts, &t.observe)?,
            variant: "actions",
            texts,
            setup: &t.setup,
            check: Check::Observe(&t.observe),
        });
    }
    // The chains' tool programs, on the harness's PATH.
    let tools = Tools::with_program(
        suite
            .chains
            .iter()
            .filter(|c| c.replayable())
            .flat_map(|c| c.tools.keys().map(String::as_str)),
        crate::chain::HARNESS_TOOL_PROGRAM,
    )?;
    let mut tool_paths: Vec<PathBuf> = suite
        .chains
        .iter()
        .filter(|c| c.replayable())
        .flat_map(|c| c.tools.keys().map(|t| tools.path().join(t)))
        .collect();
    tool_paths.sort();
    tool_paths.dedup();
    let modes: &[bool] = if opts.hook.is_some() {
        &[false, true]
    } else {
        &[false]
    };
    let measured = std::thread::scope(|s| {
        let handles: Vec<_> = modes
            .iter()
            .map(|&on| {
                let (units, tool_paths) = (&units, &tool_paths);
                s.spawn(move || match opts.kind {
                    Kind::ClaudeCode => measure(units, tool_paths, opts, on),
                    Kind::Codex | Kind::GeminiCli => measure_in_dirs(units, tool_paths, opts),
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect::<Result<Vec<_>, Error>>()
    })?;
    drop(tools);
    let mut report = HarnessReport {
        harness: opts.harness.clone(),
        launch: opts.launch.clone(),
        items: entries.len(),
        agree: 0,
        intact_off: Agreement { items: 0, agree: 0 },
        intact_on: None,
        intact_on_unavailable: opts.intact_unavailable(),
        kinds: BTreeMap::new(),
        sessions: measured.iter().map(|m| m.sessions).sum(),
        calls: measured.iter().map(|m| m.calls).sum(),
        elapsed_ms: 0,
        disagreements: vec![],
        results: vec![],
    };
    let mut item_agrees = vec![true; entries.len()];
    let mut by_mode: Vec<Vec<bool>> = vec![];
    for (&on, m) in modes.iter().zip(&measured) {
        let intact = if on { "on" } else { "off" };
        let mut agrees = vec![];
        for (i, e) in entries.iter().enumerate() {
            let r = e.emulated;
            let mut all = true;
            for &u in &e.units {
                let unit = &units[u];
                let want = match (unit.variant, on) {
                    ("control", false) => r.control_pass,
                    ("control", true) => r.control_on.pass,
                    (_, false) => r.off.pass,
                    (_, true) => r.on.pass,
                };
                let got = &m.units[u];
                report.results.push(VariantResult {
                    item: e.id.to_string(),
                    kind: e.kind,
                    intact,
                    variant: unit.variant,
                    emulated: want,
                    measured: got.pass,
                    tool_error: got.tool_error,
                    stopped: got.stopped.clone(),
                });
                if got.pass != want {
                    all = false;
                    report.disagreements.push(Disagreement {
                        item: e.id.to_string(),
                        kind: e.kind,
                        intact,
                        variant: unit.variant,
                        emulated: pass_fail(want),
                        measured: pass_fail(got.pass),
                        why: got.why.clone(),
                        emitted: got.calls.join("\n"),
                        calls: if e.kind == "pair" {
                            vec![]
                        } else {
                            got.calls.clone()
                        },
                        echoed: got.echoed.clone(),
                        hook_input: got.hook_input.clone(),
                    });
                }
            }
            agrees.push(all);
            item_agrees[i] &= all;
        }
        let a = Agreement {
            items: entries.len(),
            agree: agrees.iter().filter(|a| **a).count(),
        };
        match on {
            false => report.intact_off = a,
            true => report.intact_on = Some(a),
        }
        by_mode.push(agrees);
    }
    report.agree = item_agrees.iter().filter(|a| **a).count();
    for kind in ["pair", "chain", "task"] {
        let mine: Vec<usize> = (0..entries.len()).filter(|&i| entries[i].kind == kind).collect();
        if mine.is_empty() {
            continue;
        }
        let count = |v: &[bool]| mine.iter().filter(|&&i| v[i]).count();
        let agreement = |k: usize| Agreement {
            items: mine.len(),
            agree: count(&by_mode[k]),
        };
        report.kinds.insert(
            kind,
            KindSummary {
                items: mine.len(),
                agree: count(&item_agrees),
                intact_off: agreement(0),
                intact_on: (modes.len() > 1).then(|| agreement(1)),
            },
        );
    }
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

/// Every unit of one IntAct mode, in unit order.
struct ModeRun {
    units: Vec<Measured>,
    sessions: usize,
    calls: usize,
}

/// The `cd` call into `dir`, single-quoted.
fn cd_call(dir: &std::path::Path) -> String {
    format!("cd '{}'", dir.display().to_string().replace('\'', r"'\''"))
}

/// `s` single-quoted for bash.
fn single_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// What the model emits for a chain's step once its chain has stopped (a step's tool gave no
/// output, so there is nothing to call the next tool with): a call that runs no tool, keeping
/// the launch's turns in step.
pub const CHAIN_STOPPED: &str = "true";

/// How far one chain got in a launch, as the model sees it.
#[derive(Default)]
struct ChainState {
    /// The tool log's record count when each step's call was decided.
    starts: Vec<usize>,
    /// Why the chain stopped (the step whose tool gave no output).
    stopped: Option<String>,
}

/// One turn of a launch: a call as scripted, or a chain's step decided from what ran.
#[derive(Clone)]
enum Turn {
    Fixed,
    Step {
        chain: Arc<Chain>,
        state: Arc<Mutex<ChainState>>,
        step: usize,
        dir: PathBuf,
    },
}

/// The call of a chain's `step` when its turn comes: step 1 as recorded; a later step as
/// recorded when the previous step's tool received arguments whose row gives the recorded
/// output, rebuilt with the output that row gives when it gives another, and
/// [`CHAIN_STOPPED`] once a step's tool gave no output (no row for what it received, or it was
/// not called, or called more than once).
fn chain_step(c: &Chain, st: &mut ChainState, step: usize, dir: &Path, scripted: &str) -> String {
    let calls = crate::chain::parse_log(&std::fs::read(dir.join(TOOL_LOG)).unwrap_or_default());
    let start_prev = st.starts.last().copied();
    st.starts.push(calls.len());
    if step == 0 {
        return scripted.to_string();
    }
    if st.stopped.is_some() {
        return CHAIN_STOPPED.to_string();
    }
    let prev = &c.steps[step - 1];
    let since = &calls[start_prev.unwrap_or(0).min(calls.len())..];
    let out = match since {
        [(name, argv)] if *name == prev.tool => crate::chain::arguments(argv)
            .and_then(|a| c.table(&prev.tool)?.output(&a).map(str::to_string))
            .ok_or_else(|| format!("no row of {} for argv {argv:?}", prev.tool)),
        [] => Err(format!("{} was not called", prev.tool)),
        more => Err(format!(
            "{} tool calls ({}) in place of one {}",
            more.len(),
            more.iter()
                .map(|(n, _)| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            prev.tool
        )),
    };
    let out = match out {
        Ok(o) => o,
        Err(why) => {
            st.stopped = Some(format!(
                "the model stopped the chain after step {step}: its tool gave no output ({why}), \
                 so steps {}–{} were not called",
                step + 1,
                c.steps.len()
            ));
            return CHAIN_STOPPED.to_string();
        }
    };
    if out == c.outputs[step - 1] {
        return scripted.to_string();
    }
    let s = &c.steps[step];
    let mut args = s.arguments.clone();
    if let Some(k) = &s.from_previous {
        args.insert(k.clone(), out);
    }
    let mut cmd = s.tool.clone();
    for (k, v) in &args {
        cmd.push_str(&format!(" --{k} {}", single_quoted(v)));
    }
    cmd
}

/// What the model emitted at each turn of a launch (filled as turns come).
type Emitted = Arc<Mutex<Vec<Option<String>>>>;

/// The [`NextCommand`] of a launch whose turns are `turns`, recording each decided call in the
/// returned [`Emitted`].
fn next_command(turns: Vec<Turn>) -> (NextCommand, Emitted) {
    let emitted: Emitted = Arc::new(Mutex::new(vec![None; turns.len()]));
    let rec = emitted.clone();
    let f = move |turn: usize, scripted: &str| {
        let cmd = match turns.get(turn) {
            Some(Turn::Step {
                chain,
                state,
                step,
                dir,
            }) => chain_step(chain, &mut state.lock().unwrap(), *step, dir, scripted),
            _ => scripted.to_string(),
        };
        if let Some(slot) = rec.lock().unwrap().get_mut(turn) {
            *slot = Some(cmd.clone());
        }
        cmd
    };
    (NextCommand(Arc::new(f)), emitted)
}

/// Consecutive runs of `units` (indices), each at most `max_calls` calls (`calls(u)` each) but
/// at least one unit.
fn chunks(n: usize, calls: impl Fn(usize) -> usize, max_calls: usize) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = vec![];
    let mut used = 0;
    for u in 0..n {
        let c = calls(u);
        match out.last_mut() {
            Some(last) if used + c <= max_calls => {
                last.push(u);
                used += c;
            }
            _ => {
                out.push(vec![u]);
                used = c;
            }
        }
    }
    out
}

/// The sandboxes of `units`, inside `root`.
fn sandboxes(units: &[Unit], root: &Path) -> Result<Vec<Sandbox>, Error> {
    units
        .iter()
        .enumerate()
        .map(|(k, u)| Ok(Sandbox::new_in(root, &format!("{k:03}-{}-", u.variant), u.setup)?))
        .collect()
}

/// The turns of a launch's calls: `lead` fixed calls, then for each unit of `chunk` `per_unit`
/// fixed calls and its texts (a chain's as [`Turn::Step`]s).
fn turns_of(units: &[Unit], sbs: &[Sandbox], chunk: &[usize], lead: usize, per_unit: usize) -> Vec<Turn> {
    let mut turns = vec![Turn::Fixed; lead];
    for &u in chunk {
        turns.extend(std::iter::repeat_n(Turn::Fixed, per_unit));
        match units[u].check {
            Check::Chain(c) => {
                let (chain, state) = (Arc::new(c.clone()), Arc::new(Mutex::new(ChainState::default())));
                turns.extend((0..units[u].texts.len()).map(|step| Turn::Step {
                    chain: chain.clone(),
                    state: state.clone(),
                    step,
                    dir: sbs[u].path().to_path_buf(),
                }));
            }
            Check::Observe(_) => turns.extend(std::iter::repeat_n(Turn::Fixed, units[u].texts.len())),
        }
    }
    turns
}

/// Why a chain stopped, from its turns' state (`None` for other units).
fn stop_reason(turns: &[Turn], first: usize) -> Option<String> {
    match turns.get(first) {
        Some(Turn::Step { state, .. }) => state.lock().unwrap().stopped.clone(),
        _ => None,
    }
}

/// The environment the harness runs with beyond its own: the fixed git identity of replay
/// mode's sandboxes (a task's commits).
fn harness_env() -> Vec<(String, String)> {
    crate::sandbox::FIXED_ENV
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// One call of a unit as the harness ran it.
struct CallRun<'r> {
    emitted: String,
    act: &'r PayloadResult,
    tool: &'r ToolResult,
    hook_input: Option<String>,
    outer: Option<String>,
}

/// Runs every unit through Claude Code with IntAct `on` or off: a `cd` call into the unit's
/// sandbox, then its calls, in launches of at most `2 × opts.batch` calls, and checks each
/// sandbox against its unit's expected state.
fn measure(units: &[Unit], tools: &[PathBuf], opts: &Options, on: bool) -> Result<ModeRun, Error> {
    let root = tempfile::Builder::new().prefix("iec-bench-harness-").tempdir()?;
    let mut sbs = sandboxes(units, root.path())?;
    let mut out = ModeRun {
        units: Vec::with_capacity(units.len()),
        sessions: 0,
        calls: 0,
    };
    let max = 2 * opts.batch.max(1);
    for chunk in chunks(units.len(), |u| 1 + units[u].texts.len(), max) {
        let mut calls = vec![];
        let mut cds = vec![];
        for &u in &chunk {
            cds.push(calls.len());
            calls.push(cd_call(sbs[u].path()));
            calls.extend(units[u].texts.iter().map(|t| t.to_string()));
        }
        let turns = turns_of(units, &sbs, &chunk, 0, 1);
        let (next, emitted) = next_command(turns.clone());
        let refs: Vec<&str> = calls.iter().map(String::as_str).collect();
        let mut ro = RunOptions::new(&opts.version, opts.bin.clone(), &refs);
        // IntAct on: one hook command records what the hook received, then runs the iec hook.
        ro.hook_witness = on;
        ro.hook_command = if on { opts.hook.clone() } else { None };
        ro.launch.probe = opts.probe.clone();
        ro.launch.work_dir = Some(root.path().to_path_buf());
        ro.launch.timeout = Duration::from_secs(120) + Duration::from_secs(2) * refs.len() as u32;
        ro.launch.tools = tools.to_vec();
        ro.launch.env = harness_env();
        ro.launch.next_command = Some(next);
        let run = run_claude_code_with(&ro).map_err(|e| Error::Harness(format!("{e:#}")))?;
        let mode = if on { "IntAct on" } else { "IntAct off" };
        session_ran(&run, &refs, &cds, mode)?;
        if !run.hook_stderr.is_empty() {
            return Err(Error::Harness(format!(
                "the IntAct hook wrote on stderr (it fails open, so IntAct was not applied): {}",
                clip(&run.hook_stderr)
            )));
        }
        out.sessions += 1;
        out.calls += refs.len();
        let emitted = emitted.lock().unwrap().clone();
        for (&u, &cd) in chunk.iter().zip(&cds) {
            let n = units[u].texts.len();
            let runs: Vec<CallRun> = (cd + 1..cd + 1 + n)
                .map(|k| {
                    let act = &run.results[k];
                    CallRun {
                        emitted: emitted[k].clone().unwrap_or_else(|| calls[k].clone()),
                        act,
                        tool: act.tool_result.as_ref().expect("checked by session_ran"),
                        hook_input: act
                            .hook_input
                            .as_ref()
                            .and_then(|v| v.get("command"))
                            .and_then(|c| c.as_str())
                            .map(String::from),
                        // The wrapper's eval and what follows (the snapshot's path before it is
                        // the run's).
                        outer: act
                            .outer
                            .as_deref()
                            .map(|o| o.find("eval ").map_or(o, |i| &o[i..]).to_string()),
                    }
                })
                .collect();
            let outputs: Vec<String> = runs.iter().map(|r| strip_reminders(&r.tool.content)).collect();
            let got = units[u].observe(&sbs[u], &outputs);
            out.units
                .push(judge(&units[u].want, &got, &runs, stop_reason(&turns, cd + 1)));
        }
    }
    sbs.clear();
    Ok(out)
}

/// One unit's outcome: its observables `got` against `want`, and when they differ, why (the
/// observables that differ, each call's own record by the harness and what its hook received
/// when either is not the emitted text, what its bash received, its tool result when it was an
/// error, and why a chain stopped).
fn judge(
    want: &BTreeMap<String, String>,
    got: &BTreeMap<String, String>,
    runs: &[CallRun],
    stopped: Option<String>,
) -> Measured {
    let pass = same_state(want, got);
    let mut why = vec![];
    let several = runs.len() > 1;
    if !pass {
        for (key, w) in want {
            let g = got.get(key).map(String::as_str).unwrap_or_default();
            if !same_value(key, w, g) {
                why.push(format!("{key} is {:?}, bash -c gives {:?}", clip(g), clip(w)));
            }
        }
        why.extend(stopped.clone());
        for (k, r) in runs.iter().enumerate() {
            let at = if several {
                format!("call {}: ", k + 1)
            } else {
                String::new()
            };
            let echoed = r.act.echoed.as_ref().filter(|e| **e != r.emitted);
            let hooked = r.hook_input.as_ref().filter(|h| **h != r.emitted);
            if let Some(e) = echoed {
                why.push(format!(
                    "{at}the harness changed the call before running anything: its own record of it (echoed to the model) is {:?}",
                    clip(e)
                ));
            }
            if let Some(h) = hooked {
                why.push(format!(
                    "{at}its PreToolUse hook (IntAct) received {:?}, not the emitted text",
                    clip(h)
                ));
            }
            if !several || echoed.is_some() || hooked.is_some() || r.tool.is_error {
                why.push(format!(
                    "{at}its bash received {:?}",
                    r.outer.as_deref().map(clip)
                ));
            }
            if r.tool.is_error {
                why.push(format!("{at}tool result (error): {:?}", clip(&r.tool.content)));
            }
        }
    }
    let differs = |f: for<'a> fn(&'a CallRun<'a>) -> Option<&'a String>| {
        if several {
            runs.iter()
                .find_map(|r| f(r).filter(|x| **x != r.emitted).cloned())
        } else {
            runs.first().and_then(|r| f(r).cloned())
        }
    };
    Measured {
        pass,
        tool_error: runs.iter().any(|r| r.tool.is_error),
        why: why.join("; "),
        echoed: differs(|r| r.act.echoed.as_ref()),
        hook_input: differs(|r| r.hook_input.as_ref()),
        calls: runs.iter().map(|r| r.emitted.clone()).collect(),
        stopped,
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

/// Runs every unit through Codex or Gemini CLI (IntAct off), each call in its unit's sandbox
/// through the shell tool's working-directory parameter, after a `pwd` probe per launch, in
/// launches of at most `opts.batch` calls (Gemini CLI: at most [`GEMINI_MAX_VARIANTS`]), and
/// checks each sandbox against its unit's expected state.
fn measure_in_dirs(units: &[Unit], tools: &[PathBuf], opts: &Options) -> Result<ModeRun, Error> {
    let root = tempfile::Builder::new().prefix("iec-bench-harness-").tempdir()?;
    let probe_dir = root.path().join(PWD_PROBE_DIR);
    std::fs::create_dir(&probe_dir)?;
    let mut sbs = sandboxes(units, root.path())?;
    let mut out = ModeRun {
        units: Vec::with_capacity(units.len()),
        sessions: 0,
        calls: 0,
    };
    let max = match opts.kind {
        Kind::GeminiCli => opts.batch.clamp(1, GEMINI_MAX_VARIANTS),
        _ => opts.batch.max(1),
    };
    for chunk in chunks(units.len(), |u| units[u].texts.len(), max) {
        let mut calls = vec!["pwd".to_string()];
        let mut dirs = vec![Some(probe_dir.clone())];
        let mut firsts = vec![];
        for &u in &chunk {
            firsts.push(calls.len());
            for t in &units[u].texts {
                calls.push(t.to_string());
                dirs.push(Some(sbs[u].path().to_path_buf()));
            }
        }
        let turns = turns_of(units, &sbs, &chunk, 1, 0);
        let (next, emitted) = next_command(turns.clone());
        let refs: Vec<&str> = calls.iter().map(String::as_str).collect();
        let mut lo = LaunchOptions::new(&opts.version, opts.bin.clone(), &refs);
        lo.workdirs = dirs;
        lo.probe = opts.probe.clone();
        lo.work_dir = Some(root.path().to_path_buf());
        lo.think = opts.think;
        lo.timeout = Duration::from_secs(120) + (Duration::from_secs(2) + opts.think) * refs.len() as u32;
        lo.tools = tools.to_vec();
        lo.env = harness_env();
        lo.next_command = Some(next);
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
        let emitted = emitted.lock().unwrap().clone();
        for (&u, &first) in chunk.iter().zip(&firsts) {
            let n = units[u].texts.len();
            let runs: Vec<CallRun> = (first..first + n)
                .map(|k| {
                    let act = &run.results[k];
                    CallRun {
                        emitted: emitted[k].clone().unwrap_or_else(|| calls[k].clone()),
                        act,
                        tool: act.tool_result.as_ref().expect("checked by launch_ran"),
                        hook_input: None,
                        outer: act.outer.clone(),
                    }
                })
                .collect();
            let outputs: Vec<String> = runs
                .iter()
                .map(|r| command_output(opts.kind, &r.tool.content))
                .collect();
            let got = units[u].observe(&sbs[u], &outputs);
            out.units
                .push(judge(&units[u].want, &got, &runs, stop_reason(&turns, first)));
        }
    }
    sbs.clear();
    Ok(out)
}

/// The error of launch `who`: `what`, and the end of the harness's stderr.
fn launch_failed(run: &HarnessRun, who: &str, what: String) -> Error {
    let chars: Vec<char> = run.stderr.chars().collect();
    let tail: String = chars[chars.len().saturating_sub(2000)..].iter().collect();
    Error::Harness(format!("{who}: {what}; its stderr ends:\n{tail}"))
}

/// The launch did not time out and gave one result per call.
fn answered_every_call(run: &HarnessRun, calls: &[&str], who: &str) -> Result<(), Error> {
    if run.timed_out {
        return Err(launch_failed(
            run,
            who,
            format!("a launch of {} calls timed out", calls.len()),
        ));
    }
    if run.results.len() != calls.len() {
        let what = format!("{} results for {} calls", run.results.len(), calls.len());
        return Err(launch_failed(run, who, what));
    }
    Ok(())
}

/// A Codex or Gemini CLI launch of `calls` ran every call: no timeout, a tool result for each,
/// and the `pwd` probe (call 0) ran in `probe_dir`, so the harness honours the working-directory
/// parameter.
fn launch_ran(run: &HarnessRun, calls: &[&str], kind: Kind, probe_dir: &Path) -> Result<(), Error> {
    let who = format!("{} {}", kind.title(), run.version);
    let fail = |what: String| Err(launch_failed(run, &who, what));
    answered_every_call(run, calls, &who)?;
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

/// A launch of `calls` ran every call: no timeout, a tool result for each, every `cd` call (at
/// indices `cds`) succeeded, and the harness never moved the shell back to its own working
/// directory.
fn session_ran(run: &HarnessRun, calls: &[&str], cds: &[usize], mode: &str) -> Result<(), Error> {
    let who = format!("Claude Code {} ({mode})", run.version);
    let fail = |what: String| Err(launch_failed(run, &who, what));
    answered_every_call(run, calls, &who)?;
    for (k, r) in run.results.iter().enumerate() {
        let Some(t) = &r.tool_result else {
            return fail(format!("no tool result for call {k} ({:?})", clip(calls[k])));
        };
        if cds.contains(&k) && t.is_error {
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
                exit_code: Some(0),
                ..Default::default()
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

    /// A chain of three steps over one tool `f`: `a` → `b` → `c` → `d`; `f` also maps `x` to
    /// `y`.
    fn abc_chain() -> Chain {
        let rows = json!([
            {"arguments": {"k": "a"}, "output": "b"},
            {"arguments": {"k": "b"}, "output": "c"},
            {"arguments": {"k": "c"}, "output": "d"},
            {"arguments": {"k": "x"}, "output": "y"},
        ]);
        crate::chain::chain(json!({
            "id": "t", "question": "q", "answer": "d", "source": "test",
            "sub_task": {"1": "a", "2": "b", "3": "c"},
            "tools": {"f": {"name": "f", "parameters": {"properties": {"k": {}}, "required": ["k"]}}},
            "functions": [{"name": "f", "rows": rows}],
            "calls": [
                {"tool": "f", "arguments": {"k": "a"}, "command": "f --k a"},
                {"tool": "f", "arguments": {"k": "b"}, "command": "f --k \"b\"", "from_previous": "k"},
                {"tool": "f", "arguments": {"k": "c"}, "command": "f --k $'c'", "from_previous": "k"},
            ],
        }))
        .unwrap()
    }

    /// Appends a call of tool `name` with `args` to the chain log in `dir`, as the harness-mode
    /// tool program does.
    fn log_call(dir: &Path, name: &str, args: &[&str]) {
        use std::io::Write;
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(TOOL_LOG))
            .unwrap();
        for field in [args.len().to_string().as_str(), name].iter().chain(args) {
            f.write_all(field.as_bytes()).unwrap();
            f.write_all(b"\0").unwrap();
        }
    }

    #[test]
    fn a_chain_step_takes_what_the_previous_step_actually_received() {
        let c = abc_chain();
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // As recorded: each step's call is the recorded text.
        let mut st = ChainState::default();
        assert_eq!(chain_step(&c, &mut st, 0, d, "f --k a"), "f --k a");
        log_call(d, "f", &["--k", "a"]);
        assert_eq!(chain_step(&c, &mut st, 1, d, "f --k \"b\""), "f --k \"b\"");
        log_call(d, "f", &["--k", "b"]);
        assert_eq!(chain_step(&c, &mut st, 2, d, "f --k $'c'"), "f --k $'c'");
        assert_eq!(st.stopped, None);

        // Step 1's tool received another row's arguments: step 2 is built from that row's
        // output, single-quoted.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut st = ChainState::default();
        chain_step(&c, &mut st, 0, d, "f --k a");
        log_call(d, "f", &["--k", "x"]);
        assert_eq!(chain_step(&c, &mut st, 1, d, "f --k \"b\""), "f --k 'y'");

        // Step 1's tool received arguments no row has: the model stops the chain.
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut st = ChainState::default();
        chain_step(&c, &mut st, 0, d, "f --k a");
        log_call(d, "f", &["--k", "a\\!"]);
        assert_eq!(chain_step(&c, &mut st, 1, d, "f --k \"b\""), CHAIN_STOPPED);
        assert_eq!(chain_step(&c, &mut st, 2, d, "f --k $'c'"), CHAIN_STOPPED);
        assert_eq!(
            st.stopped.as_deref(),
            Some(
                "the model stopped the chain after step 1: its tool gave no output (no row of f \
                 for argv [\"--k\", \"a\\\\!\"]), so steps 2–3 were not called"
            )
        );
        // The stopped steps run no tool: steps 2 and 3 read as not called.
        let got = crate::chain::observed(&c, &std::fs::read(d.join(TOOL_LOG)).unwrap());
        assert_eq!(got["step2"], "<f not called>");

        // The tool never ran (the harness refused the call): stopped too.
        let dir = tempfile::tempdir().unwrap();
        let mut st = ChainState::default();
        chain_step(&c, &mut st, 0, dir.path(), "f --k a");
        assert_eq!(chain_step(&c, &mut st, 1, dir.path(), "x"), CHAIN_STOPPED);
        assert!(st.stopped.unwrap().contains("(f was not called)"));
    }

    #[test]
    fn the_harness_tool_program_logs_in_its_working_directory() {
        let tools = Tools::with_program(["f"], crate::chain::HARNESS_TOOL_PROGRAM).unwrap();
        // Its start-up runs left no log beside it.
        assert!(!tools.path().join(TOOL_LOG).exists());
        let dir = tempfile::tempdir().unwrap();
        let path = format!("{}:{}", tools.path().display(), std::env::var("PATH").unwrap());
        let st = std::process::Command::new("bash")
            .args(["-c", "f --k 'a b' --c $'x\\ny'"])
            .current_dir(dir.path())
            .env("PATH", path)
            .env_remove("IEC_BENCH_TOOL_LOG")
            .status()
            .unwrap();
        assert!(st.success());
        let log = std::fs::read(dir.path().join(TOOL_LOG)).unwrap();
        assert_eq!(
            crate::chain::parse_log(&log),
            [(
                "f".to_string(),
                ["--k", "a b", "--c", "x\ny"].map(String::from).to_vec()
            )]
        );
    }

    #[test]
    fn launches_hold_whole_units_up_to_the_call_limit() {
        let sizes = [2, 2, 6, 3, 1, 9];
        assert_eq!(
            chunks(sizes.len(), |u| sizes[u], 6),
            [vec![0, 1], vec![2], vec![3, 4], vec![5]]
        );
        // Each output without its trailing white space, one per line.
        assert_eq!(joined_outputs(&["a\n", "", "b \n\n"]), "a\n\nb");
    }
}
