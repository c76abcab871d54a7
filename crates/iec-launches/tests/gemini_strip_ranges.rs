//! Every Gemini CLI launch names the `stripShellWrapper` generation its versions ship: the
//! catalog's learned steps (from the markers, through the real harness) against the packages'
//! sources as read (`iec_launches::gemini_strip::SHIPPED`). Two ways of knowing, one answer.

use iec_launches::gemini_strip::{generation, Generation, SHIPPED};
use iec_launches::resolve::Version;
use iec_launches::Catalog;

/// The generation the sources say `v` ships (`None`: before 0.1.15, no strip).
fn shipped(v: &str) -> Option<Generation> {
    let v = Version::parse(v).expect("a version");
    let first = |s: &str| Version::parse(s).unwrap();
    SHIPPED
        .iter()
        .rev()
        .find(|(_, lo, _)| first(lo) <= v)
        .filter(|(_, _, hi)| hi.is_none_or(|h| v <= first(h)))
        .map(|(g, _, _)| *g)
}

#[test]
fn every_gemini_launch_strips_as_its_versions_ship() {
    let cat = Catalog::builtin();
    let mut checked = 0;
    for l in cat
        .iter()
        .filter(|l| l.harness == "gemini-cli" && l.os == "linux")
    {
        let learned = l
            .rewrite
            .as_ref()
            .and_then(|r| r.steps.iter().find_map(|s| generation(s)));
        for [lo, hi] in &l.versions {
            for v in [lo, hi] {
                assert_eq!(shipped(v), learned, "{} at {v}", l.id);
                checked += 1;
            }
        }
    }
    assert!(checked >= 30, "only {checked} range ends");
}

#[test]
fn the_shipped_table_knows_the_published_boundaries() {
    assert_eq!(shipped("0.1.13"), None);
    assert_eq!(shipped("0.1.15"), Some(Generation::V0_1_15));
    assert_eq!(shipped("0.10.0"), Some(Generation::V0_1_15));
    assert_eq!(shipped("0.11.3"), Some(Generation::V0_11_3));
    assert_eq!(shipped("0.35.3"), Some(Generation::V0_11_3));
    assert_eq!(shipped("0.36.0"), Some(Generation::V0_36_0));
    assert_eq!(shipped("0.44.0"), Some(Generation::V0_44_0));
    assert_eq!(shipped("0.45.2"), Some(Generation::V0_36_0));
    assert_eq!(shipped("0.47.0"), Some(Generation::V0_36_0));
    assert_eq!(shipped("0.51.0"), Some(Generation::V0_51_0));
    assert_eq!(shipped("0.61.0"), Some(Generation::V0_51_0));
}
