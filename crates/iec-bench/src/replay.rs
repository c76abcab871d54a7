//! Replay mode: every recorded action held fixed, delivered along each path with IntAct off
//! (the call as emitted; [`iec_check::check`] says what the receiver gets) and on
//! ([`iec_repair::repair`] delivers unchanged, re-rendered or refuses). Where the path's final
//! receiver runs here (bash, through the launch's real wrapper and process argv,
//! [`iec_launches::render::process_argv`]) the delivered calls are executed in a sandbox and
//! the check of the final state decides; on Windows paths the emulated check of each delivered
//! call decides, and on the terminal path the check with the real terminal witness (tmux)
//! decides; each item's result says which ([`Decider`]).

use crate::chain::Chain;
use crate::data::{Observable, Suite};
use crate::sandbox::{Sandbox, Tools};
use crate::stats::mcnemar_exact;
use iec_check::{call_for_text, check, Options};
use iec_core::{Mechanism, Verdict};
use iec_launches::{render, Catalog, Launch};
use iec_repair::{repair_traced, Outcome};
use serde::Serialize;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// The paths of `--quick`: the control path first.
pub const PATHS: [&str; 6] = [
    "bash-c",
    "claude-code-2.1.72-linux",
    "claude-code-2.1.332-linux",
    "claude-code-git-bash-windows",
    "codex-windows-powershell",
    "tmux-send-keys",
];

/// The control path: the text as one `bash -c` argument.
pub const CONTROL_PATH: &str = "bash-c";

/// What decides an item's outcome on a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Decider {
    /// The delivered calls ran in a sandbox through the launch's real process argv, and the
    /// check of the final state decided.
    Run,
    /// A Windows receiver (not on this machine): the emulated check of each delivered call.
    Emulated,
    /// A terminal path: the check with the real terminal witness (tmux) of each delivered call;
    /// the call is not executed.
    TerminalWitness,
}

/// The decider of a launch.
pub fn decider(l: &Launch) -> Decider {
    if l.windows.is_some() {
        Decider::Emulated
    } else if l.terminal.is_some() {
        Decider::TerminalWitness
    } else {
        Decider::Run
    }
}

/// Errors that stop the bench (not item outcomes).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A path is not in the catalog.
    #[error("unknown path `{0}`: `iec launches` lists them")]
    Launch(String),
    /// A witness failed.
    #[error("check of {path} failed: {source}")]
    Check {
        /// The launch.
        path: String,
        /// Why.
        source: iec_check::CheckError,
    },
    /// The sandbox could not be made or a program not started.
    #[error("sandbox: {0}")]
    Io(#[from] std::io::Error),
    /// The control run of an item contradicts the item's hand-written `expect`.
    #[error(
        "{file}: item `{id}`: the control run on bash -c gives {key} = {got:?}, the data expects {want:?}"
    )]
    Expect {
        /// The data file.
        file: &'static str,
        /// The item.
        id: String,
        /// The observable.
        key: String,
        /// What the data says.
        want: String,
        /// What the run gave.
        got: String,
    },
}

/// What happens to one command text on one path, with IntAct off and on.
#[derive(Debug, Clone)]
pub(crate) struct Delivery {
    /// The check's verdict of the call as emitted.
    off_verdict: Verdict,
    /// The call as emitted (tool input).
    pub(crate) off_input: Value,
    /// How the call as emitted changed, and at which hop (index in the launch), when it
    /// diverges.
    off_divergence: Option<(Mechanism, usize)>,
    /// IntAct's outcome.
    pub(crate) on: On,
    /// IntAct re-rendered the call and the rendering's check fails at another hop than the
    /// call's first divergence: a failure that shows only once the first one is repaired.
    other_hop: bool,
}

#[derive(Debug, Clone)]
pub(crate) enum On {
    Deliver {
        input: Value,
        repaired: bool,
        /// The check of the delivered call.
        verdict: Verdict,
    },
    Refuse {
        /// IntAct's reason (what the agent is told).
        reason: String,
    },
}

