/*!
The Claude Code PreToolUse hook, shared by `iec hook claude-code` and the small `iec-hook`
binary, and the witness daemon both can talk to.

A hook process runs once per tool call, so its start-up is most of its cost. `iec-hook` links
only what the decision needs (no async runtime, no HTTP or MCP stack). A call whose text is
plain (see [`iec_check::plain`]: literal words only) is decided in the hook process: the
check's plain-text shortcut judges it without starting bash. Any other call needs the real bash
witnesses; starting them costs more than the check itself, so the hook asks a daemon that keeps
them warm ([`daemon`]). Both routes run [`answer`], so they print the same bytes.

The hook never breaks the agent's turn: whatever goes wrong inside iec (a witness that cannot
start, a launch file that does not load) is reported on stderr and the hook exits 0 without
output (fail open), which leaves the call to the user's permission settings. A daemon that is
missing, stale or does not answer is a reason to decide in the hook process, not an error.

A Bash call whose *text* iec cannot judge is not an internal failure: a text over the limit, a
hook document that does not decode (a lone surrogate escape, bytes that are not UTF-8) or that is
longer than the hook reads. Letting such a call through unchanged would let an agent opt out of
repair by padding or spoiling its own text, so the hook answers `permissionDecision: "ask"`
with the reason ([`Reply::ask`]): the user decides. Only a document whose top-level
`tool_name` is exactly `Bash` (Claude Code's Bash tool) is judged at all; any other tool name,
`bash` included, is not a Bash call and gets no output.
*/
#![deny(missing_docs)]

pub mod daemon;
pub mod detect;

use iec_core::Call;
use iec_launches::{Catalog, Launch};
use serde_json::{json, Value};
use std::io::Write;
use std::path::PathBuf;

/// The launch of the Claude Code release this project tracks (`iec install` and the plugin
/// resolve the launch from the calling harness's version instead; see [`detect`]).
pub const DEFAULT_LAUNCH: &str = "claude-code-2.1.332-linux";

/// `IEC_DAEMON`: `0` or `off` never asks the daemon, `only` asks it for every call and never
/// decides in the hook process (a failure then fails open); anything else (the default) asks it
/// for calls that need a witness and starts it when it is not running.
pub const MODE_ENV: &str = "IEC_DAEMON";

/// How the hook uses the daemon (`IEC_DAEMON`).
pub use iec_core::config::DaemonMode;

/// One hook invocation.
#[derive(Debug, Clone)]
pub struct Hook {
    /// The launch to repair for; `None`: the launch of the calling Claude Code's version and
    /// this OS ([`detect::launch_for`]), and no repair when that version has none.
    pub launch: Option<String>,
    /// Extra launch files (TOML).
    pub launch_files: Vec<PathBuf>,
    /// Record the command for the shell shim `iec-bash` instead of repairing (also when
    /// `IEC_INTENT_DIR` is set).
    pub record_intent: bool,
    /// How to use the daemon.
    pub daemon: DaemonMode,
    /// The arguments that make this executable serve as the daemon (`["daemon"]` for `iec`,
    /// `["--daemon"]` for `iec-hook`).
    pub daemon_args: Vec<String>,
}

/// What a hook writes: `stdout` (the decision document and a newline, or nothing) and `stderr`
/// (diagnostics, or nothing).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reply {
    /// The bytes for stdout.
    pub stdout: String,
    /// The bytes for stderr.
    pub stderr: String,
}

impl Reply {
    fn error(e: &anyhow::Error) -> Reply {
        Reply {
            stdout: String::new(),
            stderr: format!("iec hook: {e:#} (the call is left to your permission settings)\n"),
        }
    }

    /// The answer for a Bash call whose text iec cannot judge: Claude Code's PreToolUse
    /// `permissionDecision: "ask"` (the user is asked, with `reason`, before the call runs).
    pub fn ask(reason: &dyn std::fmt::Display) -> Reply {
        let doc = json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "ask",
                "permissionDecisionReason": format!(
                    "iec could not check this Bash command, so it cannot tell whether it would run as written: {reason}"
                ),
            }
        });
        Reply {
            stdout: format!("{doc}\n"),
            stderr: String::new(),
        }
    }

    fn write(&self) {
        if !self.stdout.is_empty() {
            let mut out = std::io::stdout().lock();
            let _ = out.write_all(self.stdout.as_bytes());
            let _ = out.flush();
        }
        if !self.stderr.is_empty() {
            let _ = std::io::stderr().write_all(self.stderr.as_bytes());
        }
    }
}

/// Runs the hook on stdin; the return value is the exit code (always 0: decisions travel as
/// JSON).
pub fn claude_code(hook: &Hook) -> i32 {
    run(hook).write();
    0
}

