//! The spawn hop: execve hands the process its argv byte-exact, within the kernel's limits;
//! with `--witness spawn` real bash reports what it received through a `BASH_ENV` witness. On
//! Windows the sender renders the argv into one command line (emulated, `iec-windows`) and the
//! receiver rebuilds argv from it by its own rules: the MSYS2 runtime of Git Bash, PowerShell's
//! command-line tokenizer, cmd.exe's `/C` extraction.

use super::{Flow, Intended, State};
use crate::run::Run;
use crate::windows::{self, Receiver};
use crate::{classify, CheckError, MAX_ARG_STRLEN};
use iec_core::{Hop, Mechanism, WitnessKind, WitnessKind::Emulated, WitnessKind::Real};
use iec_launches::{render, ShellId, Windows};
use iec_windows::powershell::{self, grammar};
use iec_windows::{cmd, receive, RenderError};
use iec_witness::{spawn, Parse};
use serde_json::{json, Value};

/// The spawn hop of [`State`]'s call: the argv the harness starts its process with.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let launch = run.launch;
    if let Some((w, receiver)) = windows::receiver(launch) {
        return on_windows(run, st, w, receiver);
    }
    st.argv = match (&st.intended, &st.joined) {
        (_, Some(joined)) => render::spawn_argv(launch, joined, None),
        (Intended::Argv(argv), None) => render::spawn_argv(launch, "", Some(argv)),
        (Intended::Text(_), None) => {
            let text = st.wrapper_text.as_deref().unwrap_or(&st.text);
            render::spawn_argv(launch, text, None)
        }
    };
    let argv = st.argv.clone();
    Ok(match hop(run, &argv)? {
        true => Flow::Next,
        false => Flow::Stop,
    })
}

