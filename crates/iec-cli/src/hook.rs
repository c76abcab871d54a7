//! `iec hook claude-code`: the PreToolUse hook. It must never break the agent's turn: whatever
//! goes wrong inside is reported on stderr and the hook exits 0 without output, which leaves the
//! call to the user's own permission settings (fail open). A refusal is a `deny` decision.

use crate::out::{out, outln};
use serde_json::{json, Value};
use std::path::PathBuf;

/// Runs the hook (the code `iec-hook` runs too); the return value is the exit code (always 0:
/// decisions travel as JSON). With `record_intent` (or `IEC_INTENT_DIR` set) it records the
/// command for the shell shim `iec-bash` and lets the call through unchanged; when it cannot
/// record, it repairs as usual. Calls that need a witness go to the witness daemon (`iec
/// daemon`, started when missing) unless `no_daemon` or `IEC_DAEMON=0`.
pub fn claude_code(
    launch: Option<String>,
    launch_files: &[PathBuf],
    record_intent: bool,
    no_daemon: bool,
) -> i32 {
    iec_hook::claude_code(&iec_hook::Hook {
        launch,
        launch_files: launch_files.to_vec(),
        record_intent,
        daemon: match no_daemon {
            true => iec_hook::DaemonMode::Off,
            false => iec_hook::DaemonMode::from_env(),
        },
        daemon_args: vec!["daemon".into()],
    })
}

/// `iec install claude-code`: adds (or replaces) one PreToolUse hook for Bash that runs this
/// binary (or `iec-hook` when it is installed beside it); every other setting and hook is kept. A settings file that is not JSON is an error and
/// is left as it is. With `shim`, `env.CLAUDE_CODE_SHELL` names `iec-bash` (beside this binary)
/// and the hook records intents; without it, a `CLAUDE_CODE_SHELL` naming an `iec-bash` is
/// removed (a shim without recorded intents only passes calls through).
pub fn install(
    settings: Option<PathBuf>,
    launch: Option<&str>,
    dry_run: bool,
    shim: bool,
) -> anyhow::Result<i32> {
    use anyhow::Context;
    let path = match settings {
        Some(p) => p,
        None => {
            let config = iec_core::config::current();
            let base = config
                .claude_config_dir
                .unwrap_or_else(|| config.home.unwrap_or_default().join(".claude"));
            base.join("settings.json")
        }
    };
    // A settings file is small; an endless one (`--settings /dev/zero`) is read no further
    // than the limit and one byte.
    let read = std::fs::File::open(&path)
        .and_then(|f| iec_core::limits::read_at_most(f, MAX_SETTINGS))
        .and_then(|b| match b {
            iec_core::limits::Bounded::Whole(b) => Ok(b),
            iec_core::limits::Bounded::Over { .. } => Err(std::io::Error::other(TooLarge)),
        });
    if read
        .as_ref()
        .is_err_and(|e| e.get_ref().is_some_and(|i| i.is::<TooLarge>()))
    {
        anyhow::bail!(
            "{} is more than {MAX_SETTINGS} bytes; iec reads settings files of at most 16 MiB",
            path.display()
        );
    }
    let mut doc: Value = match read {
        Ok(b) if b.iter().all(u8::is_ascii_whitespace) => json!({}),
        Ok(b) => serde_json::from_slice(&b)
            .with_context(|| format!("{} is not JSON; not touching it", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let exe = std::env::current_exe()?;
    // The small `iec-hook` beside this binary starts faster and runs the same hook code
    // (`iec-hook hook claude-code` takes the same arguments as `iec hook claude-code`).
    let lean = exe.with_file_name("iec-hook");
    let hook_exe = if lean.is_file() { &lean } else { &exe };
    let mut command = format!("{} hook claude-code", shell_word(&hook_exe.to_string_lossy()));
    if let Some(l) = launch {
        command.push_str(&format!(" --launch {}", shell_word(l)));
    }
    let shim_path = exe.with_file_name("iec-bash");
    if shim {
        anyhow::ensure!(
            shim_path.is_file(),
            "{} not found (build it with `cargo build -p iec-shim`)",
            shim_path.display()
        );
        command.push_str(" --record-intent");
    }
    let obj = doc.as_object_mut().context("settings must be a JSON object")?;
    let env = obj.entry("env").or_insert_with(|| json!({}));
    let env_obj = env.as_object_mut().context("`env` must be an object")?;
    if shim {
        env_obj.insert(
            "CLAUDE_CODE_SHELL".into(),
            Value::String(shim_path.to_string_lossy().into_owned()),
        );
    } else if env_obj
        .get("CLAUDE_CODE_SHELL")
        .and_then(Value::as_str)
        .is_some_and(|p| p.ends_with("/iec-bash"))
    {
        env_obj.remove("CLAUDE_CODE_SHELL");
    }
    if env_obj.is_empty() {
        obj.remove("env");
    }
    let hooks = obj.entry("hooks").or_insert_with(|| json!({}));
    let pre = hooks
        .as_object_mut()
        .context("`hooks` must be an object")?
        .entry("PreToolUse")
        .or_insert_with(|| json!([]));
    let list = pre
        .as_array_mut()
        .context("`hooks.PreToolUse` must be an array")?;
    // Drop earlier iec entries, keep everything else.
    for group in list.iter_mut() {
        if let Some(hs) = group.get_mut("hooks").and_then(Value::as_array_mut) {
            hs.retain(|h| {
                !h.get("command")
                    .and_then(Value::as_str)
                    .is_some_and(|c| c.contains(" hook claude-code"))
            });
        }
    }
    list.retain(|g| {
        g.get("hooks")
            .and_then(Value::as_array)
            .is_none_or(|h| !h.is_empty())
    });
    list.push(
        json!({ "matcher": "Bash", "hooks": [{ "type": "command", "command": command, "timeout": 30 }] }),
    );
    let text = serde_json::to_string_pretty(&doc)? + "\n";
    if dry_run {
        out!("{text}");
        return Ok(0);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.iec-tmp");
    std::fs::write(&tmp, &text)?;
    std::fs::rename(&tmp, &path)?;
    outln!("iec: PreToolUse hook for Bash written to {}", path.display());
    if shim {
        outln!("iec: CLAUDE_CODE_SHELL={} (the shell shim)", shim_path.display());
    }
    Ok(0)
}

/// The longest settings file `iec install` reads: 16 MiB.
const MAX_SETTINGS: usize = 16 << 20;

#[derive(Debug)]
struct TooLarge;

impl std::fmt::Display for TooLarge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("too large")
    }
}

impl std::error::Error for TooLarge {}

/// Quotes a path for the hook's shell command line when it needs it.
fn shell_word(s: &str) -> String {
    if s.bytes()
        .all(|b| b.is_ascii_alphanumeric() || b"/._-+:@".contains(&b))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', "'\\''"))
    }
}