/// The outcome of one variant (a list of texts) on one path in one mode.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Outcome1 {
    /// The check passed.
    pub pass: bool,
    /// Calls whose check (IntAct off) diverges.
    pub changed: usize,
    /// Calls whose check (IntAct off) is `unknown`.
    pub unknown: usize,
    /// Not decided: no call runs on this path and a call's check is `unknown` (none diverges).
    pub undecided: bool,
    /// Calls IntAct re-rendered (mode on).
    pub repaired: usize,
    /// Calls IntAct refused (mode on).
    pub refused: usize,
    /// Calls IntAct re-rendered whose rendering's check fails at another hop than the call's
    /// first divergence (mode on; IntAct then refuses them).
    pub other_hop: usize,
    /// Every delivered call's check corresponds and one was re-rendered, and the run still
    /// fails (mode on, paths whose receiver runs here).
    pub fails_after_repair: bool,
}

/// One item on one path.
#[derive(Debug, Clone, Serialize)]
pub struct ItemResult {
    /// The item's id.
    pub id: String,
    /// `pair`, `chain` or `task`.
    pub kind: &'static str,
    /// The launch.
    pub path: String,
    /// What decided.
    pub decided_by: Decider,
    /// The hazard (chains, tasks: the recorded actions) with IntAct off.
    pub off: Outcome1,
    /// The same with IntAct on.
    pub on: Outcome1,
    /// The control passes with IntAct off (pairs: the control text on this path; chains and
    /// tasks: the recorded actions on bash-c).
    pub control_pass: bool,
    /// The control with IntAct on (pairs only; chains and tasks: as `on` on bash-c).
    pub control_on: Outcome1,
    /// Calls of the control whose check does not correspond (pairs only).
    pub control_changed: usize,
    /// How each changed call of the hazard changed (IntAct off), in order.
    pub mechanisms: Vec<Mechanism>,
}

impl ItemResult {
    /// Hazard fails, control passes (IntAct off).
    pub fn lost(&self) -> bool {
        !self.off.pass && !self.off.undecided && self.control_pass
    }
    /// Lost, and passes with IntAct on.
    pub fn recovered(&self) -> bool {
        self.lost() && self.on.pass
    }
    /// Hop hiding: lost, still failing with IntAct on, and the failure shows only after the
    /// first changed hop is repaired (a re-rendering that fails at another hop, e.g. an
    /// `eval $'…'` four times longer than the text that execve refuses at the spawn hop, or a
    /// run that fails although every delivered call's check corresponds).
    pub fn hop_hidden(&self) -> bool {
        self.lost() && !self.on.pass && (self.on.other_hop > 0 || self.on.fails_after_repair)
    }
    /// A control that passes with IntAct off, and that IntAct changes, refuses or breaks.
    pub fn false_repair(&self) -> bool {
        self.control_pass
            && (self.control_on.repaired > 0 || self.control_on.refused > 0 || !self.control_on.pass)
    }
}

/// The figures of one path.
#[derive(Debug, Clone, Default, Serialize)]
pub struct PathMetrics {
    /// What decided its items.
    pub decided_by: Option<Decider>,
    /// Items.
    pub items: usize,
    /// Hazard fails, control passes (IntAct off).
    pub lost: usize,
    /// Lost items with a changed call.
    pub lost_changed: usize,
    /// Lost items that pass with IntAct on.
    pub recovered: usize,
    /// Lost items with a changed call that pass with IntAct on.
    pub recovered_changed: usize,
    /// `recovered_changed / lost_changed` (null when nothing was lost with a changed call).
    pub recovery_rate: Option<f64>,
    /// Controls that IntAct changes, refuses or breaks.
    pub false_repairs: usize,
    /// Lost items whose failure shows only after the first changed hop is repaired
    /// ([`ItemResult::hop_hidden`]).
    pub hop_hiding: usize,
    /// Changed calls of the hazards (IntAct off) by mechanism (`quote-consumption`, …).
    pub mechanisms: BTreeMap<String, usize>,
    /// Calls (hazards and controls) whose check diverges with IntAct off.
    pub changed_calls: usize,
    /// Calls (hazards) whose check is `unknown` with IntAct off.
    pub unknown_calls: usize,
    /// Items not decided (off or on): no call runs on the path and a check is `unknown`;
    /// left out of lost, recovered and McNemar.
    pub undecided: usize,
    /// Exact McNemar p between the items' pass/fail with IntAct off and on.
    pub mcnemar_p: f64,
    /// Items failing off and passing on.
    pub off_fail_on_pass: usize,
    /// Items passing off and failing on.
    pub off_pass_on_fail: usize,
}

