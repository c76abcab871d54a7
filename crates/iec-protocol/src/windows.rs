//! Windows launches (`[windows]` table): the harness's argv is rendered into one command line by
//! an emulated sender (`iec-windows`), parsed back by the emulated receiver (MSYS2 `bash.exe`,
//! `powershell.exe`/`pwsh.exe`, `cmd.exe`), and the receiver's language parse is judged by the
//! real receiver where it can run here (bash, through the witness pool) or by a grammar
//! (tree-sitter-powershell) and the `iec-windows` emulators where it cannot.
//!
//! Hops: `tool-input` (structured-decode) → `wrapper` (harness template or script prefix/suffix)
//! → `spawn` (process-interface: sender → receiver, `emulated`) → `shell` (shell-parse: real bash
//! for Git Bash; PowerShell by its grammar, cmd by the emulator) → `eval` (Git Bash wrappers with
//! eval) → `native` (child-argv: PowerShell's native argument passing, then the program's UCRT
//! argv).

use super::{classify, finish, CheckError, Options, Run};
use iec_core::{Call, CheckReport, Hop, Mechanism, Verdict, WitnessKind::Emulated, WitnessKind::Real};
use iec_launches::{render, InputShape, Launch, Windows};
use iec_windows::powershell::{self, PassingMode, PsArg};
use iec_windows::{cmd, receive, RenderError};
use iec_witness::{BashPool, Parse};
use serde_json::{json, Value};

/// `CreateProcessW`'s limit on lpCommandLine, in UTF-16 units including the NUL.
const CREATE_PROCESS_MAX: usize = 32_767;

/// Checks a call on a Windows launch (dispatched from [`crate::check`]).
pub(crate) fn check(
    launch: &Launch,
    w: &Windows,
    call: &Call,
    pool: &BashPool,
    opts: Options,
) -> Result<CheckReport, CheckError> {
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
    let mut report = crate::unknown_report(launch, call);
    let text = match (launch.input, launch.command_of(&call.input)) {
        (InputShape::String, Some(Value::String(s))) => s.clone(),
        (_, v) => {
            report.reason = Some(format!(
                "the call's input has no string `command` (got {}); the tool would reject it",
                v.map(|v| v.to_string()).unwrap_or_else(|| "nothing".into())
            ));
            return Ok(report);
        }
    };
    if let Some(i) = text.bytes().position(|b| b == 0) {
        report.reason = Some(format!(
            "the text holds a NUL byte at offset {i}; no Windows command line can carry it"
        ));
        report.attribution = Some("generation".into());
        return Ok(report);
    }
    // Generation check: the emitted text must parse in the language of the receiving shell.
    match w.receiver.as_str() {
        "msys2" => {
            if let Parse::Error { message } = run.validate(&text)? {
                report.reason = Some(format!(
                    "generation: the emitted text does not parse as bash: {message}"
                ));
                report.attribution = Some("generation".into());
                return Ok(report);
            }
        }
        "powershell" => {
            // PowerShell's tokenizer reads ‘ ’ ‚ ‛ as single and “ ” „ as double quotes
            // (SpecialChars.IsSingleQuote/IsDoubleQuote); the grammar and the argument parser
            // used here do not, so such a text is not judged (`'don’t'` ends after `don`).
            if let Some(c) = text.chars().find(|c| ('\u{2018}'..='\u{201E}').contains(c)) {
                report.reason = Some(format!(
                    "PowerShell reads U+{:04X} ({c}) as a quote, which the PowerShell grammar used here does not model: not judged",
                    c as u32
                ));
                return Ok(report);
            }
            if let Some(at) = ps::error_at(&text) {
                report.reason = Some(format!(
                    "generation: the emitted text does not parse as PowerShell (tree-sitter-powershell: syntax error at byte {at})"
                ));
                report.attribution = Some("generation".into());
                return Ok(report);
            }
        }
        _ => {} // cmd: no grammar; every text is a command line to cmd
    }
    if !crate::hops::tool_input::hop(&mut run, json!({ "command": text }), &text)? {
        return Ok(finish(run, report));
    }
    let mut unknown = None;
    match w.receiver.as_str() {
        "msys2" => git_bash(&mut run, w, &text)?,
        "powershell" => unknown = powershell_path(&mut run, w, &text)?,
        "cmd" => cmd_path(&mut run, w, &text),
        other => unreachable!("receiver {other} is refused when the launch loads"),
    }
    let mut report = finish(run, report);
    if report.first_divergence.is_none() {
        if let Some(reason) = unknown {
            report.verdict = Verdict::Unknown;
            report.reason = Some(reason);
        }
    }
    Ok(report)
}

