#!/bin/bash
# pctl sample refuses bad input with a specific message and exit 2, before sampling anything.
set -u
: "${PCTL:?PCTL is not set}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# expect CODE PATTERN ARGS...: runs pctl sample ARGS, wants exit CODE and PATTERN on stderr.
expect() {
        local code=$1 pattern=$2
        shift 2
        timeout 30 "$PCTL" sample "$@" >"$tmp/out" 2>"$tmp/err"
        local rc=$?
        [ $rc -eq "$code" ] || fail "pctl sample $*: exit $rc, wanted $code; stderr: $(cat "$tmp/err")"
        grep -Eq -- "$pattern" "$tmp/err" || fail "pctl sample $*: stderr lacks '$pattern': $(cat "$tmp/err")"
        [ ! -s "$tmp/out" ] || fail "pctl sample $*: wrote output: $(head -3 "$tmp/out")"
        echo "ok: pctl sample $* -> $rc: $(head -1 "$tmp/err")"
}

expect 2 "--backend 'nope' is not a backend" --backend nope --interval 10 --count 1
expect 2 "--interval '0' must be >= 1 ms" --interval 0 --count 1
expect 2 "--count '0' must be >= 1" --interval 10 --count 0
expect 2 "--interval MS is required" --count 1
expect 2 "--pid 999999999: no such process|--pid '999999999' is not" --pid 999999999 --interval 10 --count 1
# A PID that certainly does not exist now: a child that has been reaped.
true & dead=$!
wait $dead
expect 2 "--pid $dead: no such process" --pid "$dead" --interval 10 --count 1
expect 2 "--cgroup '/sys/fs/cgroup/cpuacct/no-such-pctl-group': no such cgroup" \
        --cgroup /sys/fs/cgroup/cpuacct/no-such-pctl-group --interval 10 --count 1
expect 2 "--cpus: CPU 4000 not online" --cpus 0,4000 --interval 10 --count 1
expect 2 "--cpus 'x' is not a CPU list" --cpus x --interval 10 --count 1
expect 2 "give one of --cpus, --cgroup, --pid" --cpus 0 --pid 1 --interval 10 --count 1
expect 2 "--backend replay needs --source FILE" --backend replay --count 1
expect 2 "replay: .*No such file" --backend replay --source "$tmp/none.csv" --count 1
printf 'just some text\n' >"$tmp/junk.txt"
expect 2 "replay: .*junk.txt:1: not a pctl sample CSV" --backend replay --source "$tmp/junk.txt" --count 1
# A bad value is refused with its line and its column.
printf '# pctl-sample v1 backend=x packages=1\ntime_s,interval_s,kind,id,cpu,instr,cycles,ref_cycles,busy_ns,energy_j,mem_bytes\n0.1,0.1,package,0,,,,,,,abc\n' >"$tmp/badmem.csv"
expect 2 "replay: .*badmem.csv:3: column mem_bytes: 'abc' is not a number" --backend replay --source "$tmp/badmem.csv" --count 1
expect 2 "unknown option '--bogus'" --bogus

# The good path, for contrast: exit 0 and K intervals of both CPUs.
"$PCTL" sample --backend software --cpus 0 --interval 50 --count 3 --csv >"$tmp/ok.csv" 2>"$tmp/err" ||
        fail "pctl sample --cpus 0 failed: $(cat "$tmp/err")"
[ "$(grep -c ',cpu,,0,' "$tmp/ok.csv")" -eq 3 ] || fail "wanted 3 rows for CPU 0: $(cat "$tmp/ok.csv")"
! grep -q ',cpu,,1,' "$tmp/ok.csv" || fail "CPU 1 was not asked for"
# And it replays what it wrote.
"$PCTL" sample --backend replay --source "$tmp/ok.csv" --count 10 --csv >"$tmp/re.csv" 2>"$tmp/err" ||
        fail "replaying our own CSV failed: $(cat "$tmp/err")"
diff <(grep -v '^#' "$tmp/ok.csv") <(grep -v '^#' "$tmp/re.csv") || fail "replay changed the data"
echo "ok"
