//! Real Claude Code runs against the replay server (spec docs/spec/claude-code.md §7). Installs
//! the pinned npm packages into ~/.cache/iec/harnesses (reused). When the install fails, the test
//! fails with the npm error, unless `IEC_SKIP_HARNESS=1` (or the project-wide `IEC_SKIP_NPM=1`) is
//! set: then it prints `SKIPPED: …` and passes.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use iec_harness::{install_claude_code, run_claude_code_with, HarnessRun, PayloadResult, RunOptions};

const BANG: &str = "argvprobe 'a != b'";
const FOUR: &str = r#"argvprobe 'a != b' "x ! y" 'M\\N' '$HOME'"#;
const PID: &str = r#"argvprobe "PID=$$" | cat"#;
const CRLF: &str = "argvprobe a\r\nargvprobe b";

fn run(version: &str, payloads: &[&str]) -> Option<HarnessRun> {
    let t = Instant::now();
    if let Err(e) = install_claude_code(version) {
        let why = format!("installing @anthropic-ai/claude-code@{version} with npm failed: {e:#}");
        support::skip_or_panic(&why, support::HARNESS_SKIP);
        return None;
    }
    let install_ms = t.elapsed().as_millis();
    let mut opts = RunOptions::new(version, None, payloads);
    opts.launch.timeout = Duration::from_secs(60);
    opts.launch.probe = Some(PathBuf::from(env!("CARGO_BIN_EXE_iec-argvprobe")));
    let run = run_claude_code_with(&opts).expect("harness run");
    eprintln!(
        "claude-code {version}: install/reuse {install_ms} ms, run {} ms, exit {:?}, requests {}, unknown paths {:?}",
        run.elapsed_ms,
        run.exit_code,
        run.requests.len(),
        run.unknown_paths
    );
    assert!(
        !run.timed_out,
        "Claude Code {version} timed out; stderr:\n{}",
        run.stderr
    );
    assert_eq!(
        run.results.len(),
        payloads.len(),
        "stdout:\n{}\nstderr:\n{}",
        run.stdout,
        run.stderr
    );
    for r in &run.results {
        assert!(
            r.tool_result.is_some(),
            "no tool_result recorded for {:?}; stdout:\n{}\nstderr:\n{}",
            r.payload,
            run.stdout,
            run.stderr
        );
        // The harness's own record of the call is what the model emitted.
        assert_eq!(r.echoed.as_deref(), Some(r.payload.as_str()));
    }
    Some(run)
}

fn argvs(r: &PayloadResult) -> Vec<Vec<String>> {
    r.probe.iter().map(|p| p.argv.clone()).collect()
}

fn direct_argvs(r: &PayloadResult) -> Vec<Vec<String>> {
    r.direct.probe.iter().map(|p| p.argv.clone()).collect()
}

fn hook_command(r: &PayloadResult) -> Option<String> {
    r.hook_input.as_ref()?.get("command")?.as_str().map(String::from)
}

fn v(xs: &[&str]) -> Vec<Vec<String>> {
    vec![xs.iter().map(|s| s.to_string()).collect()]
}

fn is_pid_arg(s: &str) -> bool {
    s.strip_prefix("PID=")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

#[test]
fn claude_code_2_1_72_escapes_bang_and_loses_pid_in_a_pipe() {
    let Some(run) = run("2.1.72", &[BANG, FOUR, PID, CRLF]) else {
        return;
    };
    let [bang, four, pid, crlf] = &run.results[..] else {
        unreachable!()
    };

    // `!` → `\!` (CC#32864), silent: the call succeeds.
    assert_eq!(argvs(bang), v(&["a \\!= b"]));
    assert_eq!(direct_argvs(bang), v(&["a != b"]));
    assert!(!bang.tool_result.as_ref().unwrap().is_error);
    let outer = bang.outer.as_deref().expect("wrapper seen by BASH_ENV");
    assert!(
        outer.contains(r#"&& eval "argvprobe 'a \!= b'" \< /dev/null && pwd -P >| "#),
        "{outer}"
    );
    assert!(outer.starts_with("source "), "{outer}");

    assert_eq!(argvs(four), v(&["a \\!= b", "x \\! y", "M\\\\N", "$HOME"]));
    assert_eq!(direct_argvs(four), v(&["a != b", "x ! y", "M\\\\N", "$HOME"]));

    // `argvprobe "PID=$$" | cat` becomes `PID=`: the pipe path re-quotes the parsed words.
    assert_eq!(argvs(pid), v(&["PID="]));
    let d = direct_argvs(pid);
    assert_eq!(d.len(), 1);
    assert!(d[0].len() == 1 && is_pid_arg(&d[0][0]), "{d:?}");
    let outer = pid.outer.as_deref().expect("wrapper seen by BASH_ENV");
    assert!(
        outer.contains("eval 'argvprobe PID\\= < /dev/null | cat'"),
        "{outer}"
    );

    // 2.1.72 has no control-character check: the CR reaches bash, as directly.
    assert!(!crlf.tool_result.as_ref().unwrap().is_error);
    assert_eq!(argvs(crlf), vec![vec!["a\r".to_string()], vec!["b".to_string()]]);
    assert_eq!(argvs(crlf), direct_argvs(crlf));

    // The PreToolUse hook received every command exactly as emitted.
    for r in &run.results {
        assert_eq!(hook_command(r).as_deref(), Some(r.payload.as_str()));
    }
}

#[test]
fn claude_code_2_1_332_keeps_bang_and_refuses_a_cr() {
    let Some(run) = run("2.1.332", &[BANG, FOUR, CRLF, PID]) else {
        return;
    };
    let [bang, four, crlf, pid] = &run.results[..] else {
        unreachable!()
    };

    assert_eq!(argvs(bang), v(&["a != b"]));
    assert_eq!(argvs(bang), direct_argvs(bang));
    let outer = bang.outer.as_deref().expect("wrapper seen by BASH_ENV");
    assert!(
        outer.contains(r#"&& eval 'argvprobe '"'"'a != b'"'"'' < /dev/null && pwd -P >| "#),
        "{outer}"
    );
    assert!(outer.contains(r"\builtin shopt -u extglob"), "{outer}");

    assert_eq!(argvs(four), v(&["a != b", "x ! y", "M\\\\N", "$HOME"]));
    assert_eq!(argvs(four), direct_argvs(four));

    // A CR is refused before any shell runs: loud, and the probe never ran.
    let tr = crlf.tool_result.as_ref().unwrap();
    assert!(tr.is_error, "{tr:?}");
    assert!(tr.content.contains("InputValidationError"), "{tr:?}");
    assert!(tr.content.contains("control characters"), "{tr:?}");
    assert!(crlf.probe.is_empty(), "{:?}", crlf.probe);
    assert!(crlf.outer.is_none(), "{:?}", crlf.outer);
    // The refusal comes before PreToolUse hooks: the hook never saw the call.
    assert!(crlf.hook_input.is_none(), "{:?}", crlf.hook_input);
    for r in [bang, four, pid] {
        assert_eq!(hook_command(r).as_deref(), Some(r.payload.as_str()));
    }
    // Directly, bash runs both lines (the CR stays in the first argument).
    assert_eq!(
        direct_argvs(crlf),
        vec![vec!["a\r".to_string()], vec!["b".to_string()]]
    );

    // The pipe keeps `$$`.
    let a = argvs(pid);
    assert!(a.len() == 1 && a[0].len() == 1 && is_pid_arg(&a[0][0]), "{a:?}");
}
