//! The data files: pattern pairs, chains (ToolHop's record schema) and tasks, one JSON object
//! a line, read with the file and line of every error. Nothing read here is ever evaluated as
//! code by the bench: command texts are what an agent emitted and are delivered along a launch
//! like any recorded action; tool functions are lookup tables ([`crate::chain`]).

use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A data file that cannot be used: which file, which line (1-based; 0 for the whole file),
/// and why.
#[derive(Debug, thiserror::Error)]
#[error("{}:{line}: {message}", file.display())]
pub struct DataError {
    /// The file.
    pub file: PathBuf,
    /// The line (1-based), 0 when the error is about the whole file.
    pub line: usize,
    /// What is wrong and what to do.
    pub message: String,
}

/// How the tool that the hazard was observed with takes the call (recorded provenance; the
/// launch decides the shape of the call the bench emits).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Contract {
    /// The tool takes an argv (execve-style, e.g. Codex's `shell`).
    Argv,
    /// The tool takes one shell command string (`Bash`, `shell_command`, `run_shell_command`).
    ShellString,
    /// The command travels inside a JSON-encoded argument string (tool-call arguments, MCP).
    JsonWrapped,
}

/// What the check of an item compares after its actions ran.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, Deserialize)]
#[serde(try_from = "String")]
pub enum Observable {
    /// The standard output of all actions, concatenated.
    Stdout,
    /// The bytes of a file in the sandbox (or its absence).
    File(String),
    /// The message of the sandbox repository's HEAD commit, as stored (`git cat-file commit HEAD`
    /// after the header).
    GitMessage,
    /// The sorted names of the files in the sandbox (outside `.git` and the tools' folder).
    Tree,
}

impl TryFrom<String> for Observable {
    type Error = String;
    fn try_from(s: String) -> Result<Observable, String> {
        Observable::parse(&s)
    }
}

impl Observable {
    /// Reads `stdout`, `file:NAME`, `git-message` or `tree`.
    pub fn parse(s: &str) -> Result<Observable, String> {
        match s {
            "stdout" => Ok(Observable::Stdout),
            "git-message" => Ok(Observable::GitMessage),
            "tree" => Ok(Observable::Tree),
            _ => match s.strip_prefix("file:") {
                Some(name) if safe_name(name) => Ok(Observable::File(name.into())),
                Some(name) => Err(format!(
                    "`file:{name}` must name a file inside the sandbox (a relative path without `..`)"
                )),
                None => Err(format!(
                    "unknown observable `{s}`: use stdout, file:NAME, git-message or tree"
                )),
            },
        }
    }

    /// The key of this observable in an item's `expect`.
    pub fn key(&self) -> String {
        match self {
            Observable::Stdout => "stdout".into(),
            Observable::File(n) => format!("file:{n}"),
            Observable::GitMessage => "git-message".into(),
            Observable::Tree => "tree".into(),
        }
    }
}

/// A relative path inside the sandbox: not empty, not absolute, no `..`.
pub fn safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('/')
        && !name.contains('\0')
        && Path::new(name)
            .components()
            .all(|c| matches!(c, std::path::Component::Normal(_)))
}

/// A hazard and a control that differ in one literal.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pair {
    /// Unique id.
    pub id: String,
    /// The hazard family (`bang-in-single-quotes`, `pid-in-pipe`, …).
    pub family: String,
    /// Where the hazard is documented or was observed.
    pub source: String,
    /// The tool contract it was observed with.
    pub contract: Contract,
    /// The intended action, in words.
    pub intent: String,
    /// Files written into the sandbox before the action (name → content).
    #[serde(default)]
    pub setup: BTreeMap<String, String>,
    /// The command text with the hazardous literal.
    pub hazard: String,
    /// The same command with that literal replaced.
    pub control: String,
    /// What the check compares.
    pub observe: Vec<Observable>,
    /// Hand-written expectations (`stdout`, `file:NAME`, …) the control-path run must meet.
    #[serde(default)]
    pub expect: BTreeMap<String, String>,
}

/// An end-to-end task: an instruction, the recorded correct actions and a check.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    /// Unique id.
    pub id: String,
    /// Where the hazard in it is documented or was observed.
    pub source: String,
    /// What the agent was asked to do.
    pub instruction: String,
    /// Files written into the sandbox first.
    #[serde(default)]
    pub setup: BTreeMap<String, String>,
    /// The recorded correct command texts, in order.
    pub actions: Vec<String>,
    /// What the check compares.
    pub observe: Vec<Observable>,
    /// Hand-written expectations the control-path run must meet.
    #[serde(default)]
    pub expect: BTreeMap<String, String>,
}

