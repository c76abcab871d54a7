//! Agent mode: an LLM in the loop. Each task's instruction goes to a model behind an Anthropic
//! Messages or OpenAI-compatible Chat Completions endpoint with one tool, a shell command
//! (`bash`, `{"command": string}`). Each call the model makes is delivered along the path as
//! replay mode delivers a recorded text (IntAct off: the call as emitted; on: what
//! [`iec_repair`] delivers, or its refusal, told to the model), rendered into the launch's
//! process argv and run in the task's sandbox; its output goes back to the model, until the
//! model stops or the turn limit. Then the task's check decides.
//!
//! **False confirmation.** The model stopped on its own (an answer without a tool call, before
//! the turn limit and not cut at the output limit), its last text has none of [`FAILURE_WORDS`] (case-insensitive), and
//! the check fails.
//!
//! **Transport.** Requests go through `curl` (HTTPS without a TLS stack in this crate). The key
//! is written to curl's configuration on its standard input, never on a command line, and is
//! never printed.

use crate::data::{Suite, Task};
use crate::replay::{decider, par_map, task_reference, Decider, Error, On, Runner};
use crate::sandbox::{RunOutput, Sandbox};
use iec_check::call_for_text;
use iec_launches::{render, Catalog, Launch};
use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::io::Write;
use std::process::{Command, Stdio};

/// The default turn limit (model requests per task).
pub const DEFAULT_MAX_TURNS: usize = 30;

/// Words that make a final text a report of failure, not a claim of success (matched
/// case-insensitively anywhere in the text).
pub const FAILURE_WORDS: [&str; 14] = [
    "fail",
    "error",
    "unable",
    "could not",
    "couldn't",
    "cannot",
    "can't",
    "did not",
    "didn't",
    "not able",
    "unfortunately",
    "sorry",
    "not successful",
    "unsuccessful",
];

/// The most of a tool output given back to the model.
const MAX_OUTPUT: usize = 16 * 1024;

/// The system prompt of every session.
const SYSTEM: &str = "You work in a fresh Linux sandbox: every command runs with the task's folder as its working directory. Use the bash tool to run shell commands. When the task is done, answer with a short summary and no tool call.";

/// The API an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// Anthropic Messages: `POST {endpoint}/v1/messages`.
    Anthropic,
    /// OpenAI-compatible Chat Completions: `POST {endpoint}/chat/completions`.
    Openai,
}

impl Api {
    /// The environment variable the key is read from by default.
    pub fn default_key_env(self) -> &'static str {
        match self {
            Api::Anthropic => "ANTHROPIC_API_KEY",
            Api::Openai => "OPENAI_API_KEY",
        }
    }
}

/// A key that is never printed.
#[derive(Clone)]
struct Secret(String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("<key>")
    }
}

/// The model and how to reach it.
#[derive(Debug, Clone)]
pub struct Options {
    /// The base URL as the vendors' SDKs take it (`https://api.anthropic.com`,
    /// `https://api.openai.com/v1`).
    pub endpoint: String,
    /// The model name sent with each request.
    pub model: String,
    /// The API.
    pub api: Api,
    key: Option<Secret>,
    /// Model requests per task at most.
    pub max_turns: usize,
    /// Sessions at once.
    pub threads: usize,
}

/// Errors of agent mode.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    /// Bad options.
    #[error("{0}")]
    Usage(String),
    /// The endpoint failed or answered what this mode cannot read.
    #[error("{0}")]
    Api(String),
    /// Replay's machinery failed.
    #[error(transparent)]
    Bench(#[from] Error),
}

