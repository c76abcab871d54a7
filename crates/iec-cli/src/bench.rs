//! `iec bench`: IEC-Bench in replay mode (the default) or harness mode (the pairs, chains and
//! tasks through a real Claude Code, Codex or Gemini CLI beside replay mode's outcome on its
//! launch).

use crate::out::{out, outln};
use anyhow::{bail, Context, Result};
use iec_bench::{chain, html, report, Runner, Suite, PATHS};
use iec_launches::Catalog;
use std::io::IsTerminal;
use std::path::PathBuf;

#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    cmd: Option<Sub>,
    /// Replay every pair, chain and task on all six paths (the default set; the flag names
    /// the acceptance run).
    #[arg(long)]
    quick: bool,
    /// Only these paths (launch ids, comma-separated); default: the six of `--quick`.
    #[arg(long, value_delimiter = ',')]
    paths: Vec<String>,
    /// Read pairs.jsonl, chains.jsonl and tasks.jsonl from this folder instead of the built-in data.
    #[arg(long)]
    data: Option<PathBuf>,
    /// Check a real ToolHop.json (schema only: ToolHop ships no trajectories, and its Python
    /// functions are never run) and report how many records it holds.
    #[arg(long)]
    toolhop: Option<PathBuf>,
    /// Worker threads (default: four per CPU, at most 16: most of the time is spent waiting
    /// for sandboxed processes and terminal witnesses).
    #[arg(long)]
    threads: Option<usize>,
    /// Include every item's result on every path in the JSON report.
    #[arg(long)]
    items: bool,
    /// Also write the report as one self-contained HTML file (inline SVG charts: lost and
    /// recovered per path, mechanisms, McNemar; no script, no network).
    #[arg(long, value_name = "FILE")]
    html: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    format: crate::Format,
    /// `replay`: the recorded actions along each path's model (every pair, chain and task);
    /// `harness`: every pair's texts, chain's steps and task's actions as tool calls to a real
    /// harness binary (`--harness`), executed for real in the item's sandbox (a chain's later
    /// step built from what the previous step's tool received), beside replay mode's outcome on
    /// the launch that models it;
    /// `agent`: a model (`--endpoint`, `--model`) does each task with a shell tool whose calls
    /// go along each path and run in the task's sandbox, IntAct off and on.
    #[arg(long, value_enum, default_value = "replay")]
    mode: Mode,
    /// The harness of `--mode harness`: `claude-code@VERSION` (its launch is
    /// `claude-code-VERSION-linux`; a `cd` call puts each item's calls in its sandbox), `codex@VERSION`
    /// or `gemini-cli@VERSION` (the learned launch whose version range holds VERSION, as `iec
    /// check --harness` resolves it; each call runs in its sandbox through the shell tool's
    /// `workdir`/`dir_path`, checked by a `pwd` probe per launch). Installed from npm into iec's
    /// cache unless `--harness-bin` names it.
    #[arg(long, value_name = "NAME@VERSION", default_value = iec_bench::harness::DEFAULT_HARNESS)]
    harness: String,
    /// `--mode harness`: a prebuilt harness (a `.js` file runs under `node`).
    #[arg(long, value_name = "FILE")]
    harness_bin: Option<PathBuf>,
    /// `--mode harness`: IntAct off only (without it, IntAct on runs too: this `iec` as Claude
    /// Code's PreToolUse hook, `iec hook claude-code --launch LAUNCH`). Codex and Gemini CLI run
    /// IntAct off only (iec has no hook for them), and the report says so.
    #[arg(long)]
    no_intact: bool,
    /// `--mode harness`: the size of a harness launch in pair variants: at most 2×N tool calls
    /// for Claude Code (`cd` and the text per variant; a chain or task: `cd` and each step or
    /// action), N for Codex and Gemini CLI (at most 89, as Gemini CLI ends a prompt after 100
    /// model turns); an item's calls stay in one launch.
    #[arg(long, default_value_t = iec_bench::harness::DEFAULT_BATCH)]
    batch: usize,
    /// `--mode harness` with Codex or Gemini CLI: the replay model's thinking time before each
    /// tool call, in milliseconds.
    #[arg(long, value_name = "MS", default_value_t = iec_bench::harness::DEFAULT_THINK.as_millis() as u64)]
    think_ms: u64,
    /// `--mode agent`: the model's base URL as the vendor SDKs take it
    /// (`https://api.anthropic.com`, `https://api.openai.com/v1`, a local server).
    #[arg(long, value_name = "URL")]
    endpoint: Option<String>,
    /// `--mode agent`: the model name sent with each request.
    #[arg(long, value_name = "NAME")]
    model: Option<String>,
    /// `--mode agent`: the endpoint's API (Anthropic Messages, or OpenAI-compatible Chat
    /// Completions).
    #[arg(long, value_enum, default_value = "anthropic")]
    api: ApiArg,
    /// `--mode agent`: the environment variable that holds the key (default
    /// `ANTHROPIC_API_KEY` or `OPENAI_API_KEY`; optional for an endpoint on this machine).
    #[arg(long, value_name = "VAR")]
    key_env: Option<String>,
    /// `--mode agent`: model requests per task at most.
    #[arg(long, value_name = "N", default_value_t = iec_bench::agent::DEFAULT_MAX_TURNS)]
    max_turns: usize,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ApiArg {
    Anthropic,
    Openai,
}

