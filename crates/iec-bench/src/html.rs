//! The HTML report of a [`Report`]: one self-contained file (inline CSS and SVG, no script, no
//! network) with three charts (lost against recovered per path, the mechanisms of the changed
//! calls per path, the exact McNemar p per path) and the figures' table. Every bar carries its
//! figures as `data-*` attributes, so the file can be read back without a browser.

use crate::replay::{Decider, PathMetrics, Report};
use std::fmt::Write;

/// Text for HTML element content and attribute values.
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

fn decided(m: &PathMetrics) -> &'static str {
    match m.decided_by {
        Some(Decider::Run) => "run here",
        Some(Decider::Emulated) => "emulated",
        Some(Decider::TerminalWitness) => "terminal witness",
        None => "",
    }
}

fn rate(x: Option<f64>) -> String {
    x.map_or("–".into(), |x| format!("{:.1}%", x * 100.0))
}

/// The mechanisms in a fixed order, each with its colour.
const MECHANISMS: [(&str, &str); 5] = [
    ("quote-consumption", "#4e79a7"),
    ("re-expansion", "#f28e2b"),
    ("truncation", "#e15759"),
    ("arity-change", "#76b7b2"),
    ("other", "#9c755f"),
];

const LABEL_W: f64 = 230.0;
const PLOT_W: f64 = 470.0;
const ROW_H: f64 = 34.0;

/// Lost, lost with a changed call and recovered of those, one group of bars a path.
fn lost_chart(r: &Report) -> String {
    let max = r.paths.values().map(|m| m.lost).max().unwrap_or(0).max(1) as f64;
    let h = ROW_H * r.paths.len() as f64 + 30.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg id="lost-recovered" role="img" aria-label="lost and recovered items per path" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#,
        w = LABEL_W + PLOT_W + 60.0
    );
    for (i, (id, m)) in r.paths.iter().enumerate() {
        let y = i as f64 * ROW_H + 4.0;
        let bar = |n: usize| n as f64 / max * PLOT_W;
        let _ = writeln!(
            s,
            r#"<g class="path" data-path="{p}" data-lost="{}" data-lost-changed="{}" data-recovered="{}" data-recovered-changed="{}">"#,
            m.lost,
            m.lost_changed,
            m.recovered,
            m.recovered_changed,
            p = esc(id)
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{}</text>"#,
            LABEL_W - 8.0,
            y + 17.0,
            esc(id)
        );
        let _ = writeln!(
            s,
            r#"<rect class="lost" x="{LABEL_W}" y="{y}" width="{:.1}" height="13"><title>{} lost ({} with a changed call)</title></rect>"#,
            bar(m.lost),
            m.lost,
            m.lost_changed
        );
        let _ = writeln!(
            s,
            r#"<rect class="recovered" x="{LABEL_W}" y="{}" width="{:.1}" height="13"><title>{} recovered by IntAct</title></rect>"#,
            y + 14.0,
            bar(m.recovered),
            m.recovered
        );
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" class="n">{} / {}</text></g>"#,
            LABEL_W + bar(m.lost) + 4.0,
            y + 17.0,
            m.recovered,
            m.lost
        );
    }
    let _ = writeln!(
        s,
        r#"<rect class="lost" x="{LABEL_W}" y="{ly}" width="12" height="10"/><text x="{}" y="{}">lost (hazard fails, control passes; IntAct off)</text><rect class="recovered" x="{}" y="{ly}" width="12" height="10"/><text x="{}" y="{}">recovered (passes with IntAct on)</text></svg>"#,
        LABEL_W + 16.0,
        h - 11.0,
        LABEL_W + 290.0,
        LABEL_W + 306.0,
        h - 11.0,
        ly = h - 20.0
    );
    s
}

