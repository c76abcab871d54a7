#!/usr/bin/env bash
# Wall time, peak memory and report size of `iec check` on texts at the size limit (1 MiB), on
# every launch, as recorded in BENCHMARKS.md ("Texts at the size limit"). Issue 16 bounds a
# 10 MB text to <= 15 s, <= 512 MB peak and <= 1 MB of report; a text over the limit is refused
# at once, so the costly texts are those just under it.
#
#   crates/iec-cli/bench/limit-text-cost.sh [LAUNCH...]
#
# Shapes (each 1 MiB minus a few bytes): many short quoted lines, one long line of words, one
# long single-quoted word, a deep nest of `{ …; }` groups, a here-document. Prints one line per
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
def fit(s):
    return s[: limit - 64]
shapes = {
    "lines": fit("printf '%s\\n' 'a != b' x!y\n" * (limit // 20)),
    "words": fit("echo " + "'w' " * (limit // 4)),
    "quoted": "echo '" + "q" * (limit - 64) + "'",
    "groups": "{ " * 20000 + "echo x; " + "}; " * 20000,
    "heredoc": "cat <<'EOF'\n" + fit("line $x `y`\n" * (limit // 12)) + "\nEOF\n",
}
for name, text in shapes.items():
    assert len(text.encode()) <= limit, name
    open(f"{d}/{name}.txt", "w").write(text)
EOF
if (($#)); then
    launches=("$@")
else
    mapfile -t launches < <("$iec" launches --format json | python3 -c 'import json,sys; [print(l["id"]) for l in json.load(sys.stdin)]')
fi
touch "$state"
printf '%-34s %-8s %8s %8s %10s %s\n' launch shape seconds peak_MB report_B verdict
for id in "${launches[@]}"; do
    for shape in lines words quoted groups heredoc; do
        if line=$(grep -P "^\Q$id\E\t$shape\t" "$state"); then
            printf '%-34s %-8s %8s %8s %10s %s\n' $line
            continue
        fi
        /usr/bin/time -f '%e %M' -o "$work/time" \
            "$iec" check --launch "$id" --command-file "$work/$shape.txt" --format json \
            >"$work/out" 2>"$work/err" || true
        read -r secs kb <"$work/time"
        verdict=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["verdict"])' "$work/out" 2>/dev/null || echo error)
        row=$(printf '%s\t%s\t%s\t%s\t%s\t%s' "$id" "$shape" "$secs" "$((kb / 1024))" "$(wc -c <"$work/out")" "$verdict")
        echo "$row" >>"$state"
        printf '%-34s %-8s %8s %8s %10s %s\n' $row
    done
done
