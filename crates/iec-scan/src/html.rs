//! The `--html` report: one self-contained page (styles and SVG charts inline, no script, nothing
//! fetched) with change rate by harness version, mechanisms, silent against loud, attribution of
//! failed calls, skipped input and the top changed calls with their byte diffs.

use std::fmt::Write;
use std::sync::atomic::Ordering;

use crate::attribution::Attribution;
use crate::report::pct;
use crate::scan::ScanResult;

/// Escapes text for HTML.
pub fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&#39;"),
            c if c.is_control() && c != '\n' && c != '\t' => {
                let _ = write!(o, "\\u{{{:x}}}", c as u32);
            }
            c => o.push(c),
        }
    }
    o
}

/// One bar of a chart: a label, its parts (value, colour) and the text after it.
struct Bar {
    label: String,
    parts: Vec<(f64, &'static str)>,
    note: String,
}

const RED: &str = "#c0392b";
const ORANGE: &str = "#e67e22";
const BLUE: &str = "#2e86c1";
const GREY: &str = "#95a5a6";
const GREEN: &str = "#27ae60";

/// A horizontal bar chart as inline SVG (`max`: the value of a full bar).
fn bars(id: &str, title: &str, rows: &[Bar], max: f64) -> String {
    let (label_w, bar_w, row_h) = (230.0, 420.0, 26.0);
    let h = 30.0 + row_h * rows.len().max(1) as f64;
    let mut s = String::new();
    let _ = write!(
        s,
        r#"<svg id="{id}" class="chart" xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" role="img" aria-label="{t}"><text x="0" y="16" class="ct">{t}</text>"#,
        w = label_w + bar_w + 160.0,
        t = escape(title)
    );
    if rows.is_empty() {
        let _ = write!(s, r#"<text x="0" y="44">nothing to show</text>"#);
    }
    for (i, r) in rows.iter().enumerate() {
        let y = 30.0 + row_h * i as f64;
        let _ = write!(
            s,
            r#"<text x="{x}" y="{ty}" text-anchor="end">{l}</text>"#,
            x = label_w - 8.0,
            ty = y + 15.0,
            l = escape(&r.label)
        );
        let mut x = label_w;
        for (v, colour) in &r.parts {
            let w = if max > 0.0 {
                (v / max * bar_w).max(if *v > 0.0 { 1.0 } else { 0.0 })
            } else {
                0.0
            };
            let _ = write!(
                s,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{w:.1}" height="18" fill="{colour}"/>"#
            );
            x += w;
        }
        let _ = write!(
            s,
            r#"<text x="{x:.1}" y="{ty}">{n}</text>"#,
            x = x + 6.0,
            ty = y + 15.0,
            n = escape(&r.note)
        );
    }
    s.push_str("</svg>");
    s
}

/// The page.
pub fn page(r: &ScanResult) -> String {
    let s = &r.summary;
    let mut o = String::new();
    o.push_str(r#"<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>iec scan report</title><style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;color:#222}h1{font-size:20px}h2{font-size:16px;margin-top:1.6em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;vertical-align:top}
td.n{text-align:right}code,pre{font:12px ui-monospace,monospace;white-space:pre-wrap;word-break:break-all}
.chart text{font:12px system-ui,sans-serif;fill:#222}.chart .ct{font-weight:bold}
</style></head><body><h1>iec scan report</h1>"#);
    let checked = s.calls - s.uncovered;
    let _ = write!(
        o,
        "<table id=\"summary\"><tr><th>calls</th><td class=n>{}</td></tr><tr><th>sessions</th><td class=n>{}</td></tr>\
         <tr><th>exposed calls</th><td class=n>{} ({})</td></tr><tr><th>changed calls</th><td class=n>{} ({} of exposed, {} of checked)</td></tr>\
         <tr><th>sessions with a changed call</th><td class=n>{} ({})</td></tr><tr><th>silent share of changes</th><td class=n>{}</td></tr>\
         <tr><th>unknown verdicts</th><td class=n>{}</td></tr><tr><th>uncovered (no launch)</th><td class=n>{}</td></tr>\
         <tr><th>distinct (launch, command) checked</th><td class=n>{}</td></tr></table>",
        s.calls,
        s.sessions.len(),
        s.exposed,
        pct(s.exposed, s.calls),
        s.changed,
        pct(s.changed, s.exposed),
        pct(s.changed, checked),
        s.sessions_with_changed.len(),
        pct(s.sessions_with_changed.len() as u64, s.sessions.len() as u64),
        pct(s.silent, s.changed),
        s.unknown,
        s.uncovered,
        r.distinct,
    );
    // Change rate by harness version (of exposed calls).
    let rows: Vec<Bar> = s
        .by_harness_version
        .iter()
        .map(|(k, v)| {
            let rate = if v.exposed > 0 {
                v.changed as f64 / v.exposed as f64
            } else {
                0.0
            };
            Bar {
                label: k.clone(),
                parts: vec![(rate, RED)],
                note: if v.calls == v.uncovered {
                    format!("uncovered ({} calls)", v.calls)
                } else {
                    format!(
                        "{} ({} of {} exposed)",
                        pct(v.changed, v.exposed),
                        v.changed,
                        v.exposed
                    )
                },
            }
        })
        .collect();
    o.push_str("<h2>Change rate by harness version</h2>");
    o.push_str(&bars("rate", "changed / exposed calls", &rows, 1.0));
    let mrows: Vec<Bar> = s
        .by_mechanism
        .iter()
        .map(|(k, m)| Bar {
            label: k.clone(),
            parts: vec![(m.silent as f64, RED), ((m.changed - m.silent) as f64, ORANGE)],
            note: format!("{} ({} silent)", m.changed, m.silent),
        })
        .collect();
    let mmax = s.by_mechanism.values().map(|m| m.changed).max().unwrap_or(0) as f64;
    o.push_str("<h2>Mechanisms</h2>");
    o.push_str(&bars(
        "mechanisms",
        "changed calls by mechanism (red silent, orange loud)",
        &mrows,
        mmax,
    ));
    let hrows: Vec<Bar> = s
        .by_hop
        .iter()
        .map(|(k, v)| Bar {
            label: k.clone(),
            parts: vec![(*v as f64, BLUE)],
            note: v.to_string(),
        })
        .collect();
    let hmax = s.by_hop.values().copied().max().unwrap_or(0) as f64;
    o.push_str(&bars(
        "hops",
        "changed calls by first divergent hop",
        &hrows,
        hmax,
    ));
    o.push_str("<h2>Silent against loud</h2>");
    let srows = vec![
        Bar {
            label: "silent".into(),
            parts: vec![(s.silent as f64, RED)],
            note: s.silent.to_string(),
        },
        Bar {
            label: "loud".into(),
            parts: vec![((s.changed - s.silent) as f64, ORANGE)],
            note: (s.changed - s.silent).to_string(),
        },
    ];
    o.push_str(&bars("silent", "changed calls", &srows, s.changed as f64));
    o.push_str("<h2>Attribution of failed calls</h2>");
    let colours = [GREY, RED, ORANGE, BLUE, GREEN];
    let arows: Vec<Bar> = Attribution::ALL
        .iter()
        .zip(colours)
        .map(|(a, c)| {
            let n = s.attribution.get(a).copied().unwrap_or(0);
            Bar {
                label: a.as_str().into(),
                parts: vec![(n as f64, c)],
                note: n.to_string(),
            }
        })
        .collect();
    o.push_str(&bars(
        "attribution",
        "failed calls by attribution",
        &arows,
        s.failed as f64,
    ));
    let _ = write!(
        o,
        "<p>{} failed calls; a naive reading charges all to the model; the path caused {} ({}). Disagreements between the log and the prediction: {}.</p>",
        s.failed,
        s.path_caused(),
        pct(s.path_caused(), s.failed),
        s.disagreements
    );
    o.push_str("<h2>By harness version</h2><table id=\"versions\"><tr><th>harness@version</th><th>calls</th><th>exposed</th><th>changed</th><th>rate</th><th>launch</th></tr>");
    for (k, v) in &s.by_harness_version {
        let launch = if v.launches.is_empty() {
            format!("uncovered: {}", v.uncovered_reason.as_deref().unwrap_or(""))
        } else {
            v.launches.keys().cloned().collect::<Vec<_>>().join(", ")
        };
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td class=n>{}</td><td>{}</td></tr>",
            escape(k),
            v.calls,
            v.exposed,
            v.changed,
            pct(v.changed, v.exposed),
            escape(&launch)
        );
    }
    o.push_str("</table><h2>Top changed calls</h2><table id=\"examples\"><tr><th>calls</th><th>launch</th><th>command</th><th>first divergence</th><th>byte diff</th></tr>");
    for d in &r.examples {
        if let Some(fd) = &d.first_divergence {
            let _ = write!(
                o,
                "<tr><td class=n>{}</td><td>{}</td><td><code>{}</code></td><td>{} {} {}</td><td><code>{}</code></td></tr>",
                d.count.load(Ordering::Relaxed),
                escape(&d.launch),
                escape(&d.command),
                escape(&fd.hop_name),
                fd.mechanism.as_str(),
                if fd.silent { "silent" } else { "loud" },
                escape(&fd.diff)
            );
        }
    }
    o.push_str("</table><h2>Skipped input</h2><table id=\"skipped\"><tr><th>reason</th><th>count</th><th>first</th></tr>");
    for (k, v) in &s.skipped {
        let _ = write!(
            o,
            "<tr><td>{}</td><td class=n>{}</td><td><code>{}</code></td></tr>",
            k,
            v,
            escape(s.skipped_first.get(k).map(String::as_str).unwrap_or(""))
        );
    }
    o.push_str("</table></body></html>\n");
    o
}
