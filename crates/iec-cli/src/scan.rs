//! `iec scan`: read agents' session logs, check every shell call on its launch, report.

use std::io::IsTerminal;
use std::path::PathBuf;

use anyhow::{bail, Context, Result};

use crate::out::{out, outln};

#[derive(Clone, Copy, clap::ValueEnum, PartialEq, Eq)]
pub enum ScanFormat {
    /// A readable report.
    Text,
    /// The summary as one JSON document.
    Json,
    /// One JSON record per call.
    Jsonl,
}

#[derive(clap::Args)]
pub struct ScanArgs {
    /// Session log files and folders (folders: their `.jsonl` and `.json` files, recursively).
    /// None: the current user's standard locations (each found is named on stderr).
    paths: Vec<PathBuf>,
    /// Check every call on this launch instead of the one its harness and version resolve to.
    #[arg(long)]
    launch: Option<String>,
    /// Extra launch files (TOML) to load.
    #[arg(long)]
    launch_file: Vec<PathBuf>,
    #[arg(long, value_enum, default_value = "text")]
    format: ScanFormat,
    /// Also write a self-contained HTML report (charts inline, nothing fetched).
    #[arg(long)]
    html: Option<PathBuf>,
    /// Exit non-zero (2) at the first bad input instead of skipping and counting it.
    #[arg(long)]
    strict: bool,
    /// The longest line read, in bytes (longer lines are skipped and counted).
    #[arg(long, default_value_t = 16 << 20)]
    max_line: usize,
    /// Ask bash even for plain texts (by default they take the checker's no-witness shortcut).
    #[arg(long)]
    full_witness: bool,
}

pub fn run(a: ScanArgs) -> Result<i32> {
    let cat = crate::catalog(&a.launch_file)?;
    if let Some(id) = &a.launch {
        cat.get(id)?;
    }
    let paths = if a.paths.is_empty() {
        let found = iec_scan::standard_locations();
        if found.is_empty() {
            bail!(
                "no session logs in the standard locations (~/.claude/projects, ~/.codex/sessions, \
                 ~/.gemini/tmp, ~/.openhands/sessions, ~/.cline/data, VS Code's Cline and Roo \
                 storage); name files or folders to scan"
            );
        }
        for p in &found {
            eprintln!("iec scan: found {}", p.display());
        }
        found
    } else {
        for p in &a.paths {
            if !p.exists() {
                bail!("{}: no such file or folder", p.display());
            }
        }
        a.paths.clone()
    };
    let opts = iec_scan::Options {
        launch: a.launch.clone(),
        strict: a.strict,
        bounds: iec_scan::readers::Bounds {
            max_line: a.max_line,
            ..Default::default()
        },
        check: iec_check::Options {
            spawn_witness: false,
            full_witness: a.full_witness,
        },
        ..Default::default()
    };
    let mut skips = iec_scan::Skips::new(a.strict);
    let files = match iec_scan::files_under(&paths, &mut skips) {
        Ok(f) => f,
        Err(stop) => {
            eprintln!("iec scan: {stop}");
            return Ok(2);
        }
    };
    // A progress bar only on a terminal, never in a pipe or a file.
    let bar = if std::io::stderr().is_terminal() {
        let b = indicatif::ProgressBar::new(files.len() as u64);
        b.set_style(
            indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} files {elapsed} {msg}")
                .context("progress template")?,
        );
        Some(b)
    } else {
        None
    };
    let jsonl = a.format == ScanFormat::Jsonl;
    let mut on_record = |r: &iec_scan::CallRecord| {
        if jsonl {
            outln!("{}", r.to_json());
        }
    };
    let mut on_file = |k: usize| {
        if let Some(b) = &bar {
            b.set_position(k as u64);
        }
    };
    let result = iec_scan::scan(&cat, &files, &opts, skips, &mut on_record, &mut on_file);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let result = match result {
        Ok(r) => r,
        Err(stop) => {
            eprintln!("iec scan: {stop}");
            return Ok(2);
        }
    };
    match a.format {
        ScanFormat::Text => out!("{}", iec_scan::report::text(&result)),
        ScanFormat::Json => outln!("{}", serde_json::to_string_pretty(&result.summary.to_json())?),
        ScanFormat::Jsonl => {}
    }
    if let Some(h) = &a.html {
        std::fs::write(h, iec_scan::html::page(&result))
            .with_context(|| format!("cannot write {}", h.display()))?;
    }
    Ok(0)
}
