# Shared by the integration tests: a private pctld with its own config, state, socket and
# cgroup subtree, so tests can run side by side and leave nothing behind.

skip() { echo "SKIP: $*"; exit 77; }
fail() { echo "FAIL: $*"; exit 1; }

# expect_exit CODE PATTERN CMD...: CMD exits with exactly CODE and says PATTERN (grep -e).
expect_exit() {
        local code=$1 pat=$2 out rc
        shift 2
        out=$("$@" 2>&1)
        rc=$?
        [ "$rc" -eq "$code" ] || fail "'$*' exited $rc, not $code: $out"
        echo "$out" | grep -q -- "$pat" || fail "'$*' did not say '$pat': $out"
        echo "ok: $*: $out"
}

# wait_until SECONDS CMD...: runs CMD every 0.1 s until it succeeds (0) or SECONDS have passed
# (1). For what pctld does at its next interval or two, which a loaded machine can delay by
# seconds: a fixed sleep before an assert fails there.
wait_until() {
        local end=$((SECONDS + $1))
        shift
        until "$@"; do
                [ $SECONDS -lt $end ] || return 1
                sleep 0.1
        done
}

# The cpusets this machine gives pctld (CG_MODE):
#   v1  a writable cgroup v1 cpuset hierarchy at /sys/fs/cgroup/cpuset (the development
#       machines): the private pctld makes its groups under /$GROUP there;
#   v2  cgroup v2 only, with a cpuset controller and systemd as PID 1 (Debian 12, the VM test):
#       the private pctld runs in a transient scope of its own with Delegate=yes, as a unit
#       that manages cgroups is run under systemd, and makes its app groups inside it;
#   ""  neither: the tests that need cpusets skip (require_cpusets).
CG_MODE=""
if [ -w /sys/fs/cgroup/cpuset/cpuset.cpus ]; then
        CG_MODE=v1
        CG_FS=/sys/fs/cgroup/cpuset
elif grep -qw cpuset /sys/fs/cgroup/cgroup.controllers 2>/dev/null && [ -d /run/systemd/system ] &&
        command -v systemd-run >/dev/null; then
        CG_MODE=v2
        CG_FS=/sys/fs/cgroup
fi

# require_cpusets: skips unless CG_MODE is v1 or v2 (and this is root).
require_cpusets() {
        [ "$(id -u)" -eq 0 ] || skip "needs root for cpusets (cgroup v1, or v2 under systemd)"
        [ -n "$CG_MODE" ] || skip "no cpusets: neither a writable cgroup v1 cpuset hierarchy nor cgroup v2 with a cpuset controller under systemd"
}

# app_groups: the cgroup directories the private pctld made for its apps (app-PID), one a line.
app_groups() {
        ls -d "$CG_FS${APPS_CG:-/$GROUP}"/app-* 2>/dev/null
}

# cgroup_of PID: the cgroup a process is in, for cpusets (v1: its cpuset; v2: its cgroup).
cgroup_of() {
        if [ "$CG_MODE" = v2 ]; then
                sed -n 's/^0:://p' /proc/"$1"/cgroup 2>/dev/null
        else
                cat /proc/"$1"/cpuset 2>/dev/null
        fi
}

# json_get FILE EXPR: evaluates a Python expression over the JSON document `d` in FILE and
# prints it (print()); 1 with the traceback on stderr when it raises. One python3 per test
# answers every call, over two FIFOs: tests poll status every 0.1 s, and a python3 started per
# poll was most of what a test itself took of a loaded machine. It starts at the first call
# (from any subshell: $$ is the test's shell) and leaves when the test's shell has gone.
_JSON_DIR=/tmp/pctl-json-$$
_JSON_SERVER='
import json, os, sys, threading, time, traceback
d0, parent = sys.argv[1], int(sys.argv[2])

def watch():
    while True:
        time.sleep(0.5)
        try:
            os.kill(parent, 0)
        except ProcessLookupError:
            for f in ("req", "rep", "in.json", "pid", "log"):
                try:
                    os.unlink(os.path.join(d0, f))
                except OSError:
                    pass
            for p in (d0, d0 + ".lock"):
                try:
                    os.rmdir(p) if p == d0 else os.unlink(p)
                except OSError:
                    pass
            os._exit(0)

