//! The summary in the shape of the paper's production table, and its terminal form.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;

use iec_core::Verdict;
use serde_json::{json, Value};

use crate::attribution::Attribution;
use crate::resolve::Resolution;
use crate::scan::{CallRecord, ScanResult};

/// Counts of one harness version.
#[derive(Debug, Clone, Default)]
pub struct VersionRow {
    /// Calls.
    pub calls: u64,
    /// Exposed calls.
    pub exposed: u64,
    /// Changed (diverging) calls.
    pub changed: u64,
    /// Changed silently.
    pub silent: u64,
    /// `unknown` verdicts.
    pub unknown: u64,
    /// Calls no launch covers.
    pub uncovered: u64,
    /// Why (the first reason seen).
    pub uncovered_reason: Option<String>,
    /// Calls by launch.
    pub launches: BTreeMap<String, u64>,
    /// Disagreements between the log and the prediction.
    pub disagreements: u64,
}

/// Changed calls of one mechanism.
#[derive(Debug, Clone, Copy, Default)]
pub struct MechanismRow {
    /// Changed.
    pub changed: u64,
    /// Of which silent.
    pub silent: u64,
}

/// The scan's summary.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    /// Calls read.
    pub calls: u64,
    /// Exposed calls.
    pub exposed: u64,
    /// Calls whose check diverges.
    pub changed: u64,
    /// Of which silent.
    pub silent: u64,
    /// Calls whose check says `unknown`.
    pub unknown: u64,
    /// Calls no launch covers.
    pub uncovered: u64,
    /// Sessions (by session id).
    pub sessions: HashSet<String>,
    /// Sessions with a changed call.
    pub sessions_with_changed: HashSet<String>,
    /// Changed calls by the first divergent hop's name.
    pub by_hop: BTreeMap<String, u64>,
    /// Changed calls by mechanism.
    pub by_mechanism: BTreeMap<String, MechanismRow>,
    /// By `harness@version` (`unknown` when the log records none).
    pub by_harness_version: BTreeMap<String, VersionRow>,
    /// Failed calls by attribution.
    pub attribution: BTreeMap<Attribution, u64>,
    /// Failed calls.
    pub failed: u64,
    /// Disagreements between the log and the prediction.
    pub disagreements: u64,
    /// Skips by reason.
    pub skipped: BTreeMap<&'static str, u64>,
    /// Where each skip reason first occurred.
    pub skipped_first: BTreeMap<&'static str, String>,
}

fn rate(n: u64, d: u64) -> Value {
    if d == 0 {
        Value::Null
    } else {
        json!((n as f64 / d as f64 * 10000.0).round() / 10000.0)
    }
}

impl Summary {
    /// Adds one call.
    pub fn add(&mut self, r: &CallRecord) {
        let c = r.call;
        self.calls += 1;
        let exposed = match r.decided {
            Some(d) => d.exposed,
            None => !iec_core::exposure(&c.command).is_empty(),
        };
        let key = format!("{}@{}", c.harness, c.version.as_deref().unwrap_or("unknown"));
        let row = self.by_harness_version.entry(key).or_default();
        row.calls += 1;
        self.sessions.insert(c.session.clone());
        if exposed {
            self.exposed += 1;
            row.exposed += 1;
        }
        match r.resolution {
            Resolution::Launch(id) => *row.launches.entry(id.clone()).or_default() += 1,
            Resolution::Uncovered(why) => {
                self.uncovered += 1;
                row.uncovered += 1;
                row.uncovered_reason.get_or_insert_with(|| why.clone());
            }
        }
        match r.verdict() {
            Some(Verdict::Diverges) => {
                self.changed += 1;
                row.changed += 1;
                self.sessions_with_changed.insert(c.session.clone());
                if let Some(fd) = r.decided.and_then(|d| d.first_divergence.as_ref()) {
                    *self.by_hop.entry(fd.hop_name.clone()).or_default() += 1;
                    let m = self
                        .by_mechanism
                        .entry(fd.mechanism.as_str().to_string())
                        .or_default();
                    m.changed += 1;
                    if fd.silent {
                        m.silent += 1;
                        self.silent += 1;
                        row.silent += 1;
                    }
                }
            }
            Some(Verdict::Unknown) | None if r.decided.is_some() => {
                self.unknown += 1;
                row.unknown += 1;
            }
            _ => {}
        }
        if let Some(a) = r.attribution {
            self.failed += 1;
            *self.attribution.entry(a).or_default() += 1;
        }
        if r.disagreement.is_some() {
            self.disagreements += 1;
            row.disagreements += 1;
        }
    }

