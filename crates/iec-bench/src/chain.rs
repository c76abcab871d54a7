//! Tool chains in ToolHop's record schema (`id, question, answer, sub_task, tools, functions`,
//! arXiv:2501.02506), and their tools. ToolHop's `functions` are Python sources that its own
//! evaluation `exec`s; the bench never runs code from a data file: our chains' functions are
//! lookup tables (`{"name", "rows": [{"arguments", "output"}]}`), and a real `ToolHop.json`'s
//! Python sources are kept as text only ([`Functions::Source`]).
//!
//! Our records add two keys: `source` (provenance of the hazards in the arguments) and `calls`,
//! the recorded trajectory: per step the tool, its arguments, the command text the agent
//! emitted to call the tool (`TOOL --PARAM VALUE …`) and `from_previous`, the parameter that
//! takes the previous step's output. In the sandbox each tool is a program on `PATH` that
//! records the argv it receives; the bench then computes its output from the table, so a tool
//! that receives a changed argument finds no row, and the chain fails.

use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::Path;

/// A tool's schema, as ToolHop writes it (an OpenAI function schema).
#[derive(Debug, Clone, Deserialize, serde::Serialize)]
pub struct ToolSchema {
    /// The tool's name.
    pub name: String,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// A JSON schema of its parameters (`properties`, `required`).
    #[serde(default)]
    pub parameters: Value,
}

/// One row of a lookup-table tool: these arguments give this output.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Row {
    /// Parameter name → value.
    pub arguments: BTreeMap<String, String>,
    /// What the tool returns.
    pub output: String,
}

/// A data-driven tool function.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TableFn {
    /// The tool it implements.
    pub name: String,
    /// Its rows.
    pub rows: Vec<Row>,
}

impl TableFn {
    /// The output for these arguments, if a row has exactly them.
    pub fn output(&self, args: &BTreeMap<String, String>) -> Option<&str> {
        self.rows
            .iter()
            .find(|r| &r.arguments == args)
            .map(|r| r.output.as_str())
    }
}

/// A chain's tool functions.
#[derive(Debug, Clone)]
pub enum Functions {
    /// Lookup tables (our chains): the bench runs these.
    Tables(Vec<TableFn>),
    /// Python sources (a real `ToolHop.json`): kept as text, never run.
    Source(Vec<String>),
}

/// One recorded step.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Step {
    /// The tool called.
    pub tool: String,
    /// Its arguments.
    pub arguments: BTreeMap<String, String>,
    /// The command text the agent emitted (`TOOL --PARAM VALUE …`, quoted for bash).
    pub command: String,
    /// The parameter that takes the previous step's output (none on the first step).
    #[serde(default)]
    pub from_previous: Option<String>,
}

/// A chain.
#[derive(Debug, Clone)]
pub struct Chain {
    /// ToolHop's `id` (a number there; any string here).
    pub id: String,
    /// The multi-hop question.
    pub question: String,
    /// The gold answer.
    pub answer: String,
    /// The decomposition, in order.
    pub sub_task: Vec<(String, String)>,
    /// Tool schemas by name.
    pub tools: BTreeMap<String, ToolSchema>,
    /// The tool functions.
    pub functions: Functions,
    /// Provenance of the hazards (our chains).
    pub source: String,
    /// The recorded steps (empty for a real ToolHop record, which ships no trajectories).
    pub steps: Vec<Step>,
    /// Each step's output, by the tables.
    pub outputs: Vec<String>,
}

impl Chain {
    /// The function implementing `tool`.
    pub fn table(&self, tool: &str) -> Option<&TableFn> {
        match &self.functions {
            Functions::Tables(t) => t.iter().find(|f| f.name == tool),
            Functions::Source(_) => None,
        }
    }

    /// True when the chain has recorded steps and table functions (the bench can replay it).
    pub fn replayable(&self) -> bool {
        !self.steps.is_empty() && matches!(self.functions, Functions::Tables(_))
    }
}

/// The keys a ToolHop record and one of ours share.
type Common = (
    String,
    String,
    String,
    Vec<(String, String)>,
    BTreeMap<String, ToolSchema>,
);

