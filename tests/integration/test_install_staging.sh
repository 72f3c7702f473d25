#!/usr/bin/env bash
# `cmake --install` into a DESTDIR stages exactly the files a package ships; the staged unit
# names the staged pctld and passes systemd-analyze verify.
set -u
. "$TEST_LIB"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
dest="$T/root"
out=$(DESTDIR="$dest" cmake --install "$BUILD_DIR" --prefix /usr 2>&1) || fail "cmake --install: $out"

unitdir=$(pkg-config --variable=systemdsystemunitdir systemd 2>/dev/null)
compdir=$(pkg-config --variable=completionsdir bash-completion 2>/dev/null)
{
        echo /usr/bin/pctl
        echo /usr/bin/pbench
        echo /usr/sbin/pctld
        echo "${unitdir:-/usr/lib/systemd/system}/pctld.service"
        echo /etc/pctl/pctl.conf
        for f in "$SRC_DIR"/etc/policies.d/*.conf; do echo "/etc/pctl/policies.d/${f##*/}"; done
        echo "${compdir:-/usr/share/bash-completion/completions}/pctl"
        for f in "$SRC_DIR"/man/*.[158]; do echo "/usr/share/man/man${f##*.}/${f##*/}"; done
        # The Slurm plugin, where Slurm's headers were found at configure time.
        if [ -f "$BUILD_DIR/pctl_spank.so" ]; then
                plugindir=$(sed -n 's/^PCTL_SLURM_PLUGIN_DIR:[A-Z]*=//p' "$BUILD_DIR/CMakeCache.txt")
                echo "/usr/${plugindir:?PCTL_SLURM_PLUGIN_DIR not in CMakeCache.txt}/pctl_spank.so"
        fi
} | sort >"$T/want"
# Debian's Slurm loads plugins from /usr/lib/<multiarch>/slurm-wlm (docs/fleet.md), whatever
# prefix the build was configured with.
if [ -f "$BUILD_DIR/pctl_spank.so" ] && command -v dpkg-architecture >/dev/null; then
        debian="/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)/slurm-wlm/pctl_spank.so"
        grep -qx "$debian" "$T/want" ||
                fail "the Slurm plugin goes to $(grep pctl_spank "$T/want"), not $debian where Debian's Slurm looks"
fi
(cd "$dest" && find . ! -type d | sed 's|^\.||' | sort) >"$T/got"
diff -u "$T/want" "$T/got" >"$T/diff" || fail "staged files differ from the expected list: $(cat "$T/diff")"
echo "ok: $(wc -l <"$T/got") files staged, as expected"

# What cmake recorded as installed is the same list: no rule wrote a file it did not stage.
sort "$BUILD_DIR/install_manifest.txt" | diff -u "$T/want" - >"$T/diff" ||
        fail "install_manifest.txt differs from the expected list: $(cat "$T/diff")"

for b in usr/bin/pctl usr/bin/pbench usr/sbin/pctld; do
        [ -x "$dest/$b" ] || fail "$b is not executable"
done
"$dest/usr/bin/pctl" --version >/dev/null 2>&1 || fail "the staged pctl does not run"
unit="$dest${unitdir:-/usr/lib/systemd/system}/pctld.service"
grep -q '^ExecStart=/usr/sbin/pctld ' "$unit" || fail "the staged unit does not start /usr/sbin/pctld: $(grep ExecStart "$unit")"
cmp -s "$SRC_DIR/etc/pctl.conf" "$dest/etc/pctl/pctl.conf" || fail "the staged pctl.conf differs from etc/pctl.conf"

if command -v systemd-analyze >/dev/null; then
        # The staged unit, pointed at the staged binary (nothing is installed on the host).
        sed "s|/usr/sbin/pctld|$dest/usr/sbin/pctld|" "$unit" >"$T/pctld.service"
        out=$(systemd-analyze verify --man=no "$T/pctld.service" 2>&1) || fail "systemd-analyze verify: $out"
        [ -z "$out" ] || fail "systemd-analyze verify warns: $out"
        echo "ok: the staged unit verifies"
else
        echo "note: systemd-analyze is not installed; the unit was not verified"
fi
echo "ok: DESTDIR staging"
