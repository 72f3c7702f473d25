#!/bin/bash
# The allocator places by the kernel's packages: two apps held to exactly 2 cores each (a
# policy with min_cores = max_cores = 2) get one package each, CPUs 0-1 and 2-3, never one CPU
# of each package, on a VM of 4 vCPUs in 2 sockets.
. "$TEST_LIB"
T=$(mktemp -d)
pids=""
cleanup() {
        for p in $pids; do kill_tree "$p"; done
        rm -f /etc/pctl/policies.d/50-vm-topology.conf
        [ -f "$T/90-monitor.conf" ] && mv "$T/90-monitor.conf" /etc/pctl/policies.d/
        systemctl reload pctld
        rm -rf "$T"
}
trap cleanup EXIT

# Only the two apps managed: the shipped monitor rule (watch-services) would take the
# machine's services in too, and the CPUs would be shared among them by weight.
mv /etc/pctl/policies.d/90-monitor.conf "$T/" 2>/dev/null
cat >/etc/pctl/policies.d/50-vm-topology.conf <<'POL'
[policy vm-topology]
objective = performance
min_cores = 2
max_cores = 2
POL
reloads() { journalctl -u pctld --no-pager -o cat | grep -c '^reloaded '; }
before=$(reloads)
systemctl reload pctld || fail "systemctl reload pctld: $(journalctl -u pctld -n 5 --no-pager)"
# ExecReload= only signals: the reload is done when pctld says so.
wait_until 30 sh -c "[ \$(journalctl -u pctld --no-pager -o cat | grep -c '^reloaded ') -gt $before ]" ||
        fail "pctld did not reload: $(journalctl -u pctld -n 5 --no-pager)"

for i in 1 2; do
        "$PCTL" run --policy vm-topology --quiet -- "$PBENCH" --p 0.95 --threads 2 --t1 600 \
                --oversubscribe >"$T/run$i.log" 2>&1 &
        pids="$pids $!"
done

# two_placed: both pbench apps on 2 cores, into $T/placed as "CPUS CPUS" (sorted), one package
# each. While they learn, the allocator may let them share one package's CPUs (docs/allocator.md,
# "Learning"); what it may never do is give an app CPUs of both packages: that fails at once.
two_placed() {
        "$PCTL" status --json >"$T/status.json" 2>/dev/null || return 1
        json_get "$T/status.json" "' '.join(sorted(a['cpus'] for a in d['apps'] if a['name'] == 'pbench' and a['cores'] == 2))" >"$T/placed"
        for c in $(cat "$T/placed"); do
                case $c in
                0-1 | 2-3) ;;
                *) echo "straddle $c" >"$T/straddle" ;;
                esac
        done
        [ "$(cat "$T/placed")" = "0-1 2-3" ]
}
wait_until 120 two_placed || true
[ ! -s "$T/straddle" ] || fail "an app held CPUs of both packages: $(cat "$T/straddle")"
[ "$(cat "$T/placed")" = "0-1 2-3" ] || fail "the two apps hold CPUs '$(cat "$T/placed")' after 120 s, not one package each (0-1 2-3): $(cat "$T/status.json")"
echo "ok: pctl status: the two apps hold CPUs 0-1 and 2-3, one package each"

# What the kernel enforces: every thread of each app on its package's CPUs (pbench pins each
# worker to one of them; the union is the package).
for a in $(json_get "$T/status.json" "' '.join(str(a['pid']) for a in d['apps'] if a['name'] == 'pbench')"); do
        got=$(allowed_cpus "$a" | python3 -c "
import sys
cpus = set()
for line in sys.stdin.read().split():
    for part in line.split(','):
        lo, _, hi = part.partition('-')
        cpus.update(range(int(lo), int(hi or lo) + 1))
print(','.join(map(str, sorted(cpus))))")
        case $got in
        0 | 1 | 0,1 | 2 | 3 | 2,3) ;;
        *) fail "pbench $a's threads may run on CPUs $got, not one package's" ;;
        esac
        echo "ok: pbench $a's threads run on CPUs $got"
done
