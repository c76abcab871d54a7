//! Table test (no node needed): commands → the exact eval payload of Claude Code 2.1.72.
//! Expected values were recorded from the real cli.js code (see cc_table_expected.in); the
//! same rows are re-checked live against cli.js by cc_differential.rs.

use iec_shellquote::claude_code_2_1_72::{
    build_eval_payload, build_eval_payload_with, wrapper, PayloadPath as P, PipeBailoutReason,
    StdinRedirect as R,
};

const INPUTS: &[&str] = &include!("cc_table_inputs.in");
const EXPECTED: &[&str] = &include!("cc_table_expected.in");

#[test]
fn table_payloads_match_recorded_cli_js_output() {
    assert_eq!(INPUTS.len(), EXPECTED.len());
    assert!(INPUTS.len() >= 40);
    let mut bad = Vec::new();
    for (cmd, want) in INPUTS.iter().zip(EXPECTED) {
        let got = build_eval_payload(cmd).payload;
        if &got != want {
            bad.push(format!("{cmd:?}\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(bad.is_empty(), "{} mismatches:\n{}", bad.len(), bad.join("\n"));
}

fn facts(cmd: &str) -> (P, R, bool) {
    let p = build_eval_payload(cmd);
    (p.path, p.stdin_redirect, p.null_redirect_rewritten)
}

#[test]
fn spec_observed_wrapper() {
    let cmd = r#"argvprobe 'a != b' "x ! y""#;
    assert_eq!(
        build_eval_payload(cmd).payload,
        r#""argvprobe 'a \!= b' \"x \! y\"" \< /dev/null"#
    );
    assert_eq!(
        wrapper(Some("/tmp/snap.sh"), "/tmp/claude-1a2b-cwd", cmd),
        r#"source /tmp/snap.sh && shopt -u extglob 2>/dev/null || true && eval "argvprobe 'a \!= b' \"x \! y\"" \< /dev/null && pwd -P >| /tmp/claude-1a2b-cwd"#
    );
    // snapshot path is quoted with shell-quote; cwd file is not quoted at all
    assert_eq!(
        wrapper(Some("/a b/s.sh"), "/t/c", "ls"),
        "source '/a b/s.sh' && shopt -u extglob 2>/dev/null || true && eval ls \\< /dev/null && pwd -P >| /t/c"
    );
    assert_eq!(
        wrapper(None, "/t/c", "ls"),
        "shopt -u extglob 2>/dev/null || true && eval ls \\< /dev/null && pwd -P >| /t/c"
    );
}

#[test]
fn branch_facts() {
    assert_eq!(facts("ls -la"), (P::Default, R::AppendedToEval, false));
    assert_eq!(facts("cat <<EOF\nx\nEOF"), (P::Heredoc, R::None, false));
    assert_eq!(facts("echo 'a\nb'"), (P::MultilineQuoted, R::OnEval, false));
    assert_eq!(
        facts("printf 'a\nb' < in.txt"),
        (P::MultilineQuoted, R::None, false)
    );
    assert_eq!(facts("ls | grep foo"), (P::PipeRearranged, R::InsidePipe, false));
    assert_eq!(
        facts("echo \"a\nb\" | cat"),
        (P::PipeRearranged, R::InsidePipe, false)
    );
    assert_eq!(facts("echo `date` | cat"), (P::PipeBailout, R::OnEval, false));
    assert_eq!(facts("./prog < file"), (P::Default, R::None, false));
    assert_eq!(facts("sort < in | uniq"), (P::Default, R::None, false));
    assert_eq!(facts("dir >nul 2>NUL"), (P::Default, R::AppendedToEval, true));
    assert_eq!(facts("cmd > NUL | cat"), (P::PipeRearranged, R::InsidePipe, true));
    assert_eq!(facts("echo \">nul\""), (P::Default, R::AppendedToEval, false));
    assert_eq!(facts("echo \">nul \""), (P::Default, R::AppendedToEval, true));
    // 'MY-MARKER' is not recognised as a heredoc delimiter (\w+ stops at '-')
    assert_eq!(
        facts("bash <<'MY-MARKER'\necho hi\nMY-MARKER"),
        (P::Default, R::AppendedToEval, false)
    );
}

#[test]
fn bailout_reasons() {
    let r = |c: &str| build_eval_payload(c).pipe_bailout_reason;
    assert_eq!(r("echo `date` | cat"), Some(PipeBailoutReason::Backtick));
    assert_eq!(r("echo $(date) | cat"), Some(PipeBailoutReason::DollarParen));
    assert_eq!(
        r("for f in *; do echo; done | sort"),
        Some(PipeBailoutReason::ShellKeyword)
    );
    assert_eq!(r("| grep x"), Some(PipeBailoutReason::NoPipeOperator));
    assert_eq!(r("echo a#b | cat"), Some(PipeBailoutReason::NoPipeOperator));
    assert_eq!(
        r("echo ${} | cat"),
        Some(PipeBailoutReason::ParseError("Bad substitution: ${}".into()))
    );
    assert_eq!(r("ls | cat"), None);
}

#[test]
fn pipe_path_expands_variables_to_empty() {
    // 2.1.72 has no `$NAME` bail-out: parse() with no env empties them.
    assert_eq!(
        build_eval_payload("echo $HOME | cat").payload,
        "\"echo '' < /dev/null | cat\""
    );
    assert_eq!(
        build_eval_payload("echo $$ | cat").payload,
        "\"echo '' < /dev/null | cat\""
    );
    // the token "!" is re-quoted as \! and the joined string single-quoted: eval unescapes it
    assert_eq!(
        build_eval_payload("echo \"$USER!\" | cat").payload,
        "'echo \\! < /dev/null | cat'"
    );
}

#[test]
fn sandbox_disables_pipe_rearrangement() {
    let p = build_eval_payload_with("ls | grep foo", true);
    assert_eq!(p.path, P::Default);
    assert_eq!(p.payload, "'ls | grep foo' \\< /dev/null");
}