fn utf16_len(s: &str) -> usize {
    s.encode_utf16().count()
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

/// How `got` differs from `sent` (argv without argv[0]): mechanism, intended and received text.
fn argv_change(sent: &[String], got: &[String]) -> (Mechanism, String, String) {
    if sent.len() == got.len() {
        let i = (0..sent.len()).find(|&i| sent[i] != got[i]).unwrap_or(0);
        let (a, b) = (&sent[i], &got[i]);
        return (classify::mechanism(a, b), a.clone(), b.clone());
    }
    let (a, b) = (sent.join(" "), got.join(" "));
    let m = if b.len() < a.len() && a.starts_with(&b) {
        Mechanism::Truncation
    } else {
        Mechanism::ArityChange
    };
    (m, a, b)
}

// ---------------------------------------------------------------------------------------------
// Git Bash (MSYS2 bash.exe)

fn git_bash(run: &mut Run<'_>, w: &Windows, intended: &str) -> Result<(), CheckError> {
    let launch = run.launch;
    // Hop: wrapper (the same harness code as on POSIX).
    let Some((script, payload)) = crate::hops::wrapper::hop(run, intended)? else {
        return Ok(());
    };

    // Hop: process interface. The sender renders [bash.exe, -c, SCRIPT] into one command line;
    // the MSYS2 runtime in bash.exe rebuilds argv from it (dcrt0.cc build_argv/globify).
    let argv = render::spawn_argv(launch, &script, None);
    let Some(cl) = command_line(run, w, &argv) else {
        return Ok(());
    };
    let glob = w.msys2_glob.unwrap_or(true);
    let ro = iec_windows::ReceiveOptions {
        msys2_root: w.msys2_root.clone(),
        ..Default::default()
    };
    let got = receive::msys2_with(&cl, glob, &ro);
    let receipt = json!({ "command_line": cl, "argv": got, "receiver": "msys2", "glob": glob });
    let script_index = argv.iter().position(|a| a == "-c").map(|i| i + 1);
    if got.get(1..) != argv.get(1..) {
        let (m, a, b) = argv_change(&argv[1..], got.get(1..).unwrap_or_default());
        // What bash runs is the word after -c in the argv MSYS2 built: real bash judges it.
        let received_script = script_index.and_then(|i| got.get(i)).cloned().unwrap_or_default();
        let parse = run.validate(&received_script)?;
        let silent = parse.parses();
        let what = match m {
            Mechanism::Truncation => "the MSYS2 runtime cuts the word (globify copies at most 8,186 characters into glob()'s pattern buffer)".to_string(),
            Mechanism::QuoteConsumption => "the MSYS2 runtime removes backslashes (inside quotes a run of n backslashes arrives as ceil(n/2))".to_string(),
            Mechanism::ArityChange => "the MSYS2 runtime splits or expands words (separators, brace and glob expansion)".to_string(),
            _ => "the MSYS2 runtime rebuilds another argv than the harness passed".to_string(),
        };
        run.diverge(
            Hop::Spawn,
            Emulated,
            receipt,
            m,
            silent,
            &a,
            &b,
            format!(
                "{what}; {}",
                if silent {
                    "bash still parses what it received, so it runs without an error"
                } else {
                    "bash rejects what it received"
                }
            ),
        );
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
        return Ok(());
    }
    run.push(
        Hop::Spawn,
        Emulated,
        Some(true),
        receipt,
        Some("libuv quote_cmd_arg → MSYS2 build_argv reproduces the argv".into()),
    );

    // Hop: shell parse (real bash on what MSYS2 delivered) and eval.
    let shell_text = script_index.and_then(|i| got.get(i)).cloned().unwrap_or_default();
    crate::hops::shell::bash_hops(run, intended, shell_text, payload.as_ref(), None)
}

// ---------------------------------------------------------------------------------------------
// PowerShell

/// The argv a native call means: its PowerShell values, then, after `--%`, what the program's
/// own parser makes of the raw text (PowerShell passes that text as written). `None` for an
/// array literal, whose elements PowerShell passes as source text.
pub fn intended_native_argv(program: &str, args_text: &str) -> Option<Vec<String>> {
    let mut argv = Vec::new();
    for a in powershell::parse_args(args_text, &[], &[]) {
        match a {
            PsArg::Value(v) => argv.push(v),
            PsArg::Verbatim(raw) => {
                argv.extend(powershell::program_view(program, &format!("\"{program}\" {raw}")))
            }
            PsArg::ArrayText(_) => return None,
        }
    }
    Some(argv)
}

/// The native-argument passing a PowerShell launch uses.
pub fn passing_mode(w: &Windows) -> PassingMode {
    let pwsh = w.powershell.as_deref() == Some("7");
    match w.native_passing.as_deref() {
        Some("ps51") => PassingMode::Ps51,
        Some("legacy") => PassingMode::Legacy,
        Some("standard") => PassingMode::Standard,
        Some("windows") => PassingMode::Windows,
        _ if pwsh => PassingMode::Windows,
        _ => PassingMode::Ps51,
    }
}

/// Returns the reason when a hop cannot be judged (the verdict is then `unknown`).
fn powershell_path(run: &mut Run<'_>, w: &Windows, intended: &str) -> Result<Option<String>, CheckError> {
    let launch = run.launch;
    let pwsh = w.powershell.as_deref() == Some("7");
    let mode = passing_mode(w);
    let prefix = w.script_prefix.clone().unwrap_or_default();
    let suffix = w.script_suffix.clone().unwrap_or_default();
    let script = format!("{prefix}{intended}{suffix}");

    // Hop: wrapper. The script must hold the harness's statements and then exactly the
    // command's statements (by the grammar's parse of each piece).
    if w.script_prefix.is_some() || w.script_suffix.is_some() {
        let whole = ps::parse(&script);
        let mut pieces = ps::parse(&prefix).statements;
        pieces.extend(ps::parse(intended).statements);
        pieces.extend(ps::parse(&suffix).statements);
        let receipt = json!({ "text": script, "statements": whole.statements.len() });
        if whole.error_at.is_none() && whole.statements == pieces {
            run.push(Hop::Wrapper,
                Emulated,
                Some(true),
                receipt,
                Some("the harness's prefix/suffix statements surround the command's own (tree-sitter-powershell)".into()),
            );
        } else {
            let silent = whole.error_at.is_none();
            run.diverge(
                Hop::Wrapper,
                Emulated,
                receipt,
                Mechanism::Other,
                silent,
                intended,
                &script,
                if silent {
                    "the harness's prefix/suffix changes how PowerShell groups the command's statements"
                        .into()
                } else {
                    "the script with the harness's prefix/suffix no longer parses as PowerShell".into()
                },
            );
            return Ok(None);
        }
    }

    // Hop: process interface. PowerShell's own tokenizer (UCRT for pwsh; CommandLineToArgvW
    // rules for powershell.exe 5.1, [INFERRED] in the spec) rebuilds argv.
    let received_script = if w.sender.is_some() {
        let argv = render::spawn_argv(launch, &script, None);
        let Some(cl) = command_line(run, w, &argv) else {
            return Ok(None);
        };
        let (got, parser) = if pwsh {
            (receive::msvcrt(&cl), "msvcrt")
        } else {
            (receive::commandlinetoargvw(&cl), "commandlinetoargvw")
        };
        let receipt = json!({ "command_line": cl, "argv": got, "receiver": parser });
        if got.get(1..) != argv.get(1..) {
            let (m, a, b) = argv_change(&argv[1..], got.get(1..).unwrap_or_default());
            let silent = powershell::cli_command(&got, pwsh)
                .map(|s| ps::parse(&s).error_at.is_none())
                .unwrap_or(false);
            run.diverge(Hop::Spawn,
                Emulated,
                receipt,
                m,
                silent,
                &a,
                &b,
                format!("PowerShell's command-line tokenizer ({parser}) builds another argv than the harness passed"),
            );
            return Ok(None);
        }
        run.push(Hop::Spawn, Emulated, Some(true), receipt, None);
        match powershell::cli_command(&got, pwsh) {
            Ok(s) => s,
            Err(e) => {
                run.diverge(
                    Hop::Shell,
                    Emulated,
                    json!({ "argv": got, "error": e.to_string() }),
                    Mechanism::Other,
                    false,
                    &script,
                    "",
                    format!("PowerShell's CLI finds no command to run: {e}"),
                );
                return Ok(None);
            }
        }
    } else {
        script.clone()
    };

    // Hop: shell parse. `-Command` joined the remaining argv; the grammar parses the script.
    let tree = ps::parse(&received_script);
    let receipt = json!({
        "text": received_script,
        "statements": tree.statements.len(),
        "parser": "tree-sitter-powershell",
    });
    let same = received_script == script || {
        let want = ps::parse(&script);
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
        return Ok(None);
    }
    run.push(
        Hop::Shell,
        Emulated,
        Some(true),
        receipt,
        Some("parse trees compared with tree-sitter-powershell".into()),
    );

    // Hop: native argument passing to the programs the script calls.
    let calls = ps::native_calls(&received_script);
    let mut shown = Vec::new();
    let mut unjudged = Vec::new();
    for c in &calls {
        if let Some(why) = &c.unjudgeable {
            unjudged.push(format!("`{}`: {why}", c.program));
            shown.push(json!({ "program": c.program, "arguments": c.args_text, "not_judged": why }));
            continue;
        }
        let Some(intended_argv) = intended_native_argv(&c.program, &c.args_text) else {
            let why = "an array literal, whose intended argv the emulator does not define";
            unjudged.push(format!("`{}`: {why}", c.program));
            shown.push(json!({ "program": c.program, "arguments": c.args_text, "not_judged": why }));
            continue;
        };
        let (cl, got) = powershell::native(&c.args_text, mode, &c.program, &[], &[]);
        shown.push(json!({ "program": c.program, "arguments": c.args_text, "values": intended_argv, "command_line": cl, "argv": got }));
        if got != intended_argv {
            let (m, a, b) = argv_change(&intended_argv, &got);
            let m = if got.len() != intended_argv.len() {
                Mechanism::ArityChange
            } else {
                m
            };
            let mode_name = match mode {
                PassingMode::Ps51 => "Windows PowerShell 5.1",
                PassingMode::Legacy => "PowerShell 7 (Legacy)",
                PassingMode::Standard => "PowerShell 7 (Standard)",
                PassingMode::Windows => "PowerShell 7 (Windows mode)",
            };
            run.diverge(Hop::Native,
                Emulated,
                json!({ "argv": got, "calls": shown, "mode": format!("{mode:?}") }),
                m,
                true,
                &a,
                &b,
                format!(
                    "{mode_name} writes `{}`'s command line without escaping embedded quotes; the program's argv differs from the PowerShell values (the program runs; what it does with the changed argument is not judged)",
                    c.program
                ),
            );
            return Ok(None);
        }
    }
    let note = if calls.is_empty() {
        Some(
            "the script calls no native program (cmdlets and aliases bind their arguments inside PowerShell)"
                .to_string(),
        )
    } else {
        None
    };
    if unjudged.is_empty() {
        run.push(Hop::Native,
            Emulated,
            Some(true),
            json!({ "argv": shown.iter().filter_map(|c| c.get("argv").cloned()).collect::<Vec<_>>(), "calls": shown, "mode": format!("{mode:?}") }),
            note,
        );
        Ok(None)
    } else {
        let reason = format!(
            "the native-argument hop cannot be judged: {}",
            unjudged.join("; ")
        );
        run.push(
            Hop::Native,
            Emulated,
            None,
            json!({ "calls": shown, "mode": format!("{mode:?}") }),
            Some(reason.clone()),
        );
        Ok(Some(reason))
    }
}

// ---------------------------------------------------------------------------------------------
// cmd.exe

fn cmd_path(run: &mut Run<'_>, w: &Windows, intended: &str) {
    let launch = run.launch;
    let argv = render::spawn_argv(launch, intended, None);
    let Some(cl) = command_line(run, w, &argv) else {
        return;
    };
    // Hop: process interface. cmd.exe reads its own command line: the 8,191-character limit, the
    // /C switch, and the /S or rule-2 quote stripping (rule 1 needs an existing executable;
    // the virtual directory is empty).
    let n = utf16_len(&cl);
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
        return;
    }
    let Some((sw, s)) = cmd::extract(&cl, &|_| false) else {
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
        return;
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
        return;
    }
    run.push(Hop::Spawn, Emulated, Some(true), receipt, None);

    // Hop: shell parse (the cmd emulator: first-LF cut, phase 1 length limit).
    let r = cmd::run_cmdline(
        &cl,
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
            &s,
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
            &s,
            "",
            "the line after %VAR% expansion exceeds 8,191 characters: \"The command line is too long.\", nothing runs".into(),
        );
        return;
    }
    run.push(
        Hop::Shell,
        Emulated,
        Some(true),
        receipt,
        Some(
            "cmd runs the text as delivered (its %VAR% expansion is the text's meaning in cmd, not judged)"
                .into(),
        ),
    );
}