impl Options {
    /// Options with the key read from `key_env` (default: the API's variable). A missing or
    /// empty key is an error unless the endpoint is on this machine (`localhost`, `127.*`,
    /// `[::1]`).
    pub fn new(endpoint: &str, model: &str, api: Api, key_env: Option<&str>) -> Result<Options, AgentError> {
        let endpoint = endpoint.trim_end_matches('/').to_string();
        let host = host_of(&endpoint).ok_or_else(|| {
            AgentError::Usage(format!(
                "--endpoint {endpoint:?} is not an http:// or https:// URL"
            ))
        })?;
        if model.is_empty() {
            return Err(AgentError::Usage("--model is empty".into()));
        }
        let var = key_env.unwrap_or(api.default_key_env());
        let key = std::env::var(var).ok().filter(|k| !k.is_empty());
        if key.is_none() && !is_local(&host) {
            return Err(AgentError::Usage(format!(
                "no API key: set the environment variable {var} (or name another with --key-env) for {endpoint}"
            )));
        }
        if key.as_deref().is_some_and(|k| k.contains(['\n', '\r'])) {
            return Err(AgentError::Usage(format!("the key in {var} holds a line break")));
        }
        Ok(Options {
            endpoint,
            model: model.to_string(),
            api,
            key: key.map(Secret),
            max_turns: DEFAULT_MAX_TURNS,
            threads: 4,
        })
    }

    fn url(&self) -> String {
        match self.api {
            Api::Anthropic => format!("{}/v1/messages", self.endpoint),
            Api::Openai => format!("{}/chat/completions", self.endpoint),
        }
    }
}

/// The host of an `http://` or `https://` URL.
fn host_of(url: &str) -> Option<String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    let authority = authority.rsplit('@').next()?;
    let host = if let Some(v6) = authority.strip_prefix('[') {
        v6.split(']').next()?
    } else {
        authority.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

fn is_local(host: &str) -> bool {
    host == "localhost" || host == "::1" || host.starts_with("127.")
}

/// One session: a task on a path, IntAct off or on.
#[derive(Debug, Clone, Serialize)]
pub struct SessionResult {
    /// The task.
    pub task: String,
    /// The launch.
    pub path: String,
    /// IntAct on.
    pub intact: bool,
    /// The check passed.
    pub pass: bool,
    /// Tokens the API reported (input and output, cache reads and writes included).
    pub tokens: u64,
    /// Model requests.
    pub turns: usize,
    /// Tool calls the model made.
    pub calls: usize,
    /// Calls IntAct re-rendered.
    pub repaired: usize,
    /// Calls IntAct refused.
    pub refused: usize,
    /// Calls the harness's validation rejected.
    pub rejected: usize,
    /// The model stopped on its own: an answer without a tool call, not cut at the output
    /// limit (else the turn limit or the cut ended the session).
    pub stopped: bool,
    /// The last answer was cut at the output limit (`max_tokens`, `length`) without a call.
    pub truncated: bool,
    /// The model's last text.
    pub final_text: String,
    /// Stopped, claimed success ([`FAILURE_WORDS`]) and failed the check.
    pub false_confirmation: bool,
}

/// The figures of one path in one IntAct mode.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentMetrics {
    /// Tasks run.
    pub tasks: usize,
    /// Tasks whose check passed.
    pub passed: usize,
    /// `passed / tasks`.
    pub pass_rate: Option<f64>,
    /// Tokens over all tasks.
    pub tokens: u64,
    /// `tokens / passed` (null when none passed).
    pub tokens_per_passed: Option<f64>,
    /// Sessions that claimed success and failed the check.
    pub false_confirmations: usize,
    /// Sessions the turn limit ended.
    pub turn_limit: usize,
}

/// A path's figures with IntAct off and on.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentPath {
    /// IntAct off.
    pub intact_off: AgentMetrics,
    /// IntAct on.
    pub intact_on: AgentMetrics,
}

/// The whole agent run.
#[derive(Debug, Clone, Serialize)]
pub struct AgentReport {
    /// The API.
    pub api: Api,
    /// The endpoint (base URL).
    pub endpoint: String,
    /// The model.
    pub model: String,
    /// The turn limit.
    pub max_turns: usize,
    /// Per path.
    pub paths: BTreeMap<String, AgentPath>,
    /// Every session, in task, path, IntAct order.
    pub results: Vec<SessionResult>,
}

