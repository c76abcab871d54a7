"""Real MCP client (the official Python `mcp` SDK) driving the iec-mcp server.

usage: python mcp_client.py SERVER_BIN SCENARIO INPUT_JSON OUTPUT_JSON

The client only transports and records: every result is written to
OUTPUT_JSON (tool results dumped with their wire field names) and the Rust
test does the comparisons itself.
"""

import asyncio
import json
import shlex
import sys
import time

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client


def dump(result):
    """A CallToolResult as wire JSON (camelCase field names)."""
    return result.model_dump(mode="json", by_alias=True, exclude_none=True)


async def call(session, name, arguments):
    try:
        return {"ok": True, "result": dump(await session.call_tool(name, arguments))}
    except Exception as e:  # protocol error (McpError) or transport failure
        return {"ok": False, "error": f"{type(e).__name__}: {e}"}


def python_script_quoting(hostile):
    """A python3 script that prints its own file bytes as hex, followed by the
    hostile text inside comments (a '#' after every CR, LF or CRLF)."""
    out, i = [], 0
    while i < len(hostile):
        c = hostile[i]
        out.append(c)
        if c == "\r" and i + 1 < len(hostile) and hostile[i + 1] == "\n":
            out.append("\n")
            i += 1
        if c in "\r\n":
            out.append("#")
        i += 1
    return (
        "import sys\n"
        "sys.stdout.write(open(sys.argv[0], 'rb').read().hex())\n"
        "#" + "".join(out) + "\n"
    )


def shell_script_quoting(hostile, py):
    """A bash/sh script whose first line execs a hex dumper on the script file;
    the shell never reads past that line, so the rest may be anything."""
    return (
        "exec " + shlex.quote(py) + " -I -S -c 'import sys; sys.stdout.write(open(sys.argv[1], \"rb\").read().hex())' \"$0\"\n"
        + hostile
    )


def node_script_quoting(hostile):
    text = hostile
    for sep in ["\r\n", "\r", "\n", "\u2028", "\u2029"]:
        text = text.replace(sep, " ")
    return "process.stdout.write(require('fs').readFileSync(__filename).toString('hex'))\n// " + text + "\n"


PROBE = ["python3", "-c", "import sys,json; print(json.dumps(sys.argv[1:]))"]


async def scenario(session, name, inp):
    if name == "list":
        tools = await session.list_tools()
        return {
            "tools": [
                {"name": t.name, "inputSchema": t.model_dump(mode="json", by_alias=True)["inputSchema"]}
                for t in tools.tools
            ]
        }

    if name == "hostile":
        strings = inp["strings"]
        # The real interpreter (not a version-manager shim) keeps 1000 launches cheap.
        py = inp["python"]
        fast = [py, "-I", "-S", "-c", PROBE[2]]
        env = {"PATH": inp["path"]}
        out = {}
        t0 = time.monotonic()
        out["run_all"] = await call(session, "run", {"argv": PROBE + strings})
        sem = asyncio.Semaphore(16)

        async def bounded(tool, args):
            async with sem:
                return await call(session, tool, args)

        out["run_each"] = await asyncio.gather(
            *[bounded("run", {"argv": fast + [s]}) for s in strings]
        )
        out["run_env_stdin"] = await asyncio.gather(
            *[
                bounded(
                    "run",
                    {
                        "argv": [py, "-I", "-S", "-c", "import os,sys,json; print(json.dumps([os.environ['IEC_H'], sys.stdin.read()]))"],
                        "env": {"IEC_H": s},
                        "stdin": s,
                    },
                )
                for s in strings[:50]
            ]
        )
        scripts = []
        for s in strings:
            scripts.append(("python3", python_script_quoting(s)))
            scripts.append(("bash", shell_script_quoting(s, py)))
        for s in strings[:40]:
            scripts.append(("sh", shell_script_quoting(s, py)))
            scripts.append(("node", node_script_quoting(s)))
        results = await asyncio.gather(
            *[bounded("run_script", {"interpreter": i, "script": sc, "env": env}) for i, sc in scripts]
        )
        out["scripts"] = [
            {"interpreter": i, "script": sc, "response": r} for (i, sc), r in zip(scripts, results)
        ]
        out["script_args"] = await call(
            session,
            "run_script",
            {
                "interpreter": "python3",
                "script": "import sys, json\nprint(json.dumps(sys.argv[1:]))\n",
                "args": strings,
                "env": env,
            },
        )
        out["script_args_bash"] = await call(
            session,
            "run_script",
            {
                "interpreter": "bash",
                "script": "exec " + shlex.quote(py) + " -I -S -c 'import sys,json; print(json.dumps(sys.argv[1:]))' \"$@\"\n",
                "args": strings,
            },
        )
        out["elapsed_s"] = time.monotonic() - t0
        return out

    if name == "concurrent":
        n = inp["n"]
        t0 = time.monotonic()
        rs = await asyncio.gather(
            *[
                call(
                    session,
                    "run",
                    {
                        "argv": ["sh", "-c", "sleep 0.3; printf %s \"$1\"", "sh", f"call-{i}-{inp['tag']}"],
                        "stdin": f"in-{i}",
                    },
                )
                for i in range(n)
            ]
        )
        return {"results": rs, "elapsed_s": time.monotonic() - t0}

    if name == "calls":
        # Generic: a list of [tool, arguments] pairs, run in order, each timed.
        out = []
        for tool, args in inp["calls"]:
            t0 = time.monotonic()
            r = await call(session, tool, args)
            r["elapsed_s"] = time.monotonic() - t0
            out.append(r)
        return {"results": out}

    raise SystemExit(f"unknown scenario {name}")


async def main():
    server, name, inp_path, out_path = sys.argv[1:5]
    inp = json.load(open(inp_path, encoding="utf-8"))
    params = StdioServerParameters(command=server, args=[])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            res = await scenario(session, name, inp)
            res["server_info"] = init.model_dump(mode="json", by_alias=True)["serverInfo"]
            res["protocol_version"] = init.model_dump(mode="json", by_alias=True)["protocolVersion"]
    with open(out_path, "w", encoding="utf-8") as f:
        json.dump(res, f)


if __name__ == "__main__":
    asyncio.run(main())
