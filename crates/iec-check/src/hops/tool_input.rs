//! The structured-decode hop: serde_json is the real receiver of the tool call's JSON; the
//! harness's input validation may still reject the text before any shell runs.

use super::{Flow, State};
use crate::run::{no_crash, wants_extglob, Run};
use crate::{plain, CheckError};
use iec_core::{Hop, Mechanism, WitnessKind};
use iec_launches::{gemini_strip, render};
use iec_witness::{Parse, WitnessError};
use serde_json::{json, Value};

/// The tool-input hop of [`State`]'s call.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let receipt = st.decoded.take().unwrap_or_default();
    let text = st.text.clone();
    Ok(match hop(run, receipt, &text)? {
        true => Flow::Next,
        false => Flow::Stop,
    })
}

/// The structured-decode hop: serde_json bound the value (`receipt`); the harness's input
/// validation may still reject the text. Returns false when it does (the first divergence).
pub(crate) fn hop(run: &mut Run<'_>, receipt: Value, text: &str) -> Result<bool, CheckError> {
    // Gemini CLI 0.40 on checks the command it is about to run: `execute()` calls
    // `detectCommandSubstitution(stripShellWrapper(command))` (0.61.0 bundle), so a `$(…)` in
    // the single-quoted script of a model-written `bash -c '…'` is refused, and the model's
    // `bash -c "…"` is checked as the script the strip leaves (each generation's own strip,
    // `iec_launches::gemini_strip`), as 0.1.15–0.1.16 do; 0.1.21–0.39 check the model's text
    // before the strip, and 0.1.19–0.1.20 both (the launch's `checked_text`, seen in real runs of 0.1.19, 0.8.2,
    // 0.13.0, 0.40.0 and 0.61.0).
    let stripped = run
        .launch
        .rewrite
        .as_ref()
        .and_then(|r| r.steps.iter().find_map(|s| gemini_strip::generation(s)))
        .and_then(|g| gemini_strip::strip(g, text));
    // The text(s) the rules judge: the launch's `checked_text` where a strip changed the text.
    let (raw, stripped) = match (run.launch.validate.checked_text.as_deref(), stripped) {
        (Some("raw"), Some(_)) => (true, None),
        (Some("both"), Some(s)) => (true, Some(s)),
        (_, Some(s)) => (false, Some(s)),
        (_, None) => (true, None),
    };
    let on_raw = match raw {
        true => render::validate(&run.launch.validate, text),
        false => None,
    };
    // What the reason names: the stripped script when the refusal is on it.
    let stripped = stripped.filter(|_| on_raw.is_none());
    let first = on_raw.or_else(|| render::validate(&run.launch.validate, stripped.as_deref()?));
    let rejection = match first {
        Some(r) => Some(r),
        None => match &run.launch.validate.reject_multiple_statements {
            Some(msg) => second_statement(run, text)?.map(|offset| render::Rejection {
                rule: "multiple-statements",
                message: msg.clone(),
                offset,
            }),
            None => None,
        },
    };
    if let Some(rej) = rejection {
        let mut receipt = receipt;
        receipt["rejected"] = json!(rej.rule);
        receipt["message"] = json!(rej.message);
        run.diverge(
            Hop::ToolInput,
            WitnessKind::Emulated,
            receipt,
            Mechanism::Other,
            false,
            text,
            "",
            format!(
                "the harness rejects the call before any shell runs ({} at byte {}{}): {}",
                rej.rule,
                rej.offset,
                match stripped {
                    Some(_) => " of the script its strip of the model's shell -c leaves",
                    None => "",
                },
                rej.message
            ),
        );
        return Ok(false);
    }
    // Claude Code 2.1.317 and later: its own parser may read the text as an "unparsed line" and
    // refuse it (`iec_launches::unparsed`); where the model cannot tell, the check is `unknown`,
    // never "corresponds". The walk goes on: a later hop's divergence still decides.
    if let Some(maybe) = render::may_refuse(&run.launch.validate, text) {
        let because = match maybe.rule {
            "tree-sitter-timeout-risk" => {
                "the text is long enough that the harness's tree-sitter parse may run past its 1 s \
                 limit, after which it refuses the call"
            }
            "tree-sitter-parts-work" => {
                "the harness gates every part of the text again, and deciding its parts takes \
                 more work than iec spends (the harness's own work grows exponentially with the \
                 nesting)"
            }
            _ => {
                "its own bash parser may read this text as bash and zsh might not, which iec \
                 models only in part"
            }
        };
        let why = format!(
            "the harness may refuse the call before any shell runs ({} at byte {}: {because}): {}",
            maybe.rule, maybe.offset, maybe.message
        );
        let mut receipt = receipt;
        receipt["may_refuse"] = json!(maybe.rule);
        run.push(
            Hop::ToolInput,
            WitnessKind::Emulated,
            None,
            receipt,
            Some(why.clone()),
        );
        run.undecided.get_or_insert((Some(crate::HARNESS_REFUSAL), why));
        return Ok(true);
    }
    run.push(Hop::ToolInput, WitnessKind::Real, Some(true), receipt, None);
    Ok(true)
}

