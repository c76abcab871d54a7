//! Test support shared by the real-harness tests of this crate (each test file includes it with
//! `mod support;`): installing a harness or skipping, the probe, what every launch is checked
//! for, the payload sets several tests share, plain HTTP to the replay server, and the hazard
//! payload set of the hook and shim tests ([`hook_payloads`]).
#![allow(dead_code)]

pub mod hook_payloads;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Instant;

use iec_harness::agree::{agree_observed, agreement_line, AgreeReport, Observed, Payload, RunSpec};
use iec_harness::harness::Harness;
use iec_harness::{install_claude_code, HarnessRun, Launcher, PayloadResult};
use serde_json::Value;

/// The variables that let the real-harness tests skip when npm cannot install a harness.
pub const HARNESS_SKIP: &[&str] = &["IEC_SKIP_HARNESS", "IEC_SKIP_NPM"];

/// The seed of the 300 hazard payloads the agreement tests share.
pub const HAZARD_SEED: u64 = 72332;

/// The seed of the action hazard payloads (issue 17) the agreement and learning tests share.
pub const ACTION_SEED: u64 = 1217;

// Payloads several harness tests send.
pub const BANG: &str = "argvprobe 'a != b'";
pub const PID: &str = r#"argvprobe "PID=$$" | cat"#;
pub const CRLF: &str = "argvprobe a\r\nargvprobe b";
pub const PRINTF: &str = r#"printf '%s\n' 'x != y' "it's""#;
pub const QUOTES: &str = r#"argvprobe 'it'"'"'s' "a \"b\" \$c" 'M\\N' '$HOME' "x ! y" $'tab\there' '%PATH%'"#;

/// The argv [`QUOTES`] gives the probe when it arrives as emitted.
pub fn quotes_argv() -> Vec<Vec<String>> {
    v(&[
        "it's",
        "a \"b\" $c",
        "M\\\\N",
        "$HOME",
        "x ! y",
        "tab\there",
        "%PATH%",
    ])
}