    /// The share of changed calls that are silent (`None` with no changed call).
    pub fn silent_share(&self) -> Option<f64> {
        (self.changed > 0).then(|| self.silent as f64 / self.changed as f64)
    }

    /// Failed calls a naive reading charges to the model that the path caused (`path` and
    /// `wrapper`).
    pub fn path_caused(&self) -> u64 {
        [Attribution::Path, Attribution::Wrapper]
            .iter()
            .map(|a| self.attribution.get(a).copied().unwrap_or(0))
            .sum()
    }

    /// The `--format json` summary: exactly `calls`, `exposed`, `changed`, `sessions`,
    /// `sessions_with_changed`, `silent_share`, `by_hop`, `by_mechanism`,
    /// `by_harness_version`, `attribution`, `skipped`.
    pub fn to_json(&self) -> Value {
        let by_mechanism: BTreeMap<&String, Value> = self
            .by_mechanism
            .iter()
            .map(|(k, m)| {
                (
                    k,
                    json!({"changed": m.changed, "silent": m.silent, "loud": m.changed - m.silent}),
                )
            })
            .collect();
        let by_hv: BTreeMap<&String, Value> = self
            .by_harness_version
            .iter()
            .map(|(k, r)| {
                (
                    k,
                    json!({
                        "calls": r.calls, "exposed": r.exposed, "changed": r.changed,
                        "change_rate": rate(r.changed, r.exposed), "silent": r.silent,
                        "unknown": r.unknown, "uncovered": r.uncovered,
                        "uncovered_reason": r.uncovered_reason, "launches": r.launches,
                        "disagreements": r.disagreements,
                    }),
                )
            })
            .collect();
        let mut attribution: BTreeMap<&str, Value> = Attribution::ALL
            .iter()
            .map(|a| (a.as_str(), json!(self.attribution.get(a).copied().unwrap_or(0))))
            .collect();
        attribution.insert("failed", json!(self.failed));
        attribution.insert("naive_model", json!(self.failed));
        attribution.insert("path_caused", json!(self.path_caused()));
        attribution.insert("disagreements", json!(self.disagreements));
        json!({
            "calls": self.calls,
            "exposed": self.exposed,
            "changed": self.changed,
            "sessions": self.sessions.len(),
            "sessions_with_changed": self.sessions_with_changed.len(),
            "silent_share": self.silent_share().map(|s| (s * 10000.0).round() / 10000.0),
            "by_hop": self.by_hop,
            "by_mechanism": by_mechanism,
            "by_harness_version": by_hv,
            "attribution": attribution,
            "skipped": self.skipped,
        })
    }
}

/// `n` of `d` as a percentage with one decimal (`-` when `d` is 0).
pub fn pct(n: u64, d: u64) -> String {
    if d == 0 {
        "-".into()
    } else {
        format!("{:.1}%", n as f64 * 100.0 / d as f64)
    }
}

