//! IntAct at scale: for generated hostile strings (`gen::hostile_string`: every code point
//! U+0001..U+00FF, shell specials, backslash runs, CR/LF, tabs, multi-byte Unicode, up to
//! 64 KiB) and every launch of the catalog, `repair` refuses (with a reason that names a hop of
//! the launch) or delivers a call whose check on the same launch corresponds. Each string is an
//! intended call three ways: the text itself; `PROBE '<s>'` (the intended argv is [PROBE, s]);
//! and, for every `IEC_REPAIR_MILLION_PY_EVERY`-th string, `python3 -I -S -c SCRIPT '<s>'`
//! whose script prints its argv and `s` as a Python literal. Where the launch's process is a
//! POSIX shell here (bash -c, bash -lc, /bin/sh = dash, the Claude Code, Codex, Gemini CLI,
//! goose, opencode wrappers, mcp-shell-server's joined argv), the delivered call of ways 2 and 3
//! is rendered into the launch's process argv (harness rewrites, wrapper, spawn argv; snapshot
//! and state files replaced by /dev/null) and really run, and the probe (or python3) must have
//! received exactly the bytes of `s`. Runs are batched: one shell process runs up to ~120 KB of
//! delivered wrappers, each in a subshell `( … )`, each printing one probe line; a batch whose
//! output differs is re-run case by case with the exact process argv, and a case that differs
//! then is a changed call delivered.
//!
//! Windows launches have no real receiver here. On PowerShell launches ways 2 and 3 are written
//! in PowerShell's quoting (`argvprobe '<s>'` with `''` for `'`, `python3.exe -I -S -c …`) and
//! every delivered call's native argv, as the emulated PowerShell builds it and the program's
//! UCRT parser reads it, must be the intended argv. On cmd.exe launches nothing may be delivered
//! re-rendered (cmd does not read bash renderings).
//!
//! `IEC_REPAIR_MILLION=N` sets the number of strings (default 300),
//! `IEC_REPAIR_MILLION_FROM=F` the index of the first (strings F..F+N, so a long run can be
//! split into ranges; default: a new range every UTC day, the rotation of `iec-testkit`), `IEC_REPAIR_MILLION_LAUNCHES=a,b` limits the launches,
//! `IEC_REPAIR_MILLION_TERMINAL_EVERY=T` gives the terminal-typing launches (a real tmux session
//! per check, ~0.1 s each) only every T-th string (default 10),
//! `IEC_REPAIR_MILLION_REAL_EVERY=K` really runs ways 2 and 3 of every K-th string (default 1:
//! all), `IEC_REPAIR_MILLION_PY_EVERY=P` (default 16) picks the python3 strings,
//! `IEC_REPAIR_MILLION_DUMP=DIR` keeps every batch whose joint output differed,
//! `IEC_REPAIR_MILLION_THREADS=T` sets the worker threads (default: the number of cores).

use iec_check::{call_for_text, check, Options};
use iec_core::{Call, Verdict};
use iec_launches::{render, Catalog, Launch};
use iec_repair::{repair, single_quoted, Outcome};
use iec_testkit::gen;
use iec_witness::global;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

const PROBE: &str = env!("CARGO_BIN_EXE_iec-hexprobe");
/// Longest `-c` text of one batch (execve takes at most 131,072 bytes per argument).
const BATCH_BYTES: usize = 120_000;
const BATCH_CASES: usize = 64;

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum Way {
    Text,
    Probe,
    Python,
}

