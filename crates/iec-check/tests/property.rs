//! Property suite: every parseable bash text corresponds on `bash-c`; texts that do not parse
//! get `unknown` with a generation reason; the faithful single-quote eval of Claude Code
//! 2.1.332 corresponds too. Real bash is the judge (`bash -n`) wherever the generator could be
//! wrong. Case counts: IEC_PROPERTY_CASES (default 100000).

use iec_check::{call_for_text, check, Options};
use iec_core::Verdict;
use iec_launches::{unparsed::unparsed_line, Catalog};
use iec_testkit::gen;
use iec_witness::{global, spawn};
use std::sync::atomic::{AtomicUsize, Ordering};

fn quiet_panics() {
    // One failing case is enough to read; keep the rest of a thread's output short.
    std::env::set_var("RUST_BACKTRACE", "0");
}

fn cases() -> usize {
    quiet_panics();
    std::env::var("IEC_PROPERTY_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(100_000)
}

fn verdict(launch: &str, text: &str) -> iec_core::CheckReport {
    let cat = Catalog::builtin();
    let l = cat.get(launch).unwrap();
    check(l, &call_for_text(l, text), global(), Options::default())
        .unwrap_or_else(|e| panic!("{launch} {text:?}: {e}"))
}

#[test]
fn parseable_scripts_correspond_on_bash_c() {
    let n = cases();
    let threads = 2;
    let checked = AtomicUsize::new(0);
    let judged_by_bash = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for t in 0..threads {
            let checked = &checked;
            let judged_by_bash = &judged_by_bash;
            s.spawn(move || {
                let cat = Catalog::builtin();
                let bash_c = cat.get("bash-c").unwrap();
                let mut r = gen::Rng::new(1000 + t as u64);
                for i in 0..n / threads {
                    let text = gen::script(&mut r);
                    let rep = check(
                        bash_c,
                        &call_for_text(bash_c, &text),
                        global(),
                        Options::default(),
                    )
                    .unwrap();
                    if rep.verdict != Verdict::Corresponds || i % 50 == 0 {
                        // Real bash decides whether the text parses.
                        let parses = spawn::bash_n(text.as_bytes(), text.contains("extglob"))
                            .unwrap()
                            .is_ok();
                        judged_by_bash.fetch_add(1, Ordering::Relaxed);
                        assert!(parses, "generator produced a text bash rejects: {text:?}");
                        assert_eq!(rep.verdict, Verdict::Corresponds, "{text:?}: {:?}", rep.reason);
                    }
                    checked.fetch_add(1, Ordering::Relaxed);
                }
            });
        }
    });
    let c = checked.load(Ordering::Relaxed);
    println!(
        "bash-c: {c} generated scripts correspond; {} also judged by a separate bash -n",
        judged_by_bash.load(Ordering::Relaxed)
    );
    assert!(c >= n - threads);
}

#[test]
fn long_texts_correspond_on_bash_c() {
    let mut r = gen::Rng::new(64);
    for size in [1_000, 16_000, 65_536, 65_536, 100_000] {
        let text = gen::long_script(&mut r, size);
        assert!(text.len() >= size);
        let rep = verdict("bash-c", &text);
        assert_eq!(
            rep.verdict,
            Verdict::Corresponds,
            "{} bytes: {:?}",
            text.len(),
            rep.reason
        );
    }
}

#[test]
fn texts_that_do_not_parse_are_unknown_generation() {
    let mut r = gen::Rng::new(99);
    let (mut broken, mut fine) = (0, 0);
    for _ in 0..1_000 {
        let text = gen::broken(&mut r);
        let bash_says = spawn::bash_n(text.as_bytes(), false).unwrap();
        let rep = verdict("bash-c", &text);
        match bash_says {
            Err(msg) => {
                broken += 1;
                assert_eq!(rep.verdict, Verdict::Unknown, "{text:?}");
                assert_eq!(rep.attribution.as_deref(), Some("generation"));
                let reason = rep.reason.unwrap();
                assert!(reason.starts_with("generation:"), "{reason}");
                assert!(
                    reason.contains("syntax error") || reason.contains("unexpected"),
                    "{reason} / bash: {msg}"
                );
                assert!(rep.first_divergence.is_none());
            }
            Ok(()) => {
                fine += 1;
                assert_eq!(rep.verdict, Verdict::Corresponds, "{text:?}");
            }
        }
    }
    println!("{broken} texts bash rejects were unknown/generation; {fine} that bash accepts corresponded");
    assert!(broken > 500);
}

#[test]
fn single_quote_eval_of_2_1_332_corresponds() {
    let cat = Catalog::builtin();
    let l = cat.get("claude-code-2.1.332-linux").unwrap();
    let mut r = gen::Rng::new(2332);
    let (mut ok, mut rejected, mut shadowed, mut rewritten, mut maybe) = (0, 0, 0, 0, 0);
    for _ in 0..(cases() / 10).max(100) {
        let text = gen::script(&mut r);
        let rep = check(l, &call_for_text(l, &text), global(), Options::default()).unwrap();
        match rep.verdict {
            Verdict::Corresponds => ok += 1,
            Verdict::Diverges => {
                let fd = rep.first_divergence.unwrap();
                match fd.hop_name.as_str() {
                    "tool-input" => {
                        // A control character, or the harness's "unparsed line" refusal
                        // (modelled in `iec_launches::unparsed`, measured against the real
                        // 2.1.332 in iec-harness's unparsed_line.rs).
                        let control = text
                            .chars()
                            .any(|c| c.is_ascii_control() && c != '\n' && c != '\t');
                        let refused = unparsed_line(&text).is_some_and(|u| u.certain);
                        assert!(control || refused, "{text:?}: {}", fd.detail);
                        rejected += 1
                    }
                    "program" => shadowed += 1,
                    // The harness's `\\;` → `\;` normalisation (real runs, CHANGELOG).
                    "harness-rewrite" if text.contains("\\\\;") => rewritten += 1,
                    _ => panic!("{text:?} diverged at {}: {}", fd.hop_name, fd.detail),
                }
            }
            // A shadowed program whose options or words the substitution table does not cover.
            Verdict::Unknown
                if !rep.substitutions.is_empty()
                    && rep.substitutions.iter().any(|s| s.behaviour == "unknown") =>
            {
                shadowed += 1
            }
            // A text the harness may refuse as an "unparsed line".
            Verdict::Unknown if unparsed_line(&text).is_some_and(|u| !u.certain) => maybe += 1,
            Verdict::Unknown => panic!("{text:?}: {:?}", rep.reason),
        }
    }
    println!("2.1.332: {ok} correspond, {rejected} rejected (control characters or unparsed line), {maybe} may be refused, {shadowed} call a shadowed program, {rewritten} hold `\\\\;`");
    assert!(ok > 0 && rejected > 0);
}
