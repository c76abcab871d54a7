//! Checks over the whole repository's documentation, read from the checkout:
//!
//! * `docs/environment.md` is the one table of environment variables: every `IEC_…` name the
//!   code, tests, benchmarks and scripts use has a row, every row names one they use, every
//!   variable of `iec_core::config` has a row naming its `Config` field, every other variable
//!   the product reads by name has a row, and no Markdown file names an `IEC_…` variable the
//!   table lacks;
//! * no file cites a document or path that is not in the repository (Markdown links, `*.md`
//!   names, paths under `docs/`, `crates/`, `launches/`, … in Markdown and in source comments);
//! * every crate has a `README.md` that starts with its name and has a `## Layout` section naming
//!   every entry of its `src/`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .unwrap()
}

/// Paths (relative to the root) the repository's `.gitignore` excludes from the root (`/x`) and
/// names it excludes anywhere (`x/`): build output and generated files are not the repository.
fn ignored(root: &Path) -> (Vec<PathBuf>, Vec<String>) {
    let text = std::fs::read_to_string(root.join(".gitignore")).unwrap_or_default();
    let (mut at_root, mut anywhere) = (vec![PathBuf::from(".git")], vec![]);
    for l in text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
    {
        match l.strip_prefix('/') {
            Some(p) => at_root.push(PathBuf::from(p.trim_end_matches('/'))),
            None => anywhere.push(l.trim_end_matches('/').to_string()),
        }
    }
    (at_root, anywhere)
}

/// Every file of the repository, relative to the root.
fn files(root: &Path) -> Vec<PathBuf> {
    let (at_root, anywhere) = ignored(root);
    let mut out = vec![];
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        let mut entries: Vec<_> = std::fs::read_dir(root.join(&rel))
            .unwrap()
            .map(|e| e.unwrap())
            .collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let p = rel.join(e.file_name());
            let name = e.file_name().to_string_lossy().into_owned();
            if at_root.contains(&p) || anywhere.contains(&name) {
                continue;
            }
            if e.file_type().unwrap().is_dir() {
                stack.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Text files worth reading: sources, documents, manifests and scripts (not data files).
fn texts(root: &Path) -> Vec<(PathBuf, String)> {
    files(root)
        .into_iter()
        .filter(|p| {
            let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("");
            let top = p
                .components()
                .next()
                .map(|c| c.as_os_str().to_string_lossy().into_owned());
            matches!(ext, "rs" | "md" | "toml" | "py" | "sh" | "bash" | "js")
                || matches!(top.as_deref(), Some("scripts") | Some(".ci"))
                || p.parent().is_some_and(|d| d.ends_with("scripts"))
        })
        .filter_map(|p| Some((p.clone(), std::fs::read_to_string(root.join(&p)).ok()?)))
        .collect()
}

fn is_md(p: &Path) -> bool {
    p.extension().is_some_and(|e| e == "md")
}

/// The `IEC_…` names in a text (a trailing `_` is a prefix written out, not part of a name).
fn iec_names(text: &str) -> BTreeSet<String> {
    let b = text.as_bytes();
    let mut out = BTreeSet::new();
    let mut i = 0;
    while let Some(at) = text[i..].find("IEC_").map(|k| k + i) {
        let before = at.checked_sub(1).map(|k| b[k]);
        let mut end = at + 4;
        while end < b.len() && (b[end].is_ascii_uppercase() || b[end].is_ascii_digit() || b[end] == b'_') {
            end += 1;
        }
        let name = text[at..end].trim_end_matches('_');
        if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_') && name.len() > 4 {
            out.insert(name.to_string());
        }
        i = end;
    }
    out
}

/// The rows of `docs/environment.md`'s table: each name in a row's first cell → its cells.
fn table(root: &Path) -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(root.join("docs/environment.md")).unwrap();
    let mut rows = BTreeMap::new();
    for line in text.lines().filter(|l| l.starts_with("| `")) {
        let cells: Vec<String> = line.split('|').map(|c| c.trim().to_string()).collect();
        assert_eq!(cells.len(), 7, "docs/environment.md: a row of 5 cells: {line}");
        let cells = cells[1..6].to_vec();
        for name in cells[0].split('`').skip(1).step_by(2) {
            assert!(
                rows.insert(name.to_string(), cells.clone()).is_none(),
                "docs/environment.md lists {name} twice"
            );
        }
    }
    assert!(!rows.is_empty(), "docs/environment.md has no table");
    rows
}

