//! Terminal-typing launches (Terminal-Bench's Terminus, OpenHands): the harness types the text
//! with `tmux send-keys` into an interactive bash. Hops: the harness's rewrite, the appended
//! completion suffix (a wrapper), the typing itself (tmux's argument parser and key names,
//! readline, history expansion, continuation lines: observed by the real tmux witness of
//! `iec-witness`), and bash's parse of what it read.

use super::{Flow, State};
use crate::run::Run;
use crate::typeahead::Stdin;
use crate::{classify, plain, CheckError};
use iec_core::{Hop, Mechanism, WitnessKind};
use iec_launches::Terminal;
use iec_witness::gate;
use iec_witness::tmux::{self as tw, Ending, Typist};
use iec_witness::Parse;
use serde_json::json;

fn typist(t: &Terminal) -> Typist {
    Typist {
        literal: t.send == "literal",
        suffix: t.suffix.clone(),
        enter_same_call: t.enter == "same-call",
        history_expansion: t.history_expansion,
        width: t.width,
        height: t.height,
    }
}

/// The command of a `; CMD` suffix, to judge whether appending it is neutral.
fn suffix_command(suffix: &str) -> &str {
    suffix.trim_start().trim_start_matches(';').trim()
}

/// What a terminal harness types and its shell read, as the hops find it.
#[derive(Default)]
pub(crate) struct Typing {
    /// Set once the texts below are known.
    ready: bool,
    /// The intended text (without the trailing line breaks the harness strips).
    meant: String,
    /// The intended text followed by the completion suffix: what the harness means to type.
    designed: String,
    /// What the witness shell read.
    typed: Option<tw::Typed>,
}

/// Fixes what the harness types, once its rewrite (if any) is done: the trailing line breaks
/// it strips go from the text and the intended command alike.
fn prepare(st: &mut State, t: &Terminal) {
    if st.terminal.ready {
        return;
    }
    let mut meant = st.intended_text().to_string();
    if t.strip_trailing_newlines {
        st.text = st.text.trim_end_matches(['\r', '\n']).to_string();
        meant = meant.trim_end_matches(['\r', '\n']).to_string();
    }
    st.terminal.designed = format!("{meant}{}", t.suffix);
    st.terminal.meant = meant;
    st.terminal.ready = true;
}

/// The wrapper hop of a terminal launch: the completion suffix typed after the text.
pub(crate) fn suffix(run: &mut Run<'_>, st: &mut State, t: &Terminal) -> Result<Flow, CheckError> {
    prepare(st, t);
    let (meant, designed) = (st.terminal.meant.clone(), st.terminal.designed.clone());
    if !t.suffix.is_empty() {
        let neutral = format!("{meant}\n{}", suffix_command(&t.suffix));
        let receipt = json!({ "typed": designed, "suffix": t.suffix });
        match run.same_bash(&neutral, &designed)? {
            None => run.push(
                Hop::Wrapper,
                WitnessKind::Emulated,
                Some(true),
                receipt,
                Some(format!(
                    "`{}` is typed after the text: the harness waits for its signal",
                    t.suffix
                )),
            ),
            Some(p) => {
                let silent = matches!(p, iec_witness::Parse::Ok { .. });
                run.diverge(Hop::Wrapper, WitnessKind::Emulated, receipt, Mechanism::Other, silent, &neutral, &designed, format!("the text followed by `{}` is not the text and then the signal: {}", t.suffix, if silent { "it parses as other commands (a trailing comment swallows the signal, a heredoc's end line is no longer alone), so the call runs but the harness waits for a signal that never comes" } else { "it no longer parses (e.g. `&;`), the shell reports a syntax error and the harness waits for a signal that never comes" }));
                return Ok(Flow::Stop);
            }
        }
    }

    Ok(Flow::Next)
}