/// The first of `vars` set to `1`.
pub fn skip_reason(vars: &[&'static str]) -> Option<&'static str> {
    vars.iter()
        .copied()
        .find(|var| std::env::var(var).is_ok_and(|v| v == "1"))
}

/// After an install failed with `why`: prints `SKIPPED: why (VAR=1)` (to the real stderr, which
/// the test harness does not capture, and to stdout) and returns when one of `vars` is set;
/// fails the test, naming the first variable, otherwise.
pub fn skip_or_panic(why: &str, vars: &[&'static str]) {
    if let Some(var) = skip_reason(vars) {
        let _ = writeln!(std::io::stderr(), "SKIPPED: {why} ({var}=1)");
        println!("SKIPPED: {why} ({var}=1)");
        return;
    }
    panic!(
        "{why}\n(set {}=1 to skip the tests that need it when npm cannot install)",
        vars[0]
    );
}

/// What `install` installed (`what` names it in the skip), or `None` when the install failed and
/// one of `vars` says to skip (see [`skip_or_panic`]).
pub fn installed<T>(
    what: &str,
    vars: &[&'static str],
    install: impl FnOnce() -> anyhow::Result<T>,
) -> Option<T> {
    match install() {
        Ok(t) => Some(t),
        Err(e) => {
            skip_or_panic(&format!("installing {what} with npm failed: {e:#}"), vars);
            None
        }
    }
}

/// Claude Code `version`, installed (reused when present), or `None` when skipped.
pub fn claude_code(version: &str) -> Option<Launcher> {
    installed(
        &format!("@anthropic-ai/claude-code@{version}"),
        HARNESS_SKIP,
        || install_claude_code(version),
    )
}

/// The argv probe built with these tests.
pub fn probe() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe"))
}

/// Real runs of `version` with this crate's probe, 40 calls per launch.
pub fn spec(version: &str) -> RunSpec {
    let mut spec = RunSpec::new(version);
    spec.probe = Some(probe());
    spec.batch = 40;
    spec
}

/// `n` generated payloads of `family` (`hazard_payloads`, `action_hazard_payloads`) with `seed`.
pub fn payloads(family: fn(usize, u64) -> Vec<(String, String)>, n: usize, seed: u64) -> Vec<Payload> {
    family(n, seed)
        .into_iter()
        .map(|(id, command)| Payload { id, command })
        .collect()
}

/// The probe's argv records through the harness.
pub fn argvs(r: &PayloadResult) -> Vec<Vec<String>> {
    r.probe.iter().map(|p| p.argv.clone()).collect()
}

/// The probe's argv records in the direct `bash -c` run.
pub fn direct_argvs(r: &PayloadResult) -> Vec<Vec<String>> {
    r.direct.probe.iter().map(|p| p.argv.clone()).collect()
}

/// One argv record.
pub fn v(xs: &[&str]) -> Vec<Vec<String>> {
    vec![xs.iter().map(|s| s.to_string()).collect()]
}

/// `PID=<digits>`: what `"PID=$$"` gives.
pub fn is_pid_arg(s: &str) -> bool {
    s.strip_prefix("PID=")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// One launch by `launch` after `install` (timed; `false`: skipped, and so is the launch),
/// reported on stderr as `{name}: install/reuse …` and checked with [`check_launch`] (`title`
/// names the harness in failures).
pub fn launched(
    name: &str,
    title: &str,
    clean: bool,
    n: usize,
    install: impl FnOnce() -> bool,
    launch: impl FnOnce() -> HarnessRun,
) -> Option<HarnessRun> {
    let t = Instant::now();
    if !install() {
        return None;
    }
    let install_ms = t.elapsed().as_millis();
    let run = launch();
    eprintln!(
        "{name}: install/reuse {install_ms} ms, run {} ms, exit {:?}, requests {}, unknown paths {:?}",
        run.elapsed_ms,
        run.exit_code,
        run.requests.len(),
        run.unknown_paths
    );
    check_launch(title, &run, n, clean);
    Some(run)
}

/// One launch of `payloads` through `h` at `version` as `iec harness learn` starts it (this
/// crate's probe, a two-minute bound), after `install`, checked with a clean exit.
pub fn harness_launch(
    h: &dyn Harness,
    version: &str,
    install: impl FnOnce() -> bool,
    payloads: &[&str],
) -> Option<HarnessRun> {
    launched(
        &format!("{} {version}", h.name()),
        h.title(),
        true,
        payloads.len(),
        install,
        || h.run(&spec(version), payloads).expect("harness run"),
    )
}

/// What every real-harness test asserts of a launch of `n` calls: it did not time out; with
/// `clean`, it exited 0 and asked for no unknown path; one result per call, each with a tool
/// result, and the harness's own record of each call (echoed in its next request) is what the
/// model emitted.
pub fn check_launch(title: &str, run: &HarnessRun, n: usize, clean: bool) {
    assert!(!run.timed_out, "{title} timed out; stderr:\n{}", run.stderr);
    if clean {
        assert_eq!(run.exit_code, Some(0), "stderr:\n{}", run.stderr);
        assert!(run.unknown_paths.is_empty(), "{:?}", run.unknown_paths);
    }
    assert_eq!(
        run.results.len(),
        n,
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    for r in &run.results {
        assert!(
            r.tool_result.is_some(),
            "no tool result recorded for {:?}; stdout:\n{}\nstderr:\n{}",
            r.payload,
            run.stdout,
            run.stderr
        );
        assert_eq!(r.echoed.as_deref(), Some(r.payload.as_str()));
    }
}

/// The 300 hazard payloads through `run_observed` (`name` in the log), compared with `iec check`
/// on each of `launches`: every verdict agrees, else the test fails listing each disagreement.
/// The observations; `None` when `installed` is false (skipped).
pub fn agrees_on_300_hazards(
    name: &str,
    version: &str,
    installed: bool,
    run_observed: fn(&RunSpec, &[Payload]) -> anyhow::Result<Vec<Observed>>,
    launches: &[&str],
) -> Option<Vec<Observed>> {
    if !installed {
        return None;
    }
    let payloads = payloads(iec_harness::hazard_payloads, 300, HAZARD_SEED);
    let t = Instant::now();
    let observed = run_observed(&spec(version), &payloads).expect("real runs");
    for launch in launches {
        let rep = agree_observed(version, launch, &observed).expect("agreement");
        eprintln!(
            "{name} {version} on {launch}: 300 payloads in {} ms, totals {}",
            t.elapsed().as_millis(),
            rep.totals
        );
        for a in &rep.results {
            eprintln!("{}", agreement_line(a));
        }
        let bad = disagreement_lines(&rep);
        assert!(bad.is_empty(), "{launch}:\n{}", bad.join("\n"));
        assert_eq!(rep.results.len(), 300);
    }
    Some(observed)
}

/// Each disagreement of a report: id, command, the prediction and the observation.
pub fn disagreement_lines(rep: &AgreeReport) -> Vec<String> {
    rep.disagreements()
        .iter()
        .map(|a| {
            format!(
                "{} {:?}: predicted {} observed {}",
                a.id, a.command, a.predicted, a.observed
            )
        })
        .collect()
}

/// A plain HTTP/1.1 POST of `body` as JSON (no client library): the status and the body as
/// sent (chunked encoding not undone).
pub fn post(addr: SocketAddr, path: &str, body: &Value) -> (u16, String) {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status: u16 = out.split(' ').nth(1).unwrap().parse().unwrap();
    (status, out.split_once("\r\n\r\n").unwrap().1.to_string())
}

/// The `data:` payloads of an SSE body (also undoes chunked encoding well enough: chunk-size
/// lines are not `data:` lines).
pub fn sse_data(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(String::from)
        .collect()
}

/// A workspace binary: `$env_var`, else `<target>/<profile>/<name>`, else built there
/// ([`iec_testkit::bins::workspace_bin`]).
pub fn workspace_bin(name: &str, package: &str, env_var: &str) -> PathBuf {
    iec_testkit::bins::workspace_bin(name, package, env_var)
}
