//! The program hop: a shell snapshot may define functions in place of programs (Claude Code
//! 2.1.332 runs `grep` and `find` as functions calling its embedded ugrep and bfs), so the
//! program that runs is not the one the call names. Every such command is reported
//! ([`iec_core::CheckReport::substitutions`]); the hop diverges only where the launch's
//! substitution table shows the substitute behaving differently for the command's options and
//! operands (see [`crate::substitution`]).

use super::{Flow, State};
use crate::run::Run;
use crate::{action, classify, substitution, CheckError};
use iec_core::{Hop, Mechanism, Substitution, WitnessKind};
use iec_launches::substitutes::Table;
use serde_json::json;

/// The program hop of [`State`]'s call.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    if let Some(snap) = &run.launch.snapshot {
        if !snap.shadowed.is_empty() {
            let intended = st.intended_text().to_string();
            hop(run, &intended, snap)?;
        }
    }
    Ok(Flow::Next)
}

/// Command substitutions are read this deep (each is a text of its own).
const MAX_DEPTH: usize = 8;

pub(crate) fn hop(
    run: &mut Run<'_>,
    intended: &str,
    snap: &iec_launches::Snapshot,
) -> Result<(), CheckError> {
    let table = snap.substitutes.as_deref().and_then(Table::builtin_ref);
    let note = snap.note.clone().unwrap_or_default();
    let mut found: Vec<Substitution> = Vec::new();
    let mut programs: Vec<String> = Vec::new();
    // Each text with what its enclosing texts pass on (`substitution::context`).
    let mut texts = vec![(intended.to_string(), 0usize, (None::<String>, false))];
    while let Some((text, depth, outer)) = texts.pop() {
        let parse = run.parse(&text)?;
        let canonical = parse.canonical().unwrap_or(&text).to_string();
        match action::action(&canonical) {
            Some(tokens) => {
                let (mut commands, inner) = substitution::commands(&tokens);
                let (locale, kept) = substitution::context(&tokens);
                let passed = (locale.or_else(|| outer.0.clone()), kept || outer.1);
                for c in &mut commands {
                    if c.locale.is_none() {
                        c.locale = outer.0.clone();
                    }
                    c.stderr_kept |= outer.1;
                }
                let assigns = substitution::assignments(&tokens);
                for c in &commands {
                    // `eval`'s arguments are a text the same shell runs, snapshot functions
                    // defined (a real 2.1.332 run: `eval grep -r TODO d` runs ugrep).
                    // So is a `trap`'s action (red team round 10).
                    match substitution::eval_text(c).or_else(|| substitution::trap_text(c)) {
                        Some(Ok(t)) if depth < MAX_DEPTH => texts.push((t, depth + 1, passed.clone())),
                        Some(Err(word)) => found.push(substitution::dynamic_eval(c, &word, &snap.shadowed)),
                        _ => {}
                    }
                    if let Some(word) = substitution::sourced_stream(c) {
                        found.push(substitution::dynamic_eval(c, &word, &snap.shadowed));
                    }
                    if let Some(s) = substitution::lookup(c, &snap.shadowed) {
                        found.push(s);
                    }
                    let Some(name) = substitution::called_name(c) else {
                        found.extend(substitution::dynamic_name(c, &snap.shadowed, &assigns));
                        continue;
                    };
                    programs.push(name.clone());
                    if snap.when_missing.contains(&name) {
                        found.push(substitution::when_missing(&name, c));
                    } else if snap.shadowed.contains(&name) {
                        found.push(substitution::judge(table, &name, c, &note));
                    }
                }
                if depth < MAX_DEPTH {
                    texts.extend(inner.into_iter().map(|t| (t, depth + 1, passed.clone())));
                }
            }
            // A text whose commands this reader cannot take apart (a here-document): the
            // programs it names are reported, their behaviour not judged.
            None => {
                for name in classify::invoked_programs(&canonical) {
                    if snap.shadowed.contains(&name) {
                        found.push(Substitution {
                            named: name.clone(),
                            runs: format!("the snapshot's function `{name}`"),
                            words: vec![name.clone()],
                            behaviour: "unknown".into(),
                            rows: vec![],
                            caveats: vec![],
                            detail: format!(
                                "`{name}` runs the snapshot's function; the text's commands could not be taken apart \
                                 (a here-document), so its options and operands were not read"
                            ),
                        });
                    }
                    programs.push(name);
                }
            }
        }
    }
    let receipt = json!({ "programs": programs, "shadowed": snap.shadowed, "substitutions": found });
    let differs = found.iter().find(|s| s.behaviour == "differs").cloned();
    let unknown = found.iter().find(|s| s.behaviour == "unknown").cloned();
    run.substitutions.extend(found);
    if let Some(s) = differs {
        let detail = format!(
            "`{}` runs {}, not the program the call names, and it behaves differently here: {}",
            s.named, s.runs, s.detail
        );
        run.diverge(
            Hop::Program,
            WitnessKind::Emulated,
            receipt,
            Mechanism::Other,
            true,
            &s.named,
            &format!("snapshot function {}", s.named),
            detail,
        );
    } else if let Some(s) = unknown {
        let why = format!(
            "`{}` runs {}, not the program the call names: {}",
            s.named, s.runs, s.detail
        );
        run.push(
            Hop::Program,
            WitnessKind::Emulated,
            None,
            receipt,
            Some(why.clone()),
        );
        run.undecided
            .get_or_insert((Some(crate::PROGRAM_SUBSTITUTION), why));
    } else {
        run.push(Hop::Program, WitnessKind::Emulated, Some(true), receipt, None);
    }
    Ok(())
}