impl AgentReport {
    /// `anthropic` or `openai`.
    pub fn api_name(&self) -> &'static str {
        match self.api {
            Api::Anthropic => "anthropic",
            Api::Openai => "openai",
        }
    }
}

/// Whether a final text claims success: it has none of [`FAILURE_WORDS`].
pub fn claims_success(text: &str) -> bool {
    let t = text.to_lowercase();
    !FAILURE_WORDS.iter().any(|w| t.contains(w))
}

/// Runs every task of `suite` on every path in `paths` (each must run its calls here:
/// bash-c and the Claude Code Linux launches), IntAct off and on.
pub fn run(suite: &Suite, cat: &Catalog, paths: &[&str], opts: &Options) -> Result<AgentReport, AgentError> {
    let runner = Runner::new(cat, paths)?;
    let mut launches = vec![];
    for p in paths {
        let l = cat.get(p).map_err(|_| Error::Launch(p.to_string()))?;
        if decider(l) != Decider::Run {
            return Err(AgentError::Usage(format!(
                "agent mode runs each call here; {p} has no receiver on this machine (a Windows or terminal path)"
            )));
        }
        launches.push(l);
    }
    if which("curl").is_none() {
        return Err(AgentError::Usage(
            "agent mode sends its requests with curl, which is not on PATH".into(),
        ));
    }
    let wants = par_map(&suite.tasks, opts.threads, task_reference)?;
    let mut units = vec![];
    for ti in 0..suite.tasks.len() {
        for li in 0..launches.len() {
            for on in [false, true] {
                units.push((ti, li, on));
            }
        }
    }
    let first_api_error = std::sync::Mutex::new(None);
    let results = par_map(&units, opts.threads, |&(ti, li, on)| {
        if first_api_error.lock().unwrap().is_some() {
            return Ok(None);
        }
        match session(&runner, launches[li], &suite.tasks[ti], &wants[ti], on, opts) {
            Ok(r) => Ok(Some(r)),
            Err(AgentError::Bench(e)) => Err(e),
            Err(e) => {
                first_api_error.lock().unwrap().get_or_insert(e);
                Ok(None)
            }
        }
    })?;
    if let Some(e) = first_api_error.into_inner().unwrap() {
        return Err(e);
    }
    let results: Vec<SessionResult> = results.into_iter().flatten().collect();
    let mut per_path = BTreeMap::new();
    for l in &launches {
        let of = |on: bool| metrics(results.iter().filter(|r| r.path == l.id && r.intact == on));
        per_path.insert(
            l.id.clone(),
            AgentPath {
                intact_off: of(false),
                intact_on: of(true),
            },
        );
    }
    Ok(AgentReport {
        api: opts.api,
        endpoint: opts.endpoint.clone(),
        model: opts.model.clone(),
        max_turns: opts.max_turns,
        paths: per_path,
        results,
    })
}

fn metrics<'r>(rs: impl Iterator<Item = &'r SessionResult>) -> AgentMetrics {
    let mut m = AgentMetrics::default();
    for r in rs {
        m.tasks += 1;
        m.passed += r.pass as usize;
        m.tokens += r.tokens;
        m.false_confirmations += r.false_confirmation as usize;
        m.turn_limit += (!r.stopped && !r.truncated) as usize;
    }
    m.pass_rate = (m.tasks > 0).then(|| m.passed as f64 / m.tasks as f64);
    m.tokens_per_passed = (m.passed > 0).then(|| m.tokens as f64 / m.passed as f64);
    m
}

/// A tool call the model made: its id and its arguments.
struct ToolCall {
    id: String,
    name: String,
    input: Result<Value, String>,
}

/// One answer of the model.
struct Answer {
    text: String,
    calls: Vec<ToolCall>,
    tokens: u64,
    /// The answer was cut at the output limit (`max_tokens`, `length`).
    truncated: bool,
}

