//! `iec-hook`: the Claude Code PreToolUse hook as a small binary (see the crate documentation).
//!
//! ```text
//! iec-hook [hook] [claude-code] [--launch ID] [--launch-file F]... [--record-intent] [--no-daemon]
//! iec-hook --daemon [--idle-exit SECS]
//! ```
//!
//! The hook always exits 0 (its decision travels as JSON on stdout); a usage error exits 1,
//! which Claude Code reports without blocking the call.

use iec_hook::{daemon, DaemonMode, Hook};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const USAGE: &str =
    "usage: iec-hook [hook] [claude-code] [--launch ID] [--launch-file F]... [--record-intent] [--no-daemon]
       iec-hook --daemon [--idle-exit SECS]";

/// What the command line asks for.
enum Run {
    Hook(Hook),
    Daemon(Option<u64>),
    Print(String),
}

fn main() -> ExitCode {
    match parse(lexopt::Parser::from_env()) {
        Ok(Run::Hook(hook)) => ExitCode::from(iec_hook::claude_code(&hook) as u8),
        Ok(Run::Daemon(idle)) => run_daemon(idle),
        Ok(Run::Print(text)) => {
            println!("{text}");
            ExitCode::SUCCESS
        }
        Err(e) => usage(&e),
    }
}

/// The command line, read left to right: `--help` and `--version` answer at once, the first
/// error ends it. `--daemon` serves and ignores the hook's options.
fn parse(mut p: lexopt::Parser) -> Result<Run, String> {
    use lexopt::Arg::{Long, Short, Value};
    let mut hook = Hook {
        launch: None,
        launch_files: vec![],
        record_intent: false,
        daemon: DaemonMode::from_env(),
        daemon_args: vec!["--daemon".into()],
    };
    let mut serve = false;
    let mut idle: Option<u64> = None;
    let mut first = true;
    while let Some(arg) = p.next().map_err(|e| e.to_string())? {
        match arg {
            Value(v) if first && v == "hook" => {}
            Value(v) if v == "claude-code" => {}
            Long("launch") => hook.launch = Some(value(&mut p, "--launch")?),
            Long("launch-file") => hook
                .launch_files
                .push(PathBuf::from(value(&mut p, "--launch-file")?)),
            Long("record-intent") => hook.record_intent = true,
            Long("no-daemon") => hook.daemon = DaemonMode::Off,
            Long("daemon") => serve = true,
            Long("idle-exit") => {
                let v = value(&mut p, "--idle-exit")?;
                idle = Some(
                    v.parse()
                        .map_err(|_| format!("--idle-exit takes seconds, got {v:?}"))?,
                );
            }
            Long("version") | Short('V') => {
                return Ok(Run::Print(format!("iec-hook {}", env!("CARGO_PKG_VERSION"))))
            }
            Long("help") | Short('h') => return Ok(Run::Print(USAGE.into())),
            Value(v) => {
                return Err(match v.to_str() {
                    Some(v) => format!("unexpected argument {v:?}"),
                    None => format!("argument {v:?} is not UTF-8"),
                })
            }
            Long(other) => return Err(format!("unexpected argument \"--{other}\"")),
            Short(other) => return Err(format!("unexpected argument \"-{other}\"")),
        }
        first = false;
    }
    Ok(if serve { Run::Daemon(idle) } else { Run::Hook(hook) })
}

/// The value of option `name` (`--name=V` or `--name V`, whatever V looks like).
fn value(p: &mut lexopt::Parser, name: &str) -> Result<String, String> {
    let v = p.value().map_err(|_| format!("{name} needs a value"))?;
    v.into_string()
        .map_err(|v| format!("the value of {name}, {v:?}, is not UTF-8"))
}

fn usage(e: &str) -> ExitCode {
    eprintln!("iec-hook: {e}\n{USAGE}");
    ExitCode::from(1)
}

fn run_daemon(idle: Option<u64>) -> ExitCode {
    let served = iec_core::config::Config::from_env()
        .map_err(anyhow::Error::from)
        .and_then(|c| {
            let idle = idle.map_or(c.daemon_idle, Duration::from_secs);
            daemon::serve(&daemon::socket_path()?, idle)
        });
    match served {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => {
            eprintln!("iec-hook: another daemon serves this socket");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("iec-hook --daemon: {e:#}");
            ExitCode::from(2)
        }
    }
}
