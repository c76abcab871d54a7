//! Every hop names the comparison it uses, and none compares bytes where the receiver's parser
//! would see the same action (issue 17). The table below is the one place a new hop must be
//! added (the match is exhaustive), and each hop that compares texts is shown calling a text
//! whose bytes its receiver gets changed, but whose action it keeps, "corresponds".

use iec_check::{call_for_text, check, comparison, Comparison, Options};
use iec_core::{Hop, Verdict};
use iec_launches::Catalog;
use iec_witness::global;

fn named(hop: Hop) -> (&'static str, Comparison) {
    // Exhaustive: a new hop does not compile until it is named here.
    let want = match hop {
        Hop::ToolInput => Comparison::DecodedValue,
        Hop::HarnessRewrite => Comparison::Action,
        Hop::Wrapper => Comparison::Action,
        Hop::Spawn => Comparison::Argv,
        Hop::Terminal => Comparison::Action,
        Hop::Shell => Comparison::Action,
        Hop::Eval => Comparison::Action,
        Hop::InnerShell => Comparison::Action,
        Hop::Program => Comparison::Behaviour,
        Hop::Native => Comparison::Argv,
    };
    (hop.name(), want)
}

#[test]
fn every_hop_names_its_comparison_and_none_compares_bytes() {
    for hop in Hop::ALL {
        let (name, want) = named(hop);
        assert_eq!(comparison(hop), want, "{name}");
        assert_ne!(comparison(hop), Comparison::Bytes, "{name} compares bytes");
    }
}

/// `text` on `launch` corresponds, and `hop` was judged corresponding on it.
fn same_action(launch: &str, text: &str, hop: Hop) -> iec_core::CheckReport {
    let cat = Catalog::builtin();
    let l = cat.get(launch).unwrap();
    let r = check(l, &call_for_text(l, text), global(), Options::default()).unwrap();
    assert_eq!(r.verdict, Verdict::Corresponds, "{launch} {text:?}: {r:?}");
    let h = r
        .hops
        .iter()
        .find(|h| h.name == hop.name())
        .unwrap_or_else(|| panic!("{launch}: no {} hop", hop.name()));
    assert_eq!(h.corresponds, Some(true), "{launch} {text:?} {}", hop.name());
    r
}

#[test]
fn hops_that_change_bytes_but_not_the_action_correspond() {
    // 2.1.72's wrapper re-tokenises a piped command (`echo a ; echo b < /dev/null | cat`).
    let r = same_action("claude-code-2.1.72-linux", "echo 'a'; echo b | cat", Hop::Wrapper);
    let eval = r.hops.iter().find(|h| h.name == "eval").unwrap();
    assert_eq!(eval.receipt["text"], "echo a ; echo b < /dev/null | cat");
    // 2.1.72 writes `x\!y` for eval, whose quote removal gives `x!y` again.
    let r = same_action("claude-code-2.1.72-linux", "printf '%s\\n' ok x!y", Hop::Eval);
    let eval = r.hops.iter().find(|h| h.name == "eval").unwrap();
    assert_eq!(eval.receipt["text"], "printf '%s\\n' ok x\\!y < /dev/null");
    same_action("claude-code-2.1.72-linux", "printf '%s\\n' ok x!y", Hop::Shell);
    // Gemini CLI trims the text.
    let r = same_action("gemini-cli-linux", "  echo hi  ", Hop::HarnessRewrite);
    let rw = r.hops.iter().find(|h| h.name == "harness-rewrite").unwrap();
    assert_eq!(rw.receipt["text"], "echo hi");
    // Gemini CLI strips a model-written `bash -c '…'`: the script's action, by the whitelist of
    // iec_check::wrapping (tests/gemini_strip.rs runs both in real bash).
    let r = same_action(
        "gemini-cli-linux",
        "bash -c 'printf \"%s\\n\" a | cat'",
        Hop::HarnessRewrite,
    );
    let rw = r.hops.iter().find(|h| h.name == "harness-rewrite").unwrap();
    assert_eq!(rw.receipt["text"], "printf \"%s\\n\" a | cat");
    same_action(
        "codex-exec-command-linux",
        "printf '%s\\n' 'it'\"'\"'s'",
        Hop::InnerShell,
    );
    // 2.1.332 runs grep as its embedded ugrep: the same behaviour for these options.
    let r = same_action(
        "claude-code-2.1.332-linux",
        "grep -c -F -- 'a.b' lines.txt",
        Hop::Program,
    );
    assert_eq!(r.substitutions.len(), 1);
    assert_eq!(r.substitutions[0].behaviour, "same");
}