// ---------------------------------------------------------------------------------------------
// PowerShell grammar (tree-sitter-powershell)

pub(crate) mod ps {
    use tree_sitter::{Node, Parser};

    /// A parse: statement signatures, the whole tree's signature, and the first error.
    pub struct Tree {
        pub statements: Vec<String>,
        pub sig: String,
        pub error_at: Option<usize>,
    }

    thread_local! {
        static PARSER: std::cell::RefCell<Parser> = std::cell::RefCell::new({
            let mut p = Parser::new();
            p.set_language(&tree_sitter_powershell::LANGUAGE.into())
                .expect("tree-sitter-powershell grammar matches the tree-sitter runtime");
            p
        });
    }

    thread_local! {
        /// First syntax errors by text: every PowerShell launch asks it of the same emitted
        /// text, and error recovery on a text that does not parse is the costly part.
        static ERRORS: std::cell::RefCell<std::collections::HashMap<String, Option<usize>>> =
            std::cell::RefCell::new(std::collections::HashMap::new());
    }

    /// [`parse`]'s `error_at`, memoised per thread (1,024 entries; a text over 16 KiB is kept
    /// as its length and SHA-256, so `--launch all` parses a long text once, not once per
    /// PowerShell launch, without keeping copies of it).
    pub fn error_at(src: &str) -> Option<usize> {
        let key = if src.len() > 16 * 1024 {
            // A NUL never starts a text that gets here (texts with NUL are refused first).
            format!("\0{}:{}", src.len(), iec_core::limits::sha256_hex(src.as_bytes()))
        } else {
            src.to_string()
        };
        if let Some(v) = ERRORS.with(|m| m.borrow().get(&key).copied()) {
            return v;
        }
        let v = parse(src).error_at;
        ERRORS.with(|m| {
            let mut m = m.borrow_mut();
            if m.len() >= 1024 {
                m.clear();
            }
            m.insert(key, v);
        });
        v
    }

