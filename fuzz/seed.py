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

for d in sorted(CORPUS.iterdir()):
    print(d.name, len(list(d.iterdir())))
