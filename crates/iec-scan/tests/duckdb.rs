//! The DuckDB queries of the README, run by DuckDB itself (the PyPI `duckdb` package in a venv)
//! on the JSON Lines of a scan of every real fixture: each count equals the scan's summary.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde_json::{json, Value};

/// The ```sql blocks of the `## DuckDB` section of this crate's README.
fn readme_queries() -> Vec<String> {
    let readme = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let section = readme.split("\n## DuckDB\n").nth(1).expect("README: ## DuckDB");
    let section = section.split("\n## ").next().unwrap();
    sql_blocks(section)
}

fn sql_blocks(text: &str) -> Vec<String> {
    text.split("```sql\n")
        .skip(1)
        .map(|b| b.split("\n```").next().unwrap().to_string())
        .collect()
}

/// Runs `queries` on `jsonl` (named `calls.jsonl` in them): each query's rows as objects.
fn duckdb(py: &Path, jsonl: &Path, queries: &[String]) -> Vec<Vec<Value>> {
    const RUN: &str = r#"
import duckdb, json, sys
path, queries = sys.argv[1], json.load(open(sys.argv[2]))
con = duckdb.connect()
out = []
for q in queries:
    cur = con.execute(q.replace("'calls.jsonl'", "'" + path.replace("'", "''") + "'"))
    names = [d[0] for d in cur.description]
    out.append([dict(zip(names, row)) for row in cur.fetchall()])
print(json.dumps(out))
"#;
    let dir = tempfile::tempdir().unwrap();
    let qf = dir.path().join("queries.json");
    std::fs::write(&qf, serde_json::to_vec(queries).unwrap()).unwrap();
    let out = Command::new(py)
        .args(["-c", RUN])
        .arg(jsonl)
        .arg(&qf)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "duckdb failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

#[test]
fn the_readmes_duckdb_queries_count_what_the_summary_counts() {
    let queries = readme_queries();
    assert_eq!(queries.len(), 4, "{queries:#?}");
    // The repository README sends its readers here for them.
    let main =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../../README.md")).unwrap();
    let main = main
        .split("\n## Scanning session logs: `iec scan`\n")
        .nth(1)
        .unwrap();
    let main = main.split("\n## ").next().unwrap();
    assert!(
        main.contains("DuckDB") && main.contains("(crates/iec-scan/README.md)"),
        "{main}"
    );

    let Some(py) = iec_testkit::venv::python("duckdb", "duckdb", "duckdb") else {
        return;
    };
    let (recs, result) = common::scan_fixtures();
    let summary = result.summary.to_json();
    let dir = tempfile::tempdir().unwrap();
    let jsonl = dir.path().join("calls.jsonl");
    let text: String = recs.iter().map(|r| format!("{r}\n")).collect();
    std::fs::write(&jsonl, text).unwrap();
    let rows = duckdb(&py, &jsonl, &queries);

    // By harness version.
    let by_hv: BTreeMap<String, Value> = rows[0]
        .iter()
        .map(|r| {
            let key = format!(
                "{}@{}",
                r["harness"].as_str().unwrap(),
                r["version"].as_str().unwrap_or("unknown")
            );
            (
                key,
                json!({"calls": r["calls"], "exposed": r["exposed"], "changed": r["changed"]}),
            )
        })
        .collect();
    let want: BTreeMap<String, Value> = summary["by_harness_version"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| {
            (
                k.clone(),
                json!({"calls": v["calls"], "exposed": v["exposed"], "changed": v["changed"]}),
            )
        })
        .collect();
    assert_eq!(by_hv, want);
    let silent_by_hv: u64 = rows[0].iter().map(|r| r["silent"].as_u64().unwrap()).sum();
    assert_eq!(silent_by_hv, result.summary.silent);
    assert!(by_hv.len() >= 4, "{by_hv:?}");

    // The totals.
    let t = &rows[1][0];
    for k in ["calls", "exposed", "changed", "sessions", "sessions_with_changed"] {
        assert_eq!(t[k], summary[k], "{k}");
    }
    assert!(summary["changed"].as_u64().unwrap() > 0);
    let share = t["silent"].as_f64().unwrap() / t["changed"].as_f64().unwrap();
    assert!(
        (share - summary["silent_share"].as_f64().unwrap()).abs() < 1e-3,
        "{share} {}",
        summary["silent_share"]
    );

    // By mechanism, and failed calls by attribution.
    let by_m: BTreeMap<String, Value> = rows[2]
        .iter()
        .map(|r| {
            let (c, s) = (r["changed"].as_u64().unwrap(), r["silent"].as_u64().unwrap());
            (
                r["mechanism"].as_str().unwrap().to_string(),
                json!({"changed": c, "silent": s, "loud": c - s}),
            )
        })
        .collect();
    assert_eq!(json!(by_m), summary["by_mechanism"]);
    let mut attribution: BTreeMap<String, u64> = rows[3]
        .iter()
        .map(|r| {
            (
                r["attribution"].as_str().unwrap().to_string(),
                r["failed"].as_u64().unwrap(),
            )
        })
        .collect();
    let failed: u64 = attribution.values().sum();
    assert!(failed > 0);
    assert_eq!(summary["attribution"]["failed"], failed);
    for (k, v) in summary["attribution"].as_object().unwrap() {
        if !["failed", "naive_model", "path_caused", "disagreements"].contains(&k.as_str()) && v != 0 {
            assert_eq!(attribution.remove(k), v.as_u64(), "{k}");
        }
    }
    assert!(attribution.is_empty(), "{attribution:?}");
}
