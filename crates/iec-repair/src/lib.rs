/*!
IntAct: repair at the named hop, or refuse. [`repair`] checks a call; when a hop changes it, it
renders the call through a channel that hop does not parse, checks the rendering again with the
IEC protocol, and proves with real bash that the rendering still runs exactly the emitted text.
Only then is it delivered. A call that cannot be rendered safely is refused with a reason an
agent can act on. A changed call is never delivered.

Renderings:
* `ansi-c-eval`: `eval $'…'`, every byte outside a small safe set written as `\xHH`. No `!`, `$`,
  quote, backslash or control character is left for a wrapper, shell-quote or a CR check to
  touch; bash decodes the word to the original bytes and `eval` runs them.
* `bash-c`: for `sh` (dash) launches, `bash -c '…'` with the text single-quoted, so dash only
  passes the bytes on and bash parses them.
*/
#![deny(missing_docs)]

use iec_core::{Call, CheckReport, Verdict};
use iec_launches::{InputShape, Launch, ShellId};
use iec_protocol::{check, CheckError, Options};
use iec_witness::BashPool;
use serde::Serialize;
use serde_json::Value;

/// What to do with a call.
#[derive(Debug, Clone, Serialize)]
#[serde(tag = "action", rename_all = "kebab-case")]
pub enum Outcome {
    /// Deliver `call` (the tool input, other fields kept).
    Deliver {
        /// True when the call was re-rendered.
        repaired: bool,
        /// The hop that changed the original call.
        #[serde(skip_serializing_if = "Option::is_none")]
        hop: Option<String>,
        /// The rendering used.
        #[serde(skip_serializing_if = "Option::is_none")]
        rendering: Option<String>,
        /// The tool input to deliver.
        call: Value,
        /// The check of the delivered call (always `corresponds` when repaired).
        #[serde(skip_serializing_if = "Option::is_none")]
        check: Option<CheckSummary>,
    },
    /// Do not run the call.
    Refuse {
        /// The hop that would change it.
        hop: String,
        /// Why, and what the agent can do instead.
        reason: String,
    },
}

/// The part of a check report a repair result carries.
#[derive(Debug, Clone, Serialize)]
pub struct CheckSummary {
    /// Verdict of the delivered call.
    pub verdict: Verdict,
}

/// Bytes kept as they are inside `$'…'`: letters, digits and punctuation no receiver on any
/// launch treats specially. Everything else is `\xHH`.
fn keep(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b" _./,:=+@-".contains(&b)
}

/// `$'…'` for `text`, with every byte outside [`keep`] as `\xHH` (multi-byte characters too:
/// bash reassembles the bytes).
pub fn ansi_c_word(text: &str) -> String {
    let mut s = String::with_capacity(text.len() * 2 + 3);
    s.push_str("$'");
    for &b in text.as_bytes() {
        if keep(b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("\\x{b:02x}"));
        }
    }
    s.push('\'');
    s
}