fn run(hook: &Hook) -> Reply {
    // Never more than a document that can carry a text within the limit, and one byte.
    let mut input = Vec::new();
    if let Err(e) = std::io::Read::read_to_end(
        &mut std::io::Read::take(std::io::stdin().lock(), iec_core::MAX_CALL_JSON as u64 + 1),
        &mut input,
    ) {
        return Reply::error(&e.into());
    }
    if input.len() > iec_core::MAX_CALL_JSON {
        let e = iec_core::limits::TooLong {
            what: "the hook's input".into(),
            bytes: iec_core::MAX_CALL_JSON + 1,
            at_least: true,
        };
        return match is_bash_call(&input) {
            true => Reply::ask(&e),
            false => Reply::error(&e.into()),
        };
    }
    let doc: Value = match iec_core::json::parse(&input) {
        Ok(v) => v,
        Err(e) => {
            let e = format!("the hook's input is not JSON: {e}");
            return match is_bash_call(&input) {
                true => Reply::ask(&e),
                false => Reply::error(&anyhow::anyhow!(e)),
            };
        }
    };
    if doc.get("tool_name").and_then(Value::as_str) != Some("Bash") {
        return Reply::default();
    }
    // A Bash call whose `command` is not a string is not one Claude Code runs; iec judges only
    // strings, so the user decides (it is never let through unjudged).
    if let Some(c) = doc
        .get("tool_input")
        .and_then(|v| v.get("command"))
        .filter(|c| !c.is_string())
    {
        let kind = if c.is_array() { "an array" } else { "not a string" };
        return Reply::ask(&anyhow::anyhow!(
            "the Bash call's `command` is {kind}; iec checks command strings only"
        ));
    }
    let Some(tool_input) = doc
        .get("tool_input")
        .filter(|v| v.get("command").is_some_and(Value::is_string))
    else {
        return Reply::default();
    };
    let command = tool_input["command"].as_str().unwrap_or_default();
    // A text over the limit is not judged, recorded or sent to the daemon: the user is asked.
    if let Err(e) = iec_core::limits::check_command(&tool_input["command"]) {
        return Reply::ask(&e);
    }
    // An environment variable with a bad value: the user decides, and sees which one.
    let config = match iec_core::config::Config::from_env() {
        Ok(c) => c,
        Err(e) => return Reply::ask(&e),
    };
    let record_intent = hook.record_intent || config.intent_dir.is_some();
    if record_intent {
        match record(command) {
            // The shim delivers the recorded text itself; nothing to change here.
            Ok(()) => return Reply::default(),
            Err(e) => eprintln!("iec hook: cannot record the intent for iec-bash ({e}); repairing instead"),
        }
    }
    let launch = match &hook.launch {
        Some(l) => l.clone(),
        None => {
            let cat = match catalog_auto(&hook.launch_files) {
                Ok(c) => c,
                Err(e) => return Reply::error(&e),
            };
            match detect::launch_for(&cat, &doc) {
                Ok((id, note)) => {
                    if let Some(n) = note {
                        eprint!("{n}");
                    }
                    id
                }
                // Never a silent guess: the call goes through as it is, and the user is told.
                Err(why) => {
                    return Reply {
                        stdout: String::new(),
                        stderr: format!(
                            "iec hook: {why}; the call is passed through unchanged (give --launch to choose one)\n"
                        ),
                    }
                }
            }
        }
    };
    let ask = match hook.daemon {
        DaemonMode::Off => false,
        DaemonMode::Only => true,
        // A plain text needs no witness: the hook process decides it as fast as it can start.
        DaemonMode::Auto => !iec_check::plain::is_plain(command),
    };
    if ask {
        match daemon::ask(&launch, &hook.launch_files, tool_input) {
            Ok(reply) => return reply,
            Err(e) if hook.daemon == DaemonMode::Only => {
                return Reply::error(&anyhow::anyhow!("the witness daemon did not answer: {e}"))
            }
            Err(daemon::AskError::NotRunning(socket)) => {
                if let Err(e) = daemon::start_detached(&socket, &hook.daemon_args) {
                    eprintln!(
                        "iec hook: cannot start the witness daemon at {} ({e}); checking in this process",
                        socket.display()
                    );
                }
            }
            Err(e) => {
                eprintln!("iec hook: the witness daemon did not answer ({e}); checking in this process")
            }
        }
    }
    answer(&launch, &hook.launch_files, tool_input)
}

/// The Claude Code launches (built in, and from `files`) a version is resolved among.
fn catalog_auto(files: &[PathBuf]) -> anyhow::Result<Catalog> {
    let mut c = Catalog::builtin_harness("claude-code");
    for f in files {
        c.add_file(f)?;
    }
    Ok(c)
}

/// The hook's answer for a Bash `tool_input` on `launch`: what the daemon sends and what the
/// hook process computes itself, byte for byte.
pub fn answer(launch: &str, launch_files: &[PathBuf], tool_input: &Value) -> Reply {
    match catalog_for(launch, launch_files) {
        Ok(cat) => answer_in(&cat, launch, tool_input),
        Err(e) => Reply::error(&e),
    }
}

