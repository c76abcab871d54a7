#!/usr/bin/env python3
"""Seeds fuzz/corpus/<target>/ (gitignored) from the repository's own data files.

Run from anywhere: python3 fuzz/seed.py
"""
import hashlib, json, pathlib, re

FUZZ = pathlib.Path(__file__).resolve().parent
ROOT = FUZZ.parent
CORPUS = FUZZ / "corpus"


def put(target, data):
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if not data or len(data) > 4096:
        return
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    (d / hashlib.sha1(data).hexdigest()).write_bytes(data)


# launch_toml: the launch catalog.
for p in sorted((ROOT / "crates/iec-launches/launches").glob("*.toml")):
    put("launch_toml", p.read_bytes())

# call_json: the accepted document shapes.
for doc in [
    {"tool": "Bash", "input": {"command": "echo hi"}},
    {"tool_name": "Bash", "tool_input": {"command": "ls -la", "description": "x"}},
    {"type": "tool_use", "id": "t1", "name": "shell", "input": {"command": ["bash", "-lc", "echo $HOME"]}},
    {"command": "printf '%s\\n' \"a b\""},
    {"input": None},
    [],
]:
    put("call_json", json.dumps(doc))

# windows_receivers: every vector input (strings as command lines, arrays as U+001F-joined argv).
for p in sorted((ROOT / "crates/iec-windows/tests/data").glob("*.jsonl")):
    for line in p.read_text().splitlines():
        if not line.strip():
            continue
        v = json.loads(line).get("input")
        if isinstance(v, str):
            put("windows_receivers", v)
        elif isinstance(v, list) and all(isinstance(x, str) for x in v):
            put("windows_receivers", "\x1f".join(v))

# shellquote and gate: the Claude Code table commands (raw strings r#"..."#).
inputs = (ROOT / "crates/iec-shellquote/tests/cc_table_inputs.in").read_text()
for m in re.finditer(r'r(#+)"(.*?)"\1', inputs, re.S):
    put("shellquote", m.group(2))
    put("gate", m.group(2))
for t in ["}", "a\n}", "{ a; }", "x;}", "echo a }", "(})", "${x}", "awk '{print}'",
          "find . -exec rm {} \\;", "echo \\}", "a}", "}a"]:
    put("gate", t)

# scan_*: the session-log readers. Line formats: runs of the real fixture logs' lines (each
# under 4 KiB) in groups; document formats: small documents of each shape the readers take.
HARNESS = ROOT / "crates/iec-scan/tests/data/harness"


def line_seeds(target, pattern):
    for p in sorted(HARNESS.glob(pattern)):
        group = b""
        for line in p.read_bytes().splitlines(keepends=True):
            if len(line) > 4096:
                continue
            if len(group) + len(line) > 4096:
                put(target, group)
                group = b""
            group += line
        put(target, group)


line_seeds("scan_claude_code", "claude-code-*/logs/**/*.jsonl")
line_seeds("scan_codex", "codex-*/logs/**/*.jsonl")
# scan_gemini: an even first byte reads lines, an odd one a document (`{` is odd, `\n` even).
for p in sorted(HARNESS.glob("gemini-cli-*/logs/**/*.json*")):
    for line in p.read_bytes().splitlines(keepends=True):
        if len(line) <= 4095:
            put("scan_gemini", b"\n" + line)
put("scan_gemini", json.dumps({"sessionId": "g1", "projectHash": "h", "startTime": "t", "messages": [
    {"id": "m1", "timestamp": "t", "type": "user", "content": [{"text": "My operating system is: win32\nI'm currently working in the directory: C:\\p"}]},
    {"id": "m2", "timestamp": "t", "type": "gemini", "content": "", "toolCalls": [{"id": "run_shell_command_1", "name": "run_shell_command",
     "args": {"command": "dir"}, "status": "error",
     "result": [{"functionResponse": {"name": "run_shell_command", "response": {"output": "Output: (empty)\nExit Code: 1\nProcess Group PGID: 4500"}}}]}]}]}))
for doc in [
    {"id": 7, "timestamp": "t", "source": "agent", "action": "run", "args": {"command": "mkdir -p /w", "is_input": False}},
    {"id": 8, "timestamp": "t", "source": "agent", "cause": 7, "observation": "run", "content": "", "extras": {"command": "mkdir -p /w", "metadata": {"exit_code": 0, "working_dir": "/w"}}, "success": True},
    [{"id": 1, "source": "agent", "action": "run", "args": {"command": "python3 -c 'print(1'"}},
     {"id": 2, "cause": 1, "observation": "run", "content": "SyntaxError", "extras": {"metadata": {"exit_code": 1}}}],
    [{"kind": "ActionEvent", "id": "a1", "tool_name": "terminal", "tool_call_id": "t1", "action": {"kind": "TerminalAction", "command": "ls", "is_input": False}},
     {"kind": "ObservationEvent", "action_id": "a1", "observation": {"kind": "TerminalObservation", "content": [{"type": "text", "text": "x"}], "is_error": False, "exit_code": 0}}],
    {"history": [{"id": 1, "source": "agent", "action": "run", "args": {"command": "ls"}}]},
]:
    put("scan_openhands", json.dumps(doc))
for doc in [
    [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "execute_command", "input": {"command": "cp a b", "requires_approval": True}}]},
     {"role": "user", "content": [{"type": "text", "text": "[execute_command for 'cp a b'] Result:\nCommand failed with exit code 1.\nOutput:\nx"}]},
     {"role": "assistant", "content": "Run it: <execute_command>\n<command>npm test</command>\n</execute_command>"}],
    {"version": 1, "sessionId": "c9", "messages": [
        {"role": "assistant", "content": [{"type": "tool_use", "id": "u1", "name": "run_commands", "input": {"commands": ["ls", "pwd"]}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u1", "content": "done", "is_error": False}]}]},
]:
    put("scan_cline", json.dumps(doc))
put("scan_atif", json.dumps({"schema_version": "ATIF-v1.7", "session_id": "h1", "agent": {"name": "codex", "version": "0.171.0", "extra": {"cwds": ["/app"]}},
    "steps": [{"step_id": 5, "timestamp": "t", "source": "agent", "tool_calls": [{"tool_call_id": "c", "function_name": "exec_command", "arguments": {"cmd": "printf '%s' 'a != b'"}}],
               "observation": {"results": [{"source_call_id": "c", "content": "Process exited with code 0\nOutput:\na != b"}]}},
              {"step_id": 6, "source": "agent", "tool_calls": [{"tool_call_id": "d", "function_name": "Bash", "arguments": {"command": "ls"}}]}]}))

for d in sorted(CORPUS.iterdir()):
    print(d.name, len(list(d.iterdir())))