/// The whole report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Pattern pairs.
    pub pairs: usize,
    /// Chains.
    pub chains: usize,
    /// Tasks.
    pub tasks: usize,
    /// Per path.
    pub paths: BTreeMap<String, PathMetrics>,
    /// Across paths: lost with a changed call, recovered of those, rate, false repairs.
    pub overall: PathMetrics,
    /// Every item on every path.
    pub items: Vec<ItemResult>,
}

/// The bench over `paths` of `cat`.
pub struct Runner<'a> {
    launches: Vec<&'a Launch>,
    cache: Mutex<HashMap<(String, String), Arc<Delivery>>>,
    tools: std::sync::OnceLock<Tools>,
}

#[derive(Clone, Copy)]
enum Item<'a> {
    Pair(&'a crate::data::Pair),
    Chain(&'a Chain),
    Task(&'a crate::data::Task),
}

impl Item<'_> {
    fn id(&self) -> &str {
        match self {
            Item::Pair(p) => &p.id,
            Item::Chain(c) => &c.id,
            Item::Task(t) => &t.id,
        }
    }
    fn kind(&self) -> &'static str {
        match self {
            Item::Pair(_) => "pair",
            Item::Chain(_) => "chain",
            Item::Task(_) => "task",
        }
    }
}

/// What a variant needs to run: its texts, setup, tools and what to observe.
struct Variant<'b> {
    texts: Vec<&'b str>,
    setup: &'b BTreeMap<String, String>,
    observe: &'b [Observable],
    chain: Option<&'b Chain>,
}

fn no_setup() -> &'static BTreeMap<String, String> {
    static EMPTY: std::sync::OnceLock<BTreeMap<String, String>> = std::sync::OnceLock::new();
    EMPTY.get_or_init(BTreeMap::new)
}