/// The most bytes of line prefixes [`second_statement`] has bash parse for one text (about 2 s
/// of bash on an idle machine; 64 MiB took 10 s on a busy one, near the 15 s bound).
pub const SECOND_STATEMENT_BUDGET: usize = 24 << 20;

/// The byte offset where a second top-level statement starts, if the text has one: a line
/// break after which the text so far is a complete command bash accepts (not one the end of
/// input closes, such as an open here-document) and more than blanks and comments follow.
/// This is how bashlex splits a script into top-level nodes for OpenHands' refusal.
///
/// Each head is asked once and not kept (a text of n lines has n heads: keeping them cost n²
/// bytes); bash reads at most [`SECOND_STATEMENT_BUDGET`] bytes of heads in all, beyond which
/// the check stops with a witness limit (`unknown`): a one-statement text of some ten thousand
/// lines, such as a long here-document.
fn second_statement(run: &Run<'_>, text: &str) -> Result<Option<usize>, CheckError> {
    // Whether each line is blank or a comment, and so whether all lines before or after a line
    // break are: computed once (asking it of every head and rest cost n² — red team round 7: a
    // 1 MiB text of comment lines ran for minutes).
    let blank_line = |l: &str| {
        let l = l.trim_matches([' ', '\t', '\r']);
        l.is_empty() || l.starts_with('#')
    };
    let lines: Vec<bool> = text.split('\n').map(blank_line).collect();
    // all_blank_before[k]: lines 0..k are all blank; all_blank_after[k]: lines k.. are.
    let mut all_blank_before = vec![true; lines.len() + 1];
    for k in 0..lines.len() {
        all_blank_before[k + 1] = all_blank_before[k] && lines[k];
    }
    let mut all_blank_after = vec![true; lines.len() + 1];
    for k in (0..lines.len()).rev() {
        all_blank_after[k] = all_blank_after[k + 1] && lines[k];
    }
    let mut spent = 0usize;
    for (k, (i, _)) in text.match_indices('\n').enumerate() {
        // The break ends line k: the head is lines 0..=k, the rest lines k+1...
        let (head, rest) = (&text[..i], &text[i + 1..]);
        if all_blank_before[k + 1] || all_blank_after[k + 1] {
            continue;
        }
        spent += head.len();
        if spent > SECOND_STATEMENT_BUDGET {
            return Err(WitnessError::Limit(format!(
                "to tell whether the text is one statement (the harness refuses more than one), bash \
                 would parse each of its {} line prefixes, more than {} MiB of text in all",
                text.matches('\n').count(),
                SECOND_STATEMENT_BUDGET >> 20
            ))
            .into());
        }
        let parse = match plain::is_plain(head) && !run.opts.full_witness {
            true => run.validate(head)?,
            false => no_crash(run.pool.validate(head.as_bytes(), wants_extglob(head))?)?,
        };
        if matches!(parse, Parse::Ok { .. }) {
            let start = i + 1 + (rest.len() - rest.trim_start().len());
            return Ok(Some(start));
        }
    }
    Ok(None)
}
