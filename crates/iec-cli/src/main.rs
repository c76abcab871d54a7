//! `iec`: does a tool call execute as intended? A thin front end over the iec crates.

mod bench;
mod daemon;
mod demo;
mod harness;
mod history;
mod hook;
mod out;
mod scan;
mod text;

use anyhow::{bail, Context, Result};
use clap::{Parser, Subcommand, ValueEnum};
use iec_core::limits::{read_at_most, Bounded, TooLong};
use iec_core::{Call, Verdict, MAX_CALL_JSON, MAX_TEXT};
use iec_launches::Catalog;
use out::{out, outln};
use std::path::PathBuf;
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "iec",
    version,
    about = "Intent-execution correspondence for LLM agents' tool calls"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    Text,
    Json,
}

#[derive(Clone, Copy, ValueEnum, PartialEq, Eq)]
enum WitnessMode {
    /// Warm bash parse servers; execve taken as the identity it is.
    Warm,
    /// Also start the real bash with a BASH_ENV witness for the process-interface hop.
    Spawn,
}

#[derive(clap::Args)]
#[group(required = true, multiple = false)]
struct CallSource {
    /// The command text (as the agent emitted it; a text starting with `-` is a text too).
    #[arg(long, allow_hyphen_values = true)]
    command: Option<String>,
    /// A file holding the command text (UTF-8, used byte for byte; at most 1 MiB is judged).
    #[arg(long)]
    command_file: Option<PathBuf>,
    /// A file holding the call as JSON: {"tool","input"}, a PreToolUse document, a tool_use block
    /// or a bare {"command": ...} (a UTF-8 byte-order mark is skipped).
    #[arg(long)]
    call_json: Option<PathBuf>,
}

/// Choosing the launch by harness version instead of by id.
#[derive(clap::Args)]
struct Pick {
    /// `HARNESS@VERSION` (`claude-code@2.1.50`, `codex@0.171.0`, `gemini-cli@0.61.0`): the
    /// launch whose version range holds it (see `iec launches`); a version in no range is an
    /// error that lists the ranges.
    #[arg(long)]
    harness: Option<String>,
    /// The OS the harness runs on, with --harness (`linux` or `windows`; default: this one).
    /// Where several launches hold a version (Claude Code on Windows with Git Bash or
    /// PowerShell, Codex's tools), a --call-json's tool name picks one, else choose with --launch.
    #[arg(long, requires = "harness")]
    os: Option<String>,
}

impl Pick {
    /// The launch `launch` names, or the one `--harness` resolves to (`tool`: the call's tool).
    fn launches<'a>(
        &self,
        cat: &'a Catalog,
        launch: Option<&str>,
        tool: Option<&str>,
    ) -> Result<Vec<&'a iec_launches::Launch>> {
        if let Some(id) = launch {
            return Ok(if id == "all" {
                cat.iter().collect()
            } else {
                vec![cat.get(id)?]
            });
        }
        let spec = self.harness.as_deref().expect("clap: --launch or --harness");
        let (h, v) = iec_launches::resolve::parse_spec(spec)?;
        let os = self.os.as_deref().unwrap_or(iec_launches::resolve::default_os());
        let (l, how) = iec_launches::resolve::resolve(cat, h, os, v, tool)?;
        if let iec_launches::resolve::How::Between { below, above } = how {
            eprintln!(
                "iec: {spec} is between {below} and {above}, both learned as {}; using it",
                l.id
            );
        }
        Ok(vec![l])
    }
}

fn tool_of(src: &Source) -> Option<&str> {
    match src {
        Source::Json(v) => v
            .get("tool")
            .or_else(|| v.get("tool_name"))
            .or_else(|| v.get("name"))
            .and_then(|t| t.as_str()),
        _ => None,
    }
}