#[derive(Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum Mode {
    Replay,
    Harness,
    Agent,
}

pub fn run(a: Args) -> Result<i32> {
    if let Some(Sub::Export(e)) = a.cmd {
        return export(e);
    }
    if a.mode == Mode::Harness {
        return harness(a);
    }
    if a.mode == Mode::Agent {
        return agent(a);
    }
    if a.endpoint.is_some() || a.model.is_some() {
        bail!("--endpoint and --model are for --mode agent");
    }
    let suite = match &a.data {
        Some(dir) => Suite::load(dir)?,
        None => Suite::builtin()?,
    };
    let toolhop = match &a.toolhop {
        Some(f) => Some(chain::load_toolhop(f)?.len()),
        None => None,
    };
    let paths: Vec<&str> = if a.paths.is_empty() {
        PATHS.to_vec()
    } else {
        a.paths.iter().map(String::as_str).collect()
    };
    if paths.is_empty() {
        bail!("--paths names no launch");
    }
    let cat = Catalog::builtin();
    let threads = a
        .threads
        .unwrap_or_else(|| (4 * std::thread::available_parallelism().map_or(2, |n| n.get())).min(16));
    let runner = Runner::new(&cat, &paths)?;
    // Opened before the run, so that a path that cannot be written fails at once.
    let mut html_file = match &a.html {
        Some(f) => Some(
            std::fs::File::create(f)
                .with_context(|| format!("cannot write the HTML report to {}", f.display()))?,
        ),
        None => None,
    };
    // A progress bar on stderr only when it is a terminal: never in a pipe or a file, and
    // never in the report on stdout.
    let bar = std::io::stderr().is_terminal().then(|| {
        let b = indicatif::ProgressBar::new(0);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "{bar:40} {pos}/{len} steps (items, then items × paths) {elapsed} (eta {eta})",
        ) {
            b.set_style(style);
        }
        b
    });
    let progress = |done: usize, total: usize| {
        if let Some(b) = &bar {
            b.set_length(total as u64);
            b.set_position(done as u64);
        }
    };
    let mut rep = runner.run_with_progress(&suite, threads, &progress)?;
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    if a.format == crate::Format::Json {
        let mut v = report_json(&mut rep, a.items)?;
        if let Some(n) = toolhop {
            v["toolhop_records"] = n.into();
        }
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        out!("{}", report::table(&rep));
        if let Some(n) = toolhop {
            outln!("ToolHop.json: {n} records read (schema checked; not replayed: ToolHop ships no trajectories).");
        }
    }
    // Written after the report is out, so that a failed write loses nothing else.
    if let (Some(f), Some(file)) = (&a.html, html_file.as_mut()) {
        use std::io::Write;
        file.write_all(html::html(&rep).as_bytes())
            .with_context(|| format!("cannot write the HTML report to {}", f.display()))?;
    }
    Ok(0)
}

