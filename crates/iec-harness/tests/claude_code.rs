//! Real Claude Code runs against the replay server (spec docs/spec/claude-code.md §7). Installs
//! the pinned npm packages into ~/.cache/iec/harnesses (reused). When the install fails, the test
//! fails with the npm error, unless `IEC_SKIP_HARNESS=1` (or the project-wide `IEC_SKIP_NPM=1`) is
//! set: then it prints `SKIPPED: …` and passes.

mod support;

use std::time::Duration;

use iec_harness::{run_claude_code_with, PayloadResult, RunOptions};
use support::{argvs, direct_argvs, is_pid_arg, v, BANG, CRLF, PID};

const FOUR: &str = r#"argvprobe 'a != b' "x ! y" 'M\\N' '$HOME'"#;

/// One launch of Claude Code `version` on the four payloads, with the recording hook, checked
/// (see `support::check_launch`); `None` when skipped.
fn run(version: &str, payloads: [&str; 4]) -> Option<[PayloadResult; 4]> {
    let run = support::launched(
        &format!("claude-code {version}"),
        &format!("Claude Code {version}"),
        false,
        payloads.len(),
        || support::claude_code(version).is_some(),
        || {
            let mut opts = RunOptions::new(version, None, &payloads);
            opts.launch.timeout = Duration::from_secs(60);
            opts.launch.probe = Some(support::probe());
            run_claude_code_with(&opts).expect("harness run")
        },
    )?;
    Some(run.results.try_into().expect("four results"))
}

fn hook_command(r: &PayloadResult) -> Option<String> {
    r.hook_input.as_ref()?.get("command")?.as_str().map(String::from)
}

#[test]
fn claude_code_2_1_72_escapes_bang_and_loses_pid_in_a_pipe() {
    let Some([ref bang, ref four, ref pid, ref crlf]) = run("2.1.72", [BANG, FOUR, PID, CRLF]) else {
        return;
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
    for r in [bang, four, pid, crlf] {
        assert_eq!(hook_command(r).as_deref(), Some(r.payload.as_str()));
    }
}

#[test]
fn claude_code_2_1_332_keeps_bang_and_refuses_a_cr() {
    let Some([ref bang, ref four, ref crlf, ref pid]) = run("2.1.332", [BANG, FOUR, CRLF, PID]) else {
        return;
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
