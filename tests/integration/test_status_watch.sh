#!/usr/bin/env bash
# pctl status --watch: plain frames into a pipe, redrawn in place on a terminal (under
# script(1)), one JSON document per frame with --json, a history line per app, an end on
# SIGINT with exit 0, and its bad options refused with exit 2. The gain column says it is a
# prediction.
set -u
. "$TEST_LIB"
[ "$(id -u)" -eq 0 ] || skip "needs root for cgroup v1 cpusets"
command -v script >/dev/null || skip "script(1) is missing (util-linux)"
pctld_setup
trap pctld_cleanup EXIT
pctld_start
S="--socket $T/pctl.sock"
sleep 60 &
APP=$!
CLEANUP_PIDS="$APP"
"$PCTL" adopt "$APP" $S || fail "adopt failed"

# Into a pipe: three plain frames, no escape sequences, each app's history.
"$PCTL" status --watch 0.2 --count 3 $S >"$T/pipe.out" 2>&1 || fail "watch into a pipe: $(cat "$T/pipe.out")"
[ "$(grep -c '^pctl status --watch: every 0.2 s' "$T/pipe.out")" = 3 ] || fail "not 3 frames: $(cat "$T/pipe.out")"
grep -q "$(printf '\033')" "$T/pipe.out" && fail "escape sequences written into a pipe"
grep -qE "^ +$APP  cores █+ +P̂ " "$T/pipe.out" || fail "no history line for $APP: $(cat "$T/pipe.out")"
grep -q "PRED_GAIN%" "$T/pipe.out" || fail "the gain column is not labelled a prediction"
echo "ok: pipe"

# On a terminal: every frame starts by going home and clearing, as top does.
script -qc "'$PCTL' status --watch 0.2 --count 2 $S" /dev/null >"$T/tty.out" 2>&1 ||
        fail "watch on a terminal: $(cat "$T/tty.out")"
[ "$(grep -o "$(printf '\033')\[H$(printf '\033')\[J" "$T/tty.out" | wc -l)" = 2 ] ||
        fail "frames not redrawn in place: $(cat -v "$T/tty.out" | head -5)"
echo "ok: terminal"

# --json: one document per frame (global option before the command).
"$PCTL" --json status --watch 0.2 --count 2 $S >"$T/json.out" || fail "watch --json failed"
python3 - "$T/json.out" "$APP" <<'PY' || fail "watch --json: $(cat "$T/json.out")"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
for l in lines:
    assert [a["pid"] for a in json.loads(l)["apps"]] == [int(sys.argv[2])], l
PY
echo "ok: json"

# SIGINT ends it with exit 0; the seconds may also follow as the next word.
"$PCTL" status --watch 0.2 $S >"$T/int.out" &
W=$!
# Once it has drawn a frame (its handler is set before the first): a loaded machine may take
# longer than any fixed wait to get it there, and SIGINT before the handler kills it.
wait_until 30 test -s "$T/int.out" || fail "no frame in 30 s"
kill -INT "$W"
wait "$W"
rc=$?
[ "$rc" = 0 ] || fail "SIGINT: exit $rc, expected 0"
echo "ok: SIGINT"

# Bad options: exit 2 and the reason.
for args in "--watch=0" "--watch 5000" "--count 0 --watch" "--count 2" "--watch x y"; do
        # shellcheck disable=SC2086
        out=$("$PCTL" status $args $S 2>&1)
        rc=$?
        [ "$rc" = 2 ] || fail "status $args: exit $rc, expected 2: $out"
        echo "$out" | grep -qE "takes seconds|whole number|goes with --watch|unexpected argument" ||
                fail "status $args: unclear: $out"
        echo "ok: status $args -> $out"
done
# pctld gone: the watch ends with exit 1 and says so.
pctld_stop TERM
out=$("$PCTL" status --watch 0.2 --count 2 $S 2>&1)
rc=$?
[ "$rc" = 1 ] && echo "$out" | grep -q "pctld is not running" || fail "no pctld: exit $rc: $out"
echo PASS
