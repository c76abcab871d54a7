//! `iec harness run` and `iec harness agree`: run payloads through a real harness (iec-harness),
//! and compare what arrived with `iec check`'s predictions.

use std::path::PathBuf;

use crate::out::{out, outln};
use anyhow::Result;
use iec_harness::agree::{
    agree, agreement_line, observed_line, parse_harness, read_payloads, run_document, run_observed, RunSpec,
};

#[derive(clap::Subcommand)]
pub enum HarnessCmd {
    /// Run payloads (JSON Lines {"id","command"}) through the real harness and report, per
    /// payload, whether the probe's argv equals a direct `bash -c` run (the observed verdict).
    Run {
        /// `claude-code@VERSION`, `codex@VERSION`, `gemini-cli@VERSION`, or a command-running MCP
        /// server `NAME@VERSION`.
        #[arg(long)]
        harness: String,
        /// A prebuilt cli.js or native binary (skips the npm install).
        #[arg(long)]
        bin: Option<PathBuf>,
        #[arg(long)]
        payloads: PathBuf,
        /// Payloads per harness launch.
        #[arg(long, default_value_t = 40)]
        batch: usize,
        /// The replay model's thinking time before each tool call, in milliseconds (an instant
        /// reply trips start-up races a user's session does not meet: Gemini CLI 0.13 refuses
        /// every call whose turn comes before its shell parser has loaded).
        #[arg(long, default_value_t = 1000)]
        think_ms: u64,
        #[arg(long, value_parser = ["text", "json"], default_value = "text")]
        format: String,
    },
    /// Learn a launch file from real runs of marker payloads (on Linux): the shell argv as bash
    /// reads it, the wrapper template, rewrites, payload rendering, eval or inner shell,
    /// validation and shadowed programs; each marker runs alone, piped and in `&&`/`;` lists.
    /// Then the learned launch is verified on held hazard payloads run through the real
    /// harness: when `iec check` on it disagrees with a real run, nothing is written and the
    /// exit code is 1 (`--force` writes it, the disagreements listed at its top).
    /// `--format json` adds what each marker showed and the verification.
    Learn {
        /// `claude-code@VERSION`, `codex@VERSION` or `gemini-cli@VERSION`.
        #[arg(long)]
        harness: String,
        /// A prebuilt cli.js or native binary (skips the npm install).
        #[arg(long)]
        bin: Option<PathBuf>,
        /// Write the launch file here (else it is printed).
        #[arg(long)]
        out: Option<PathBuf>,
        /// Held hazard payloads to verify the learned launch on (0: no verification).
        #[arg(long, default_value_t = 40)]
        verify: usize,
        /// Write (or print) the launch even when it disagrees with the real runs.
        #[arg(long)]
        force: bool,
        /// The replay model's thinking time before each tool call, in milliseconds.
        #[arg(long, default_value_t = 1000)]
        think_ms: u64,
        #[arg(long, value_parser = ["text", "json"], default_value = "text")]
        format: String,
    },
    /// Run payloads for real and `iec check` each on a launch; report prediction vs observation.
    /// Exit 0 when every verdict agrees, 1 otherwise.
    Agree {
        /// `claude-code@VERSION`, `codex@VERSION` or `gemini-cli@VERSION`.
        #[arg(long)]
        harness: String,
        #[arg(long)]
        bin: Option<PathBuf>,
        /// The launch whose predictions are compared.
        #[arg(long)]
        launch: String,
        #[arg(long)]
        payloads: PathBuf,
        #[arg(long, default_value_t = 40)]
        batch: usize,
        /// The replay model's thinking time before each tool call, in milliseconds (an instant
        /// reply trips start-up races a user's session does not meet: Gemini CLI 0.13 refuses
        /// every call whose turn comes before its shell parser has loaded).
        #[arg(long, default_value_t = 1000)]
        think_ms: u64,
        #[arg(long, value_parser = ["text", "json"], default_value = "text")]
        format: String,
    },
}

fn spec(harness: &str, bin: Option<PathBuf>, batch: usize, think_ms: u64) -> Result<RunSpec> {
    let mut s = RunSpec::new(&parse_harness(harness)?);
    s.bin = bin;
    s.batch = batch;
    s.think = std::time::Duration::from_millis(think_ms);
    Ok(s)
}

