#!/usr/bin/env bash
# Bad input to `pctl run` starts nothing: an unknown option, a global option before the command
# that is unknown, --json with --quiet, no command, a bad policy name (exit 2), and pctld not
# answering (exit 1). Each says what is wrong, names the option as typed, and the command it
# would have run never runs (it would create a file).
set -u
. "$TEST_LIB"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
S="$out/none.sock" # nothing listens there
MARK="$out/started"

# refused CODE PATTERN ARGS...: pctl ARGS exits CODE, says PATTERN (grep -E) on stderr, prints
# nothing on stdout, and the command it was given did not run.
refused() {
        local want=$1 pattern=$2 rc
        shift 2
        "$PCTL" "$@" >"$out/stdout" 2>"$out/stderr"
        rc=$?
        [ "$rc" -eq "$want" ] || fail "pctl $* exited $rc, not $want: $(cat "$out/stderr")"
        grep -Eq -- "$pattern" "$out/stderr" || fail "pctl $*: stderr does not say '$pattern': $(cat "$out/stderr")"
        [ ! -s "$out/stdout" ] || fail "pctl $* printed on stdout: $(cat "$out/stdout")"
        [ ! -e "$MARK" ] || fail "pctl $* ran its command"
        echo "ok: pctl $*: $rc, $(head -n 1 "$out/stderr")"
}

refused 2 "^pctl run: unknown or incomplete option '--bogus'$" run --socket "$S" --bogus -- touch "$MARK"
refused 2 "^pctl run: unknown or incomplete option '--bogus=1'$" run --bogus=1 -- touch "$MARK"
# An option of another command: named as typed, not by the value that follows it.
refused 2 "^pctl run: unknown or incomplete option '--count'$" run --count 3 -- touch "$MARK"
refused 2 "^pctl run: unknown or incomplete option '--watch'$" run --watch -- touch "$MARK"
refused 2 "^pctl run: --job goes with adopt only$" run --job 7 -- touch "$MARK"
refused 2 "^pctl run: --quiet and --json exclude each other$" run --socket "$S" --json --quiet -- touch "$MARK"
refused 2 "^pctl run: --quiet and --json exclude each other$" --json run --quiet -- touch "$MARK"
refused 2 "^pctl run: --policy: 'no/such' is not a policy name$" run --policy no/such -- touch "$MARK"
refused 2 "^pctl run: unknown or incomplete option '--policy'$" run --policy
refused 2 "^pctl run: a command is required after --$" run --socket "$S"
refused 2 "^pctl run: a command is required after --$" run --socket "$S" --
refused 2 "^pctl run: a command is required after --$" --socket "$S" run --policy edp --
# Global options before the command: an unknown one, or one without its value.
refused 2 "^pctl: unknown option '--quiet' before the command" --quiet run -- touch "$MARK"
refused 2 "^pctl: unknown option '--policy' before the command" --policy edp run -- touch "$MARK"
refused 2 "^pctl: --socket needs a PATH$" --socket
# pctld not running: the command is not started, pctl run says so and exits 1.
refused 1 "^pctl run: pctld is not running \(nothing listens on $S\)$" --socket "$S" run -- touch "$MARK"
grep -q "^pctl run: touch was not started$" "$out/stderr" || fail "pctl run does not say touch was not started: $(cat "$out/stderr")"
refused 1 "^pctl run: pctld is not running" --json --socket "$S" run -- touch "$MARK"
refused 1 "^pctl run: pctld is not running" run --quiet --socket "$S" -- touch "$MARK"
grep -q "^pctl run: touch was not started$" "$out/stderr" || fail "--quiet hides that touch was not started: $(cat "$out/stderr")"
# The command's own options are its own: --no-create after the command is touch's, not pctl's.
refused 1 "^pctl run: pctld is not running" run --socket "$S" touch --no-create "$MARK"
echo "ok: bad input to pctl run starts nothing"
