//! The spawn hop: execve hands the process its argv byte-exact, within the kernel's limits;
//! with `--witness spawn` real bash reports what it received through a `BASH_ENV` witness.

use super::{Flow, Intended, State};
use crate::run::Run;
use crate::{CheckError, MAX_ARG_STRLEN};
use iec_core::{Hop, Mechanism, WitnessKind};
use iec_launches::{render, ShellId};
use iec_witness::spawn;
use serde_json::json;

/// The spawn hop of [`State`]'s call: the argv the harness starts its process with.
pub(crate) fn observe(run: &mut Run<'_>, st: &mut State) -> Result<Flow, CheckError> {
    let launch = run.launch;
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
