/*!
The IEC protocol driver. [`check`] delivers a call along a launch hop by hop, without executing
it: each hop's sender renders the payload (ported harness code), the receiver's witness records
what it got (real bash and dash where they are the receiver), and the receipt is compared with
the intended action by that receiver's own parser. The first hop whose receipt no longer denotes
the intended action is named, with its mechanism and whether the change will be silent.
*/
#![deny(missing_docs)]

pub mod classify;
mod dialect;
mod errexit;
mod hops;
pub mod plain;
pub use hops::tool_input::SECOND_STATEMENT_BUDGET;
pub mod action;
mod run;
pub mod substitution;
pub mod typeahead;
mod windows;
pub mod wrapping;

use hops::{Flow, Intended, State};
use iec_core::{exposure, Call, CheckReport, Verdict};
use iec_launches::{InputShape, Launch};
use iec_witness::{BashPool, Parse, WitnessError};
use run::Run;
use serde_json::{json, Value};

/// Linux `MAX_ARG_STRLEN`: the size of the longest single execve argument *with* its NUL, so
/// an argument of this many bytes or more fails with E2BIG (measured: 131,071 bytes run,
/// 131,072 do not).
pub const MAX_ARG_STRLEN: usize = 131_072;

/// How receipts are observed.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Also start the real `bash` with a `BASH_ENV` witness to observe the process-interface
    /// hop (one process per check; by default execve is taken as the identity it is).
    pub spawn_witness: bool,
    /// Ask the witnesses even for plain texts. Off by default: a plain text (see [`plain`]) is
    /// judged without starting bash, which `tests/plain.rs` proves gives the same report.
    pub full_witness: bool,
}

/// Errors that stop a check (not verdicts).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// A witness failed.
    #[error(transparent)]
    Witness(#[from] WitnessError),
    /// The text is longer than [`iec_core::MAX_TEXT`] (a repair does not judge it; a check
    /// reports it as `unknown` with [`TEXT_LIMIT`]).
    #[error(transparent)]
    TooLong(#[from] iec_core::limits::TooLong),
}

/// How a hop decides whether its receiver got the intended action. No hop compares the bytes
/// of two texts: where two texts reach a parser, they correspond when it would perform the same
/// action (see [`action`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    /// The value serde_json decodes from the tool's arguments (the harness's own decoder), and
    /// the harness's validation of it.
    DecodedValue,
    /// The action bash's own parse of both texts denotes (`declare -f` forms read as
    /// [`action::action`]), with the harness's stdin contract (`< /dev/null`) neutral.
    Action,
    /// The argv the receiver gets (execve's, observed by a witness; a Windows program's
    /// command-line parser's), element by element: there is no parser between them.
    Argv,
    /// What the substitute program does for the call's options and operands, by the rows of the
    /// launch's substitution table (each shown with the real programs).
    Behaviour,
    /// The bytes of the texts. No hop uses it.
    Bytes,
}

/// The comparison `hop` uses (see the hop files in `src/hops/`).
pub const fn comparison(hop: iec_core::Hop) -> Comparison {
    use iec_core::Hop;
    match hop {
        Hop::ToolInput => Comparison::DecodedValue,
        Hop::HarnessRewrite | Hop::Wrapper | Hop::Shell | Hop::Eval | Hop::InnerShell | Hop::Terminal => {
            Comparison::Action
        }
        Hop::Spawn | Hop::Native => Comparison::Argv,
        Hop::Program => Comparison::Behaviour,
    }
}

/// Builds the call an agent on this launch would emit for a command text. For argv tools, a
/// text of plain words (no operators, expansions, globs or comments) becomes those words, as a
/// model would write it; any other text becomes the usual `["bash", "-lc", TEXT]`.
pub fn call_for_text(launch: &Launch, text: &str) -> Call {
    match launch.input {
        InputShape::String => Call {
            tool: launch.tool.clone(),
            input: json!({ launch.command_field(): text }),
        },
        InputShape::Argv => {
            let argv = plain_words(text).unwrap_or_else(|| vec!["bash".into(), "-lc".into(), text.into()]);
            Call {
                tool: launch.tool.clone(),
                input: json!({ "command": argv }),
            }
        }
    }
}

fn plain_words(text: &str) -> Option<Vec<String>> {
    if text.contains(['$', '`', '\n', '\r']) {
        return None;
    }
    // shell-quote splits an open quote or a trailing backslash leniently (`rm -rf '/tmp/x` into
    // three words); bash reads no command there, and neither does a model's argv.
    action::action(text)?;
    let tokens = iec_shellquote::parse_no_env(text).ok()?;
    let words: Option<Vec<String>> = tokens
        .into_iter()
        .map(|t| match t {
            iec_shellquote::Token::Str(s) => Some(s),
            _ => None,
        })
        .collect();
    words.filter(|w| !w.is_empty())
}

