#!/usr/bin/env bash
# SIGINT during a calibration: exit 130, no pbench left running, no platform.ini written.
set -uo pipefail
source "$TEST_LIB"
D=$(mktemp -d /tmp/pctl-cal-XXXXXX)
trap 'rm -rf "$D"' EXIT
"$PCTL" calibrate --quick --cpus 0 --t1 5 --out "$D" --pbench "$PBENCH" >"$D/out" 2>"$D/err" &
pid=$!
# Wait until pbench runs under it.
for _ in $(seq 100); do
        pgrep -P "$pid" >/dev/null && break
        sleep 0.1
done
child=$(pgrep -P "$pid" || true)
[ -n "$child" ] || { cat "$D/err"; fail "pbench never started"; }
kill -INT "$pid"
wait "$pid"
rc=$?
cat "$D/err"
[ "$rc" -eq 130 ] || fail "exit $rc, expected 130"
# It stops pbench on the way out; a loaded machine may take a while to let pbench die.
pbench_runs() { kill -0 "$child" 2>/dev/null && grep -q pbench "/proc/$child/comm" 2>/dev/null; }
if ! wait_until 10 eval '! pbench_runs'; then
        fail "pbench $child still runs"
fi
[ ! -e "$D/platform.ini" ] || fail "platform.ini written"
ls "$D" | grep -q 'platform.ini' && fail "a platform.ini temp file is left"
grep -q "stopped by SIGINT" "$D/err" || fail "no message about the stop"
echo "ok: exit 130, pbench gone, nothing written"