/// The replay report as JSON: every item only with `--items`.
fn report_json(rep: &mut iec_bench::Report, items: bool) -> Result<serde_json::Value> {
    if !items {
        rep.items.clear();
    }
    let mut v = serde_json::to_value(&*rep)?;
    if !items {
        v.as_object_mut().map(|o| o.remove("items"));
    }
    Ok(v)
}

/// `--mode harness`: replay mode over the pairs, chains and tasks on the harness's launch (with
/// every item), then the same items through the real harness, IntAct off and (Claude Code) on.
fn harness(a: Args) -> Result<i32> {
    if !a.paths.is_empty() {
        bail!("--paths is for replay mode: harness mode runs the launch that models --harness");
    }
    if a.html.is_some() || a.toolhop.is_some() {
        bail!("--html and --toolhop are for replay mode");
    }
    let cat = Catalog::builtin();
    let mut opts = iec_bench::harness::Options::new(&a.harness, &cat)?;
    opts.bin = a.harness_bin.clone();
    opts.batch = a.batch;
    opts.think = std::time::Duration::from_millis(a.think_ms);
    if !a.no_intact && opts.intact_unavailable().is_none() {
        let exe = std::env::current_exe().context("cannot find this iec for the IntAct hook")?;
        opts.hook = Some(format!(
            "'{}' hook claude-code --launch {}",
            exe.display().to_string().replace('\'', r"'\''"),
            opts.launch
        ));
    }
    let suite = match &a.data {
        Some(dir) => Suite::load(dir)?,
        None => Suite::builtin()?,
    };
    let threads = a
        .threads
        .unwrap_or_else(|| (4 * std::thread::available_parallelism().map_or(2, |n| n.get())).min(16));
    let mut rep = Runner::new(&cat, &[opts.launch.as_str()])?.run(&suite, threads)?;
    let mut h = iec_bench::harness::run(&suite, &rep, &opts)?;
    if a.format == crate::Format::Json {
        if !a.items {
            h.results.clear();
        }
        let mut v = report_json(&mut rep, a.items)?;
        v["paths"][opts.launch.as_str()]["harness"] = serde_json::to_value(&h)?;
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        out!("{}", report::table(&rep));
        out!("{}", report::harness(&h));
    }
    Ok(0)
}

