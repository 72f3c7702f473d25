#!/usr/bin/env bash
# Progress markers on this machine: an app that marks its progress through the public header
# (include/pctl/progress.h) is scored by it, and `pctl status` says "progress: markers"; an app
# that does not is scored by instructions and says "progress: instructions".
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
MARKER=${BUILD_DIR:?BUILD_DIR is not set}/tools/pctl_marker
pctld_setup
trap pctld_cleanup EXIT
pctld_start

"$PCTL" run --socket "$T/pctl.sock" --quiet -- "$MARKER" 6 mark >/dev/null &
RUN1=$!
"$PCTL" run --socket "$T/pctl.sock" --quiet -- "$MARKER" 6 plain >/dev/null &
RUN2=$!
CLEANUP_PIDS="$RUN1 $RUN2"
# both_seen: status lists both, each with its progress source.
both_seen() {
        status_json && json_get "$T/status.json" \
                "int(len([a for a in d['apps'] if a['name']=='pctl_marker' and a.get('progress')]) == 2 and any(a.get('progress')=='markers' for a in d['apps']))" |
                grep -qx 1
}
wait_until 5 both_seen || fail "status never showed both apps with markers on one: $(cat "$T/status.json")"
python3 - "$T/status.json" <<'PY' || fail "status: $(cat "$T/status.json")"
import json, sys
s = json.load(open(sys.argv[1]))
src = sorted(a["progress"] for a in s["apps"] if a["name"] == "pctl_marker")
assert src == ["instructions", "markers"], src
PY
"$PCTL" status --socket "$T/pctl.sock" | grep -Eq "allocator: (new|learn|probe|recall|search|settled|model); progress: markers" ||
        fail "text status has no 'allocator: PHASE; progress: markers': $("$PCTL" status --socket "$T/pctl.sock")"
"$PCTL" status --socket "$T/pctl.sock" | grep -q "progress: instructions" || fail "text status has no 'progress: instructions'"
wait "$RUN1" || fail "the marking run failed"
wait "$RUN2" || fail "the plain run failed"
echo "ok: progress markers read from a real app, and named in pctl status"
