//! Observed verdicts from real harness runs (`iec harness run`), and their agreement with
//! `iec check`'s predictions (`iec harness agree`).
//!
//! The observed verdict of a payload is `corresponds` when the probe's argv records through the
//! harness equal the direct `bash -c` run's (for a payload that does not start with `argvprobe`:
//! when the tool result's text equals the direct run's stdout, both trimmed at the end),
//! `diverges` otherwise, and `unknown` when the probe ran neither through the harness nor
//! directly. A tool result carrying `InputValidationError`, or any error tool result of a call
//! that reached no shell of the harness (a refusal by the harness's own rules), is hop
//! `tool-input`, mechanism `other`, loud.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use iec_core::Hop;
use serde::Serialize;
use serde_json::{json, Value};

use crate::driver::{run_claude_code_with, PayloadResult, RunOptions};
use crate::harness::observe_launches;

/// One payload: an id and the command text the model emits.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
pub struct Payload {
    pub id: String,
    pub command: String,
}

/// Reads a JSON Lines payload file (`{"id": …, "command": …}` per line; blank lines skipped).
pub fn read_payloads(path: &Path) -> anyhow::Result<Vec<Payload>> {
    // Bounded: a payload file is read no further than 256 MiB and one byte.
    const MAX_PAYLOADS: usize = 256 << 20;
    let bytes = std::fs::File::open(path)
        .and_then(|f| iec_core::limits::read_at_most(f, MAX_PAYLOADS))
        .with_context(|| format!("cannot read {}", path.display()))?;
    let iec_core::limits::Bounded::Whole(bytes) = bytes else {
        anyhow::bail!(
            "{} is more than {MAX_PAYLOADS} bytes; iec reads payload files of at most 256 MiB",
            path.display()
        );
    };
    let text = String::from_utf8(bytes).with_context(|| format!("{} is not UTF-8", path.display()))?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let p: Payload = serde_json::from_str(line).with_context(|| {
            format!(
                "{}:{}: not a {{\"id\",\"command\"}} object",
                path.display(),
                i + 1
            )
        })?;
        out.push(p);
    }
    Ok(out)
}

/// Parses `claude-code@VERSION`.
pub fn parse_harness(spec: &str) -> anyhow::Result<String> {
    match spec.split_once('@') {
        Some(("claude-code", v)) if !v.is_empty() => Ok(v.to_string()),
        _ => anyhow::bail!("unsupported harness {spec:?} (expected claude-code@VERSION)"),
    }
}

/// The observed first divergence.
#[derive(Debug, Clone, Serialize)]
pub struct ObservedDivergence {
    pub hop_name: String,
    pub mechanism: String,
    pub silent: bool,
    /// The direct run's argv records (or output), joined: what should have arrived.
    pub intended: String,
    /// What arrived through the harness, joined the same way.
    pub received: String,
}

impl ObservedDivergence {
    /// A change at `hop` by `mechanism`, with what should have arrived and what did.
    pub fn new(hop: Hop, mechanism: &str, silent: bool, intended: String, received: String) -> Self {
        ObservedDivergence {
            hop_name: hop.name().into(),
            mechanism: mechanism.into(),
            silent,
            intended,
            received,
        }
    }

    /// What a harness's own refusal of a call is: a loud change at `tool-input` (nothing ran).
    pub fn refused(intended: String, refusal: String) -> Self {
        ObservedDivergence::new(Hop::ToolInput, "other", false, intended, refusal)
    }
}

/// One payload's observation.
#[derive(Debug, Clone, Serialize)]
pub struct Observed {
    pub id: String,
    pub command: String,
    pub verdict: String,
    pub first_divergence: Option<ObservedDivergence>,
    pub received: Value,
    pub direct: Value,
    pub tool_result: Value,
}

