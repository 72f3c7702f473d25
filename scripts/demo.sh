#!/usr/bin/env bash
# The main job of `make run` until pctld lands: pbench at a few programmed P on this machine,
# its measured speedup (CPU time: Σbusy / max busy), and what `pctl model` predicts.
set -euo pipefail
build=${1:-build}
pctl="$build/pctl"
pbench="$build/pbench"
threads=$(nproc)
[ "$threads" -gt 4 ] && threads=4

echo "pctl demo: pbench on $threads threads against Amdahl's law (eq. 3 and eq. 10)"
printf '%6s %8s %10s %10s %8s\n' "P" "threads" "measured" "predicted" "P-hat"
for p in 0.1 0.5 0.9; do
        out=$("$pbench" --p "$p" --threads "$threads" --t1 1 --json)
        measured=$(printf '%s' "$out" | python3 -c 'import json,sys; d=json.load(sys.stdin); b=d["thread_busy_s"]; print("%.4f" % (sum(b)/max(b)))')
        predicted=$("$pctl" model speedup --p "$p" --cores "$threads")
        if [ "$threads" -ge 2 ]; then
                phat=$("$pctl" model p --cores "$threads" --speedup "$measured" 2>/dev/null || echo "?")
        else
                phat="n/a"
        fi
        printf '%6s %8s %10s %10s %8s\n' "$p" "$threads" "$measured" "$predicted" "$phat"
done
echo
echo "What-if for P = 0.9 on up to 8 cores with a declared 20 W + 10 W/core model:"
powerfile=$(mktemp)
trap 'rm -f "$powerfile"' EXIT
printf '[power]\nstatic_w = 20\ncore_w = 10\n' >"$powerfile"
"$pctl" model table --p 0.9 --cores 1-8 --power "$powerfile"