fn common(v: &Value) -> Result<Common, String> {
    let o = v.as_object().ok_or("a chain is a JSON object")?;
    let id = match o.get("id") {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => return Err("`id` must be a number or a string".into()),
    };
    let s = |k: &str| -> Result<String, String> {
        o.get(k)
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| format!("`{k}` must be a string"))
    };
    let sub: &Map<String, Value> = o
        .get("sub_task")
        .and_then(Value::as_object)
        .filter(|m| !m.is_empty())
        .ok_or("`sub_task` must be a non-empty object")?;
    let sub_task = sub
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            other => Ok((k.clone(), other.to_string())),
        })
        .collect::<Result<Vec<_>, String>>()?;
    let tools: BTreeMap<String, ToolSchema> =
        serde_json::from_value(o.get("tools").cloned().ok_or("`tools` is missing")?)
            .map_err(|e| format!("`tools`: {e}"))?;
    Ok((id, s("question")?, s("answer")?, sub_task, tools))
}

/// Reads one of our chains (a line of `chains.jsonl`) and checks that it holds together: 3–7
/// steps, each calling a listed tool with its parameters, each step after the first taking the
/// previous output, and the last output the answer.
pub fn chain(v: Value) -> Result<Chain, String> {
    const KEYS: &[&str] = &[
        "id",
        "question",
        "answer",
        "sub_task",
        "tools",
        "functions",
        "source",
        "calls",
    ];
    if let Some(k) = v
        .as_object()
        .and_then(|o| o.keys().find(|k| !KEYS.contains(&k.as_str())))
    {
        return Err(format!("unknown key `{k}` (known: {})", KEYS.join(", ")));
    }
    let (id, question, answer, sub_task, tools) = common(&v)?;
    let functions: Vec<TableFn> = serde_json::from_value(v["functions"].clone())
        .map_err(|e| format!("`functions` must be lookup tables ({{\"name\", \"rows\"}}): {e}"))?;
    let steps: Vec<Step> = serde_json::from_value(v["calls"].clone()).map_err(|e| format!("`calls`: {e}"))?;
    let source = v["source"].as_str().unwrap_or_default().to_string();
    if source.trim().is_empty() {
        return Err("`source` is empty: every item cites where its hazard comes from".into());
    }
    if !(3..=7).contains(&steps.len()) {
        return Err(format!("{} calls: a chain has 3 to 7", steps.len()));
    }
    if sub_task.len() != steps.len() {
        return Err(format!("{} sub-tasks for {} calls", sub_task.len(), steps.len()));
    }
    let mut c = Chain {
        id,
        question,
        answer,
        sub_task,
        tools,
        functions: Functions::Tables(functions),
        source,
        steps,
        outputs: vec![],
    };
    let mut prev: Option<String> = None;
    for (i, s) in c.steps.iter().enumerate() {
        let n = i + 1;
        let schema = c
            .tools
            .get(&s.tool)
            .ok_or(format!("call {n}: tool `{}` is not in `tools`", s.tool))?;
        if let Some(props) = schema.parameters["properties"].as_object() {
            if let Some(k) = s.arguments.keys().find(|k| !props.contains_key(*k)) {
                return Err(format!("call {n}: `{k}` is not a parameter of `{}`", s.tool));
            }
        }
        for r in schema.parameters["required"].as_array().into_iter().flatten() {
            if !r.as_str().is_some_and(|r| s.arguments.contains_key(r)) {
                return Err(format!(
                    "call {n}: required parameter {r} of `{}` is missing",
                    s.tool
                ));
            }
        }
        match (&prev, &s.from_previous) {
            (None, Some(_)) => return Err("call 1 cannot take a previous output".into()),
            (Some(_), None) => {
                return Err(format!(
                    "call {n} does not name `from_previous`: the calls of a chain depend on each other"
                ))
            }
            (Some(p), Some(k)) if s.arguments.get(k) != Some(p) => {
                return Err(format!("call {n}: `{k}` is not the previous output {p:?}"))
            }
            _ => {}
        }
        let f = c
            .table(&s.tool)
            .ok_or(format!("call {n}: no function for `{}`", s.tool))?;
        let out = f
            .output(&s.arguments)
            .ok_or(format!("call {n}: no row of `{}` has these arguments", s.tool))?
            .to_string();
        prev = Some(out.clone());
        c.outputs.push(out);
    }
    if prev.as_deref() != Some(c.answer.as_str()) {
        return Err(format!(
            "the last output {prev:?} is not the answer {:?}",
            c.answer
        ));
    }
    Ok(c)
}

