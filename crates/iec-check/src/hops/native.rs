//! The native hop: PowerShell builds a command line for each native program the script calls
//! (by the launch's native argument passing, emulated in `iec-windows`), and the program's own
//! parser (UCRT, or cmd's for a batch file) rebuilds its argv, compared element by element with
//! the PowerShell values the script meant. An argument the emulator cannot evaluate (a
//! variable, an array literal, …) leaves the hop, and the verdict, `unknown`.

use super::{Flow, State};
use crate::run::Run;
use crate::{classify, windows, CheckError};
use iec_core::{Hop, Mechanism, WitnessKind::Emulated};
use iec_windows::powershell::{self, grammar, intended_native_argv, PassingMode};
use serde_json::json;

/// The native hop of [`State`]'s call: the programs the script PowerShell received calls.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let mode = windows::passing_mode(run.launch);
    let calls = grammar::native_calls(&st.shell_text);
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
            let (m, a, b) = classify::argv_change(&intended_argv, &got);
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
            return Ok(Flow::Stop);
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
        // The one unknown without an attribution: the reason names the arguments.
        run.undecided = Some((None, reason));
    }
    Ok(Flow::Next)
}
