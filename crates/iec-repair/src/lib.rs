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
* `base64-eval`: for Git Bash's process interface (the MSYS2 runtime halves backslash runs in
  quotes, expands globs and braces, removes quotes), `eval "$(base64 -d <<< B64)"`: the runtime
  has nothing to change in `[A-Za-z0-9+/=]`, bash decodes the bytes and `eval` runs them. Not
  used for a text that ends in a line break (`$(…)` drops trailing newlines).
* `ps-stop-parsing`: for PowerShell's native-argument hop (5.1 and 7.x Legacy write a native
  program's command line without escaping embedded quotes and drop empty arguments), each
  changed native call becomes `program --% RAW`, RAW being the arguments quoted for the
  program's own (UCRT) parser. PowerShell passes the text after `--%` as written. The rendering
  is delivered only when the script keeps its structure and every native call's argv, as the
  emulated PowerShell builds it, is the argv the original call meant.

Renderings are written in the language of the launch's shell: none is delivered to cmd.exe
(every cmd hop that changes a call is refused), and PowerShell launches get only
`ps-stop-parsing`.
*/
#![deny(missing_docs)]

use iec_check::{check, CheckError, Options};
use iec_core::{Call, CheckReport, Hop, Verdict};
use iec_launches::{InputShape, Launch, ShellId};
use iec_windows::powershell::grammar as ps;
use iec_windows::powershell::{intended_native_argv, PassingMode};
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

/// The hop an `unknown` report stopped at, as a divergence there (for renderings that avoid
/// the question the hop could not answer).
fn undecided_at(report: &iec_core::CheckReport) -> iec_core::FirstDivergence {
    let (i, hop) = report
        .hops
        .iter()
        .enumerate()
        .rev()
        .find(|(_, h)| h.corresponds.is_none())
        .expect("an undecided report names its hop");
    iec_core::FirstDivergence {
        hop: i,
        hop_name: hop.name.clone(),
        kind: hop.kind,
        mechanism: iec_core::Mechanism::Other,
        silent: true,
        intended: String::new(),
        received: String::new(),
        diff: String::new(),
        detail: report.reason.clone().unwrap_or_default(),
        action: None,
    }
}

/// Errors of the repair machinery (not refusals).
pub type Error = CheckError;

/// Checks `call` on `launch` and delivers it unchanged, delivers a verified rendering, or refuses.
/// A text longer than [`iec_core::MAX_TEXT`] is an error ([`CheckError::TooLong`]), not a
/// refusal: iec has not judged it (the hook then leaves the call to the user's settings).
pub fn repair(launch: &Launch, call: &Call, pool: &BashPool) -> Result<Outcome, Error> {
    repair_traced(launch, call, pool, None).map(|(o, _)| o)
}

/// A rendering [`repair`] built and checked again: which one, the verdict of its check and the
/// hop (index in the launch) where that check diverged or stopped undecided. A rendering whose
/// check fails at another hop than the original call's first divergence shows a failure only
/// once the first is repaired (IEC-Bench's hop hiding).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Rendered {
    /// `ansi-c-eval`, `bash-c`, `base64-eval` or `ps-stop-parsing`.
    pub rendering: String,
    /// The check of the rendering.
    pub verdict: Verdict,
    /// Where the rendering's check diverged (its first divergence) or stopped undecided;
    /// `None` when it corresponds.
    pub hop: Option<usize>,
}

/// [`repair`], and the rendering it checked again, if it got that far (`None` when the call
/// was delivered unchanged or refused before any rendering was built). `checked` is the
/// call's own check on this launch (`iec_check::check` with default options) when the caller
/// has it already, so that it is not made twice.
pub fn repair_traced(
    launch: &Launch,
    call: &Call,
    pool: &BashPool,
    checked: Option<CheckReport>,
) -> Result<(Outcome, Option<Rendered>), Error> {
    let mut rendered = None;
    let out = repair_inner(launch, call, pool, checked, &mut rendered)?;
    Ok((out, rendered))
}

