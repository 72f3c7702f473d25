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

# json_get FILE EXPR: evaluates a Python expression over the JSON document `d`.
json_get() { python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print($2)" "$1"; }

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

# pctld_start: starts pctld in the background and waits for its socket.
pctld_start() {
        "$PCTLD" --config "$T/pctl.conf" --foreground >>"$T/pctld.log" 2>&1 &
        PCTLD_PID=$!
        for _ in $(seq 100); do
                [ -S "$T/pctl.sock" ] && "$PCTL" status --socket "$T/pctl.sock" >/dev/null 2>&1 && return 0
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

# kill_tree PID: the process and its children. `pctl run` waits for its command and ignores
# SIGTERM, so killing it alone would leave the command running into the next test.
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

pctld_cleanup() {
        [ -n "${PCTLD_PID:-}" ] && kill -KILL "$PCTLD_PID" 2>/dev/null
        for p in ${CLEANUP_PIDS:-}; do kill_tree "$p"; done
        [ -n "${GROUP:-}" ] && cpuset_group_remove "$GROUP"
        [ -n "${T:-}" ] && rm -rf "$T"
}
