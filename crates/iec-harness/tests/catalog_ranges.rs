//! The launch catalog across harness versions (issue 19 acceptance): for one published version
//! inside a range of a built-in launch, one that the launch was *not* learned on, real runs of
//! 300 hazard payloads (150 of `hazard_payloads` and 150 of `action_hazard_payloads`, the
//! agreement tests' seeds) agree with `iec check` on the launch that `--harness NAME@VERSION`
//! resolves to, on every payload.
//!
//! Which harnesses: `IEC_CATALOG_HARNESS` (`claude-code`, the default, `codex`, `gemini-cli`,
//! or `all`). Which ranges: every range of a built-in Linux launch of that harness that holds a published
//! version outside the launch's `learned_on` and `version` (a range whose every version was
//! learned has none, and is listed as such); of each such range, the middle one of those
//! versions. One CI run checks `IEC_CATALOG_RANGES` of them (default 1, about 2 minutes), in a
//! rotation by the UTC day (`IEC_ROTATION=K` starts at the K-th instead), so that
//! consecutive days cover every range; `IEC_CATALOG_RANGES=all` checks every range
//! (`crates/iec-lab/scripts/catalog-agree` runs that and prints the table of
//! `BENCHMARKS.md`). Each checked range prints one line `RANGE …` with its figures.
//!
//! The published versions come from `npm view PACKAGE versions --json`; a version this test
//! installed is removed again. Gemini CLI's replay model takes 100 ms per call (as the catalog
//! sweep's, and the first call waits 1.5 s): 0.11–0.27 load their command parser after
//! start-up and refuse every call before. Skips like the other real-harness tests: when npm
//! fails and `IEC_SKIP_HARNESS=1` (or `IEC_SKIP_NPM=1`) is set, it prints `SKIPPED: …` and
//! passes.

mod support;

use std::time::Instant;

use iec_harness::agree::{agree_observed_launch, Payload};
use iec_launches::resolve::{resolve, Version};
use iec_launches::Catalog;
use support::{ACTION_SEED, HAZARD_SEED};

/// The harnesses this test knows: name and npm package.
const HARNESSES: &[(&str, &str)] = &[
    ("claude-code", "@anthropic-ai/claude-code"),
    ("codex", "@openai/codex"),
    ("gemini-cli", "@google/gemini-cli"),
];

/// The harnesses of this run (`IEC_CATALOG_HARNESS`).
fn harnesses() -> Vec<(&'static str, &'static str)> {
    match std::env::var("IEC_CATALOG_HARNESS").as_deref() {
        Err(_) => vec![HARNESSES[0]],
        Ok("all") => HARNESSES.to_vec(),
        Ok(name) => vec![*HARNESSES.iter().find(|(n, _)| *n == name).unwrap_or_else(|| {
            panic!("IEC_CATALOG_HARNESS is claude-code, codex, gemini-cli or all, not {name:?}")
        })],
    }
}

/// One range of a built-in launch and the version of it to run.
#[derive(Debug)]
struct Pick {
    harness: &'static str,
    launch: String,
    range: [String; 2],
    /// `None`: every published version of the range was learned.
    version: Option<String>,
}

