#!/usr/bin/env bash
# Prometheus /metrics from pctld (issue 16), against the real tools: pctld with metrics_listen
# on loopback manages a pbench started by `pctl run`; `promtool check metrics` passes on what
# it serves; a real Prometheus server started here scrapes it and its query API returns
# pctl_app_parallel_fraction of that pbench. Bad input: a bad metrics_listen (file:line, exit
# 2), a port in use (exit 1), malformed requests, clients that never read, 200 idle
# connections and 200 concurrent scrapes from 25 loopback addresses — bounded (at most 32
# connections held), and pctld keeps sampling through all of it (the interval count, the
# histogram's _count, advances). A reload that changes the key is refused naming it; an app
# that leaves loses its series.
set -u
. "$TEST_LIB"
require_cpusets
command -v promtool >/dev/null || skip "promtool missing (Debian package prometheus)"
command -v prometheus >/dev/null || skip "prometheus missing (Debian package prometheus)"
CLIENT="python3 $(dirname "$TEST_LIB")/metrics_client.py"
pctld_setup
PROM_PID=
cleanup() {
        [ -n "$PROM_PID" ] && kill "$PROM_PID" 2>/dev/null && wait "$PROM_PID" 2>/dev/null
        pctld_cleanup
}
trap cleanup EXIT
printf '[policy metrics]\nobjective = edp\n' >"$T/policies.d/metrics.conf"
cp "$T/pctl.conf" "$T/pctl.conf.orig"
PORT=$($CLIENT free_port)

# with_listen VALUE: the original configuration with metrics_listen = VALUE in [daemon].
with_listen() { sed "/^\[daemon\]/a metrics_listen = $1" "$T/pctl.conf.orig" >"$T/pctl.conf"; }

# A bad address is a configuration problem: file:line, exit 2, at start and in check.
with_listen "localhost:$PORT"
line=$(grep -n '^metrics_listen' "$T/pctl.conf" | cut -d: -f1)
expect_exit 2 "$T/pctl.conf:$line: \[daemon\] metrics_listen: 'localhost' is not an IPv4 address" \
        "$PCTLD" --config "$T/pctl.conf" --foreground
sed 's/^metrics_listen = .*/metrics_listen = 127.0.0.1:0/' "$T/pctl.conf" >"$T/p0.conf"
expect_exit 2 "$T/p0.conf:$line: \[daemon\] metrics_listen: '0' is not a port (1..65535)" \
        "$PCTL" policy check "$T/p0.conf"

# A port another program holds: pctld says which and why, exits 1, leaves nothing behind.
with_listen "127.0.0.1:$PORT"
$CLIENT listen "$PORT" 30 "$T/holding" &
HOLDER=$!
for _ in $(seq 100); do [ -e "$T/holding" ] && break; sleep 0.1; done
[ -e "$T/holding" ] || fail "could not hold port $PORT"
expect_exit 1 "cannot listen for metrics on 127.0.0.1:$PORT: Address already in use" \
        "$PCTLD" --config "$T/pctl.conf" --foreground
kill "$HOLDER"; wait "$HOLDER" 2>/dev/null
[ -n "$(app_groups)" ] &&
        fail "the refused pctld left apps' cgroups"

pctld_start
grep -q "serving Prometheus metrics on http://127.0.0.1:$PORT/metrics" "$T/pctld.log" ||
        fail "pctld did not say where it serves metrics: $(cat "$T/pctld.log")"

# samples: the interval count pctld serves (pctl_sample_duration_seconds_count).
samples() { $CLIENT value "$PORT" pctl_sample_duration_seconds_count; }
# mark_sampling, then expect_sampling WHAT: at least half the intervals of the time between
# them were sampled (100 ms each).
mark_sampling() {
        SAMPLES0=$(samples) || fail "no scrape"
        TIME0=$(date +%s.%N)
}
expect_sampling() {
        local now elapsed_ms
        now=$(samples) || fail "no scrape after $1"
        elapsed_ms=$(python3 -c "import sys,time; print(int((time.time()-float(sys.argv[1]))*1000))" "$TIME0")
        [ $((now - SAMPLES0)) -ge $((elapsed_ms / 200)) ] ||
                fail "pctld sampled $((now - SAMPLES0)) intervals in $elapsed_ms ms during $1 (expected >= $((elapsed_ms / 200)))"
        echo "ok: sampling went on during $1: $((now - SAMPLES0)) intervals in $elapsed_ms ms"
}

