#!/usr/bin/env bash
# The manual and the usage texts agree: every command in `pctl --help` has a heading in pctl(1);
# every usage line `pctl COMMAND --help` prints is, word for word, a synopsis line or a command
# heading of the command's manual page (pctl-COMMAND.1 when there is one, else pctl.1); every
# global option has its entry in pctl(1).
set -u
. "$TEST_LIB"
MAN="$SRC_DIR/man"
command -v man >/dev/null || skip "no man to render the pages with"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# The page as lines without indentation and with one space between words; " | " and "|" are
# the same alternative.
render() {
        MANWIDTH=1000 man -l "$1" 2>/dev/null | sed -E 's/^ +//; s/ +/ /g; s/ ?\| ?/|/g'
}
render "$MAN/pctl.1" >"$out/pctl.txt"
[ -s "$out/pctl.txt" ] || fail "man -l $MAN/pctl.1 rendered nothing"
sed -n '/^COMMANDS$/,/^OPTIONS$/p' "$out/pctl.txt" >"$out/commands.txt"

# pctl's own usage lines are its SYNOPSIS.
"$PCTL" --help | sed -nE 's/^(Usage:)? +(pctl .*)/\2/p' | sed -E 's/ +/ /g; s/ ?\| ?/|/g' >"$out/entries"
[ "$(wc -l <"$out/entries")" -eq 2 ] || fail "pctl --help: $(cat "$out/entries")"
while IFS= read -r entry; do
        grep -Fxq -- "$entry" "$out/pctl.txt" || fail "pctl.1 does not show the usage line: $entry"
done <"$out/entries"

commands=$("$PCTL" --help | awk '/^Commands:/ { f = 1; next } /^$/ { f = 0 } f { print $1 }')
[ "$(wc -w <<<"$commands")" -ge 10 ] || fail "pctl --help lists too few commands: $commands"
n=0
for cmd in $commands; do
        grep -Eq "(^|, )pctl $cmd( |,|\$)" "$out/commands.txt" ||
                fail "pctl(1) has no heading for pctl $cmd"
        "$PCTL" "$cmd" --help >"$out/usage" 2>&1 || fail "pctl $cmd --help exited $?"
        grep -q "^Usage: pctl $cmd" "$out/usage" || fail "pctl $cmd --help: $(cat "$out/usage")"
        page="$MAN/pctl-$cmd.1"
        [ -f "$page" ] || page="$MAN/pctl.1"
        render "$page" >"$out/page.txt"
        # One entry per "pctl CMD ..." line, with its continuation lines.
        sed -E 's/^Usage://' "$out/usage" |
                awk '/^ *pctl / { if (e != "") print e; e = $0; next } { e = e " " $0 } END { print e }' |
                sed -E 's/^ +//; s/ +/ /g; s/ ?\| ?/|/g; s/ $//' >"$out/entries"
        while IFS= read -r entry; do
                grep -Fxq -- "$entry" "$out/page.txt" ||
                        fail "$(basename "$page") does not show the usage line: $entry"
                n=$((n + 1))
        done <"$out/entries"
done
[ "$n" -ge 16 ] || fail "only $n usage lines checked"

# The global options pctl --help lists each have an entry in pctl(1)'s OPTIONS.
sed -n '/^OPTIONS$/,/^EXIT STATUS$/p' "$out/pctl.txt" >"$out/options.txt"
for o in $("$PCTL" --help | awk '/^Global options/ { f = 1; next } /^$/ { f = 0 } f && $1 ~ /^--/ { print $1 }'); do
        grep -Eq -- "^$o( |,|\$)" "$out/options.txt" || fail "pctl(1) OPTIONS has no entry for $o"
done
echo "ok: $n usage lines found in the manual pages"
