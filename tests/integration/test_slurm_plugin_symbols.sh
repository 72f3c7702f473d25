#!/usr/bin/env bash
# pctl_spank.so links only the pctl sources it lists (slurm/CMakeLists.txt) and leaves Slurm's
# own symbols to the process that loads it (--allow-shlib-undefined). A pctl function it calls
# but does not link is then undefined too, and slurmstepd resolves it lazily only when it is
# first called: at the step's end, where it dies, and srun waits for it forever (step_report.c
# once called cpumask and topology functions the plugin did not link; test_slurm_spank hung).
# Here, in a second: every symbol the plugin leaves undefined is Slurm's (slurm_*, spank_*) or
# comes with a library version (libc, json-c, libm).
set -u
. "$TEST_LIB"
PLUGIN="$BUILD_DIR/pctl_spank.so"
[ -f "$PLUGIN" ] || skip "pctl_spank.so was not built (no slurm/spank.h: libslurm-dev)"
command -v nm >/dev/null || skip "nm missing (binutils)"
undefined=$(nm -D --undefined-only "$PLUGIN" | awk '{ print $NF }')
[ -n "$undefined" ] || fail "nm listed no undefined symbol of $PLUGIN (it needs libc's at least)"
bad=$(echo "$undefined" | grep -v '@' | grep -Ev '^(slurm_|spank_)' | grep -Ev '^_(_gmon_start__|ITM_|_cxa_finalize)' || true)
[ -z "$bad" ] || fail "pctl_spank.so calls what it does not link (add the source to slurm/CMakeLists.txt): $bad"
echo "ok: pctl_spank.so leaves undefined only Slurm's symbols and versioned libraries' ($(echo "$undefined" | wc -l) in all)"
