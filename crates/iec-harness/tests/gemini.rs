//! Real Gemini CLI runs against the replay server's Gemini API, and the Gemini endpoints on
//! their own. Installs `@google/gemini-cli@0.61.0` into ~/.cache/iec/harnesses/gemini-cli-0.61.0
//! (reused). When the install fails, the test fails with the npm error, unless
//! `IEC_SKIP_HARNESS=1` (or the project-wide `IEC_SKIP_NPM=1`) is set: then it prints
//! `SKIPPED: …`.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use iec_harness::gemini::{
    install_gemini_cli, observe_gemini, run_gemini_with, GeminiOptions, GEMINI_CLI_VERSION,
};
use iec_harness::{HarnessRun, PayloadResult};

fn skip_reason() -> Option<&'static str> {
    ["IEC_SKIP_HARNESS", "IEC_SKIP_NPM"]
        .into_iter()
        .find(|var| std::env::var(var).is_ok_and(|v| v == "1"))
}

/// Installs Gemini CLI (reused when present); `false` when the install failed and a skip
/// variable is set.
fn install_or_skip() -> bool {
    if let Err(e) = install_gemini_cli(GEMINI_CLI_VERSION) {
        let why = format!("installing @google/gemini-cli@{GEMINI_CLI_VERSION} with npm failed: {e:#}");
        if let Some(var) = skip_reason() {
            eprintln!("SKIPPED: {why} ({var}=1)");
            println!("SKIPPED: {why} ({var}=1)");
            return false;
        }
        panic!("{why}\n(set IEC_SKIP_HARNESS=1 to skip the real harness tests when npm cannot install)");
    }
    true
}

fn run(payloads: &[&str]) -> Option<HarnessRun> {
    let t = Instant::now();
    if !install_or_skip() {
        return None;
    }
    let install_ms = t.elapsed().as_millis();
    let mut opts = GeminiOptions::new(GEMINI_CLI_VERSION, None, payloads);
    opts.timeout = Duration::from_secs(120);
    opts.probe = Some(PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe")));
    let run = run_gemini_with(&opts).expect("gemini run");
    eprintln!(
        "gemini-cli {GEMINI_CLI_VERSION}: install/reuse {install_ms} ms, run {} ms, exit {:?}, requests {}, unknown paths {:?}",
        run.elapsed_ms,
        run.exit_code,
        run.requests.len(),
        run.unknown_paths
    );
    assert!(!run.timed_out, "Gemini CLI timed out; stderr:\n{}", run.stderr);
    assert_eq!(run.exit_code, Some(0), "stderr:\n{}", run.stderr);
    assert!(run.unknown_paths.is_empty(), "{:?}", run.unknown_paths);
    for r in &run.results {
        assert!(
            r.tool_result.is_some(),
            "no tool result recorded for {:?}; stdout:\n{}\nstderr:\n{}",
            r.payload,
            run.stdout,
            run.stderr
        );
        // Gemini CLI's own record of the call (echoed in its next request) is what the model
        // emitted.
        assert_eq!(r.echoed.as_deref(), Some(r.payload.as_str()));
    }
    Some(run)
}

fn argvs(r: &PayloadResult) -> Vec<Vec<String>> {
    r.probe.iter().map(|p| p.argv.clone()).collect()
}

#[test]
fn explore() {
    let payloads = [
        r#"argvprobe 'a b' "c d""#,
        "argvprobe 'a != b'",
        r#"argvprobe "PID=$$" | cat"#,
        "bash -c 'argvprobe \"x y\" z'",
        r#"argvprobe "$(echo hi)""#,
        "argvprobe foo \\",
        "  argvprobe padded  \n",
        "argvprobe a\r\nargvprobe b",
        "printf '%s\\n' 'x != y' \"it's\"",
        "exit 3",
    ];
    let Some(run) = run(&payloads) else {
        return;
    };
    for r in &run.results {
        eprintln!(
            "== {:?}\n outer {:?}\n argv {:?}\n direct {:?}\n tool {:?}\n obs {:?}",
            r.payload,
            r.outer,
            argvs(r),
            r.direct.probe.iter().map(|p| p.argv.clone()).collect::<Vec<_>>(),
            r.tool_result,
            observe_gemini("x", r)
        );
    }
    for q in &run.requests {
        eprintln!("{} {} {}", q.method, q.uri, q.role);
    }
}

/// `iec check`'s predictions on `gemini-cli-linux` against real Gemini CLI runs on the hazard
/// payloads the Claude Code and Codex agreement tests use (same seed).
#[test]
fn gemini_cli_0_61_0_agrees_with_iec_check_on_300_hazard_payloads() {
    if !install_or_skip() {
        return;
    }
    let payloads: Vec<iec_harness::agree::Payload> = iec_harness::hazard_payloads(300, 72332)
        .into_iter()
        .map(|(id, command)| iec_harness::agree::Payload { id, command })
        .collect();
    let mut spec = iec_harness::agree::RunSpec::new(GEMINI_CLI_VERSION);
    spec.probe = Some(PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe")));
    let t = Instant::now();
    let observed = iec_harness::gemini::run_observed(&spec, &payloads).expect("gemini runs");
    let rep = iec_harness::agree::agree_observed(GEMINI_CLI_VERSION, "gemini-cli-linux", &observed)
        .expect("agreement");
    eprintln!(
        "gemini-cli {GEMINI_CLI_VERSION} on gemini-cli-linux: 300 payloads in {} ms, totals {}",
        t.elapsed().as_millis(),
        rep.totals
    );
    for a in &rep.results {
        eprintln!("{}", iec_harness::agree::agreement_line(a));
    }
    let bad: Vec<String> = rep
        .disagreements()
        .iter()
        .map(|a| format!("{} {:?}: predicted {} observed {}", a.id, a.command, a.predicted, a.observed))
        .collect();
    assert!(bad.is_empty(), "{}", bad.join("\n"));
    assert_eq!(rep.results.len(), 300);
}
