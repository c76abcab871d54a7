//! `iec harness learn` against real Claude Code: the launch learned from marker payloads for
//! 2.1.332 predicts the real runs of the same 300 generated hazard payloads as
//! `tests/agreement.rs` (100% verdict agreement), and what learning found is asserted: 2.1.332
//! single-quotes the command for eval and rejects control characters, 2.1.72 renders it with
//! shell-quote and rejects nothing; both spawn `/bin/bash -c WRAPPER`.
//!
//! Skips like `tests/claude_code.rs`: when the npm install fails and `IEC_SKIP_HARNESS=1` (or
//! `IEC_SKIP_NPM=1`) is set, it prints `SKIPPED: …` and passes.

use std::io::Write;
use std::path::PathBuf;

use iec_harness::agree::{agree_observed_launch, agreement_line, run_observed, Payload, RunSpec};
use iec_harness::learn::{learn, Learned};
use iec_harness::{hazard_payloads, install_claude_code};

fn installed(version: &str) -> bool {
    if let Err(e) = install_claude_code(version) {
        let why = format!("installing @anthropic-ai/claude-code@{version} with npm failed: {e:#}");
        if let Some(var) = ["IEC_SKIP_HARNESS", "IEC_SKIP_NPM"]
            .into_iter()
            .find(|v| std::env::var(v).is_ok_and(|x| x == "1"))
        {
            let _ = writeln!(std::io::stderr(), "SKIPPED: {why} ({var}=1)");
            println!("SKIPPED: {why} ({var}=1)");
            return false;
        }
        panic!("{why}\n(set IEC_SKIP_HARNESS=1 to skip the real-harness tests when npm cannot install)");
    }
    true
}

fn spec(version: &str) -> RunSpec {
    let mut spec = RunSpec::new(version);
    spec.probe = Some(PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe")));
    spec.batch = 40;
    spec
}

fn learned(version: &str) -> Option<Learned> {
    installed(version).then(|| learn(&spec(version)).expect("learn"))
}

#[test]
fn learned_2_1_332_launch_agrees_with_300_real_runs() {
    let Some(l) = learned("2.1.332") else { return };
    eprintln!("{}", l.toml);
    let w = l.launch.wrapper.as_ref().expect("a wrapper was learned");
    assert_eq!(w.payload, "single-quote");
    assert!(w.eval);
    assert!(w.template.starts_with("source {{snapshot}} "), "{}", w.template);
    assert!(
        w.template
            .contains("eval {{payload}} < /dev/null && pwd -P >| {{tmp}}/claude-0a1b-cwd"),
        "{}",
        w.template
    );
    assert_eq!(l.launch.spawn.argv, ["/bin/bash", "-c", "{{wrapper}}"]);
    assert_eq!(
        l.launch.validate.reject_control_chars.as_deref(),
        Some("InputValidationError: command contains control characters that would be hidden in the approval dialog")
    );
    let shadowed = &l
        .launch
        .snapshot
        .as_ref()
        .expect("a snapshot was learned")
        .shadowed;
    assert_eq!(*shadowed, ["grep", "find", "rg"]);

    let payloads: Vec<Payload> = hazard_payloads(300, 72332)
        .into_iter()
        .map(|(id, command)| Payload { id, command })
        .collect();
    let observed = run_observed(&spec("2.1.332"), &payloads).expect("real runs");
    let rep = agree_observed_launch("2.1.332", &l.launch, &observed).expect("agree");
    let bad: Vec<String> = rep.disagreements().into_iter().map(agreement_line).collect();
    eprintln!(
        "learned {} vs real 2.1.332: {}/{} agree",
        l.launch.id,
        rep.totals["agree"],
        rep.results.len()
    );
    assert_eq!(rep.results.len(), 300);
    assert!(
        bad.is_empty(),
        "the learned launch disagrees with real runs:\n{}",
        bad.join("\n")
    );
}

#[test]
fn learning_2_1_72_finds_its_other_rendering() {
    let Some(l) = learned("2.1.72") else { return };
    let w = l.launch.wrapper.as_ref().expect("a wrapper was learned");
    assert_eq!(w.payload, "claude-code-2.1.72");
    assert_eq!(
        w.template,
        "source {{snapshot}} && shopt -u extglob 2>/dev/null || true && eval {{payload}} && pwd -P >| {{tmp}}/claude-0a1b-cwd"
    );
    assert_eq!(w.stdin_suffix.as_deref(), Some(" < /dev/null"));
    assert_eq!(
        l.launch.validate.reject_control_chars, None,
        "2.1.72 lets control characters through"
    );
    assert_eq!(l.launch.spawn.argv, ["/bin/bash", "-c", "{{wrapper}}"]);
}
