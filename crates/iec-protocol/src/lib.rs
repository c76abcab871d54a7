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
pub mod gen;
pub mod plain;
mod tmux;
mod windows;
mod words;

/// The PowerShell parsing the repair layer renders native calls with (tree-sitter-powershell
/// and the `iec-windows` argument parser, as the check uses them).
pub mod powershell {
    pub use crate::windows::ps::{native_calls, shape, stop_parsing_unjudgeable, NativeCall};
    pub use crate::windows::{intended_native_argv, passing_mode};
}

use iec_core::{
    byte_diff, exposure, Call, CheckReport, FirstDivergence, Hop, HopReport, Mechanism, Verdict,
    WitnessKind,
};
use iec_launches::{render, InputShape, Launch, ShellId};
use iec_witness::{spawn, BashPool, Parse, WitnessError};
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

/// What the call means under its tool contract.
enum Intended {
    Text(String),
    Argv(Vec<String>),
}

struct Run<'a> {
    launch: &'a Launch,
    pool: &'a BashPool,
    opts: Options,
    hops: Vec<HopReport>,
    fd: Option<FirstDivergence>,
    /// Parses already asked for in this check (a text is often parsed at several hops).
    parsed: std::cell::RefCell<Vec<(String, Parse)>>,
    /// Set when a plain-text shortcut stood in for a witness.
    shortcut: std::cell::Cell<bool>,
}