    fn with_tree<T>(src: &str, f: impl FnOnce(Node<'_>) -> T) -> Option<T> {
        PARSER.with(|p| {
            let t = p.borrow_mut().parse(src, None)?;
            Some(f(t.root_node()))
        })
    }

    /// Node kinds that carry no meaning for execution.
    fn skipped(kind: &str) -> bool {
        matches!(kind, "command_argument_sep" | "comment" | "empty_statement")
    }

    /// A node's structure with its leaf texts (strings whole, as their source text).
    fn sig(n: Node<'_>, src: &str, out: &mut String) {
        sig_of(n, src, out, false)
    }

    /// [`sig`], or with `native_masked` each native call reduced to its program name (its
    /// arguments are compared as argv instead) and white-space-only tokens left out.
    fn sig_of(n: Node<'_>, src: &str, out: &mut String, native_masked: bool) {
        let kind = n.kind();
        if skipped(kind) {
            return;
        }
        if native_masked {
            if n.child_count() == 0 && src[n.byte_range()].trim().is_empty() {
                return;
            }
            if kind == "command" {
                let mut c = n.walk();
                let name = n.children(&mut c).find(|k| k.kind() == "command_name");
                if let Some(program) = name.map(|name| &src[name.byte_range()]) {
                    if is_native(program) {
                        out.push_str("(native=");
                        out.push_str(program);
                        out.push(')');
                        return;
                    }
                }
            }
        }
        if n.child_count() == 0 || kind.contains("string") || kind == "stop_parsing" {
            out.push_str(kind);
            out.push('=');
            out.push_str(&src[n.byte_range()]);
            out.push('\u{1}');
            return;
        }
        out.push('(');
        out.push_str(kind);
        let mut c = n.walk();
        for ch in n.children(&mut c) {
            sig_of(ch, src, out, native_masked);
        }
        out.push(')');
    }

    /// The script's structure with native calls' arguments left out; `None` when it does not parse.
    pub fn shape(src: &str) -> Option<String> {
        with_tree(src, |root| {
            if first_error(root).is_some() {
                return None;
            }
            let mut s = String::new();
            sig_of(root, src, &mut s, true);
            Some(s)
        })
        .flatten()
    }

    fn first_error(n: Node<'_>) -> Option<usize> {
        if n.is_error() || n.is_missing() {
            return Some(n.start_byte());
        }
        if !n.has_error() {
            return None;
        }
        let mut c = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut c).collect();
        kids.into_iter().find_map(first_error).or(Some(n.start_byte()))
    }

