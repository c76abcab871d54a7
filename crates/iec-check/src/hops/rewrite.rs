//! The harness-rewrite hop: the harness changes the text before it quotes it (Gemini CLI strips
//! a model-written `bash -c '…'`, OpenHands escapes for tmux), or joins an argv into one shell
//! text (mcp-shell-server's `" ".join(argv)`).

use super::{Flow, Intended, State};
use crate::action::{self, Seg, Token};
use crate::run::{Parse, Run};
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
    let mut stripped = false;
    for step in &rw.steps {
        let (t, note) = render::rewrite_step(step, &text);
        stripped |= step == "gemini-strip-shell-wrapper" && note.is_some();
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
        Some(_) if stripped && runs_as_own_bash(run, &intended, &text)? => {
            run.push(
                Hop::HarnessRewrite,
                WitnessKind::Emulated,
                Some(true),
                receipt,
                Some(
                    "the harness runs the script of the model's `bash -c` in its own bash: the same \
                     commands, and the script reads nothing that tells the two bashes apart"
                        .into(),
                ),
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

/// Whether stripping a model-written `bash -c SCRIPT` left an action the model would not tell
/// apart: the intended text is one simple command `bash -c SCRIPT` (bash by that name or as
/// `/bin/bash`, `/usr/bin/bash`; no other word, assignment or redirection; SCRIPT static), the
/// received text denotes SCRIPT's commands for bash, and SCRIPT reads nothing that differs
/// between a bash of its own and the harness's bash ([`reads_instance`]). Other shells (`sh`,
/// `zsh`) parse SCRIPT by other rules and stay a change.
fn runs_as_own_bash(run: &Run<'_>, intended: &str, received: &str) -> Result<bool, CheckError> {
    let Some(script) = bash_c_script(&run.validate(intended)?) else {
        return Ok(false);
    };
    if reads_instance(&script) {
        return Ok(false);
    }
    Ok(run.same_bash(&script, received)?.is_none())
}

/// The static SCRIPT of a text that is exactly `bash -c SCRIPT`.
fn bash_c_script(parse: &Parse) -> Option<String> {
    let mut tokens = action::action(parse.canonical()?)?;
    while matches!(tokens.last(), Some(Token::Op(o)) if o == ";" || o == "\n") {
        tokens.pop();
    }
    let lit = |t: &Token| match t {
        Token::Word(segs) => segs
            .iter()
            .map(|s| match s {
                Seg::Lit(l) => Some(l.as_str()),
                Seg::Dyn(..) => None,
            })
            .collect::<Option<String>>(),
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

/// Whether a script reads what differs between a bash of its own and the harness's bash that
/// runs it instead: its `$0`, process ids, nesting and line counters, `$_`, `$-`, the
/// harness's own wrapper variables, or names chosen at run time (`${!…}`, `eval`).
fn reads_instance(script: &str) -> bool {
    const SPECIAL: &[&str] = &["$0", "${0", "$$", "${$", "$_", "${_", "$-", "${-", "${!", "eval"];
    const NAMES: &[&str] = &[
        "PPID",
        "BASHPID",
        "SHLVL",
        "LINENO",
        "BASH_SUBSHELL",
        "BASH_EXECUTION_STRING",
        "BASH_ARGV0",
        "BASH_COMMAND",
        "_bgpids_file",
        "__code",
    ];
    SPECIAL.iter().chain(NAMES).any(|n| script.contains(n))
}
