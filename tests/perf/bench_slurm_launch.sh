#!/usr/bin/env bash
# What pctl_spank.so adds to a job step: `srun -n1 true` on the one-node cluster of
# scripts/slurm-local.sh with a private pctld, alternately without the option and with
# --pctl-policy=monitor (the plugin adopts the task before it execs, then asks pctld for its
# report and prints the summary), STEPS of each. Prints the median wall time of a step launch
# both ways and the difference, all measured here, none extrapolated; fails when the plugin
# adds more than TARGET_MS to the median step.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for slurmd and cgroup v1 cpusets"
for b in munged slurmctld slurmd srun; do
        command -v "$b" >/dev/null || skip "$b is not installed (scripts/deps.sh)"
done
[ -f "$BUILD_DIR/pctl_spank.so" ] || skip "pctl_spank.so was not built (no slurm/spank.h: libslurm-dev)"
STEPS=${BENCH_SLURM_STEPS:-15}
TARGET_MS=250
pctld_setup
export PCTL_SLURM_DIR="$T/slurm"
cleanup() {
        "$SRC_DIR/scripts/slurm-local.sh" stop >/dev/null 2>&1
        pctld_cleanup
}
trap cleanup EXIT
pctld_start
"$SRC_DIR/scripts/slurm-local.sh" start --plugin "$BUILD_DIR/pctl_spank.so" \
        --pctl-socket "$T/pctl.sock" >/dev/null || fail "slurm-local.sh start failed"
export SLURM_CONF="$PCTL_SLURM_DIR/slurm.conf"

# One warm-up step each way: the first launch loads what later ones find cached.
srun -n1 true || fail "a plain step failed"
srun --pctl-policy=monitor -n1 true 2>/dev/null || fail "a managed step failed"
: >"$T/plain.ms"
: >"$T/managed.ms"
for _ in $(seq "$STEPS"); do
        for kind in plain managed; do
                opt=()
                [ "$kind" = managed ] && opt=(--pctl-policy=monitor)
                start=$(date +%s%N)
                srun "${opt[@]}" -n1 true 2>"$T/err" || fail "a $kind step failed: $(cat "$T/err")"
                echo $((($(date +%s%N) - start) / 1000000)) >>"$T/$kind.ms"
                if [ "$kind" = managed ]; then
                        grep -q "^pctl: job [0-9]* step 0 on .*(policy monitor, 1 task," "$T/err" ||
                                fail "a managed step had no summary: $(cat "$T/err")"
                fi
        done
done
median() { sort -n "$1" | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
plain=$(median "$T/plain.ms")
managed=$(median "$T/managed.ms")
added=$(awk -v a="$managed" -v b="$plain" 'BEGIN { print a - b }')
echo "bench: slurm step launch (srun -n1 true, median of $STEPS, measured): $plain ms without --pctl-policy, $managed ms with --pctl-policy=monitor"
echo "bench: slurm plugin cost per step (adopt + report + summary, measured): $added ms (target < $TARGET_MS ms)"
awk -v a="$added" -v t="$TARGET_MS" 'BEGIN { exit !(a < t) }' || fail "the plugin adds $added ms to a step, over $TARGET_MS ms"