/// [`answer`] with the catalog already loaded.
pub(crate) fn answer_in(cat: &Catalog, launch: &str, tool_input: &Value) -> Reply {
    answer_with(cat, launch, tool_input, iec_witness::global())
}

/// [`answer_in`] with the witnesses of `pool` (the daemon's are bounded; see [`daemon`]).
pub(crate) fn answer_with(
    cat: &Catalog,
    launch: &str,
    tool_input: &Value,
    pool: &iec_witness::BashPool,
) -> Reply {
    if let Err(e) = iec_core::limits::check_command(&tool_input["command"]) {
        return Reply::ask(&e);
    }
    match cat
        .get(launch)
        .map_err(anyhow::Error::from)
        .and_then(|l| decide(l, launch, tool_input, pool))
    {
        Ok(Some(doc)) => Reply {
            stdout: format!("{doc}\n"),
            stderr: String::new(),
        },
        Ok(None) => Reply::default(),
        Err(e) => Reply::error(&e),
    }
}

/// The catalog for one launch id: only its file is parsed when it is built in and no launch
/// files are given (start-up cost of a hook that runs once per call).
pub fn catalog_for(id: &str, files: &[PathBuf]) -> anyhow::Result<Catalog> {
    if files.is_empty() {
        let one = Catalog::builtin_only(id);
        if one.get(id).is_ok() {
            return Ok(one);
        }
    }
    let mut c = Catalog::builtin();
    for f in files {
        c.add_file(f)?;
    }
    Ok(c)
}

/// The decision document for a Bash call: `None` when it corresponds, `allow` with
/// `updatedInput` when repaired, `deny` when refused.
fn decide(
    l: &Launch,
    launch: &str,
    tool_input: &Value,
    pool: &iec_witness::BashPool,
) -> anyhow::Result<Option<Value>> {
    let call = Call {
        tool: "Bash".into(),
        input: tool_input.clone(),
    };
    Ok(match iec_repair::repair(l, &call, pool)? {
        iec_repair::Outcome::Deliver { repaired: false, .. } => None,
        iec_repair::Outcome::Deliver {
            call, hop, rendering, ..
        } => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "allow",
                "permissionDecisionReason": format!(
                    "iec: {launch} would change this command at hop {}; delivered as {} (checked: corresponds)",
                    hop.unwrap_or_default(), rendering.unwrap_or_default()
                ),
                "updatedInput": call,
            }
        })),
        iec_repair::Outcome::Refuse { hop, reason } => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": format!("iec: {launch} would change this command at hop {hop}: {reason}"),
            }
        })),
    })
}

/// Whether a hook document (possibly cut off, or not valid JSON) is a call of Claude Code's
/// Bash tool: its top-level object has the member `"tool_name": "Bash"`, written as is. A scan
/// of the bytes, for documents the JSON parser refuses (a lone surrogate escape, bytes that are
/// not UTF-8, a document longer than the hook reads); strings are skipped whole, so text inside
/// `tool_input` cannot pose as the member.
pub fn is_bash_call(doc: &[u8]) -> bool {
    let mut depth = 0usize;
    let mut object = false;
    let mut expect_key = false;
    let mut key: Option<&[u8]> = None;
    let mut after_colon = false;
    let mut i = 0;
    while i < doc.len() {
        match doc[i] {
            b'"' => {
                let start = i + 1;
                let mut j = start;
                while j < doc.len() && doc[j] != b'"' {
                    j += if doc[j] == b'\\' { 2 } else { 1 };
                }
                if j >= doc.len() {
                    return false;
                }
                let s = &doc[start..j];
                if depth == 1 && object {
                    if expect_key {
                        key = Some(s);
                        expect_key = false;
                    } else if after_colon && key == Some(b"tool_name".as_slice()) {
                        return s == b"Bash";
                    }
                }
                after_colon = false;
                i = j + 1;
                continue;
            }
            b'{' | b'[' => {
                if depth == 0 {
                    object = doc[i] == b'{';
                    expect_key = true;
                }
                depth += 1;
                after_colon = false;
            }
            b'}' | b']' => {
                depth = depth.saturating_sub(1);
                after_colon = false;
            }
            b',' if depth == 1 => {
                expect_key = true;
                after_colon = false;
            }
            b':' if depth == 1 => after_colon = true,
            b' ' | b'\t' | b'\n' | b'\r' => {}
            _ => after_colon = false,
        }
        i += 1;
    }
    false
}

/// Records `command` in the intent store, scoped to this process's ancestors (the harness).
fn record(command: &str) -> Result<(), iec_shim::intent::StoreError> {
    let store = iec_shim::intent::Store::create_default()?;
    store.prune();
    store.record(command, iec_shim::intent::scope_of_self(), "claude-code")?;
    Ok(())
}