/// `--mode agent`: replay mode over the tasks on the paths (with every item), then the same
/// tasks done by the model, IntAct off and on.
fn agent(a: Args) -> Result<i32> {
    let (Some(endpoint), Some(model)) = (&a.endpoint, &a.model) else {
        bail!("--mode agent needs --endpoint URL and --model NAME");
    };
    if a.html.is_some() || a.toolhop.is_some() {
        bail!("--html and --toolhop are for replay mode");
    }
    if a.max_turns == 0 {
        bail!("--max-turns must be at least 1");
    }
    let api = match a.api {
        ApiArg::Anthropic => iec_bench::agent::Api::Anthropic,
        ApiArg::Openai => iec_bench::agent::Api::Openai,
    };
    let mut opts = iec_bench::agent::Options::new(endpoint, model, api, a.key_env.as_deref())?;
    opts.max_turns = a.max_turns;
    opts.threads = a.threads.unwrap_or(4).max(1);
    let cat = Catalog::builtin();
    let paths: Vec<&str> = if a.paths.is_empty() {
        // The paths whose receiver runs here.
        PATHS
            .iter()
            .copied()
            .filter(|p| {
                cat.get(p)
                    .is_ok_and(|l| iec_bench::replay::decider(l) == iec_bench::replay::Decider::Run)
            })
            .collect()
    } else {
        a.paths.iter().map(String::as_str).collect()
    };
    if paths.is_empty() {
        bail!("--paths names no launch");
    }
    let mut suite = match &a.data {
        Some(dir) => Suite::load(dir)?,
        None => Suite::builtin()?,
    };
    // Tasks only: a pair or a chain is one recorded call, not work a model is asked to do.
    suite.pairs.clear();
    suite.chains.clear();
    if suite.tasks.is_empty() {
        bail!("agent mode runs tasks, and the data has none");
    }
    let threads = (4 * std::thread::available_parallelism().map_or(2, |n| n.get())).min(16);
    let mut rep = Runner::new(&cat, &paths)?.run(&suite, threads)?;
    let mut ag = iec_bench::agent::run(&suite, &cat, &paths, &opts)?;
    if a.format == crate::Format::Json {
        if !a.items {
            ag.results.clear();
        }
        let mut v = report_json(&mut rep, a.items)?;
        for (path, p) in &ag.paths {
            v["paths"][path.as_str()]["agent"] = serde_json::to_value(p)?;
        }
        let mut head = serde_json::json!({
            "api": ag.api_name(), "endpoint": ag.endpoint, "model": ag.model, "max_turns": ag.max_turns,
        });
        if a.items {
            head["results"] = serde_json::to_value(&ag.results)?;
        }
        v["agent"] = head;
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        out!("{}", report::table(&rep));
        out!("{}", report::agent(&ag));
    }
    Ok(0)
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Write the pairs and tasks as a Harbor dataset (one folder per task and variant: hazard,
    /// control, and each with IntAct's hook in the image), for `harbor run -p DIR`.
    Export(ExportArgs),
}

#[derive(clap::Args)]
struct ExportArgs {
    /// The dataset folder (created; it must be new or empty).
    #[arg(long, value_name = "DIR")]
    harbor: PathBuf,
    /// The `iec-hook` binary copied into the images of the IntAct-on variants (default: the
    /// `iec-hook` next to this `iec`). It runs inside the Linux image: give a static x86_64 build.
    #[arg(long, value_name = "FILE")]
    iec_hook: Option<PathBuf>,
    /// Leave out the IntAct-on variants (no `iec-hook` needed).
    #[arg(long, conflicts_with = "iec_hook")]
    no_intact: bool,
    /// Read pairs.jsonl, chains.jsonl and tasks.jsonl from this folder instead of the built-in data.
    #[arg(long)]
    data: Option<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    format: crate::Format,
}

fn export(a: ExportArgs) -> Result<i32> {
    let suite = match &a.data {
        Some(dir) => Suite::load(dir)?,
        None => Suite::builtin()?,
    };
    let hook = if a.no_intact {
        None
    } else if let Some(f) = a.iec_hook {
        Some(f)
    } else {
        let next = std::env::current_exe()?.with_file_name("iec-hook");
        if !next.is_file() {
            bail!(
                "no iec-hook next to this iec ({}): build it (`cargo build --release -p iec-hook`) \
                 and pass --iec-hook FILE, or leave out the IntAct-on variants with --no-intact",
                next.display()
            );
        }
        Some(next)
    };
    let opts = iec_bench::harbor::Options {
        hook,
        version: env!("CARGO_PKG_VERSION").into(),
    };
    let sum = iec_bench::harbor::export(&suite, &a.harbor, &opts)?;
    if a.format == crate::Format::Json {
        let v = serde_json::json!({
            "dir": sum.dir,
            "tasks": sum.tasks,
            "variants": sum.variants,
            "skipped": sum.skipped,
        });
        outln!("{}", serde_json::to_string_pretty(&v)?);
    } else {
        let per: Vec<String> = sum.variants.iter().map(|(k, n)| format!("{k} {n}")).collect();
        outln!(
            "Wrote {} Harbor tasks to {} ({}).",
            sum.tasks,
            sum.dir.display(),
            per.join(", ")
        );
        let mut left: std::collections::BTreeMap<(&str, &str), usize> = Default::default();
        for s in &sum.skipped {
            *left.entry((s.kind, s.reason.as_str())).or_insert(0) += 1;
        }
        for ((kind, reason), n) in left {
            outln!("Left out: {n} {kind}s ({reason}).");
        }
        outln!(
            "Check it with `harbor lint {}/*` (task folders), then run it, e.g. `harbor run -p {} -a claude-code -m anthropic/MODEL -e daytona` (docs/harbor.md).",
            sum.dir.display(),
            sum.dir.display()
        );
    }
    Ok(0)
}
