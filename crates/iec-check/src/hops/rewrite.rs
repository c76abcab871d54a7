//! The harness-rewrite hop: the harness changes the text before it quotes it (Gemini CLI strips
//! a model-written `bash -c '…'`, OpenHands escapes for tmux), or joins an argv into one shell
//! text (mcp-shell-server's `" ".join(argv)`).

use super::{Flow, Intended, State};
use crate::run::Run;
use crate::{classify, CheckError};
use iec_core::{Hop, WitnessKind};
use iec_launches::render;
use serde_json::json;

/// The harness-rewrite hop of [`State`]'s call.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let launch = run.launch;
    let Some(rw) = &launch.rewrite else {
        return Ok(Flow::Next);
    };
    if let Intended::Argv(argv) = &st.intended {
        if rw.steps.iter().any(|s| s == "space-join") {
            // The argv becomes one shell text: the shell re-splits and re-expands it.
            let joined = render::space_join(argv);
            run.push(
                Hop::HarnessRewrite,
                WitnessKind::Emulated,
                None,
                json!({ "text": joined }),
                Some("argv joined with spaces; judged where the shell parses it".into()),
            );
            st.joined = Some(joined);
        }
        return Ok(Flow::Next);
    }
    let intended = st.text.clone();
    let mut text = intended.clone();
    let mut changes = vec![];
    for step in &rw.steps {
        let (t, note) = render::rewrite_step(step, &text);
        text = t;
        changes.extend(note);
    }
    let receipt = json!({ "text": text, "changes": changes });
    st.text = text.clone();
    if launch.terminal.is_some() {
        // The escaping is meant to compensate tmux's own unescaping, so it is judged end to end,
        // where the shell reads the text.
        run.push(
            Hop::HarnessRewrite,
            WitnessKind::Emulated,
            None,
            receipt,
            Some("judged at the terminal hop: the rewrite is meant to compensate tmux".into()),
        );
        return Ok(Flow::Next);
    }
    match run.same_bash(&intended, &text)? {
        None => {
            run.push(
                Hop::HarnessRewrite,
                WitnessKind::Emulated,
                Some(true),
                receipt,
                None,
            );
            Ok(Flow::Next)
        }
        Some(p) => {
            let silent = p.parses();
            let m = classify::mechanism(&intended, &text);
            run.diverge(
                Hop::HarnessRewrite,
                WitnessKind::Emulated,
                receipt,
                m,
                silent,
                &intended,
                &text,
                format!("the harness rewrites the text: {}", changes.join("; ")),
            );
            Ok(Flow::Stop)
        }
    }
}
