//! The shell hop: the shell the harness started parses what it received. Real bash judges
//! bash launches (its parse of the script or the whole wrapper, and what it hands `eval`), real
//! `dash -n` and a table of bash-only constructs judge dash; an argv joined into one text is
//! split and expanded by the real shell's word rules. On Windows real bash judges what the MSYS2
//! runtime handed Git Bash, the PowerShell grammar (tree-sitter-powershell) judges the script
//! PowerShell's CLI built, and the cmd emulator what cmd.exe runs.

use super::{Flow, Intended, State};
use crate::run::Run;
use crate::windows::{self, Receiver};
use crate::{classify, dialect, CheckError};
use iec_core::{Hop, Mechanism, WitnessKind, WitnessKind::Emulated};
use iec_launches::render::Payload;
use iec_launches::{ShellId, Windows};
use iec_windows::cmd;
use iec_windows::powershell::{self, grammar};
use iec_witness::{spawn, Parse};
use serde_json::json;

/// The shell hop of [`State`]'s call.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let launch = run.launch;
    if let Some((w, receiver)) = windows::receiver(launch) {
        match receiver {
            Receiver::Msys2 => {
                let intended = st.intended_text().to_string();
                if let Some(eval_text) =
                    bash(run, &intended, st.shell_text.clone(), st.payload.as_ref(), None)?
                {
                    st.eval_text = eval_text;
                }
            }
            Receiver::PowerShell => powershell(run, st, w),
            Receiver::Cmd => cmd(run, st, w),
        }
        return Ok(super::flow(run));
    }
    if launch.terminal.is_some() {
        return super::terminal::shell(run, st);
    }
    if let Intended::Argv(argv) = &st.intended {
        let argv = argv.clone();
        match st.joined.clone() {
            Some(joined) => joined_argv(run, &argv, &joined)?,
            None => argv_script(run, &argv)?,
        }
        return Ok(super::flow(run));
    }
    let intended = st.intended_text().to_string();
    // The argument the shell runs, as it reads its options (`bash -c -l TEXT`).
    let at = super::spawn::command_of(&st.argv).unwrap_or(st.argv.len().saturating_sub(1));
    let shell_text = st.argv.get(at).cloned().unwrap_or_default();
    match launch.spawn.shell {
        ShellId::Dash => dash(run, &intended, &shell_text)?,
        ShellId::FromArgv => unreachable!("string launches name their shell"),
        ShellId::Bash => {
            let login_note = (launch.spawn.login || super::spawn::login_of(&st.argv))
                .then(|| "login shell: profile files run first; check mode does not run them".to_string());
            if let Some(eval_text) = bash(run, &intended, shell_text, st.payload.as_ref(), login_note)? {
                st.eval_text = eval_text;
            }
        }
    }
    Ok(super::flow(run))
}