impl Run<'_> {
    fn push(&mut self, hop: Hop, witness: WitnessKind, ok: Option<bool>, receipt: Value, note: Option<String>) {
        self.hops.push(HopReport {
            name: hop.name().into(),
            kind: hop.kind(),
            witness,
            corresponds: ok,
            receipt,
            note,
        });
    }

    #[allow(clippy::too_many_arguments)]
    fn diverge(
        &mut self,
        hop: Hop,
        witness: WitnessKind,
        receipt: Value,
        mechanism: Mechanism,
        silent: bool,
        intended: &str,
        received: &str,
        detail: String,
    ) {
        let index = self.hops.len();
        self.push(hop, witness, Some(false), receipt, Some(detail.clone()));
        if self.fd.is_none() {
            self.fd = Some(FirstDivergence {
                hop: index,
                hop_name: hop.name().into(),
                kind: hop.kind(),
                mechanism,
                silent,
                intended: intended.into(),
                received: received.into(),
                diff: byte_diff(intended.as_bytes(), received.as_bytes()),
                detail,
            });
        }
    }

    /// bash's parse of a plain text, without asking bash: its words, one space apart, as
    /// `declare -f` prints a simple command.
    fn plain_parse(&self, text: &str) -> Option<Parse> {
        if self.opts.full_witness || !plain::is_plain(text) {
            return None;
        }
        self.shortcut.set(true);
        let words: Vec<&str> = text.split(' ').filter(|w| !w.is_empty()).collect();
        Some(Parse::Ok {
            canonical: format!("    {}", words.join(" ")),
        })
    }

    /// What the outer shell hands on for harness-rendered words (see
    /// [`BashPool::expand_words_as`]); literal words are expanded without asking bash.
    fn expand(&self, words: &str, posix_words: bool) -> Result<iec_witness::Expansion, CheckError> {
        if !self.opts.full_witness && words.len() <= 8192 {
            if let Some(args) = plain::literal_words(words) {
                self.shortcut.set(true);
                return Ok(iec_witness::Expansion {
                    args,
                    status: 0,
                    diagnostics: String::new(),
                    broke_out: false,
                });
            }
        }
        Ok(self.pool.expand_words_as(words.as_bytes(), posix_words)?)
    }

    /// `dash -n`, skipped for plain texts (dash and bash read them alike).
    fn dash_n(&self, text: &str) -> Result<Result<(), String>, CheckError> {
        if self.plain_parse(text).is_some() {
            return Ok(Ok(()));
        }
        match self.pool.dash_n(text.as_bytes())? {
            Err(message) if message.trim().is_empty() => Err(crashed("dash")),
            r => Ok(r),
        }
    }

    fn parse(&self, text: &str) -> Result<Parse, CheckError> {
        if let Some(p) = self.plain_parse(text) {
            return Ok(p);
        }
        if let Some((_, p)) = self.parsed.borrow().iter().find(|(t, _)| t == text) {
            // A validity-only answer has no canonical form; ask again for it.
            if !matches!(p, Parse::Ok { canonical } if canonical.is_empty()) {
                return Ok(p.clone());
            }
        }
        let p = no_crash(self.pool.parse(text.as_bytes(), wants_extglob(text))?)?;
        self.parsed.borrow_mut().retain(|(t, _)| t != text);
        self.parsed.borrow_mut().push((text.to_string(), p.clone()));
        Ok(p)
    }

    /// [`Run::parse`] of two texts, in one question to bash when neither is known yet.
    fn parse_two(&self, a: &str, b: &str) -> Result<(Parse, Parse), CheckError> {
        let known = |t: &str| {
            self.plain_parse(t).is_some()
                || self
                    .parsed
                    .borrow()
                    .iter()
                    .any(|(x, p)| x == t && !matches!(p, Parse::Ok { canonical } if canonical.is_empty()))
        };
        if known(a) || known(b) || wants_extglob(a) != wants_extglob(b) {
            return Ok((self.parse(a)?, self.parse(b)?));
        }
        let (pa, pb) = self
            .pool
            .parse_pair(a.as_bytes(), b.as_bytes(), wants_extglob(a))?;
        let (pa, pb) = (no_crash(pa)?, no_crash(pb)?);
        for (t, p) in [(a, &pa), (b, &pb)] {
            self.parsed.borrow_mut().retain(|(x, _)| x != t);
            self.parsed.borrow_mut().push((t.to_string(), p.clone()));
        }
        Ok((pa, pb))
    }

    /// Whether bash accepts the text (cheaper than [`Run::parse`]; cached with it).
    fn validate(&self, text: &str) -> Result<Parse, CheckError> {
        if let Some(p) = self.plain_parse(text) {
            return Ok(p);
        }
        if let Some((_, p)) = self.parsed.borrow().iter().find(|(t, _)| t == text) {
            return Ok(p.clone());
        }
        let p = no_crash(self.pool.validate(text.as_bytes(), wants_extglob(text))?)?;
        self.parsed.borrow_mut().push((text.to_string(), p.clone()));
        Ok(p)
    }

    /// Compares two bash texts by bash's own parse. `Ok(None)`: they denote the same commands;
    /// `Ok(Some(parse of received))`: they do not.
    fn same_bash(&self, intended: &str, received: &str) -> Result<Option<Parse>, CheckError> {
        if intended == received {
            return Ok(None);
        }
        let (a, b) = self.parse_two(intended, received)?;
        match (a.canonical(), b.canonical()) {
            (Some(x), Some(y)) if x == y || same_static_values(x, y) => Ok(None),
            _ => Ok(Some(b)),
        }
    }

    /// As [`Run::same_bash`], but `received` may carry the contract-neutral redirect `suffix`
    /// (`< /dev/null`) where `intended` has none: bash prints redirections right after the
    /// words of their command, so the first ` < /dev/null` in the canonical form is removed.
    fn same_bash_modulo(
        &self,
        intended: &str,
        received: &str,
        suffix: Option<&str>,
    ) -> Result<Option<Parse>, CheckError> {
        let Some(sfx) = suffix.map(str::trim).filter(|s| !s.is_empty()) else {
            return self.same_bash(intended, received);
        };
        if intended == received {
            return Ok(None);
        }
        // The suffix appended to a text that parses on its own only adds the redirect (the
        // canonical comparison below would remove it again); a text that parses only at the
        // end of input (a trailing backslash) would absorb it, and is compared in full.
        if received.strip_prefix(intended) == suffix && matches!(self.validate(intended)?, Parse::Ok { .. }) {
            return Ok(None);
        }
        let (a, b) = self.parse_two(intended, received)?;
        if let (Some(x), Some(y)) = (a.canonical(), b.canonical()) {
            let needle = format!(" {sfx}");
            if x == y || (!x.contains(&needle) && y.replacen(&needle, "", 1) == x) {
                return Ok(None);
            }
            let y = if x.contains(&needle) {
                y.to_string()
            } else {
                y.replacen(&needle, "", 1)
            };
            if same_static_values(x, &y) {
                return Ok(None);
            }
        }
        Ok(Some(b))
    }
}

