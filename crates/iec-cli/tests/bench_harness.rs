//! `iec bench --mode harness` on a real Claude Code 2.1.72 (issue 21 item 5): every pair's hazard
//! and control go to the harness as the replay model's tool calls and run for real, IntAct off and
//! on (the iec hook); each variant's measured outcome must equal replay mode's emulated outcome
//! on `claude-code-2.1.72-linux`, except the disagreements listed in
//! `tests/data/bench-harness-disagreements.jsonl`, whose reasons are checked here against what
//! the harness recorded. The same on Claude Code 2.1.332 is `#[ignore]`d (it doubles the
//! time; `cargo test -p iec-cli --test bench_harness -- --ignored` runs it).
//!
//! On 2.1.72 a few chains and tasks ([`CHAINS`], [`TASKS`]) go through the same launches: a
//! chain's steps in order in its sandbox (each later step built from what the previous step's
//! tool actually received, so a step the harness changed stops the chain), a task's actions in
//! its sandbox, each item passing or failing as replay mode says, IntAct off and on.
//!
//! Claude Code is installed from npm into iec's cache (reused when present). When the install
//! fails and `IEC_SKIP_HARNESS=1` (or `IEC_SKIP_NPM=1`) is set, the test prints `SKIPPED: …` and
//! passes. The argv probe is `$IEC_ARGVPROBE`, else `iec-argvprobe` beside the test's `iec`, else
//! built there.

mod support;

use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::time::Instant;

/// Claude Code `version` installed, or `false` after printing SKIPPED when the install failed
/// and a skip variable is set.
fn installed(version: &str) -> bool {
    iec_testkit::skip::installed(&format!("@anthropic-ai/claude-code@{version}"), || {
        iec_harness::install_claude_code(version)
    })
}

/// The chains beside the pairs on 2.1.72: chain-003 and chain-004 lose step 2 to the harness
/// (`\!` where `!` was emitted, as replay mode's re-expansion says) and IntAct repairs them;
/// chain-001 and chain-006 pass.
const CHAINS: [&str; 4] = ["chain-001", "chain-003", "chain-004", "chain-006"];

/// The tasks beside the pairs on 2.1.72: json-config-3, json-config-5 and python-data-1 fail
/// IntAct off (json-config-5 also on: the harness rewrites its `\\;` before the hook runs,
/// listed in the disagreements); git-commit-4 commits, sed-amp-1 and leading-dash-2 pass.
const TASKS: [&str; 6] = [
    "git-commit-4",
    "json-config-3",
    "json-config-5",
    "python-data-1",
    "sed-amp-1",
    "leading-dash-2",
];

/// The items of the built-in data file `file` whose id is in `ids`, as lines.
fn builtin_lines(file: &str, ids: Option<&[&str]>) -> (String, usize) {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../iec-bench/data");
    let text = std::fs::read_to_string(dir.join(file)).unwrap();
    let lines: Vec<&str> = text
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter(|l| {
            let v: Value = serde_json::from_str(l).unwrap();
            ids.is_none_or(|ids| ids.contains(&s(&v["id"])))
        })
        .collect();
    (lines.iter().map(|l| format!("{l}\n")).collect(), lines.len())
}

