//! `iec harness learn` on harness versions no launch file was written for (issue 17 items 3–4):
//! Claude Code 2.0.76 and 1.0.128 (the last 1.0.x), Codex and Gemini CLI at their pinned
//! versions. Each test learns the launch from the markers run through the real harness (the
//! replay model thinking `IEC_LEARN_THINK_MS`, default 500 ms, before each call), asserts what
//! was learned, that `iec check` on the learned launch agrees with every marker, and that it
//! agrees with the real harness on the action hazard payloads
//! (`action_hazard_payloads(N, 1217)`, the set of `tests/agreement.rs`): `N` is
//! `IEC_LEARN_PAYLOADS` (default 40, to keep CI time in check; 300 for the figure, see
//! docs/testing.md).
//!
//! When the npm install fails, the test fails with the npm error, unless `IEC_SKIP_HARNESS=1`
//! (or `IEC_SKIP_NPM=1`) is set: then it prints `SKIPPED: …` and passes.

mod support;

use std::time::{Duration, Instant};

use iec_harness::action_hazard_payloads;
use iec_harness::agree::{agree_observed_launch, agreement_line, RunSpec};
use iec_harness::harness;
use iec_harness::learn::{learn_harness, LearnOptions, Learned, MarkerKind};
use support::ACTION_SEED;

fn env_num(name: &str, default: u64) -> u64 {
    match std::env::var(name) {
        Ok(v) => v
            .parse()
            .unwrap_or_else(|_| panic!("{name}={v:?} is not a number")),
        Err(_) => default,
    }
}

/// Real runs of `version`, the replay model thinking `IEC_LEARN_THINK_MS` before each call.
fn spec(version: &str) -> RunSpec {
    let mut spec = support::spec(version);
    spec.think = Duration::from_millis(env_num("IEC_LEARN_THINK_MS", 500));
    spec
}