/// The execve hop: byte-exact, but no NUL and fewer than `MAX_ARG_STRLEN` bytes per argument.
pub(crate) fn hop(run: &mut Run<'_>, argv: &[String]) -> Result<bool, CheckError> {
    let receipt = json!({ "argv": argv });
    if let Some((i, a)) = argv.iter().enumerate().find(|(_, a)| a.len() >= MAX_ARG_STRLEN) {
        run.diverge(Hop::Spawn, WitnessKind::Emulated, receipt, Mechanism::Truncation, false, a, "", format!("argv[{i}] is {} bytes; execve fails with E2BIG for an argument of {MAX_ARG_STRLEN} bytes or more (the limit counts its NUL), nothing runs", a.len()));
        return Ok(false);
    }
    // The shell reads its arguments as bash's `shell.c` does: options may follow `-c`, and a
    // text that starts with `-` or `+` is read as more options (observed: `bash -c '-- echo
    // hi'`, `dash -c '+x echo'`): the shell fails before parsing anything.
    if let Some(Err(why)) = invocation(argv) {
        let shown = argv.last().cloned().unwrap_or_default();
        run.diverge(Hop::Spawn, WitnessKind::Emulated, receipt, Mechanism::Other, false, &shown, "", format!("the shell refuses its arguments (`{why}`: a text that starts with `-` or `+` is read as more options) and runs nothing"));
        return Ok(false);
    }
    if run.opts.spawn_witness && run.launch.spawn.shell == ShellId::Bash {
        let raw: Vec<Vec<u8>> = argv.iter().map(|a| a.as_bytes().to_vec()).collect();
        let got = spawn::bash_env_witness(&raw)?;
        let at = command_of(argv).unwrap_or(argv.len().saturating_sub(1));
        let sent = argv.get(at).map(|s| s.as_bytes()).unwrap_or_default();
        let got_s = String::from_utf8_lossy(&got).into_owned();
        if got != sent {
            run.diverge(
                Hop::Spawn,
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
        run.push(
            Hop::Spawn,
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

/// bash's reading of a shell's argv (`None` when argv\[0\] is not bash, sh or dash): the index
/// in `argv` of the command string, or the shell's refusal.
fn invocation(argv: &[String]) -> Option<Result<Option<usize>, String>> {
    let prog = argv.first()?;
    let name = prog.rsplit('/').next().unwrap_or(prog).trim_start_matches('-');
    if !matches!(name, "bash" | "sh" | "dash") {
        return None;
    }
    Some(iec_launches::invocation::bash_invocation(prog, &argv[1..]).map(|inv| inv.command.map(|i| i + 1)))
}

/// The index in `argv` of the text the shell runs (`bash -c -l TEXT`: 3), if it runs one.
pub(crate) fn command_of(argv: &[String]) -> Option<usize> {
    invocation(argv)?.ok()?
}

/// Whether the shell runs as a login shell (`-l`, `--login`, argv\[0\] `-bash`): profile files
/// run before the text.
pub(crate) fn login_of(argv: &[String]) -> bool {
    argv.first().is_some_and(|prog| {
        iec_launches::invocation::bash_invocation(prog, &argv[1..]).is_ok_and(|inv| inv.login)
    })
}

// ---------------------------------------------------------------------------------------------
// Windows

/// `CreateProcessW`'s limit on lpCommandLine, in UTF-16 units including the NUL.
const CREATE_PROCESS_MAX: usize = 32_767;

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
}

/// The spawn hop of a Windows launch: the sender renders `[spawn] argv` (with the script the
/// wrapper built) into one command line, and the receiver reads it.
fn on_windows(
    run: &mut Run<'_>,
    st: &mut State,
    w: &Windows,
    receiver: Receiver,
) -> Result<Flow, CheckError> {
    let script = st.wrapper_text.as_deref().unwrap_or(&st.text);
    st.argv = render::spawn_argv(run.launch, script, None);
    let Some(cl) = command_line(run, w, &st.argv) else {
        return Ok(Flow::Stop);
    };
    st.command_line = cl;
    match receiver {
        Receiver::Msys2 => msys2(run, st, w),
        Receiver::PowerShell => Ok(powershell(run, st, w)),
        Receiver::Cmd => Ok(cmd(run, st)),
    }
}

/// The sender's command line for `argv`.
fn render_cmdline(w: &Windows, argv: &[String]) -> Result<String, RenderError> {
    let sender = w.sender.as_deref().unwrap_or("node");
    if sender == "rust-std" && !w.raw_args.is_empty() {
        return iec_windows::render::rust_std_with(argv, false, &w.raw_args);
    }
    match iec_windows::render(sender, None, argv) {
        Ok(r) => r,
        Err(e) => Err(RenderError::Invalid(e.to_string())),
    }
}

/// The sender half of the process interface: renders the command line, or records why no
/// process starts (the sender refuses, or the line exceeds CreateProcess's limit).
fn command_line(run: &mut Run<'_>, w: &Windows, argv: &[String]) -> Option<String> {
    let sender = w.sender.clone().unwrap_or_default();
    let cl = match render_cmdline(w, argv) {
        Ok(cl) => cl,
        Err(e) => {
            let last = argv.last().cloned().unwrap_or_default();
            run.diverge(
                Hop::Spawn,
                Emulated,
                json!({ "argv": argv, "sender": sender, "error": e.to_string() }),
                Mechanism::Other,
                false,
                &last,
                "",
                format!("the {sender} sender refuses the argv, nothing starts: {e}"),
            );
            return None;
        }
    };
    let n = utf16_len(&cl) + 1;
    if n > CREATE_PROCESS_MAX {
        let last = argv.last().cloned().unwrap_or_default();
        run.diverge(Hop::Spawn,
            Emulated,
            json!({ "argv": argv, "sender": sender, "command_line_utf16_units": n }),
            Mechanism::Truncation,
            false,
            &last,
            "",
            format!("the command line is {n} UTF-16 units with its NUL; CreateProcessW takes at most {CREATE_PROCESS_MAX} (Node: ENAMETOOLONG), nothing runs"),
        );
        return None;
    }
    Some(cl)
}

/// The spawn hop diverges: the receiver rebuilt `got` from the command line of `sent` (the
/// argv the harness passed; argv\[0\] aside), with the first change, whose mechanism `detail`
/// explains.
fn rebuilt_otherwise(
    run: &mut Run<'_>,
    sent: &[String],
    got: &[String],
    receipt: Value,
    silent: bool,
    detail: impl FnOnce(Mechanism) -> String,
) {
    let (m, a, b) = classify::argv_change(&sent[1..], got.get(1..).unwrap_or_default());
    run.diverge(Hop::Spawn, Emulated, receipt, m, silent, &a, &b, detail(m));
}

/// Git Bash: the sender rendered `[bash.exe, -c, SCRIPT]` into one command line; the MSYS2
/// runtime in bash.exe rebuilds argv from it (dcrt0.cc build_argv/globify). What bash runs is
/// the word after `-c` in the argv MSYS2 built.
fn msys2(run: &mut Run<'_>, st: &mut State, w: &Windows) -> Result<Flow, CheckError> {
    let (argv, cl) = (&st.argv, &st.command_line);
    let glob = w.msys2_glob.unwrap_or(true);
    let ro = iec_windows::ReceiveOptions {
        msys2_root: w.msys2_root.clone(),
        ..Default::default()
    };
    let got = receive::msys2_with(cl, glob, &ro);
    let receipt = json!({ "command_line": cl, "argv": got, "receiver": "msys2", "glob": glob });
    let script_index = argv.iter().position(|a| a == "-c").map(|i| i + 1);
    let received_script = script_index.and_then(|i| got.get(i)).cloned().unwrap_or_default();
    if got.get(1..) != argv.get(1..) {
        // Real bash judges what it received.
        let parse = run.validate(&received_script)?;
        let silent = parse.parses();
        rebuilt_otherwise(run, argv, &got, receipt, silent, |m| {
            let what = match m {
                Mechanism::Truncation => "the MSYS2 runtime cuts the word (globify copies at most 8,186 characters into glob()'s pattern buffer)",
                Mechanism::QuoteConsumption => "the MSYS2 runtime removes backslashes (inside quotes a run of n backslashes arrives as ceil(n/2))",
                Mechanism::ArityChange => "the MSYS2 runtime splits or expands words (separators, brace and glob expansion)",
                _ => "the MSYS2 runtime rebuilds another argv than the harness passed",
            };
            let after = if silent {
                "bash still parses what it received, so it runs without an error"
            } else {
                "bash rejects what it received"
            };
            format!("{what}; {after}")
        });
        let shell_receipt = match &parse {
            Parse::Error { message } => json!({ "text": received_script, "error": message }),
            _ => json!({ "text": received_script, "parses": true }),
        };
        run.push(
            Hop::Shell,
            Real,
            None,
            shell_receipt,
            Some("not judged after the first divergence; real bash parsed what MSYS2 delivered".into()),
        );
        return Ok(Flow::Stop);
    }
    let note = "libuv quote_cmd_arg → MSYS2 build_argv reproduces the argv";
    run.push(Hop::Spawn, Emulated, Some(true), receipt, Some(note.into()));
    st.received = got;
    st.shell_text = received_script;
    Ok(Flow::Next)
}

/// PowerShell: its own tokenizer (UCRT for pwsh; CommandLineToArgvW rules for powershell.exe
/// 5.1, [INFERRED] in the spec) rebuilds argv.
fn powershell(run: &mut Run<'_>, st: &mut State, w: &Windows) -> Flow {
    let (argv, cl) = (&st.argv, &st.command_line);
    let pwsh = windows::pwsh(w);
    let (got, parser) = if pwsh {
        (receive::msvcrt(cl), "msvcrt")
    } else {
        (receive::commandlinetoargvw(cl), "commandlinetoargvw")
    };
    let receipt = json!({ "command_line": cl, "argv": got, "receiver": parser });
    if got.get(1..) != argv.get(1..) {
        let silent = powershell::cli_command(&got, pwsh)
            .map(|s| grammar::parse(&s).error_at.is_none())
            .unwrap_or(false);
        rebuilt_otherwise(run, argv, &got, receipt, silent, |_| {
            format!(
                "PowerShell's command-line tokenizer ({parser}) builds another argv than the harness passed"
            )
        });
        return Flow::Stop;
    }
    run.push(Hop::Spawn, Emulated, Some(true), receipt, None);
    st.received = got;
    Flow::Next
}

/// cmd.exe reads its own command line: the 8,191-character limit, the /C switch, and the /S or
/// rule-2 quote stripping (rule 1 needs an existing executable; the virtual directory is
/// empty).
fn cmd(run: &mut Run<'_>, st: &mut State) -> Flow {
    let (intended, cl) = (st.text.as_str(), &st.command_line);
    let n = utf16_len(cl);
    if n > cmd::CMD_MAX {
        run.diverge(Hop::Spawn,
            Emulated,
            json!({ "command_line_utf16_units": n, "receiver": "cmd" }),
            Mechanism::Truncation,
            false,
            intended,
            "",
            format!("cmd.exe accepts at most {} characters on its command line; it prints \"The command line is too long.\" and runs nothing", cmd::CMD_MAX),
        );
        return Flow::Stop;
    }
    let Some((sw, s)) = cmd::extract(cl, &|_| false) else {
        run.diverge(
            Hop::Spawn,
            Emulated,
            json!({ "command_line": cl, "receiver": "cmd" }),
            Mechanism::Other,
            false,
            intended,
            "",
            "cmd.exe finds no /C switch on its command line and starts interactively".into(),
        );
        return Flow::Stop;
    };
    let receipt = json!({
        "command_line": cl,
        "receiver": "cmd",
        "switches": { "s": sw.s, "d": sw.d, "v": sw.v },
        "command": s,
    });
    let blanks: &[char] = &[' ', '\t'];
    if s.trim_start_matches(blanks) != intended.trim_start_matches(blanks) {
        run.diverge(Hop::Spawn,
            Emulated,
            receipt,
            classify::mechanism(intended, &s),
            true,
            intended,
            &s,
            "cmd.exe extracts another command string than the harness meant: the sender's quoting (\\\" for \") means nothing to cmd, and /S or rule 2 drops the first and the last quote".into(),
        );
        return Flow::Stop;
    }
    run.push(Hop::Spawn, Emulated, Some(true), receipt, None);
    st.shell_text = s;
    Flow::Next
}
