//! Learning a launch from real runs (`iec harness learn`): marker payloads go through the real
//! harness once, and what its shell received decides the launch file — the wrapper template
//! (the observed outer text with the rendered marker cut out), the payload rendering (the known
//! rendering that reproduces every marker's outer text byte for byte), the shell's argv (read
//! from `/proc/$$/cmdline` by a marker), input validation (a marker the harness rejects before
//! any shell runs) and the snapshot's shadowed programs (`type -t` in the wrapper's context).
//! Nothing is copied from the built-in launch files.

use std::collections::BTreeMap;

use anyhow::{anyhow, bail, ensure, Context, Result};
use iec_launches::{render, Launch};
use serde_json::{json, Value};

use crate::agree::RunSpec;
use crate::driver::{run_claude_code_with, PayloadResult, RunOptions};

/// A marker payload: what it asks the harness to run and what it is for.
#[derive(Debug, Clone)]
pub struct Marker {
    pub id: &'static str,
    pub command: &'static str,
    pub purpose: &'static str,
}

/// The programs a snapshot may shadow with shell functions, asked of `type -t` in order.
pub const SHADOW_CANDIDATES: &[&str] = &["grep", "find", "rg", "ls", "cat", "sed"];

/// The marker payloads, in the order they are run.
pub fn markers() -> Vec<Marker> {
    vec![
        Marker { id: "plain", command: "argvprobe IECLEARN0", purpose: "the wrapper around a plain command" },
        Marker { id: "quote", command: "argvprobe 'IECLEARN1 it'\"'\"'s'", purpose: "how a single quote is rendered" },
        Marker { id: "bang", command: "argvprobe 'IECLEARN2 a != b'", purpose: "how `!` is rendered" },
        Marker { id: "dollar", command: "argvprobe 'IECLEARN3 $x `y` \\z' \"IECLEARN3 $HOME\"", purpose: "how `$`, backquotes and backslashes are rendered" },
        Marker { id: "pipe", command: "argvprobe IECLEARN5 '$$' | cat", purpose: "whether a piped command is rebuilt" },
        Marker { id: "cr", command: "argvprobe IECLEARN4\rx", purpose: "whether control characters are rejected before a shell runs" },
        Marker {
            id: "context",
            command: "argvprobe IECLEARN6 \"$(tr '\\0' '\\1' < /proc/$$/cmdline)\" \"$(type -t grep)\" \"$(type -t find)\" \"$(type -t rg)\" \"$(type -t ls)\" \"$(type -t cat)\" \"$(type -t sed)\"",
            purpose: "the shell's argv and the programs the snapshot shadows",
        },
    ]
}

/// A learned launch: its TOML file, the parsed launch, and what each marker showed.
#[derive(Debug, Clone)]
pub struct Learned {
    pub toml: String,
    pub launch: Launch,
    pub evidence: Vec<Value>,
}

/// Runs the markers through the real Claude Code of `spec` and learns its launch.
pub fn learn(spec: &RunSpec) -> Result<Learned> {
    let ms = markers();
    let cmds: Vec<&str> = ms.iter().map(|m| m.command).collect();
    let mut opts = RunOptions::new(&spec.version, spec.bin.clone(), &cmds);
    opts.timeout = spec.timeout;
    opts.probe = spec.probe.clone();
    let run = run_claude_code_with(&opts)?;
    ensure!(
        !run.timed_out,
        "Claude Code {} timed out on the marker payloads; stderr:\n{}",
        spec.version,
        run.stderr
    );
    ensure!(
        run.results.len() == ms.len(),
        "Claude Code {} returned {} results for {} marker payloads; stderr:\n{}",
        spec.version,
        run.results.len(),
        ms.len(),
        run.stderr
    );
    learn_from("claude-code", &spec.version, &ms, &run.results, &today())
}

fn today() -> String {
    std::process::Command::new("date")
        .args(["-u", "+%Y-%m-%d"])
        .output()
        .ok()
        .and_then(|o| String::from_utf8(o.stdout).ok())
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| "an unknown date".into())
}

