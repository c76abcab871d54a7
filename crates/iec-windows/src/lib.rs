//! Faithful pure-Rust emulations of the Windows "hops" an agent's tool call crosses:
//! command-line **receivers** (how a program turns its one command-line string into argv, or
//! what cmd.exe executes) and **senders** (how a runtime renders an argv into a command line).
//!
//! Every algorithm follows `docs/spec/windows-receivers.md` (the project spec); the public test
//! vectors in `tests/data/` pin them down. Nothing here touches the real file system or needs
//! Windows.
//!
//! ```
//! use iec_windows::{receive, render};
//! let args: Vec<String> = ["prog", "a b", "c\"d"].iter().map(|s| s.to_string()).collect();
//! let cl = render::rust_std(&args).unwrap();
//! assert_eq!(cl, r#""prog" "a b" c\"d"#);
//! assert_eq!(receive::msvcrt(&cl), args);
//! ```
#![warn(missing_docs)]

pub mod argv;
pub mod cmd;
pub mod msys2;
pub mod pathconv;
pub mod powershell;
pub mod render;

use serde_json::{json, Value};
use std::collections::BTreeMap;

/// Errors of the registry functions.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum Error {
    /// No receiver with this id.
    #[error("unknown receiver `{0}`")]
    UnknownReceiver(String),
    /// No sender with this id.
    #[error("unknown sender `{0}`")]
    UnknownSender(String),
    /// The mode is not valid for this receiver or sender.
    #[error("unknown mode `{0}` for `{1}`")]
    BadMode(String, String),
    /// The input could not be read (e.g. pathconv input that is not a JSON string array).
    #[error("bad input: {0}")]
    BadInput(String),
    /// The operation is refused or impossible.
    #[error("{0}")]
    Invalid(String),
}

/// Why a sender refuses to render an argv.
#[derive(Debug, thiserror::Error, PartialEq, Eq, Clone)]
pub enum RenderError {
    /// An element contains NUL, which no Windows command line can carry.
    #[error("argument contains NUL")]
    Nul,
    /// The argv is empty (no program).
    #[error("argv is empty (no program)")]
    NoProgram,
    /// The sender refuses this argv (the message says why).
    #[error("{0}")]
    Invalid(String),
}

/// Inputs that receivers may need besides the command line.
#[derive(Clone, Debug, Default)]
pub struct ReceiveOptions {
    /// Environment variables (`K=V`): cmd `%VAR%`/`!VAR!`, `HOME` for MSYS2 `~`,
    /// `MSYS_NO_PATHCONV`/`MSYS2_ARG_CONV_EXCL` for pathconv, `%VAR%` after PowerShell `--%`.
    pub env: Vec<(String, String)>,
    /// PowerShell variables (`NAME=VALUE`, referenced as `$NAME`).
    pub ps_vars: Vec<(String, String)>,
    /// Virtual files (`NAME=CONTENT`): cmd's current directory, MSYS2 glob and `@file`.
    pub files: BTreeMap<String, String>,
    /// cmd delayed expansion (`!VAR!`) enabled by default (`/V:` overrides).
    pub delayed_expansion: bool,
    /// MSYS2 root (default `C:/msys64`; Git for Windows: `C:/Program Files/Git`).
    pub msys2_root: Option<String>,
    /// PowerShell native target (default `testexe.exe`); decides `Windows` mode and whether the
    /// target sees batch parameters (`.bat`/`.cmd`) or UCRT argv.
    pub program: Option<String>,
    /// Module file name returned for an empty command line (default `TEST.EXE`).
    pub module_name: Option<String>,
}

/// Default MSYS2 root.
pub const DEFAULT_MSYS2_ROOT: &str = "C:/msys64";

impl ReceiveOptions {
    /// Parses `K=V` strings into pairs (a missing `=` gives an empty value).
    pub fn parse_kv(items: &[&str]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|s| match s.split_once('=') {
                Some((k, v)) => (k.to_string(), v.to_string()),
                None => (s.to_string(), String::new()),
            })
            .collect()
    }

    fn module(&self) -> &str {
        self.module_name.as_deref().unwrap_or(argv::DEFAULT_MODULE_NAME)
    }

    fn root(&self) -> &str {
        self.msys2_root.as_deref().unwrap_or(DEFAULT_MSYS2_ROOT)
    }

    fn home(&self) -> Option<&str> {
        self.env
            .iter()
            .find(|(k, _)| k == "HOME")
            .map(|(_, v)| v.as_str())
    }

    fn cmd_options(&self) -> cmd::CmdOptions {
        cmd::CmdOptions {
            env: self.env.clone(),
            files: self.files.clone(),
            delayed: self.delayed_expansion,
        }
    }
}

/// Receivers with their default options.
pub mod receive {
    use super::*;

    /// MSVC UCRT / VS2008+ argv (spec §1).
    pub fn msvcrt(cmdline: &str) -> Vec<String> {
        argv::ucrt(cmdline, argv::DEFAULT_MODULE_NAME)
    }

