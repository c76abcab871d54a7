//! The `iec` user binary does not link the development-only runs: from `cargo metadata` of the
//! workspace, the normal (not dev, not build) dependency closure of `iec-cli` holds neither this
//! crate nor `iec-testkit`, and no package in it has the targets this crate took over (the
//! `million` test, the hex probe, the development command), while this crate has them.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// `cargo metadata` of the workspace this crate belongs to.
fn metadata() -> Value {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let manifest = concat!(env!("CARGO_MANIFEST_DIR"), "/../../Cargo.toml");
    let out = Command::new(&cargo)
        .args(["metadata", "--format-version", "1", "--manifest-path", manifest])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cargo} metadata: {e}"));
    assert!(
        out.status.success(),
        "cargo metadata failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("cargo metadata prints JSON")
}

/// Package id → (name, its targets as (kind, name)).
type Packages = BTreeMap<String, (String, Vec<(String, String)>)>;

/// The packages of the metadata.
fn packages(meta: &Value) -> Packages {
    meta["packages"]
        .as_array()
        .expect("packages")
        .iter()
        .map(|p| {
            let targets = p["targets"]
                .as_array()
                .expect("targets")
                .iter()
                .flat_map(|t| {
                    let name = t["name"].as_str().expect("target name").to_string();
                    t["kind"]
                        .as_array()
                        .expect("target kind")
                        .iter()
                        .map(move |k| (k.as_str().expect("kind").to_string(), name.clone()))
                })
                .collect();
            (
                p["id"].as_str().expect("id").to_string(),
                (p["name"].as_str().expect("name").to_string(), targets),
            )
        })
        .collect()
}

/// The names of the packages `root` links: its normal dependencies, transitively.
fn normal_closure(meta: &Value, names: &Packages, root: &str) -> BTreeSet<String> {
    let nodes: BTreeMap<&str, &Value> = meta["resolve"]["nodes"]
        .as_array()
        .expect("resolve nodes")
        .iter()
        .map(|n| (n["id"].as_str().expect("node id"), n))
        .collect();
    let root_id = names
        .iter()
        .find(|(_, (n, _))| n == root)
        .map(|(id, _)| id.clone())
        .unwrap_or_else(|| panic!("no package {root}"));
    let mut seen = BTreeSet::new();
    let mut todo = vec![root_id];
    while let Some(id) = todo.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        for d in nodes[id.as_str()]["deps"].as_array().expect("deps") {
            // `kind` null is a normal dependency; "dev" and "build" are not linked into it.
            if d["dep_kinds"]
                .as_array()
                .expect("dep_kinds")
                .iter()
                .any(|k| k["kind"].is_null())
            {
                todo.push(d["pkg"].as_str().expect("pkg").to_string());
            }
        }
    }
    seen.into_iter().map(|id| names[&id].0.clone()).collect()
}

/// The targets the development crate holds, as (kind, name).
const LAB_TARGETS: [(&str, &str); 3] = [("test", "million"), ("bin", "iec-hexprobe"), ("bin", "iec-lab")];

/// Their names before the move, in the product crates.
const FORMER_TARGETS: [(&str, &str); 2] = [("bin", "iec-repair-hexprobe"), ("bin", "iec-harness")];

#[test]
fn the_iec_binary_does_not_link_the_development_runs() {
    let meta = metadata();
    let pkgs = packages(&meta);
    let closure = normal_closure(&meta, &pkgs, "iec-cli");
    // The closure is the real one: the product crates are in it.
    for product in [
        "iec-check",
        "iec-repair",
        "iec-harness",
        "iec-hook",
        "iec-mcp",
        "iec-shim",
    ] {
        assert!(
            closure.contains(product),
            "{product} missing from iec-cli's closure {closure:?}"
        );
    }
    for dev in ["iec-lab", "iec-testkit"] {
        assert!(
            !closure.contains(dev),
            "iec-cli links the development crate {dev}"
        );
    }
    for (name, targets) in pkgs.values() {
        let held: Vec<_> = LAB_TARGETS
            .iter()
            .chain(&FORMER_TARGETS)
            .filter(|(k, n)| targets.iter().any(|(tk, tn)| tk == k && tn == n))
            .collect();
        if name == "iec-lab" {
            assert_eq!(held, LAB_TARGETS.iter().collect::<Vec<_>>(), "iec-lab's targets");
        } else {
            assert!(held.is_empty(), "{name} holds the development targets {held:?}");
        }
    }
}
