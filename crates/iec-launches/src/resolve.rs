//! Choosing a launch by harness version (`--harness claude-code@2.1.50`): each launch file says
//! which published versions it holds for (`versions = [["2.0.0", "2.0.76"], …]`, inclusive, in
//! semver order). A version inside a range gets that launch; a version between two ranges of the
//! same launch gets it too (the neighbours on both sides agree); any other version is an error
//! that lists the ranges there are and says how to learn it. Never a silent nearest guess.

use crate::{Catalog, Launch};
use std::cmp::Ordering;

/// A semantic version as npm orders them: `MAJOR.MINOR.PATCH[-PRE][+BUILD]`; a release sorts
/// after its pre-releases, numeric pre-release parts before alphanumeric ones.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Version {
    core: [u64; 3],
    pre: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Part {
    Num(u64),
    Text(String),
}

impl Version {
    /// Parses `1.2.3`, `1.2.3-rc.1`, `1.2.3+build`; `None` for anything else.
    pub fn parse(s: &str) -> Option<Version> {
        let s = s.split('+').next()?;
        let (core, pre) = match s.split_once('-') {
            Some((c, p)) => (c, Some(p)),
            None => (s, None),
        };
        let mut it = core.split('.');
        let mut n = [0u64; 3];
        for x in &mut n {
            let p = it.next()?;
            if p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit()) {
                return None;
            }
            *x = p.parse().ok()?;
        }
        if it.next().is_some() {
            return None;
        }
        let pre = match pre {
            None => vec![],
            Some(p) => p
                .split('.')
                .map(|x| match x.parse() {
                    _ if x.is_empty() => None,
                    Ok(n) if x.bytes().all(|b| b.is_ascii_digit()) => Some(Part::Num(n)),
                    _ if x.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') => {
                        Some(Part::Text(x.into()))
                    }
                    _ => None,
                })
                .collect::<Option<_>>()?,
        };
        Some(Version { core: n, pre })
    }
}

impl Ord for Version {
    fn cmp(&self, o: &Self) -> Ordering {
        self.core
            .cmp(&o.core)
            .then_with(|| match (self.pre.is_empty(), o.pre.is_empty()) {
                (true, true) => Ordering::Equal,
                (true, false) => Ordering::Greater,
                (false, true) => Ordering::Less,
                (false, false) => self.pre.cmp(&o.pre),
            })
    }
}

impl PartialOrd for Version {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

/// How a version was resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum How {
    /// Inside one of the launch's ranges.
    InRange,
    /// Between two ranges of the same launch (`below` ends before it, `above` starts after it).
    Between {
        /// The last version of the range below.
        below: String,
        /// The first version of the range above.
        above: String,
    },
}

/// Errors resolving a `HARNESS@VERSION`.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ResolveError {
    /// Not `HARNESS@VERSION`.
    #[error(
        "--harness takes HARNESS@VERSION (claude-code@2.1.72, codex@0.171.0, gemini-cli@0.61.0), got {0:?}"
    )]
    Spec(String),
    /// A version that is not semver.
    #[error("{0:?} is not a version (MAJOR.MINOR.PATCH)")]
    Version(String),
    /// No launch of this harness and OS names any version range.
    #[error("no launch of {harness} on {os} has version ranges; `iec launches` lists the launches (choose one with --launch)")]
    NoRanges {
        /// Harness.
        harness: String,
        /// OS.
        os: String,
    },
    /// The version is in no range, and the ranges on its two sides are not the same launch.
    #[error("{harness}@{version} on {os} is in no learned version range; the ranges there are: {ranges}. Learn it with `iec harness learn --harness {harness}@{version} --out FILE` and pass the file with --launch-file{note}")]
    Outside {
        /// Harness.
        harness: String,
        /// The version asked for.
        version: String,
        /// OS.
        os: String,
        /// `FIRST..LAST (LAUNCH-ID)`, comma-separated, in version order.
        ranges: String,
        /// Empty, or why the catalog sweep could not learn this version ([`unresolved`]).
        note: String,
    },
    /// Several launches hold the version (different tools, or shells on Windows).
    #[error("{harness}@{version} on {os} has {n} launches: {ids}; choose one with --launch", n = .ids.split(", ").count())]
    Ambiguous {
        /// Harness.
        harness: String,
        /// The version asked for.
        version: String,
        /// OS.
        os: String,
        /// The launch ids, comma-separated.
        ids: String,
    },
}

/// A published version the catalog sweep could not learn, and why (`unresolved.toml`).
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unresolved {
    /// The harness (`gemini-cli`).
    pub harness: String,
    /// Inclusive version ranges.
    pub versions: Vec<[String; 2]>,
    /// `not-drivable: …` or `learner-unsupported: …`.
    pub reason: String,
}

/// Every entry of `unresolved.toml`.
pub fn unresolved_list() -> Vec<Unresolved> {
    #[derive(serde::Deserialize)]
    #[serde(deny_unknown_fields)]
    struct File {
        unresolved: Vec<Unresolved>,
    }
    toml::from_str::<File>(include_str!("../unresolved.toml"))
        .expect("unresolved.toml parses (tests/unresolved.rs)")
        .unresolved
}

/// The entry of `unresolved.toml` that holds `harness@version`, if any.
pub fn unresolved(harness: &str, version: &str) -> Option<Unresolved> {
    let v = Version::parse(version)?;
    unresolved_list().into_iter().find(|u| {
        u.harness == harness
            && u.versions.iter().any(|r| {
                matches!((Version::parse(&r[0]), Version::parse(&r[1])), (Some(a), Some(b)) if a <= v && v <= b)
            })
    })
}