/// Checks one call on one launch.
pub fn check(
    launch: &Launch,
    call: &Call,
    pool: &BashPool,
    opts: Options,
) -> Result<CheckReport, CheckError> {
    if let Some(Err(e)) = launch
        .command_of(&call.input)
        .map(iec_core::limits::check_command)
    {
        return Ok(too_long_report(launch, &e));
    }
    match check_within_limits(launch, call, pool, opts) {
        Err(CheckError::Witness(WitnessError::Limit(why))) => Ok(CheckReport {
            reason: Some(format!("a witness could not answer: {why}")),
            attribution: Some(WITNESS_LIMIT.into()),
            ..unknown_report(launch, call)
        }),
        // A witness that answered what it never writes (a terminal witness whose channel a text
        // wrote to): the check cannot tell, and a repair refuses.
        Err(CheckError::Witness(WitnessError::Protocol(why))) => Ok(CheckReport {
            reason: Some(format!("a witness gave an answer it cannot have given: {why}")),
            attribution: Some(WITNESS_PROTOCOL.into()),
            ..unknown_report(launch, call)
        }),
        Err(CheckError::Witness(WitnessError::Refused(why))) => Ok(CheckReport {
            reason: Some(why),
            attribution: Some(WITNESS_REFUSED.into()),
            ..unknown_report(launch, call)
        }),
        r => r,
    }
}

/// The `attribution` of an `unknown` report whose witness refused to start (see
/// [`WitnessError::Refused`]): nothing ran, the check cannot tell.
pub const WITNESS_REFUSED: &str = "witness-refused";

/// The `attribution` of an `unknown` report whose witness broke its protocol (see
/// [`WitnessError::Protocol`]): nothing is judged, and a repair refuses.
pub const WITNESS_PROTOCOL: &str = "witness-protocol";

/// The `attribution` of an `unknown` report whose witness hit a limit (see
/// [`WitnessError::Limit`]): the text may be fine, the check cannot tell.
pub const WITNESS_LIMIT: &str = "witness-limit";

/// The `attribution` of an `unknown` report on a terminal launch where a command run before the
/// last typed line may read the terminal, taking the later lines as its input (see
/// [`typeahead`]). A repair delivers the text as one typed line.
pub const TERMINAL_INPUT: &str = "terminal-input";

/// The `attribution` of an `unknown` report where the harness runs another program in place of
/// the one named and the call's options or operands are in no row of its behaviour table (see
/// [`substitution`]).
pub const PROGRAM_SUBSTITUTION: &str = "program-substitution";

/// The `attribution` of an `unknown` report where the harness may refuse the call by a rule of
/// its own that iec models only in part (Claude Code's "unparsed line",
/// `iec_launches::unparsed`).
pub const HARNESS_REFUSAL: &str = "harness-refusal";

/// The `attribution` of an `unknown` report whose text is longer than
/// [`iec_core::MAX_TEXT`]: iec does not judge it.
pub const TEXT_LIMIT: &str = "text-limit";

/// The `unknown` report of a text over [`iec_core::MAX_TEXT`] on `launch` (attribution
/// [`TEXT_LIMIT`], the reason names the limit and the size). The text is not judged, nor even
/// classified: only measured.
pub fn too_long_report(launch: &Launch, e: &iec_core::limits::TooLong) -> CheckReport {
    CheckReport {
        exposed: true,
        exposure: vec![iec_core::Exposure::LongText],
        reason: Some(e.to_string()),
        attribution: Some(TEXT_LIMIT.into()),
        ..empty_report(launch)
    }
}

/// An `unknown` report of nothing yet.
fn empty_report(launch: &Launch) -> CheckReport {
    CheckReport {
        launch: launch.id.clone(),
        verdict: Verdict::Unknown,
        exposed: false,
        exposure: vec![],
        first_divergence: None,
        hops: vec![],
        reason: None,
        attribution: None,
        shortcut: None,
        substitutions: vec![],
    }
}

/// An `unknown` report of `call` on `launch` with its exposure and nothing else yet.
fn unknown_report(launch: &Launch, call: &Call) -> CheckReport {
    // The command as one text: an argv is shown joined with spaces.
    let shown = match launch.command_of(&call.input) {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(a)) => a
            .iter()
            .map(|v| v.as_str().unwrap_or(""))
            .collect::<Vec<_>>()
            .join(" "),
        _ => String::new(),
    };
    let ex = exposure(&shown);
    CheckReport {
        exposed: !ex.is_empty(),
        exposure: ex,
        ..empty_report(launch)
    }
}