fn session(
    runner: &Runner,
    l: &Launch,
    task: &Task,
    want: &BTreeMap<String, String>,
    on: bool,
    opts: &Options,
) -> Result<SessionResult, AgentError> {
    let mut sb = Sandbox::new(&task.setup, None).map_err(Error::Io)?;
    let mut r = SessionResult {
        task: task.id.clone(),
        path: l.id.clone(),
        intact: on,
        pass: false,
        tokens: 0,
        turns: 0,
        calls: 0,
        repaired: 0,
        refused: 0,
        rejected: 0,
        stopped: false,
        truncated: false,
        final_text: String::new(),
        false_confirmation: false,
    };
    let mut messages: Vec<Value> = match opts.api {
        Api::Anthropic => vec![json!({"role": "user", "content": task.instruction})],
        Api::Openai => vec![
            json!({"role": "system", "content": SYSTEM}),
            json!({"role": "user", "content": task.instruction}),
        ],
    };
    while r.turns < opts.max_turns {
        r.turns += 1;
        let (answer, assistant) = ask(opts, &messages)?;
        r.tokens += answer.tokens;
        r.final_text = answer.text;
        messages.push(assistant);
        if answer.calls.is_empty() {
            r.stopped = !answer.truncated;
            r.truncated = answer.truncated;
            break;
        }
        let mut results = vec![];
        for c in &answer.calls {
            r.calls += 1;
            let (text, is_error) = execute(runner, l, on, c, &mut sb, &mut r)?;
            results.push((c.id.clone(), text, is_error));
        }
        match opts.api {
            Api::Anthropic => messages.push(json!({"role": "user", "content": results.iter().map(|(id, text, err)| json!({
                "type": "tool_result", "tool_use_id": id, "content": text, "is_error": err})).collect::<Vec<_>>()})),
            Api::Openai => messages.extend(
                results
                    .iter()
                    .map(|(id, text, _)| json!({"role": "tool", "tool_call_id": id, "content": text})),
            ),
        }
    }
    r.pass = &sb.observe(&task.observe) == want;
    r.false_confirmation = r.stopped && !r.pass && claims_success(&r.final_text);
    Ok(r)
}

/// Delivers one tool call along the path and runs it: the text for the model, and whether it
/// is an error.
fn execute(
    runner: &Runner,
    l: &Launch,
    on: bool,
    c: &ToolCall,
    sb: &mut Sandbox,
    r: &mut SessionResult,
) -> Result<(String, bool), AgentError> {
    if c.name != "bash" {
        return Ok((format!("no tool named {:?}: the only tool is bash", c.name), true));
    }
    let command = match &c.input {
        Ok(v) => v.get("command").and_then(Value::as_str),
        Err(e) => return Ok((format!("the arguments are not JSON: {e}"), true)),
    };
    let Some(command) = command else {
        return Ok(("the call has no string `command`".into(), true));
    };
    let input = if on {
        let d = runner.deliver(l, command)?;
        match &d.on {
            On::Deliver { input, repaired, .. } => {
                r.repaired += *repaired as usize;
                input.clone()
            }
            On::Refuse { reason } => {
                r.refused += 1;
                return Ok((format!("IntAct refused the call: {reason}"), true));
            }
        }
    } else {
        call_for_text(l, command).input
    };
    let text = l.command_of(&input).and_then(Value::as_str).unwrap_or_default();
    if let Some(rej) = render::validate(&l.validate, text) {
        r.rejected += 1;
        return Ok((rej.message, true));
    }
    let Some(argv) = render::process_argv(l, &input) else {
        return Ok((format!("{} cannot run this call", l.id), true));
    };
    let out = sb.run_captured(&argv, true).map_err(Error::Io)?;
    Ok((tool_output(&out), !out.ok()))
}

/// What the model is told a process did: stdout, stderr, and the exit code when not 0.
fn tool_output(out: &RunOutput) -> String {
    let mut s = String::from_utf8_lossy(&out.stdout).into_owned();
    s.push_str(&String::from_utf8_lossy(&out.stderr));
    if s.len() > MAX_OUTPUT {
        let mut cut = MAX_OUTPUT;
        while !s.is_char_boundary(cut) {
            cut -= 1;
        }
        s.truncate(cut);
        s.push_str("\n[output cut]");
    }
    match out.status {
        Some(0) => {}
        Some(c) => s.push_str(&format!("\nExit code: {c}")),
        None => s.push_str(&format!(
            "\nKilled after {} s",
            crate::sandbox::CALL_TIMEOUT.as_secs()
        )),
    }
    if s.is_empty() {
        s.push_str("(no output)");
    }
    s
}

