#!/bin/bash
# Issue 12's must-show on this machine: pctl stack of pbench, 2 threads on 2 CPUs, with each
# delimiter programmed. --sync 0.8: sync is the largest component, within 0.1 core of what
# pbench's own timing of its mutex waits gives; --p 0.5: sequential is the largest, within 0.1
# core of N - speedup - the measured rest and of pbench's own barrier waits; --imbalance 3:
# imbalance is the largest. Speedup + sum = N within 0.05 each time, and the estimated speedup
# N - Σ(components but unexplained) within 0.1 core of pbench's measured one. Backend-independent: it
# prints the source (PCTL_THREADSTATE chooses one). Needs root.
set -u
. "${TEST_LIB:?TEST_LIB is not set}"
: "${PCTL:?}" "${PBENCH:?}"
[ "$(id -u)" -eq 0 ] || skip "pctl stack needs root"
read -r -a cpus < <(python3 -c 'import os; print(*sorted(os.sched_getaffinity(0))[:2])')
[ ${#cpus[@]} -eq 2 ] || skip "needs 2 CPUs, this process may use ${#cpus[@]}"
tmp=$(mktemp -d)
pb=""
trap '[ -n "$pb" ] && kill "$pb" 2>/dev/null; rm -rf "$tmp"' EXIT

# measure NAME T1 PBENCH-ARGS...: pbench on the 2 CPUs, pctl stack over 3 s of its middle.
measure() {
        local name=$1 t1=$2
        shift 2
        "$PBENCH" --threads 2 --cpus "${cpus[0]},${cpus[1]}" --t1 "$t1" --json "$@" \
                >"$tmp/$name.pbench.json" &
        pb=$!
        sleep 0.7
        "$PCTL" stack "$pb" --interval 500 --count 6 --json >"$tmp/$name.stack.jsonl" \
                2>"$tmp/$name.stack.err" || fail "$name: pctl stack: $(cat "$tmp/$name.stack.err")"
        wait "$pb" || fail "$name: pbench $* failed"
        pb=""
        tail -1 "$tmp/$name.stack.jsonl" >"$tmp/$name.total.json"
}

# judge NAME WANT-LARGEST [WHAT GOT-EXPR WANT-EXPR]...: prints the stacks and checks the
# closure, the largest delimiter and each comparison within 0.1 core (expressions over the
# total `st`, its components `c` and pbench's own `own`). Runqueue is what other load takes
# from pbench, not one of its delimiters: it is shown, not judged as "largest". Exit 0 pass,
# 1 fail, 3 fail while other load took more than 0.1 core, by the stack's runqueue or pbench's
# own, or while pbench's own timing left over 0.05 core unexplained (this machine is shared;
# other load makes a laggard of whichever thread it delays, and its partner's wait for it
# reads as sync, or its solo time cancels the serial thread's:
# docs/stack.md). The error grows about as the runqueue does: at 0.24 core (under the quarter
# core allowed until then) sync read 0.25 over pbench's mutex waits, which saw 0.21 of
# imbalance nobody programmed; a 0.1-core tolerance is judged only below 0.1 core of it.
judge() {
        python3 - "$tmp/$1.total.json" "$tmp/$1.pbench.json" "$@" <<'EOF'
import json, sys
st, pb = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
name, want, checks = sys.argv[3], sys.argv[4], sys.argv[5:]
c = st["components"]
# pctl stack has no frequency sensitivity: memory is not split out (null).
assert "memory" in c and c.pop("memory") is None, c
own = pb["stack"]["components"]
print(f"{name}: source {st['source']}, {st['cores']} cores, {st['threads']} threads, "
      f"speedup {st['speedup']:.3f}; " + ", ".join(f"{k} {v:.3f}" for k, v in c.items()))
print(f"{name}: pbench's own timing: speedup {pb['stack']['speedup']:.3f}; "
      + ", ".join(f"{k} {v:.3f}" for k, v in own.items()))
bad = []
total = st["speedup"] + sum(c.values())
if abs(total - st["cores"]) > 0.05:
    bad.append(f"speedup + sum = {total:.4f}, not {st['cores']} within 0.05")
if min(v for k, v in c.items() if k != "unexplained") < 0:
    bad.append("a negative component")
# [SS]'s accuracy check: N - every component but unexplained against the speedup pbench
# measured itself (its work at the one-thread rate it calibrated, over its wall time), within
# 0.1 core (5 % of N).
checks += ["estimated speedup (N - components) against pbench's measured one",
           'st["speedup_estimated"]', 'pb["work_units"] / pb["units_per_s"] / pb["wall_s"]']
mine = {k: v for k, v in c.items() if k not in ("runqueue", "interference", "unexplained")}
largest = max(mine, key=mine.get)
if largest != want:
    bad.append(f"the largest delimiter is {largest} ({mine[largest]:.3f}), not {want}")
else:
    print(f"ok: {name}: {want} is the largest, speedup + sum = {total:.4f}")
for k in range(0, len(checks), 3):
    what, got, exp = checks[k], eval(checks[k + 1]), eval(checks[k + 2])
    if abs(got - exp) > 0.1:
        bad.append(f"{what} {got:.3f}, expected {exp:.3f} within 0.1")
    else:
        print(f"ok: {name}: {what} {got:.3f}, expected {exp:.3f} within 0.1")
if not bad:
    sys.exit(0)
rq = max(c["runqueue"], own.get("runqueue", 0))
# pbench's own figures cover its whole run, the stack 3 s of its middle: where its own timing
# leaves more than 0.05 core unexplained ("rest"), something its clocks do not see took time
# (the host slowing a vCPU: CI once read rest 0.103 and pbench's speedup 1.054 against the
# stack's 1.159, and its mutex waits 0.641 against the stack's sync 0.796), and its figures are
# no reference for that run.
rest = own.get("rest", 0)
busy = rq > 0.1 or abs(rest) > 0.05
for b in bad:
    print(f"{'(busy machine) ' if busy else ''}FAIL: {name}: {b}")
if rq > 0.1:
    print(f"{name}: other load took {rq:.2f} cores of 2 (over 0.1): not judged, trying again")
elif busy:
    print(f"{name}: pbench's own timing left {rest:.3f} core unexplained (over 0.05): not judged, trying again")
sys.exit(3 if busy else 1)
EOF
}

# case_run NAME T1 WANT-LARGEST "PBENCH-ARGS" [CHECKS...]: up to 3 tries while the machine is
# busy. T1 sizes pbench to outlast the 0.7 s wait, pctl stack's start and its 3 s: --p 0.5 and
# --imbalance 3 on 2 threads take 0.75-0.76 of T1, so 3.8 s at T1 5 (imbalance once ended
# during the last interval).
busy_cases=0
case_run() {
        local name=$1 t1=$2 want=$3 args=$4 try rc
        shift 4
        for try in 1 2 3; do
                # shellcheck disable=SC2086
                measure "$name" "$t1" $args
                judge "$name" "$want" "$@"
                rc=$?
                [ $rc -eq 0 ] && return 0
                [ $rc -eq 3 ] || exit 1
        done
        busy_cases=$((busy_cases + 1))
}

case_run sync 5 sync "--p 0.95 --sync 0.8" \
        "sync against pbench's mutex waits" 'c["sync"]' 'own["sync"]'
case_run seq 7 sequential "--p 0.5" \
        "sequential against N - speedup - the rest" 'c["sequential"]' \
        'st["cores"] - st["speedup"] - sum(v for k, v in c.items() if k != "sequential")' \
        "sequential against pbench's barrier waits" 'c["sequential"]' 'own["sequential"]'
case_run imbalance 7 imbalance "--p 0.95 --imbalance 3"
head -c 300 "$tmp/sync.stack.err"
[ $busy_cases -eq 0 ] || skip "$busy_cases case(s) ran 3 times with other load taking over 0.1 core or pbench's own timing unexplained by over 0.05"
exit 0