fn check_within_limits(
    launch: &Launch,
    call: &Call,
    pool: &BashPool,
    opts: Options,
) -> Result<CheckReport, CheckError> {
    // One pin of this thread for all the questions of a POSIX check (see iec-witness's pool).
    let _cpu = if launch.windows.is_none() {
        pool.hold_cpu()
    } else {
        None
    };
    let mut run = Run {
        launch,
        pool,
        opts,
        hops: Vec::new(),
        fd: None,
        parsed: Default::default(),
        shortcut: Default::default(),
        undecided: None,
        substitutions: Vec::new(),
    };
    let mut report = unknown_report(launch, call);
    let state = match windows::receiver(launch) {
        Some((_, receiver)) => windows::state(&run, receiver, call, &mut report)?,
        None => state(&run, call, &mut report)?,
    };
    let Some(mut state) = state else {
        return Ok(report);
    };

    // The hops of the launch's plan, in order, until one diverges.
    for hop in launch.plan() {
        if hops::observe(hop, &mut run, &mut state)? == Flow::Stop {
            break;
        }
    }
    Ok(finish(run, report))
}

/// The state a POSIX or terminal launch's plan starts from, or `None` when the call is refused
/// before the first hop (`report` then says why).
fn state(run: &Run<'_>, call: &Call, report: &mut CheckReport) -> Result<Option<State>, CheckError> {
    let launch = run.launch;
    // Hop: structured decode. The JSON is already decoded (serde_json is the real receiver);
    // the receipt is the bound value of the tool's `command` argument.
    let intended = match (launch.input, launch.command_of(&call.input)) {
        (InputShape::String, Some(Value::String(s))) => Intended::Text(s.clone()),
        (InputShape::Argv, Some(Value::Array(a))) if a.iter().all(Value::is_string) && !a.is_empty() => {
            Intended::Argv(a.iter().map(|v| v.as_str().unwrap().to_string()).collect())
        }
        (shape, v) => {
            report.reason = Some(format!(
                "the call's input has no {} `command` (got {}); the tool would reject it",
                if shape == InputShape::Argv {
                    "argv array"
                } else {
                    "string"
                },
                v.map(|v| v.to_string()).unwrap_or_else(|| "nothing".into())
            ));
            return Ok(None);
        }
    };
    let decode_receipt = json!({ "command": launch.command_of(&call.input) });

    // Generation check: the emitted text must parse under the contract (bash).
    let script: Option<String> = match &intended {
        Intended::Text(t) => Some(t.clone()),
        Intended::Argv(a) => hops::shell::shell_script_of_argv(a).map(|(_, s)| s.to_string()),
    };
    if let Some(s) = &script {
        if let Some(i) = s.bytes().position(|b| b == 0) {
            report.reason = Some(format!(
                "the text holds a NUL byte at offset {i}; no shell can receive it"
            ));
            report.attribution = Some("generation".into());
            return Ok(None);
        }
        if !parses_as_bash(run, s, report)? {
            return Ok(None);
        }
    }
    Ok(Some(State::new(intended, decode_receipt)))
}

/// The generation check of a text a bash receives: whether it parses; when it does not,
/// `report` says so (attribution `generation`).
pub(crate) fn parses_as_bash(
    run: &Run<'_>,
    text: &str,
    report: &mut CheckReport,
) -> Result<bool, CheckError> {
    // The hops after this one ask most texts for bash's printing of them (the canonical form);
    // asked for it here, a text the scan's batch could not hold (a here-document) costs one
    // question instead of two. The verdict is the same (bash's `P` and `V` answers differ only
    // in the printing). Long texts are only validated: their printing is as long as they are.
    let parse = if text.len() <= 16 * 1024 {
        run.parse(text)?
    } else {
        run.validate(text)?
    };
    if let Parse::Error { message } = parse {
        report.reason = Some(format!(
            "generation: the emitted text does not parse as bash: {message}"
        ));
        report.attribution = Some("generation".into());
        return Ok(false);
    }
    Ok(true)
}

fn finish(run: Run<'_>, mut report: CheckReport) -> CheckReport {
    report.verdict = if run.fd.is_some() {
        Verdict::Diverges
    } else if let Some((attribution, reason)) = &run.undecided {
        report.attribution = attribution.map(Into::into);
        report.reason = Some(reason.clone());
        Verdict::Unknown
    } else {
        Verdict::Corresponds
    };
    report.substitutions = run.substitutions;
    report.first_divergence = run.fd;
    report.hops = run.hops;
    if run.shortcut.get() {
        report.shortcut = Some(
            "plain text: bash's parse and expansion of literal words were computed without starting bash \
             (the same report as the real witnesses, see tests/plain.rs; --full-witness asks bash)"
                .into(),
        );
    }
    report
}