/// The per-call state file name (`claude-<hex>-cwd`) with its random part fixed, so that outer
/// texts of different calls compare.
fn fix_state_files(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find("claude-") {
        out.push_str(&rest[..i]);
        let after = &rest[i + "claude-".len()..];
        let hex = after.bytes().take_while(u8::is_ascii_hexdigit).count();
        if hex > 0 && after[hex..].starts_with("-cwd") {
            out.push_str("claude-0a1b-cwd");
            rest = &after[hex + "-cwd".len()..];
        } else {
            out.push_str("claude-");
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// The word after `prefix` in `s` (up to white space), if `prefix` occurs.
fn word_after<'a>(s: &'a str, prefix: &str) -> Option<&'a str> {
    let i = s.find(prefix)? + prefix.len();
    let w = &s[i..];
    Some(&w[..w.find(char::is_whitespace).unwrap_or(w.len())])
}

/// Learns a launch from marker results (`results[i]` is the run of `markers[i]`).
pub fn learn_from(
    harness: &str,
    version: &str,
    markers: &[Marker],
    results: &[PayloadResult],
    date: &str,
) -> Result<Learned> {
    let by_id: BTreeMap<&str, (&Marker, &PayloadResult)> =
        markers.iter().zip(results).map(|(m, r)| (m.id, (m, r))).collect();
    let get = |id: &str| {
        by_id
            .get(id)
            .copied()
            .ok_or_else(|| anyhow!("marker {id} was not run"))
    };
    let mut evidence = vec![];
    for (m, r) in markers.iter().zip(results) {
        evidence.push(json!({
            "marker": m.id, "purpose": m.purpose, "command": m.command,
            "outer": r.outer, "probe": r.probe.iter().map(|p| &p.argv).collect::<Vec<_>>(),
            "tool_result": r.tool_result.as_ref().map(|t| json!({"is_error": t.is_error, "content": t.content})),
        }));
    }

    // 1. The wrapper and the payload rendering: the rendering whose words, cut out of the plain
    // marker's outer text, leave a template that reproduces every other marker's outer text.
    let (_, plain) = get("plain")?;
    let outer0 = plain.outer.as_deref().ok_or_else(|| {
        anyhow!(
            "the plain marker reached no shell (tool result: {:?})",
            plain.tool_result
        )
    })?;
    let checked: Vec<(&Marker, &str)> = markers
        .iter()
        .zip(results)
        .filter(|(m, _)| m.id != "context")
        .filter_map(|(m, r)| r.outer.as_deref().map(|o| (m, o)))
        .collect();
    let mut found = None;
    for kind in render::PAYLOADS {
        let w0 = render::payload(
            kind,
            markers.iter().find(|m| m.id == "plain").unwrap().command,
            None,
        )
        .words;
        if outer0.matches(w0.as_str()).count() != 1 {
            continue;
        }
        let template = outer0.replacen(w0.as_str(), "{{payload}}", 1);
        let all = checked.iter().all(|(m, outer)| {
            let w = render::payload(kind, m.command, None).words;
            fix_state_files(&template.replacen("{{payload}}", &w, 1)) == fix_state_files(outer)
        });
        if all {
            found = Some((*kind, template, w0));
            break;
        }
    }
    let (kind, template, w0) = found.ok_or_else(|| {
        anyhow!(
            "no known payload rendering ({}) reproduces the outer texts the shell received; plain marker's: {outer0:?}",
            render::PAYLOADS.join(", ")
        )
    })?;
    let eval = template.contains("eval {{payload}}");
    // A rendering that appends a stdin redirect inside its words hands eval that redirect too.
    let stdin_suffix = (kind != "single-quote" && w0.contains("/dev/null")).then_some(" < /dev/null");

    // 2. Machine paths out of the template: the snapshot and the state file.
    let mut template = template;
    if let Some(snap) = word_after(&template, "source ").filter(|p| p.contains("shell-snapshots")) {
        template = template.replacen(snap, "{{snapshot}}", 1);
    }
    if let Some(state) = word_after(&template, ">| ").filter(|p| p.ends_with("-cwd")) {
        template = template.replacen(state, "{{tmp}}/claude-0a1b-cwd", 1);
    }
    let tmp_left = template
        .split_whitespace()
        .find(|w| w.starts_with('/') && !w.starts_with("/dev/") && !w.contains("{{"));
    if let Some(w) = tmp_left {
        bail!("the learned template still names a path of this run ({w:?}): {template:?}");
    }

    // 3. The shell's argv and the shadowed programs, from the context marker's probe argv.
    let (_, ctx) = get("context")?;
    let probe = ctx
        .probe
        .iter()
        .find(|p| p.argv.first().is_some_and(|a| a == "IECLEARN6"))
        .ok_or_else(|| {
            anyhow!(
                "the context marker did not reach the probe: {:?}",
                ctx.tool_result
            )
        })?;
    ensure!(
        probe.argv.len() == 2 + SHADOW_CANDIDATES.len(),
        "context marker: the probe got {} arguments: {:?}",
        probe.argv.len(),
        probe.argv
    );
    let cmdline = probe.argv[1].strip_suffix('\u{1}').unwrap_or(&probe.argv[1]);
    let mut argv: Vec<String> = cmdline.split('\u{1}').map(str::to_string).collect();
    let wrapper = argv.pop().unwrap_or_default();
    ensure!(
        ctx.outer.as_deref() == Some(wrapper.as_str()),
        "the shell's last argument is not the outer text it ran: {wrapper:?} vs {:?}",
        ctx.outer
    );
    let shell = argv
        .first()
        .and_then(|a| a.rsplit('/').next())
        .filter(|s| ["bash", "sh", "dash", "zsh"].contains(s))
        .ok_or_else(|| anyhow!("the shell's argv[0] is no known shell: {argv:?}"))?
        .to_string();
    ensure!(
        shell == "bash",
        "learning models bash launches only; this harness ran {shell}"
    );
    argv.push("{{wrapper}}".into());
    let shadowed: Vec<&str> = SHADOW_CANDIDATES
        .iter()
        .zip(&probe.argv[2..])
        .filter(|(_, t)| *t == "function" || *t == "alias")
        .map(|(p, _)| *p)
        .collect();

    // 4. Validation: a control character rejected before any shell runs.
    let (_, cr) = get("cr")?;
    let reject = match (&cr.outer, &cr.tool_result) {
        (None, Some(t)) if t.is_error && cr.probe.is_empty() => Some(validation_message(&t.content)),
        (Some(_), _) => None,
        (None, t) => bail!("the control-character marker reached no shell and was not rejected: {t:?}"),
    };

    // 5. The file.
    let q = |s: &str| serde_json::to_string(s).unwrap();
    let id = format!("{harness}-{version}-linux-learned");
    let mut toml = format!(
        "# Learned by `iec harness learn --harness {harness}@{version}` on {date} from real runs of {} marker payloads.\n\
         id = {}\nharness = {}\nversion = {}\nos = \"linux\"\ntool = \"Bash\"\nsource = {}\n",
        markers.len(),
        q(&id),
        q(harness),
        q(version),
        q(&format!("learned by iec harness learn from real runs on {date}"))
    );
    if let Some(msg) = &reject {
        toml.push_str(&format!("\n[validate]\nreject_control_chars = {}\n", q(msg)));
    }
    toml.push_str(&format!(
        "\n[wrapper]\ntemplate = {}\npayload = {}\neval = {eval}\n",
        q(&template),
        q(kind)
    ));
    if let Some(s) = stdin_suffix {
        toml.push_str(&format!("stdin_suffix = {}\n", q(s)));
    }
    let argv_toml: Vec<String> = argv.iter().map(|a| q(a)).collect();
    toml.push_str(&format!(
        "\n[spawn]\nargv = [{}]\nshell = {}\n",
        argv_toml.join(", "),
        q(&shell)
    ));
    if !shadowed.is_empty() {
        let list: Vec<String> = shadowed.iter().map(|p| q(p)).collect();
        toml.push_str(&format!(
            "\n[snapshot]\nshadowed = [{}]\nnote = {}\n",
            list.join(", "),
            q("type -t reports these as shell functions after the snapshot is sourced")
        ));
    }
    let launch = Launch::from_toml(&toml)
        .with_context(|| format!("the learned launch file does not load:\n{toml}"))?;
    Ok(Learned {
        toml,
        launch,
        evidence,
    })
}

/// The harness's validation message without its tool-error tags, the schema error's own
/// `message` when the content is a JSON list of issues.
fn validation_message(content: &str) -> String {
    let c = content.trim();
    let c = c.strip_prefix("<tool_use_error>").unwrap_or(c);
    let c = c.strip_suffix("</tool_use_error>").unwrap_or(c).trim();
    if let Some((head, rest)) = c.split_once(": ") {
        if let Ok(Value::Array(issues)) = serde_json::from_str::<Value>(rest) {
            if let Some(m) = issues.iter().find_map(|i| i["message"].as_str()) {
                return format!("{head}: {m}");
            }
        }
    }
    c.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_files_compare_across_calls() {
        assert_eq!(
            fix_state_files("pwd -P >| /t/claude-3629-cwd"),
            "pwd -P >| /t/claude-0a1b-cwd"
        );
        assert_eq!(
            fix_state_files("claude-code claude-x-cwd"),
            "claude-code claude-x-cwd"
        );
    }

    #[test]
    fn validation_message_of_a_schema_error() {
        let c = "<tool_use_error>InputValidationError: [\n  {\n    \"code\": \"custom\",\n    \"message\": \"command contains control characters\"\n  }\n]</tool_use_error>";
        assert_eq!(
            validation_message(c),
            "InputValidationError: command contains control characters"
        );
        assert_eq!(validation_message("<tool_use_error>no</tool_use_error>"), "no");
    }
}