/// The terminal hop: the harness's `tmux send-keys` calls into the witness's interactive bash.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let launch = run.launch;
    let t = launch.terminal.as_ref().expect("a terminal launch");
    prepare(st, t);
    let (text, meant, designed) = (
        st.text.clone(),
        st.terminal.meant.clone(),
        st.terminal.designed.clone(),
    );
    let typed_text = format!("{text}{}", t.suffix);
    let ty = typist(t);
    let calls = ty.send_keys_calls(&text);
    // The harness starts a tmux client per call with the keys as arguments: an argument execve
    // refuses (E2BIG) means that client never starts and nothing is typed.
    if let Some(a) = calls.iter().flatten().find(|a| a.len() >= crate::MAX_ARG_STRLEN) {
        let receipt = json!({ "send_keys_argument_bytes": a.len() });
        run.diverge(Hop::Terminal, WitnessKind::Emulated, receipt, Mechanism::Truncation, false, &designed, "", format!("a `tmux send-keys` argument is {} bytes; execve fails with E2BIG for an argument of {} bytes or more, so the tmux client never starts and nothing is typed", a.len(), crate::MAX_ARG_STRLEN));
        return Ok(Flow::Stop);
    }
    let shortcut = !run.opts.full_witness
        && text == meant
        && !text.starts_with('-')
        && plain::is_plain(&text)
        && text.contains(' ')
        && text.len() <= 4096;
    let typed = if shortcut {
        // Plain words with a space: no key name, no `;`, nothing readline or history expansion
        // acts on; tests/tmux_launches.rs and tests/plain.rs compare this with the witness.
        run.shortcut.set(true);
        tw::Typed {
            calls: calls.iter().map(|c| (c.clone(), 0, String::new())).collect(),
            read: designed.clone(),
            ending: Ending::Complete,
            canonical: None,
            screen: String::new(),
            refused_keys: vec![],
        }
    } else {
        // What the shell's parser gets of the typed text: a CR is Enter (accept-line), a line
        // break like LF (`\` CR is a line continuation there, an escaped CR for `bash -n`).
        // Every other key that changes the line is refused by the witness.
        let as_read = typed_text.replace('\r', "\n");
        if gate::may_break_out(as_read.as_bytes()) {
            if let Err(message) = run.pool.bash_n(as_read.as_bytes(), false)? {
                let receipt = json!({ "send_keys": calls, "typed": typed_text, "error": message });
                run.diverge(
                    Hop::Terminal,
                    WitnessKind::Real,
                    receipt,
                    Mechanism::Other,
                    false,
                    &designed,
                    &typed_text,
                    format!("bash rejects the typed text: {message}"),
                );
                return Ok(Flow::Stop);
            }
        }
        tw::global().type_text(&ty, &text)?
    };
    let statuses: Vec<i32> = typed.calls.iter().map(|c| c.1).collect();
    let ending = format!("{:?}", typed.ending).to_lowercase();
    let receipt =
        json!({ "send_keys": calls, "tmux_status": statuses, "read": typed.read, "ending": ending });
    let witness = WitnessKind::Real;
    if let Some((argv, st, err)) = typed.calls.iter().find(|c| c.1 != 0) {
        let too_long = err.contains("too long");
        let m = if too_long {
            Mechanism::Truncation
        } else {
            Mechanism::Other
        };
        run.diverge(Hop::Terminal, witness, receipt, m, false, &designed, &typed.read, format!("tmux refuses `{}` (exit {st}: {}): {} the harness then waits for a completion that never comes", argv.first().map(String::as_str).unwrap_or(""), err.trim(), if too_long { "the keys exceed tmux's message size, nothing of them is typed;" } else { if err.contains("unknown command") {
                    "tmux's argument parser ends a command at an argument's trailing `;`, so the next argument is read as a tmux command; nothing of this call is typed;"
                } else {
                    "tmux reads the text as its own options (no `--` before it); nothing of this call is typed;"
                } }));
        return Ok(Flow::Stop);
    }
    // Keys by which the harness's readline acts on the line while it is typed (expansion — with
    // command substitution and arithmetic run at once —, completion, running or accepting the
    // line, the terminal's interrupt/quit/suspend): the witness refuses them, so what it read is
    // not what the harness's shell does.
    if !typed.refused_keys.is_empty() {
        let mut names: Vec<&str> = typed.refused_keys.iter().map(String::as_str).collect();
        names.dedup();
        // The witness drops the line a refused key was pressed in (and every later one): what
        // the harness's shell makes of it is not observed, only that it acts on the line.
        let m = match typed.read.is_empty() {
            true => Mechanism::Other,
            false => classify::mechanism(&designed, &typed.read),
        };
        let mut receipt = receipt;
        receipt["refused_keys"] = json!(typed.refused_keys);
        run.diverge(Hop::Terminal, witness, receipt, m, true, &designed, &typed.read, format!("the typed text contains keys that make the interactive shell act on the line while it is typed ({}): readline expands, completes, runs or accepts the line, or the terminal interrupts it, before the harness's command is read (an expansion runs its command substitutions at once); the witness refused them", names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")));
        return Ok(Flow::Stop);
    }
    // History expansion: the harness's shell expands `!` (and a leading `^`) in each line it
    // reads before parsing it; the witness reads with expansion off (a text could otherwise
    // build a `}` that ends its wrapper), and real bash's expansion of the lines it read is
    // asked for here.
    if t.history_expansion && (typed.read.contains('!') || typed.read.lines().any(|l| l.starts_with('^'))) {
        let lines: Vec<&str> = typed.read.split('\n').collect();
        let got = iec_witness::spawn::history_expand(&lines)?;
        let mut receipt = receipt.clone();
        receipt["history_expansion"] = json!(got);
        if let Some(i) = got.iter().position(Option::is_none) {
            run.diverge(Hop::Terminal, witness, receipt, Mechanism::ReExpansion, false, &designed, "", format!("history expansion fails on typed line {} (`event not found` or a bad modifier): the interactive shell prints the error and runs nothing of that command", i + 1));
            return Ok(Flow::Stop);
        }
        let expanded: Vec<String> = got.into_iter().flatten().collect();
        if expanded.iter().zip(&lines).any(|(e, l)| e != l) {
            let received = expanded.join("\n");
            run.diverge(
                Hop::Terminal,
                witness,
                receipt,
                Mechanism::ReExpansion,
                true,
                &designed,
                &received,
                "history expansion of `!` changes what the interactive shell runs".into(),
            );
            return Ok(Flow::Stop);
        }
    }
    let screen_tail = || {
        typed
            .screen
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty() && !l.starts_with('>') && !l.starts_with('$'))
            .unwrap_or("")
            .to_string()
    };
    match typed.ending {
        Ending::Complete => {}
        Ending::Early => {
            let m = if typed.screen.contains("event not found") {
                Mechanism::ReExpansion
            } else {
                classify::mechanism(&designed, &typed.read)
            };
            run.diverge(Hop::Terminal, witness, receipt, m, false, &designed, &typed.read, format!("the interactive shell ends the command before the last typed line ({}); the lines after it would run as commands of their own", screen_tail()));
            return Ok(Flow::Stop);
        }
        Ending::Pending => {
            run.diverge(Hop::Terminal, witness, receipt, Mechanism::Other, false, &designed, &typed.read, "after the last typed line the interactive shell still waits for more input (a continuation prompt): nothing runs, the harness times out".into());
            return Ok(Flow::Stop);
        }
        Ending::Stopped | Ending::Died | Ending::Timeout => {
            run.diverge(Hop::Terminal, witness, receipt, Mechanism::Other, true, &designed, &typed.read, format!("the typed text ends the witness's wrapper and would run at once (the witness stopped it: {ending}); it is not the intended command"));
            return Ok(Flow::Stop);
        }
    }
    // Compare what the shell read with what the harness typed, by bash's parse.
    let same = if typed.read == designed {
        true
    } else {
        let want = run.parse(&designed)?;
        match (want.canonical(), typed.canonical.as_deref()) {
            (Some(a), Some(b)) => a == b,
            _ => run.same_bash(&designed, &typed.read)?.is_none(),
        }
    };
    if !same {
        let m = classify::mechanism(&designed, &typed.read);
        run.diverge(Hop::Terminal, witness, receipt, m, true, &designed, &typed.read, "the interactive shell read another command than the harness typed (readline editing or completion of control characters and tabs, history expansion of `!`, tmux key names)".into());
        return Ok(Flow::Stop);
    }
    // What an interactive shell does and `bash -c` does not: prompt commands, key bindings and
    // aliases that reach the later lines, the history character.
    let body = typed.read.trim_end_matches('\n').to_string();
    let prefix = complete_prefix(run, &body)?;
    let effect = interactive_effect(run, &body, prefix.as_deref(), 0)?.map(|what| (true, format!("{what} acts on the interactive shell the text is typed into as `bash -c` never would: its prompts run commands and are what the harness waits for, and key bindings, aliases, reading options and the history character reach the lines typed after it")));
    // Lines typed after a command that reads the terminal are its input, not commands.
    let effect = match effect {
        Some(e) => Some(e),
        None => typed_ahead(run, prefix.as_deref())?.map(|(certain, why, line)| (certain, format!("typed line {line} runs before the lines after it are read, and {why} reads the terminal: the lines typed after it are its input, not commands (and the harness's completion marker with them)"))),
    };
    if let Some((certain, detail)) = effect {
        if certain {
            run.diverge(
                Hop::Terminal,
                witness,
                receipt,
                Mechanism::Other,
                true,
                &designed,
                &typed.read,
                detail,
            );
        } else {
            run.push(Hop::Terminal, witness, None, receipt, Some(detail.clone()));
            run.undecided = Some((
                Some(crate::TERMINAL_INPUT),
                detail.replace(" reads the terminal:", " may read the terminal: then"),
            ));
        }
        return Ok(Flow::Stop);
    }
    run.push(Hop::Terminal, witness, Some(true), receipt, None);
    st.terminal.typed = Some(typed);
    Ok(Flow::Next)
}

