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