/// Runs a `harness` subcommand; returns the exit code.
pub fn run(cmd: HarnessCmd) -> Result<i32> {
    match cmd {
        // Command-running MCP servers (desktop-commander@VER, mcp-server-commands@VER,
        // mcp-shell-server@VER), driven by the Python `mcp` SDK as the real client.
        HarnessCmd::Run {
            harness,
            payloads,
            format,
            ..
        } if iec_harness::mcp_servers::parse_server(&harness).is_some() => {
            use iec_harness::mcp_servers as m;
            let spec = m::parse_server(&harness).expect("checked by the guard")?;
            let observed = m::run_observed(&spec, &read_payloads(&payloads)?, &Default::default())?;
            if format == "json" {
                outln!(
                    "{}",
                    serde_json::to_string_pretty(&m::run_document(&spec, &observed))?
                );
            } else {
                for o in &observed {
                    outln!("{}", observed_line(o));
                }
                outln!("{}", m::summary_line(&spec, &m::summarize(&observed)));
            }
            Ok(0)
        }
        // Codex (codex@VER): `codex exec` against the replay server's Responses API.
        HarnessCmd::Run {
            harness,
            bin,
            payloads,
            batch,
            think_ms,
            format,
        } if harness.starts_with("codex@") || harness.starts_with("gemini-cli@") => {
            // Gemini CLI (gemini-cli@VER): `gemini -p` against the replay server's Gemini API.
            let gemini = harness.starts_with("gemini-cli@");
            let mut spec = RunSpec::new(harness.split_once('@').map_or("", |(_, v)| v));
            spec.bin = bin;
            spec.batch = batch;
            spec.think = std::time::Duration::from_millis(think_ms);
            let ps = read_payloads(&payloads)?;
            let observed = if gemini {
                iec_harness::gemini::run_observed(&spec, &ps)?
            } else {
                iec_harness::codex::run_observed(&spec, &ps)?
            };
            if format == "json" {
                let doc = if gemini {
                    iec_harness::gemini::run_document(&spec.version, &observed)
                } else {
                    iec_harness::codex::run_document(&spec.version, &observed)
                };
                outln!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                for o in &observed {
                    outln!("{}", observed_line(o));
                }
            }
            Ok(0)
        }
        HarnessCmd::Run {
            harness,
            bin,
            payloads,
            batch,
            think_ms,
            format,
        } => {
            let spec = spec(&harness, bin, batch, think_ms)?;
            let ps = read_payloads(&payloads)?;
            let observed = run_observed(&spec, &ps)?;
            if format == "json" {
                let doc = run_document(&spec.version, &observed);
                outln!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                for o in &observed {
                    outln!("{}", observed_line(o));
                }
            }
            Ok(0)
        }
        HarnessCmd::Learn {
            harness,
            bin,
            out,
            verify,
            force,
            think_ms,
            format,
        } => {
            let (h, version) = iec_harness::harness::parse(&harness)?;
            let mut spec = RunSpec::new(&version);
            spec.bin = bin;
            spec.think = std::time::Duration::from_millis(think_ms);
            let opts = iec_harness::learn::LearnOptions { verify };
            let learned = iec_harness::learn::learn_harness(h.as_ref(), &spec, &opts)?;
            let agrees = learned.agrees();
            let written = (agrees || force).then(|| learned.toml_with_disagreements());
            if let (Some(path), Some(text)) = (&out, &written) {
                std::fs::write(path, text)?;
            }
            let summary = match &learned.verification {
                Some(v) => format!(
                    "{}/{} held payloads agree ({} changed by the real harness)",
                    v.agree, v.payloads, v.observed_changed
                ),
                None => "not verified on held payloads".to_string(),
            };
            if format == "json" {
                let doc = learned.document(out.as_deref().filter(|_| written.is_some()));
                outln!("{}", serde_json::to_string_pretty(&doc)?);
            } else {
                match (&out, &written) {
                    (Some(path), Some(_)) => eprintln!(
                        "wrote {} ({}, from {} markers in {:.1} s; {summary})",
                        path.display(),
                        learned.launch.id,
                        learned.evidence.len(),
                        learned.elapsed_ms as f64 / 1000.0
                    ),
                    (None, Some(text)) => out!("{text}"),
                    (_, None) => {}
                }
            }
            if !agrees {
                eprintln!(
                    "{} the real {harness} on {} ({summary}):",
                    if force {
                        "written with --force, though iec check on the learned launch disagrees with"
                    } else {
                        "not written: iec check on the learned launch disagrees with"
                    },
                    learned.disagreements().len()
                );
                for d in learned.disagreements() {
                    eprintln!("  {d}");
                }
                return Ok(if force { 0 } else { 1 });
            }
            Ok(0)
        }
        HarnessCmd::Agree {
            harness,
            bin,
            launch,
            payloads,
            batch,
            think_ms,
            format,
        } => {
            let ps = read_payloads(&payloads)?;
            let rep = if let Some(ver) = harness.strip_prefix("codex@") {
                // Codex: `codex exec` runs compared the same way.
                let mut spec = RunSpec::new(ver);
                spec.bin = bin;
                spec.batch = batch;
                spec.think = std::time::Duration::from_millis(think_ms);
                // A bad launch id fails before anything runs.
                iec_harness::agree::agree_observed(ver, &launch, &[])?;
                let observed = iec_harness::codex::run_observed(&spec, &ps)?;
                let mut rep = iec_harness::agree::agree_observed(ver, &launch, &observed)?;
                rep.harness = "codex".into();
                rep
            } else if let Some(ver) = harness.strip_prefix("gemini-cli@") {
                let mut spec = RunSpec::new(ver);
                spec.bin = bin;
                spec.batch = batch;
                spec.think = std::time::Duration::from_millis(think_ms);
                iec_harness::agree::agree_observed(ver, &launch, &[])?;
                let observed = iec_harness::gemini::run_observed(&spec, &ps)?;
                let mut rep = iec_harness::agree::agree_observed(ver, &launch, &observed)?;
                rep.harness = "gemini-cli".into();
                rep
            } else {
                agree(&spec(&harness, bin, batch, think_ms)?, &launch, &ps)?
            };
            if format == "json" {
                outln!("{}", serde_json::to_string_pretty(&rep)?);
            } else {
                for a in &rep.results {
                    outln!("{}", agreement_line(a));
                }
                outln!(
                    "{} payloads, {} agree, {} disagree",
                    rep.results.len(),
                    rep.totals["agree"],
                    rep.disagreements().len()
                );
            }
            Ok(if rep.all_agree() { 0 } else { 1 })
        }
    }
}