/// `'…'` with `'\''` for each quote (POSIX: dash and bash agree).
pub fn single_quoted(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

fn with_command(launch: &Launch, call: &Call, text: String) -> Call {
    let mut input = call.input.clone();
    if let Some(o) = input.as_object_mut() {
        // The field the call used (a bare `command` is accepted on every launch).
        let field = if o.contains_key(launch.command_field()) {
            launch.command_field()
        } else {
            "command"
        };
        o.insert(field.into(), Value::String(text));
    }
    Call {
        tool: call.tool.clone(),
        input,
    }
}

fn refuse(hop: &str, reason: impl Into<String>) -> Outcome {
    Outcome::Refuse {
        hop: hop.into(),
        reason: reason.into(),
    }
}

/// Errors of the repair machinery (not refusals).
pub type Error = CheckError;

/// Checks `call` on `launch` and delivers it unchanged, delivers a verified rendering, or refuses.
pub fn repair(launch: &Launch, call: &Call, pool: &BashPool) -> Result<Outcome, Error> {
    let report = check(launch, call, pool, Options::default())?;
    match report.verdict {
        Verdict::Corresponds => {
            return Ok(Outcome::Deliver {
                repaired: false,
                hop: None,
                rendering: None,
                call: call.input.clone(),
                check: None,
            })
        }
        Verdict::Unknown if report.attribution.as_deref() == Some(iec_protocol::WITNESS_LIMIT) => {
            return Ok(refuse(
                "tool-input",
                format!(
                    "{}. iec delivers only what it has verified. Make the expansion smaller (a brace \
                     range or glob of millions of words), or write the command to a file and run the file.",
                    report.reason.clone().unwrap_or_default()
                ),
            ));
        }
        Verdict::Unknown => {
            let reason = report.reason.clone().unwrap_or_default();
            return Ok(refuse(
                "tool-input",
                format!(
                    "{reason}. Fix the command itself; no rendering can deliver a text that does not parse."
                ),
            ));
        }
        Verdict::Diverges => {}
    }
    let fd = report
        .first_divergence
        .as_ref()
        .expect("diverges has a first divergence");
    let hop = fd.hop_name.clone();
    if launch.input == InputShape::Argv {
        return Ok(refuse(&hop, format!(
            "{}: this server joins the argv with spaces and /bin/sh parses the result again ({}); \
             an argv call cannot be rendered so that the program still gets these exact elements. \
             Avoid spaces, quotes, `$`, globs and operators in elements, or use a tool that runs argv directly.",
            launch.id, fd.detail
        )));
    }
    let text = launch
        .command_of(&call.input)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string();
    let (rendering, candidate) = match (hop.as_str(), fd.kind, launch.spawn.shell) {
        ("tool-input", _, _) if fd.detail.contains("command-substitution") => {
            return Ok(refuse(&hop, format!(
                "{} refuses command substitution by policy ({}); iec does not work around a harness's security rule. \
                 Run the inner command first and pass its output, or write a script file and run it.",
                launch.harness, fd.detail
            )))
        }
        ("spawn", _, _) => {
            return Ok(refuse(&hop, format!(
                "{}. Write the script to a file (with the file tool) and run the file.",
                fd.detail
            )))
        }
        ("program", _, _) => {
            return Ok(refuse(&hop, format!(
                "{} Write `command {}` to run the real program instead of the snapshot's function.",
                fd.detail, fd.intended
            )))
        }
        (_, _, ShellId::Dash) => ("bash-c", format!("bash -c {}", single_quoted(&text))),
        _ => ("ansi-c-eval", format!("eval {}", ansi_c_word(&text))),
    };
    // Prove the rendering runs exactly the emitted text: real bash expands its word.
    let word = match rendering {
        "bash-c" => &candidate["bash -c ".len()..],
        _ => &candidate["eval ".len()..],
    };
    let e = match pool.expand_words(word.as_bytes()) {
        Err(iec_witness::WitnessError::Limit(why)) => {
            return Ok(refuse(
                &hop,
                format!("the {rendering} rendering could not be verified: {why}; write the command to a file and run the file"),
            ))
        }
        e => e?,
    };
    if e.broke_out || e.status != 0 || e.args != [text.clone()] {
        return Ok(refuse(
            &hop,
            format!(
                "no rendering of this text survives {} (the {} rendering did not decode to the same bytes); \
             write the command to a file and run the file",
                launch.id, rendering
            ),
        ));
    }
    let repaired = with_command(launch, call, candidate);
    let recheck: CheckReport = check(launch, &repaired, pool, Options::default())?;
    if recheck.verdict != Verdict::Corresponds {
        let why = recheck
            .first_divergence
            .map(|f| format!("{} at hop {} ({})", f.mechanism.as_str(), f.hop_name, f.detail))
            .or(recheck.reason)
            .unwrap_or_default();
        return Ok(refuse(
            &hop,
            format!(
            "{} changes this call at hop {hop} ({}), and the {rendering} rendering is changed too: {why}. \
             Write the command to a file and run the file.",
            launch.id, fd.mechanism.as_str()
        ),
        ));
    }
    Ok(Outcome::Deliver {
        repaired: true,
        hop: Some(hop),
        rendering: Some(rendering.into()),
        call: repaired.input,
        check: Some(CheckSummary {
            verdict: recheck.verdict,
        }),
    })
}