#[test]
fn the_environment_table_lists_exactly_the_iec_variables_the_code_uses() {
    let root = root();
    let table = table(&root);
    let mut used: BTreeMap<String, PathBuf> = BTreeMap::new();
    for (p, text) in texts(&root).iter().filter(|(p, _)| !is_md(p)) {
        for n in iec_names(text) {
            used.entry(n).or_insert_with(|| p.clone());
        }
    }
    let missing: Vec<String> = used
        .iter()
        .filter(|(n, _)| !table.contains_key(*n))
        .map(|(n, p)| format!("{n} (used in {})", p.display()))
        .collect();
    let unused: Vec<&String> = table
        .keys()
        .filter(|n| n.starts_with("IEC_") && !used.contains_key(*n))
        .collect();
    assert!(
        missing.is_empty(),
        "variables the code uses that docs/environment.md does not list: {missing:#?}"
    );
    assert!(
        unused.is_empty(),
        "variables docs/environment.md lists that no code uses: {unused:?}"
    );
}

#[test]
fn every_config_variable_has_a_row_naming_its_field_and_no_other_row_does() {
    let table = table(&root());
    for var in iec_core::config::VARS {
        let row = table
            .get(*var)
            .unwrap_or_else(|| panic!("{var} (iec_core::config) has no row in docs/environment.md"));
        assert!(
            row[3].contains("`Config::"),
            "{var}: its row's \"read by\" names no Config field: {row:?}"
        );
    }
    for (name, row) in &table {
        if row[3].contains("`Config::") {
            assert!(
                iec_core::config::VARS.contains(&name.as_str()),
                "{name}: the table says Config reads it, iec_core::config::VARS does not"
            );
        }
    }
    // Parsing reads exactly the listed names.
    let asked = std::sync::Mutex::new(BTreeSet::new());
    iec_core::config::Config::from_lookup(|k| {
        asked.lock().unwrap().insert(k.to_string());
        None
    })
    .unwrap();
    let listed: BTreeSet<String> = iec_core::config::VARS.iter().map(|v| v.to_string()).collect();
    assert_eq!(asked.into_inner().unwrap(), listed);
}

#[test]
fn every_variable_the_product_reads_by_name_is_in_the_table() {
    let root = root();
    let table = table(&root);
    let mut missing = vec![];
    for (p, text) in texts(&root) {
        let product = p.starts_with("crates")
            && (p.components().any(|c| c.as_os_str() == "src") || p.ends_with("build.rs"));
        if !product || p.extension().is_none_or(|e| e != "rs") {
            continue;
        }
        for pat in ["var(\"", "var_os(\""] {
            for (at, _) in text.match_indices(pat) {
                let rest = &text[at + pat.len()..];
                let name: String = rest
                    .chars()
                    .take_while(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || *c == '_')
                    .collect();
                let cargo_own = name.starts_with("CARGO_") || name == "CARGO" || name == "OUT_DIR";
                if !name.is_empty()
                    && rest[name.len()..].starts_with('"')
                    && !cargo_own
                    && !table.contains_key(&name)
                {
                    missing.push(format!("{name} ({})", p.display()));
                }
            }
        }
    }
    assert!(
        missing.is_empty(),
        "read by the product, not in docs/environment.md: {missing:?}"
    );
}

#[test]
fn documents_name_only_variables_of_the_table() {
    let root = root();
    let table = table(&root);
    let mut stale = vec![];
    for (p, text) in texts(&root).iter().filter(|(p, _)| is_md(p)) {
        for n in iec_names(text) {
            if !table.contains_key(&n) {
                stale.push(format!("{n} ({})", p.display()));
            }
        }
    }
    assert!(
        stale.is_empty(),
        "variables named in documents that docs/environment.md does not list: {stale:?}"
    );
}

/// Top directories whose paths are citations of this repository wherever they appear.
const TOP: [&str; 9] = [
    "docs/",
    "crates/",
    "launches/",
    "scripts/",
    "plugins/",
    "fuzz/",
    ".ci/",
    "spec/",
    "findings/",
];

fn path_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '/' | '-')
}