/// `observe` is not empty and `expect` names only what it lists.
fn observed_and_expected(obs: &[Observable], expect: &BTreeMap<String, String>) -> Result<(), String> {
    if obs.is_empty() {
        return Err("`observe` is empty: the check must compare something".into());
    }
    match expect.keys().find(|k| !obs.iter().any(|o| &o.key() == *k)) {
        Some(k) => Err(format!("`expect` names `{k}`, which `observe` does not list")),
        None => Ok(()),
    }
}

/// What every pair and task needs: setup files inside the sandbox and a source.
fn setup_and_source(setup: &BTreeMap<String, String>, source: &str) -> Result<(), String> {
    if let Some(k) = setup.keys().find(|k| !safe_name(k)) {
        return Err(format!(
            "setup file `{k}` must be a relative path inside the sandbox"
        ));
    }
    if source.trim().is_empty() {
        return Err("`source` is empty: every item cites where its hazard comes from".into());
    }
    Ok(())
}

/// Reads a JSON Lines file: one value a non-empty line (`#` starts a comment line), each
/// turned into an item by `f`; every error names the file and the line.
pub fn read_lines<T>(
    file: &Path,
    text: &str,
    mut f: impl FnMut(Value) -> Result<T, String>,
) -> Result<Vec<T>, DataError> {
    let err = |line: usize, message: String| DataError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let mut out = Vec::new();
    let mut ids = std::collections::HashMap::new();
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let v: Value = serde_json::from_str(t).map_err(|e| err(n, format!("not a JSON object: {e}")))?;
        let id = match &v["id"] {
            Value::String(s) => s.clone(),
            Value::Number(x) => x.to_string(),
            _ => return Err(err(n, "no `id` (a string or a number)".into())),
        };
        if let Some(first) = ids.insert(id.clone(), n) {
            return Err(err(n, format!("id `{id}` is already used on line {first}")));
        }
        out.push(f(v).map_err(|m| err(n, format!("item `{id}`: {m}")))?);
    }
    Ok(out)
}

/// Parses one pair line.
pub fn pair(v: Value) -> Result<Pair, String> {
    let p: Pair = serde_json::from_value(v).map_err(|e| e.to_string())?;
    setup_and_source(&p.setup, &p.source)?;
    observed_and_expected(&p.observe, &p.expect)?;
    if p.hazard == p.control {
        return Err("hazard and control are the same text".into());
    }
    Ok(p)
}

/// Parses one task line.
pub fn task(v: Value) -> Result<Task, String> {
    let t: Task = serde_json::from_value(v).map_err(|e| e.to_string())?;
    setup_and_source(&t.setup, &t.source)?;
    observed_and_expected(&t.observe, &t.expect)?;
    if t.actions.is_empty() {
        return Err("`actions` is empty".into());
    }
    Ok(t)
}

/// The three data sets.
#[derive(Debug, Clone, Default)]
pub struct Suite {
    /// Pattern pairs.
    pub pairs: Vec<Pair>,
    /// Tool chains.
    pub chains: Vec<crate::chain::Chain>,
    /// End-to-end tasks.
    pub tasks: Vec<Task>,
}

/// The data folder of the crate's source tree (where `Suite::builtin` was read from at build
/// time; for tests and tools that read the files themselves).
pub fn builtin_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data")
}

fn read(file: &Path) -> Result<String, DataError> {
    std::fs::read_to_string(file).map_err(|e| DataError {
        file: file.to_path_buf(),
        line: 0,
        message: format!("cannot read: {e}"),
    })
}

impl Suite {
    /// Reads `pairs.jsonl`, `chains.jsonl` and `tasks.jsonl` from `dir`.
    pub fn load(dir: &Path) -> Result<Suite, DataError> {
        let p = dir.join("pairs.jsonl");
        let c = dir.join("chains.jsonl");
        let t = dir.join("tasks.jsonl");
        Ok(Suite {
            pairs: read_lines(&p, &read(&p)?, pair)?,
            chains: read_lines(&c, &read(&c)?, crate::chain::chain)?,
            tasks: read_lines(&t, &read(&t)?, task)?,
        })
    }

    /// The data shipped with the crate (embedded at build time, so the binary carries it).
    pub fn builtin() -> Result<Suite, DataError> {
        let f = |n: &str| Path::new("crates/iec-bench/data").join(n);
        Ok(Suite {
            pairs: read_lines(&f("pairs.jsonl"), include_str!("../data/pairs.jsonl"), pair)?,
            chains: read_lines(
                &f("chains.jsonl"),
                include_str!("../data/chains.jsonl"),
                crate::chain::chain,
            )?,
            tasks: read_lines(&f("tasks.jsonl"), include_str!("../data/tasks.jsonl"), task)?,
        })
    }
}