"$PCTL" run --socket "$T/pctl.sock" --policy metrics -- \
        "$PBENCH" --p 0.9 --threads 2 --t1 600 >/dev/null 2>&1 &
RUN=$!
CLEANUP_PIDS="$RUN"
PB=
for _ in $(seq 100); do
        PB=$(pgrep -P "$RUN" -x pbench) && break
        sleep 0.1
done
[ -n "$PB" ] || fail "pbench did not start"
series="pctl_app_parallel_fraction{app=\"pbench\",pid=\"$PB\",policy=\"metrics\"}"
FAMILIES="pctl_app_cores pctl_app_parallel_fraction pctl_app_parallel_fraction_standard_error
        pctl_app_speedup pctl_app_power_watts pctl_app_energy_joules_total"
# all_known: a series of pbench in every per-app family (but the frequency) in metrics.txt.
all_known() {
        local fam
        for fam in $FAMILIES; do
                grep -q "^$fam{app=\"pbench\",pid=\"$PB\",policy=\"metrics\"} " "$T/metrics.txt" || return 1
        done
}
# P̂'s standard error needs two core counts: wait for the allocator's first move.
for _ in $(seq 300); do
        $CLIENT get "$PORT" >"$T/metrics.txt" || fail "scrape failed"
        all_known && break
        sleep 0.2
done
all_known || fail "not every figure of pbench $PB after 60 s: $(grep -v '^#' "$T/metrics.txt")"
for fam in $FAMILIES pctl_package_energy_joules_total pctl_decisions_total \
        pctl_cpuset_changes_total pctl_sample_duration_seconds pctl_app_frequency_hertz; do
        grep -q "^# HELP $fam " "$T/metrics.txt" || fail "no HELP for $fam"
done
for fam in pctl_package_energy_joules_total pctl_decisions_total pctl_cpuset_changes_total; do
        grep -q "^$fam[{ ]" "$T/metrics.txt" || fail "no series of $fam: $(cat "$T/metrics.txt")"
done
grep -q '^# TYPE pctl_sample_duration_seconds histogram$' "$T/metrics.txt" || fail "no histogram"
# This machine reports no CPU frequency: the family is described, no made-up series.
if [ ! -d /sys/devices/system/cpu/cpufreq ]; then
        grep -q '^pctl_app_frequency_hertz{' "$T/metrics.txt" &&
                fail "a frequency series on a machine without cpufreq"
fi
promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1 ||
        fail "promtool check metrics: $(cat "$T/promtool.out")"
echo "ok: promtool check metrics passes on $(grep -vc '^#' "$T/metrics.txt") series"

# A real Prometheus scrapes pctld every second; its query API answers for pbench.
PPORT=$($CLIENT free_port)
mkdir -p "$T/prom"
cat >"$T/prom/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: pctl
    static_configs:
      - targets: ['127.0.0.1:$PORT']
EOF
prometheus --config.file="$T/prom/prometheus.yml" --storage.tsdb.path="$T/prom/data" \
        --web.listen-address="127.0.0.1:$PPORT" >"$T/prom/log" 2>&1 &
PROM_PID=$!
query() {
        python3 - "$PPORT" "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
url = f"http://127.0.0.1:{sys.argv[1]}/api/v1/query?" + urllib.parse.urlencode({"query": sys.argv[2]})
try:
    d = json.load(urllib.request.urlopen(url, timeout=5))
except Exception:
    sys.exit(1)
r = d["data"]["result"] if d.get("status") == "success" else []
print(r[0]["value"][1] if r else "")
EOF
}
P=
for _ in $(seq 60); do
        P=$(query "pctl_app_parallel_fraction{job=\"pctl\",pid=\"$PB\"}") && [ -n "$P" ] && break
        kill -0 "$PROM_PID" 2>/dev/null || fail "prometheus died: $(tail -5 "$T/prom/log")"
        sleep 0.5
done
[ -n "$P" ] || fail "Prometheus has no pctl_app_parallel_fraction of pid $PB: $(tail -5 "$T/prom/log")"
python3 -c "import sys; p=float(sys.argv[1]); sys.exit(0 if 0 <= p <= 1 else 1)" "$P" ||
        fail "P̂ from Prometheus is $P, not in [0, 1]"
[ "$(query 'up{job="pctl"}')" = 1 ] || fail "Prometheus says the pctl target is not up"
echo "ok: Prometheus scraped pctld: pctl_app_parallel_fraction{pid=\"$PB\"} = $P"

