#!/usr/bin/env bash
# make package: builds the Debian package from the working tree (committed or not) in a copy
# under BUILD/package, so dpkg-buildpackage's outputs (which it writes next to the source
# directory) stay inside the build folder; the .deb ends up in BUILD.
set -euo pipefail
build=${1:-build}
src=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$build"
build=$(cd "$build" && pwd)
version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
work="$build/package"
rm -rf "$work"
mkdir -p "$work/pctl-$version"
# Tracked and new files, not what .gitignore leaves out (build folders).
(cd "$src" && git ls-files -z --cached --others --exclude-standard |
        xargs -0 -I{} sh -c 'test -e "{}" && printf "%s\0" "{}"' |
        tar --null -T - -cf -) | tar -xf - -C "$work/pctl-$version"
cd "$work/pctl-$version"
dpkg-buildpackage -b -us -uc >"$work/dpkg-buildpackage.log" 2>&1 || {
        tail -n 40 "$work/dpkg-buildpackage.log" >&2
        echo "package: dpkg-buildpackage failed; the whole log is $work/dpkg-buildpackage.log" >&2
        exit 1
}
rm -f "$build"/pctl_*.deb
mv "$work"/pctl_"$version"_*.deb "$build/"
deb=$(ls "$build"/pctl_"$version"_*.deb)
echo "package: $deb"
if command -v lintian >/dev/null; then
        # Errors fail the build; warnings are printed and kept.
        lintian --allow-root --fail-on error "$deb" || {
                echo "package: lintian reports errors" >&2
                exit 1
        }
fi