fn repair_inner(
    launch: &Launch,
    call: &Call,
    pool: &BashPool,
    checked: Option<CheckReport>,
    rendered: &mut Option<Rendered>,
) -> Result<Outcome, Error> {
    if let Some(command) = launch.command_of(&call.input) {
        iec_core::limits::check_command(command)?;
    }
    let report = match checked {
        Some(r) => r,
        None => check(launch, call, pool, Options::default())?,
    };
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
        Verdict::Unknown if report.attribution.as_deref() == Some(iec_check::WITNESS_LIMIT) => {
            return Ok(refuse(
                Hop::ToolInput.name(),
                format!(
                    "{}. iec delivers only what it has verified. Make the command smaller or simpler (a \
                     brace range or glob of millions of words, thousands of nested `$(`), or write the command to a \
                     file and run the file.",
                    report.reason.clone().unwrap_or_default()
                ),
            ));
        }
        Verdict::Unknown if report.attribution.as_deref() == Some("generation") => {
            let reason = report.reason.clone().unwrap_or_default();
            return Ok(refuse(
                Hop::ToolInput.name(),
                format!(
                    "{reason}. Fix the command itself; no rendering can deliver a text that does not parse."
                ),
            ));
        }
        // A command typed before the last line may read the terminal: delivered as one typed
        // line, the question does not arise (verified below like any rendering).
        Verdict::Unknown if report.attribution.as_deref() == Some(iec_check::TERMINAL_INPUT) => {}
        Verdict::Unknown => {
            // A hop the check cannot judge (a PowerShell variable's value, `--%` with `%NAME%`):
            // refused by the hop that could not be judged, not blamed on the text.
            let reason = report.reason.clone().unwrap_or_default();
            // The check stops at the hop it cannot judge: the last one it reports.
            let hop = report
                .hops
                .iter()
                .rev()
                .find(|h| h.corresponds.is_none())
                .map_or(Hop::ToolInput.name().to_string(), |h| h.name.clone());
            return Ok(refuse(
                &hop,
                format!(
                    "{reason}. iec delivers only what it can verify; write literal values, or put the \
                     command into a script file and run the file."
                ),
            ));
        }
        Verdict::Diverges => {}
    }
    let undecided = report.first_divergence.is_none().then(|| undecided_at(&report));
    let fd = report
        .first_divergence
        .as_ref()
        .or(undecided.as_ref())
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
    let (rendering, candidate) = match (Hop::from_name(&hop), fd.kind, launch.spawn.shell) {
        (Some(Hop::ToolInput), _, _) if fd.detail.contains("command-substitution") => {
            return Ok(refuse(&hop, format!(
                "{} refuses command substitution by policy ({}); iec does not work around a harness's security rule. \
                 Run the inner command first and pass its output, or write a script file and run it.",
                launch.harness, fd.detail
            )))
        }
        // Git Bash: the MSYS2 runtime re-parses the command line (backslash halving, globify,
        // quote removal) but leaves base64 text alone; `$(…)` drops trailing newlines, so a text
        // ending in one is not rendered this way.
        (Some(Hop::Spawn), _, _) if is_msys2(launch) && !text.is_empty() && !text.ends_with('\n') => {
            ("base64-eval", format!("eval \"$(base64 -d <<< {})\"", base64_text(&text)))
        }
        (Some(Hop::Spawn), _, _) => {
            return Ok(refuse(&hop, format!(
                "{}. Write the script to a file (with the file tool) and run the file.",
                fd.detail
            )))
        }
        (Some(Hop::Program), _, _) => {
            return Ok(refuse(&hop, format!(
                "{} Write `command {}` to run the real program instead of the snapshot's function.",
                fd.detail, fd.intended
            )))
        }
        _ if shell_language(launch) == Language::Cmd => {
            return Ok(refuse(&hop, format!(
                "{} changes this call at hop {hop} ({}: {}); no rendering is delivered to cmd.exe, \
                 whose parse has no quoting that survives every hop. Write the commands into a .cmd \
                 file (with the file tool), one per line, and run the file.",
                launch.id, fd.mechanism.as_str(), fd.detail
            )))
        }
        (Some(Hop::Native), _, _) if shell_language(launch) == Language::PowerShell => {
            return match ps_stop_parsing(launch, &text) {
                Ok(candidate) => deliver_checked(launch, call, pool, &hop, fd.mechanism.as_str(), "ps-stop-parsing", candidate, rendered),
                Err(why) => Ok(refuse(&hop, format!(
                    "{} changes this call at hop {hop} ({}: {}), and {why}. Write the script into a \
                     .ps1 file (with the file tool) and run it, or pass such arguments through a file.",
                    launch.id, fd.mechanism.as_str(), fd.detail
                ))),
            };
        }
        _ if shell_language(launch) == Language::PowerShell => {
            return Ok(refuse(&hop, format!(
                "{} changes this call at hop {hop} ({}: {}); iec has no PowerShell rendering for this hop. \
                 Write the script into a .ps1 file (with the file tool) and run it.",
                launch.id, fd.mechanism.as_str(), fd.detail
            )))
        }
        (_, _, ShellId::Dash) => ("bash-c", format!("bash -c {}", single_quoted(&text))),
        _ => ("ansi-c-eval", format!("eval {}", ansi_c_word(&text))),
    };
    if rendering == "base64-eval" {
        // The payload is [A-Za-z0-9+/=] only and decodes to the text (GNU base64 ignores the
        // here-string's newline); nothing for bash to expand. Proven here, not run.
        use base64::Engine as _;
        let b64 = &candidate["eval \"$(base64 -d <<< ".len()..candidate.len() - ")\"".len()];
        let ok = b64
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"+/=".contains(&b))
            && base64::engine::general_purpose::STANDARD
                .decode(b64)
                .ok()
                .as_deref()
                == Some(text.as_bytes());
        if !ok {
            return Ok(refuse(&hop, format!("the base64-eval rendering did not decode to the same bytes on {}; write the command to a file and run the file", launch.id)));
        }
    } else {
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
    }
    deliver_checked(
        launch,
        call,
        pool,
        &hop,
        fd.mechanism.as_str(),
        rendering,
        candidate,
        rendered,
    )
}