/// The listed disagreements of `harness`, by (item, intact, variant).
fn allowed(harness: &str) -> BTreeMap<(String, String, String), Value> {
    let text = include_str!("data/bench-harness-disagreements.jsonl");
    text.lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| serde_json::from_str::<Value>(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .filter(|v| v["harness"] == harness)
        .map(|v| {
            let key = ["item", "intact", "variant"].map(|k| v[k].as_str().unwrap().to_string());
            (key.into(), v)
        })
        .collect()
}

/// Checks the reason (`a["kind"]`) of the listed disagreement `d` against what the harness
/// recorded.
fn check_reason(key: &(String, String, String), d: &Value, a: &Value) {
    // A task's or chain's call `a["call"]` (from 0), a pair's text.
    let emitted = match a["call"].as_u64() {
        Some(k) => s(&d["calls"][k as usize]),
        None => s(&d["emitted"]),
    };
    match s(&a["kind"]) {
        // Claude Code replaced `\\;` with `\;` before its hook ran, as its own record of the call
        // and the hook's input show, and the iec hook let the changed call through.
        "rewritten-before-hook" => {
            let rewritten = emitted.replace(r"\\;", r"\;");
            assert_ne!(rewritten, emitted, "{key:?}: no `\\\\;` in {emitted:?}");
            assert_eq!(s(&a["hook_received"]), rewritten, "{key:?}");
            assert_eq!(s(&d["hook_input"]), rewritten, "{key:?}: {d}");
            assert_eq!(s(&d["echoed"]), rewritten, "{key:?}: {d}");
        }
        // Claude Code refused the call for its control characters before any hook ran.
        "refused-before-hook" => {
            assert!(
                emitted.chars().any(|c| c.is_control() && c != '\t' && c != '\n'),
                "{key:?}: no control character in {emitted:?}"
            );
            assert_eq!(d["hook_input"], Value::Null, "{key:?}: the hook saw it: {d}");
            let why = s(&d["why"]);
            assert!(
                why.contains("tool result (error)")
                    && why.contains("InputValidationError")
                    && why.contains("control characters"),
                "{key:?}: {why}"
            );
        }
        other => panic!("{key:?}: unknown kind of reason {other:?}"),
    }
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_else(|| panic!("not a string: {v}"))
}

#[test]
fn harness_mode_on_claude_code_2_1_72_agrees_with_replay_on_every_pair() {
    agrees_on_every_pair("2.1.72");
}

#[test]
#[ignore = "doubles the test's time; run with --ignored"]
fn harness_mode_on_claude_code_2_1_332_agrees_with_replay_on_every_pair() {
    agrees_on_every_pair("2.1.332");
}

/// `iec bench --mode harness` on Claude Code `version`: every variant agrees with replay mode on
/// its launch, but the listed disagreements, whose reasons hold.
fn agrees_on_every_pair(version: &str) {
    if !installed(version) {
        return;
    }
    let harness = format!("claude-code@{version}");
    let launch = format!("claude-code-{version}-linux");
    let (harness, launch) = (harness.as_str(), launch.as_str());
    // A private copy of iec as the IntAct hook: a concurrent build that relinks target/…/iec
    // mid-run must not make a hook call fail.
    let dir = tempfile::tempdir().unwrap();
    let iec = dir.path().join("iec");
    std::fs::copy(env!("CARGO_BIN_EXE_iec"), &iec).unwrap();
    let probe = iec_testkit::bins::workspace_bin("iec-argvprobe", "iec-harness", "IEC_ARGVPROBE");
    // Every pair, and on 2.1.72 a few chains and tasks.
    let with_more = version == "2.1.72";
    let data = dir.path().join("data");
    std::fs::create_dir(&data).unwrap();
    let none: &[&str] = &[];
    let (chains, tasks) = if with_more {
        (&CHAINS[..], &TASKS[..])
    } else {
        (none, none)
    };
    let (pairs_text, n_pairs) = builtin_lines("pairs.jsonl", None);
    let (chains_text, n_chains) = builtin_lines("chains.jsonl", Some(chains));
    let (tasks_text, n_tasks) = builtin_lines("tasks.jsonl", Some(tasks));
    assert_eq!((n_chains, n_tasks), (chains.len(), tasks.len()));
    std::fs::write(data.join("pairs.jsonl"), pairs_text).unwrap();
    std::fs::write(data.join("chains.jsonl"), &chains_text).unwrap();
    std::fs::write(data.join("tasks.jsonl"), &tasks_text).unwrap();
    // The calls of the chains and tasks: a `cd`, then every step or action.
    let more_calls: usize = chains_text
        .lines()
        .map(|l| {
            1 + serde_json::from_str::<Value>(l).unwrap()["calls"]
                .as_array()
                .unwrap()
                .len()
        })
        .chain(tasks_text.lines().map(|l| {
            1 + serde_json::from_str::<Value>(l).unwrap()["actions"]
                .as_array()
                .unwrap()
                .len()
        }))
        .sum();
    let t = Instant::now();
    let (code, out, err) = support::run_env(
        iec.to_str().unwrap(),
        &[
            "bench",
            "--mode",
            "harness",
            "--harness",
            harness,
            "--format",
            "json",
            "--items",
            "--data",
            data.to_str().unwrap(),
        ],
        b"",
        &[("IEC_ARGVPROBE", probe.to_str().unwrap())],
    );
    let secs = t.elapsed().as_secs_f64();
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));

    // Replay mode's report over the items on the harness's launch, with the harness beside it.
    let top: BTreeSet<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
    assert_eq!(
        top,
        BTreeSet::from(["pairs", "chains", "tasks", "paths", "overall", "items"])
    );
    let pairs = v["pairs"].as_u64().unwrap() as usize;
    assert!(pairs >= 67, "{pairs} pairs");
    assert_eq!(pairs, n_pairs);
    assert_eq!(
        (v["chains"].as_u64(), v["tasks"].as_u64()),
        (Some(chains.len() as u64), Some(tasks.len() as u64))
    );
    let items = pairs + chains.len() + tasks.len();
    let paths: Vec<&String> = v["paths"].as_object().unwrap().keys().collect();
    assert_eq!(paths, [launch]);
    let path = &v["paths"][launch];
    assert_eq!(path["items"].as_u64(), Some(items as u64));
    let h = &path["harness"];
    assert_eq!((s(&h["harness"]), s(&h["launch"])), (harness, launch));
    assert_eq!(h["items"].as_u64(), Some(items as u64));
    // Two calls (cd, then the text) per variant, two variants per pair; a `cd`, then every
    // step or action per chain and task; IntAct off and on.
    assert_eq!(h["calls"].as_u64(), Some((8 * pairs + 2 * more_calls) as u64));
    for (kind, n) in [("pair", pairs), ("chain", chains.len()), ("task", tasks.len())] {
        assert_eq!(
            h["kinds"][kind]["items"].as_u64(),
            (n > 0).then_some(n as u64),
            "{kind}"
        );
    }

    // Every variant measured, beside the emulated outcome.
    let results = h["results"].as_array().unwrap();
    assert_eq!(results.len(), 4 * pairs + 2 * (chains.len() + tasks.len()));
    if with_more {
        // The chains and tasks that fail for real (IntAct off, on), and why the chains stopped.
        let failing = |intact: &str| -> Vec<&str> {
            results
                .iter()
                .filter(|r| r["kind"] != "pair" && r["intact"] == intact && r["measured"] == false)
                .map(|r| s(&r["item"]))
                .collect()
        };
        assert_eq!(
            failing("off"),
            [
                "chain-003",
                "chain-004",
                "json-config-3",
                "json-config-5",
                "python-data-1"
            ]
        );
        assert_eq!(failing("on"), ["json-config-5"]);
        for r in results.iter().filter(|r| r["kind"] == "chain") {
            let stopped = r["stopped"].as_str();
            match (s(&r["item"]), s(&r["intact"])) {
                (id @ ("chain-003" | "chain-004"), "off") => {
                    let why = stopped.unwrap_or_else(|| panic!("{r}"));
                    assert!(
                        why.starts_with("the model stopped the chain after step 2: its tool gave no output (no row of owner_of for argv")
                            && why.contains(r#"\\!""#),
                        "{id}: {why}"
                    );
                }
                _ => assert_eq!(stopped, None, "{r}"),
            }
        }
    }
    let emulated_lost = path["lost"].as_u64().unwrap() as usize;
    let fails = |intact: &str, variant: &str, col: &str| {
        results
            .iter()
            .filter(|r| r["intact"] == intact && r["variant"] == variant && r[col] == false)
            .count()
    };
    // The measured column is not all passes: the real harness loses what replay mode loses
    // (pair hazards, chains and tasks).
    assert_eq!(
        fails("off", "hazard", "measured")
            + fails("off", "steps", "measured")
            + fails("off", "actions", "measured"),
        emulated_lost
    );
    assert!(emulated_lost > 0);

    // Every disagreement is listed, every listed one occurs, and each reason holds.
    let allowed = allowed(harness);
    let disagreements = h["disagreements"].as_array().unwrap();
    let mut seen = BTreeSet::new();
    for d in disagreements {
        let key = (
            s(&d["item"]).to_string(),
            s(&d["intact"]).to_string(),
            s(&d["variant"]).to_string(),
        );
        let Some(a) = allowed.get(&key) else {
            panic!(
                "an unlisted disagreement (add it to tests/data/bench-harness-disagreements.jsonl \
                 only with a checked reason):\n{}",
                serde_json::to_string_pretty(d).unwrap()
            );
        };
        assert_eq!(
            (&d["emulated"], &d["measured"]),
            (&a["emulated"], &a["measured"]),
            "{key:?}"
        );
        check_reason(&key, d, a);
        // IntAct off, the same variant agrees: only the hook's place differs from replay's.
        let off = results
            .iter()
            .find(|r| r["item"] == key.0.as_str() && r["intact"] == "off" && r["variant"] == key.2.as_str())
            .unwrap();
        assert_eq!(off["emulated"], off["measured"], "{off}");
        seen.insert(key);
    }
    let missing: Vec<_> = allowed.keys().filter(|k| !seen.contains(*k)).collect();
    assert!(missing.is_empty(), "listed but not seen: {missing:?}");

    let items_on: BTreeSet<&String> = seen.iter().filter(|k| k.1 == "on").map(|k| &k.0).collect();
    let items_off: BTreeSet<&String> = seen.iter().filter(|k| k.1 == "off").map(|k| &k.0).collect();
    assert_eq!(
        h["intact_off"]["agree"].as_u64(),
        Some((items - items_off.len()) as u64)
    );
    assert_eq!(
        h["intact_on"]["agree"].as_u64(),
        Some((items - items_on.len()) as u64)
    );
    let _ = writeln!(
        std::io::stderr(),
        "{harness}: {items} items, IntAct off {}/{items} agree, on {}/{items} ({} listed disagreements), {} launches, {secs:.1} s",
        h["intact_off"]["agree"],
        h["intact_on"]["agree"],
        disagreements.len(),
        h["sessions"]
    );
}

