//! Harness mode: each pair's recorded texts go to a real harness binary as the model's tool
//! calls, emitted by the replay model server of `iec-harness`, and run for real; the final state
//! of each text's sandbox is checked as in replay mode, and the outcome is set beside replay
//! mode's for the launch that models that harness (`claude-code-2.1.72-linux` for Claude Code
//! 2.1.72).
//!
//! **Sessions.** Every pair variant (hazard, control) gets a fresh sandbox with the pair's
//! setup, a folder inside one root folder that is the harness's working directory. The model
//! emits two calls per variant: `cd 'SANDBOX'` (Claude Code keeps the working directory from
//! one call to the next, and a folder inside its own stays allowed), then the recorded text,
//! unchanged. All variants go through as few harness launches as [`Options::batch`] allows.
//! IntAct off is the harness as a user runs it; IntAct on adds the iec PreToolUse hook
//! ([`Options::hook`]), which repairs or refuses each call before the harness runs it. The `cd`
//! calls must succeed; a launch that times out, ends early or resets the working directory
//! stops the bench with an error.
//!
//! **What is compared.** A variant passes when its sandbox's observables equal what `bash -c
//! TEXT` leaves in a fresh sandbox (replay mode's expected state). The `stdout` observable is
//! the tool result the harness handed the model (its `<system-reminder>` blocks removed), and
//! both sides are compared without trailing white space: the harness trims the output it
//! reports. Each pair agrees when every variant measured (hazard and control, IntAct off and,
//! when run, on) passes or fails as replay mode's emulated outcome on the same launch says.

use crate::data::{Pair, Suite};
use crate::replay::{pair_reference, ItemResult, Report};
use crate::sandbox::Sandbox;
use iec_harness::agree::strip_reminders;
use iec_harness::{run_claude_code_with, HarnessRun, RunOptions};
use iec_launches::Catalog;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The harness `--mode harness` drives by default.
pub const DEFAULT_HARNESS: &str = "claude-code@2.1.72";

/// Pair variants per harness launch by default (two calls each). Fewer launches are not
/// faster: every request carries the whole conversation, so a launch's cost grows faster than
/// its calls (`BENCHMARKS.md`: the 150 variants of IntAct off took 90 s in one launch, 45 s in
/// two, 40 s in three or six).
pub const DEFAULT_BATCH: usize = 50;

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
    /// claude-code-2.1.72-linux`); `None` runs IntAct off only.
    pub hook: Option<String>,
    /// Pair variants per harness launch.
    pub batch: usize,
}

impl Options {
    /// Options for `spec` (`claude-code@VERSION`), whose launch `claude-code-VERSION-linux` must
    /// be in `cat`; IntAct off only, the default batch.
    pub fn new(spec: &str, cat: &Catalog) -> Result<Options, Error> {
        let version = match spec.split_once('@') {
            Some(("claude-code", v)) if !v.is_empty() => v,
            _ => {
                return Err(Error::Harness(format!(
                    "harness mode drives Claude Code only: expected claude-code@VERSION, got {spec:?}"
                )))
            }
        };
        let launch = format!("claude-code-{version}-linux");
        if cat.get(&launch).is_err() {
            return Err(Error::Harness(format!(
                "no launch {launch} models {spec}: harness mode compares with replay mode on that \
                 launch (`iec launches` lists them)"
            )));
        }
        Ok(Options {
            harness: spec.to_string(),
            version: version.to_string(),
            launch,
            bin: None,
            probe: None,
            hook: None,
            batch: DEFAULT_BATCH,
        })
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
    /// Harness launches.
    pub sessions: usize,
    /// Tool calls the model emitted (two per variant).
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
                s.spawn(move || measure(&suite.pairs, wants, opts, on))
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
            let want = &wants[i][v];
            let pass = same_state(want, &got);
            let hook_input = act
                .hook_input
                .as_ref()
                .and_then(|v| v.get("command"))
                .and_then(|c| c.as_str())
                .map(String::from);
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
                // The wrapper's eval and what follows (the snapshot's path before it is the run's).
                let outer = act
                    .outer
                    .as_deref()
                    .map(|o| o.find("eval ").map_or(o, |i| &o[i..]));
                why.push(format!("its bash received {:?}", outer.map(clip)));
                if tool.is_error {
                    why.push(format!("tool result (error): {:?}", clip(&tool.content)));
                }
            }
            out.variants.push(Measured {
                pass,
                tool_error: tool.is_error,
                why: why.join("; "),
                echoed: act.echoed.clone(),
                hook_input,
            });
        }
    }
    drop(sandboxes);
    Ok(out)
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