/// The language the launch's shell parses the command text in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Language {
    /// bash, dash, Git Bash: the POSIX renderings apply.
    Posix,
    /// cmd.exe.
    Cmd,
    /// Windows PowerShell 5.1 or PowerShell 7.
    PowerShell,
}

fn is_msys2(launch: &Launch) -> bool {
    launch.windows.as_ref().is_some_and(|w| w.receiver == "msys2")
}

/// Standard base64 (with padding) of the text's bytes.
fn base64_text(text: &str) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(text.as_bytes())
}

fn shell_language(launch: &Launch) -> Language {
    match launch.windows.as_ref().map(|w| w.receiver.as_str()) {
        Some("cmd") => Language::Cmd,
        Some("powershell") => Language::PowerShell,
        _ => Language::Posix,
    }
}

/// Re-checks `candidate` on the launch and delivers it only if it corresponds; the check is
/// kept in `rendered`.
#[allow(clippy::too_many_arguments)]
fn deliver_checked(
    launch: &Launch,
    call: &Call,
    pool: &BashPool,
    hop: &str,
    mechanism: &str,
    rendering: &str,
    candidate: String,
    rendered: &mut Option<Rendered>,
) -> Result<Outcome, Error> {
    let hop = hop.to_string();
    let repaired = with_command(launch, call, candidate);
    let recheck: CheckReport = check(launch, &repaired, pool, Options::default())?;
    *rendered = Some(Rendered {
        rendering: rendering.into(),
        verdict: recheck.verdict,
        hop: match recheck.verdict {
            Verdict::Corresponds => None,
            Verdict::Diverges => recheck.first_divergence.as_ref().map(|f| f.hop),
            Verdict::Unknown => recheck.hops.iter().rposition(|h| h.corresponds.is_none()),
        },
    });
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
            launch.id, mechanism
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

/// The `ps-stop-parsing` rendering of `text` (see the crate documentation), or why there is none.
fn ps_stop_parsing(launch: &Launch, text: &str) -> Result<String, String> {
    let w = launch.windows.as_ref().ok_or("the launch has no PowerShell")?;
    let mode = PassingMode::of_launch(w.powershell.as_deref(), w.native_passing.as_deref());
    let calls = ps::native_calls(text);
    let mut meant: Vec<(String, Vec<String>)> = Vec::new();
    let mut edits: Vec<(std::ops::Range<usize>, String)> = Vec::new();
    for c in &calls {
        if let Some(why) = &c.unjudgeable {
            return Err(format!(
                "the arguments of `{}` cannot be judged ({why})",
                c.program
            ));
        }
        let intended = intended_native_argv(&c.program, &c.args_text)
            .ok_or_else(|| format!("`{}` gets an array literal, whose argv is not defined", c.program))?;
        meant.push((c.program.clone(), intended.clone()));
        let (_, got) = iec_windows::powershell::native(&c.args_text, mode, &c.program, &[], &[]);
        if got == intended {
            continue;
        }
        let lower = c.program.to_ascii_lowercase();
        if lower.ends_with(".bat") || lower.ends_with(".cmd") {
            return Err(format!(
                "`{}` is a batch file, whose arguments cmd.exe parses again",
                c.program
            ));
        }
        if c.redirected {
            return Err(format!(
                "`{}` has a redirection, which the raw text after --% would swallow",
                c.program
            ));
        }
        if let Some(v) = intended.iter().find(|v| v.contains(['\r', '\n', '|', '\0'])) {
            return Err(format!(
                "an argument of `{}` holds a line break or `|`, which ends the raw text after --% ({v:?})",
                c.program
            ));
        }
        let raw = intended
            .iter()
            // Quoted whenever it holds any white space, Unicode too: PowerShell and the
            // program then agree on where the raw text's arguments start.
            .map(|v| iec_windows::render::argv_quote(v, v.chars().any(char::is_whitespace)))
            .collect::<Vec<_>>()
            .join(" ");
        if let Some(why) = ps::stop_parsing_unjudgeable(&raw) {
            return Err(format!(
                "the raw text for `{}` cannot be verified: {why}",
                c.program
            ));
        }
        let Some(elements) = c.elements.clone() else {
            continue;
        };
        // Keep the white space between the program name and its arguments.
        let lead = text[elements.clone()].len() - text[elements.clone()].trim_start().len();
        let elements = elements.start + lead..elements.end;
        let mut rendered = format!("--% {raw}");
        // The raw text runs to the end of the line: end the line after it.
        let after = &text[elements.end..];
        if !(after.is_empty() || after.starts_with('\n') || after.starts_with("\r\n")) {
            rendered.push('\n');
        }
        edits.push((elements, rendered));
    }
    if edits.is_empty() {
        return Err("no native call's argument list can be rewritten".into());
    }
    let mut out = text.to_string();
    for (range, rendered) in edits.into_iter().rev() {
        out.replace_range(range, &rendered);
    }
    // Verify: the same statements around the native calls, and each call's argv as PowerShell
    // builds it from the rendering is the argv the original meant.
    let (Some(a), Some(b)) = (ps::shape(text), ps::shape(&out)) else {
        return Err("the rendering does not parse as PowerShell".into());
    };
    if a != b {
        return Err("the rendering changes the script's structure around the native calls".into());
    }
    let after = ps::native_calls(&out);
    if after.len() != meant.len() {
        return Err("the rendering changes the number of native calls".into());
    }
    for (c, (program, intended)) in after.iter().zip(&meant) {
        let (_, got) = iec_windows::powershell::native(&c.args_text, mode, &c.program, &[], &[]);
        if &c.program != program || &got != intended || c.unjudgeable.is_some() {
            return Err(format!(
                "`{program}` would still not receive the argv the call meant (got {got:?})"
            ));
        }
    }
    Ok(out)
}