/// Argv records joined: each argv's words by a space, the records by a newline.
pub(crate) fn join_argvs(recs: &[crate::probe::ProbeRecord]) -> String {
    recs.iter()
        .map(|r| r.argv.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hop an observed change is attributed to, read from the outer text bash received: a
/// double-quoted `eval "…"` wrapper is taken as the `eval` hop (the text is right for an
/// interactive parse and changes when the non-interactive shell hands it to eval), a
/// text whose `< /dev/null` sits before a `|` inside the eval'd string, or a single-quoted
/// `eval '…'`, as `wrapper` (the words were re-quoted before eval saw them), no outer text as `tool-input`,
/// anything else as `shell`.
fn observed_hop(r: &PayloadResult) -> Hop {
    match &r.outer {
        None => Hop::ToolInput,
        // The pipe path: the wrapper re-quoted the words and moved `< /dev/null` before the
        // first `|` (whatever quotes then carry the text to eval).
        Some(o) if o.contains("< /dev/null |") => Hop::Wrapper,
        Some(o) if o.contains("eval \"") => Hop::Eval,
        Some(o) if o.contains("eval '") => Hop::Wrapper,
        Some(_) => Hop::Shell,
    }
}

/// Argv records as compared: when the payload mentions `$$` (the shell's pid, which differs
/// between the harness's bash and the direct run), every run of digits becomes `<n>`.
fn shape(payload: &str, recs: Vec<Vec<String>>) -> Vec<Vec<String>> {
    if !payload.contains("$$") {
        return recs;
    }
    recs.into_iter()
        .map(|r| r.iter().map(|s| digit_runs(s)).collect())
        .collect()
}

/// `s` with every run of digits written `<n>`.
fn digit_runs(s: &str) -> String {
    let mut out = String::new();
    let mut in_digits = false;
    for c in s.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push_str("<n>");
            }
            in_digits = true;
        } else {
            in_digits = false;
            out.push(c);
        }
    }
    out
}

/// A tool result's text without the `<system-reminder>…</system-reminder>` blocks Claude Code
/// (1.0.x, 2.0.x) appends for the model: they are the harness's, not the command's output.
pub fn strip_reminders(content: &str) -> String {
    let mut out = String::new();
    let mut rest = content;
    while let Some(i) = rest.find("<system-reminder>") {
        let Some(j) = rest[i..].find("</system-reminder>") else {
            break;
        };
        out.push_str(&rest[..i]);
        rest = &rest[i + j + "</system-reminder>".len()..];
    }
    out.push_str(rest);
    out
}

/// The output of a piped payload that the direct run printed and the harness's tool result
/// lacks: `(direct stdout, tool result)`. The probes' argv can be the same while a pipe's reader
/// read something else (a `< /dev/null` put on `cat` in `argvprobe x | cat` replaces the pipe,
/// and `cat` prints nothing); the outputs tell. `None` where the payload has no pipe, the
/// direct run printed nothing, or the harness gave no tool result.
fn lost_pipe_output(r: &PayloadResult) -> Option<(String, String)> {
    if !r.payload.contains('|') {
        return None;
    }
    let want = r.direct.stdout.trim_end();
    let got = strip_reminders(&r.tool_result.as_ref()?.content);
    // The shell's pid differs between the runs where the payload prints `$$` (as in [`shape`]).
    let digits = |s: &str| match r.payload.contains("$$") {
        true => digit_runs(s),
        false => s.to_string(),
    };
    // Gemini CLI 0.11 on runs the command in a pseudo-terminal of 80 columns and reports the
    // screen: a long output line comes back broken at the width and short lines padded with
    // spaces, so line breaks and the white space before them do not count.
    let unbroken = |s: &str| s.lines().map(str::trim_end).collect::<String>();
    (!want.is_empty() && !digits(&unbroken(&got)).contains(&digits(&unbroken(want))))
        .then(|| (want.to_string(), got.trim_end().to_string()))
}