/// One request: the model's answer and the assistant message to append.
fn ask(opts: &Options, messages: &[Value]) -> Result<(Answer, Value), AgentError> {
    let schema = json!({"type": "object", "properties": {"command": {"type": "string", "description": "The shell command to run"}}, "required": ["command"]});
    let desc = "Runs a shell command in the task's folder and returns its output.";
    let body = match opts.api {
        Api::Anthropic => json!({
            "model": opts.model, "max_tokens": 4096, "system": SYSTEM, "messages": messages,
            "tools": [{"name": "bash", "description": desc, "input_schema": schema}]}),
        Api::Openai => json!({
            "model": opts.model, "messages": messages,
            "tools": [{"type": "function", "function": {"name": "bash", "description": desc, "parameters": schema}}]}),
    };
    let v = post(opts, &body)?;
    let bad = |what: &str| {
        AgentError::Api(format!(
            "{}: the answer has no {what}: {}",
            opts.url(),
            excerpt(&v.to_string())
        ))
    };
    let num = |p: &str| v.pointer(p).and_then(Value::as_u64).unwrap_or(0);
    match opts.api {
        Api::Anthropic => {
            let content = v
                .get("content")
                .and_then(Value::as_array)
                .ok_or_else(|| bad("content"))?;
            let mut text = vec![];
            let mut calls = vec![];
            for b in content {
                match b.get("type").and_then(Value::as_str) {
                    Some("text") => text.extend(b.get("text").and_then(Value::as_str)),
                    Some("tool_use") => calls.push(ToolCall {
                        id: b.get("id").and_then(Value::as_str).unwrap_or_default().into(),
                        name: b.get("name").and_then(Value::as_str).unwrap_or_default().into(),
                        input: Ok(b.get("input").cloned().unwrap_or(Value::Null)),
                    }),
                    _ => {}
                }
            }
            let tokens = num("/usage/input_tokens")
                + num("/usage/output_tokens")
                + num("/usage/cache_creation_input_tokens")
                + num("/usage/cache_read_input_tokens");
            let answer = Answer {
                text: text.join("\n"),
                calls,
                tokens,
                truncated: v.get("stop_reason").and_then(Value::as_str) == Some("max_tokens"),
            };
            Ok((answer, json!({"role": "assistant", "content": content})))
        }
        Api::Openai => {
            let msg = v
                .pointer("/choices/0/message")
                .ok_or_else(|| bad("choices[0].message"))?;
            let calls = msg
                .get("tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .map(|c| {
                    let args = c
                        .pointer("/function/arguments")
                        .and_then(Value::as_str)
                        .unwrap_or("{}");
                    ToolCall {
                        id: c.get("id").and_then(Value::as_str).unwrap_or_default().into(),
                        name: c
                            .pointer("/function/name")
                            .and_then(Value::as_str)
                            .unwrap_or_default()
                            .into(),
                        input: serde_json::from_str(args).map_err(|e| e.to_string()),
                    }
                })
                .collect();
            let answer = Answer {
                text: msg
                    .get("content")
                    .and_then(Value::as_str)
                    .unwrap_or_default()
                    .into(),
                calls,
                tokens: num("/usage/prompt_tokens") + num("/usage/completion_tokens"),
                truncated: v.pointer("/choices/0/finish_reason").and_then(Value::as_str) == Some("length"),
            };
            let mut assistant =
                json!({"role": "assistant", "content": msg.get("content").cloned().unwrap_or(Value::Null)});
            if let Some(tc) = msg
                .get("tool_calls")
                .filter(|t| t.as_array().is_some_and(|a| !a.is_empty()))
            {
                assistant["tool_calls"] = tc.clone();
            }
            Ok((answer, assistant))
        }
    }
}

