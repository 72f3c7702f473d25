#!/usr/bin/env bash
# bash completion for pctl (etc/bash-completion/pctl): commands, subcommands, each command's
# options and their values, policy names, and for `pctl release` the PIDs pctld manages.
# Checked twice when the bash-completion package is installed: with its helpers and without.
set -u
. "$TEST_LIB"
COMPLETION="$SRC_DIR/etc/bash-completion/pctl"
HELPERS=/usr/share/bash-completion/bash_completion
D=$(mktemp -d)
trap 'pctld_cleanup; rm -rf "$D"' EXIT

mkdir -p "$D/pol"
printf '[policy fast]\nobjective = performance\n' >"$D/pol/fast.conf"
printf '[daemon]\npolicies_dir = %s/pol\nhistory_path = %s/h.db\n' "$D" "$D" >"$D/pctl.conf"
# A history that remembers one app of the model machine, for `pctl history forget`.
"$PCTL" sim run "$SRC_DIR/tests/scenarios/startup-i7-p03.ini" --policy edp --history "$D/h.db" \
        >/dev/null || fail "sim run --history failed"
: >"$D/trace.csv"

# complete_words [HELPERS] WORD...: what TAB offers after `pctl WORD...` (the last word is the
# one being completed), sorted, on one line.
complete_words() {
        local helpers=$1
        shift
        bash --norc -c '
                [ -n "$1" ] && . "$1"
                . "$2" || exit 3
                shift 2
                COMP_WORDS=("$PCTL" "$@")
                COMP_CWORD=$#
                COMP_LINE="${COMP_WORDS[*]}"
                COMP_POINT=${#COMP_LINE}
                _pctl
                [ ${#COMPREPLY[@]} -eq 0 ] && exit 0
                printf "%s\n" "${COMPREPLY[@]}" | sort -u | tr "\n" " "' \
                _ "$helpers" "$COMPLETION" "$@"
}

check() {
        local helpers=$1 want=$2 got
        shift 2
        got=$(complete_words "$helpers" "$@")
        [ "$got" = "$want" ] || fail "${helpers:+(with $helpers) }pctl $* <TAB>: got '$got', want '$want'"
}

modes=("")
[ -r "$HELPERS" ] && modes+=("$HELPERS") || echo "note: no bash-completion package; checked without its helpers only"
for h in "${modes[@]}"; do
        got=$(bash --norc -c '[ -n "$1" ] && . "$1"; . "$2"; complete -p pctl' _ "$h" "$COMPLETION")
        [ "$got" = "complete -F _pctl pctl" ] || fail "complete -p pctl: $got"
        check "$h" "adopt calibrate extrapolate history model policy release run sample sensors sim stack status " ""
        check "$h" "forget " history ""
        check "$h" "--config --file --help --json " history --
        check "$h" "--all --config --file --help --json " history forget --
        check "$h" "p03 " --config "$D/pctl.conf" history forget ""
        check "$h" "--config --help --json --socket --version " --
        check "$h" "sample sensors sim stack status " --json s
        check "$h" "sample sensors sim stack status " --socket "$D/x.sock" s
        check "$h" "sample sensors sim stack status " --socket = "$D/x.sock" s
        check "$h" "p speedup table " model ""
        check "$h" "--cores --help --json --p " model speedup --
        check "$h" "--cores --freq --help --instructions --json --p --power --t1 " model table --p 0.5 --
        check "$h" "oracle run " sim ""
        check "$h" "edp energy " sim oracle x.ini --objective e
        check "$h" "--all --help --json --method --objective --together " sim oracle x.ini --
        check "$h" "auto dp exhaustive " sim oracle x.ini --together --method ""
        check "$h" "auto likwid perf replay software " sample --backend ""
        check "$h" "--config --help --job --policy --socket " adopt 1 --
        check "$h" "" adopt 1 --job ""
        check "$h" "auto ebpf proc " stack 1 --backend ""
        check "$h" "--backend --count --help --interval --json --plot " stack 1 --
        check "$h" "$D/trace.csv " stack 1 --plot "$D/tr"
        check "$h" "check list reload " policy ""
        check "$h" "--config --dir --help --json " policy list --
        check "$h" "--config --help --socket " policy reload --
        check "$h" "--config --count --help --json --socket --watch " status --
        check "$h" "--config --help --json --policy --quiet --socket " run --
        check "$h" "--quiet " run --policy fast --q
        check "$h" "--help --json --source " sensors --
        check "$h" "$D/trace.csv " sensors --source "$D/tr"
        check "$h" "$D/trace.csv " sensors --source = "$D/tr"
        check "$h" "$D/pol " policy check "$D/po"
        check "$h" "--help --json --to --trace " extrapolate runs.txt --
        check "$h" "$D/trace.csv " extrapolate "$D/tr"
        # Policy names from the policies_dir of --config, before or after the command.
        check "$h" "edp energy fast monitor performance ppw " --config "$D/pctl.conf" run --policy ""
        check "$h" "fast " adopt 1 --config "$D/pctl.conf" --policy f
        check "$h" "fast " sim run x.ini --policies-dir "$D/pol" --policy f
        # The command pctl run runs, and that command's own arguments.
        check "$h" "sleep " run --policy fast slee
        check "$h" "sleep " run -- slee
        check "$h" "$D/trace.csv " run -- cat "$D/tr"
        check "$h" "" model speedup --p ""
done

# pctl release offers the PIDs pctld manages, found by --socket or --config on the line.
[ "$(id -u)" -eq 0 ] || skip "the pctl release checks need pctld, which needs root (cgroup v1 cpusets)"
pctld_setup
pctld_start
"$PCTL" run --socket "$T/pctl.sock" -- sleep 30 &
CLEANUP_PIDS=$!
child=""
for _ in $(seq 50); do
        child=$(pgrep -P "$CLEANUP_PIDS" -x sleep) && break
        sleep 0.1
done
[ -n "$child" ] || fail "pctl run did not start sleep"
for h in "${modes[@]}"; do
        check "$h" "$child " --socket "$T/pctl.sock" release ""
        check "$h" "$child " release --config "$T/pctl.conf" ""
done
echo "ok: completion of commands, options, values, policies and managed PIDs"
