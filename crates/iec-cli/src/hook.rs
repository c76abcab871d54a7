//! `iec hook claude-code`: the PreToolUse hook. It must never break the agent's turn: whatever
//! goes wrong inside is reported on stderr and the hook exits 0 without output, which leaves the
//! call to the user's own permission settings (fail open). A refusal is a `deny` decision.

use iec_core::Call;
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;

/// Runs the hook; the return value is the exit code (always 0: decisions travel as JSON).
/// With `record_intent` (or `IEC_INTENT_DIR` set) it records the command for the shell shim
/// `iec-bash` and lets the call through unchanged; when it cannot record, it repairs as usual.
pub fn claude_code(launch: &str, launch_files: &[PathBuf], record_intent: bool) -> i32 {
    let record_intent =
        record_intent || std::env::var_os(iec_shim::intent::DIR_ENV).is_some_and(|v| !v.is_empty());
    match decide(launch, launch_files, record_intent) {
        Ok(Some(doc)) => {
            println!("{doc}");
            0
        }
        Ok(None) => 0,
        Err(e) => {
            eprintln!("iec hook: {e:#} (the call is left to your permission settings)");
            0
        }
    }
}

fn decide(launch: &str, launch_files: &[PathBuf], record_intent: bool) -> anyhow::Result<Option<Value>> {
    let mut input = Vec::new();
    std::io::stdin().read_to_end(&mut input)?;
    let doc: Value = serde_json::from_slice(&input)?;
    if doc.get("tool_name").and_then(Value::as_str) != Some("Bash") {
        return Ok(None);
    }
    let Some(tool_input) = doc
        .get("tool_input")
        .filter(|v| v.get("command").is_some_and(Value::is_string))
    else {
        return Ok(None);
    };
    if record_intent {
        let command = tool_input["command"].as_str().unwrap_or_default();
        match record(command) {
            // The shim delivers the recorded text itself; nothing to change here.
            Ok(()) => return Ok(None),
            Err(e) => eprintln!("iec hook: cannot record the intent for iec-bash ({e}); repairing instead"),
        }
    }
    let cat = crate::catalog_for(launch, launch_files)?;
    let l = cat.get(launch)?;
    let call = Call {
        tool: "Bash".into(),
        input: tool_input.clone(),
    };
    Ok(match iec_repair::repair(l, &call, iec_witness::global())? {
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

/// Records `command` in the intent store, scoped to this process's ancestors (the harness).
fn record(command: &str) -> Result<(), iec_shim::intent::StoreError> {
    let store = iec_shim::intent::Store::create_default()?;
    store.prune();
    store.record(command, iec_shim::intent::scope_of_self(), "claude-code")?;
    Ok(())
}

/// `iec install claude-code`: adds (or replaces) one PreToolUse hook for Bash that runs this
/// binary; every other setting and hook is kept. A settings file that is not JSON is an error and
/// is left as it is. With `shim`, `env.CLAUDE_CODE_SHELL` names `iec-bash` (beside this binary)
/// and the hook records intents; without it, a `CLAUDE_CODE_SHELL` naming an `iec-bash` is
/// removed (a shim without recorded intents only passes calls through).
pub fn install(settings: Option<PathBuf>, launch: &str, dry_run: bool, shim: bool) -> anyhow::Result<i32> {
    use anyhow::Context;
    let path = match settings {
        Some(p) => p,
        None => {
            let base = std::env::var_os("CLAUDE_CONFIG_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| {
                    PathBuf::from(std::env::var_os("HOME").unwrap_or_default()).join(".claude")
                });
            base.join("settings.json")
        }
    };
    let mut doc: Value = match std::fs::read(&path) {
        Ok(b) if b.iter().all(u8::is_ascii_whitespace) => json!({}),
        Ok(b) => serde_json::from_slice(&b)
            .with_context(|| format!("{} is not JSON; not touching it", path.display()))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => json!({}),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let exe = std::env::current_exe()?;
    let mut command = format!(
        "{} hook claude-code --launch {launch}",
        shell_word(&exe.to_string_lossy())
    );
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
        print!("{text}");
        return Ok(0);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let tmp = path.with_extension("json.iec-tmp");
    std::fs::write(&tmp, &text)?;
    std::fs::rename(&tmp, &path)?;
    println!("iec: PreToolUse hook for Bash written to {}", path.display());
    if shim {
        println!("iec: CLAUDE_CODE_SHELL={} (the shell shim)", shim_path.display());
    }
    Ok(0)
}

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
