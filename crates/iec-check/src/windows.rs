//! Windows launches (`[windows]` table): the harness's argv is rendered into one command line by
//! an emulated sender (`iec-windows`), parsed back by the emulated receiver (MSYS2 `bash.exe`,
//! `powershell.exe`/`pwsh.exe`, `cmd.exe`), and the receiver's language parse is judged by the
//! real receiver where it can run here (bash, through the witness pool) or by a grammar
//! (tree-sitter-powershell, in `iec-windows`) and the `iec-windows` emulators where it cannot.
//!
//! A Windows launch walks its plan like any other (see [`crate::hops`]); each hop file has the
//! part for each receiver: `tool-input` (structured-decode) → `wrapper` (harness template for
//! Git Bash, script prefix/suffix for PowerShell) → `spawn` (process-interface: sender →
//! receiver, `emulated`) → `shell` (shell-parse: real bash for Git Bash; PowerShell by its
//! grammar, cmd by the emulator) → `eval` (Git Bash wrappers with eval) → `native` (child-argv:
//! PowerShell's native argument passing, then the program's UCRT argv). This file reads the
//! call the plan starts from.

use crate::hops::{Intended, State};
use crate::run::Run;
use crate::CheckError;
use iec_core::{Call, CheckReport};
use iec_launches::{InputShape, Launch, Windows};
use iec_windows::powershell::{grammar, PassingMode};
use serde_json::{json, Value};

/// The receiver of a Windows launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Receiver {
    /// Git Bash: MSYS2 `bash.exe`.
    Msys2,
    /// `powershell.exe` 5.1 or `pwsh.exe` 7.
    PowerShell,
    /// `cmd.exe`.
    Cmd,
}

/// The Windows table of `launch` and its receiver (`None` for a POSIX or terminal launch).
pub(crate) fn receiver(launch: &Launch) -> Option<(&Windows, Receiver)> {
    let w = launch.windows.as_ref()?;
    let r = match w.receiver.as_str() {
        "msys2" => Receiver::Msys2,
        "powershell" => Receiver::PowerShell,
        "cmd" => Receiver::Cmd,
        other => unreachable!("receiver {other} is refused when the launch loads"),
    };
    Some((w, r))
}

/// Whether the launch runs `pwsh.exe` (PowerShell 7) rather than `powershell.exe` 5.1.
pub(crate) fn pwsh(w: &Windows) -> bool {
    w.powershell.as_deref() == Some("7")
}

/// The native-argument passing of a PowerShell launch.
pub(crate) fn passing_mode(launch: &Launch) -> PassingMode {
    let w = launch.windows.as_ref();
    PassingMode::of_launch(
        w.and_then(|w| w.powershell.as_deref()),
        w.and_then(|w| w.native_passing.as_deref()),
    )
}

/// The state a Windows launch's plan starts from, or `None` when the call is refused before the
/// first hop (`report` then says why): the command must be a string without NUL that parses in
/// the language of the receiving shell.
pub(crate) fn state(
    run: &Run<'_>,
    receiver: Receiver,
    call: &Call,
    report: &mut CheckReport,
) -> Result<Option<State>, CheckError> {
    let launch = run.launch;
    let text = match (launch.input, launch.command_of(&call.input)) {
        (InputShape::String, Some(Value::String(s))) => s.clone(),
        (_, v) => {
            report.reason = Some(format!(
                "the call's input has no string `command` (got {}); the tool would reject it",
                v.map(|v| v.to_string()).unwrap_or_else(|| "nothing".into())
            ));
            return Ok(None);
        }
    };
    if let Some(i) = text.bytes().position(|b| b == 0) {
        report.reason = Some(format!(
            "the text holds a NUL byte at offset {i}; no Windows command line can carry it"
        ));
        report.attribution = Some("generation".into());
        return Ok(None);
    }
    // Generation check: the emitted text must parse in the language of the receiving shell.
    match receiver {
        Receiver::Msys2 => {
            if !crate::parses_as_bash(run, &text, report)? {
                return Ok(None);
            }
        }
        Receiver::PowerShell => {
            // PowerShell's tokenizer reads ‘ ’ ‚ ‛ as single and “ ” „ as double quotes
            // (SpecialChars.IsSingleQuote/IsDoubleQuote); the grammar and the argument parser
            // used here do not, so such a text is not judged (`'don’t'` ends after `don`).
            if let Some(c) = text.chars().find(|c| ('\u{2018}'..='\u{201E}').contains(c)) {
                report.reason = Some(format!(
                    "PowerShell reads U+{:04X} ({c}) as a quote, which the PowerShell grammar used here does not model: not judged",
                    c as u32
                ));
                return Ok(None);
            }
            if let Some(at) = grammar::error_at(&text) {
                report.reason = Some(format!(
                    "generation: the emitted text does not parse as PowerShell (tree-sitter-powershell: syntax error at byte {at})"
                ));
                report.attribution = Some("generation".into());
                return Ok(None);
            }
        }
        Receiver::Cmd => {} // no grammar; every text is a command line to cmd
    }
    Ok(Some(State::new(
        Intended::Text(text.clone()),
        json!({ "command": text }),
    )))
}