fn excerpt(s: &str) -> String {
    let mut cut = s.len().min(400);
    while !s.is_char_boundary(cut) {
        cut -= 1;
    }
    s[..cut].to_string()
}

/// Quotes a value for curl's configuration file.
fn curl_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

/// POSTs `body` and returns the JSON answer. Rate limits and server errors (429, 5xx) are
/// tried again up to three times, waiting 2, 4 and 8 s.
fn post(opts: &Options, body: &Value) -> Result<Value, AgentError> {
    let url = opts.url();
    let mut file = tempfile::NamedTempFile::new().map_err(Error::Io)?;
    file.write_all(body.to_string().as_bytes()).map_err(Error::Io)?;
    let mut config = format!("url = {}\nrequest = \"POST\"\n", curl_quote(&url));
    config.push_str("header = \"content-type: application/json\"\n");
    match (opts.api, &opts.key) {
        (Api::Anthropic, key) => {
            config.push_str("header = \"anthropic-version: 2023-06-01\"\n");
            if let Some(k) = key {
                config.push_str(&format!(
                    "header = {}\n",
                    curl_quote(&format!("x-api-key: {}", k.0))
                ));
            }
        }
        (Api::Openai, Some(k)) => config.push_str(&format!(
            "header = {}\n",
            curl_quote(&format!("authorization: Bearer {}", k.0))
        )),
        (Api::Openai, None) => {}
    }
    config.push_str(&format!(
        "data-binary = {}\n",
        curl_quote(&format!("@{}", file.path().display()))
    ));
    let mut wait = 2;
    loop {
        let mut child = Command::new("curl")
            .args(["-sS", "--max-time", "600", "-K", "-", "-w", "\n%{http_code}"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| AgentError::Api(format!("cannot start curl: {e}")))?;
        child
            .stdin
            .take()
            .expect("piped stdin")
            .write_all(config.as_bytes())
            .map_err(Error::Io)?;
        let out = child.wait_with_output().map_err(Error::Io)?;
        if !out.status.success() {
            return Err(AgentError::Api(format!(
                "{url}: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let (body, code) = text.rsplit_once('\n').unwrap_or(("", &text));
        let code: u16 = code.trim().parse().unwrap_or(0);
        if (code == 429 || code >= 500) && wait <= 8 {
            std::thread::sleep(std::time::Duration::from_secs(wait));
            wait *= 2;
            continue;
        }
        if !(200..300).contains(&code) {
            return Err(AgentError::Api(format!("{url}: HTTP {code}: {}", excerpt(body))));
        }
        return serde_json::from_str(body)
            .map_err(|e| AgentError::Api(format!("{url}: the answer is not JSON ({e}): {}", excerpt(body))));
    }
}

/// The program `name` on `PATH`.
fn which(name: &str) -> Option<std::path::PathBuf> {
    std::env::split_paths(&std::env::var_os("PATH")?)
        .map(|d| d.join(name))
        .find(|p| p.is_file())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn success_claims() {
        assert!(claims_success("Done. The commit is in place."));
        assert!(!claims_success("I could not write the file."));
        assert!(!claims_success("The commit FAILED: nothing to commit"));
    }

    #[test]
    fn hosts() {
        assert_eq!(host_of("http://127.0.0.1:8080/v1").as_deref(), Some("127.0.0.1"));
        assert_eq!(
            host_of("https://api.anthropic.com").as_deref(),
            Some("api.anthropic.com")
        );
        assert_eq!(host_of("http://[::1]:9/x").as_deref(), Some("::1"));
        assert_eq!(host_of("http://u@LocalHost:1").as_deref(), Some("localhost"));
        assert_eq!(host_of("ftp://x"), None);
        assert!(is_local("127.0.0.1") && is_local("localhost") && !is_local("api.openai.com"));
    }

    #[test]
    fn config_quoting() {
        assert_eq!(curl_quote(r#"a"b\c"#), r#""a\"b\\c""#);
    }
}
