//! `iec check`'s predictions against real Claude Code runs, on 300 generated hazard payloads
//! (`iec_harness::hazard_payloads`), for 2.1.72 (launch `claude-code-2.1.72-linux`) and 2.1.332
//! (`claude-code-2.1.332-linux`), 40 payloads per harness launch. Asserts 100% agreement on the
//! verdict (corresponds vs diverges/unknown); on a disagreement it fails and lists each one.
//!
//! Skips like `tests/claude_code.rs`: when the npm install fails and `IEC_SKIP_HARNESS=1` (or
//! `IEC_SKIP_NPM=1`) is set, it prints `SKIPPED: …` and passes.

mod support;

use std::time::Instant;

use iec_harness::agree::{agree, agreement_line, AgreeReport, Payload};
use iec_harness::{action_hazard_payloads, hazard_payloads};
use support::{ACTION_SEED, HAZARD_SEED as SEED};

const N: usize = 300;

fn payloads(family: fn(usize, u64) -> Vec<(String, String)>, seed: u64) -> Vec<Payload> {
    support::payloads(family, N, seed)
}

fn run(version: &str, launch: &str, payloads: &[Payload]) -> Option<AgreeReport> {
    support::claude_code(version)?;
    let t = Instant::now();
    let rep = agree(&support::spec(version), launch, payloads).expect("agree run");
    let diverged = rep
        .results
        .iter()
        .filter(|a| a.observed["verdict"] != "corresponds")
        .count();
    eprintln!(
        "claude-code {version} vs {launch}: {} payloads, {} agree, {} observed changed, {} hop differences, {:.1} s",
        rep.results.len(),
        rep.totals["agree"],
        diverged,
        rep.totals["hop_disagree"],
        t.elapsed().as_secs_f64()
    );
    Some(rep)
}

fn describe(rep: &AgreeReport) -> String {
    let mut s = String::new();
    for a in rep.disagreements() {
        s.push_str(&agreement_line(a));
        s.push('\n');
        s.push_str(&format!(
            "    predicted: {}\n    observed argv: {}\n    direct argv:   {}\n    outer: {}\n    tool result: {}\n",
            a.predicted["first_divergence"],
            a.observed["received"]["probe"],
            a.observed["direct"]["probe"],
            a.observed["received"]["outer"],
            a.observed["tool_result"],
        ));
    }
    s
}

#[test]
fn predictions_agree_with_real_claude_code() {
    agree_on(&payloads(hazard_payloads, SEED));
}

/// Issue 17: 300 payloads of quoted words next to unquoted `!`, `~`, `{…}`, `$((…))`, `${…}`,
/// with redirections and `;`/`&&`/`|` lists, where a comparison of texts instead of actions
/// called re-quotings that hand every command the same argv changes.
#[test]
fn action_payloads_agree_with_real_claude_code() {
    agree_on(&payloads(action_hazard_payloads, ACTION_SEED));
}

fn agree_on(payloads: &[Payload]) {
    let reports: Vec<AgreeReport> = std::thread::scope(|s| {
        let a = s.spawn(|| run("2.1.72", "claude-code-2.1.72-linux", payloads));
        let b = s.spawn(|| run("2.1.332", "claude-code-2.1.332-linux", payloads));
        [a.join().unwrap(), b.join().unwrap()]
            .into_iter()
            .flatten()
            .collect()
    });
    let mut failures = String::new();
    for rep in &reports {
        // Every disagreement fails (the 2.1.72 pipe rebuild's re-quoting is judged by the value
        // of static words: CHANGELOG.md, launch facts).
        let other = rep.disagreements();
        if !other.is_empty() {
            failures.push_str(&format!(
                "claude-code {} vs {}: {}/{} agree; disagreements:\n{}",
                rep.version,
                rep.launch,
                rep.totals["agree"],
                rep.results.len(),
                describe(rep)
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "iec check's verdict disagrees with real Claude Code (not a flaky test: each line is a \
         prediction that the real harness contradicts; see crates/iec-harness/README.md):\n{failures}"
    );
}

/// The learner found that every Claude Code from 1.0.128 on replaces the tool input's `\\;` with
/// `\;` (a model's double escaping of `find -exec … \;`); the built-in 2.1.72 and 2.1.332 launches
/// said "corresponds" for these until they got the step. Observed with the real harnesses.
#[test]
fn double_escaped_semicolons_were_corresponds() {
    let payloads: Vec<Payload> = [
        ("semi-quoted", r"argvprobe '\\;#;'"),
        ("semi-bare", r"argvprobe a\\;b"),
        ("semi-find", r"argvprobe -exec echo {} \\;"),
        ("semi-single", r"argvprobe -exec echo {} \;"),
    ]
    .into_iter()
    .map(|(id, command)| Payload {
        id: id.into(),
        command: command.into(),
    })
    .collect();
    agree_on(&payloads);
}