/// Derives the observed verdict of one harness result.
pub fn observe(id: &str, r: &PayloadResult) -> Observed {
    let argvs = |recs: &[crate::probe::ProbeRecord]| -> Vec<Vec<String>> {
        recs.iter().map(|p| p.argv.clone()).collect()
    };
    let received = json!({
        "outer": r.outer,
        "probe": argvs(&r.probe),
        "hex": r.probe.iter().map(|p| p.hex.clone()).collect::<Vec<_>>(),
    });
    let direct = json!({
        "probe": argvs(&r.direct.probe),
        "stdout": r.direct.stdout,
        "exit_code": r.direct.exit_code,
    });
    let tool_result = match &r.tool_result {
        Some(t) => json!({"is_error": t.is_error, "content": t.content}),
        None => Value::Null,
    };
    // A probe call anywhere in the command (`true && argvprobe …`): its argv records decide.
    let is_probe = r.payload.contains("argvprobe");
    // The harness refused the call before any shell ran: its input validation, or a rule of its
    // own (Claude Code from 2.1.317 on refuses, even with permissions bypassed, a command "it
    // can't be sure it read the way the shell will"), while the direct run ran it.
    let nothing_ran = r.outer.is_none() && r.bash_strings.is_empty() && r.probe.is_empty();
    let validation = r.tool_result.as_ref().is_some_and(|t| {
        t.is_error
            && (t.content.contains("InputValidationError")
                || (nothing_ran && !r.direct.bash_strings.is_empty()))
    });
    // A change of the text: attributed from the outer text, classified by how `got` differs
    // from `want`, silent when the call did not fail.
    let changed = |want: String, got: String| {
        let mechanism = iec_check::classify::mechanism(&want, &got);
        let silent = !r.tool_result.as_ref().is_some_and(|t| t.is_error);
        let fd = ObservedDivergence::new(observed_hop(r), mechanism.as_str(), silent, want, got);
        ("diverges", Some(fd))
    };
    let (verdict, fd) = if validation {
        let refusal = r
            .tool_result
            .as_ref()
            .map(|t| t.content.clone())
            .unwrap_or_default();
        let fd = ObservedDivergence::refused(join_argvs(&r.direct.probe), refusal);
        ("diverges", Some(fd))
    } else if is_probe {
        if r.probe.is_empty() && r.direct.probe.is_empty() {
            ("unknown", None)
        } else if shape(&r.payload, argvs(&r.probe)) == shape(&r.payload, argvs(&r.direct.probe)) {
            match lost_pipe_output(r) {
                Some((want, got)) => changed(want, got),
                None => ("corresponds", None),
            }
        } else {
            changed(join_argvs(&r.direct.probe), join_argvs(&r.probe))
        }
    } else {
        let want = r.direct.stdout.trim_end().to_string();
        let got = r
            .tool_result
            .as_ref()
            .map(|t| strip_reminders(&t.content).trim_end().to_string());
        match got {
            None if r.direct.bash_strings.is_empty() => ("unknown", None),
            Some(g) if g == want => ("corresponds", None),
            g => changed(want, g.unwrap_or_default()),
        }
    };
    Observed {
        id: id.to_string(),
        command: r.payload.clone(),
        verdict: verdict.into(),
        first_divergence: fd,
        received,
        direct,
        tool_result,
    }
}

/// How to run payloads for real.
#[derive(Debug, Clone)]
pub struct RunSpec {
    pub version: String,
    pub bin: Option<PathBuf>,
    pub probe: Option<PathBuf>,
    /// Payloads per harness launch.
    pub batch: usize,
    pub timeout: Duration,
    /// The replay model's thinking time before each tool call (zero: at once).
    pub think: Duration,
}

impl RunSpec {
    pub fn new(version: &str) -> Self {
        RunSpec {
            version: version.to_string(),
            bin: None,
            probe: None,
            batch: 40,
            timeout: Duration::from_secs(120),
            think: Duration::ZERO,
        }
    }
}

/// Runs `payloads` through real Claude Code in batches (one launch per batch, the recording hook
/// on) and observes each.
pub fn run_observed(spec: &RunSpec, payloads: &[Payload]) -> anyhow::Result<Vec<Observed>> {
    observe_launches(
        "Claude Code",
        spec,
        spec.batch.max(1),
        payloads,
        |cmds| run_claude_code_with(&RunOptions::for_spec(spec, cmds)),
        |p, r, _| Ok(observe(&p.id, r)),
    )
}

/// The `iec harness run` document.
pub fn run_document(version: &str, observed: &[Observed]) -> Value {
    json!({"harness": "claude-code", "version": version, "payloads": observed})
}

/// One payload's prediction next to its observation.
#[derive(Debug, Clone, Serialize)]
pub struct Agreement {
    pub id: String,
    pub command: String,
    pub predicted: Value,
    pub observed: Value,
    /// Predicted corresponds ⇔ observed corresponds.
    pub verdict_agree: bool,
    /// Both diverge at the same hop name (`None` when not both diverge).
    pub hop_agree: Option<bool>,
}