# Malformed requests: an error or a closed connection, and pctld goes on.
[ "$($CLIENT raw "$PORT" 'GARBAGE\r\n\r\n')" = closed ] || fail "garbage got a reply"
$CLIENT raw "$PORT" 'GET /metrics HTTP/1.0\r\nNo colon here\r\n\r\n' | grep -q '^HTTP/1.[01] 400' ||
        fail "a malformed header line was not refused with 400"
$CLIENT raw "$PORT" 'POST /metrics HTTP/1.0\r\nContent-Length: 4\r\n\r\nabcd' | grep -q ' 405 ' ||
        fail "POST was not refused with 405"
$CLIENT raw "$PORT" 'GET /status HTTP/1.0\r\n\r\n' | grep -q ' 404 ' || fail "/status was not 404"
$CLIENT raw "$PORT" "GET /metrics HTTP/1.0\r\n$(printf 'X-Long: %065000d\\r\\n' 0)\r\n" | grep -q ' 431 \| 400 \| 413 ' ||
        fail "a 64 KB header was not refused"
echo "ok: malformed requests refused"

# sockets: pctld's open sockets now.
sockets() { ls -l "/proc/$PCTLD_PID/fd" 2>/dev/null | grep -c 'socket:'; }
base=$(sockets)

# 150 more apps (sleepers, policy monitor: observed, never moved) make a reply larger than
# what loopback buffers hold for a client that does not read.
SLEEPERS=
for _ in $(seq 150); do
        sleep 600 &
        SLEEPERS="$SLEEPERS $!"
done
CLEANUP_PIDS="$CLEANUP_PIDS $SLEEPERS"
# The first as Slurm's plugin hands a job's task over: with a job tag, the job label.
set -- $SLEEPERS
JOBBED=$1
shift
"$PCTL" adopt "$JOBBED" --policy monitor --job 4242 --socket "$T/pctl.sock" >/dev/null ||
        fail "adopt $JOBBED --job failed"
for p in "$@"; do
        "$PCTL" adopt "$p" --policy monitor --socket "$T/pctl.sock" >/dev/null || fail "adopt $p failed"
done
# The series follow at pctld's next interval (100 ms; longer on a loaded machine).
scrape_has() { $CLIENT get "$PORT" >"$T/metrics.txt" && grep -q "$1" "$T/metrics.txt"; }
wait_until 10 scrape_has '^pctl_managed_apps 151$' ||
        fail "not 151 apps: $(grep managed_apps "$T/metrics.txt")"
promtool check metrics <"$T/metrics.txt" >"$T/promtool.out" 2>&1 ||
        fail "promtool check metrics with 151 apps: $(cat "$T/promtool.out")"
grep -q "^pctl_app_cores{app=\"sleep\",pid=\"$JOBBED\",policy=\"monitor\",job=\"4242\"} " "$T/metrics.txt" ||
        fail "no job label on the app adopted with --job 4242: $(grep "pid=\"$JOBBED\"" "$T/metrics.txt")"
grep -q "^pctl_app_cores{app=\"pbench\",pid=\"$PB\",policy=\"metrics\"} " "$T/metrics.txt" ||
        fail "pbench (no job) has a job label: $(grep "pid=\"$PB\"" "$T/metrics.txt")"
echo "ok: 151 apps, $(wc -c <"$T/metrics.txt") bytes per scrape, promtool passes, job label where tagged"

# A client that connects and never sends is held until the idle timeout (10 s); clients that
# never read their replies (a tiny receive window) hold nothing: the reply goes to the
# kernel's socket buffer and pctld closes its end. Scrapes and sampling go on meanwhile.
mark_sampling
python3 -c 'import socket,sys,time; s=socket.create_connection(("127.0.0.1",int(sys.argv[1]))); time.sleep(30)' "$PORT" &
SILENT=$!
for _ in $(seq 100); do [ "$(sockets)" -ge $((base + 1)) ] && break; sleep 0.1; done
[ "$(sockets)" -eq $((base + 1)) ] || fail "the silent client was not held ($(sockets) sockets, base $base)"
t0=$(date +%s)
for i in 1 2 3; do $CLIENT noread "$PORT" 30 "$T/unread.$i" & done
# unread: clients whose reply arrived (and stays unread).
unread() { ls "$T"/unread.* 2>/dev/null | wc -l; }
for _ in $(seq 100); do [ "$(unread)" -ge 3 ] && break; sleep 0.1; done
[ "$(unread)" -ge 3 ] || fail "the clients that do not read got no reply"
# Their replies arrive in pieces: give pctld a moment to hand over the last one and close.
for _ in $(seq 50); do [ "$(sockets)" -eq $((base + 1)) ] && break; sleep 0.1; done
[ "$(sockets)" -eq $((base + 1)) ] ||
        fail "pctld holds $(($(sockets) - base - 1)) connections of clients that do not read"
