//! The harness-rewrite hop: the harness changes the text before it quotes it (Gemini CLI strips
//! a model-written `bash -c '…'`, OpenHands escapes for tmux), or joins an argv into one shell
//! text (mcp-shell-server's `" ".join(argv)`).

use super::{Flow, Intended, State};
use crate::action::{self, Token};
use crate::run::Run;
use crate::{classify, wrapping, CheckError};
use iec_core::{Hop, WitnessKind};
use iec_launches::render;
use iec_witness::Parse;
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
    let mut stripped = false;
    for step in &rw.steps {
        let (t, note) = render::rewrite_step(step, &text);
        stripped |= iec_launches::gemini_strip::generation(step).is_some() && note.is_some();
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
    let strip = match stripped {
        true => strip_verdict(run, &intended, &text)?,
        false => None,
    };
    let same_action = if hup_guard_only(run, &rw.steps, &intended, &text)? {
        Some(
            "the harness removed the model's leading `trap '' HUP;` and its wrapper ignores \
             SIGHUP before the command runs (in a subshell, which keeps an ignored signal \
             ignored): the same action",
        )
    } else if let Some(Ok(())) = strip {
        Some(
            "the harness runs the script of the model's `bash -c` inside its own wrapper: the \
             same commands, each construct one whose action the wrapping cannot change \
             (crate::wrapping's tables)",
        )
    } else {
        None
    };
    if let Some(why) = same_action {
        run.push(
            Hop::HarnessRewrite,
            WitnessKind::Emulated,
            Some(true),
            receipt,
            Some(why.into()),
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
            let mut silent = p.parses();
            // The rewritten text runs inside the harness's wrapper, where a text that parses
            // alone may not: Gemini CLI's `;` after a trailing backslash is an escaped `;`, and
            // the group's `}` after it an argument (`{ a \; }; …`: a syntax error, exit 2).
            if let Some(w) = launch.wrapper.as_ref().filter(|w| !w.eval) {
                if silent && launch.spawn.shell == iec_launches::ShellId::Bash {
                    let p = render::payload(&w.payload, &text, w.stdin_suffix.as_deref());
                    silent = run.parse(&render::fill(&w.template, &p.words))?.parses();
                }
            }
            let m = classify::mechanism(&intended, &text);
            run.diverge(
                Hop::HarnessRewrite,
                WitnessKind::Emulated,
                receipt,
                m,
                silent,
                &intended,
                &text,
                match strip {
                    Some(Err(why)) => format!(
                        "the harness rewrites the text: {}; the script runs inside the harness's \
                         wrapper instead of a bash of its own, and holds what may act differently \
                         there: {why}",
                        changes.join("; ")
                    ),
                    _ => format!("the harness rewrites the text: {}", changes.join("; ")),
                },
            );
            Ok(Flow::Stop)
        }
    }
}

/// Gemini CLI 0.44.0's `stripHupGuard` alone changed the text: the model's leading
/// `trap '' HUP;` is gone, the launch's wrapper starts with that very trap, and the rest of the
/// steps made `received` of what followed the guard (which parses on its own).
fn hup_guard_only(
    run: &Run<'_>,
    steps: &[String],
    intended: &str,
    received: &str,
) -> Result<bool, CheckError> {
    use iec_launches::gemini_strip::{generation, hup_guard_rest, wrapper_ignores_hup, Generation};
    let guarded = steps.iter().any(|s| generation(s) == Some(Generation::V0_44_0))
        && run
            .launch
            .wrapper
            .as_ref()
            .is_some_and(|w| wrapper_ignores_hup(&w.template));
    let Some(rest) = hup_guard_rest(intended).filter(|_| guarded) else {
        return Ok(false);
    };
    let mut expect = rest.clone();
    for s in steps.iter().filter(|s| generation(s).is_none()) {
        expect = render::rewrite_step(s, &expect).0;
    }
    Ok(expect == received && run.parse(intended)?.parses() && run.parse(&rest)?.parses())
}

/// Whether stripping a model-written `bash -c SCRIPT` left the action as it was. `None`: the
/// intended text is not exactly one simple command `bash -c SCRIPT` (bash by that name or as
/// `/bin/bash`, `/usr/bin/bash`; no other word, assignment or redirection; SCRIPT static), and
/// the text is judged as any rewrite. `Some(Ok)`: SCRIPT parses alone, the received text is
/// SCRIPT's action for bash, and every construct of SCRIPT is in [`wrapping`]'s whitelists.
/// `Some(Err(why))`: it is not. Other shells (`sh`, `zsh`) parse SCRIPT by other rules and are
/// not judged here.
fn strip_verdict(
    run: &Run<'_>,
    intended: &str,
    received: &str,
) -> Result<Option<Result<(), String>>, CheckError> {
    let Some(script) = run.parse(intended)?.canonical().and_then(bash_c_script) else {
        return Ok(None);
    };
    // SCRIPT must parse alone (no intended == received short-cut): inside the wrapper it is
    // parsed whole, and a text that parses only there (a `)` line) escapes the subshell.
    let Parse::Ok { canonical: mine } = run.parse(&script)? else {
        return Ok(Some(Err("the script does not parse on its own".into())));
    };
    let Parse::Ok { canonical: theirs } = run.parse(received)? else {
        return Ok(Some(Err("the stripped text does not parse on its own".into())));
    };
    if !action::same(&mine, &theirs) {
        return Ok(Some(Err("the stripped text is not the script".into())));
    }
    let mut failed = None;
    let mut parse = |t: &str| match run.parse(t) {
        Ok(Parse::Ok { canonical }) => Some(canonical),
        Ok(_) => None,
        Err(e) => {
            failed = Some(e);
            None
        }
    };
    let why = wrapping::not_neutral(&mine, &mut parse);
    if let Some(e) = failed {
        return Err(e);
    }
    Ok(Some(why.map_or(Ok(()), Err)))
}

/// The static SCRIPT of a canonical form that is exactly `bash -c SCRIPT`.
fn bash_c_script(canonical: &str) -> Option<String> {
    let mut tokens = action::action(canonical)?;
    while matches!(tokens.last(), Some(Token::Op(o)) if o == ";") {
        tokens.pop();
    }
    let lit = |t: &Token| match t {
        Token::Word(segs) => action::literal(segs),
        _ => None,
    };
    match tokens.as_slice() {
        [prog, flag, script] => {
            let prog = lit(prog)?;
            (matches!(prog.as_str(), "bash" | "/bin/bash" | "/usr/bin/bash") && lit(flag)? == "-c")
                .then(|| lit(script))
                .flatten()
        }
        _ => None,
    }
}
