#!/usr/bin/env bash
# Hook wall time per call, as recorded in BENCHMARKS.md ("Hook wall time per call").
#
#   crates/iec-hook/bench/hook-wall-time.sh [RUNS]
#
# Builds `iec` and `iec-hook` (release), starts their witness daemons in a private temporary
# runtime directory, and times whole processes with hyperfine (>= 1.17 for --input; set
# HYPERFINE to choose the binary) without a shell (-N): /bin/true, then each hook on a
# PreToolUse document for an unexposed call (`ls -la src`) and for an exposed one
# (`printf '%s' 'a != b'`, repaired to `eval $'…'`), through the daemon and in the hook process
# (--no-daemon). EXTRA_HOOKS="BIN…" adds other iec-hook builds to both tables. Prints
# p50/p99/mean per command (p99: nearest rank) and the load average before and after.
set -euo pipefail
runs=${1:-300}
hf=${HYPERFINE:-hyperfine}
cd "$(dirname "$0")/../../.."
cargo build --release -q -p iec-cli -p iec-hook
bin=$PWD/target/release
work=$(mktemp -d)
chmod 700 "$work"
export XDG_RUNTIME_DIR=$work IEC_DAEMON_IDLE_SECS=600
unset IEC_DAEMON IEC_DAEMON_SOCKET IEC_INTENT_DIR
stop() {
    # A daemon exits when its socket file is removed.
    rm -f "$work"/iec/*.sock
    sleep 0.5
    rm -rf "$work"
}
trap stop EXIT
doc() {
    printf '{"session_id":"s","transcript_path":"/x.jsonl","cwd":"/","permission_mode":"default","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"%s","description":"d"},"tool_use_id":"toolu_1"}' "$1"
}
doc "ls -la src" >"$work/plain.json"
doc "printf '%s' 'a != b'" >"$work/exposed.json"
launch=(--launch claude-code-2.1.72-linux)
hooks=("$bin/iec-hook" ${EXTRA_HOOKS:-})
# Start the daemons (the first exposed call starts one per executable) and let them warm up.
for h in "${hooks[@]}"; do "$h" "${launch[@]}" <"$work/exposed.json" >/dev/null; done
"$bin/iec" hook claude-code "${launch[@]}" <"$work/exposed.json" >/dev/null
for _ in $(seq 100); do
    [ "$(ls "$work"/iec/*.sock 2>/dev/null | wc -l)" -ge $((${#hooks[@]} + 1)) ] && break
    sleep 0.1
done
sleep 1
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
cmds_plain=(/bin/true)
cmds_exposed=(/bin/true)
for h in "${hooks[@]}"; do
    cmds_plain+=("$h ${launch[*]}")
    cmds_exposed+=("$h ${launch[*]}" "$h ${launch[*]} --no-daemon")
done
cmds_plain+=("$bin/iec hook claude-code ${launch[*]}")
cmds_exposed+=("$bin/iec hook claude-code ${launch[*]}" "$bin/iec hook claude-code ${launch[*]} --no-daemon")
"$hf" -N --warmup 5 --runs "$runs" --input "$work/plain.json" --export-json "$work/plain-times.json" \
    "${cmds_plain[@]}" >/dev/null
"$hf" -N --warmup 5 --runs "$runs" --input "$work/exposed.json" --export-json "$work/exposed-times.json" \
    "${cmds_exposed[@]}" >/dev/null
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$work" "$bin" <<'EOF'
import json, math, statistics, sys
work, bin = sys.argv[1], sys.argv[2]
for name in ["plain", "exposed"]:
    print(f"\n{name} call:")
    for r in json.load(open(f"{work}/{name}-times.json"))["results"]:
        t = sorted(r["times"])
        p = lambda q: t[max(0, math.ceil(q * len(t)) - 1)] * 1e3
        cmd = r["command"].replace(bin + "/", "")
        print(f"  {cmd:<70} p50 {p(0.5):6.2f} ms  p99 {p(0.99):6.2f} ms  mean {statistics.mean(t) * 1e3:6.2f} ms")
EOF
