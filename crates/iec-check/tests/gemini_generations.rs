//! Gemini CLI's generations, each as its catalog launch predicts and as real runs showed
//! (`iec harness agree`, 2026-12-08; the catalog sweep's markers `wrapped-*`, `hup-guard`,
//! `gate-*`): which model-written wrapper each strips, and which text its input rules judge.
//! Each test is named after the misprediction it guards against.

use iec_check::{call_for_text, check, Options};
use iec_core::{CheckReport, Verdict};
use iec_launches::resolve::resolve;
use iec_launches::Catalog;
use iec_witness::global;

fn on(version: &str, text: &str) -> CheckReport {
    let cat = Catalog::builtin();
    let (l, _) = resolve(&cat, "gemini-cli", "linux", version, None).expect("a launch");
    check(l, &call_for_text(l, text), global(), Options::default()).expect("checked")
}

/// The first diverging hop's name, or `-` for a corresponding call.
fn hop(r: &CheckReport) -> String {
    match (&r.verdict, &r.first_divergence) {
        (Verdict::Corresponds, None) => "-".into(),
        (_, Some(fd)) => fd.hop_name.clone(),
        (v, None) => format!("{v:?}"),
    }
}

#[test]
fn gemini_0_8_2_checks_the_text_before_its_strip_not_after() {
    // 0.1.21–0.39 judge the model's text: `$(…)` in the single-quoted script is not refused,
    // and the script runs as `bash -c` would have run it.
    let inside_single = "bash -c 'argvprobe t \"$(echo a)\"'";
    assert_eq!(hop(&on("0.8.2", inside_single)), "-");
    assert_eq!(hop(&on("0.13.0", inside_single)), "-");
    // The same `$(…)` in double quotes around the script is refused before any shell runs.
    let inside_double = "bash -c \"argvprobe t '$(echo a)'\"";
    assert_eq!(hop(&on("0.8.2", inside_double)), "tool-input");
}

#[test]
fn gemini_0_1_19_checks_both_texts() {
    assert_eq!(
        hop(&on("0.1.19", "bash -c 'argvprobe t \"$(echo a)\"'")),
        "tool-input"
    );
    assert_eq!(
        hop(&on("0.1.19", "bash -c \"argvprobe t '$(echo a)'\"")),
        "tool-input"
    );
}

#[test]
fn gemini_0_40_checks_what_its_strip_leaves() {
    for v in ["0.40.0", "0.61.0"] {
        assert_eq!(
            hop(&on(v, "bash -c 'argvprobe t \"$(echo a)\"'")),
            "tool-input",
            "{v}"
        );
        // Not refused: the strip slices the double quotes off and `$(…)` stays literal.
        assert_eq!(
            hop(&on(v, "bash -c \"argvprobe t '$(echo a)'\"")),
            "harness-rewrite",
            "{v}"
        );
    }
}

#[test]
fn gemini_0_35_does_not_strip_a_shell_with_a_path_and_0_36_does() {
    // Unstripped, `/bin/bash -c '…'` runs as written; stripped, its script runs in the wrapper.
    let text = "/bin/bash -c 'argvprobe t \"a b\"'";
    let rewritten = |v: &str| {
        on(v, text)
            .hops
            .iter()
            .find(|h| h.name == "harness-rewrite")
            .and_then(|h| h.receipt.get("text").and_then(|t| t.as_str()).map(String::from))
    };
    // Both still append the `;` of `gemini-trim-semicolon`.
    assert_eq!(rewritten("0.35.3"), Some(format!("{text};")));
    assert_eq!(rewritten("0.36.0").as_deref(), Some("argvprobe t \"a b\";"));
}

#[test]
fn gemini_0_10_strips_bash_slash_c_and_0_11_strips_upper_case_bash() {
    let slash = "bash /c 'argvprobe t a'";
    assert_eq!(hop(&on("0.10.0", slash)), "harness-rewrite");
    assert_eq!(hop(&on("0.11.3", slash)), "-");
    let upper = "BASH -c 'argvprobe t a'";
    assert_eq!(hop(&on("0.10.0", upper)), "-");
    assert_eq!(hop(&on("0.11.3", upper)), "harness-rewrite");
}

#[test]
fn gemini_0_45_slices_the_quotes_where_0_51_reads_them_with_shell_quote() {
    let text = "bash -c \"argvprobe t \\\"a b\\\"\"";
    // 0.45.2 runs `argvprobe t \"a b\"`: two words `"a` and `b"`.
    assert_eq!(hop(&on("0.45.2", text)), "harness-rewrite");
    // 0.51.0 on hands bash `argvprobe t "a b"`: the script `bash -c` would have run.
    assert_eq!(hop(&on("0.51.0", text)), "-");
}

#[test]
fn gemini_0_44_hup_guard_strip_is_the_same_action() {
    // 0.44.0 removes the model's leading `trap '' HUP;` and runs the rest in a wrapper that
    // starts with that trap: the same action.
    assert_eq!(hop(&on("0.44.0", "trap '' HUP; argvprobe t a")), "-");
    let r = on("0.44.0", "trap '' HUP; argvprobe t a");
    let rw = r
        .hops
        .iter()
        .find(|h| h.name == "harness-rewrite")
        .expect("a rewrite hop");
    assert_eq!(rw.receipt["text"], "argvprobe t a");
}