    pub fn parse(src: &str) -> Tree {
        with_tree(src, |root| {
            let mut statements = Vec::new();
            let mut c = root.walk();
            for list in root.children(&mut c) {
                if list.kind() != "statement_list" {
                    if !skipped(list.kind()) {
                        let mut s = String::new();
                        sig(list, src, &mut s);
                        statements.push(s);
                    }
                    continue;
                }
                let mut c2 = list.walk();
                for st in list.children(&mut c2) {
                    if skipped(st.kind()) {
                        continue;
                    }
                    let mut s = String::new();
                    sig(st, src, &mut s);
                    statements.push(s);
                }
            }
            let mut whole = String::new();
            sig(root, src, &mut whole);
            Tree {
                statements,
                sig: whole,
                error_at: first_error(root),
            }
        })
        .unwrap_or(Tree {
            statements: vec![],
            sig: String::new(),
            error_at: Some(0),
        })
    }

    /// A native program called by the script, with the source text of its arguments.
    pub struct NativeCall {
        /// The command name as written.
        pub program: String,
        /// The source text of its arguments (redirections blanked).
        pub args_text: String,
        /// Why its argv cannot be judged in check mode, if it cannot.
        pub unjudgeable: Option<String>,
        /// Byte range of the whole command in the source.
        pub command: std::ops::Range<usize>,
        /// Byte range of its arguments (`command_elements`), if it has any.
        pub elements: Option<std::ops::Range<usize>>,
        /// Whether the arguments include a redirection.
        pub redirected: bool,
    }

