//! The terminal table of a [`Report`].

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
        "{:<30} {:<16} {:>5} {:>9} {:>5} {:>7} {:>9} {:>8} {:>5} {:>7} {:>9}",
        "path",
        "decided by",
        "items",
        "undecided",
        "lost",
        "changed",
        "recovered",
        "rate",
        "false",
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
            "{id:<30} {by:<16} {:>5} {:>9} {:>5} {:>7} {:>9} {:>8} {:>5} {:>7} {:>9.3e}",
            m.items,
            m.undecided,
            m.lost,
            m.lost_changed,
            format!("{}/{}", m.recovered_changed, m.lost_changed),
            m.recovery_rate
                .map_or("-".into(), |x| format!("{:.1}%", x * 100.0)),
            m.false_repairs,
            m.changed_calls,
            m.mcnemar_p
        );
    }
    let o = &r.overall;
    let _ = writeln!(
        s,
        "\nacross paths: {} lost, {} with a changed call; IntAct recovered {} of those ({}), {} of all lost; {} false repairs.",
        o.lost,
        o.lost_changed,
        o.recovered_changed,
        o.recovery_rate.map_or("-".into(), |x| format!("{:.1}%", x * 100.0)),
        o.recovered,
        o.false_repairs
    );
    let _ = writeln!(
        s,
        "lost: the hazard fails, the control passes (IntAct off); changed: lost with a call whose check does not correspond;\nfalse: a control IntAct re-renders, refuses or breaks; calls: calls whose check diverges (IntAct off);\nundecided: no call runs on the path and a check is unknown (left out of lost and McNemar)."
    );
    s
}
