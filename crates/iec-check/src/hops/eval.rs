//! The eval hop (and the inner shell's): the words the outer shell handed `eval` (or the one
//! argument of the wrapper's `bash -c`) are parsed again; real bash compares what it parses
//! with the command the harness meant to deliver.

use super::{Flow, State};
use crate::run::Run;
use crate::{classify, CheckError};
use iec_core::{Hop, WitnessKind};
use serde_json::json;

/// The eval (or inner-shell) hop of [`State`]'s call.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State, hop: Hop) -> Result<Flow, CheckError> {
    let designed = st
        .payload
        .as_ref()
        .expect("an eval hop follows a wrapper")
        .designed
        .clone();
    let eval_text = st.eval_text.clone();
    self::hop(run, hop, &designed, &eval_text)
}

/// Compares what `hop` parses (`eval_text`) with what the harness meant it to (`designed`).
pub(crate) fn hop(run: &mut Run<'_>, hop: Hop, designed: &str, eval_text: &str) -> Result<Flow, CheckError> {
    let hop_name = hop.name();
    let receipt = json!({ "text": eval_text });
    match run.same_bash(designed, eval_text)? {
        None => {
            run.push(hop, WitnessKind::Real, Some(true), receipt, None);
            Ok(Flow::Next)
        }
        Some(p) => {
            let m = classify::mechanism(designed, eval_text);
            let silent = p.parses();
            let detail = if silent {
                format!("{hop_name} parses a different command than the one the harness meant to deliver, and it runs without a parse error")
            } else {
                format!("{hop_name} fails to parse what it received")
            };
            run.diverge(
                hop,
                WitnessKind::Real,
                receipt,
                m,
                silent,
                designed,
                eval_text,
                detail,
            );
            Ok(Flow::Stop)
        }
    }
}
