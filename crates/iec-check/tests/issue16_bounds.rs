//! Issue 16 in the protocol: a text over the limit is measured, not judged; a witness bash that
//! crashes is a witness limit, not the agent's error; OpenHands' one-statement rule does not
//! parse every prefix of a long text without end. Each test is named after the bug.

use iec_check::{call_for_text, check, Options, TEXT_LIMIT, WITNESS_LIMIT};
use iec_core::Verdict;
use iec_launches::Catalog;
use iec_witness::global;

fn report(launch: &str, text: &str) -> iec_core::CheckReport {
    let cat = Catalog::builtin();
    let l = cat.get(launch).unwrap();
    check(l, &call_for_text(l, text), global(), Options::default()).unwrap()
}

#[test]
fn twenty_thousand_nested_command_substitutions_were_the_agents_error_with_an_empty_message() {
    let text = format!("echo {}", "$(".repeat(20_000));
    for launch in [
        "bash-c",
        "sh-c",
        "claude-code-2.1.72-linux",
        "mcp-shell-server",
        "claude-code-git-bash-windows",
        "openhands-tmux",
    ] {
        let r = report(launch, &text);
        assert_eq!(r.verdict, Verdict::Unknown, "{launch}");
        assert_eq!(
            r.attribution.as_deref(),
            Some(WITNESS_LIMIT),
            "{launch}: {:?}",
            r.reason
        );
        let reason = r.reason.unwrap();
        assert!(
            reason.contains("bash ended without a diagnostic while parsing the text: it crashed"),
            "{launch}: {reason}"
        );
    }
    // A real syntax error is still the agent's, with bash's message.
    let r = report("bash-c", "echo $(");
    assert_eq!(r.attribution.as_deref(), Some("generation"));
    assert!(r.reason.unwrap().contains("unexpected EOF"));
}

#[test]
fn a_text_over_the_limit_was_judged_at_any_cost() {
    let text = "echo a\n".repeat((1 << 20) / 7 + 1);
    for launch in ["bash-c", "pwsh-native", "openhands-tmux", "cline-windows-cmd"] {
        let r = report(launch, &text);
        assert_eq!(r.verdict, Verdict::Unknown, "{launch}");
        assert_eq!(r.attribution.as_deref(), Some(TEXT_LIMIT), "{launch}");
        assert_eq!(
            r.reason.as_deref(),
            Some(format!("the command text is {} bytes; iec judges texts of at most 1048576 bytes (1 MiB, its text limit), so it is not checked", text.len()).as_str())
        );
        assert!(r.hops.is_empty());
    }
    // An argv counts its elements joined with spaces.
    let cat = Catalog::builtin();
    let l = cat.get("mcp-shell-server").unwrap();
    let call = iec_core::Call {
        tool: l.tool.clone(),
        input: serde_json::json!({ "command": ["echo", "a".repeat(1 << 19), "b".repeat(1 << 19)] }),
    };
    let r = check(l, &call, global(), Options::default()).unwrap();
    assert_eq!(r.attribution.as_deref(), Some(TEXT_LIMIT));
    assert!(r.reason.unwrap().starts_with("the command text is 1048582 bytes"));
}

/// Red team round 7: the blank-and-comment test of every line prefix and suffix was outside the
/// budget and quadratic (a text of 100 KB of `#` lines took 13 s; 1 MiB, minutes).
#[test]
fn comment_lines_made_the_one_statement_test_quadratic() {
    let text = "#\n".repeat(500_000);
    let r = report("openhands-tmux", &text);
    // Judged (no statement at all is one statement): within the budget, not past it.
    assert_ne!(r.attribution.as_deref(), Some(WITNESS_LIMIT), "{:?}", r.reason);
}

#[test]
fn a_long_heredoc_on_openhands_parsed_every_prefix_and_took_gigabytes() {
    // One statement of 3,000 lines: bash would have to parse 3,000 growing prefixes (over
    // 24 MiB of text in all) to find that no earlier line ends a statement.
    let text = format!("cat <<'EOF'\n{}EOF", "hello $USER \\ ` ' \" !\n".repeat(3000));
    let r = report("openhands-tmux", &text);
    assert_eq!(r.verdict, Verdict::Unknown);
    assert_eq!(r.attribution.as_deref(), Some(WITNESS_LIMIT));
    let reason = r.reason.unwrap();
    assert!(
        reason.contains("to tell whether the text is one statement"),
        "{reason}"
    );
    assert!(reason.contains("more than 24 MiB"), "{reason}");
    // A short one is still judged: one statement, typed.
    let short = format!("cat <<'EOF'\n{}EOF", "hello $USER\n".repeat(50));
    assert_ne!(
        report("openhands-tmux", &short).attribution.as_deref(),
        Some(WITNESS_LIMIT)
    );
}
