//! `iec harness learn` against real Claude Code: the launch learned from marker payloads for
//! 2.1.332 predicts the real runs of a third of the 300 generated hazard payloads (a new third
//! each UTC day, `IEC_LEARN_HAZARDS=all` for all) of
//! `tests/agreement.rs` (100% verdict agreement), and what learning found is asserted: 2.1.332
//! single-quotes the command for eval and rejects control characters, 2.1.72 renders it with
//! shell-quote (so the same `!` marker arrives as `\!`) and rejects nothing; both spawn
//! `/bin/bash -c WRAPPER`, and `iec check` on each learned launch agrees with every marker.
//!
//! Skips like `tests/claude_code.rs`: when the npm install fails and `IEC_SKIP_HARNESS=1` (or
//! `IEC_SKIP_NPM=1`) is set, it prints `SKIPPED: …` and passes.

mod support;

use std::time::Instant;

use iec_harness::agree::{agree_observed_launch, agreement_line, run_observed, Payload};
use iec_harness::hazard_payloads;
use iec_harness::learn::{learn, Evidence, Learned, MarkerKind};
use support::spec;

/// A third of the 300 hazard payloads of `tests/agreement.rs` (which runs all 300 through the
/// same versions), a new third every UTC day (`IEC_ROTATION`); `IEC_LEARN_HAZARDS=all` (or a
/// count) takes more.
fn payloads() -> Vec<Payload> {
    let all = support::payloads(hazard_payloads, 300, support::HAZARD_SEED);
    let n = iec_testkit::rotation::count("IEC_LEARN_HAZARDS", 100, all.len());
    let start = iec_testkit::rotation::start() % 3 * 100;
    eprintln!("hazard payloads {start}.. ({n} of 300; IEC_LEARN_HAZARDS=all for every one)");
    iec_testkit::rotation::pick(all, start, n)
}

fn learned(version: &str) -> Option<Learned> {
    support::claude_code(version).map(|_| learn(&spec(version)).expect("learn"))
}

/// Every rendering marker's outer text is reproduced by the learned template and rendering,
/// and `iec check` on the learned launch agrees with every marker it judges.
fn assert_markers_reproduced(l: &Learned) {
    for e in &l.evidence {
        if e.kind == MarkerKind::Rendering && e.reached_shell {
            assert_eq!(e.template_diff, None, "marker {}: {}", e.marker, e.finding);
        }
        assert_ne!(
            e.agrees,
            Some(false),
            "marker {}: iec check disagrees: {:?}",
            e.marker,
            e
        );
    }
}

fn evidence<'a>(l: &'a Learned, marker: &str) -> &'a Evidence {
    l.evidence
        .iter()
        .find(|e| e.marker == marker)
        .unwrap_or_else(|| panic!("no evidence for marker {marker}"))
}

#[test]
fn learned_2_1_332_launch_agrees_with_real_runs_of_the_hazard_payloads() {
    let Some(l) = learned("2.1.332") else { return };
    eprintln!("{}", l.toml);
    assert_eq!(l.launch.id, "claude-code-2.1.332-linux-learned");
    assert!(
        l.launch
            .source
            .starts_with("learned by iec harness learn from real runs on "),
        "{}",
        l.launch.source
    );
    let w = l.launch.wrapper.as_ref().expect("a wrapper was learned");
    assert_eq!(w.payload, "single-quote");
    assert!(w.eval);
    assert!(!w.inner_shell);
    assert_eq!(w.stdin_suffix, None);
    assert!(
        w.template
            .starts_with("source {{snapshot}} 2>/dev/null || true && "),
        "{}",
        w.template
    );
    assert!(
        w.template
            .ends_with(" && eval {{payload}} < /dev/null && pwd -P >| {{tmp}}/claude-0a1b-cwd"),
        "{}",
        w.template
    );
    assert_eq!(l.launch.spawn.argv, ["/bin/bash", "-c", "{{wrapper}}"]);
    assert!(!l.launch.spawn.login);
    assert_eq!(
        l.launch.validate.reject_control_chars.as_deref(),
        Some("InputValidationError: command contains control characters that would be hidden in the approval dialog")
    );
    assert_eq!(l.launch.validate.reject_newlines, None);
    assert_eq!(l.launch.validate.reject_command_substitution, None);
    // Its own bash parser refuses `$$(` (the unparsed-line marker), permissions bypassed.
    let unparsed = l
        .launch
        .validate
        .refuse_unparsed_line
        .as_deref()
        .unwrap_or_default();
    assert!(
        unparsed.starts_with("Claude Code can't be sure it read this command the way the shell will, so it can't rule out a dangerous removal. This requires explicit approval."),
        "{unparsed:?}"
    );
    // CR, U+0001, ESC, DEL, U+0085 (a C1 control) and `$$(` are refused before any shell runs;
    // tab and LF reach the shell.
    for (marker, refused) in [
        ("cr", true),
        ("soh", true),
        ("esc", true),
        ("del", true),
        ("nel", true),
        ("tab", false),
        ("lf", false),
        ("unparsed", true),
    ] {
        let e = evidence(&l, marker);
        assert_eq!(e.reached_shell, !refused, "marker {marker}: {}", e.finding);
    }
    // `!` next to a single quote: only the single-quote rendering reproduces what bash got.
    let bang = &evidence(&l, "bang").renderings;
    assert_eq!(bang.get("single-quote"), Some(&true));
    assert_eq!(bang.get("claude-code-2.1.72"), Some(&false));
    let shadowed = &l
        .launch
        .snapshot
        .as_ref()
        .expect("a snapshot was learned")
        .shadowed;
    // grep, find and pkill are defined unconditionally by the snapshot (rg only when no rg is on PATH).
    for p in ["grep", "find", "pkill"] {
        assert!(shadowed.iter().any(|s| s == p), "{p} not in {shadowed:?}");
    }
    // The behaviour table is learned from the functions' texts, and it is the one the
    // hand-written launch of this version names.
    assert_eq!(
        l.launch.snapshot.as_ref().unwrap().substitutes.as_deref(),
        Some("claude-code-2.1.332"),
        "{}",
        evidence(&l, "functions").finding
    );
    assert_markers_reproduced(&l);

    let t = Instant::now();
    let observed = run_observed(&spec("2.1.332"), &payloads()).expect("real runs");
    let rep = agree_observed_launch("2.1.332", &l.launch, &observed).expect("agree");
    let bad: Vec<String> = rep.disagreements().into_iter().map(agreement_line).collect();
    eprintln!(
        "learned {} (markers run in {:.1} s) vs real 2.1.332: {}/{} agree, {} observed changed, {:.1} s",
        l.launch.id,
        l.elapsed_ms as f64 / 1000.0,
        rep.totals["agree"],
        rep.results.len(),
        rep.results
            .iter()
            .filter(|a| a.observed["verdict"] != "corresponds")
            .count(),
        t.elapsed().as_secs_f64()
    );
    assert_eq!(rep.results.len(), payloads().len());
    assert!(
        bad.is_empty(),
        "the learned launch disagrees with real runs:\n{}",
        bad.join("\n")
    );
}