    /// Pre-2008 msvcrt argv (spec §1, "Pre-2008 difference").
    pub fn msvcrt_pre2008(cmdline: &str) -> Vec<String> {
        argv::pre2008(cmdline, argv::DEFAULT_MODULE_NAME)
    }

    /// shell32 `CommandLineToArgvW` (spec §2).
    pub fn commandlinetoargvw(cmdline: &str) -> Vec<String> {
        argv::commandlinetoargvw(cmdline, argv::DEFAULT_MODULE_NAME)
    }

    /// MSYS2/Cygwin program started by a native parent, globbing on, no files (spec §6.1).
    pub fn msys2(cmdline: &str) -> Vec<String> {
        msys2_with(cmdline, true, &ReceiveOptions::default())
    }

    /// MSYS2 with `glob` (false = `MSYS=noglob`) and options (files, `HOME`, root).
    pub fn msys2_with(cmdline: &str, glob: bool, opts: &ReceiveOptions) -> Vec<String> {
        let o = msys2::Msys2Options {
            glob,
            files: &opts.files,
            home: opts.home(),
            root: opts.root(),
        };
        msys2::build_argv(cmdline, &o)
    }

    /// MSYS2 outgoing path conversion of an argv, root `C:/msys64` (spec §6.3).
    pub fn msys2_pathconv(args: &[String]) -> Vec<String> {
        msys2_pathconv_with(args, &ReceiveOptions::default())
    }

    /// Path conversion with a root and `MSYS_NO_PATHCONV` / `MSYS2_ARG_CONV_EXCL` from `env`.
    pub fn msys2_pathconv_with(args: &[String], opts: &ReceiveOptions) -> Vec<String> {
        pathconv::convert_argv(args, opts.root(), &pathconv::PathConvEnv::from_env(&opts.env))
    }

    /// cmd.exe run with this full command line (`cmd.exe /d /s /c "…"`).
    pub fn cmd(cmdline: &str, opts: &cmd::CmdOptions) -> cmd::CmdResult {
        cmd::run_cmdline(cmdline, opts)
    }

    /// One line of a batch file (echo off).
    pub fn cmd_batch_line(line: &str, opts: &cmd::CmdOptions) -> cmd::CmdResult {
        cmd::run_batch_line(line, opts)
    }

    /// argv a UCRT program (`testexe.exe`) receives from Windows PowerShell 5.1 for this
    /// argument text (argv[0] excluded).
    pub fn powershell51_native(text: &str, vars: &[(String, String)]) -> Vec<String> {
        powershell::native(text, powershell::PassingMode::Ps51, "testexe.exe", vars, &[]).1
    }

    /// argv a UCRT program receives from PowerShell 7.x in `mode` (argv[0] excluded).
    pub fn pwsh_native(text: &str, mode: powershell::PassingMode, vars: &[(String, String)]) -> Vec<String> {
        powershell::native(text, mode, "testexe.exe", vars, &[]).1
    }
}

/// Receiver ids, in a stable order.
pub fn receiver_ids() -> &'static [&'static str] {
    &[
        "msvcrt",
        "msvcrt-pre2008",
        "commandlinetoargvw",
        "msys2",
        "msys2-pathconv",
        "cmd",
        "powershell51-native",
        "pwsh-native",
    ]
}

/// Sender ids, in a stable order.
pub fn sender_ids() -> &'static [&'static str] {
    &[
        "node",
        "node-verbatim",
        "rust-std",
        "rust-std-bat",
        "cpython",
        "dotnet",
        "go",
        "powershell51",
    ]
}

fn bad_mode(m: &str, id: &str) -> Error {
    Error::BadMode(m.to_string(), id.to_string())
}

