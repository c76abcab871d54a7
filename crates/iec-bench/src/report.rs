//! The terminal table of a [`Report`], and harness mode's agreement.

use crate::harness::HarnessReport;
use crate::replay::{Decider, Report};
use std::fmt::Write;

/// The report as a table: one row a path, then the totals across paths.
pub fn table(r: &Report) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "IEC-Bench replay: {} pairs, {} chains, {} tasks; recorded actions held fixed, IntAct off and on.\n",
        r.pairs, r.chains, r.tasks
    );
    let _ = writeln!(
        s,
        "{:<30} {:<16} {:>5} {:>9} {:>5} {:>7} {:>9} {:>8} {:>5} {:>7} {:>7} {:>9}",
        "path",
        "decided by",
        "items",
        "undecided",
        "lost",
        "changed",
        "recovered",
        "rate",
        "false",
        "hidden",
        "calls",
        "McNemar p"
    );
    for (id, m) in &r.paths {
        let by = match m.decided_by {
            Some(Decider::Run) => "run here",
            Some(Decider::Emulated) => "emulated",
            Some(Decider::TerminalWitness) => "terminal witness",
            None => "",
        };
        let _ = writeln!(
            s,
            "{id:<30} {by:<16} {:>5} {:>9} {:>5} {:>7} {:>9} {:>8} {:>5} {:>7} {:>7} {:>9.3e}",
            m.items,
            m.undecided,
            m.lost,
            m.lost_changed,
            format!("{}/{}", m.recovered_changed, m.lost_changed),
            m.recovery_rate
                .map_or("-".into(), |x| format!("{:.1}%", x * 100.0)),
            m.false_repairs,
            m.hop_hiding,
            m.changed_calls,
            m.mcnemar_p
        );
    }
    let o = &r.overall;
    let _ = writeln!(
        s,
        "\nacross paths: {} lost, {} with a changed call; IntAct recovered {} of those ({}), {} of all lost; {} false repairs; {} hidden by the first hop.",
        o.lost,
        o.lost_changed,
        o.recovered_changed,
        o.recovery_rate.map_or("-".into(), |x| format!("{:.1}%", x * 100.0)),
        o.recovered,
        o.false_repairs,
        o.hop_hiding
    );
    let _ = writeln!(
        s,
        "lost: the hazard fails, the control passes (IntAct off); changed: lost with a call whose check does not correspond;\nfalse: a control IntAct re-renders, refuses or breaks;\nhidden: lost items whose failure shows only after the first changed hop is repaired (the re-rendering fails at another hop, or the run still fails);\ncalls: calls whose check diverges (IntAct off);\nundecided: no call runs on the path and a check is unknown (left out of lost and McNemar)."
    );
    s
}

/// Harness mode's part of the report: agreement per IntAct mode, then every disagreement.
pub fn harness(h: &HarnessReport) -> String {
    let mut s = String::new();
    let count = |k: &str| h.kinds.get(k).map_or(0, |k| k.items);
    let _ = writeln!(
        s,
        "\nHarness mode: {} items ({} pairs, {} chains, {} tasks) through {} ({} launches, {} tool calls, {:.1} s), beside replay mode on {}.",
        h.items,
        count("pair"),
        count("chain"),
        count("task"),
        h.harness,
        h.sessions,
        h.calls,
        h.elapsed_ms as f64 / 1000.0,
        h.launch
    );
    let per_kind = |on: bool| {
        h.kinds
            .iter()
            .filter_map(|(k, v)| {
                let a = if on { v.intact_on.as_ref()? } else { &v.intact_off };
                Some(format!("{k}s {}/{}", a.agree, a.items))
            })
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(
        s,
        "IntAct off: {}/{} items agree ({}).",
        h.intact_off.agree,
        h.intact_off.items,
        per_kind(false)
    );
    match &h.intact_on {
        Some(on) => {
            let _ = writeln!(
                s,
                "IntAct on (the iec hook): {}/{} items agree ({}).",
                on.agree,
                on.items,
                per_kind(true)
            );
        }
        None => match &h.intact_on_unavailable {
            Some(why) => {
                let _ = writeln!(s, "IntAct on: {why}.");
            }
            None => {
                let _ = writeln!(s, "IntAct on: not run.");
            }
        },
    }
    for d in &h.disagreements {
        let _ = writeln!(
            s,
            "  DISAGREE {} {} {} (IntAct {}): emulated {}, measured {}: {}",
            d.kind, d.item, d.variant, d.intact, d.emulated, d.measured, d.why
        );
    }
    s
}

/// Agent mode's part of the report: per path, IntAct off and on.
pub fn agent(a: &crate::agent::AgentReport) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "\nAgent mode: {} through {:?} ({}), at most {} turns per task.",
        a.model,
        a.endpoint,
        a.api_name(),
        a.max_turns
    );
    let _ = writeln!(
        s,
        "{:<32} {:>6} {:>7} {:>7} {:>9} {:>13} {:>6} {:>7}",
        "path", "IntAct", "tasks", "passed", "pass", "tokens/pass", "false", "limit"
    );
    for (path, p) in &a.paths {
        for (mode, m) in [("off", &p.intact_off), ("on", &p.intact_on)] {
            let _ = writeln!(
                s,
                "{:<32} {:>6} {:>7} {:>7} {:>9} {:>13} {:>6} {:>7}",
                path,
                mode,
                m.tasks,
                m.passed,
                m.pass_rate.map_or("-".into(), |x| format!("{:.1}%", x * 100.0)),
                m.tokens_per_passed.map_or("-".into(), |x| format!("{x:.0}")),
                m.false_confirmations,
                m.turn_limit
            );
        }
    }
    let _ = writeln!(
        s,
        "false: the model stopped on its own, its last text has no failure word, and the check fails;\nlimit: sessions ended by the turn limit."
    );
    s
}