#[derive(Subcommand)]
enum Cmd {
    /// Check a call on a launch without executing it: exit 0 corresponds, 1 diverges,
    /// 3 unknown, 2 usage or runtime error.
    Check {
        /// Launch id, or `all`.
        #[arg(long, required_unless_present = "harness", conflicts_with = "harness")]
        launch: Option<String>,
        #[command(flatten)]
        pick: Pick,
        #[command(flatten)]
        source: CallSource,
        /// Extra launch files (TOML) to load.
        #[arg(long)]
        launch_file: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
        #[arg(long, value_enum, default_value = "warm")]
        witness: WitnessMode,
        /// Ask bash even for plain texts (by default they are judged without a witness
        /// process; the report then carries a `shortcut` note).
        #[arg(long)]
        full_witness: bool,
    },
    /// Repair a call for a launch (IntAct): deliver it unchanged, deliver a verified rendering,
    /// or refuse. Exit 0 deliver, 4 refuse, 2 error.
    Repair {
        /// Launch id.
        #[arg(long, required_unless_present = "harness", conflicts_with = "harness")]
        launch: Option<String>,
        #[command(flatten)]
        pick: Pick,
        #[command(flatten)]
        source: CallSource,
        #[arg(long)]
        launch_file: Vec<PathBuf>,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// A hook for an agent harness. `iec hook claude-code` reads a PreToolUse document on stdin
    /// and answers as the Claude Code hooks API expects: nothing when the call corresponds,
    /// `allow` with `updatedInput` when repaired, `deny` with a reason when refused. An internal
    /// failure is reported on stderr and the call is left to the user's configuration (exit 0,
    /// no output: the hook fails open).
    Hook {
        #[arg(value_parser = ["claude-code"])]
        harness: String,
        /// The launch to repair for (default: the launch of the calling Claude Code's version,
        /// read from the hook document's transcript or from the process that started the hook,
        /// and this OS; a version with no launch is passed through, the reason on stderr).
        #[arg(long)]
        launch: Option<String>,
        #[arg(long)]
        launch_file: Vec<PathBuf>,
        /// Record the command for the shell shim `iec-bash` and let it through unchanged (also
        /// when IEC_INTENT_DIR is set); repairs instead when it cannot record.
        #[arg(long)]
        record_intent: bool,
        /// Decide every call in this process, without the witness daemon (also IEC_DAEMON=0).
        #[arg(long)]
        no_daemon: bool,
    },
    /// The witness daemon for the hook: keeps warm bash witnesses and answers hook requests on
    /// a private Unix socket (`$IEC_DAEMON_SOCKET`, else `$XDG_RUNTIME_DIR/iec` or
    /// `~/.cache/iec/run`). The hook starts it when it is missing.
    Daemon {
        /// Exit after this many seconds without a request (default 900).
        #[arg(long)]
        idle_exit: Option<u64>,
    },
    /// Write the iec hook into an agent's settings (idempotent). `iec install claude-code`
    /// edits `$CLAUDE_CONFIG_DIR/settings.json` or `~/.claude/settings.json`.
    Install {
        #[arg(value_parser = ["claude-code"])]
        harness: String,
        /// The settings file to edit.
        #[arg(long)]
        settings: Option<PathBuf>,
        /// The launch the hook repairs for (default: none on the command line; the hook
        /// resolves the calling Claude Code's version on every call).
        #[arg(long)]
        launch: Option<String>,
        /// Print the resulting settings instead of writing them.
        #[arg(long)]
        dry_run: bool,
        /// Also make `iec-bash` (beside this binary) the shell (`env.CLAUDE_CODE_SHELL`) and
        /// let the hook record intents for it instead of repairing.
        #[arg(long)]
        shim: bool,
    },
    /// An MCP server over stdio with the tools `run` (an argv, executed directly) and `run_script`
    /// (a script delivered through a file, never through a command line).
    Mcp,
    /// List the launches.
    Launches {
        #[arg(long)]
        launch_file: Vec<PathBuf>,
        /// A Markdown table of the launches with version ranges, in version order, and what
        /// each changes (hop, mechanism, example call), from `iec check` on probe calls.
        #[arg(long)]
        history: bool,
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// Check a built-in set of hazardous calls on every launch and print the matrix.
    Demo {
        #[arg(long, value_enum, default_value = "text")]
        format: Format,
    },
    /// IEC-Bench: recorded actions (hazard/control pairs, tool chains, tasks) delivered along
    /// six paths with IntAct off and on; lost, recovered, false repairs, McNemar (replay mode);
    /// or the pairs, chains and tasks through a real Claude Code, Codex or Gemini CLI beside
    /// replay mode's outcome (`--mode harness`).
    Bench(bench::Args),
    /// Parse received bytes (stdin, UTF-8) as one Windows receiver does and print what the
    /// program gets: `msvcrt`, `msvcrt-pre2008`, `commandlinetoargvw`, `msys2`, `msys2-pathconv`
    /// (stdin: a JSON argv), `cmd`, `powershell51-native`, `pwsh-native`.
    Receive {
        receiver: String,
        #[arg(long)]
        mode: Option<String>,
        /// Environment variable K=V (cmd %VAR%, MSYS settings).
        #[arg(long = "env")]
        env: Vec<String>,
        /// PowerShell variable NAME=VALUE.
        #[arg(long = "var")]
        var: Vec<String>,
        /// Virtual file NAME=CONTENT (cmd's current directory, MSYS2 globs and @file).
        #[arg(long = "file")]
        file: Vec<String>,
        /// cmd: delayed expansion (!VAR!) on.
        #[arg(long)]
        delayed_expansion: bool,
        /// MSYS2 root for path conversion (default C:/msys64).
        #[arg(long)]
        root: Option<String>,
        /// PowerShell native target program (default testexe.exe).
        #[arg(long)]
        program: Option<String>,
        #[arg(long, value_enum, default_value = "json")]
        format: Format,
    },
    /// Render a JSON argv (stdin) into a Windows command line as one sender does: `node`,
    /// `node-verbatim`, `rust-std`, `rust-std-bat`, `cpython`, `dotnet`, `go`, `powershell51`.
    Render {
        sender: String,
        #[arg(long)]
        mode: Option<String>,
        #[arg(long, value_enum, default_value = "json")]
        format: Format,
    },
    /// Real harness runs: `run` payloads through a pinned harness and observe what arrived;
    /// `agree` compares those observations with `iec check`'s predictions.
    Harness {
        #[command(subcommand)]
        cmd: harness::HarnessCmd,
    },
    /// Scan agents' session logs (Claude Code, Codex, Gemini CLI, OpenHands, Cline/Roo, Harbor
    /// ATIF): check every shell call on its launch and report how many did not run as written.
    /// Exit 0, or 2 on a usage error or (with --strict) the first bad input.
    Scan(scan::ScanArgs),
    /// The argv probe: print the argv this program received as JSON.
    Argvprobe {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<std::ffi::OsString>,
    },
}

fn main() -> ExitCode {
    // `iec __jail …`: the terminal witness's jail helper (tmux runs it as the pane's command);
    // first, while this process has one thread.
    if std::env::args_os()
        .nth(1)
        .is_some_and(|a| a == iec_witness::tmux::HELPER_ARG)
    {
        let args: Vec<_> = std::env::args_os().skip(1).collect();
        std::process::exit(iec_witness::tmux::jail_helper_main(&args));
    }
    // Invoked as `argvprobe`: behave as the probe, whatever the arguments.
    let argv0 = std::env::args_os().next().unwrap_or_default();
    if std::path::Path::new(&argv0)
        .file_name()
        .is_some_and(|n| n == "argvprobe")
    {
        let args: Vec<_> = std::env::args_os().skip(1).collect();
        outln!("{}", iec_witness::argvprobe::record(&args));
        return ExitCode::SUCCESS;
    }
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => ExitCode::from(code as u8),
        Err(e) => {
            eprintln!("iec: {e:#}");
            ExitCode::from(2)
        }
    }
}

pub(crate) fn catalog(files: &[PathBuf]) -> Result<Catalog> {
    catalog_with(Catalog::builtin(), files)
}

fn catalog_with(mut c: Catalog, files: &[PathBuf]) -> Result<Catalog> {
    for f in files {
        c.add_file(f)?;
    }
    Ok(c)
}

/// What a call source holds, read once for every launch.
enum Source {
    Text(String),
    Json(serde_json::Value),
    /// Longer than iec judges (the text, or a `--call-json` file too long to carry a text
    /// within the limit): `iec check` reports `unknown`, `iec repair` fails.
    TooLong(TooLong),
}

fn read_file_at_most(f: &std::path::Path, limit: usize) -> Result<Bounded> {
    let file = std::fs::File::open(f).with_context(|| format!("cannot read {}", f.display()))?;
    read_at_most(file, limit).with_context(|| format!("cannot read {}", f.display()))
}

/// Reads the call source; files are read only up to the limit and one byte.
fn read_source(src: &CallSource) -> Result<Source> {
    if let Some(t) = &src.command {
        return Ok(Source::Text(t.clone()));
    }
    let too_long = |f: &std::path::Path, limit: usize| {
        Source::TooLong(TooLong {
            what: f.display().to_string(),
            bytes: limit + 1,
            at_least: true,
        })
    };
    if let Some(f) = &src.command_file {
        let bytes = match read_file_at_most(f, MAX_TEXT)? {
            Bounded::Whole(b) => b,
            Bounded::Over { limit } => return Ok(too_long(f, limit)),
        };
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{} is not UTF-8 (first bad byte at offset {}); a tool call's JSON string cannot carry it",
                f.display(),
                e.utf8_error().valid_up_to()
            )
        })?;
        return Ok(Source::Text(text));
    }
    let f = src.call_json.as_ref().expect("clap group");
    let bytes = match read_file_at_most(f, MAX_CALL_JSON)? {
        Bounded::Whole(b) => b,
        Bounded::Over { limit } => return Ok(too_long(f, limit)),
    };
    let v = iec_core::json::parse(&bytes)
        .map_err(|e| anyhow::anyhow!("{} is not valid JSON: {e}", f.display()))?;
    Ok(Source::Json(v))
}

