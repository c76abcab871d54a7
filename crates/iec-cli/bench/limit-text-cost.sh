#!/usr/bin/env bash
# Wall time, peak memory and report size of `iec check` on texts at the size limit (1 MiB), on
# every launch, as recorded in BENCHMARKS.md ("Texts at the size limit"). Issue 16 bounds a
# 10 MB text to <= 15 s, <= 512 MB peak and <= 1 MB of report; a text over the limit is refused
# at once, so the costly texts are those just under it.
#
#   crates/iec-cli/bench/limit-text-cost.sh [LAUNCH...]
#
# Shapes, each at 1 MiB and at 127 KiB: many short quoted lines, one long line of words, one
# long single-quoted word, many `{ …; }` groups, a here-document. Prints one line per
# launch and shape: seconds, peak RSS in MB (GNU time's maximum resident set size of iec and its
# waited-for children), report bytes, verdict. Results are appended to
# target/limit-text-cost.tsv so that an interrupted sweep resumes where it stopped.
set -euo pipefail
cd "$(dirname "$0")/../../.."
cargo build --release -q -p iec-cli
iec=$PWD/target/release/iec
state=$PWD/target/limit-text-cost.tsv
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
limit=1048576
python3 - "$work" "$limit" <<'EOF'
import sys
d, limit = sys.argv[1], int(sys.argv[2])
# Two sizes: the text limit, and just under execve's 128 KiB per argument (a larger text ends at
# the spawn hop of most launches, so the costliest checks are of texts this size).
for size, tag in ((limit - 64, "1M"), (131_000, "127K")):
    def lines(unit):
        return unit * (size // len(unit))
    shapes = {
        "lines": lines("printf '%s\\n' 'a != b' x!y\n"),
        "words": "echo " + lines("'w' "),
        "quoted": "echo '" + "q" * (size - 8) + "'",
        "groups": lines("{ echo x; }; "),
        "heredoc": "cat <<'EOF'\n" + lines("line $x `y`\n") + "EOF\n",
    }
    for name, text in shapes.items():
        assert len(text.encode()) <= limit, name
        open(f"{d}/{name}-{tag}.txt", "w").write(text)
EOF
if (($#)); then
    launches=("$@")
else
    mapfile -t launches < <("$iec" launches --format json | python3 -c 'import json,sys; [print(l["id"]) for l in json.load(sys.stdin)]')
fi
touch "$state"
printf '%-34s %-8s %8s %8s %10s %s\n' launch shape seconds peak_MB report_B verdict
for id in "${launches[@]}"; do
    for shape in {lines,words,quoted,groups,heredoc}-{1M,127K}; do
        if line=$(grep -P "^\Q$id\E\t$shape\t" "$state"); then
            printf '%-34s %-8s %8s %8s %10s %s\n' $line
            continue
        fi
        /usr/bin/time -f '%e %M' -o "$work/time" \
            "$iec" check --launch "$id" --command-file "$work/$shape.txt" --format json \
            >"$work/out" 2>"$work/err" || true
        read -r secs kb < <(tail -n1 "$work/time")
        verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/out" 2>/dev/null || echo error)
        row=$(printf '%s\t%s\t%s\t%s\t%s\t%s' "$id" "$shape" "$secs" "$((kb / 1024))" "$(wc -c <"$work/out")" "$verdict")
        echo "$row" >>"$state"
        printf '%-34s %-8s %8s %8s %10s %s\n' $row
    done
done