/// Reads a real `ToolHop.json` (a JSON array of records, `functions` as Python sources):
/// each record's schema is checked; the sources are kept as text and never run. ToolHop ships
/// no trajectories, so these chains have no recorded steps and are not replayed.
pub fn load_toolhop(file: &Path) -> Result<Vec<Chain>, crate::data::DataError> {
    let err = |line: usize, message: String| crate::data::DataError {
        file: file.to_path_buf(),
        line,
        message,
    };
    let text = std::fs::read_to_string(file).map_err(|e| err(0, format!("cannot read: {e}")))?;
    let all: Vec<Value> = serde_json::from_str(&text)
        .map_err(|e| err(e.line(), format!("not a JSON array of ToolHop records: {e}")))?;
    all.into_iter()
        .enumerate()
        .map(|(i, v)| {
            let (id, question, answer, sub_task, tools) =
                common(&v).map_err(|m| err(0, format!("record {i}: {m}")))?;
            let functions: Vec<String> = serde_json::from_value(v["functions"].clone()).map_err(|e| {
                err(
                    0,
                    format!("record {i} (id {id}): `functions` must be a list of strings: {e}"),
                )
            })?;
            Ok(Chain {
                id,
                question,
                answer,
                sub_task,
                tools,
                functions: Functions::Source(functions),
                source: "ToolHop (bytedance-research/ToolHop, CC-BY-4.0)".into(),
                steps: vec![],
                outputs: vec![],
            })
        })
        .collect()
}

/// The program each tool is in the sandbox (constant; no data in it): it appends its argument
/// count, its name and its arguments, each ended by a NUL, to `$IEC_BENCH_TOOL_LOG`.
pub const TOOL_PROGRAM: &str =
    "#!/bin/sh\nprintf '%s\\0' \"$#\" \"${0##*/}\" \"$@\" >> \"$IEC_BENCH_TOOL_LOG\"\n";

/// The program each tool is in harness mode (constant; no data in it): the same record, appended
/// to `.iec-bench-calls` in its working directory (the chain's sandbox, where the harness runs
/// the call), since a harness launch's environment is shared by every sandbox of the launch.
pub const HARNESS_TOOL_PROGRAM: &str =
    "#!/bin/sh\nprintf '%s\\0' \"$#\" \"${0##*/}\" \"$@\" >> ./.iec-bench-calls\n";

/// The calls a tool log records: (tool name, argv after the name).
pub fn parse_log(log: &[u8]) -> Vec<(String, Vec<String>)> {
    let mut fields = log
        .split(|b| *b == 0)
        .map(|f| String::from_utf8_lossy(f).into_owned());
    let mut out = vec![];
    while let (Some(n), Some(name)) = (fields.next(), fields.next()) {
        let Ok(n) = n.parse::<usize>() else { break };
        let args: Vec<String> = fields.by_ref().take(n).collect();
        out.push((name, args));
    }
    out
}

/// Arguments from `--PARAM VALUE` pairs; `None` when the argv is not of that shape.
pub fn arguments(argv: &[String]) -> Option<BTreeMap<String, String>> {
    if !argv.len().is_multiple_of(2) {
        return None;
    }
    argv.chunks(2)
        .map(|p| Some((p[0].strip_prefix("--")?.to_string(), p[1].clone())))
        .collect()
}

/// What each step computed from the argv its tool received, keyed `step1`, `step2`, …:
/// the output, or why there is none.
pub fn observed(c: &Chain, log: &[u8]) -> BTreeMap<String, String> {
    let calls = parse_log(log);
    let mut out = BTreeMap::new();
    for (i, s) in c.steps.iter().enumerate() {
        let v = match calls.get(i) {
            None => format!("<{} not called>", s.tool),
            Some((name, _)) if name != &s.tool => format!("<{name} called in place of {}>", s.tool),
            Some((_, argv)) => {
                match arguments(argv).and_then(|a| c.table(&s.tool)?.output(&a).map(str::to_string)) {
                    Some(o) => o,
                    None => format!("<no row of {} for argv {argv:?}>", s.tool),
                }
            }
        };
        out.insert(format!("step{}", i + 1), v);
    }
    if calls.len() > c.steps.len() {
        out.insert("extra-calls".into(), format!("{}", calls.len() - c.steps.len()));
    }
    out
}

/// What [`observed`] gives when every tool received its recorded arguments.
pub fn expected(c: &Chain) -> BTreeMap<String, String> {
    c.outputs
        .iter()
        .enumerate()
        .map(|(i, o)| (format!("step{}", i + 1), o.clone()))
        .collect()
}
