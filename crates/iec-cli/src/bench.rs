//! `iec bench`: IEC-Bench in replay mode (the only mode built so far).

use crate::out::{out, outln};
use anyhow::{bail, Result};
use iec_bench::{chain, report, Runner, Suite, PATHS};
use iec_launches::Catalog;
use std::path::PathBuf;

#[derive(clap::Args)]
pub struct Args {
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
    #[arg(long, value_enum, default_value = "text")]
    format: crate::Format,
}

pub fn run(a: Args) -> Result<i32> {
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
    let mut rep = Runner::new(&cat, &paths)?.run(&suite, threads)?;
    if a.format == crate::Format::Json {
        if !a.items {
            rep.items.clear();
        }
        let mut v = serde_json::to_value(&rep)?;
        if !a.items {
            v.as_object_mut().map(|o| o.remove("items"));
        }
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
    Ok(0)
}
