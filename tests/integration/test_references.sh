#!/usr/bin/env bash
# Every path the tree names is in the tree: a docs page, a man page, a comment or a script that
# cites FOLDER/FILE of this project (a folder here, then a file or folder under it) must name
# one that exists, and nothing cites a design note that is not part of the tree (DESIGN.md,
# PLATFORM.md, ../shared/). Globs and placeholders (tests/fuzz/fuzz_NAME.c, cli/cmd_*.c) and a
# module named without its extension (model/extrapolate) count as existing when they match.
set -u
. "$TEST_LIB"
command -v git >/dev/null || skip "git is not installed"
git -C "$SRC_DIR" rev-parse --git-dir >/dev/null 2>&1 || skip "$SRC_DIR is not a git work tree"

python3 - "$SRC_DIR" <<'PY' || fail "references to files that are not in the tree (above)"
import fnmatch, os, re, subprocess, sys

os.chdir(sys.argv[1])
files = subprocess.check_output(["git", "ls-files", "--cached", "--others", "--exclude-standard"],
                                text=True).split()
files = [f for f in files if os.path.isfile(f)]
here = set(files)
dirs = set()
for f in files:
    d = os.path.dirname(f)
    while d and d not in dirs:
        dirs.add(d)
        d = os.path.dirname(d)
tops = sorted({f.split("/")[0] for f in files if "/" in f})
path_re = re.compile(r"(?<![\w./<-])((?:%s)/[A-Za-z0-9_.+/-]*[A-Za-z0-9_+])" % "|".join(map(re.escape, tops)))
# Outside this tree: system headers and paths that share a first name with a folder here, and
# the booted VM's tests, which another branch adds.
outside = {"slurm/spank.h", "slurm/slurm.h", "include/linux/sched.h", "lib/slurm-wlm", "tests/vm"}
note_re = re.compile(r"(?<![\w/])(DESIGN\.md|PLATFORM\.md|STYLE\.md|\.\./shared/[^\s`)]*)")
skip_prefixes = ("tests/fuzz/corpus/", "tests/data/", "debian/changelog")


def exists(p):
    if p in here or p in dirs or p in outside:
        return True
    if any(os.path.exists(p + ext) for ext in (".c", ".h", ".md", ".sh")):
        return True
    return False


bad = []
for f in files:
    if f.startswith(skip_prefixes):
        continue
    try:
        text = open(f, encoding="utf-8").read()
    except (UnicodeDecodeError, OSError):
        continue
    if f.startswith("man/"):
        text = text.replace("\\-", "-")
    for n, line in enumerate(text.split("\n"), 1):
        for m in path_re.finditer(line):
            p = m.group(1).rstrip(".")
            after = line[m.end():m.end() + 2]
            # A glob or placeholder: cli/cmd_*.c, tests/scenarios/startup-*.ini, fuzz_NAME.c.
            if "*" in after:
                continue
            if re.search(r"[A-Z]{3,}", p):
                glob = re.sub(r"[A-Z]{3,}", "*", p)
                if any(fnmatch.fnmatch(x, glob) for x in here | dirs):
                    continue
            if not exists(p):
                bad.append("%s:%d: %s" % (f, n, p))
        for m in note_re.finditer(line):
            if not os.path.exists(m.group(1)) and f != "tests/integration/test_references.sh":
                bad.append("%s:%d: %s (not part of the tree)" % (f, n, m.group(1)))
for b in bad:
    print(b)
print("%d files read, %d references to what is not here" % (len(files), len(bad)))
sys.exit(1 if bad else 0)
PY
echo "ok: every FOLDER/FILE the tree cites is in it"