/// The call `src` makes on `launch`, or why it is too long to judge.
fn call_of(src: &Source, launch: &iec_launches::Launch) -> Result<std::result::Result<Call, TooLong>> {
    let call = match src {
        Source::Text(t) => iec_check::call_for_text(launch, t),
        Source::Json(v) => Call::from_json(v)?,
        Source::TooLong(e) => return Ok(Err(e.clone())),
    };
    match launch
        .command_of(&call.input)
        .map(iec_core::limits::check_command)
    {
        Some(Err(e)) => Ok(Err(e)),
        _ => Ok(Ok(call)),
    }
}

fn run(cli: Cli) -> Result<i32> {
    // An environment variable with a bad value is an error naming it, before anything runs; the
    // hook answers `ask` with it instead (it never fails the agent's turn).
    if !matches!(cli.command, Cmd::Hook { .. }) {
        iec_core::config::Config::from_env()?;
    }
    match cli.command {
        Cmd::Check {
            launch,
            pick,
            source,
            launch_file,
            format,
            witness,
            full_witness,
        } => {
            let cat = catalog(&launch_file)?;
            let opts = iec_check::Options {
                spawn_witness: witness == WitnessMode::Spawn,
                full_witness: witness == WitnessMode::Spawn || full_witness,
            };
            let src = read_source(&source)?;
            let launches = pick.launches(&cat, launch.as_deref(), tool_of(&src))?;
            let all = launch.as_deref() == Some("all");
            // Each report is abbreviated as soon as it is made (a long text is in many of its
            // receipts): what is kept for output stays small whatever the text.
            let mut verdicts = Vec::new();
            let mut shown: Vec<serde_json::Value> = Vec::new();
            for l in &launches {
                let r = match call_of(&src, l)? {
                    Ok(call) => iec_check::check(l, &call, iec_witness::global(), opts)?,
                    Err(e) => iec_check::too_long_report(l, &e),
                };
                verdicts.push(r.verdict);
                match format {
                    Format::Json => shown.push(iec_core::limits::report_json(r)),
                    Format::Text => {
                        let mut r = r;
                        iec_core::limits::compact_report(&mut r);
                        out!("{}", text::report(&r));
                    }
                }
            }
            match format {
                Format::Json if all => outln!("{}", serde_json::to_string_pretty(&shown)?),
                Format::Json => outln!("{}", serde_json::to_string_pretty(&shown[0])?),
                Format::Text => {}
            }
            let code = if verdicts.iter().all(|v| *v == Verdict::Corresponds) {
                0
            } else if verdicts.contains(&Verdict::Diverges) {
                1
            } else {
                3
            };
            Ok(code)
        }
        Cmd::Repair {
            launch,
            pick,
            source,
            launch_file,
            format,
        } => {
            let cat = catalog(&launch_file)?;
            let src = read_source(&source)?;
            let l = match &launch {
                Some(id) => cat.get(id)?,
                None => pick.launches(&cat, None, tool_of(&src))?[0],
            };
            // A text over the limit is an error here (exit 2): nothing judged, nothing to deliver.
            let call = call_of(&src, l)??;
            let out = iec_repair::repair(l, &call, iec_witness::global())?;
            let mut v = serde_json::to_value(&out)?;
            v.as_object_mut()
                .unwrap()
                .insert("launch".into(), serde_json::Value::String(l.id.clone()));
            match format {
                Format::Json => outln!("{}", serde_json::to_string_pretty(&v)?),
                Format::Text => match &out {
                    iec_repair::Outcome::Deliver { repaired: false, .. } => {
                        outln!("{}: deliver unchanged (corresponds)", l.id)
                    }
                    iec_repair::Outcome::Deliver {
                        hop, rendering, call, ..
                    } => outln!(
                        "{}: deliver repaired ({} at hop {})\n  {}",
                        l.id,
                        rendering.as_deref().unwrap_or(""),
                        hop.as_deref().unwrap_or(""),
                        call["command"].as_str().unwrap_or("")
                    ),
                    iec_repair::Outcome::Refuse { hop, reason } => {
                        outln!("{}: refuse (hop {hop})\n  {reason}", l.id)
                    }
                },
            }
            Ok(if matches!(out, iec_repair::Outcome::Refuse { .. }) {
                4
            } else {
                0
            })
        }
        Cmd::Mcp => {
            // Never a word on stderr: a failed session was answered on stdout as JSON-RPC.
            let served = tokio::runtime::Runtime::new().map(|rt| rt.block_on(iec_mcp::serve_stdio()));
            Ok(if matches!(served, Ok(Ok(()))) { 0 } else { 1 })
        }
        Cmd::Install {
            harness: _,
            settings,
            launch,
            dry_run,
            shim,
        } => hook::install(settings, launch.as_deref(), dry_run, shim),
        Cmd::Hook {
            harness: _,
            launch,
            launch_file,
            record_intent,
            no_daemon,
        } => Ok(hook::claude_code(launch, &launch_file, record_intent, no_daemon)),
        Cmd::Daemon { idle_exit } => daemon::run(idle_exit),
        Cmd::Launches {
            launch_file,
            history,
            format,
        } => {
            let cat = catalog(&launch_file)?;
            if history {
                out!("{}", history::table(&cat)?);
                return Ok(0);
            }
            let list: Vec<serde_json::Value> = cat
                .iter()
                .map(|l| {
                    serde_json::json!({
                        "id": l.id, "harness": l.harness, "version": l.version, "versions": l.versions, "os": l.os,
                        "hops": l.hops(), "source": l.source,
                    })
                })
                .collect();
            match format {
                Format::Json => outln!("{}", serde_json::to_string_pretty(&list)?),
                Format::Text => {
                    for l in cat.iter() {
                        let hops: Vec<_> = l.hops().iter().map(|h| h.name).collect();
                        outln!(
                            "{:<28} {:<16} {:<8} {:<6} {}",
                            l.id,
                            l.harness,
                            l.version,
                            l.os,
                            hops.join(" → ")
                        );
                    }
                }
            }
            Ok(0)
        }
        Cmd::Demo { format } => demo::run(format == Format::Json),
        Cmd::Bench(args) => bench::run(args),
        Cmd::Harness { cmd } => harness::run(cmd),
        Cmd::Scan(args) => scan::run(args),
        Cmd::Receive {
            receiver,
            mode,
            env,
            var,
            file,
            delayed_expansion,
            root,
            program,
            format,
        } => {
            if !iec_windows::receiver_ids().contains(&receiver.as_str()) {
                bail!(
                    "unknown receiver {receiver:?}; receivers: {}",
                    iec_windows::receiver_ids().join(", ")
                );
            }
            let pairs = |v: &[String], what: &str| -> Result<Vec<(String, String)>> {
                v.iter()
                    .map(|kv| {
                        kv.split_once('=')
                            .map(|(k, v)| (k.to_string(), v.to_string()))
                            .with_context(|| format!("--{what} takes NAME=VALUE, got {kv:?}"))
                    })
                    .collect()
            };
            let opts = iec_windows::ReceiveOptions {
                env: pairs(&env, "env")?,
                ps_vars: pairs(&var, "var")?,
                files: pairs(&file, "file")?.into_iter().collect(),
                delayed_expansion,
                msys2_root: root,
                program,
                ..Default::default()
            };
            let input = read_stdin_utf8()?;
            let v = iec_windows::receive_json(&receiver, mode.as_deref(), &opts, &input)?;
            print_value(&v, format)?;
            Ok(if v.get("error").and_then(|e| e.as_bool()) == Some(true) {
                1
            } else {
                0
            })
        }
        Cmd::Render { sender, mode, format } => {
            if !iec_windows::sender_ids().contains(&sender.as_str()) {
                bail!(
                    "unknown sender {sender:?}; senders: {}",
                    iec_windows::sender_ids().join(", ")
                );
            }
            let input = read_stdin_utf8()?;
            let args: Vec<String> = serde_json::from_str(&input)
                .context("stdin must be a JSON array of strings (the argv to render)")?;
            let v = iec_windows::render_json(&sender, mode.as_deref(), &args);
            print_value(&v, format)?;
            Ok(if v.get("error").is_some() { 1 } else { 0 })
        }
        Cmd::Argvprobe { args } => {
            outln!("{}", iec_witness::argvprobe::record(&args));
            Ok(0)
        }
    }
}

fn read_stdin_utf8() -> Result<String> {
    let bytes = match read_at_most(std::io::stdin().lock(), MAX_CALL_JSON).context("cannot read stdin")? {
        Bounded::Whole(b) => b,
        Bounded::Over { limit } => bail!(
            "stdin is more than {limit} bytes; iec reads at most {limit} (8 MiB, room for a text of \
             at most {MAX_TEXT} bytes, its text limit, written as JSON)"
        ),
    };
    String::from_utf8(bytes).map_err(|e| {
        anyhow::anyhow!(
            "stdin is not UTF-8 (first bad byte at offset {})",
            e.utf8_error().valid_up_to()
        )
    })
}

fn print_value(v: &serde_json::Value, format: Format) -> Result<()> {
    match format {
        Format::Json => outln!("{}", serde_json::to_string(v)?),
        Format::Text => outln!("{}", serde_json::to_string_pretty(v)?),
    }
    Ok(())
}
