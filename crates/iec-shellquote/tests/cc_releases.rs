//! The eval payload of the Claude Code release lines other than 2.1.72 (`Release`), each row
//! the text a real release's bash received for a learner marker (the `eval …` words of its
//! wrapper, read by the BASH_ENV witness during the catalog sweep of 2026-12-06), or what the
//! release's `cli.js` functions named on its constant give.

use iec_shellquote::claude_code_2_1_72::{
    build_eval_payload_for, PayloadPath as P, PipeBailoutReason, Release, StdinRedirect as R, RELEASE_1_0_0,
    RELEASE_1_0_21, RELEASE_1_0_65, RELEASE_1_0_76, RELEASE_2_0_76, RELEASE_2_1_3, RELEASE_2_1_72,
    RELEASE_2_1_75, RELEASE_2_1_79, RELEASE_2_1_84,
};

const T: &str = "IECMARK_0";

fn payload(r: &Release, cmd: &str) -> String {
    build_eval_payload_for(r, &cmd.replace("TAG", T), false)
        .payload
        .replace(T, "TAG")
}

#[test]
fn rows_seen_in_real_runs() {
    let rows: &[(&str, &Release, &str, &str)] = &[
        // 1.0.0: the text cut at the lone `|`, the parts quoted as words of eval.
        (
            "1.0.0",
            &RELEASE_1_0_0,
            "argvprobe TAG \"it's\" | cat",
            "\"argvprobe TAG \\\"it's\\\" \" \\< /dev/null \\| ' cat'",
        ),
        ("1.0.0", &RELEASE_1_0_0, "a || b", "'a || b' \\< /dev/null"),
        // 1.0.0's older shell-quote doubles a backslash inside its single quotes (real 1.0.0,
        // 2026-12-07: the probe got `say \hi\` for `"say \"hi\""`); 1.0.21's does not.
        (
            "1.0.0",
            &RELEASE_1_0_0,
            "argvprobe D1 \"say \\\"hi\\\"\"",
            "'argvprobe D1 \"say \\\\\"hi\\\\\"\"' \\< /dev/null",
        ),
        (
            "1.0.0",
            &RELEASE_1_0_0,
            "argvprobe D2 \"say \\\"hi\\\"\" | cat",
            "'argvprobe D2 \"say \\\\\"hi\\\\\"\" ' \\< /dev/null \\| ' cat'",
        ),
        (
            "1.0.0",
            &RELEASE_1_0_0,
            "argvprobe D5 \"a\\\\b\" c\\ d",
            "'argvprobe D5 \"a\\\\\\\\b\" c\\\\ d' \\< /dev/null",
        ),
        (
            "1.0.0",
            &RELEASE_1_0_0,
            "argvprobe D3 \"it's\"",
            "\"argvprobe D3 \\\"it's\\\"\" \\< /dev/null",
        ),
        (
            "1.0.21",
            &RELEASE_1_0_21,
            "argvprobe D1 \"say \\\"hi\\\"\"",
            "'argvprobe D1 \"say \\\"hi\\\"\"' \\< /dev/null",
        ),
        // 1.0.65: tokens re-quoted one by one, `2>&1` comes apart.
        (
            "1.0.65",
            &RELEASE_1_0_65,
            "argvprobe TAG | cat",
            "'argvprobe TAG < /dev/null | cat'",
        ),
        (
            "1.0.65",
            &RELEASE_1_0_65,
            "argvprobe TAG 'a b' 2>&1 | cat",
            "\"argvprobe TAG 'a b' 2 >& 1 < /dev/null | cat\"",
        ),
        // 1.0.76: no heredoc path; a piped heredoc is re-tokenised.
        (
            "1.0.76",
            &RELEASE_1_0_76,
            "cat <<'EOF' | cat\nTAG $HOME\nEOF",
            "\"cat < < EOF < /dev/null | cat TAG '' EOF\"",
        ),
        (
            "1.0.76",
            &RELEASE_1_0_76,
            "cat <<'EOF'\nTAG $HOME\nEOF",
            "\"cat <<'EOF'\nTAG \\$HOME\nEOF\" \\< /dev/null",
        ),
        (
            "1.0.76",
            &RELEASE_1_0_76,
            "argvprobe TAG 'a b' 2>&1 | cat",
            "\"argvprobe TAG 'a b' 2>&1 < /dev/null | cat\"",
        ),
        // 2.1.3: `$(` bails out, to the `\<` word.
        (
            "2.1.3",
            &RELEASE_2_1_3,
            "argvprobe TAG \"$(echo s)\" x$(echo u) | cat",
            "'argvprobe TAG \"$(echo s)\" x$(echo u) | cat' \\< /dev/null",
        ),
        // 2.1.75: the rebuilt pipe single-quoted for eval.
        (
            "2.1.75",
            &RELEASE_2_1_75,
            "argvprobe TAG \"it's\" | cat",
            "'argvprobe TAG \"it'\"'\"'s\" < /dev/null | cat'",
        ),
        // 2.1.79: a `$NAME` in a piped command bails out, the text single-quoted whole.
        (
            "2.1.79",
            &RELEASE_2_1_79,
            "argvprobe TAG '$HOME' \"\\$HOME\" | cat",
            "'argvprobe TAG '\"'\"'$HOME'\"'\"' \"\\$HOME\" | cat' < /dev/null",
        ),
        (
            "2.1.79",
            &RELEASE_2_1_79,
            "argvprobe TAG \"it's\" | cat",
            "'argvprobe TAG \"it'\"'\"'s\" < /dev/null | cat'",
        ),
        // 2.1.84: a word with a lone `'` bails out.
        (
            "2.1.84",
            &RELEASE_2_1_84,
            "argvprobe TAG \"it's\" | cat",
            "'argvprobe TAG \"it'\"'\"'s\" | cat' < /dev/null",
        ),
        (
            "2.1.84",
            &RELEASE_2_1_84,
            "argvprobe TAG 'a b' 2>&1 | cat",
            "'argvprobe TAG '\"'\"'a b'\"'\"' 2>&1 < /dev/null | cat'",
        ),
    ];
    let mut bad = Vec::new();
    for (v, r, cmd, want) in rows {
        let got = payload(r, cmd);
        if got != *want {
            bad.push(format!("{v} {cmd:?}\n  want {want:?}\n  got  {got:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// One command, six releases: where they part.
#[test]
fn the_releases_part_where_their_code_does() {
    let cmd = "argvprobe TAG \"$(echo s)\" 'x' | cat";
    let got: Vec<String> = [
        &RELEASE_1_0_65,
        &RELEASE_1_0_76,
        &RELEASE_2_0_76,
        &RELEASE_2_1_3,
        &RELEASE_2_1_72,
        &RELEASE_2_1_75,
    ]
    .iter()
    .map(|r| payload(r, cmd))
    .collect();
    let rebuilt_sq = "\"argvprobe TAG '\\$(echo s)' x < /dev/null | cat\"";
    assert_eq!(
        got,
        [
            rebuilt_sq,
            rebuilt_sq,
            rebuilt_sq,
            "\"argvprobe TAG \\\"\\$(echo s)\\\" 'x' | cat\" \\< /dev/null",
            "\"argvprobe TAG \\\"\\$(echo s)\\\" 'x' | cat\" < /dev/null",
            "'argvprobe TAG \"$(echo s)\" '\"'\"'x'\"'\"' | cat' < /dev/null",
        ]
    );
    // A heredoc: 1.0.x rearranges it as any piped command, later releases single-quote it.
    let h = build_eval_payload_for(&RELEASE_1_0_65, "cat <<EOF | cat\nx\nEOF", false);
    assert_eq!((h.path, h.stdin_redirect), (P::PipeRearranged, R::InsidePipe));
    let h = build_eval_payload_for(&RELEASE_2_0_76, "cat <<EOF | cat\nx\nEOF", false);
    assert_eq!((h.path, h.stdin_redirect), (P::Heredoc, R::None));
    // 2.1.75 bails out on a newline left after joining continuations; 2.1.72 parses on.
    let nl = "echo a |\ncat";
    let p = build_eval_payload_for(&RELEASE_2_1_75, nl, false);
    assert_eq!(p.pipe_bailout_reason, Some(PipeBailoutReason::Newline));
    assert_eq!(p.payload, "'echo a |\ncat' < /dev/null");
    assert_eq!(
        build_eval_payload_for(&RELEASE_2_1_72, nl, false).path,
        P::PipeRearranged
    );
    // 1.0.x always adds the redirect, even after an own `<`.
    let r = build_eval_payload_for(&RELEASE_1_0_65, "cat < f", false);
    assert_eq!(r.payload, "'cat < f' \\< /dev/null");
    assert!(!build_eval_payload_for(&RELEASE_2_0_76, "cat < f", false).add_stdin_redirect);
}

/// 2.1.79 bails out where `/\$[A-Za-z_{]/` matches, and only there; 2.1.75 re-tokenises, and
/// shell-quote's parse drops the expansion.
#[test]
fn release_2_1_79_keeps_expansions_out_of_the_rearrangement() {
    let cmd = "argvprobe k:v \"$HOME/x\" $'!%b\\x41' | cat";
    let p = build_eval_payload_for(&RELEASE_2_1_79, cmd, false);
    assert_eq!(p.pipe_bailout_reason, Some(PipeBailoutReason::Variable));
    assert_eq!(
        p.payload,
        "'argvprobe k:v \"$HOME/x\" $'\"'\"'!%b\\x41'\"'\"' | cat' < /dev/null"
    );
    let old = build_eval_payload_for(&RELEASE_2_1_75, cmd, false);
    assert_eq!(
        old.rebuilt_command.as_deref(),
        Some("argvprobe k\\:v /x '$!%b\\x41' < /dev/null | cat")
    );
    for (cmd, bails) in [
        ("echo ${x} | cat", true),
        ("echo $_a | cat", true),
        ("echo $1 $$ $? $@ | cat", false),
        ("echo a$ b | cat", false),
    ] {
        let p = build_eval_payload_for(&RELEASE_2_1_79, cmd, false);
        assert_eq!(
            p.pipe_bailout_reason == Some(PipeBailoutReason::Variable),
            bails,
            "{cmd}"
        );
    }
    // 2.1.79 still tests `!useSandbox`; 2.1.84 rearranges a sandboxed command too.
    assert_eq!(
        build_eval_payload_for(&RELEASE_2_1_79, "a | b", true).path,
        P::Default
    );
    let s = build_eval_payload_for(&RELEASE_2_1_84, "a | b", true);
    assert_eq!(
        (s.path, s.payload.as_str()),
        (P::PipeRearranged, "'a < /dev/null | b'")
    );
}

/// 2.1.84's two new bail-outs: `Kc6` (a single-quoted string closed after backslashes) and
/// `E08` (unbalanced quotes in the text, brackets or quotes in a parsed word).
#[test]
fn release_2_1_84_bails_out_on_unbalanced_text() {
    let reason = |cmd: &str| build_eval_payload_for(&RELEASE_2_1_84, cmd, false).pipe_bailout_reason;
    use PipeBailoutReason::{EscapedSingleQuoteClose as Esc, Unbalanced as Unb};
    for (cmd, want) in [
        ("echo 'a\\' | cat", Some(Esc)),
        ("echo 'a\\\\' x 'b' | cat", Some(Esc)),
        ("echo 'a\\\\' | cat", None),
        ("echo \"it's\" | cat", Some(Unb)),
        ("echo 'x\"y' | cat", Some(Unb)),
        ("echo 'a{b' | cat", Some(Unb)),
        ("echo '(a' | cat", Some(Unb)),
        ("echo 'a]' | cat", Some(Unb)),
        ("echo '{a}' \"(b)\" '[c]' | cat", None),
        // The parse takes the backslashes away: each word holds a lone `"`.
        ("echo \\\" x\\\" | cat", Some(Unb)),
        ("echo a | cat", None),
    ] {
        assert_eq!(reason(cmd), want, "{cmd}");
        // 2.1.79 rearranges all of these.
        assert_eq!(
            build_eval_payload_for(&RELEASE_2_1_79, cmd, false).path,
            P::PipeRearranged,
            "{cmd}"
        );
    }
    assert_eq!(
        build_eval_payload_for(&RELEASE_2_1_84, "echo 'a\\' | cat", false).payload,
        "'echo '\"'\"'a\\'\"'\"' | cat' < /dev/null"
    );
}