/// At most this many line breaks are tried, from the last, as the end of the commands run
/// before the last typed line; a text with more is not judged (`unknown`, `terminal-input`).
const TYPEAHEAD_LINES: usize = 256;

/// The commands run before the last typed line is read: the longest prefix ending at a line
/// break that is complete commands (the shell runs all of them before it reads the rest).
/// `Some("")` stands for "more line breaks than this check tries" (see [`TYPEAHEAD_LINES`]).
fn complete_prefix(run: &mut Run<'_>, body: &str) -> Result<Option<String>, CheckError> {
    let breaks: Vec<usize> = body.match_indices('\n').map(|(n, _)| n).collect();
    for &n in breaks.iter().rev().take(TYPEAHEAD_LINES) {
        // (Not a head that parses only because the end of input closes it: an open
        // here-document goes on reading the lines after it.)
        if matches!(run.validate(&body[..n])?, Parse::Ok { .. }) {
            return Ok(Some(body[..n].to_string()));
        }
    }
    // Red team round 7: a `read` followed by a quoted string of 300 lines was "corresponds".
    Ok((breaks.len() > TYPEAHEAD_LINES).then(String::new))
}

/// The tokens of a text's action (here-documents as plain input redirections), or `None`.
fn tokens_of(run: &mut Run<'_>, text: &str) -> Result<Option<Vec<crate::action::Token>>, CheckError> {
    let canonical = match run.parse(text)? {
        Parse::Ok { canonical } => canonical,
        _ => return Ok(None),
    };
    Ok(crate::action::action(&crate::typeahead::without_heredocs(
        &canonical,
    )))
}