/// What a line cites: Markdown link targets (in documents) and path-like words.
fn citations(line: &str, md: bool, external_notes: bool) -> Vec<String> {
    let mut out = vec![];
    if md {
        for (at, _) in line.match_indices("](") {
            let target: String = line[at + 2..]
                .chars()
                .take_while(|c| *c != ')' && *c != ' ')
                .collect();
            let target = target.split('#').next().unwrap_or("").to_string();
            // A path, not a URL, an anchor or a regular expression in brackets.
            if !target.is_empty() && target.chars().all(path_char) && !target.starts_with('/') {
                out.push(target);
            }
        }
    }
    let mut word = String::new();
    let mut prev = ' ';
    let mut words = vec![];
    for c in line.chars().chain(std::iter::once(' ')) {
        if path_char(c) {
            if word.is_empty() && matches!(prev, '~' | '$' | ':' | '<' | '*' | '{' | '…') {
                // `~/…`, `$VAR/…`, `https://…`, a placeholder: not a repository path.
                word.push('\0');
            }
            word.push(c);
        } else {
            if !word.is_empty() {
                // A word cut by a placeholder (`docs/findings/<x>`) is checked up to it.
                words.push(std::mem::take(&mut word));
            }
            prev = c;
            continue;
        }
        prev = c;
    }
    for w in words {
        if w.starts_with('\0') || w.starts_with('/') {
            continue;
        }
        let w = w.trim_end_matches(['.', '-', ',']).to_string();
        // The research notes' home outside this repository.
        let outside = w.contains("../shared/") || w.starts_with("shared/spec");
        let cited = if external_notes {
            // Research notes about other repositories: their paths are those repositories'.
            w.starts_with("docs/spec/") || outside
        } else {
            (TOP.iter().any(|t| w.starts_with(t)) && w.len() > w.find('/').unwrap() + 1)
                || (w.ends_with(".md") && w.len() > 3)
                || outside
        };
        if cited {
            out.push(w);
        }
    }
    out
}

/// The part of a source line that is a comment (`//`, `#`), if any.
fn comment<'a>(line: &'a str, ext: &str) -> Option<&'a str> {
    let t = line.trim_start();
    let marker = if ext == "rs" { "//" } else { "#" };
    if t.starts_with(marker) {
        return Some(t);
    }
    line.find(&format!(" {marker} ")).map(|at| &line[at..])
}

#[test]
fn no_file_cites_a_document_or_path_that_is_not_in_the_repository() {
    let root = root();
    let (at_root, _) = ignored(&root);
    let mut broken = vec![];
    for (p, text) in texts(&root) {
        // This file's own examples of citations, found and not found.
        if p.ends_with("iec-core/tests/repo_docs.rs") {
            continue;
        }
        let md = is_md(&p);
        let ext = p.extension().and_then(|e| e.to_str()).unwrap_or("").to_string();
        let notes = p.starts_with("docs/spec");
        let dir = p.parent().unwrap_or(Path::new(""));
        for (i, line) in text.lines().enumerate() {
            let mut cited = vec![];
            if md {
                cited = citations(line, true, notes);
            } else {
                if let Some(c) = comment(line, &ext) {
                    cited = citations(c, false, false);
                }
                // In code, only paths of the repository's documents count.
                cited.extend(citations(line, false, false).into_iter().filter(|w| {
                    w.starts_with("docs/") || w.starts_with("spec/") || w.contains("shared/spec")
                }));
            }
            for c in cited {
                let found = [dir.join(&c), PathBuf::from(&c)].iter().any(|rel| {
                    at_root.iter().any(|ig| rel.starts_with(ig))
                        || (!c.contains("shared/spec") && root.join(rel).exists())
                });
                if !found {
                    broken.push(format!("{}:{}: {c}", p.display(), i + 1));
                }
            }
        }
    }
    broken.sort();
    broken.dedup();
    assert!(
        broken.is_empty(),
        "citations of documents or paths that are not in the repository (keep the facts under docs/spec/ or drop the citation):\n{}",
        broken.join("\n")
    );
}

#[test]
fn citations_are_found_where_they_are_written() {
    assert_eq!(
        citations(
            "see [a](../docs/x.md#y), `docs/spec/h.md §13` and crates/iec-x/src/ too.",
            true,
            false
        ),
        [
            "../docs/x.md",
            "../docs/x.md",
            "docs/spec/h.md",
            "crates/iec-x/src/"
        ]
    );
    assert_eq!(
        citations(
            "~/.cache/iec and $HOME/docs/a.md, https://x.org/docs/b.md, docs/findings/<x>",
            true,
            false
        ),
        ["docs/findings/"]
    );
    assert_eq!(
        citations("`owner/repo` `docs/SPEC.md`, ../shared/spec/a.md", true, true),
        ["../shared/spec/a.md"]
    );
    assert_eq!(
        comment("let a = 1; // see docs/limits.md", "rs"),
        Some(" // see docs/limits.md")
    );
    assert_eq!(comment("\"tree/c/r.md\" = \"r\"", "toml"), None);
}

