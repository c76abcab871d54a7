//! Harness mode on real Codex 0.171.0 and real Gemini CLI 0.61.0 (issue 21 item 5): the first pair
//! of each family, each variant's recorded text one tool call run in its own sandbox through the shell
//! tool's working-directory parameter, must pass or fail exactly as replay mode's emulated outcome
//! on the launch that `iec check --harness` resolves for that version. The pairs mix hazards the
//! harness changes (Gemini CLI refuses command substitution and pads a trailing backslash) with
//! ones it delivers unchanged (Claude Code's hazards: `!`, `\\;`, control bytes), and the
//! measured column is checked against the real outcome, not only against replay mode.
//!
//! Beside the pairs, a few chains and tasks go through the same launch ([`CHAINS`], [`TASKS`]):
//! a chain's steps in order in its sandbox (the lookup-table tools on the harness's `PATH`, each
//! later step built from what the previous step's tool received), a task's actions in its
//! sandbox, checked by the task's final state. They include the hazards Claude Code changes
//! (`!` in a chain's arguments, `$HOME`/`!` in a task's quoted program), which Codex and Gemini
//! CLI deliver as emitted, and a `$(…)` inside `$'…'` (chain-001), which Gemini CLI's
//! command-substitution refusal must not catch.
//!
//! The harnesses are installed from npm into iec's cache (reused when present). When the install
//! fails and `IEC_SKIP_HARNESS=1` (or `IEC_SKIP_NPM=1`) is set, a test prints `SKIPPED: …` and
//! passes. The argv probe is `$IEC_ARGVPROBE`, else `iec-argvprobe` beside the test, else built.

use iec_bench::harness::{self, HarnessReport, Kind, Options};
use iec_bench::replay::Runner;
use iec_bench::Suite;
use iec_launches::Catalog;
use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

/// The pairs: the first of each family (`…-1`), 18 of the 75: the hazards Gemini CLI changes
/// (`$(…)` refused, a trailing `\` padded) and those other harnesses change that Codex and Gemini
/// CLI deliver as emitted (`!`, `\\;`, control bytes, a pipe's `$$`, here-documents, …).
fn first_of_each_family(suite: &mut Suite) {
    suite.pairs.retain(|p| p.id.ends_with("-1"));
    assert_eq!(suite.pairs.len(), FAMILIES);
}

/// The pair families of the built-in suite.
const FAMILIES: usize = 18;

/// The chains beside the pairs: chain-003 and chain-004 lose a step on Claude Code 2.1.72 (`!`
/// after a backslash), chain-001 holds `$(not run)` in `$'…'`, chain-006 has none of these.
const CHAINS: [&str; 4] = ["chain-001", "chain-003", "chain-004", "chain-006"];

/// The tasks beside the pairs: json-config-3 and python-data-1 fail on Claude Code 2.1.72
/// (re-expansion in a quoted program), git-commit-4 commits (the harness's shell gets the
/// bench's git identity), sed-amp-1 and leading-dash-2 have one and two actions.
const TASKS: [&str; 5] = [
    "git-commit-4",
    "json-config-3",
    "python-data-1",
    "sed-amp-1",
    "leading-dash-2",
];

/// [`CHAINS`] and [`TASKS`] only (in the suite's order).
fn a_few_chains_and_tasks(suite: &mut Suite) {
    suite.chains.retain(|c| CHAINS.contains(&c.id.as_str()));
    suite.tasks.retain(|t| TASKS.contains(&t.id.as_str()));
    assert_eq!(
        (suite.chains.len(), suite.tasks.len()),
        (CHAINS.len(), TASKS.len())
    );
}

/// The calls of [`CHAINS`] and [`TASKS`] (every step and action).
fn chain_and_task_calls(suite: &Suite) -> usize {
    suite.chains.iter().map(|c| c.steps.len()).sum::<usize>()
        + suite.tasks.iter().map(|t| t.actions.len()).sum::<usize>()
}