/// The first command of the typed text that changes the interactive shell beyond what `bash -c`
/// does (see [`crate::typeahead::interactive_state`]): anywhere for the prompt variables, in
/// `prefix` (lines read after it) for bindings, aliases and reading options; inside `eval` of
/// literal words, all of them (the rest of the eval is read after each command).
fn interactive_effect(
    run: &mut Run<'_>,
    body: &str,
    prefix: Option<&str>,
    depth: u8,
) -> Result<Option<String>, CheckError> {
    if let Some(p) = prefix.filter(|p| !p.is_empty()) {
        if let Some(t) = tokens_of(run, p)? {
            if let Some(w) = crate::typeahead::interactive_state(&t, true) {
                return Ok(Some(w));
            }
        }
    }
    let Some(tokens) = tokens_of(run, body)? else {
        return Ok(None);
    };
    if let Some(w) = crate::typeahead::interactive_state(&tokens, depth > 0) {
        return Ok(Some(w));
    }
    if depth < 2 {
        for cmd in crate::typeahead::simple_commands(&tokens) {
            let words: Vec<Option<String>> = cmd
                .iter()
                .filter_map(|t| match t {
                    crate::action::Token::Word(w) => Some(crate::typeahead::literal(w)),
                    _ => None,
                })
                .collect();
            if words.first().and_then(|w| w.as_deref()) != Some("eval") {
                continue;
            }
            let Some(inner) = words[1..].iter().cloned().collect::<Option<Vec<String>>>() else {
                continue;
            };
            let inner = inner.join(" ");
            if let Some(w) = interactive_effect(run, &inner, None, depth + 1)? {
                return Ok(Some(format!("{w} (inside `eval`)")));
            }
        }
    }
    Ok(None)
}

