//! The program hop: a shell snapshot may define functions in place of programs (Claude Code
//! 2.1.332 runs `grep` and `find` as functions calling its embedded ugrep and bfs), so the
//! program that runs is not the one the call names.

use super::{Flow, State};
use crate::run::Run;
use crate::{classify, CheckError};
use iec_core::{Hop, Mechanism, WitnessKind};
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

pub(crate) fn hop(
    run: &mut Run<'_>,
    intended: &str,
    snap: &iec_launches::Snapshot,
) -> Result<(), CheckError> {
    let parse = run.parse(intended)?;
    let canonical = parse.canonical().unwrap_or(intended);
    let programs = classify::invoked_programs(canonical);
    let hit: Vec<&String> = programs.iter().filter(|p| snap.shadowed.contains(p)).collect();
    let receipt = json!({ "programs": programs, "shadowed": snap.shadowed });
    if let Some(first) = hit.first() {
        let detail = format!(
            "`{first}` runs the snapshot's shell function, not the program the call names: {}",
            snap.note.clone().unwrap_or_default()
        );
        run.diverge(
            Hop::Program,
            WitnessKind::Emulated,
            receipt,
            Mechanism::Other,
            true,
            first,
            &format!("snapshot function {first}"),
            detail,
        );
    } else {
        run.push(Hop::Program, WitnessKind::Emulated, Some(true), receipt, None);
    }
    Ok(())
}