impl<'a> Runner<'a> {
    /// A runner over these launch ids.
    pub fn new(cat: &'a Catalog, paths: &[&str]) -> Result<Runner<'a>, Error> {
        let launches = paths
            .iter()
            .map(|p| cat.get(p).map_err(|_| Error::Launch(p.to_string())))
            .collect::<Result<_, _>>()?;
        Ok(Runner {
            launches,
            cache: Mutex::new(HashMap::new()),
            tools: std::sync::OnceLock::new(),
        })
    }

    /// What happens to `text` on `l` with IntAct off and on (cached per launch and text).
    pub(crate) fn deliver(&self, l: &Launch, text: &str) -> Result<Arc<Delivery>, Error> {
        let key = (l.id.clone(), text.to_string());
        if let Some(d) = self.cache.lock().unwrap().get(&key) {
            return Ok(d.clone());
        }
        let pool = iec_witness::global();
        let err = |source| Error::Check {
            path: l.id.clone(),
            source,
        };
        let call = call_for_text(l, text);
        let report = check(l, &call, pool, Options::default()).map_err(err)?;
        let off_divergence = report.first_divergence.as_ref().map(|f| (f.mechanism, f.hop));
        let mut other_hop = false;
        let on = if report.verdict == Verdict::Corresponds {
            // What repair delivers for a call whose check corresponds: the call itself.
            On::Deliver {
                input: call.input.clone(),
                repaired: false,
                verdict: Verdict::Corresponds,
            }
        } else {
            let (outcome, rendered) = repair_traced(l, &call, pool, Some(report.clone())).map_err(err)?;
            other_hop = match (&rendered, off_divergence) {
                (Some(r), Some((_, first))) => r.hop.is_some_and(|h| h != first),
                _ => false,
            };
            match outcome {
                Outcome::Deliver {
                    repaired,
                    call: input,
                    check,
                    ..
                } => On::Deliver {
                    // An unchanged delivery is the call just checked.
                    verdict: check.map_or(report.verdict, |c| c.verdict),
                    input,
                    repaired,
                },
                Outcome::Refuse { reason, .. } => On::Refuse { reason },
            }
        };
        let d = Arc::new(Delivery {
            off_verdict: report.verdict,
            off_input: call.input,
            off_divergence,
            on,
            other_hop,
        });
        self.cache.lock().unwrap().insert(key, d.clone());
        Ok(d)
    }

    /// Runs one variant on one launch with IntAct off or on.
    /// Runs one variant; `off` is the same variant's run with IntAct off (its outcome and its
    /// delivered calls): when IntAct delivers exactly those calls, the run is not repeated.
    fn variant(
        &self,
        l: &Launch,
        v: &Variant,
        on: bool,
        want: &BTreeMap<String, String>,
        off: Option<(&Outcome1, &[Option<Value>])>,
    ) -> Result<(Outcome1, Vec<Option<Value>>), Error> {
        let dec = decider(l);
        let mut o = Outcome1::default();
        let mut inputs = vec![];
        // What the delivered calls' checks say: all correspond, one diverges (or is refused).
        let (mut all_correspond, mut any_diverges) = (true, false);
        for t in &v.texts {
            let d = self.deliver(l, t)?;
            match d.off_verdict {
                Verdict::Diverges => o.changed += 1,
                Verdict::Unknown => o.unknown += 1,
                Verdict::Corresponds => {}
            }
            let verdict = if !on {
                inputs.push(Some(d.off_input.clone()));
                d.off_verdict
            } else {
                match &d.on {
                    On::Deliver {
                        input,
                        repaired,
                        verdict,
                    } => {
                        o.repaired += *repaired as usize;
                        inputs.push(Some(input.clone()));
                        *verdict
                    }
                    On::Refuse { .. } => {
                        o.refused += 1;
                        o.other_hop += d.other_hop as usize;
                        inputs.push(None);
                        Verdict::Diverges
                    }
                }
            };
            all_correspond &= verdict == Verdict::Corresponds;
            any_diverges |= verdict == Verdict::Diverges;
        }
        if dec != Decider::Run {
            // No call runs here: the checks decide, and a call they cannot judge (`unknown`,
            // e.g. a bash text that does not parse as PowerShell) leaves the item undecided.
            o.pass = all_correspond;
            o.undecided = !all_correspond && !any_diverges;
            return Ok((o, inputs));
        }
        if let Some((prev, prev_inputs)) = off {
            if prev_inputs == inputs.as_slice() {
                o.pass = prev.pass;
                return Ok((o, inputs));
            }
        }
        let mut sb = Sandbox::new(v.setup, v.chain.and(self.tools.get()))?;
        for input in inputs.iter().flatten() {
            let text = l.command_of(input).and_then(Value::as_str).unwrap_or_default();
            // The harness rejects the text before any shell runs.
            if render::validate(&l.validate, text).is_some() {
                continue;
            }
            if let Some(argv) = render::process_argv(l, input) {
                sb.run(&argv)?;
            }
        }
        let got = observe(&sb, v);
        o.pass = &got == want;
        o.fails_after_repair = on && !o.pass && o.repaired > 0 && all_correspond;
        Ok((o, inputs))
    }

    /// How each changed call of a variant changes on a launch (IntAct off).
    fn mechanisms(&self, l: &Launch, v: &Variant) -> Result<Vec<Mechanism>, Error> {
        let mut out = vec![];
        for t in &v.texts {
            out.extend(self.deliver(l, t)?.off_divergence.map(|(m, _)| m));
        }
        Ok(out)
    }

    /// A variant with IntAct off, then on.
    fn off_on(
        &self,
        l: &Launch,
        v: &Variant,
        want: &BTreeMap<String, String>,
    ) -> Result<(Outcome1, Outcome1), Error> {
        let (off, inputs) = self.variant(l, v, false, want, None)?;
        let (on, _) = self.variant(l, v, true, want, Some((&off, &inputs)))?;
        Ok((off, on))
    }

    /// Phase one of an item: its variants, the expected states from the control path's
    /// receiver, and (chains and tasks) the recorded actions on bash-c.
    fn prepare<'s>(&self, it: &Item<'s>) -> Result<Prepared<'s>, Error> {
        let (hazard, control, expect, file): (
            Variant<'s>,
            Option<Variant<'s>>,
            Option<&BTreeMap<String, String>>,
            &'static str,
        ) = match *it {
            Item::Pair(p) => (
                Variant {
                    texts: vec![p.hazard.as_str()],
                    setup: &p.setup,
                    observe: &p.observe,
                    chain: None,
                },
                Some(Variant {
                    texts: vec![p.control.as_str()],
                    setup: &p.setup,
                    observe: &p.observe,
                    chain: None,
                }),
                Some(&p.expect),
                "pairs.jsonl",
            ),
            Item::Task(t) => (
                Variant {
                    texts: t.actions.iter().map(String::as_str).collect(),
                    setup: &t.setup,
                    observe: &t.observe,
                    chain: None,
                },
                None,
                Some(&t.expect),
                "tasks.jsonl",
            ),
            Item::Chain(c) => (
                Variant {
                    texts: c.steps.iter().map(|s| s.command.as_str()).collect(),
                    setup: no_setup(),
                    observe: &[],
                    chain: Some(c),
                },
                None,
                None,
                "chains.jsonl",
            ),
        };
        let want_h = reference(&hazard)?;
        let want_c = match &control {
            Some(c) => Some(reference(c)?),
            None => None,
        };
        // The hand-written expectations must hold for the control run on bash -c.
        if let Some(expect) = expect.filter(|e| !e.is_empty()) {
            let reference = want_c.as_ref().unwrap_or(&want_h);
            for (k, want) in expect {
                let got = reference.get(k).cloned().unwrap_or_default();
                if &got != want {
                    return Err(Error::Expect {
                        file,
                        id: it.id().into(),
                        key: k.clone(),
                        want: want.clone(),
                        got,
                    });
                }
            }
        }
        // Chains and tasks: the control is the recorded actions on bash-c.
        let control_launch = self.launches.iter().find(|l| l.id == CONTROL_PATH).copied();
        let base = match (&control, control_launch) {
            (None, Some(l)) => Some(self.off_on(l, &hazard, &want_h)?),
            _ => None,
        };
        Ok(Prepared {
            id: it.id().into(),
            kind: it.kind(),
            hazard,
            control,
            want_h,
            want_c,
            base,
        })
    }

    /// Phase two: one prepared item on one launch.
    fn item_on(&self, p: &Prepared, l: &Launch) -> Result<ItemResult, Error> {
        let (hazard, control, want_h, want_c, base) = (&p.hazard, &p.control, &p.want_h, &p.want_c, &p.base);
        let (off, on) = match base {
            Some(b) if l.id == CONTROL_PATH => *b,
            _ => self.off_on(l, hazard, want_h)?,
        };
        let (control_pass, control_on, control_changed) = match control {
            Some(c) => {
                let want = want_c.as_ref().unwrap_or(want_h);
                let (coff, con) = self.off_on(l, c, want)?;
                (coff.pass, con, coff.changed)
            }
            None => match base {
                // False repairs of chains and tasks are counted on bash-c only.
                Some((boff, bon)) => (
                    boff.pass,
                    if l.id == CONTROL_PATH {
                        *bon
                    } else {
                        Outcome1 {
                            pass: true,
                            ..Default::default()
                        }
                    },
                    0,
                ),
                None => (
                    true,
                    Outcome1 {
                        pass: true,
                        ..Default::default()
                    },
                    0,
                ),
            },
        };
        Ok(ItemResult {
            id: p.id.clone(),
            kind: p.kind,
            path: l.id.clone(),
            decided_by: decider(l),
            off,
            on,
            control_pass,
            control_on,
            control_changed,
            mechanisms: self.mechanisms(l, hazard)?,
        })
    }

    /// Runs every item of `suite` on every path, on `threads` worker threads.
    pub fn run(&self, suite: &Suite, threads: usize) -> Result<Report, Error> {
        self.run_with_progress(suite, threads, &|_, _| {})
    }

    /// [`Runner::run`], calling `progress(done, total)` from the worker threads as steps
    /// finish (one step an item's preparation, one an item on a path).
    ///
    /// Two phases, each spread over the threads: every item's expected state (phase one), then
    /// every item on every path (phase two), the terminal path's first: its typings in the real
    /// terminal (at most one per CPU at once) are the longest chain of work, and the other
    /// paths' runs fill the remaining threads meanwhile.
    pub fn run_with_progress(
        &self,
        suite: &Suite,
        threads: usize,
        progress: &(dyn Fn(usize, usize) + Sync),
    ) -> Result<Report, Error> {
        let mut items: Vec<Item> = suite.pairs.iter().map(Item::Pair).collect();
        items.extend(suite.chains.iter().filter(|c| c.replayable()).map(Item::Chain));
        items.extend(suite.tasks.iter().map(Item::Task));
        // The chains' tool programs, written before any thread starts a process.
        let names = suite
            .chains
            .iter()
            .flat_map(|c| c.tools.keys().map(String::as_str));
        let tools = Tools::new(names)?;
        if self.tools.set(tools).is_err() {
            // A second run on the same runner: every chain's tool must be there already.
            let have = self.tools.get().expect("set");
            if let Some(t) = suite
                .chains
                .iter()
                .flat_map(|c| c.tools.keys())
                .find(|t| !have.path().join(t).exists())
            {
                return Err(Error::Io(std::io::Error::other(format!(
                    "tool {t} is missing: use a new Runner for another suite"
                ))));
            }
        }
        let total = items.len() * (1 + self.launches.len());
        let done = AtomicUsize::new(0);
        let step = || progress(done.fetch_add(1, Ordering::Relaxed) + 1, total);
        let prepared = par_map(&items, threads, |it| {
            let p = self.prepare(it);
            step();
            p
        })?;
        // The slowest paths' units first.
        let mut units: Vec<(usize, usize)> = (0..self.launches.len())
            .flat_map(|li| (0..prepared.len()).map(move |ii| (li, ii)))
            .collect();
        let rank = |d: Decider| match d {
            Decider::TerminalWitness => 0,
            Decider::Run => 1,
            Decider::Emulated => 2,
        };
        units.sort_by_key(|&(li, ii)| (rank(decider(self.launches[li])), ii, li));
        let results = par_map(&units, threads, |&(li, ii)| {
            let r = self.item_on(&prepared[ii], self.launches[li]);
            step();
            r
        })?;
        // Item order, then path order.
        let mut ordered: Vec<((usize, usize), ItemResult)> = units.into_iter().zip(results).collect();
        ordered.sort_by_key(|((li, ii), _)| (*ii, *li));
        let items: Vec<ItemResult> = ordered.into_iter().map(|(_, r)| r).collect();
        let mut paths = BTreeMap::new();
        for l in &self.launches {
            let mine: Vec<&ItemResult> = items.iter().filter(|r| r.path == l.id).collect();
            let mut m = metrics(&mine);
            m.decided_by = Some(decider(l));
            paths.insert(l.id.clone(), m);
        }
        let overall = metrics(&items.iter().collect::<Vec<_>>());
        Ok(Report {
            pairs: suite.pairs.len(),
            chains: suite.chains.len(),
            tasks: suite.tasks.len(),
            paths,
            overall,
            items,
        })
    }
}