/// The changed calls of the hazards (IntAct off) by mechanism, one stacked bar a path.
fn mechanism_chart(r: &Report) -> String {
    let total = |m: &PathMetrics| m.mechanisms.values().sum::<usize>();
    let max = r.paths.values().map(total).max().unwrap_or(0).max(1) as f64;
    let h = ROW_H * r.paths.len() as f64 + 30.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg id="mechanisms" role="img" aria-label="changed calls by mechanism per path" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#,
        w = LABEL_W + PLOT_W + 60.0
    );
    for (i, (id, m)) in r.paths.iter().enumerate() {
        let y = i as f64 * ROW_H + 4.0;
        let _ = writeln!(
            s,
            r#"<g class="path" data-path="{}"><text x="{}" y="{}" text-anchor="end">{}</text>"#,
            esc(id),
            LABEL_W - 8.0,
            y + 17.0,
            esc(id)
        );
        let mut x = LABEL_W;
        for (name, colour) in MECHANISMS {
            let n = m.mechanisms.get(name).copied().unwrap_or(0);
            if n == 0 {
                continue;
            }
            let w = n as f64 / max * PLOT_W;
            let _ = writeln!(
                s,
                r#"<rect data-mechanism="{name}" data-calls="{n}" x="{x:.1}" y="{y}" width="{w:.1}" height="26" fill="{colour}"><title>{name}: {n}</title></rect>"#
            );
            x += w;
        }
        let _ = writeln!(
            s,
            r#"<text x="{:.1}" y="{}" class="n">{}</text></g>"#,
            x + 4.0,
            y + 17.0,
            total(m)
        );
    }
    let mut x = LABEL_W;
    for (name, colour) in MECHANISMS {
        let _ = write!(
            s,
            r#"<rect x="{x}" y="{}" width="12" height="10" fill="{colour}"/><text x="{}" y="{}">{name}</text>"#,
            h - 20.0,
            x + 16.0,
            h - 11.0
        );
        x += 110.0;
    }
    s.push_str("</svg>\n");
    s
}

/// The exact McNemar p per path, as −log10 p, with the 0.05 line.
fn mcnemar_chart(r: &Report) -> String {
    // −log10 p, never negative (p = 1 gives −0, which SVG would read as a negative width).
    let lg = |p: f64| (-(p.max(1e-300)).log10()).max(0.0) + 0.0;
    let max = r.paths.values().map(|m| lg(m.mcnemar_p)).fold(2.0_f64, f64::max);
    let h = ROW_H * r.paths.len() as f64 + 30.0;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg id="mcnemar" role="img" aria-label="exact McNemar p per path" width="{w}" height="{h}" viewBox="0 0 {w} {h}">"#,
        w = LABEL_W + PLOT_W + 90.0
    );
    for (i, (id, m)) in r.paths.iter().enumerate() {
        let y = i as f64 * ROW_H + 4.0;
        let _ = writeln!(
            s,
            r#"<g class="path" data-path="{p}" data-mcnemar-p="{:e}" data-off-fail-on-pass="{}" data-off-pass-on-fail="{}"><text x="{}" y="{}" text-anchor="end">{p}</text><rect class="p" x="{LABEL_W}" y="{y}" width="{:.1}" height="26"><title>p = {:.3e} ({} fail off and pass on, {} the other way)</title></rect><text x="{:.1}" y="{}" class="n">p = {:.3e}</text></g>"#,
            m.mcnemar_p,
            m.off_fail_on_pass,
            m.off_pass_on_fail,
            LABEL_W - 8.0,
            y + 17.0,
            lg(m.mcnemar_p) / max * PLOT_W,
            m.mcnemar_p,
            m.off_fail_on_pass,
            m.off_pass_on_fail,
            LABEL_W + lg(m.mcnemar_p) / max * PLOT_W + 4.0,
            y + 17.0,
            m.mcnemar_p,
            p = esc(id)
        );
    }
    let x05 = LABEL_W + lg(0.05) / max * PLOT_W;
    let _ = writeln!(
        s,
        r#"<line x1="{x05:.1}" x2="{x05:.1}" y1="0" y2="{}" class="alpha"/><text x="{:.1}" y="{}">p = 0.05 (bars are −log10 p)</text></svg>"#,
        h - 26.0,
        x05 + 4.0,
        h - 11.0
    );
    s
}

