//! `unresolved.toml`: the published versions the catalog sweep could not learn. Each entry's
//! versions resolve to no launch, `iec check --harness` names its reason, and docs/catalog.md
//! lists it.

use iec_launches::resolve::{resolve, unresolved, unresolved_list, ResolveError, Version};
use iec_launches::Catalog;

#[test]
fn every_unresolved_version_resolves_to_no_launch_and_says_why() {
    let cat = Catalog::builtin();
    let list = unresolved_list();
    assert!(!list.is_empty());
    for u in &list {
        assert!(
            u.reason.starts_with("not-drivable: ") || u.reason.starts_with("learner-unsupported: "),
            "{}",
            u.reason
        );
        for r in &u.versions {
            let (a, b) = (Version::parse(&r[0]).unwrap(), Version::parse(&r[1]).unwrap());
            assert!(a <= b, "{r:?}");
            for v in [&r[0], &r[1]] {
                match resolve(&cat, &u.harness, "linux", v, None) {
                    Err(ResolveError::Outside { note, .. }) => {
                        assert!(note.contains(&u.reason), "{}@{v}: {note}", u.harness)
                    }
                    other => panic!("{}@{v} resolves: {other:?}", u.harness),
                }
            }
        }
    }
}

#[test]
fn the_catalog_page_lists_every_unresolved_version() {
    let page =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/catalog.md")).unwrap();
    for u in unresolved_list() {
        for r in &u.versions {
            assert!(
                page.contains(&r[0]),
                "docs/catalog.md does not name {} {}",
                u.harness,
                r[0]
            );
        }
    }
}

#[test]
fn a_version_the_list_does_not_hold_has_no_note() {
    assert!(unresolved("gemini-cli", "0.22.4").is_some());
    assert!(unresolved("gemini-cli", "0.22.5").is_none());
    assert!(unresolved("codex", "0.1.2505172129").is_some());
    assert!(unresolved("claude-code", "0.22.4").is_none());
    assert!(unresolved("gemini-cli", "not a version").is_none());
    match resolve(&Catalog::builtin(), "claude-code", "linux", "0.2.9", None) {
        Err(ResolveError::Outside { note, .. }) => assert_eq!(note, ""),
        other => panic!("{other:?}"),
    }
}