/// The final state of a variant run directly by `bash -c` in a fresh sandbox (the control
/// path's receiver), each text one process.
fn reference(v: &Variant) -> Result<BTreeMap<String, String>, Error> {
    if let Some(c) = v.chain {
        // A chain's expected state is its recorded outputs (checked on bash-c like any
        // other path: a wrongly quoted command fails there).
        return Ok(crate::chain::expected(c));
    }
    let mut sb = Sandbox::new(v.setup, None)?;
    for t in &v.texts {
        sb.run(&["bash".to_string(), "-c".to_string(), t.to_string()])?;
    }
    Ok(observe(&sb, v))
}

/// The expected final state of a task, as replay mode computes it: what `bash -c` of each
/// recorded action leaves in a fresh sandbox with the task's setup.
pub(crate) fn task_reference(t: &crate::data::Task) -> Result<BTreeMap<String, String>, Error> {
    reference(&Variant {
        texts: t.actions.iter().map(String::as_str).collect(),
        setup: &t.setup,
        observe: &t.observe,
        chain: None,
    })
}

/// An item after phase one.
struct Prepared<'s> {
    id: String,
    kind: &'static str,
    hazard: Variant<'s>,
    control: Option<Variant<'s>>,
    want_h: BTreeMap<String, String>,
    want_c: Option<BTreeMap<String, String>>,
    /// Chains and tasks: the recorded actions on bash-c, IntAct off and on.
    base: Option<(Outcome1, Outcome1)>,
}