$CLIENT get "$PORT" >/dev/null || fail "a scrape failed while clients did not read"
"$PCTL" status --socket "$T/pctl.sock" >/dev/null || fail "status failed while clients did not read"
for _ in $(seq 200); do [ "$(sockets)" -le "$base" ] && break; sleep 0.1; done
held=$(($(date +%s) - t0))
[ "$(sockets)" -le "$base" ] || fail "pctld still holds the silent client after ${held} s"
[ "$held" -ge 7 ] || fail "the silent client was closed after ${held} s, before the 10 s timeout"
echo "ok: a silent client held ${held} s (timeout 10 s); 3 clients that never read held by none"
expect_sampling "clients that never read or never send"
kill "$SILENT" 2>/dev/null

# 200 idle connections at once from 20 addresses (10 each, past the per-address limit of 8):
# pctld holds at most 32 (its limit); the rest wait in the kernel's listen queue (64) or are
# not even let in, or are closed at once (per address). Nothing hangs.
mark_sampling
$CLIENT hold "$PORT" 200 20 4 >"$T/hold.out" &
HOLD=$!
held=0
for _ in $(seq 50); do
        n=$(($(sockets) - base))
        [ "$n" -gt "$held" ] && held=$n
        sleep 0.1
done
wait "$HOLD" || fail "the idle clients failed: $(cat "$T/hold.out")"
read -r _ connected _ timed_out _ closed <"$T/hold.out"
[ "$held" -le 32 ] || fail "pctld held $held connections of 200 (limit 32)"
[ "$held" -ge 8 ] || fail "pctld held only $held connections of 200"
echo "ok: 200 idle connections: pctld held at most $held, $closed closed by it, $timed_out not let in, $((connected - held)) or so left queued"

# 200 concurrent scrapes: each is answered or refused, none hangs, pctld goes on.
$CLIENT storm "$PORT" 200 20 >"$T/storm.out"
read -r _ ok _ refused _ other <"$T/storm.out"
[ "$other" -eq 0 ] || fail "200 concurrent scrapes: $(cat "$T/storm.out")"
[ "$ok" -ge 1 ] || fail "200 concurrent scrapes: none answered: $(cat "$T/storm.out")"
echo "ok: 200 concurrent scrapes: $ok answered, $refused refused at the limits"
sleep 1
expect_sampling "200 idle connections and 200 concurrent scrapes"
kill -0 "$PCTLD_PID" || fail "pctld died"
$CLIENT get "$PORT" >/dev/null || fail "no scrape after the storm"

# The key needs a restart: a reload that changes it is refused, naming it.
sed "s/^metrics_listen = .*/metrics_listen = 127.0.0.1:$PPORT/" "$T/pctl.conf" >"$T/pctl.conf.new"
mv "$T/pctl.conf.new" "$T/pctl.conf"
expect_exit 1 "metrics_listen changed in $T/pctl.conf: that needs a restart of pctld" \
        "$PCTL" policy reload --socket "$T/pctl.sock"
with_listen "127.0.0.1:$PORT"
expect_exit 0 "reloaded" "$PCTL" policy reload --socket "$T/pctl.sock"

# An app that leaves loses its series at the next interval.
"$PCTL" release "$PB" --socket "$T/pctl.sock" >/dev/null || fail "release failed"
wait_until 10 scrape_has '^pctl_managed_apps 150$' || fail "scrape failed or not 150 apps"
grep -q "pid=\"$PB\"" "$T/metrics.txt" && fail "series of released pid $PB remain"
grep -q '^pctl_managed_apps 150$' "$T/metrics.txt" || fail "pctl_managed_apps is not 150"
echo "ok: a released app's series are gone"

pctld_stop TERM
[ "$PCTLD_RC" -eq 0 ] || fail "pctld exited $PCTLD_RC"
$CLIENT get "$PORT" >/dev/null 2>&1 && fail "metrics still served after pctld stopped"
echo "PASS"