#[test]
fn learning_2_1_72_finds_its_other_rendering() {
    let Some(l) = learned("2.1.72") else { return };
    eprintln!("{}", l.toml);
    let w = l.launch.wrapper.as_ref().expect("a wrapper was learned");
    assert_eq!(w.payload, "claude-code-2.1.72");
    assert!(w.eval);
    assert_eq!(
        w.template,
        "source {{snapshot}} && shopt -u extglob 2>/dev/null || true && eval {{payload}} && pwd -P >| {{tmp}}/claude-0a1b-cwd"
    );
    // eval receives the `\<` `/dev/null` words joined onto the command.
    assert_eq!(w.stdin_suffix.as_deref(), Some(" < /dev/null"));
    assert_eq!(
        l.launch.validate.reject_control_chars, None,
        "2.1.72 lets control characters through"
    );
    assert_eq!(l.launch.validate.refuse_unparsed_line, None);
    for marker in ["cr", "soh", "esc", "del", "nel", "tab", "lf", "unparsed"] {
        assert!(evidence(&l, marker).reached_shell, "marker {marker}");
    }
    assert_eq!(l.launch.spawn.argv, ["/bin/bash", "-c", "{{wrapper}}"]);
    // 2.1.72's snapshot defines only `rg`, which no behaviour table describes.
    assert_eq!(
        l.launch.snapshot.as_ref().and_then(|s| s.substitutes.as_deref()),
        None
    );
    // The same `!` marker: here only shell-quote's rendering reproduces it, and the probe got
    // `\!` (the change the learned launch predicts).
    let bang = evidence(&l, "bang");
    assert_eq!(bang.renderings.get("single-quote"), Some(&false));
    assert_eq!(bang.renderings.get("claude-code-2.1.72"), Some(&true));
    assert_eq!(bang.probe[0][1..], ["a \\!= b", "x \\! y"]);
    assert_eq!(bang.direct_probe[0][1..], ["a != b", "x ! y"]);
    assert_markers_reproduced(&l);

    // The 300 hazard payloads through real 2.1.72, where many arrive changed: the learned
    // launch predicts every verdict, and the launch learned from 2.1.332 (which predicts no
    // change for them) disagrees on exactly the changed ones, so the comparison discriminates.
    let t = Instant::now();
    let observed = run_observed(&spec("2.1.72"), &payloads()).expect("real runs");
    let rep = agree_observed_launch("2.1.72", &l.launch, &observed).expect("agree");
    let changed = observed.iter().filter(|o| o.verdict != "corresponds").count();
    eprintln!(
        "learned {} vs real 2.1.72: {}/{} agree, {changed} observed changed, {:.1} s",
        l.launch.id,
        rep.totals["agree"],
        rep.results.len(),
        t.elapsed().as_secs_f64()
    );
    let bad: Vec<String> = rep.disagreements().into_iter().map(agreement_line).collect();
    assert_eq!(rep.results.len(), payloads().len());
    assert!(
        bad.is_empty(),
        "the learned launch disagrees with real runs:\n{}",
        bad.join("\n")
    );
    assert!(changed > 0, "no hazard payload changed on 2.1.72");
    let other = learned("2.1.332").expect("2.1.332 installs like 2.1.72");
    let cross = agree_observed_launch("2.1.72", &other.launch, &observed).expect("agree");
    eprintln!(
        "learned {} vs real 2.1.72: {}/{} agree",
        other.launch.id,
        cross.totals["agree"],
        cross.results.len()
    );
    assert_eq!(cross.disagreements().len(), changed);
}