/// The published versions of `package`, in version order, or `None` when skipped.
fn published(package: &str) -> Option<Vec<String>> {
    support::installed(
        &format!("the list of published {package} versions"),
        support::HARNESS_SKIP,
        || {
            let out = std::process::Command::new("npm")
                .args(["view", package, "versions", "--json"])
                .output()?;
            anyhow::ensure!(
                out.status.success(),
                "npm view failed: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            let mut vs: Vec<String> = serde_json::from_slice(&out.stdout)?;
            // Codex publishes its native binaries as versions of the main package
            // (`0.171.0-linux-x64`): not harness versions of their own (as the sweep's
            // `PLATFORM_TAG`).
            let platform = |v: &str| {
                ["-linux-", "-darwin-", "-win32-"].iter().any(|p| v.contains(p))
                    && (v.ends_with("-x64") || v.ends_with("-arm64"))
            };
            vs.retain(|v| Version::parse(v).is_some() && !platform(v));
            vs.sort_by_key(|v| Version::parse(v));
            Ok(vs)
        },
    )
}

/// Every range of the built-in Linux launches of `harness` with the version to run in it.
fn picks(harness: &'static str, published: &[String]) -> Vec<Pick> {
    let cat = Catalog::builtin();
    let mut out = Vec::new();
    for l in cat.iter().filter(|l| l.harness == harness && l.os == "linux") {
        for r in &l.versions {
            let (lo, hi) = (Version::parse(&r[0]).unwrap(), Version::parse(&r[1]).unwrap());
            let unlearned: Vec<&String> = published
                .iter()
                .filter(|v| {
                    let p = Version::parse(v).unwrap();
                    lo <= p && p <= hi && **v != l.version && !l.learned_on.contains(v)
                })
                .collect();
            out.push(Pick {
                harness,
                launch: l.id.clone(),
                range: r.clone(),
                version: unlearned.get(unlearned.len() / 2).map(|v| v.to_string()),
            });
        }
    }
    out.sort_by_key(|p| Version::parse(&p.range[0]));
    out
}

/// The ranges this run checks: `IEC_CATALOG_RANGES` (default 1) of those with a version to
/// run, from the rotation's start (`iec_testkit::rotation`).
fn sample(picks: Vec<Pick>) -> Vec<Pick> {
    let runnable: Vec<Pick> = picks.into_iter().filter(|p| p.version.is_some()).collect();
    iec_testkit::rotation::sample(runnable, "IEC_CATALOG_RANGES", 1)
}

/// 150 hazard payloads and 150 action hazard payloads, interleaved.
fn payloads() -> Vec<Payload> {
    let a = support::payloads(iec_harness::hazard_payloads, 150, HAZARD_SEED);
    let b = support::payloads(iec_harness::action_hazard_payloads, 150, ACTION_SEED);
    a.into_iter().zip(b).flat_map(|(x, y)| [x, y]).collect()
}

#[test]
fn an_unlearned_version_of_each_sampled_range_agrees_with_its_launch() {
    let mut all = Vec::new();
    for (harness, package) in harnesses() {
        let Some(published) = published(package) else {
            return;
        };
        let picks = picks(harness, &published);
        assert!(
            picks.iter().any(|p| p.version.is_some()),
            "no built-in {harness} range holds a version it was not learned on: {picks:?}"
        );
        all.extend(picks);
    }
    for p in all.iter().filter(|p| p.version.is_none()) {
        eprintln!(
            "RANGE {}..{} {}: every published version was learned, none left to check",
            p.range[0], p.range[1], p.launch
        );
    }
    let cat = Catalog::builtin();
    let payloads = payloads();
    assert_eq!(payloads.len(), 300);
    // Every sampled range runs; the failures are listed together at the end.
    let mut failures = Vec::new();
    for p in sample(all) {
        let version = p.version.clone().unwrap();
        // What `iec check --harness NAME@VERSION` resolves to.
        let (launch, _) = resolve(&cat, p.harness, "linux", &version, None).expect("resolve");
        assert_eq!(
            launch.id, p.launch,
            "{}@{version} resolves to another launch",
            p.harness
        );
        let (h, _) = iec_harness::harness::parse(&format!("{}@{version}", p.harness)).unwrap();
        let cache = iec_harness::launch::harness_cache_dir()
            .unwrap()
            .join(format!("{}-{version}", p.harness));
        let had = cache.is_dir();
        if support::installed(&format!("{}@{version}", p.harness), support::HARNESS_SKIP, || {
            h.install(&version)
        })
        .is_none()
        {
            return;
        }
        let mut spec = support::spec(&version);
        if p.harness == "gemini-cli" {
            spec.think = std::time::Duration::from_millis(100);
        }
        let t = Instant::now();
        let observed = iec_harness::harness::run_observed(h.as_ref(), &spec, &payloads).expect("real runs");
        let rep = agree_observed_launch(&version, launch, &observed).expect("agreement");
        if !had {
            let _ = std::fs::remove_dir_all(&cache);
        }
        let changed = observed.iter().filter(|o| o.verdict != "corresponds").count();
        let bad = support::disagreement_lines(&rep);
        eprintln!(
            "RANGE {}..{} {} version {version}: {} payloads, {} agree, {changed} changed by the harness, {:.0} s",
            p.range[0],
            p.range[1],
            p.launch,
            rep.results.len(),
            rep.results.len() - bad.len(),
            t.elapsed().as_secs_f64()
        );
        assert_eq!(rep.results.len(), 300);
        if !bad.is_empty() {
            failures.push(format!(
                "{}@{version} on {}: {} disagreements:\n{}",
                p.harness,
                p.launch,
                bad.len(),
                bad.join("\n")
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