/// Splits `HARNESS@VERSION`.
pub fn parse_spec(spec: &str) -> Result<(&str, &str), ResolveError> {
    match spec.split_once('@') {
        Some((h, v)) if !h.is_empty() && !v.is_empty() => Ok((h, v)),
        _ => Err(ResolveError::Spec(spec.into())),
    }
}

/// The OS a launch is chosen for when none is given: `windows` on Windows, else `linux`.
pub fn default_os() -> &'static str {
    if cfg!(windows) {
        "windows"
    } else {
        "linux"
    }
}

fn range_text(r: &[String; 2]) -> String {
    if r[0] == r[1] {
        r[0].clone()
    } else {
        format!("{}..{}", r[0], r[1])
    }
}

/// The launch of `harness` on `os` for `version`; with `tool`, only launches for that tool
/// (Codex runs one launch per tool) are considered when several hold the version.
pub fn resolve<'a>(
    cat: &'a Catalog,
    harness: &str,
    os: &str,
    version: &str,
    tool: Option<&str>,
) -> Result<(&'a Launch, How), ResolveError> {
    let v = Version::parse(version).ok_or_else(|| ResolveError::Version(version.into()))?;
    let mut ranges: Vec<(Version, Version, [String; 2], &Launch)> = vec![];
    for l in cat.iter().filter(|l| l.harness == harness && l.os == os) {
        for r in &l.versions {
            // Launch files are checked on load; a range that does not parse holds nothing.
            if let (Some(a), Some(b)) = (Version::parse(&r[0]), Version::parse(&r[1])) {
                ranges.push((a, b, r.clone(), l));
            }
        }
    }
    if ranges.is_empty() {
        return Err(ResolveError::NoRanges {
            harness: harness.into(),
            os: os.into(),
        });
    }
    ranges.sort_by(|x, y| x.0.cmp(&y.0).then_with(|| x.3.id.cmp(&y.3.id)));
    fn ids<'b>(ls: &[(&'b Launch, How)]) -> Vec<&'b str> {
        let mut v: Vec<&str> = ls.iter().map(|(l, _)| l.id.as_str()).collect();
        v.dedup();
        v
    }
    let mut found: Vec<(&Launch, How)> = ranges
        .iter()
        .filter(|r| r.0 <= v && v <= r.1)
        .map(|r| (r.3, How::InRange))
        .collect();
    if found.is_empty() {
        let below = ranges.iter().filter(|r| r.1 < v).max_by(|x, y| x.1.cmp(&y.1));
        let above = ranges.iter().filter(|r| r.0 > v).min_by(|x, y| x.0.cmp(&y.0));
        if let (Some(b), Some(a)) = (below, above) {
            // Every launch whose range ends at the nearest end below must also start the
            // nearest range above, and the other way round.
            let lo: Vec<&str> = ranges
                .iter()
                .filter(|r| r.1 == b.1)
                .map(|r| r.3.id.as_str())
                .collect();
            let hi: Vec<&str> = ranges
                .iter()
                .filter(|r| r.0 == a.0)
                .map(|r| r.3.id.as_str())
                .collect();
            let (mut lo, mut hi) = (lo, hi);
            lo.sort();
            hi.sort();
            if lo == hi {
                found = ranges
                    .iter()
                    .filter(|r| r.1 == b.1)
                    .map(|r| {
                        (
                            r.3,
                            How::Between {
                                below: b.2[1].clone(),
                                above: a.2[0].clone(),
                            },
                        )
                    })
                    .collect();
            }
        }
    }
    if found.is_empty() {
        let ranges = ranges
            .iter()
            .map(|r| format!("{} ({})", range_text(&r.2), r.3.id))
            .collect::<Vec<_>>()
            .join(", ");
        let note = unresolved(harness, version)
            .map(|u| {
                format!(
                    " (the catalog sweep could not learn it: {}; docs/catalog.md)",
                    u.reason
                )
            })
            .unwrap_or_default();
        return Err(ResolveError::Outside {
            harness: harness.into(),
            version: version.into(),
            os: os.into(),
            ranges,
            note,
        });
    }
    if ids(&found).len() > 1 {
        if let Some(t) = tool {
            found.retain(|(l, _)| l.tool == t);
        }
    }
    match ids(&found).len() {
        1 => Ok(found.swap_remove(0)),
        _ => Err(ResolveError::Ambiguous {
            harness: harness.into(),
            version: version.into(),
            os: os.into(),
            ids: ids(&found).join(", "),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_order_as_npm_orders_them() {
        let order = [
            "0.2.9",
            "0.2.14",
            "1.0.0-rc.1",
            "1.0.0-rc.2",
            "1.0.0-rc.10",
            "1.0.0-rc.a",
            "1.0.0",
            "1.0.9",
            "1.0.10",
            "2.0.76",
            "2.1.0",
            "2.1.72",
            "2.1.332",
        ];
        for w in order.windows(2) {
            let (a, b) = (Version::parse(w[0]).unwrap(), Version::parse(w[1]).unwrap());
            assert!(a < b, "{} < {}", w[0], w[1]);
        }
        assert_eq!(Version::parse("1.2.3+x"), Version::parse("1.2.3"));
        for bad in [
            "",
            "1.2",
            "1.2.3.4",
            "a.b.c",
            "1.2.-3",
            "1.2.3-",
            "1.2.3-a..b",
            "2.1.2xx",
        ] {
            assert_eq!(Version::parse(bad), None, "{bad}");
        }
    }
}
