//! `iec hook claude-code`: the PreToolUse hook. It must never break the agent's turn: whatever
//! goes wrong inside is reported on stderr and the hook exits 0 without output, which leaves the
//! call to the user's own permission settings (fail open). A refusal is a `deny` decision.

use iec_core::Call;
use serde_json::{json, Value};
use std::io::Read;
use std::path::PathBuf;

/// Runs the hook; the return value is the exit code (always 0: decisions travel as JSON).
pub fn claude_code(launch: &str, launch_files: &[PathBuf]) -> i32 {
    match decide(launch, launch_files) {
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

fn decide(launch: &str, launch_files: &[PathBuf]) -> anyhow::Result<Option<Value>> {
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
    let cat = crate::catalog(launch_files)?;
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
