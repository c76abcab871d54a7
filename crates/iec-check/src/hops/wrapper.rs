//! The wrapper hop: the text the harness builds around the command (`eval '…' < /dev/null`,
//! snapshot sourcing, Codex's `exec bash -c`), or the completion signal a terminal harness types
//! after it. The receipt is the command the wrapper is built to deliver, compared with the
//! intended one by bash's parse. A PowerShell launch's harness puts statements before and after
//! the command (its script prefix and suffix), compared by the PowerShell grammar.

use super::{Flow, State};
use crate::run::Run;
use crate::windows::{self, Receiver};
use crate::{classify, errexit, CheckError};
use iec_core::{Hop, Mechanism, WitnessKind};
use iec_launches::{render, Windows};
use iec_windows::powershell::grammar;
use serde_json::json;

/// The wrapper hop of [`State`]'s call.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let launch = run.launch;
    if let Some(t) = &launch.terminal {
        return super::terminal::suffix(run, st, t);
    }
    if let Some((w, Receiver::PowerShell)) = windows::receiver(launch) {
        return Ok(powershell(run, st, w));
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
            if let Some(why) = errexit_lost(run, &w.template, text)? {
                run.diverge(
                    Hop::Wrapper,
                    WitnessKind::Emulated,
                    receipt,
                    Mechanism::Other,
                    true,
                    text,
                    &p.designed,
                    format!("the harness changes what the command does through the wrapper around it: {why}"),
                );
                return Ok(None);
            }
            run.push(
                Hop::Wrapper,
                WitnessKind::Emulated,
                Some(true),
                receipt,
                p.changes.first().cloned(),
            );
            Ok(Some((wrapper_text, Some(p))))
        }
        Some((parse, overrides)) => {
            let m = classify::mechanism(text, &p.designed);
            let what = p
                .changes
                .iter()
                .cloned()
                .chain(overrides)
                .collect::<Vec<_>>()
                .join("; ");
            run.diverge(
                Hop::Wrapper,
                WitnessKind::Emulated,
                receipt,
                m,
                parse.parses(),
                text,
                &p.designed,
                format!("the harness changes the command while building the wrapper: {what}"),
            );
            Ok(None)
        }
    }
}

/// Why the text's `set -e` no longer stops it inside the launch's wrapper (see
/// [`crate::errexit`]); `None` where the text does not turn errexit on or the wrapper keeps it.
fn errexit_lost(run: &Run<'_>, template: &str, text: &str) -> Result<Option<String>, CheckError> {
    if !errexit::may_enable(text) {
        return Ok(None);
    }
    let Some(on) = enables(run, text, 0)? else {
        return Ok(None);
    };
    let wrapper = run.parse(&errexit::marked(template))?;
    Ok(wrapper
        .canonical()
        .and_then(errexit::ignored_by)
        .map(|why| format!("the text's `{on}` asks bash to stop at the first failing command, but {why}, so the commands after a failure still run")))
}

/// The `set`/`shopt` command that turns errexit on in `text`, also inside `eval` of static
/// words (a repaired call is `eval $'…'`), a few levels deep.
fn enables(run: &Run<'_>, text: &str, depth: usize) -> Result<Option<String>, CheckError> {
    let parse = run.parse(text)?;
    let Some(c) = parse.canonical() else {
        return Ok(None);
    };
    if let Some(on) = errexit::enabled_by(c) {
        return Ok(Some(on));
    }
    if depth < 4 {
        for body in errexit::eval_bodies(c) {
            if let Some(on) = enables(run, &body, depth + 1)? {
                return Ok(Some(on));
            }
        }
    }
    Ok(None)
}

/// The wrapper hop of a PowerShell launch: the script must hold the harness's statements and
/// then exactly the command's statements (by the grammar's parse of each piece).
fn powershell(run: &mut Run<'_>, st: &mut State, w: &Windows) -> Flow {
    let prefix = w.script_prefix.clone().unwrap_or_default();
    let suffix = w.script_suffix.clone().unwrap_or_default();
    let intended = st.text.as_str();
    let script = format!("{prefix}{intended}{suffix}");
    let whole = grammar::parse(&script);
    let mut pieces = grammar::parse(&prefix).statements;
    pieces.extend(grammar::parse(intended).statements);
    pieces.extend(grammar::parse(&suffix).statements);
    let receipt = json!({ "text": script, "statements": whole.statements.len() });
    if whole.error_at.is_none() && whole.statements == pieces {
        run.push(
            Hop::Wrapper,
            WitnessKind::Emulated,
            Some(true),
            receipt,
            Some(
                "the harness's prefix/suffix statements surround the command's own (tree-sitter-powershell)"
                    .into(),
            ),
        );
        st.wrapper_text = Some(script);
        return Flow::Next;
    }
    let silent = whole.error_at.is_none();
    run.diverge(
        Hop::Wrapper,
        WitnessKind::Emulated,
        receipt,
        Mechanism::Other,
        silent,
        intended,
        &script,
        if silent {
            "the harness's prefix/suffix changes how PowerShell groups the command's statements".into()
        } else {
            "the script with the harness's prefix/suffix no longer parses as PowerShell".into()
        },
    );
    Flow::Stop
}