threading.Thread(target=watch, daemon=True).start()
while True:
    with open(os.path.join(d0, "req")) as f:
        lines = f.read().splitlines()
    for line in lines:
        path, expr = line.split("\t", 1)
        try:
            with open(path) as fh:
                g = {"json": json, "sys": sys, "d": json.load(fh)}
            out = "0\n" + str(eval(expr, g)) + "\n"
        except BaseException:
            out = "1\n" + traceback.format_exc()
        with open(os.path.join(d0, "rep"), "w") as f:
            f.write(out)
'
_json_start() {
        rm -rf "$_JSON_DIR"
        mkdir -m 700 "$_JSON_DIR" && mkfifo "$_JSON_DIR/req" "$_JSON_DIR/rep" || return 1
        python3 -c "$_JSON_SERVER" "$_JSON_DIR" "$$" </dev/null >/dev/null 2>"$_JSON_DIR/log" 9>&- &
        echo $! >"$_JSON_DIR/pid"
}
json_get() {
        (
                local f=$1 rc out
                flock 9
                kill -0 "$(cat "$_JSON_DIR/pid" 2>/dev/null)" 2>/dev/null || _json_start || exit 1
                # A /dev/fd/N of <(...) is this shell's own, and a relative name is from here.
                if [ ! -f "$f" ]; then
                        cat "$f" >"$_JSON_DIR/in.json" || exit 1
                        f=$_JSON_DIR/in.json
                fi
                [[ $f == /* ]] || f=$PWD/$f
                printf '%s\t%s\n' "$f" "${2//$'\n'/ }" >"$_JSON_DIR/req"
                { read -r rc; out=$(cat); } <"$_JSON_DIR/rep"
                if [ "$rc" = 0 ]; then printf '%s\n' "$out"; else printf '%s\n' "$out" >&2; fi
                exit "${rc:-1}"
        ) 9>"$_JSON_DIR.lock"
}

# pctld_setup: makes $T (temp dir reachable by other users) and $T/pctl.conf.
pctld_setup() {
        T=$(mktemp -d /tmp/pctl-it-XXXXXX)
        chmod 755 "$T"
        GROUP="pctl-it-$$"
        mkdir -p "$T/policies.d"
        cat >"$T/pctl.conf" <<CONF
[daemon]
interval_ms = 100
decision_ms = 500
platform = ${PCTL_PLATFORM:-software}
socket = $T/pctl.sock
state_dir = $T/state
policies_dir = $T/policies.d
cgroup_group = $GROUP
platform_file = $T/platform.ini
history_path = $T/history.db

[power]
static_w = 20
core_w = 10
CONF
}

# pctld_start: starts pctld in the background and waits for its socket. On cgroup v2 it runs in
# a delegated transient scope of its own (a new one each start: PCTLD_SCOPES lists them), and
# APPS_CG is set to where it makes its app groups: its own cgroup, which it leaves for a leaf
# "daemon" (v1: /$GROUP).
PCTLD_STARTS=0
pctld_start() {
        if [ "$CG_MODE" = v2 ]; then
                PCTLD_STARTS=$((PCTLD_STARTS + 1))
                local unit="pctl-it-$$-$PCTLD_STARTS.scope"
                PCTLD_SCOPES="${PCTLD_SCOPES:-} $unit"
                systemd-run --scope --quiet --collect --unit="$unit" -p Delegate=yes \
                        "$PCTLD" --config "$T/pctl.conf" --foreground >>"$T/pctld.log" 2>&1 &
        else
                "$PCTLD" --config "$T/pctl.conf" --foreground >>"$T/pctld.log" 2>&1 &
        fi
        PCTLD_PID=$!
        for _ in $(seq 100); do
                if [ -S "$T/pctl.sock" ] && "$PCTL" status --socket "$T/pctl.sock" >/dev/null 2>&1; then
                        if [ "$CG_MODE" = v2 ]; then
                                APPS_CG=$(cgroup_of "$PCTLD_PID")
                                APPS_CG=${APPS_CG%/daemon}
                        fi
                        return 0
                fi
                kill -0 "$PCTLD_PID" 2>/dev/null || { cat "$T/pctld.log"; fail "pctld died at start"; }
                sleep 0.1
        done
        cat "$T/pctld.log"
        fail "pctld did not open its socket"
}

# pctld_stop SIGNAL: signals pctld and waits for it.
pctld_stop() {
        kill -"${1:-TERM}" "$PCTLD_PID" 2>/dev/null
        wait "$PCTLD_PID" 2>/dev/null
        PCTLD_RC=$?
}

# status_json: pctl status --json into $T/status.json.
status_json() { "$PCTL" status --socket "$T/pctl.sock" --json >"$T/status.json"; }

# allowed_cpus PID: Cpus_allowed_list of every thread, one line each, sorted and unique.
allowed_cpus() {
        for s in /proc/"$1"/task/*/status; do
                awk '/^Cpus_allowed_list/ {print $2}' "$s" 2>/dev/null
        done | sort -u
}

# main_state PID: the cpuset and the main thread's mask, as "CPUSET MASK".
main_state() {
        echo "$(cat /proc/"$1"/cpuset 2>/dev/null) $(awk '/^Cpus_allowed_list/ {print $2}' /proc/"$1"/status 2>/dev/null)"
}

# kill_tree PID: the process and its children. `pctl run` passes SIGTERM on to its command but
# cannot pass SIGKILL, so killing it alone would leave the command running into the next test.
kill_tree() {
        pkill -KILL -P "$1" 2>/dev/null
        kill -KILL "$1" 2>/dev/null
        wait "$1" 2>/dev/null
}

# cpuset_group_remove GROUP: every task left under the cgroup v1 cpuset GROUP (and its
# children) goes back to the root cpuset, then the directories go.
cpuset_group_remove() {
        local cs=/sys/fs/cgroup/cpuset d t
        [ -d "$cs/$1" ] || return 0
        for d in "$cs/$1"/*/ "$cs/$1/"; do
                [ -f "$d/tasks" ] || continue
                while read -r t; do echo "$t" >$cs/tasks 2>/dev/null; done <"$d/tasks"
        done
        rmdir "$cs/$1"/*/ "$cs/$1" 2>/dev/null
        return 0
}

# fake_pctld SOCKET REPLY...: a fake pctld in the background on SOCKET (a path of the test's
# own) that answers one request per connection with the next REPLY (a line of JSON), in order,
# then removes the socket and exits (`wait` for it); it gives up after 20 s without a client.
# Returns once the socket is there. For the CLI's handling of what another pctld may send.
fake_pctld() {
        local sock=$1
        shift
        /usr/bin/python3 - "$sock" "$@" <<'PY' &
import os, socket, sys
path, replies = sys.argv[1], sys.argv[2:]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(len(replies))
s.settimeout(20)
for reply in replies:
    c, _ = s.accept()
    buf = b""
    while not buf.endswith(b"\n"):
        chunk = c.recv(4096)
        if not chunk:
            break
        buf += chunk
    c.sendall(reply.encode() + b"\n")
    c.close()
os.unlink(path)
PY
        wait_until 5 test -S "$sock" || fail "the fake pctld did not start"
}

# fake_cpufreq_policy DIR "CPUS": a cpufreq policy directory as acpi-cpufreq lays it out
# (1.0-3.0 GHz in four steps, governor schedutil, the userspace governor offered) for the CPUs
# listed, for a fake /sys/devices/system/cpu bind-mounted in a private mount namespace. The
# values that pctld writes have the width of the ones they replace: libcpupower writes
# without O_TRUNC, which a kernel attribute ignores and a plain file does not.
fake_cpufreq_policy() {
        local pol=$1
        mkdir -p "$pol"
        echo "$2" >"$pol/related_cpus"
        echo "$2" >"$pol/affected_cpus"
        echo 1000000 >"$pol/cpuinfo_min_freq"
        echo 3000000 >"$pol/cpuinfo_max_freq"
        echo "3000000 2000000 1400000 1000000 " >"$pol/scaling_available_frequencies"
        echo "performance powersave userspace schedutil" >"$pol/scaling_available_governors"
        echo schedutil >"$pol/scaling_governor"
        echo 1000000 >"$pol/scaling_min_freq"
        echo 3000000 >"$pol/scaling_max_freq"
        echo 2000000 >"$pol/scaling_cur_freq"
        echo "<unsupported>" >"$pol/scaling_setspeed"
}

pctld_cleanup() {
        [ -n "${PCTLD_PID:-}" ] && kill -KILL "$PCTLD_PID" 2>/dev/null
        for p in ${CLEANUP_PIDS:-}; do kill_tree "$p"; done
        [ -n "${GROUP:-}" ] && [ "$CG_MODE" = v1 ] && cpuset_group_remove "$GROUP"
        # v2: systemd removes a scope's cgroups once it is stopped (what is left in it is killed).
        for u in ${PCTLD_SCOPES:-}; do systemctl stop "$u" 2>/dev/null; done
        [ -n "${T:-}" ] && rm -rf "$T"
}

# What the rest of the machine takes from a measurement. A figure pctld measures from real work
# (P̂ of pbench, p_run) is evidence only while nothing else competes for the CPUs: a miss while
# others used more than OTHERS_MAX of one CPU is reported "loaded: not judged" (a visible skip,
# 77), never passed; on a quiet machine it fails.
OTHERS_MAX=${PCTL_TEST_OTHERS_MAX:-0.25}
HZ=$(getconf CLK_TCK)

# _busy_ticks: ticks every CPU spent on anything but idle and iowait (steal included: the
# hypervisor taking the vCPU is load too).
_busy_ticks() { awk '$1 == "cpu" { print $2 + $3 + $4 + $7 + $8 + $9 + $10; exit }' /proc/stat; }

# _tree PID...: the processes and all their descendants.
_tree() {
        local p
        for p in "$@"; do
                [ -n "$p" ] || continue
                echo "$p"
                # shellcheck disable=SC2046
                _tree $(pgrep -P "$p" 2>/dev/null)
        done
}

# _own_ticks PID...: into OWN_TICKS, the CPU ticks of the processes PID... and their descendants
# (with what they reaped), and of this shell and what it reaped (its polls). Not in a
# subshell: `times` must be this shell's.
_own_ticks() {
        local t
        t=$(for p in $(_tree "$@" | sort -u); do
                awk '{ sub(/^.*\) /, ""); print $12 + $13 + $14 + $15 }' "/proc/$p/stat" 2>/dev/null
        done | awk '{ s += $1 } END { print s + 0 }')
        times >"$T/.times"
        OWN_TICKS=$((t + $(awk -v hz="$HZ" '{ for (i = 1; i <= 2; i++) { split($i, a, /[ms]/); v += a[1] * 60 + a[2] } }
                END { printf "%d", v * hz }' "$T/.times")))
}

# others_mark PID...: starts counting what the rest of the machine uses: all but pctld, the
# processes PID... (and their descendants) and this test's own commands.
others_mark() {
        OTHERS_T0=$(date +%s.%N)
        OTHERS_B0=$(_busy_ticks)
        _own_ticks "${PCTLD_PID:-}" "$@"
        OTHERS_O0=$OWN_TICKS
}

# others_since PID...: into OTHERS, the CPUs' worth the rest of the machine used since
# others_mark (give the same PIDs), e.g. 0.62.
others_since() {
        local b t
        b=$(_busy_ticks)
        _own_ticks "${PCTLD_PID:-}" "$@"
        t=$(date +%s.%N)
        OTHERS=$(awk -v b0="$OTHERS_B0" -v b="$b" -v o0="$OTHERS_O0" -v o="$OWN_TICKS" -v t0="$OTHERS_T0" \
                -v t="$t" -v hz="$HZ" 'BEGIN { x = ((b - b0) - (o - o0)) / hz / (t - t0); printf "%.2f", x < 0 ? 0 : x }')
}

# loaded: true when OTHERS (from others_since) is past OTHERS_MAX.
loaded() { awk -v x="$OTHERS" -v m="$OTHERS_MAX" 'BEGIN { exit !(x > m) }'; }