/// For argv calls: `(shell, script)` when argv runs a shell with `-c` / `-lc`.
pub(crate) fn shell_script_of_argv(argv: &[String]) -> Option<(ShellId, &str)> {
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

/// The hop where real bash receives `shell_text`: its parse of the script or of the wrapper,
/// and the words it hands `eval` (returned when the wrapper hands them on).
pub(crate) fn bash(
    run: &mut Run<'_>,
    intended: &str,
    shell_text: String,
    payload: Option<&Payload>,
    login_note: Option<String>,
) -> Result<Option<String>, CheckError> {
    let launch = run.launch;
    let Some(w) = &launch.wrapper else {
        // The text is the whole script.
        match run.same_bash(intended, &shell_text)? {
            None => run.push(
                Hop::Shell,
                WitnessKind::Real,
                Some(true),
                json!({ "text": shell_text }),
                login_note,
            ),
            Some(p) => {
                let m = classify::mechanism(intended, &shell_text);
                run.diverge(
                    Hop::Shell,
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
        return Ok(None);
    };
    let payload = payload.expect("wrapper payload");
    if !w.eval && !w.inner_shell {
        // The text is spliced into the wrapper: bash parses the whole wrapper. A text that
        // parses only at the end of input (a trailing backslash, an unterminated here-document)
        // takes in whatever the wrapper puts after it (`echo a \` then `\necho done` is `echo a
        // echo done`): the action depends on the wrapper's text, not the call's.
        let after = w.template.split_once("{{payload}}").map_or("", |(_, a)| a);
        if !after.is_empty()
            && matches!(run.validate(intended)?, Parse::EndOnly { .. })
            && run.validate(&shell_text)?.parses()
        {
            run.diverge(
                Hop::Shell,
                WitnessKind::Real,
                json!({ "text": shell_text, "after_text": after }),
                Mechanism::Other,
                true,
                intended,
                &shell_text,
                format!("the text parses only at the end of input (a trailing backslash or an unterminated here-document), and the wrapper puts {after:?} after it, which it takes in"),
            );
            return Ok(None);
        }
        match run.parse(&shell_text)? {
            Parse::Ok { canonical } => run.push(
                Hop::Shell,
                WitnessKind::Real,
                Some(true),
                json!({ "text": shell_text, "canonical": canonical }),
                login_note,
            ),
            // The whole script parses because the end of input closes it (a trailing
            // backslash, an unterminated here-document) and the text is its end: `bash -c` is
            // given exactly this script and accepts it, as it would the text alone (red team: Codex 0.20's
            // `{{payload}}` wrapper and `bash -c '…' \` were a false "diverges").
            Parse::EndOnly { message } if w.template.ends_with("{{payload}}") => run.push(
                Hop::Shell,
                WitnessKind::Real,
                Some(true),
                json!({ "text": shell_text, "end_only": message }),
                Some(
                    login_note.map_or(String::new(), |n| format!("{n}; "))
                        + "the script parses only at the end of input (a trailing backslash or an unterminated here-document), which bash -c accepts",
                ),
            ),
            Parse::Error { message } | Parse::EndOnly { message } => {
                // A parse bash abandons without a word exits 0: nothing tells the agent.
                let silent = message == spawn::ABANDONED;
                run.diverge(
                    Hop::Shell,
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
        return Ok(None);
    }
    // The payload words are expanded by the outer shell and handed to eval. Words with an
    // expansion that runs code are not handed to a witness: the outer shell would run it.
    if let Some(code) = crate::action::runs_code(&payload.words) {
        run.diverge(
            Hop::Shell,
            WitnessKind::Emulated,
            json!({ "words": payload.words, "runs": code }),
            Mechanism::ReExpansion,
            true,
            &payload.words,
            &payload.words,
            format!("the rendered payload leaves `{code}` to the outer shell, which expands it before the command is parsed: what runs depends on run time (check mode does not expand it)"),
        );
        return Ok(None);
    }
    let e = run.expand(&payload.words, false)?;
    let eval_text = e.args.join(" ");
    let receipt = json!({ "eval_args": e.args, "status": e.status, "diagnostics": e.diagnostics });
    if e.broke_out {
        run.diverge(Hop::Shell, WitnessKind::Real, receipt, Mechanism::QuoteConsumption, false, &payload.words, &eval_text, "the rendered payload is not one list of words: its quoting ends early and the rest runs as commands of the outer shell".into());
        return Ok(None);
    }
    if e.status != 0 {
        run.diverge(
            Hop::Shell,
            WitnessKind::Real,
            receipt,
            Mechanism::Other,
            false,
            &payload.words,
            &eval_text,
            format!("the outer shell fails expanding the payload: {}", e.diagnostics),
        );
        return Ok(None);
    }
    if w.inner_shell && e.args.len() != 1 {
        // `bash -c A B…` runs A with B… as $0 and the positional parameters.
        run.diverge(
            Hop::Shell,
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
        return Ok(None);
    }
    run.push(Hop::Shell, WitnessKind::Real, Some(true), receipt, login_note);
    Ok(Some(eval_text))
}

/// dash on `text`: `dash -n`, then the bash constructs dash reads otherwise.
pub(crate) fn dash(run: &mut Run<'_>, intended: &str, text: &str) -> Result<(), CheckError> {
    let receipt = json!({ "text": text, "shell": "dash" });
    if let Err(message) = run.dash_n(text)? {
        run.diverge(
            Hop::Shell,
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
        run.diverge(
            Hop::Shell,
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
    run.push(Hop::Shell, WitnessKind::Real, Some(true), receipt, None);
    Ok(())
}

/// An argv the harness joined into one text for `sh -c`: what dash hands the program.
fn joined_argv(run: &mut Run<'_>, argv: &[String], joined: &str) -> Result<(), CheckError> {
    let intended_shown = serde_json::to_string(argv).unwrap();
    if let Err(message) = run.dash_n(joined)? {
        run.diverge(
            Hop::Shell,
            WitnessKind::Real,
            json!({ "text": joined, "error": message }),
            Mechanism::QuoteConsumption,
            false,
            &intended_shown,
            joined,
            format!("sh cannot parse the joined argv: {message}"),
        );
        return Ok(());
    }
    // What dash hands the program: bash's word expansion with brace expansion off
    // stands in for dash's (quotes, parameters and field splitting agree; `$'…'` does
    // not, and is rare in an argv).
    // A command substitution (or arithmetic, or an operator expansion) in the joined text runs
    // in sh: the program gets its result. It is never expanded here (check mode runs nothing):
    // inside double quotes its result is one word, which a placeholder stands for; outside, how
    // it splits depends on run time.
    let mut stand_in = joined.to_string();
    for _ in 0..64 {
        match crate::action::runs_code_quoted(&stand_in) {
            Some((code, true)) if stand_in.contains(&code) => {
                stand_in = stand_in.replacen(&code, "IEC_RESULT", 1);
            }
            _ => break,
        }
    }
    let joined_raw = joined;
    let joined = stand_in.as_str();
    if let Some(code) = crate::action::runs_code(joined) {
        run.diverge(
            Hop::Shell,
            WitnessKind::Emulated,
            json!({ "text": joined, "runs": code }),
            Mechanism::ReExpansion,
            true,
            &intended_shown,
            joined_raw,
            format!("sh expands `{code}` of the joined text at run time: the program gets its result, not the element as written"),
        );
        return Ok(());
    }
    let e = run.expand(joined, true)?;
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
        run.diverge(
            Hop::Shell,
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
        run.push(Hop::Shell, WitnessKind::Real, Some(true), receipt, None);
    }
    Ok(())
}

/// An argv run as it is: a shell's `-c` script reaches it byte-exact (and was parsed as the
/// call's generation check); any other program gets the argv itself.
fn argv_script(run: &mut Run<'_>, argv: &[String]) -> Result<(), CheckError> {
    match shell_script_of_argv(argv) {
        Some((ShellId::Dash, s)) => dash(run, s, s)?,
        Some((_, s)) => run.push(
            Hop::Shell,
            WitnessKind::Real,
            Some(true),
            json!({ "text": s }),
            Some("argv[2] reaches the shell byte-exact; it parses (checked above)".into()),
        ),
        None => run.push(
            Hop::Shell,
            WitnessKind::Real,
            None,
            json!({}),
            Some("no shell: the argv is executed directly".into()),
        ),
    }
    Ok(())
}

/// Whether an unquoted word could be a pathname pattern: it holds `*` or `?`, or a `[` with a
/// `]` after it (dash's rule; an unmatched `[` is literal).
fn may_glob(word: &str) -> bool {
    word.contains(['*', '?']) || word.find('[').is_some_and(|i| word[i + 1..].contains(']'))
}

// ---------------------------------------------------------------------------------------------
// Windows

/// PowerShell: `-Command` joined the argv after it into the script (without a sender the text
/// is the script as written); the grammar parses it and compares it with the harness's script.
fn powershell(run: &mut Run<'_>, st: &mut State, w: &Windows) {
    let script = st.wrapper_text.clone().unwrap_or_else(|| st.text.clone());
    let received_script = if w.sender.is_some() {
        match powershell::cli_command(&st.received, windows::pwsh(w)) {
            Ok(s) => s,
            Err(e) => {
                run.diverge(
                    Hop::Shell,
                    Emulated,
                    json!({ "argv": st.received, "error": e.to_string() }),
                    Mechanism::Other,
                    false,
                    &script,
                    "",
                    format!("PowerShell's CLI finds no command to run: {e}"),
                );
                return;
            }
        }
    } else {
        script.clone()
    };
    let tree = grammar::parse(&received_script);
    let receipt = json!({
        "text": received_script,
        "statements": tree.statements.len(),
        "parser": "tree-sitter-powershell",
    });
    let same = received_script == script || {
        let want = grammar::parse(&script);
        tree.error_at.is_none() && want.error_at.is_none() && tree.sig == want.sig
    };
    if !same {
        let silent = tree.error_at.is_none();
        run.diverge(
            Hop::Shell,
            Emulated,
            receipt,
            classify::mechanism(&script, &received_script),
            silent,
            &script,
            &received_script,
            if silent {
                "PowerShell parses a different script than the harness passed".into()
            } else {
                "PowerShell cannot parse the script it received".into()
            },
        );
        return;
    }
    let note = "parse trees compared with tree-sitter-powershell";
    run.push(Hop::Shell, Emulated, Some(true), receipt, Some(note.into()));
    st.shell_text = received_script;
}

/// cmd.exe (the cmd emulator): the first line break ends the `/c` string, and phase 1 limits
/// the line's length.
fn cmd(run: &mut Run<'_>, st: &State, w: &Windows) {
    let s = &st.shell_text;
    let r = cmd::run_cmdline(
        &st.command_line,
        &cmd::CmdOptions {
            env: vec![],
            files: Default::default(),
            delayed: w.cmd_delayed_expansion,
        },
    );
    let receipt = json!({
        "text": r.executes,
        "expanded": r.expanded,
        "truncated": r.truncated,
        "too_long": r.too_long,
        "delayed_expansion": r.delayed,
    });
    if r.truncated {
        let received = r.executes.clone();
        run.diverge(Hop::Shell,
            Emulated,
            receipt,
            Mechanism::Truncation,
            true,
            s,
            &received,
            "cmd.exe ends the /c string at the first line break: only the first line runs, its exit code is returned and the rest is dropped without a message (goose#11259)".into(),
        );
        return;
    }
    if r.too_long {
        run.diverge(Hop::Shell,
            Emulated,
            receipt,
            Mechanism::Truncation,
            false,
            s,
            "",
            "the line after %VAR% expansion exceeds 8,191 characters: \"The command line is too long.\", nothing runs".into(),
        );
        return;
    }
    let note =
        "cmd runs the text as delivered (its %VAR% expansion is the text's meaning in cmd, not judged)";
    run.push(Hop::Shell, Emulated, Some(true), receipt, Some(note.into()));
}