fn env_usize(name: &str, default: usize) -> usize {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a count")),
        Err(_) => default,
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// The line the hex probe prints for argv [PROBE, s].
fn probe_line(s: &str) -> String {
    format!("1 {}\n", hex(s.as_bytes()))
}

/// A Python script that prints its argument count, each argument's bytes (as the OS passed
/// them: `os.fsencode` undoes the interpreter's decoding) and the UTF-8 bytes of `s` written as
/// a string literal in the script itself. A JSON string is a Python string literal of the same
/// value (serde_json escapes only `"`, `\` and controls, with escapes Python shares).
fn py_script(s: &str) -> String {
    format!(
        "import sys,os\nh=lambda b:b.hex()\nprint(' '.join([str(len(sys.argv)-1)]+[h(os.fsencode(a)) for a in sys.argv[1:]])+'|'+h({}.encode('utf-8')))",
        serde_json::to_string(s).unwrap()
    )
}

fn py_line(s: &str) -> String {
    let h = hex(s.as_bytes());
    format!("1 {h}|{h}\n")
}

/// The real python3 interpreter (a version manager's `python3` on PATH may be a shim script).
fn python3() -> String {
    let out = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .unwrap_or_else(|e| panic!("python3 is needed for the python3 receiver cases: {e}"));
    assert!(out.status.success(), "python3 does not run: {out:?}");
    let p = String::from_utf8(out.stdout).unwrap().trim().to_string();
    assert!(
        p.starts_with('/'),
        "python3 reports no absolute sys.executable: {p:?}"
    );
    p
}

/// Which real receiver a case verifies: the shell of its process argv, python3 for way 3.
fn receiver(argv: &[String], way: Way) -> String {
    let shell = argv[0].rsplit('/').next().unwrap();
    let shell = if shell == "sh" { "dash (/bin/sh)" } else { shell };
    match way {
        Way::Python => format!("python3 via {shell}"),
        _ => format!("probe via {shell}"),
    }
}

struct RealCase {
    launch: String,
    way: Way,
    index: usize,
    text: String,
    delivered: Value,
    argv: Vec<String>,
    expect: String,
}

#[derive(Default)]
struct Stats {
    /// (launch, way) → [delivered unchanged, repaired, refused]
    outcomes: BTreeMap<(String, Way), [usize; 3]>,
    reasons: HashMap<String, usize>,
    /// launch → time spent in repair + re-check
    time: BTreeMap<String, Duration>,
    /// (launch, receiver) → cases really run and verified
    verified: BTreeMap<(String, String), usize>,
    /// (launch, way) → PowerShell calls whose native argv the emulated PowerShell verified
    emulated: BTreeMap<(String, String), usize>,
    batches: usize,
    single_runs: usize,
    reruns: usize,
    changed: Vec<String>,
    /// Refusals because a witness hit a limit (timeout, memory, reply cap): which string.
    limited: Vec<String>,
    /// Checks of a delivered call asked again because a witness hit its limit the first time.
    witness_limit_rechecks: usize,
    real_time: Duration,
}

impl Stats {
    fn merge(&mut self, o: Stats) {
        for (k, v) in o.outcomes {
            let e = self.outcomes.entry(k).or_default();
            for i in 0..3 {
                e[i] += v[i];
            }
        }
        self.limited.extend(o.limited);
        self.witness_limit_rechecks += o.witness_limit_rechecks;
        for (k, v) in o.reasons {
            *self.reasons.entry(k).or_default() += v;
        }
        for (k, v) in o.time {
            *self.time.entry(k).or_default() += v;
        }
        for (k, v) in o.verified {
            *self.verified.entry(k).or_default() += v;
        }
        for (k, v) in o.emulated {
            *self.emulated.entry(k).or_default() += v;
        }
        self.batches += o.batches;
        self.single_runs += o.single_runs;
        self.reruns += o.reruns;
        self.changed.extend(o.changed);
        self.real_time += o.real_time;
    }
}

/// A refusal reason with the case-specific parts (numbers, quoted text) folded, for counting.
fn reason_class(hop: &str, reason: &str) -> String {
    let mut out = format!("{hop}: ");
    let mut last_digit = false;
    for c in reason.chars() {
        if c.is_ascii_digit() {
            if !last_digit {
                out.push('#');
            }
            last_digit = true;
            continue;
        }
        last_digit = false;
        out.push(c);
        if out.chars().count() >= 110 {
            out.push('…');
            break;
        }
    }
    out
}

/// A PowerShell single-quoted literal: everything is literal but `'`, written twice.
fn ps_quoted(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// The argv of each native call, from the check's `native` hop receipt.
fn native_argvs(rep: &iec_core::CheckReport) -> Vec<Vec<String>> {
    rep.hops
        .iter()
        .find(|h| h.name == "native")
        .and_then(|h| h.receipt["calls"].as_array())
        .map(|calls| {
            calls
                .iter()
                .map(|c| serde_json::from_value(c["argv"].clone()).unwrap_or_default())
                .collect()
        })
        .unwrap_or_default()
}

fn run(argv: &[String]) -> Vec<u8> {
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {:?}: {e}", argv[0]));
    out.stdout
}

/// With `IEC_REPAIR_MILLION_DUMP=DIR`, a batch whose joint output differs is written to DIR
/// (process argv as JSON, expected and received output) for a look at why.
fn dump_batch(argv: &[String], want: &[u8], got: &[u8]) {
    let Ok(dir) = std::env::var("IEC_REPAIR_MILLION_DUMP") else {
        return;
    };
    static N: AtomicUsize = AtomicUsize::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let base = std::path::Path::new(&dir).join(format!("batch-{}-{n}", std::process::id()));
    std::fs::write(
        base.with_extension("argv.json"),
        serde_json::to_vec(argv).unwrap(),
    )
    .unwrap();
    std::fs::write(base.with_extension("want"), want).unwrap();
    std::fs::write(base.with_extension("got"), got).unwrap();
}

/// Runs cases that share a process argv prefix in one shell, each in a subshell; on any
/// difference every case is run on its own with its exact argv.
fn run_batch(cases: Vec<RealCase>, stats: &mut Stats) {
    if cases.is_empty() {
        return;
    }
    let t = Instant::now();
    let mut results: Vec<bool> = vec![];
    if cases.len() == 1 {
        stats.single_runs += 1;
        let c = &cases[0];
        results.push(run(&c.argv) == c.expect.as_bytes());
    } else {
        stats.batches += 1;
        let prefix = &cases[0].argv[..cases[0].argv.len() - 1];
        let script: String = cases
            .iter()
            .map(|c| format!("(\n{}\n)\n", c.argv.last().unwrap()))
            .collect();
        let mut argv = prefix.to_vec();
        argv.push(script);
        let want: String = cases.iter().map(|c| c.expect.as_str()).collect();
        let got = run(&argv);
        if got == want.as_bytes() {
            results = vec![true; cases.len()];
        } else {
            dump_batch(&argv, want.as_bytes(), &got);
            for c in &cases {
                stats.reruns += 1;
                results.push(run(&c.argv) == c.expect.as_bytes());
            }
        }
    }
    for (c, ok) in cases.iter().zip(results) {
        if ok {
            *stats
                .verified
                .entry((c.launch.clone(), receiver(&c.argv, c.way)))
                .or_default() += 1;
        } else {
            let got = String::from_utf8_lossy(&run(&c.argv)).into_owned();
            stats.changed.push(format!(
                "{} {:?} #{}: {:?} delivered as {} runs {:?}; expected {:?}, got {:?}",
                c.launch, c.way, c.index, c.text, c.delivered, c.argv, c.expect, got
            ));
        }
    }
    stats.real_time += t.elapsed();
}

#[test]
fn a_million_hostile_strings_are_refused_or_delivered_intact() {
    let n = env_usize("IEC_REPAIR_MILLION", 300).max(1);
    let real_every = env_usize("IEC_REPAIR_MILLION_REAL_EVERY", 1).max(1);
    let py_every = env_usize("IEC_REPAIR_MILLION_PY_EVERY", 16).max(1);
    let terminal_every = env_usize("IEC_REPAIR_MILLION_TERMINAL_EVERY", 10).max(1);
    let py = python3();
    let cat = Catalog::builtin();
    let only = std::env::var("IEC_REPAIR_MILLION_LAUNCHES").ok();
    let launches: Vec<&Launch> = match only.as_deref() {
        Some(o) => cat.iter().filter(|l| o.split(',').any(|id| id == l.id)).collect(),
        None => iec_testkit::rotation::launches_under_test(&cat),
    };
    assert!(
        !launches.is_empty(),
        "IEC_REPAIR_MILLION_LAUNCHES={only:?} names no launch"
    );
    let hops: HashMap<&str, Vec<&str>> = launches
        .iter()
        .map(|l| (l.id.as_str(), l.hops().iter().map(|h| h.name).collect()))
        .collect();
    // More threads than cores pay off where witnesses wait (real tmux sessions).
    let threads = env_usize(
        "IEC_REPAIR_MILLION_THREADS",
        std::thread::available_parallelism().map_or(2, |n| n.get()),
    )
    .max(1);
    // By default a new range of the million every UTC day (`IEC_ROTATION=K` repeats day K).
    let from = env_usize(
        "IEC_REPAIR_MILLION_FROM",
        iec_testkit::rotation::start() % (1_000_000 / n).max(1) * n,
    );
    eprintln!(
        "strings {from}..{} of the million (IEC_REPAIR_MILLION_FROM=F IEC_REPAIR_MILLION=N choose others)",
        from + n
    );
    let end = from + n;
    let next = AtomicUsize::new(from);
    let done = AtomicUsize::new(0);
    let total = Mutex::new(Stats::default());
    let start = Instant::now();
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| {
                let mut st = Stats::default();
                let mut pending: HashMap<Vec<String>, (usize, Vec<RealCase>)> = HashMap::new();
                loop {
                    let first = next.fetch_add(8, Ordering::Relaxed);
                    if first >= end {
                        break;
                    }
                    for i in first..(first + 8).min(end) {
                        let s = gen::hostile_string(&mut gen::Rng::new(0x1EC_0000 ^ i as u64));
                        let mut ways = vec![
                            (Way::Text, s.clone(), None),
                            (
                                Way::Probe,
                                format!("{PROBE} {}", single_quoted(&s)),
                                Some(probe_line(&s)),
                            ),
                        ];
                        if i.is_multiple_of(py_every) {
                            ways.push((
                                Way::Python,
                                format!(
                                    "{py} -I -S -c {} {}",
                                    single_quoted(&py_script(&s)),
                                    single_quoted(&s)
                                ),
                                Some(py_line(&s)),
                            ));
                        }
                        // PowerShell launches get ways 2 and 3 in PowerShell's own quoting,
                        // with Windows program names (their receivers are emulated).
                        let mut ps_ways = vec![(Way::Text, s.clone(), vec![])];
                        ps_ways.push((Way::Probe, format!("argvprobe {}", ps_quoted(&s)), vec![s.clone()]));
                        if i.is_multiple_of(py_every) {
                            let script = py_script(&s);
                            ps_ways.push((
                                Way::Python,
                                format!("python3.exe -I -S -c {} {}", ps_quoted(&script), ps_quoted(&s)),
                                vec!["-I".into(), "-S".into(), "-c".into(), script, s.clone()],
                            ));
                        }
                        for l in launches
                            .iter()
                            .filter(|l| l.terminal.is_none() || i.is_multiple_of(terminal_every))
                        {
                            let language = l.windows.as_ref().map_or("posix", |w| w.receiver.as_str());
                            let ways: Vec<(Way, String, Option<String>, Vec<String>)> = if language == "powershell" {
                                ps_ways.iter().map(|(w, t, a)| (*w, t.clone(), None, a.clone())).collect()
                            } else {
                                ways.iter().map(|(w, t, e)| (*w, t.clone(), e.clone(), vec![])).collect()
                            };
                            for (way, text, expect, native_argv) in &ways {
                                let t = Instant::now();
                                let call = call_for_text(l, text);
                                let out = repair(l, &call, global())
                                    .unwrap_or_else(|e| panic!("{} {way:?} #{i}: repair failed: {e}", l.id));
                                let key = (l.id.clone(), *way);
                                match out {
                                    Outcome::Deliver {
                                        repaired, call: input, ..
                                    } => {
                                        let c = Call {
                                            tool: call.tool.clone(),
                                            input,
                                        };
                                        // An unchanged delivery is the call repair has just
                                        // checked; a repaired one is checked again here.
                                        // PowerShell: the native argv, as the emulated
                                        // PowerShell builds it, must be the intended one.
                                        let native = language == "powershell" && *way != Way::Text;
                                        if repaired && language == "cmd" {
                                            st.changed.push(format!(
                                                "{} {way:?} #{i}: {text:?} delivered to cmd.exe re-rendered as {}",
                                                l.id, c.input
                                            ));
                                        }
                                        let rep = if !repaired && c.input == call.input && !native {
                                            None
                                        } else {
                                            let recheck = || {
                                                check(l, &c, global(), Options::default()).unwrap_or_else(|e| {
                                                    panic!("{} {way:?} #{i}: check of the delivered call failed: {e}", l.id)
                                                })
                                            };
                                            // A witness that hit its limit (the terminal witness
                                            // on a loaded machine) judged nothing: ask once more;
                                            // a second limit stays `unknown` and fails below.
                                            let first = recheck();
                                            Some(if first.attribution.as_deref() == Some(iec_check::WITNESS_LIMIT) {
                                                st.witness_limit_rechecks += 1;
                                                recheck()
                                            } else {
                                                first
                                            })
                                        };
                                        if let Some(rep) = rep.as_ref().filter(|_| native) {
                                            let got = native_argvs(rep);
                                            if got != [native_argv.clone()] {
                                                st.changed.push(format!(
                                                    "{} {way:?} #{i}: {text:?} delivered as {} gives the program {got:?}",
                                                    l.id, c.input
                                                ));
                                            } else {
                                                *st.emulated.entry((l.id.clone(), format!("{way:?}"))).or_default() += 1;
                                            }
                                        }
                                        if let Some(rep) = rep.filter(|r| r.verdict != Verdict::Corresponds) {
                                            st.changed.push(format!(
                                                "{} {way:?} #{i}: {text:?} delivered as {} checks {:?} ({:?}): {:?}",
                                                l.id, c.input, rep.verdict, rep.attribution, rep.first_divergence
                                            ));
                                        }
                                        st.outcomes.entry(key).or_default()[repaired as usize] += 1;
                                        *st.time.entry(l.id.clone()).or_default() += t.elapsed();
                                        let (Some(expect), true) = (expect, i.is_multiple_of(real_every)) else {
                                            continue;
                                        };
                                        let Some(argv) = render::process_argv(l, &c.input) else {
                                            continue;
                                        };
                                        let last = argv.last().unwrap().len();
                                        let case = RealCase {
                                            launch: l.id.clone(),
                                            way: *way,
                                            index: i,
                                            text: text.clone(),
                                            delivered: c.input,
                                            argv,
                                            expect: expect.clone(),
                                        };
                                        // A text ending in a backslash would join the batch's
                                        // closing `\n)` as a line continuation (dash reads
                                        // `PROBE \` + `\n)` as PROBE without argument): alone.
                                        if last + 4 > BATCH_BYTES || case.argv.last().unwrap().ends_with('\\') {
                                            run_batch(vec![case], &mut st);
                                            continue;
                                        }
                                        let prefix = case.argv[..case.argv.len() - 1].to_vec();
                                        let slot = pending.entry(prefix).or_default();
                                        if slot.0 + last + 4 > BATCH_BYTES || slot.1.len() >= BATCH_CASES {
                                            run_batch(std::mem::take(&mut slot.1), &mut st);
                                            slot.0 = 0;
                                        }
                                        slot.0 += last + 4;
                                        slot.1.push(case);
                                    }
                                    Outcome::Refuse { hop, reason } => {
                                        *st.time.entry(l.id.clone()).or_default() += t.elapsed();
                                        if reason.trim().is_empty() || !hops[l.id.as_str()].contains(&hop.as_str()) {
                                            st.changed.push(format!(
                                                "{} {way:?} #{i}: refusal without a reason or a hop of the launch: hop {hop:?}, reason {reason:?}",
                                                l.id
                                            ));
                                        }
                                        st.outcomes.entry(key).or_default()[2] += 1;
                                        if reason.contains("witness could not answer") || reason.contains("could not be verified") {
                                            let head: String = text.chars().take(60).collect();
                                            st.limited.push(format!("{} {way:?} #{i} ({} bytes, {head:?}…): {reason}", l.id, text.len()));
                                        }
                                        *st.reasons.entry(reason_class(&hop, &reason)).or_default() += 1;
                                    }
                                }
                            }
                        }
                        let d = done.fetch_add(1, Ordering::Relaxed) + 1;
                        if n >= 1000 && d.is_multiple_of((n / 20).max(1)) {
                            eprintln!("{d}/{n} strings, {:.0} s", start.elapsed().as_secs_f64());
                        }
                    }
                }
                for (_, (_, cases)) in pending.drain() {
                    run_batch(cases, &mut st);
                }
                total.lock().unwrap().merge(st);
            });
        }
    });
    let st = total.into_inner().unwrap();
    let wall = start.elapsed();

    // The report.
    let sum = |way: Option<Way>, k: usize| -> usize {
        st.outcomes
            .iter()
            .filter(|((_, w), _)| way.is_none_or(|x| x == *w))
            .map(|(_, v)| v[k])
            .sum()
    };
    let py_strings = n.div_ceil(py_every);
    println!(
        "{n} hostile strings #{from}..#{end} ({py_strings} also as python3 calls) × {} launches, {threads} threads, {:.1} s wall",
        launches.len(),
        wall.as_secs_f64()
    );
    if terminal_every > 1 {
        println!("  terminal-typing launches: every {terminal_every}-th string only");
    }
    for (name, w) in [
        ("text itself", Way::Text),
        ("PROBE '<s>'", Way::Probe),
        ("python3 -c", Way::Python),
    ] {
        println!(
            "  {name:<12} delivered unchanged {:>9}, repaired {:>9}, refused {:>9}",
            sum(Some(w), 0),
            sum(Some(w), 1),
            sum(Some(w), 2)
        );
    }
    println!(
        "  all          delivered {} ({} repaired), refused {}",
        sum(None, 0) + sum(None, 1),
        sum(None, 1),
        sum(None, 2)
    );
    println!("per launch (text / probe / python3: unchanged+repaired+refused; repair+check time):");
    for l in &launches {
        let cell = |w: Way| {
            let v = st.outcomes.get(&(l.id.clone(), w)).copied().unwrap_or_default();
            format!("{}+{}+{}", v[0], v[1], v[2])
        };
        println!(
            "  {:<31} {:>22} {:>22} {:>16} {:>8.1} s",
            l.id,
            cell(Way::Text),
            cell(Way::Probe),
            cell(Way::Python),
            st.time.get(&l.id).copied().unwrap_or_default().as_secs_f64()
        );
    }
    let mut reasons: Vec<(&String, &usize)> = st.reasons.iter().collect();
    reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    println!("top refusal reasons ({} classes):", reasons.len());
    for (r, c) in reasons.iter().take(12) {
        println!("  {c:>9}  {r}");
    }
    println!("refused because a witness hit a limit: {}", st.limited.len());
    println!(
        "checks of a delivered call asked twice (a witness limit the first time): {}",
        st.witness_limit_rechecks
    );
    for l in st.limited.iter().take(10) {
        println!("  {l}");
    }
    let verified: usize = st.verified.values().sum();
    println!(
        "really run and verified byte-exact: {verified} cases ({} batches, {} single runs, {} re-runs of a differing batch; {:.1} s in real runs, strings {} of every {real_every})",
        st.batches,
        st.single_runs,
        st.reruns,
        st.real_time.as_secs_f64(),
        if real_every == 1 { "all" } else { "one" }
    );
    let mut by_receiver: BTreeMap<&str, usize> = BTreeMap::new();
    for ((l, r), c) in &st.verified {
        println!("  {l:<31} {r:<28} {c:>9}");
        *by_receiver.entry(r.as_str()).or_default() += c;
    }
    for (r, c) in &by_receiver {
        println!("  receiver {r:<28} {c:>9}");
    }
    if !st.emulated.is_empty() {
        let n: usize = st.emulated.values().sum();
        println!(
            "PowerShell native argv verified by the emulated PowerShell (no real receiver here): {n} calls"
        );
        for ((l, w), c) in &st.emulated {
            println!("  {l:<31} {w:<28} {c:>9}");
        }
    }
    println!("changed calls delivered: {}", st.changed.len());
    for c in st.changed.iter().take(20) {
        println!("  CHANGED {c}");
    }
    assert!(
        st.changed.is_empty(),
        "{} changed calls delivered (first: {})",
        st.changed.len(),
        st.changed[0]
    );

    // The run exercised what it claims to.
    for l in launches
        .iter()
        .filter(|l| l.windows.as_ref().is_some_and(|w| w.receiver == "powershell"))
    {
        let probes = st
            .emulated
            .get(&(l.id.clone(), "Probe".into()))
            .copied()
            .unwrap_or(0);
        assert!(probes > 0 || n < 100, "{}: no PowerShell probe verified", l.id);
    }
    if only.is_none() {
        assert!(sum(None, 1) > 0 && sum(None, 2) > 0, "no repair or no refusal");
    }
    for id in [
        "bash-c",
        "bash-lc",
        "sh-c",
        "claude-code-2.1.72-linux",
        "claude-code-2.1.332-linux",
        "codex-exec-command-linux",
        "gemini-cli-linux",
        "goose-linux",
        "opencode-linux",
    ]
    .into_iter()
    .filter(|id| launches.iter().any(|l| l.id == *id))
    {
        let real: usize = st
            .verified
            .iter()
            .filter(|((l, r), _)| l == id && r.starts_with("probe"))
            .map(|(_, c)| c)
            .sum();
        assert!(real > 0, "{id}: no case really run");
        let py: usize = st
            .verified
            .iter()
            .filter(|((l, r), _)| l == id && r.starts_with("python3"))
            .map(|(_, c)| c)
            .sum();
        assert!(py > 0 || n < py_every * 4, "{id}: no python3 case really run");
    }
}