    /// Windows PowerShell 5.1 default aliases (and a few 7.x ones) that name cmdlets: their
    /// arguments are bound inside PowerShell, not passed on a command line.
    const ALIASES: &[&str] = &[
        "%", "?", "ac", "asnp", "cat", "cd", "chdir", "clc", "clear", "clhy", "cli", "clp", "cls", "clv",
        "cnsn", "compare", "copy", "cp", "cpi", "cpp", "curl", "cvpa", "dbp", "del", "diff", "dir", "dnsn",
        "ebp", "echo", "epal", "epcsv", "epsn", "erase", "etsn", "exsn", "fc", "fhx", "fl", "foreach", "ft",
        "fw", "gal", "gbp", "gc", "gcb", "gci", "gcm", "gcs", "gdr", "ghy", "gi", "gin", "gjb", "gl", "gm",
        "gmo", "gp", "gps", "gpv", "group", "gsn", "gsnp", "gsv", "gtz", "gu", "gv", "gwmi", "h", "history",
        "icm", "iex", "ihy", "ii", "ipal", "ipcsv", "ipmo", "ipsn", "irm", "ise", "iwmi", "iwr", "kill",
        "lp", "ls", "man", "md", "measure", "mi", "mount", "move", "mp", "mv", "nal", "ndr", "ni", "nmo",
        "npssc", "nsn", "nv", "ogv", "oh", "popd", "ps", "pushd", "pwd", "r", "rbp", "rcjb", "rcsn", "rd",
        "rdr", "ren", "ri", "rjb", "rm", "rmdir", "rmo", "rni", "rnp", "rp", "rsn", "rsnp", "rujb", "rv",
        "rvpa", "rwmi", "sajb", "sal", "saps", "sasv", "sbp", "sc", "scb", "select", "set", "shcm", "si",
        "sl", "sleep", "sls", "sort", "sp", "spjb", "spps", "spsv", "start", "stz", "sujb", "sv", "swmi",
        "tee", "trcm", "type", "wget", "where", "wjb", "write",
    ];

    /// Language keywords and statements that look like command names in the grammar.
    const KEYWORDS: &[&str] = &[
        "exit", "return", "break", "continue", "throw", "function", "filter", "param", "if", "else",
        "elseif", "foreach", "for", "while", "do", "until", "switch", "try", "catch", "finally", "trap",
        "begin", "process", "end", "data", "class", "enum", "using",
    ];