/// Harness mode over [`first_of_each_family`] through `spec`, with replay mode's report on its launch.
fn run(spec: &str) -> (Options, HarnessReport, Duration, usize) {
    let cat = Catalog::builtin();
    let mut suite = Suite::builtin().unwrap();
    first_of_each_family(&mut suite);
    a_few_chains_and_tasks(&mut suite);
    let mut opts = Options::new(spec, &cat).unwrap();
    // Every call in one launch (63 calls; Gemini CLI takes at most 89).
    opts.batch = harness::GEMINI_MAX_VARIANTS;
    opts.probe = Some(iec_testkit::bins::workspace_bin(
        "iec-argvprobe",
        "iec-harness",
        "IEC_ARGVPROBE",
    ));
    let replay = Runner::new(&cat, &[opts.launch.as_str()])
        .unwrap()
        .run(&suite, 2)
        .unwrap();
    let t = Instant::now();
    let h = harness::run(&suite, &replay, &opts).unwrap_or_else(|e| panic!("{spec}: {e}"));
    (opts, h, t.elapsed(), chain_and_task_calls(&suite))
}

/// Every variant's measured outcome, by (item, variant).
fn measured(h: &HarnessReport) -> BTreeMap<(String, &'static str), bool> {
    h.results
        .iter()
        .map(|r| {
            assert_eq!(r.intact, "off");
            ((r.item.clone(), r.variant), r.measured)
        })
        .collect()
}

/// What every Codex and Gemini CLI report shares: one launch of one `pwd` probe, one call per
/// pair variant and every step and action of the chains and tasks, IntAct off only and said
/// why, every variant agreeing with replay mode, and every chain and task passing for real (the
/// hazards Claude Code changes are delivered as emitted).
fn common(spec: &str, launch: &str, kind: Kind, h: &HarnessReport, secs: f64, more_calls: usize) {
    let items = FAMILIES + CHAINS.len() + TASKS.len();
    assert_eq!((h.harness.as_str(), h.launch.as_str()), (spec, launch));
    assert_eq!(
        (h.items, h.sessions, h.calls),
        (items, 1, 1 + 2 * FAMILIES + more_calls)
    );
    assert_eq!(h.results.len(), 2 * FAMILIES + CHAINS.len() + TASKS.len());
    let kinds: Vec<(&str, usize, usize)> = h
        .kinds
        .iter()
        .map(|(k, v)| (*k, v.items, v.intact_off.agree))
        .collect();
    assert_eq!(
        kinds,
        [
            ("chain", CHAINS.len(), CHAINS.len()),
            ("pair", FAMILIES, FAMILIES),
            ("task", TASKS.len(), TASKS.len())
        ]
    );
    for r in h.results.iter().filter(|r| r.kind != "pair") {
        assert!(r.measured && r.stopped.is_none(), "{r:?}");
    }
    assert!(h.intact_on.is_none());
    let why = h.intact_on_unavailable.as_deref().unwrap();
    assert!(
        why.starts_with(&format!("not available for {spec}: {}", kind.title())) && why.contains("no hook"),
        "{why}"
    );
    assert!(h.disagreements.is_empty(), "{:#?}", h.disagreements);
    assert_eq!((h.agree, h.intact_off.agree), (items, items));
    for r in &h.results {
        assert_eq!(r.emulated, r.measured, "{r:?}");
    }
    let _ = writeln!(
        std::io::stderr(),
        "{spec}: {} items, {}/{} agree, {} calls, {secs:.1} s",
        h.items,
        h.agree,
        h.items,
        h.calls
    );
}