/// Runs receiver `id` on `input` and returns its JSON result.
///
/// * argv receivers: `{"receiver", "mode", "argv"}` (PowerShell adds `"command_line"`);
/// * `cmd`: `{"receiver", "mode", "executes", "expanded", "truncated", "too_long", "stdout", "error",
///   "delayed_expansion", "launches": [{"program", "command_line"}]}`; mode `cmdline`
///   (default, input = cmd.exe's command line) or `batch` (input = one batch-file line);
/// * `msys2-pathconv`: input is a JSON string array, output `{"receiver", "argv"}`.
pub fn receive_json(
    id: &str,
    mode: Option<&str>,
    opts: &ReceiveOptions,
    input: &str,
) -> Result<Value, Error> {
    let argv_out = |argv: Vec<String>| json!({"receiver": id, "mode": mode, "argv": argv});
    match id {
        "msvcrt" => match mode {
            None | Some("2008") => Ok(argv_out(argv::ucrt(input, opts.module()))),
            Some(m) => Err(bad_mode(m, id)),
        },
        "msvcrt-pre2008" => match mode {
            None => Ok(argv_out(argv::pre2008(input, opts.module()))),
            Some(m) => Err(bad_mode(m, id)),
        },
        "commandlinetoargvw" => match mode {
            None | Some("CommandLineToArgvW") => Ok(argv_out(argv::commandlinetoargvw(input, opts.module()))),
            Some(m) => Err(bad_mode(m, id)),
        },
        "msys2" => {
            let env_noglob = opts
                .env
                .iter()
                .any(|(k, v)| (k == "MSYS" || k == "CYGWIN") && v.split(' ').any(|w| w == "noglob"));
            let glob = match mode {
                None => !env_noglob,
                Some("glob") => true,
                Some("noglob") => false,
                Some(m) => return Err(bad_mode(m, id)),
            };
            Ok(argv_out(receive::msys2_with(input, glob, opts)))
        }
        "msys2-pathconv" => {
            if let Some(m) = mode {
                return Err(bad_mode(m, id));
            }
            let args: Vec<String> = serde_json::from_str(input)
                .map_err(|e| Error::BadInput(format!("expected a JSON string array: {e}")))?;
            Ok(json!({"receiver": id, "argv": receive::msys2_pathconv_with(&args, opts)}))
        }
        "cmd" => {
            let co = opts.cmd_options();
            let r = match mode {
                None | Some("cmdline") => cmd::run_cmdline(input, &co),
                Some("batch") => cmd::run_batch_line(input, &co),
                Some(m) => return Err(bad_mode(m, id)),
            };
            let launches: Vec<Value> = r
                .launches
                .iter()
                .map(|l| json!({"program": l.program, "command_line": l.command_line}))
                .collect();
            Ok(json!({
                "receiver": "cmd",
                "mode": mode,
                "executes": r.executes,
                "expanded": r.expanded,
                "truncated": r.truncated,
                "too_long": r.too_long,
                "stdout": r.stdout,
                "error": r.error,
                "delayed_expansion": r.delayed,
                "launches": launches,
                "files_written": r.files_written,
            }))
        }
        "powershell51-native" | "pwsh-native" => {
            let pm = if id == "powershell51-native" {
                match mode {
                    None | Some("5.1") => powershell::PassingMode::Ps51,
                    Some(m) => return Err(bad_mode(m, id)),
                }
            } else {
                match mode {
                    None => powershell::PassingMode::Windows,
                    Some(m) => powershell::PassingMode::parse(m).ok_or_else(|| bad_mode(m, id))?,
                }
            };
            let program = opts.program.as_deref().unwrap_or("testexe.exe");
            let (cl, argv) = powershell::native(input, pm, program, &opts.ps_vars, &opts.env);
            Ok(json!({"receiver": id, "mode": mode, "argv": argv, "command_line": cl}))
        }
        _ => Err(Error::UnknownReceiver(id.to_string())),
    }
}

/// Renders `args` with sender `id`; modes: `rust-std` `force_quotes` or `raw:I,J` (indices of
/// `Arg::Raw` elements), `rust-std-bat` `force_quotes`, `dotnet` `windows` (default) or `unix`.
pub fn render(id: &str, mode: Option<&str>, args: &[String]) -> Result<Result<String, RenderError>, Error> {
    let r = match (id, mode) {
        ("node", None) => render::node(args),
        ("node-verbatim", None) => render::node_verbatim(args),
        ("rust-std", None) => render::rust_std(args),
        ("rust-std", Some("force_quotes")) => render::rust_std_with(args, true, &[]),
        ("rust-std", Some(m)) if m.starts_with("raw:") => {
            let raw: Result<Vec<usize>, _> = m[4..]
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.trim().parse())
                .collect();
            let raw = raw.map_err(|_| bad_mode(m, id))?;
            render::rust_std_with(args, false, &raw)
        }
        ("rust-std-bat", None) => render::rust_std_bat(args),
        ("rust-std-bat", Some("force_quotes")) => render::rust_std_bat_with(args, true),
        ("cpython", None) => render::cpython(args),
        ("dotnet", None | Some("windows")) => render::dotnet(args),
        ("dotnet", Some("unix")) => render::dotnet_with(args, false),
        ("go", None) => render::go(args),
        ("powershell51", None) => render::powershell51(args),
        (s, Some(m)) if sender_ids().contains(&s) => return Err(bad_mode(m, s)),
        (s, _) => return Err(Error::UnknownSender(s.to_string())),
    };
    Ok(r)
}

/// JSON form of [`render`]: `{"sender", "command_line"}` or `{"sender", "error"}`.
pub fn render_json(id: &str, mode: Option<&str>, args: &[String]) -> Value {
    match render(id, mode, args) {
        Ok(Ok(cl)) => json!({"sender": id, "command_line": cl}),
        Ok(Err(e)) => json!({"sender": id, "error": e.to_string()}),
        Err(e) => json!({"sender": id, "error": e.to_string()}),
    }
}