/// What harness mode cannot run is an error that says why, before anything runs.
#[test]
fn harness_mode_refuses_what_it_cannot_run() {
    for (args, want) in [
        (
            &["--harness", "opencode@1.0.0"][..],
            "harness mode drives Claude Code, Codex and Gemini CLI: expected claude-code@VERSION, \
             codex@VERSION or gemini-cli@VERSION, got \"opencode@1.0.0\"",
        ),
        (
            &["--harness", "claude-code@"][..],
            "harness mode drives Claude Code, Codex and Gemini CLI",
        ),
        (
            &["--harness", "codex@9.9.9"][..],
            "no launch models codex@9.9.9: harness mode compares with replay mode on the launch \
             whose version range holds it",
        ),
        (
            &["--harness", "claude-code@9.9.9"][..],
            "no launch claude-code-9.9.9-linux models claude-code@9.9.9",
        ),
        (
            &["--paths", "bash-c"][..],
            "--paths is for replay mode: harness mode runs the launch that models --harness",
        ),
        (
            &["--html", "x.html"][..],
            "--html and --toolhop are for replay mode",
        ),
    ] {
        let mut all = vec!["bench", "--mode", "harness"];
        all.extend_from_slice(args);
        let (code, out, err) = support::run_env(env!("CARGO_BIN_EXE_iec"), &all, b"", &[]);
        assert_eq!(code, 2, "{all:?}: {out}{err}");
        assert!(out.is_empty(), "{all:?}: {out}");
        assert!(err.starts_with("iec: ") && err.contains(want), "{all:?}: {err}");
    }
}