#[test]
fn harness_mode_on_codex_0_171_0_agrees_with_replay_on_codex_exec_command_linux() {
    if !iec_testkit::skip::installed("@openai/codex@0.171.0", || iec_harness::install_codex("0.171.0")) {
        return;
    }
    let (opts, h, t, more) = run("codex@0.171.0");
    assert_eq!(opts.kind, Kind::Codex);
    common(
        "codex@0.171.0",
        "codex-exec-command-linux",
        Kind::Codex,
        &h,
        t.as_secs_f64(),
        more,
    );
    // Codex delivers every text as emitted: every hazard and every control passes, the other
    // harnesses' hazards included.
    assert!(measured(&h).values().all(|pass| *pass), "{:#?}", h.results);
}

#[test]
fn harness_mode_on_gemini_cli_0_61_0_agrees_with_replay_on_gemini_cli_linux() {
    if !iec_testkit::skip::installed("@google/gemini-cli@0.61.0", || {
        iec_harness::gemini::install_gemini_cli("0.61.0")
    }) {
        return;
    }
    let (opts, h, t, more) = run("gemini-cli@0.61.0");
    assert_eq!(opts.kind, Kind::GeminiCli);
    common(
        "gemini-cli@0.61.0",
        "gemini-cli-linux",
        Kind::GeminiCli,
        &h,
        t.as_secs_f64(),
        more,
    );
    // The hazards Gemini CLI changes fail for real (the substitution refused, the backslash
    // padded), their controls and every other variant pass.
    let m = measured(&h);
    let fails: Vec<_> = m
        .iter()
        .filter(|(_, pass)| !**pass)
        .map(|(k, _)| k.clone())
        .collect();
    assert_eq!(
        fails,
        [
            ("subst-in-pipe-1".to_string(), "hazard"),
            ("trailing-backslash-1".to_string(), "hazard"),
        ]
    );
}

/// Codex and Gemini CLI resolve to their learned launches by version range; a version in no
/// range, an unknown harness and IntAct on for a harness without an iec hook are errors that
/// say why.
#[test]
fn harness_mode_resolves_launches_by_version_range() {
    let cat = Catalog::builtin();
    let o = Options::new("codex@0.171.0", &cat).unwrap();
    assert_eq!(
        (o.kind, o.launch.as_str(), o.version.as_str()),
        (Kind::Codex, "codex-exec-command-linux", "0.171.0")
    );
    let o = Options::new("gemini-cli@0.61.0", &cat).unwrap();
    assert_eq!((o.kind, o.launch.as_str()), (Kind::GeminiCli, "gemini-cli-linux"));
    // Inside a learned range that is not its first version.
    let o = Options::new("gemini-cli@0.5.0", &cat).unwrap();
    assert_eq!(o.launch, "gemini-cli-0.1.21-linux");
    let o = Options::new("claude-code@2.1.72", &cat).unwrap();
    assert_eq!(
        (o.kind, o.launch.as_str()),
        (Kind::ClaudeCode, "claude-code-2.1.72-linux")
    );
    assert_eq!(o.intact_unavailable(), None);
    for (spec, want) in [
        (
            "opencode@1.0.0",
            "harness mode drives Claude Code, Codex and Gemini CLI",
        ),
        ("codex@", "harness mode drives Claude Code, Codex and Gemini CLI"),
        ("codex@9.9.9", "no launch models codex@9.9.9"),
        ("gemini-cli@x", "no launch models gemini-cli@x"),
    ] {
        let e = Options::new(spec, &cat).unwrap_err().to_string();
        assert!(e.contains(want), "{spec}: {e}");
    }
    let mut o = Options::new("codex@0.171.0", &cat).unwrap();
    o.hook = Some("iec hook claude-code".into());
    let suite = Suite {
        pairs: vec![],
        chains: vec![],
        tasks: vec![],
    };
    let replay = Runner::new(&cat, &[o.launch.as_str()])
        .unwrap()
        .run(&suite, 1)
        .unwrap();
    let e = harness::run(&suite, &replay, &o).unwrap_err().to_string();
    assert!(
        e.starts_with("IntAct on is not available for codex@0.171.0: Codex has PreToolUse hooks"),
        "{e}"
    );
}