/// The figures' table.
fn figures(r: &Report) -> String {
    let mut s = String::from(
        "<table id=\"figures\"><thead><tr><th>path</th><th>decided by</th><th>items</th><th>undecided</th><th>lost</th><th>lost, changed call</th><th>recovered (changed)</th><th>recovery rate</th><th>false repairs</th><th>hop hiding</th><th>changed calls</th><th>McNemar p</th></tr></thead><tbody>\n",
    );
    let row = |s: &mut String, id: &str, by: &str, m: &PathMetrics| {
        let _ = writeln!(
            s,
            "<tr data-path=\"{}\"><td>{}</td><td>{by}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3e}</td></tr>",
            esc(id),
            esc(id),
            m.items,
            m.undecided,
            m.lost,
            m.lost_changed,
            m.recovered_changed,
            rate(m.recovery_rate),
            m.false_repairs,
            m.hop_hiding,
            m.changed_calls,
            m.mcnemar_p
        );
    };
    for (id, m) in &r.paths {
        row(&mut s, id, decided(m), m);
    }
    row(&mut s, "across paths", "", &r.overall);
    s.push_str("</tbody></table>\n");
    s
}

/// The report as one HTML document.
pub fn html(r: &Report) -> String {
    let o = &r.overall;
    let mut s = String::new();
    s.push_str(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>IEC-Bench replay</title>
<style>
body{font:14px/1.4 system-ui,sans-serif;margin:2em;max-width:62em;color:#222}
h1{font-size:1.4em}h2{font-size:1.1em;margin-top:2em}
svg text{font-size:12px;fill:#222}svg text.n{fill:#555}
rect.lost{fill:#e15759}rect.recovered{fill:#59a14f}rect.p{fill:#4e79a7}
line.alpha{stroke:#222;stroke-dasharray:4 3}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:.2em .5em;text-align:right}
td:first-child,th:first-child{text-align:left}
</style></head><body>
"#,
    );
    let _ = writeln!(
        s,
        "<h1>IEC-Bench replay</h1>\n<p id=\"summary\" data-pairs=\"{}\" data-chains=\"{}\" data-tasks=\"{}\">{} pairs, {} chains, {} tasks on {} paths; the recorded actions are held fixed and only the launch changes, IntAct off and on. Across paths: {} lost, {} with a changed call; IntAct recovered {} of those ({}); {} false repairs; {} lost items hidden by the first hop.</p>",
        r.pairs,
        r.chains,
        r.tasks,
        r.pairs,
        r.chains,
        r.tasks,
        r.paths.len(),
        o.lost,
        o.lost_changed,
        o.recovered_changed,
        rate(o.recovery_rate),
        o.false_repairs,
        o.hop_hiding
    );
    s.push_str("<h2>Lost and recovered per path</h2>\n");
    s.push_str(&lost_chart(r));
    s.push_str("<h2>Changed calls by mechanism (hazards, IntAct off)</h2>\n");
    s.push_str(&mechanism_chart(r));
    s.push_str("<h2>Exact McNemar test, IntAct off against on</h2>\n");
    s.push_str(&mcnemar_chart(r));
    s.push_str("<h2>Figures</h2>\n");
    s.push_str(&figures(r));
    s.push_str(
        "<p>lost: the hazard fails and the control passes with IntAct off (chains and tasks: the same actions on bash-c); \
         recovered: a lost item that passes with IntAct on; false repair: a control that passes with IntAct off and that IntAct \
         re-renders, refuses or breaks; hop hiding: a lost item whose failure shows only after the first changed hop is repaired; \
         undecided: no call runs on the path and a check is unknown (left out of lost and McNemar). \
         Decided by: <em>run here</em>, the delivered calls ran in a sandbox; <em>emulated</em>, the emulated check of each \
         delivered call (no Windows receiver here); <em>terminal witness</em>, the check with the real terminal (tmux).</p>\n",
    );
    s.push_str("</body></html>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::{esc, mcnemar_chart};
    use crate::replay::{PathMetrics, Report};

    #[test]
    fn a_p_of_one_is_a_bar_of_width_zero() {
        let r = Report {
            pairs: 0,
            chains: 0,
            tasks: 0,
            paths: [(
                "bash-c".to_string(),
                PathMetrics {
                    mcnemar_p: 1.0,
                    ..Default::default()
                },
            )]
            .into(),
            overall: PathMetrics::default(),
            items: vec![],
        };
        let svg = mcnemar_chart(&r);
        assert!(svg.contains(r#"width="0.0" height="26""#), "{svg}");
        assert!(!svg.contains("-0.0"), "{svg}");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(
            esc(r#"<a href="x">'&'</a>"#),
            "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;"
        );
    }
}
