#!/usr/bin/env python3
"""Writes a generated corpus of Claude Code transcripts for benchmarking `iec scan`.

    python3 crates/iec-lab/scripts/scan-corpus.py OUT_DIR [--calls 50000] [--copies 1] [--seed 7]

Every call is distinct (a counter is part of each command); the mix is realistic for an agent's
shell calls: plain commands (ls, git, cat, grep, make), pipes and redirections, and exposed ones
(`!` inside quotes, `$VAR`, `$(...)`, backslashes, heredocs, python3 -c / jq / sed code,
multi-line texts), about a third exposed. Sessions of 200 calls alternate between Claude Code
2.1.72 and 2.1.332; every call has its result (one in ten fails with an exit code). With
`--copies N` the same transcripts are written N times into N folders (10x the calls, the same
distinct calls: the memory benchmark).
"""
import argparse
import json
import os
import random


def command(i, rnd):
    k = rnd.random()
    n = i
    if k < 0.30:
        return rnd.choice([
            f"ls -la src/mod{n}",
            f"git log --oneline -n {n % 50 + 1} -- src/f{n}.rs",
            f"cat notes/page{n}.md",
            f"grep -rn TODO{n} src",
            f"make test{n}",
            f"cargo test -p crate{n % 40} case_{n}",
            f"mkdir -p build/out{n}",
        ])
    if k < 0.62:
        return rnd.choice([
            f"ls src/mod{n} | head -20",
            f"git diff --stat HEAD~{n % 9 + 1} > /tmp/diff{n}.txt",
            f"cd src && ls -1 file{n}*.rs | wc -l",
            f"grep -c 'fn main' src/bin{n}.rs || true",
            f"find . -name 'x{n}*.json' -type f | sort",
        ])
    return rnd.choice([
        f"printf '%s\\n' 'value {n} != expected'",
        f"echo \"PID=$$ run {n}\" | cat",
        f"echo $HOME/cache{n}",
        f"echo \"today $(date +%F) {n}\"",
        f"printf '%s\\n' 'C:\\\\Users\\\\u{n}'",
        f"python3 -c 'import sys; print(sys.argv[1:], {n})' a b",
        f"echo '{{\"x\":{n}}}' | jq 'select(.x != 2)'",
        f"sed -e 's/old{n}/new/g' file{n}.txt",
        f"cat <<'EOF' > notes{n}.md\nline {n}\n$NOT_EXPANDED\nEOF",
        f"echo one{n}\necho two{n}",
    ])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--calls", type=int, default=50000)
    ap.add_argument("--copies", type=int, default=1)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args()
    rnd = random.Random(a.seed)
    per_session = 200
    sessions = []
    for s in range((a.calls + per_session - 1) // per_session):
        version = "2.1.72" if s % 2 == 0 else "2.1.332"
        lines = []
        for j in range(per_session):
            i = s * per_session + j
            if i >= a.calls:
                break
            tid = f"toolu_{i:08d}"
            env = {"cwd": "/home/user/project", "sessionId": f"sess-{s:05d}", "version": version,
                   "timestamp": "2026-12-01T10:00:00.000Z", "isSidechain": False}
            lines.append(json.dumps({"type": "assistant", **env, "message": {"id": f"msg_{i}", "role": "assistant",
                "content": [{"type": "tool_use", "id": tid, "name": "Bash", "input": {"command": command(i, rnd), "description": "step"}}]}}))
            if i % 10 == 3:
                res = {"type": "tool_result", "tool_use_id": tid, "content": "Exit code 1\nfailed", "is_error": True}
                tur = "Error: Exit code 1\nfailed"
            else:
                res = {"type": "tool_result", "tool_use_id": tid, "content": "ok", "is_error": False}
                tur = {"stdout": "ok", "stderr": "", "interrupted": False, "isImage": False}
            lines.append(json.dumps({"type": "user", **env, "message": {"role": "user", "content": [res]}, "toolUseResult": tur}))
        sessions.append("\n".join(lines) + "\n")
    for c in range(a.copies):
        d = os.path.join(a.out, f"copy{c:02d}")
        os.makedirs(d, exist_ok=True)
        for s, text in enumerate(sessions):
            with open(os.path.join(d, f"sess-{s:05d}.jsonl"), "w") as f:
                f.write(text)


if __name__ == "__main__":
    main()
