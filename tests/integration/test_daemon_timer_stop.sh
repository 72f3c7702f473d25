#!/usr/bin/env bash
# Timers skip missed ticks: pctld (sampling every 100 ms, deciding every 500 ms) is stopped
# for 3 s (SIGSTOP) and continued. In the time it runs it samples every 100 ms and decides
# every 500 ms, without the 30 samples and 6 decisions it missed run back to back, and says
# it skipped them. Counted through /metrics (pctl_sample_duration_seconds_count,
# pctl_decisions_total) around the stop.
set -uo pipefail
# shellcheck source=lib.sh
. "${TEST_LIB:?TEST_LIB is not set}"
CLIENT="python3 $(dirname "$TEST_LIB")/metrics_client.py"

pctld_setup
trap pctld_cleanup EXIT
PORT=$($CLIENT free_port)
sed -i "/^\[daemon\]/a metrics_listen = 127.0.0.1:$PORT" "$T/pctl.conf"
pctld_start
# counts: the samples and decisions so far, from one scrape, and the times just before and
# just after it (on a loaded machine the client alone can take a second to start: the bounds
# below take the widest span the two scrapes can cover, so a slow client cannot look like a
# catch-up).
counts() {
        local before
        before=$(date +%s.%N)
        $CLIENT get "$PORT" | awk -v b="$before" '
                $1 == "pctl_sample_duration_seconds_count" { s = $2 }
                $1 == "pctl_decisions_total" { d = $2 }
                END { print s, d, b }'
        date +%s.%N
}
sleep 1
{ read -r s0 d0 t0 && read -r _; } <<<"$(counts)"
kill -STOP "$PCTLD_PID"
sleep 3
kill -CONT "$PCTLD_PID"
sleep 1
{ read -r s1 d1 _ && read -r t1; } <<<"$(counts)"
samples=$((s1 - s0))
decisions=$((d1 - d0))
# The longest pctld can have run between the two scrapes: from just before the first to just
# after the second, all of it but the 3 s stop.
ran=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a - 3 }')
max_s=$(awk -v r="$ran" 'BEGIN { printf "%d", r / 0.1 + 3 }')
max_d=$(awk -v r="$ran" 'BEGIN { printf "%d", r / 0.5 + 2 }')
echo "after a 3 s stop, in $ran s running: $samples samples (at most $max_s on time)," \
        "$decisions decisions (at most $max_d)"
# Catching up would add the 30 samples and 6 decisions missed while stopped.
[ "$samples" -le "$max_s" ] || fail "$samples samples in $ran s of 100 ms intervals: the missed ticks ran"
[ "$decisions" -le "$max_d" ] || fail "$decisions decisions in $ran s of 500 ms periods: the missed ones ran"
[ "$samples" -ge 3 ] || fail "only $samples samples after the stop: sampling did not resume"
grep -q "sampling fell .* behind .*skipping" "$T/pctld.log" || fail "pctld did not say it skipped ticks"
echo PASS
