#!/usr/bin/env bash
# Global options before the command (pctl --socket PATH status, pctl --json sensors, ...) reach
# the command as if given after it; a global option a command does not take, an unknown one
# or one without its value is a bad command line (exit 2) with a message naming them.
set -u
. "$TEST_LIB"
out=$(mktemp -d)
trap 'rm -rf "$out"; pctld_cleanup' EXIT

# expect RC STDERR_PATTERN CMD...: runs CMD, checks its exit code and that stderr matches.
expect() {
        local want=$1 pattern=$2 rc
        shift 2
        "$@" >"$out/stdout" 2>"$out/stderr"
        rc=$?
        [ "$rc" -eq "$want" ] || fail "'$*' exited $rc, not $want; stderr: $(cat "$out/stderr")"
        [ -z "$pattern" ] || grep -Eq -- "$pattern" "$out/stderr" ||
                fail "'$*': stderr does not match '$pattern': $(cat "$out/stderr")"
}
is_json() { python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$1" || fail "not JSON: $2"; }

# --help, --version, and nothing at all.
expect 0 '' "$PCTL" --help
grep -q '^Usage: pctl \[--socket PATH\] \[--config FILE\] \[--json\] COMMAND' "$out/stdout" ||
        fail "pctl --help does not show the global options"
expect 0 '' "$PCTL" --version
grep -Eq '^pctl [0-9]' "$out/stdout" || fail "pctl --version: $(cat "$out/stdout")"
expect 0 '' "$PCTL" --json --version
expect 2 '^Usage: pctl ' "$PCTL"
# A command of subcommands given none: one line naming them, not the whole help.
for c in "model:speedup, p or table" "sim:run or oracle" "policy:list, check or reload"; do
        expect 2 "^pctl ${c%%:*}: which one\? ${c#*:} \(try 'pctl ${c%%:*} --help'\)\$" "$PCTL" "${c%%:*}"
        [ "$(wc -l <"$out/stderr")" -eq 1 ] || fail "pctl ${c%%:*}: $(cat "$out/stderr")"
        expect 0 "" "$PCTL" "${c%%:*}" --help
        grep -q "^Usage: pctl ${c%%:*} " "$out/stdout" || fail "pctl ${c%%:*} --help: $(cat "$out/stdout")"
done

# --json before the command, for every command that prints a report and runs without pctld.
for cmd in "sensors" "model speedup --p 0.5 --cores 2" "model table --p 0.9 --cores 1-2" \
        "sim oracle $SRC_DIR/tests/scenarios/i7-p09.ini --objective edp" \
        "policy list --dir $SRC_DIR/etc/policies.d"; do
        # shellcheck disable=SC2086 # the words of the command
        expect 0 '' "$PCTL" --json $cmd
        is_json "$out/stdout" "pctl --json $cmd"
        cp "$out/stdout" "$out/before"
        # shellcheck disable=SC2086
        expect 0 '' "$PCTL" $cmd --json
        # Sensors and the oracle are measured/searched afresh: compare the keys only.
        python3 - "$out/before" "$out/stdout" <<'PY' || fail "pctl --json $cmd differs from pctl $cmd --json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert sorted(a) == sorted(b), (sorted(a), sorted(b))
PY
done
# pctl sample --json writes one JSON object per interval.
expect 0 '' "$PCTL" --json sample --backend software --interval 50 --count 2
[ "$(grep -c '^{"time_s":' "$out/stdout")" -eq 2 ] || fail "pctl --json sample: $(cat "$out/stdout")"

# --config before policy list reads the policies_dir of that file.
mkdir -p "$out/pol"
printf '[policy globaltest]\nobjective = edp\n' >"$out/pol/g.conf"
printf '[daemon]\npolicies_dir = %s\nsocket = %s/none.sock\n' "$out/pol" "$out" >"$out/pctl.conf"
expect 0 '' "$PCTL" --config "$out/pctl.conf" policy list
grep -q '^globaltest ' "$out/stdout" || fail "pctl --config F policy list did not read F"
expect 0 '' "$PCTL" --json --config "$out/pctl.conf" policy list
json_get "$out/stdout" "d['dir']" | grep -qx "$out/pol" || fail "pctl --json --config F policy list"

# --socket and --config before each command that talks to pctld: nothing listens there, so
# each one fails to run (1) naming the socket it was given.
for cmd in status "run -- true" "adopt $$" "release $$" "policy reload"; do
        # shellcheck disable=SC2086
        expect 1 "^pctl [a-z ]+: pctld is not running \\(nothing listens on $out/a.sock\\)" \
                "$PCTL" --socket "$out/a.sock" $cmd
        # shellcheck disable=SC2086
        expect 1 "nothing listens on $out/none.sock" "$PCTL" --config "$out/pctl.conf" $cmd
        # --socket=PATH works too, and an option after the command wins over one before it.
        # shellcheck disable=SC2086
        expect 1 "nothing listens on $out/b.sock" "$PCTL" --socket="$out/a.sock" ${cmd%% --*} \
                --socket "$out/b.sock" ${cmd#"${cmd%% --*}"}
done

# Bad command lines: exit 2, a message naming what is wrong, never the whole help.
expect 2 "^pctl: unknown option '--bogus' before the command \\(global options: --socket, --config, --json; try 'pctl --help'\\)$" \
        "$PCTL" --bogus status
expect 2 "^pctl: --socket needs a PATH$" "$PCTL" --socket
expect 2 "^pctl: --config needs a FILE$" "$PCTL" --config
expect 2 "^pctl: --json takes no value$" "$PCTL" --json=yes status
expect 2 "^pctl: a COMMAND is required after the global options \\(try 'pctl --help'\\)$" \
        "$PCTL" --json
expect 2 "^pctl: unknown command 'bogus' \\(try 'pctl --help'\\)$" "$PCTL" --json bogus
expect 2 "^pctl sensors: --socket does not apply to this command$" "$PCTL" --socket /x sensors
expect 2 "^pctl sensors: --config does not apply to this command$" "$PCTL" --config /x sensors
expect 2 "^pctl model speedup: --socket does not apply to this command$" \
        "$PCTL" --socket /x model speedup --p 0.5 --cores 2
expect 2 "^pctl policy check: --json does not apply to this command$" \
        "$PCTL" --json policy check "$out/pol/g.conf"
expect 2 "^pctl policy reload: --json does not apply to this command$" "$PCTL" --json policy reload
# pctl run prints a JSON summary, so --json before it is taken (nothing listens: exit 1).
expect 1 "^pctl run: pctld is not running \\(nothing listens on $out/a.sock\\)" \
        "$PCTL" --json --socket "$out/a.sock" run -- true
expect 2 "^pctl release: --json does not apply to this command$" "$PCTL" --json release 1
expect 2 "^pctl policy: unknown subcommand 'bogus'" "$PCTL" --json policy bogus
[ ! -s "$out/stdout" ] || fail "a refused command line printed on stdout: $(cat "$out/stdout")"

# A running pctld, found by --socket and by --config before the command.
[ "$(id -u)" -eq 0 ] || skip "the checks against a running pctld need root (cgroup v1 cpusets)"
pctld_setup
pctld_start
expect 0 '' "$PCTL" --socket "$T/pctl.sock" status
grep -q '^platform ' "$out/stdout" || fail "pctl --socket S status: $(cat "$out/stdout")"
expect 0 '' "$PCTL" --json --config "$T/pctl.conf" status
json_get "$out/stdout" "d['apps']" >/dev/null || fail "pctl --json --config C status is not status JSON"
expect 0 '' "$PCTL" --config "$T/pctl.conf" status --json
is_json "$out/stdout" "pctl --config C status --json"
# pctl run gets --socket before the command and exits with the command's status.
expect 3 '' "$PCTL" --socket "$T/pctl.sock" run -- sh -c 'exit 3'
expect 0 '' "$PCTL" --config "$T/pctl.conf" policy reload
grep -q 'reloaded' "$out/stdout" || fail "pctl --config C policy reload: $(cat "$out/stdout")"
echo "ok: global options before and after the command"
