//! The wrapper hop: the text the harness builds around the command (`eval '…' < /dev/null`,
//! snapshot sourcing, Codex's `exec bash -c`), or the completion signal a terminal harness types
//! after it. The receipt is the command the wrapper is built to deliver, compared with the
//! intended one by bash's parse.

use super::{Flow, State};
use crate::run::Run;
use crate::{classify, CheckError};
use iec_core::{Hop, WitnessKind};
use iec_launches::render;
use serde_json::json;

/// The wrapper hop of [`State`]'s call.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let launch = run.launch;
    if let Some(t) = &launch.terminal {
        return super::terminal::suffix(run, st, t);
    }
    let text = st.text.clone();
    match hop(run, &text)? {
        Some((wrapper_text, payload)) => {
            st.wrapper_text = Some(wrapper_text);
            st.payload = payload;
            Ok(Flow::Next)
        }
        None => Ok(Flow::Stop),
    }
}

/// The wrapper hop, shared by POSIX and Git Bash launches: the receipt is the command the
/// harness's wrapper is built to deliver. Returns the wrapper text and the payload (none without
/// a wrapper: the text itself), or `None` when the hop diverged.
pub(crate) fn hop(
    run: &mut Run<'_>,
    text: &str,
) -> Result<Option<(String, Option<render::Payload>)>, CheckError> {
    let Some(w) = &run.launch.wrapper else {
        return Ok(Some((text.to_string(), None)));
    };
    let p = render::payload(&w.payload, text, w.stdin_suffix.as_deref());
    let wrapper_text = render::fill(&w.template, &p.words);
    let receipt =
        json!({ "wrapper": wrapper_text, "payload": p.words, "delivers": p.designed, "changes": p.changes });
    match run.same_bash_modulo(text, &p.designed, w.stdin_suffix.as_deref())? {
        None => {
            run.push(
                Hop::Wrapper,
                WitnessKind::Emulated,
                Some(true),
                receipt,
                p.changes.first().cloned(),
            );
            Ok(Some((wrapper_text, Some(p))))
        }
        Some(parse) => {
            let m = classify::mechanism(text, &p.designed);
            run.diverge(
                Hop::Wrapper,
                WitnessKind::Emulated,
                receipt,
                m,
                parse.parses(),
                text,
                &p.designed,
                format!(
                    "the harness changes the command while building the wrapper: {}",
                    p.changes.join("; ")
                ),
            );
            Ok(None)
        }
    }
}