/// Each crate's directory and manifest.
fn crates(root: &Path) -> Vec<(PathBuf, String)> {
    std::fs::read_dir(root.join("crates"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter_map(|dir| Some((dir.clone(), std::fs::read_to_string(dir.join("Cargo.toml")).ok()?)))
        .collect()
}

#[test]
fn every_crate_has_a_current_readme() {
    let root = root();
    let mut problems = vec![];
    for (dir, manifest) in crates(&root) {
        let name = manifest
            .lines()
            .find_map(|l| l.strip_prefix("name = \""))
            .and_then(|l| l.strip_suffix('"'))
            .unwrap()
            .to_string();
        let Ok(readme) = std::fs::read_to_string(dir.join("README.md")) else {
            problems.push(format!("{name}: no README.md"));
            continue;
        };
        if !readme.starts_with(&format!("# {name}")) {
            problems.push(format!("{name}: README.md does not start with `# {name}`"));
        }
        let Some(layout) = readme.split("\n## Layout\n").nth(1) else {
            problems.push(format!("{name}: README.md has no `## Layout` section"));
            continue;
        };
        let layout = layout.split("\n## ").next().unwrap();
        for entry in std::fs::read_dir(dir.join("src")).unwrap() {
            let entry = entry.unwrap();
            let mut shown = entry.file_name().to_string_lossy().into_owned();
            if entry.file_type().unwrap().is_dir() {
                shown.push('/');
            }
            if !layout.contains(&format!("`{shown}`")) && !layout.contains(&format!("`src/{shown}`")) {
                problems.push(format!("{name}: the README's Layout does not name `src/{shown}`"));
            }
        }
    }
    problems.sort();
    assert!(problems.is_empty(), "crate READMEs:\n{}", problems.join("\n"));
}

/// The iec crates a manifest's `[dependencies]` (or `[dev-dependencies]`) name, without `iec-`.
fn iec_deps(manifest: &str, table: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut inside = false;
    for l in manifest.lines() {
        if l.starts_with('[') {
            inside = l.trim() == table;
        } else if inside {
            if let Some(rest) = l.strip_prefix("iec-") {
                out.insert(rest.split([' ', '=', '.']).next().unwrap().to_string());
            }
        }
    }
    out
}

#[test]
fn the_crate_map_of_docs_architecture_matches_the_manifests() {
    let root = root();
    let text = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let set = |cell: &str| -> BTreeSet<String> {
        cell.split(',')
            .map(|w| w.trim().to_string())
            .filter(|w| !w.is_empty() && w != "—")
            .collect()
    };
    let mut deps = BTreeMap::new();
    let mut dev = BTreeMap::new();
    for (dir, m) in crates(&root) {
        let name = dir
            .file_name()
            .unwrap()
            .to_string_lossy()
            .trim_start_matches("iec-")
            .to_string();
        deps.insert(name.clone(), iec_deps(&m, "[dependencies]"));
        dev.insert(name, iec_deps(&m, "[dev-dependencies]"));
    }
    let mut seen = BTreeSet::new();
    for line in text.lines().filter(|l| l.starts_with("| [`iec-")) {
        let cells: Vec<&str> = line.split(" | ").collect();
        let name = cells[0]
            .split('`')
            .nth(1)
            .unwrap()
            .trim_start_matches("iec-")
            .to_string();
        let (uses, used_by) = (cells[2], cells[3].trim_end_matches(" |"));
        let want_uses = deps
            .get(&name)
            .unwrap_or_else(|| panic!("docs/architecture.md: no crate iec-{name}"));
        assert_eq!(
            &set(uses),
            want_uses,
            "docs/architecture.md: what iec-{name} uses"
        );
        let (table, cell) = match used_by.strip_prefix("tests and benchmarks of ") {
            Some(rest) => (&dev, rest),
            None => (&deps, used_by),
        };
        let want_used_by: BTreeSet<String> = table
            .iter()
            .filter(|(_, d)| d.contains(&name))
            .map(|(n, _)| n.clone())
            .collect();
        assert_eq!(
            set(cell),
            want_used_by,
            "docs/architecture.md: what uses iec-{name}"
        );
        seen.insert(name);
    }
    assert_eq!(
        seen,
        deps.keys().cloned().collect(),
        "docs/architecture.md: the crate map names every crate"
    );
}

/// The README is a user document of a few hundred lines (issue 18): run figures, findings and
/// launch facts belong under `docs/`, `BENCHMARKS.md` and `CHANGELOG.md`.
#[test]
fn the_readme_stays_within_400_lines() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let lines = readme.lines().count();
    assert!(lines <= 400, "README.md has {lines} lines; the most is 400");
}
