#!/usr/bin/env bash
# debian/control names exactly what scripts/deps.sh installs: every package in Build-Depends,
# Depends and Suggests is one deps.sh installs (so `make package` builds on a machine `make`
# set up), and every package deps.sh installs is named there unless it serves only the tests
# and the tools around the build (the list below, each with what needs it).
set -u
. "$TEST_LIB"
python3 - "$SRC_DIR/debian/control" "$SRC_DIR/scripts/deps.sh" <<'PY' || fail "debian/control and scripts/deps.sh disagree"
import re, sys

control, deps = sys.argv[1], sys.argv[2]

# Only for the tests, the fuzzing, the packaging itself and the demo cluster: not in the package.
test_only = {
    "build-essential": "implied by Build-Depends (Debian policy 4.2)",
    "python3": "the tests and the demo read JSON with it",
    "util-linux": "setpriv, taskset and script in the tests",
    "libclang-rt-14-dev": "libFuzzer for tests/fuzz",
    "dpkg-dev": "make package itself",
    "debhelper": "Build-Depends names it as debhelper-compat",
    "lintian": "make package's check",
    "debootstrap": "tests/system",
    "systemd-container": "tests/system",
    "qemu-system-x86": "tests/vm: the booted Debian VM",
    "qemu-utils": "tests/vm: the booted Debian VM",
    "e2fsprogs": "tests/vm: mkfs.ext4 -d makes the VM's disks",
    "xz-utils": "tests/real",
    "zstd": "tests/real",
    "pigz": "tests/real",
    "lbzip2": "tests/real",
    "stress-ng": "tests/real",
    "prometheus": "test_metrics_prometheus",
    "slurm-wlm": "test_slurm_spank's one-node cluster",
    "slurmd": "test_slurm_spank's one-node cluster",
    "slurmctld": "test_slurm_spank's one-node cluster",
    "munge": "test_slurm_spank's one-node cluster",
    "sqlite3": "looking into history.db by hand in the tests",
}

text = open(deps).read()
m = re.search(r"^packages=\((.*?)^\)", text, re.S | re.M)
if not m:
    sys.exit("no packages=( ... ) list in " + deps)
installed = set()
for line in m.group(1).splitlines():
    installed.update(line.split("#", 1)[0].split())

fields, name = {}, None
for line in open(control):
    if line.startswith("#"):
        continue
    if line[:1] in (" ", "\t") and name:
        fields[name] += " " + line.strip()
    elif ":" in line:
        name, value = line.split(":", 1)
        fields[name] = value.strip()
named = set()
for field in ("Build-Depends", "Depends", "Suggests", "Recommends"):
    for item in fields.get(field, "").split(","):
        for alt in item.split("|"):
            pkg = re.sub(r"[\(\[<].*", "", alt).strip()
            if pkg and not pkg.startswith("${"):
                named.add(pkg)
named.discard("debhelper-compat")

bad = False
for pkg in sorted(named - installed):
    print("FAIL: debian/control names %s, which scripts/deps.sh does not install" % pkg)
    bad = True
for pkg in sorted(installed - named - set(test_only)):
    print("FAIL: scripts/deps.sh installs %s, which debian/control does not name" % pkg)
    bad = True
for pkg in sorted(set(test_only) & named):
    print("FAIL: %s is listed here as test-only (%s) but debian/control names it" % (pkg, test_only[pkg]))
    bad = True
for pkg in sorted(set(test_only) - installed):
    print("FAIL: %s is listed here as test-only but scripts/deps.sh no longer installs it" % pkg)
    bad = True
if bad:
    sys.exit(1)
print("ok: %d packages named in debian/control, all installed by scripts/deps.sh; %d more for the tests only"
      % (len(named), len(installed - named)))
PY
echo PASS