/// The `iec harness agree` report.
#[derive(Debug, Clone, Serialize)]
pub struct AgreeReport {
    pub harness: String,
    pub version: String,
    pub launch: String,
    pub results: Vec<Agreement>,
    pub totals: Value,
}

impl AgreeReport {
    pub fn all_agree(&self) -> bool {
        self.results.iter().all(|a| a.verdict_agree)
    }
    pub fn disagreements(&self) -> Vec<&Agreement> {
        self.results.iter().filter(|a| !a.verdict_agree).collect()
    }
}

/// `iec check`'s prediction for one command on one launch (the library call `iec check` makes).
pub fn predict(launch: &iec_launches::Launch, command: &str) -> anyhow::Result<iec_core::CheckReport> {
    let call = iec_check::call_for_text(launch, command);
    Ok(iec_check::check(
        launch,
        &call,
        iec_witness::global(),
        Default::default(),
    )?)
}

/// Compares predictions for `launch_id` with observations.
pub fn agree_observed(version: &str, launch_id: &str, observed: &[Observed]) -> anyhow::Result<AgreeReport> {
    let cat = iec_launches::Catalog::builtin();
    agree_observed_launch(version, cat.get(launch_id)?, observed)
}

/// Compares predictions for `launch` (a built-in one, a launch file's, a learned one) with
/// observations.
pub fn agree_observed_launch(
    version: &str,
    launch: &iec_launches::Launch,
    observed: &[Observed],
) -> anyhow::Result<AgreeReport> {
    let launch_id = launch.id.as_str();
    let mut results = Vec::new();
    for o in observed {
        let rep = predict(launch, &o.command)?;
        let pv = rep.verdict.as_str();
        let verdict_agree = (pv == "corresponds") == (o.verdict == "corresponds");
        let hop_agree = match (&rep.first_divergence, &o.first_divergence) {
            (Some(p), Some(ob)) => Some(p.hop_name == ob.hop_name),
            _ => None,
        };
        results.push(Agreement {
            id: o.id.clone(),
            command: o.command.clone(),
            predicted: json!({
                "verdict": pv,
                "first_divergence": rep.first_divergence.as_ref().map(|f| json!({
                    "hop_name": f.hop_name, "kind": f.kind, "mechanism": f.mechanism,
                    "silent": f.silent, "intended": f.intended, "received": f.received,
                })),
                "reason": rep.reason,
            }),
            observed: json!({
                "verdict": o.verdict,
                "first_divergence": o.first_divergence,
                "received": o.received,
                "direct": o.direct,
                "tool_result": o.tool_result,
            }),
            verdict_agree,
            hop_agree,
        });
    }
    let agree = results.iter().filter(|a| a.verdict_agree).count();
    let hop_disagree = results.iter().filter(|a| a.hop_agree == Some(false)).count();
    let disagree: Vec<&str> = results
        .iter()
        .filter(|a| !a.verdict_agree)
        .map(|a| a.id.as_str())
        .collect();
    let totals = json!({
        "payloads": results.len(),
        "agree": agree,
        "disagree": disagree,
        "hop_disagree": hop_disagree,
    });
    Ok(AgreeReport {
        harness: "claude-code".into(),
        version: version.into(),
        launch: launch_id.into(),
        results,
        totals,
    })
}

/// Runs the payloads for real and compares with `iec check` on `launch_id`.
pub fn agree(spec: &RunSpec, launch_id: &str, payloads: &[Payload]) -> anyhow::Result<AgreeReport> {
    // Fail on a bad launch id before running anything.
    iec_launches::Catalog::builtin().get(launch_id)?;
    let observed = run_observed(spec, payloads)?;
    agree_observed(&spec.version, launch_id, &observed)
}