/// `f` over `xs` on `threads` threads, the results in the order of `xs`; the first error stops
/// the threads from taking more.
pub(crate) fn par_map<T: Sync, R: Send>(
    xs: &[T],
    threads: usize,
    f: impl Fn(&T) -> Result<R, Error> + Sync,
) -> Result<Vec<R>, Error> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(xs.len()));
    let first_err: Mutex<Option<Error>> = Mutex::new(None);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::Relaxed);
                if i >= xs.len() || first_err.lock().unwrap().is_some() {
                    break;
                }
                match f(&xs[i]) {
                    Ok(r) => results.lock().unwrap().push((i, r)),
                    Err(e) => {
                        first_err.lock().unwrap().get_or_insert(e);
                    }
                }
            });
        }
    });
    if let Some(e) = first_err.into_inner().unwrap() {
        return Err(e);
    }
    let mut results = results.into_inner().unwrap();
    results.sort_by_key(|(i, _)| *i);
    Ok(results.into_iter().map(|(_, r)| r).collect())
}

fn observe(sb: &Sandbox, v: &Variant) -> BTreeMap<String, String> {
    match v.chain {
        Some(c) => crate::chain::observed(c, &sb.tool_log()),
        None => sb.observe(v.observe),
    }
}

/// The figures over a set of item results.
pub fn metrics(items: &[&ItemResult]) -> PathMetrics {
    let mut m = PathMetrics {
        items: items.len(),
        ..Default::default()
    };
    for r in items {
        let changed = r.off.changed > 0;
        m.lost += r.lost() as usize;
        m.lost_changed += (r.lost() && changed) as usize;
        m.recovered += r.recovered() as usize;
        m.recovered_changed += (r.recovered() && changed) as usize;
        m.false_repairs += r.false_repair() as usize;
        m.hop_hiding += r.hop_hidden() as usize;
        for k in &r.mechanisms {
            *m.mechanisms.entry(k.as_str().to_string()).or_default() += 1;
        }
        m.changed_calls += r.off.changed + r.control_changed;
        m.unknown_calls += r.off.unknown;
        if r.off.undecided || r.on.undecided {
            m.undecided += 1;
            continue;
        }
        m.off_fail_on_pass += (!r.off.pass && r.on.pass) as usize;
        m.off_pass_on_fail += (r.off.pass && !r.on.pass) as usize;
    }
    m.recovery_rate = (m.lost_changed > 0).then(|| m.recovered_changed as f64 / m.lost_changed as f64);
    m.mcnemar_p = mcnemar_exact(m.off_fail_on_pass as u64, m.off_pass_on_fail as u64);
    m
}