    fn is_native(name: &str) -> bool {
        let lower = name.to_ascii_lowercase();
        if ALIASES.contains(&lower.as_str()) || KEYWORDS.contains(&lower.as_str()) {
            return false;
        }
        let base = lower.rsplit(['\\', '/']).next().unwrap_or(&lower);
        // Verb-Noun names are cmdlets or functions; a path or a name with an extension is a file.
        let has_path = lower.contains(['\\', '/']) || base.contains('.');
        if !has_path && base.contains('-') {
            return false;
        }
        !name.starts_with('$')
    }

    /// Named node kinds the `iec-windows` argument parser evaluates as PowerShell does.
    fn judged_kind(kind: &str) -> bool {
        matches!(
            kind,
            "command_parameter"
                | "generic_token"
                | "command_argument_sep"
                | "array_literal_expression"
                | "unary_expression"
                | "string_literal"
                | "verbatim_string_characters"
                | "expandable_string_literal"
                | "integer_literal"
                | "decimal_integer_literal"
        )
    }

    fn unjudged_kind(n: Node<'_>) -> Option<String> {
        if n.is_named() && !judged_kind(n.kind()) {
            return Some(n.kind().to_string());
        }
        let mut c = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut c).collect();
        kids.into_iter().find_map(unjudged_kind)
    }

    /// Why the raw text after `--%` (the token itself left out) cannot be judged, if it cannot.
    /// PowerShell passes it as written, except that a pipe ends it and `%NAME%` is replaced
    /// from the environment.
    pub fn stop_parsing_unjudgeable(raw: &str) -> Option<&'static str> {
        if raw.contains('|') {
            return Some(
                "--% followed by a pipe: PowerShell ends the raw text there, the grammar used here does not",
            );
        }
        let mut parts = raw.split('%');
        parts.next();
        let mut rest: Vec<&str> = parts.collect();
        // `%NAME%` needs a closing `%` after a non-empty name.
        rest.pop();
        if rest.iter().any(|name| !name.is_empty()) {
            return Some("--% followed by `%NAME%`, which PowerShell replaces from the environment (not known in check mode)");
        }
        None
    }

    fn collect(n: Node<'_>, src: &str, out: &mut Vec<NativeCall>) {
        if n.kind() == "command" {
            let mut c = n.walk();
            let kids: Vec<Node<'_>> = n.children(&mut c).collect();
            if let Some(name) = kids.iter().find(|k| k.kind() == "command_name") {
                let program = src[name.byte_range()].to_string();
                if is_native(&program) {
                    let mut args_text = String::new();
                    let mut unjudgeable = None;
                    let mut redirected = false;
                    let elements = kids
                        .iter()
                        .find(|k| k.kind() == "command_elements")
                        .map(|k| k.byte_range());
                    if let Some(el) = kids.iter().find(|k| k.kind() == "command_elements") {
                        let mut c2 = el.walk();
                        for a in el.children(&mut c2) {
                            if a.kind().contains("redirection") {
                                redirected = true;
                                args_text.push(' ');
                                continue;
                            }
                            if unjudgeable.is_none() && a.kind() == "stop_parsing" {
                                let node = &src[a.byte_range()];
                                let raw = node.strip_prefix("--%").unwrap_or(node);
                                unjudgeable = stop_parsing_unjudgeable(raw).map(str::to_string);
                            } else if unjudgeable.is_none() {
                                unjudgeable = unjudged_kind(a).map(|k| match k.as_str() {
                                    "variable" => {
                                        "a variable, whose value is not known in check mode".to_string()
                                    }
                                    k => format!(
                                        "`{k}`, which the iec-windows argument parser does not evaluate"
                                    ),
                                });
                            }
                            args_text.push_str(&src[a.byte_range()]);
                        }
                    }
                    out.push(NativeCall {
                        program,
                        args_text: args_text.trim().to_string(),
                        unjudgeable,
                        command: n.byte_range(),
                        elements,
                        redirected,
                    });
                }
            }
        }
        let mut c = n.walk();
        let kids: Vec<Node<'_>> = n.children(&mut c).collect();
        for k in kids {
            collect(k, src, out);
        }
    }

    /// The native programs the script calls, in source order.
    pub fn native_calls(src: &str) -> Vec<NativeCall> {
        with_tree(src, |root| {
            let mut out = Vec::new();
            collect(root, src, &mut out);
            out
        })
        .unwrap_or_default()
    }
}