/// Whether a command run before the last typed line reads (`true`) or may read (`false`) the
/// terminal: the reason and the typed line it is on (1-based).
fn typed_ahead(run: &mut Run<'_>, prefix: Option<&str>) -> Result<Option<(bool, String, usize)>, CheckError> {
    let Some(prefix) = prefix else {
        return Ok(None);
    };
    if prefix.is_empty() {
        return Ok(Some((false, format!("with more than {TYPEAHEAD_LINES} typed lines, a command before the last of them that this check does not look at"), 1)));
    }
    let Some(tokens) = tokens_of(run, prefix)? else {
        return Ok(Some((false, "a command this check cannot read".into(), 1)));
    };
    let found = crate::typeahead::readers(&tokens);
    let Some(first) = found.first() else {
        return Ok(None);
    };
    let certain = found.iter().any(|r| matches!(r, Stdin::Reads(_)));
    let shown = found
        .iter()
        .find(|r| matches!(r, Stdin::Reads(_)) == certain)
        .unwrap_or(first);
    let why = match shown {
        Stdin::Reads(w) | Stdin::Maybe(w) => w.clone(),
    };
    let line = line_of(run, prefix)?;
    Ok(Some((certain, why, line)))
}

/// The first typed line whose commands (with those before it) include one that reads the
/// terminal, by the same reading as [`typed_ahead`] on growing prefixes.
fn line_of(run: &mut Run<'_>, prefix: &str) -> Result<usize, CheckError> {
    for (k, (n, _)) in prefix
        .match_indices('\n')
        .chain([(prefix.len(), "")])
        .enumerate()
        .take(TYPEAHEAD_LINES)
    {
        let p = &prefix[..n];
        if let Parse::Ok { canonical } = run.parse(p)? {
            if let Some(t) = crate::action::action(&crate::typeahead::without_heredocs(&canonical)) {
                if !crate::typeahead::readers(&t).is_empty() {
                    return Ok(k + 1);
                }
            }
        }
    }
    Ok(1)
}

/// The shell hop of a terminal launch: the interactive bash parsed what it read (the witness
/// printed its parse, or bash's parse of the designed text stands for it: they compared equal).
pub(crate) fn shell(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let typed = st
        .terminal
        .typed
        .take()
        .expect("the shell hop follows the terminal hop");
    let canonical = match typed.canonical {
        Some(c) => c,
        None => run
            .parse(&st.terminal.designed)?
            .canonical()
            .unwrap_or("")
            .to_string(),
    };
    run.push(
        Hop::Shell,
        WitnessKind::Real,
        Some(true),
        json!({ "text": typed.read, "canonical": canonical }),
        Some("the interactive bash parsed what it read into one command".into()),
    );
    Ok(Flow::Next)
}
