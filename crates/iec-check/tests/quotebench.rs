//! QuoteBench's 56 oracle commands (tests/data/quotebench-oracles.json, vendored with its
//! provenance) reach their correct final state through real Claude Code 2.1.72 and 2.1.332, so
//! `iec check` must call every one "corresponds" on both launches. On 2.1.332 the grep and find
//! tasks run the snapshot's functions (the embedded ugrep and bfs): each such command is
//! reported as a substitution whose behaviour is the same as GNU's for its options and operands.

use iec_check::{call_for_text, check, Options};
use iec_core::Verdict;
use iec_launches::Catalog;
use iec_witness::global;

fn oracles() -> Vec<(String, String)> {
    let v: serde_json::Value = serde_json::from_str(include_str!("data/quotebench-oracles.json")).unwrap();
    assert_eq!(v["source"]["commit"], "d514715565abe86bb18c65357b88895dbf3d8276");
    v["oracles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["task_id"].as_str().unwrap().to_string(),
                o["oracle"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn the_56_quotebench_oracles_correspond_on_2_1_72_and_2_1_332() {
    let oracles = oracles();
    assert_eq!(oracles.len(), 56);
    let cat = Catalog::builtin();
    let mut bad = Vec::new();
    let mut substituted = Vec::new();
    for id in ["claude-code-2.1.72-linux", "claude-code-2.1.332-linux"] {
        let l = cat.get(id).unwrap();
        for (task, text) in &oracles {
            let r = check(l, &call_for_text(l, text), global(), Options::default()).unwrap();
            if r.verdict != Verdict::Corresponds {
                bad.push(format!(
                    "{id} {task}: {:?} {:?} {:?}",
                    r.verdict, r.reason, r.first_divergence
                ));
            }
            // Substitutions: on 2.1.332 exactly the grep and find tasks, judged by the table.
            let named: Vec<&str> = r.substitutions.iter().map(|s| s.named.as_str()).collect();
            let want: &[&str] = match (id, task.split('/').next().unwrap()) {
                ("claude-code-2.1.332-linux", "grep-count") => &["grep"],
                ("claude-code-2.1.332-linux", "find-glob") => &["find"],
                _ => &[],
            };
            assert_eq!(named, want, "{id} {task}");
            for s in &r.substitutions {
                assert_eq!(s.behaviour, "same", "{id} {task}: {s:?}");
                let rows: &[&str] = if s.named == "grep" {
                    &["grep-one-input"]
                } else {
                    &["find-primaries", "find-sorted-output"]
                };
                assert_eq!(s.rows, rows, "{id} {task}");
                substituted.push(task.clone());
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of 112 not corresponds:\n{}",
        bad.len(),
        bad.join("\n")
    );
    assert_eq!(substituted.len(), 8, "{substituted:?}");
}
