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

fn main() -> ExitCode {
    let mut args = std::env::args_os().skip(1).peekable();
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
    while let Some(a) = args.next() {
        let Some(a) = a.to_str().map(str::to_owned) else {
            return usage(&format!("argument {a:?} is not UTF-8"));
        };
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| -> Result<String, String> {
            match inline
                .clone()
                .or_else(|| args.next().and_then(|v| v.into_string().ok()))
            {
                Some(v) => Ok(v),
                None => Err(format!("{name} needs a value")),
            }
        };
        let step = match flag.as_str() {
            "hook" if first => Ok(()),
            "claude-code" => Ok(()),
            "--launch" => value("--launch").map(|v| hook.launch = Some(v)),
            "--launch-file" => value("--launch-file").map(|v| hook.launch_files.push(PathBuf::from(v))),
            "--record-intent" => {
                hook.record_intent = true;
                Ok(())
            }
            "--no-daemon" => {
                hook.daemon = DaemonMode::Off;
                Ok(())
            }
            "--daemon" => {
                serve = true;
                Ok(())
            }
            "--idle-exit" => value("--idle-exit").and_then(|v| {
                v.parse()
                    .map(|n| idle = Some(n))
                    .map_err(|_| format!("--idle-exit takes seconds, got {v:?}"))
            }),
            "--version" | "-V" => {
                println!("iec-hook {}", env!("CARGO_PKG_VERSION"));
                return ExitCode::SUCCESS;
            }
            "--help" | "-h" => {
                println!("{USAGE}");
                return ExitCode::SUCCESS;
            }
            other => Err(format!("unexpected argument {other:?}")),
        };
        if let Err(e) = step {
            return usage(&e);
        }
        first = false;
    }
    if serve {
        return run_daemon(idle);
    }
    ExitCode::from(iec_hook::claude_code(&hook) as u8)
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