/// A one-line text form of an agreement.
pub fn agreement_line(a: &Agreement) -> String {
    let side = |v: &Value| -> String {
        let verdict = v["verdict"].as_str().unwrap_or("?").to_string();
        match v["first_divergence"].as_object() {
            Some(f) => format!(
                "{verdict} at {} ({})",
                f.get("hop_name").and_then(|h| h.as_str()).unwrap_or("?"),
                f.get("mechanism").and_then(|h| h.as_str()).unwrap_or("?")
            ),
            None => verdict,
        }
    };
    format!(
        "{} {}  predicted {} / observed {}{}  {:?}",
        if a.verdict_agree { "agree   " } else { "DISAGREE" },
        a.id,
        side(&a.predicted),
        side(&a.observed),
        match a.hop_agree {
            Some(false) => " (hop differs)",
            _ => "",
        },
        a.command
    )
}

/// A one-line text form of an observation.
pub fn observed_line(o: &Observed) -> String {
    match &o.first_divergence {
        Some(f) => format!(
            "{} diverges at {} ({}, {}): {:?} -> {:?}  {:?}",
            o.id,
            f.hop_name,
            f.mechanism,
            if f.silent { "silent" } else { "loud" },
            f.intended,
            f.received,
            o.command
        ),
        None => format!("{} {}  {:?}", o.id, o.verdict, o.command),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::launch::DirectRun;
    use crate::probe::ProbeRecord;
    use crate::server::ToolResult;

    /// A piped probe payload whose probe saw `argv` in both runs, the direct run printing
    /// `direct` and the harness answering `harness`.
    fn result(payload: &str, direct: &str, harness: &str) -> PayloadResult {
        let probe = vec![ProbeRecord {
            argv: vec!["x".into()],
            hex: vec!["78".into()],
        }];
        PayloadResult {
            payload: payload.into(),
            emitted: payload.into(),
            echoed: None,
            outer: Some(format!("eval '{payload}' \\< /dev/null")),
            bash_strings: vec![],
            probe: probe.clone(),
            hook_input: None,
            tool_result: Some(ToolResult {
                tool_use_id: "t".into(),
                is_error: false,
                content: harness.into(),
            }),
            direct: DirectRun {
                probe,
                stdout: direct.into(),
                exit_code: Some(0),
                ..Default::default()
            },
        }
    }

    #[test]
    fn a_pipe_whose_reader_lost_its_input_diverges_though_the_argv_is_the_same() {
        // 2.1.5 to 2.1.40 append `< /dev/null` to a piped text with a backquote: `cat` reads
        // /dev/null instead of the pipe and prints nothing.
        let out = "{\"argv\":[\"x\"]}\n";
        let lost = observe("p", &result("argvprobe x | cat", out, ""));
        assert_eq!(lost.verdict, "diverges");
        let kept = observe("p", &result("argvprobe x | cat", out, out.trim_end()));
        assert_eq!(kept.verdict, "corresponds");
        // Without a pipe the argv alone decides (the output may carry the harness's notes).
        let plain = observe("p", &result("argvprobe x", out, ""));
        assert_eq!(plain.verdict, "corresponds");
        // The shell's pid differs between the runs: digits are compared as digits.
        let pid = observe("p", &result("argvprobe x $$ | cat", "PID 123\n", "PID 45678"));
        assert_eq!(pid.verdict, "corresponds");
    }

    #[test]
    fn gemini_pty_output_broken_at_80_columns_and_padded_still_corresponds() {
        // Gemini CLI 0.12.0 reports the pseudo-terminal's screen: lines padded to 80 columns,
        // a longer one broken at the width.
        let long = format!("{{\"argv\":[\"{}\"]}}", "a".repeat(90));
        let direct = format!("{{\"argv\":[\"|\"]}}\n{long}\n");
        let screen = format!(
            "{{\"argv\":[\"|\"]}}{}\n{}\n{}",
            " ".repeat(62),
            &long[..80],
            &long[80..]
        );
        let o = observe("p", &result("argvprobe '|'; argvprobe aaa", &direct, &screen));
        assert_eq!(o.verdict, "corresponds", "{o:?}");
        // A pid broken at the width is still one number.
        let pid = observe(
            "p",
            &result("argvprobe x $$ | cat", "PID 123456\n", "PID 1234\n56"),
        );
        assert_eq!(pid.verdict, "corresponds", "{pid:?}");
        // A lost line still diverges.
        let lost = observe("p", &result("argvprobe '|'; argvprobe aaa", &direct, &long[..80]));
        assert_eq!(lost.verdict, "diverges");
    }
}