/// A witness shell that rejects a text without a word has not found a syntax error: bash and
/// dash always name one. It died (bash 5.2 overflows its stack on some twenty thousand nested
/// `$(`, exit 139, nothing on stderr): a witness limit, not the agent's error.
fn crashed(shell: &str) -> CheckError {
    WitnessError::Limit(format!(
        "{shell} ended without a diagnostic while parsing the text: it crashed (deep nesting, such as \
         thousands of `$(`, overflows its parser's stack), so whether the harness's {shell} would run \
         it cannot be told"
    ))
    .into()
}

/// [`crashed`] for a parse error without a message.
fn no_crash(p: Parse) -> Result<Parse, CheckError> {
    match &p {
        Parse::Error { message } if message.trim().is_empty() => Err(crashed("bash")),
        _ => Ok(p),
    }
}

/// True when two canonical forms differ only in the quoting of static words (see [`words`]).
fn same_static_values(x: &str, y: &str) -> bool {
    matches!((words::normalize(x), words::normalize(y)), (Some(a), Some(b)) if a == b)
}

/// Texts that switch extglob on themselves are parsed with it on (bash applies `shopt` line by
/// line; a function body is parsed at once).
fn wants_extglob(text: &str) -> bool {
    text.contains("extglob")
}

/// Checks one call on one launch.
pub fn check(
    launch: &Launch,
    call: &Call,
    pool: &BashPool,
    opts: Options,
) -> Result<CheckReport, CheckError> {
    if let Some(Err(e)) = launch.command_of(&call.input).map(iec_core::limits::check_command) {
        return Ok(too_long_report(launch, &e));
    }
    match check_within_limits(launch, call, pool, opts) {
        Err(CheckError::Witness(WitnessError::Limit(why))) => Ok(CheckReport {
            reason: Some(format!("a witness could not answer: {why}")),
            attribution: Some(WITNESS_LIMIT.into()),
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

/// The `attribution` of an `unknown` report whose witness hit a limit (see
/// [`WitnessError::Limit`]): the text may be fine, the check cannot tell.
pub const WITNESS_LIMIT: &str = "witness-limit";

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
    if let Some(w) = &launch.windows {
        return windows::check(launch, w, call, pool, opts);
    }
    // One pin of this thread for all the questions of the check (see iec-witness's pool).
    let _cpu = pool.hold_cpu();
    let mut run = Run {
        launch,
        pool,
        opts,
        hops: Vec::new(),
        fd: None,
        parsed: Default::default(),
        shortcut: Default::default(),
    };
    let mut report = unknown_report(launch, call);

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
            return Ok(report);
        }
    };
    let decode_receipt = json!({ "command": launch.command_of(&call.input) });

    // Generation check: the emitted text must parse under the contract (bash).
    let script: Option<String> = match &intended {
        Intended::Text(t) => Some(t.clone()),
        Intended::Argv(a) => shell_script_of_argv(a).map(|(_, s)| s.to_string()),
    };
    if let Some(s) = &script {
        if let Some(i) = s.bytes().position(|b| b == 0) {
            report.reason = Some(format!(
                "the text holds a NUL byte at offset {i}; no shell can receive it"
            ));
            report.attribution = Some("generation".into());
            return Ok(report);
        }
        if let Parse::Error { message } = run.validate(s)? {
            report.reason = Some(format!(
                "generation: the emitted text does not parse as bash: {message}"
            ));
            report.attribution = Some("generation".into());
            return Ok(report);
        }
    }

    let text = match &intended {
        Intended::Text(t) => t.clone(),
        Intended::Argv(a) => a.join(" "),
    };
    if !tool_input_hop(&mut run, decode_receipt, &text)? {
        return Ok(finish(run, report));
    }

    match intended {
        Intended::Text(t) => match &launch.terminal {
            Some(term) => tmux::check_typed(&mut run, &t, term)?,
            None => check_text(&mut run, &t)?,
        },
        Intended::Argv(a) => check_argv(&mut run, &a)?,
    }
    Ok(finish(run, report))
}

/// The structured-decode hop: serde_json bound the value (`receipt`); the harness's input
/// validation may still reject the text. Returns false when it does (the first divergence).
pub(crate) fn tool_input_hop(run: &mut Run<'_>, receipt: Value, text: &str) -> Result<bool, CheckError> {
    let rejection = match render::validate(&run.launch.validate, text) {
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
        run.diverge(Hop::ToolInput,
            WitnessKind::Emulated,
            receipt,
            Mechanism::Other,
            false,
            text,
            "",
            format!(
                "the harness rejects the call before any shell runs ({} at byte {}): {}",
                rej.rule, rej.offset, rej.message
            ),
        );
        return Ok(false);
    }
    run.push(Hop::ToolInput,
        WitnessKind::Real,
        Some(true),
        receipt,
        None,
    );
    Ok(true)
}

/// The most bytes of line prefixes [`second_statement`] has bash parse for one text (about 5 s
/// of bash).
pub const SECOND_STATEMENT_BUDGET: usize = 64 << 20;

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
    let blank = |s: &str| {
        s.lines().all(|l| {
            let l = l.trim_matches([' ', '\t', '\r']);
            l.is_empty() || l.starts_with('#')
        })
    };
    let mut spent = 0usize;
    for (i, _) in text.match_indices('\n') {
        let (head, rest) = (&text[..i], &text[i + 1..]);
        if blank(head) || blank(rest) {
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

pub(crate) fn finish(run: Run<'_>, mut report: CheckReport) -> CheckReport {
    report.verdict = if run.fd.is_some() {
        Verdict::Diverges
    } else {
        Verdict::Corresponds
    };
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

/// For argv calls: `(shell, script)` when argv runs a shell with `-c` / `-lc`.
fn shell_script_of_argv(argv: &[String]) -> Option<(ShellId, &str)> {
    let name = argv.first()?.rsplit('/').next()?;
    let shell = match name {
        "bash" => ShellId::Bash,
        "sh" | "dash" => ShellId::Dash,
        _ => return None,
    };
    let flag = argv.get(1)?;
    if !(flag == "-c" || flag == "-lc" || flag == "-cl") {
        return None;
    }
    Some((shell, argv.get(2)?.as_str()))
}

fn check_text(run: &mut Run<'_>, intended: &str) -> Result<(), CheckError> {
    let launch = run.launch;
    // Hop: harness rewrite.
    let mut text = intended.to_string();
    if let Some(rw) = &launch.rewrite {
        let mut changes = vec![];
        for step in &rw.steps {
            let (t, note) = render::rewrite_step(step, &text);
            text = t;
            changes.extend(note);
        }
        let receipt = json!({ "text": text, "changes": changes });
        match run.same_bash(intended, &text)? {
            None => run.push(Hop::HarnessRewrite,
                WitnessKind::Emulated,
                Some(true),
                receipt,
                None,
            ),
            Some(p) => {
                let silent = p.parses();
                let m = classify::mechanism(intended, &text);
                run.diverge(Hop::HarnessRewrite,
                    WitnessKind::Emulated,
                    receipt,
                    m,
                    silent,
                    intended,
                    &text,
                    format!("the harness rewrites the text: {}", changes.join("; ")),
                );
                return Ok(());
            }
        }
    }

    // Hop: wrapper.
    let Some((wrapper_text, payload)) = wrapper_hop(run, &text)? else {
        return Ok(());
    };

    // Hop: spawn (execve).
    let argv = render::spawn_argv(launch, &wrapper_text, None);
    if !spawn_hop(run, &argv)? {
        return Ok(());
    }

    // Hop: shell parse.
    let shell_text = argv.last().cloned().unwrap_or_default();
    match launch.spawn.shell {
        ShellId::Dash => return dash_hop(run, intended, &shell_text),
        ShellId::FromArgv => unreachable!("string launches name their shell"),
        ShellId::Bash => {}
    }
    let login_note = launch
        .spawn
        .login
        .then(|| "login shell: profile files run first; check mode does not run them".to_string());
    bash_hops(run, intended, shell_text, payload, login_note)
}

/// The wrapper hop, shared by POSIX and Git Bash launches: the receipt is the command the
/// harness's wrapper is built to deliver. Returns the wrapper text and the payload (none without
/// a wrapper: the text itself), or `None` when the hop diverged.
pub(crate) fn wrapper_hop(
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
            run.push(Hop::Wrapper,
                WitnessKind::Emulated,
                Some(true),
                receipt,
                p.changes.first().cloned(),
            );
            Ok(Some((wrapper_text, Some(p))))
        }
        Some(parse) => {
            let m = classify::mechanism(text, &p.designed);
            run.diverge(Hop::Wrapper,
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

/// The hops where real bash receives `shell_text`: its parse of the script or of the wrapper,
/// what it hands `eval` and what `eval` parses, and snapshot functions. Shared by every launch
/// whose shell is bash, POSIX or Git Bash.
pub(crate) fn bash_hops(
    run: &mut Run<'_>,
    intended: &str,
    shell_text: String,
    payload: Option<render::Payload>,
    login_note: Option<String>,
) -> Result<(), CheckError> {
    let launch = run.launch;
    let Some(w) = &launch.wrapper else {
        // The text is the whole script.
        match run.same_bash(intended, &shell_text)? {
            None => run.push(Hop::Shell,
                WitnessKind::Real,
                Some(true),
                json!({ "text": shell_text }),
                login_note,
            ),
            Some(p) => {
                let m = classify::mechanism(intended, &shell_text);
                run.diverge(Hop::Shell,
                    WitnessKind::Real,
                    json!({ "text": shell_text }),
                    m,
                    p.parses(),
                    intended,
                    &shell_text,
                    "bash parses a different script".into(),
                );
            }
        }
        return Ok(());
    };
    let payload = payload.expect("wrapper payload");
    if !w.eval && !w.inner_shell {
        // The text is spliced into the wrapper: bash parses the whole wrapper.
        match run.parse(&shell_text)? {
            Parse::Ok { canonical } => run.push(Hop::Shell,
                WitnessKind::Real,
                Some(true),
                json!({ "text": shell_text, "canonical": canonical }),
                login_note,
            ),
            Parse::Error { message } | Parse::EndOnly { message } => {
                // A parse bash abandons without a word exits 0: nothing tells the agent.
                let silent = message == spawn::ABANDONED;
                run.diverge(Hop::Shell,
                    WitnessKind::Real,
                    json!({ "text": shell_text, "error": message }),
                    Mechanism::Other,
                    silent,
                    intended,
                    &shell_text,
                    format!("the wrapper around the text no longer parses: {message}"),
                );
            }
        }
        return Ok(());
    }
    // The payload words are expanded by the outer shell and handed to eval.
    let e = run.expand(&payload.words, false)?;
    let eval_text = e.args.join(" ");
    let hop = if w.inner_shell { Hop::InnerShell } else { Hop::Eval };
    let hop_name = hop.name();
    let receipt = json!({ "eval_args": e.args, "status": e.status, "diagnostics": e.diagnostics });
    if e.broke_out {
        run.diverge(Hop::Shell, WitnessKind::Real, receipt, Mechanism::QuoteConsumption, false, &payload.words, &eval_text, "the rendered payload is not one list of words: its quoting ends early and the rest runs as commands of the outer shell".into());
        return Ok(());
    }
    if e.status != 0 {
        run.diverge(Hop::Shell,
            WitnessKind::Real,
            receipt,
            Mechanism::Other,
            false,
            &payload.words,
            &eval_text,
            format!("the outer shell fails expanding the payload: {}", e.diagnostics),
        );
        return Ok(());
    }
    if w.inner_shell && e.args.len() != 1 {
        // `bash -c A B…` runs A with B… as $0 and the positional parameters.
        run.diverge(Hop::Shell,
            WitnessKind::Real,
            receipt,
            Mechanism::ArityChange,
            true,
            &payload.words,
            &eval_text,
            format!(
                "the payload is {} arguments of the inner `bash -c`, not one: the text is only the first",
                e.args.len()
            ),
        );
        return Ok(());
    }
    run.push(Hop::Shell,
        WitnessKind::Real,
        Some(true),
        receipt,
        login_note,
    );

    // Hop: eval parse (or the inner shell's parse).
    let receipt = json!({ "text": eval_text });
    match run.same_bash(&payload.designed, &eval_text)? {
        None => run.push(hop, WitnessKind::Real, Some(true), receipt, None),
        Some(p) => {
            let m = classify::mechanism(&payload.designed, &eval_text);
            let silent = p.parses();
            run.diverge(hop, WitnessKind::Real, receipt, m, silent, &payload.designed, &eval_text, if silent { format!("{hop_name} parses a different command than the one the harness meant to deliver, and it runs without a parse error") } else { format!("{hop_name} fails to parse what it received") });
            return Ok(());
        }
    }

    // Hop: program substitution by snapshot functions.
    if let Some(snap) = &launch.snapshot {
        if !snap.shadowed.is_empty() {
            program_hop(run, intended, snap)?;
        }
    }
    Ok(())
}

fn program_hop(run: &mut Run<'_>, intended: &str, snap: &iec_launches::Snapshot) -> Result<(), CheckError> {
    let parse = run.parse(intended)?;
    let canonical = parse.canonical().unwrap_or(intended);
    let programs = classify::invoked_programs(canonical);
    let hit: Vec<&String> = programs.iter().filter(|p| snap.shadowed.contains(p)).collect();
    let receipt = json!({ "programs": programs, "shadowed": snap.shadowed });
    if let Some(first) = hit.first() {
        let detail = format!(
            "`{first}` runs the snapshot's shell function, not the program the call names: {}",
            snap.note.clone().unwrap_or_default()
        );
        run.diverge(Hop::Program,
            WitnessKind::Emulated,
            receipt,
            Mechanism::Other,
            true,
            first,
            &format!("snapshot function {first}"),
            detail,
        );
    } else {
        run.push(Hop::Program,
            WitnessKind::Emulated,
            Some(true),
            receipt,
            None,
        );
    }
    Ok(())
}

/// The execve hop: byte-exact, but no NUL and fewer than `MAX_ARG_STRLEN` bytes per argument.
fn spawn_hop(run: &mut Run<'_>, argv: &[String]) -> Result<bool, CheckError> {
    let receipt = json!({ "argv": argv });
    if let Some((i, a)) = argv.iter().enumerate().find(|(_, a)| a.len() >= MAX_ARG_STRLEN) {
        run.diverge(Hop::Spawn, WitnessKind::Emulated, receipt, Mechanism::Truncation, false, a, "", format!("argv[{i}] is {} bytes; execve fails with E2BIG for an argument of {MAX_ARG_STRLEN} bytes or more (the limit counts its NUL), nothing runs", a.len()));
        return Ok(false);
    }
    // `sh -c TEXT`: bash and dash read a TEXT that starts with `-` or `+` as more options and
    // fail before parsing anything (observed: `bash -c '-- echo hi'`, `dash -c '+x echo'`).
    if let Some(pos) = argv.iter().position(|a| a == "-c" || a == "-lc" || a == "-cl") {
        if let Some(text) = argv.get(pos + 1).filter(|t| t.starts_with(['-', '+'])) {
            let shown = text.clone();
            run.diverge(Hop::Spawn, WitnessKind::Emulated, receipt, Mechanism::Other, false, &shown, "", format!("the text after {} starts with `{}`: the shell reads it as options and fails (`invalid option`) before parsing it; nothing runs", argv[pos], &text[..1]));
            return Ok(false);
        }
    }
    if run.opts.spawn_witness && run.launch.spawn.shell == ShellId::Bash {
        let raw: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
        let got = spawn::bash_env_witness(&raw)?;
        let sent = argv.last().map(|s| s.as_bytes()).unwrap_or_default();
        let got_s = String::from_utf8_lossy(&got).into_owned();
        if got != sent {
            run.diverge(Hop::Spawn,
                WitnessKind::Real,
                json!({ "argv": argv, "bash_execution_string": got_s }),
                Mechanism::Other,
                true,
                &String::from_utf8_lossy(sent),
                &got_s,
                "bash received other bytes than the harness passed".into(),
            );
            return Ok(false);
        }
        run.push(Hop::Spawn,
            WitnessKind::Real,
            Some(true),
            json!({ "argv": argv, "bash_execution_string": got_s }),
            None,
        );
    } else {
        run.push(Hop::Spawn, WitnessKind::Emulated, Some(true), receipt, Some("execve passes argv byte-exact (run with --witness spawn to observe it with a BASH_ENV witness)".into()));
    }
    Ok(true)
}

fn dash_hop(run: &mut Run<'_>, intended: &str, text: &str) -> Result<(), CheckError> {
    let receipt = json!({ "text": text, "shell": "dash" });
    if let Err(message) = run.dash_n(text)? {
        run.diverge(Hop::Shell,
            WitnessKind::Real,
            json!({ "text": text, "shell": "dash", "error": message }),
            Mechanism::Other,
            false,
            intended,
            text,
            format!("dash rejects bash syntax: {message}"),
        );
        return Ok(());
    }
    if let Some(d) = dialect::bash_only(text) {
        run.diverge(Hop::Shell,
            WitnessKind::Emulated,
            receipt,
            d.mechanism,
            d.silent,
            intended,
            text,
            format!(
                "dash parses it but gives `{}` another meaning: {}",
                d.construct, d.effect
            ),
        );
        return Ok(());
    }
    run.push(Hop::Shell,
        WitnessKind::Real,
        Some(true),
        receipt,
        None,
    );
    Ok(())
}

/// Whether an unquoted word could be a pathname pattern: it holds `*` or `?`, or a `[` with a
/// `]` after it (dash's rule; an unmatched `[` is literal).
fn may_glob(word: &str) -> bool {
    word.contains(['*', '?']) || word.find('[').is_some_and(|i| word[i + 1..].contains(']'))
}

fn check_argv(run: &mut Run<'_>, argv: &[String]) -> Result<(), CheckError> {
    let launch = run.launch;
    let intended_shown = serde_json::to_string(argv).unwrap();
    if let Some(rw) = &launch.rewrite {
        if rw.steps.iter().any(|s| s == "space-join") {
            // The argv becomes one shell text: the shell re-splits and re-expands it.
            let joined = render::space_join(argv);
            run.push(Hop::HarnessRewrite,
                WitnessKind::Emulated,
                None,
                json!({ "text": joined }),
                Some("argv joined with spaces; judged where the shell parses it".into()),
            );
            let spawn_argv = render::spawn_argv(launch, &joined, None);
            if !spawn_hop(run, &spawn_argv)? {
                return Ok(());
            }
            if let Err(message) = run.dash_n(&joined)? {
                run.diverge(Hop::Shell,
                    WitnessKind::Real,
                    json!({ "text": joined, "error": message }),
                    Mechanism::QuoteConsumption,
                    false,
                    &intended_shown,
                    &joined,
                    format!("sh cannot parse the joined argv: {message}"),
                );
                return Ok(());
            }
            // What dash hands the program: bash's word expansion with brace expansion off
            // stands in for dash's (quotes, parameters and field splitting agree; `$'…'` does
            // not, and is rare in an argv).
            let e = run.expand(&joined, true)?;
            let got = serde_json::to_string(&e.args).unwrap();
            let receipt = json!({ "text": joined, "argv": e.args });
            if e.broke_out || e.args != argv {
                let m = if e.broke_out || e.args.len() != argv.len() {
                    if argv.iter().any(|a| a.contains('$')) && e.args.len() == argv.len() {
                        Mechanism::ReExpansion
                    } else {
                        Mechanism::ArityChange
                    }
                } else if argv
                    .iter()
                    .any(|a| a.contains('$') || a.contains('`') || may_glob(a))
                {
                    Mechanism::ReExpansion
                } else {
                    Mechanism::QuoteConsumption
                };
                run.diverge(Hop::Shell,
                    WitnessKind::Real,
                    receipt,
                    m,
                    true,
                    &intended_shown,
                    &got,
                    "sh splits and expands the joined text again: the program gets another argv".into(),
                );
            } else if let Some(word) = argv.iter().find(|a| may_glob(a)) {
                // The argv came back unchanged, so no element lost a quote: its `*`, `?` or
                // `[…]` is unquoted in the joined text and dash matches it against the files
                // of the working directory at run time (`.?` is `..` everywhere). The witness
                // sees only its own directory.
                run.diverge(Hop::Shell,
                    WitnessKind::Real,
                    receipt,
                    Mechanism::ReExpansion,
                    true,
                    &intended_shown,
                    &got,
                    format!("sh expands the unquoted pattern {word:?} of the joined text against the files of its working directory: which words the program gets depends on them"),
                );
            } else {
                run.push(Hop::Shell,
                    WitnessKind::Real,
                    Some(true),
                    receipt,
                    None,
                );
            }
            return Ok(());
        }
    }
    let spawn_argv = render::spawn_argv(launch, "", Some(argv));
    if !spawn_hop(run, &spawn_argv)? {
        return Ok(());
    }
    match shell_script_of_argv(argv) {
        Some((ShellId::Dash, s)) => dash_hop(run, s, s)?,
        Some((_, s)) => run.push(Hop::Shell,
            WitnessKind::Real,
            Some(true),
            json!({ "text": s }),
            Some("argv[2] reaches the shell byte-exact; it parses (checked above)".into()),
        ),
        None => run.push(Hop::Shell,
            WitnessKind::Real,
            None,
            json!({}),
            Some("no shell: the argv is executed directly".into()),
        ),
    }
    Ok(())
}
