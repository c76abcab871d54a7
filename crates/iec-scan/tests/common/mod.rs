//! Shared by the DuckDB and browser tests: a scan of every real harness fixture.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The logs of every fixture under `tests/data/harness/`.
pub fn fixture_logs() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/harness");
    let mut dirs: Vec<PathBuf> = std::fs::read_dir(&root)
        .unwrap()
        .map(|e| e.unwrap().path().join("logs"))
        .filter(|p| p.is_dir())
        .collect();
    dirs.sort();
    assert!(dirs.len() >= 4, "the harness fixtures: {dirs:?}");
    dirs
}

/// Scans every fixture on the built-in catalog: the JSON Lines records (as `--format jsonl`
/// writes them) and the result.
pub fn scan_fixtures() -> (Vec<Value>, iec_scan::ScanResult) {
    let cat = iec_launches::Catalog::builtin();
    let mut skips = iec_scan::Skips::new(false);
    let files = iec_scan::files_under(&fixture_logs(), &mut skips).unwrap();
    let mut recs = Vec::new();
    let r = iec_scan::scan(
        &cat,
        &files,
        &iec_scan::Options::default(),
        skips,
        &mut |r| recs.push(r.to_json()),
        &mut |_| {},
    )
    .unwrap();
    (recs, r)
}