/// The terminal report.
pub fn text(r: &ScanResult) -> String {
    use std::fmt::Write;
    let s = &r.summary;
    let mut o = String::new();
    let files: Vec<String> = r.files.iter().map(|(k, v)| format!("{v} {k}")).collect();
    let _ = writeln!(
        o,
        "iec scan: {} calls in {} sessions ({} files: {}); {} distinct (launch, command) checked",
        s.calls,
        s.sessions.len(),
        r.files.values().sum::<u64>(),
        files.join(", "),
        r.distinct
    );
    let checked = s.calls - s.uncovered;
    let _ = writeln!(o);
    let _ = writeln!(
        o,
        "  exposed calls            {:>8}  {}",
        s.exposed,
        pct(s.exposed, s.calls)
    );
    let _ = writeln!(
        o,
        "  changed calls            {:>8}  {} of exposed, {} of checked",
        s.changed,
        pct(s.changed, s.exposed),
        pct(s.changed, checked)
    );
    let _ = writeln!(
        o,
        "  sessions with a change   {:>8}  {}",
        s.sessions_with_changed.len(),
        pct(s.sessions_with_changed.len() as u64, s.sessions.len() as u64)
    );
    let _ = writeln!(
        o,
        "  silent changes           {:>8}  {}",
        s.silent,
        pct(s.silent, s.changed)
    );
    let _ = writeln!(o, "  unknown verdicts         {:>8}", s.unknown);
    let _ = writeln!(o, "  uncovered (no launch)    {:>8}", s.uncovered);
    if !s.by_hop.is_empty() {
        let _ = writeln!(
            o,
            "\nchanged by hop:        {}",
            s.by_hop
                .iter()
                .map(|(k, v)| format!("{k} {v}"))
                .collect::<Vec<_>>()
                .join(", ")
        );
        let _ = writeln!(
            o,
            "changed by mechanism:  {}",
            s.by_mechanism
                .iter()
                .map(|(k, m)| format!("{k} {} ({} silent)", m.changed, m.silent))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let _ = writeln!(
        o,
        "\n{:<28} {:>7} {:>7} {:>7} {:>7} {:>9}  launch",
        "harness@version", "calls", "exposed", "changed", "rate", "uncovered"
    );
    for (k, row) in &s.by_harness_version {
        let launch = match &row.uncovered_reason {
            Some(why) if row.launches.is_empty() => format!("uncovered: {why}"),
            _ => row.launches.keys().cloned().collect::<Vec<_>>().join(", "),
        };
        let _ = writeln!(
            o,
            "{:<28} {:>7} {:>7} {:>7} {:>7} {:>9}  {}",
            k,
            row.calls,
            row.exposed,
            row.changed,
            pct(row.changed, row.exposed),
            row.uncovered,
            launch
        );
    }
    let _ = writeln!(
        o,
        "\nfailed calls: {}; a naive reading charges all to the model, the path caused {} ({})",
        s.failed,
        s.path_caused(),
        pct(s.path_caused(), s.failed)
    );
    let _ = writeln!(
        o,
        "  {}",
        Attribution::ALL
            .iter()
            .map(|a| format!("{} {}", a.as_str(), s.attribution.get(a).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(", ")
    );
    if s.disagreements > 0 {
        let _ = writeln!(o, "  disagreements between the log and the prediction: {} (see --format jsonl, field `disagreement`)", s.disagreements);
    }
    if !r.examples.is_empty() {
        let _ = writeln!(o, "\ntop changed calls:");
        for d in r.examples.iter().take(10) {
            if let Some(fd) = &d.first_divergence {
                let _ = writeln!(
                    o,
                    "  {}× {}  {:?}\n      {} {} {}: {}",
                    d.count.load(Ordering::Relaxed),
                    d.launch,
                    d.command,
                    fd.hop_name,
                    fd.mechanism.as_str(),
                    if fd.silent { "silent" } else { "loud" },
                    fd.diff
                );
            }
        }
    }
    if s.skipped.is_empty() {
        let _ = writeln!(o, "\nskipped: nothing");
    } else {
        let _ = writeln!(o, "\nskipped:");
        for (k, v) in &s.skipped {
            let _ = writeln!(
                o,
                "  {k:<22} {v:>7}  first at {}",
                s.skipped_first.get(k).map(String::as_str).unwrap_or("")
            );
        }
    }
    o
}