/// Learns `harness@version`, checks that `iec check` on the learned launch agrees with the real
/// run on every marker (no exception: Gemini CLI's stripping of a model-written `bash -c '…'` is
/// judged by `iec_check::wrapping`'s whitelist), and compares the learned launch with real runs
/// of the action hazard payloads. `None` when skipped.
fn learn_and_agree(spec_text: &str) -> Option<Learned> {
    let (h, version) = harness::parse(spec_text).expect("harness spec");
    support::installed(&format!("{} {version}", h.title()), support::HARNESS_SKIP, || {
        h.install(&version)
    })?;
    let spec = spec(&version);
    let t = Instant::now();
    let l = learn_harness(h.as_ref(), &spec, &LearnOptions { verify: 0 }).expect("learn");
    eprintln!("{}", l.toml);
    let learn_s = t.elapsed().as_secs_f64();
    // Every marker that iec check judges agrees with what the real harness did.
    let bad: Vec<String> = l
        .evidence
        .iter()
        .filter(|e| e.agrees == Some(false))
        .map(|e| {
            format!(
                "{} {:?}: {} (probe {:?}, direct {:?})",
                e.marker, e.command, e.finding, e.probe, e.direct_probe
            )
        })
        .collect();
    assert!(
        bad.is_empty(),
        "markers where iec check disagrees:\n{}",
        bad.join("\n")
    );
    for e in &l.evidence {
        if e.kind == MarkerKind::Rendering && e.reached_shell {
            assert_eq!(e.template_diff, None, "marker {}: {}", e.marker, e.finding);
        }
    }
    let n = env_num("IEC_LEARN_PAYLOADS", 40) as usize;
    let payloads = support::payloads(action_hazard_payloads, n, ACTION_SEED);
    let t = Instant::now();
    let observed = harness::run_observed(h.as_ref(), &spec, &payloads).expect("real runs");
    let rep = agree_observed_launch(&version, &l.launch, &observed).expect("agree");
    let changed = observed.iter().filter(|o| o.verdict != "corresponds").count();
    eprintln!(
        "learned {} ({} markers, {learn_s:.1} s) vs real {spec_text}: {}/{} action hazard payloads agree, {changed} observed changed, {:.1} s",
        l.launch.id,
        l.evidence.len(),
        rep.totals["agree"],
        rep.results.len(),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(rep.results.len(), n);
    let bad: Vec<String> = rep.disagreements().into_iter().map(agreement_line).collect();
    assert!(
        bad.is_empty(),
        "the learned launch disagrees with real {spec_text} runs:\n{}",
        bad.join("\n")
    );
    Some(l)
}

/// Learns Claude Code `version` (1.0.x or 2.0.x) and checks what those share: `bash -c -l
/// WRAPPER` (options after `-c`: the wrapper is the command string, and the shell is a login
/// shell), shell-quote rendering with the pipe rearrangement of that era, `\\;` normalised to
/// `\;`, no validation; and the wrapper template, when given.
fn learn_claude_code_pre_2_1(version: &str, template: Option<&str>) {
    let Some(l) = learn_and_agree(&format!("claude-code@{version}")) else {
        return;
    };
    assert_eq!(l.launch.spawn.argv, ["/bin/bash", "-c", "-l", "{{wrapper}}"]);
    assert!(l.launch.spawn.login);
    let inv = iec_launches::invocation::bash_invocation("/bin/bash", &l.launch.spawn.argv[1..]).unwrap();
    assert_eq!((inv.command, inv.login), (Some(2), true));
    let w = l.launch.wrapper.as_ref().expect("a wrapper was learned");
    assert_eq!(w.payload, "claude-code-2.0.76");
    assert!(w.eval);
    assert_eq!(w.stdin_suffix.as_deref(), Some(" < /dev/null"));
    assert_eq!(
        l.launch.rewrite.as_ref().map(|r| r.steps.clone()),
        Some(vec!["claude-code-unescape-semicolon".to_string()])
    );
    assert_eq!(l.launch.validate.reject_control_chars, None);
    assert_eq!(l.launch.validate.reject_command_substitution, None);
    if let Some(template) = template {
        assert_eq!(w.template, template);
    }
}

const TEMPLATE_2_0_76: &str = "source {{snapshot}} && { shopt -u extglob || setopt NO_EXTENDED_GLOB; } 2>/dev/null || true && eval {{payload}} && pwd -P >| {{tmp}}/claude-0a1b-cwd";

/// Claude Code 2.0.76 (the issue's own case) and one more version of each earlier line (the
/// issue asks for one besides 2.0.76 in 2.0.x and one in 1.0.x): 2.0.30, the middle of 2.0,
/// and 1.0.128, the last 1.0. Each takes about a minute of real harness runs, so a CI run
/// learns `IEC_LEARN_EARLIER` of them (default 1, `all` for the three) in a rotation by the
/// UTC day (`IEC_ROTATION`); three consecutive days learn all three.
#[test]
fn learned_claude_code_of_the_earlier_lines_agree_with_real_runs() {
    let versions: Vec<(&str, Option<&str>)> = vec![
        ("2.0.76", Some(TEMPLATE_2_0_76)),
        ("2.0.30", None),
        (
            "1.0.128",
            Some("source {{snapshot}} && eval {{payload}} && pwd -P >| {{tmp}}/claude-0a1b-cwd"),
        ),
    ];
    let run = iec_testkit::rotation::sample(versions, "IEC_LEARN_EARLIER", 1);
    let names: Vec<&str> = run.iter().map(|(v, _)| *v).collect();
    eprintln!("earlier lines learned in this run (IEC_LEARN_EARLIER=all for the three): {names:?}");
    assert!(!run.is_empty(), "IEC_LEARN_EARLIER=0 learns nothing");
    for (version, template) in run {
        learn_claude_code_pre_2_1(version, template);
    }
}

/// The learned launch and the built-in one give the same verdict on every one of the 300
/// hazard and 300 action hazard payloads (predictions only: no harness run).
fn assert_predicts_as_builtin(l: &Learned, builtin: &str) {
    let cat = iec_launches::Catalog::builtin();
    let b = cat.get(builtin).expect("built-in launch");
    let mut differ = Vec::new();
    let sets = [
        iec_harness::hazard_payloads(300, 72332),
        action_hazard_payloads(300, ACTION_SEED),
    ];
    for (id, command) in sets.iter().flatten() {
        let p = iec_harness::agree::predict(&l.launch, command).expect("predict learned");
        let q = iec_harness::agree::predict(b, command).expect("predict built-in");
        if (p.verdict.as_str() == "corresponds") != (q.verdict.as_str() == "corresponds") {
            differ.push(format!(
                "{id} {command:?}: learned {} / {builtin} {}",
                p.verdict.as_str(),
                q.verdict.as_str()
            ));
        }
    }
    assert!(
        differ.is_empty(),
        "the learned launch and {builtin} differ on {} of 600:\n{}",
        differ.len(),
        differ.join("\n")
    );
}

/// Learns `spec_text` (agreeing with real runs and with the built-in launch `builtin`), asserts
/// that its shell tool is `tool`, then `checks`, then that it predicts as `builtin` does.
fn learned_as_builtin(spec_text: &str, builtin: &str, tool: &str, checks: impl FnOnce(&Learned)) {
    let Some(l) = learn_and_agree(spec_text) else {
        return;
    };
    assert_eq!(l.launch.tool, tool);
    checks(&l);
    assert_predicts_as_builtin(&l, builtin);
}

#[test]
fn learned_codex_agrees_with_real_runs() {
    let spec = format!("codex@{}", iec_harness::codex::CODEX_VERSION);
    learned_as_builtin(&spec, "codex-exec-command-linux", "exec_command", |l| {
        assert_eq!(l.launch.command_field(), "cmd");
        assert_eq!(l.launch.spawn.argv, ["/bin/bash", "-c", "{{wrapper}}"]);
        assert!(!l.launch.spawn.login);
        let w = l.launch.wrapper.as_ref().expect("a wrapper was learned");
        assert_eq!(w.payload, "single-quote");
        assert!(w.inner_shell && !w.eval);
        assert!(
            w.template.ends_with("\nexec '/bin/bash' -c {{payload}}"),
            "{}",
            w.template
        );
        assert!(w.template.contains("{{snapshot}}"), "{}", w.template);
        assert!(l.launch.rewrite.is_none());
    });
}

#[test]
fn learned_gemini_cli_agrees_with_real_runs() {
    let spec = format!("gemini-cli@{}", iec_harness::gemini::GEMINI_CLI_VERSION);
    learned_as_builtin(&spec, "gemini-cli-linux", "run_shell_command", |l| {
        assert_eq!(l.launch.spawn.argv.len(), 3);
        assert!(l.launch.spawn.argv[0].starts_with('/') && l.launch.spawn.argv[0].ends_with("/bash"));
        assert_eq!(l.launch.spawn.argv[1..], ["-c", "{{wrapper}}"]);
        let w = l.launch.wrapper.as_ref().expect("a wrapper was learned");
        assert_eq!(w.payload, "raw");
        assert!(!w.eval && !w.inner_shell);
        assert_eq!(
            l.launch.rewrite.as_ref().map(|r| r.steps.clone()),
            Some(vec![
                "gemini-strip-shell-wrapper".to_string(),
                "gemini-trim".to_string()
            ])
        );
        assert!(
            l.launch
                .validate
                .reject_command_substitution
                .as_deref()
                .is_some_and(|m| m.contains("Command injection detected")),
            "{:?}",
            l.launch.validate
        );
    });
}
