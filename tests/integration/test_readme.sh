#!/usr/bin/env bash
# The README against the tree it describes: its set-up block holds exactly `make run` and
# `make test`; it names every page of docs/; every `pctl` command it shows is one `pctl --help`
# lists, and each of pctl's commands is shown; every option it gives a `pctl` or `pbench`
# command line is in that command's --help (or is a global option); every Prometheus metric it
# names is one pctld serves (daemon/metrics.c).
set -u
. "$TEST_LIB"
README="$SRC_DIR/README.md"
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

"$PCTL" --help >"$out/pctl.help" || fail "pctl --help failed"
for c in $(sed -nE 's/^  ([a-z]+) +[^ ].*/\1/p' "$out/pctl.help"); do
        "$PCTL" "$c" --help >"$out/help.$c" 2>&1 || fail "pctl $c --help failed"
done
"$PBENCH" --help >"$out/help.pbench" 2>&1 || fail "pbench --help failed"

python3 - "$README" "$SRC_DIR" "$out" <<'PY' || fail "README.md is stale (above)"
import os, re, sys

readme, src, out = sys.argv[1:]
text = open(readme).read()
bad = []

# Exactly two set-up commands: the first code block after "## Set up".
setup = re.search(r"^## Set up\n+```\n(.*?)```", text, re.S | re.M)
cmds = [l.split("#")[0].strip() for l in setup.group(1).splitlines()] if setup else []
if cmds != ["make run", "make test"]:
    bad.append(f"the set-up block is {cmds}, not make run and make test")

# Every page of docs/ is named.
for page in sorted(os.listdir(os.path.join(src, "docs"))):
    if page.endswith(".md") and f"docs/{page}" not in text:
        bad.append(f"docs/{page} is not named")

# Commands and their options, from `pctl ...` and `pbench ...` spans (joined over line breaks).
commands = re.findall(r"^  ([a-z]+) +\S", open(os.path.join(out, "pctl.help")).read(), re.M)
global_opts = set(re.findall(r"^  (--[a-z-]+)", open(os.path.join(out, "pctl.help")).read(), re.M))
global_opts |= {"--help", "--version"}
spans = [s.replace("\n", " ") for s in re.findall(r"`((?:pctl|pbench) [^`]*)`", text)]
shown = set()
for s in spans:
    words = re.sub(r" -- .*", "", s).split()
    if words[0] == "pbench":
        helptext, cmd = open(os.path.join(out, "help.pbench")).read(), "pbench"
    else:
        rest = [w for w in words[1:] if not w.startswith("-") and not w.startswith("/")]
        cmd = rest[0] if rest else None
        if cmd not in commands:
            bad.append(f"`{s}`: '{cmd}' is not a command of pctl --help")
            continue
        shown.add(cmd)
        helptext = open(os.path.join(out, f"help.{cmd}")).read()
    for opt in re.findall(r"(?<![\w-])(--[a-z][a-z-]*)", s):
        if opt not in helptext and opt not in global_opts:
            bad.append(f"`{s}`: {opt} is not in {cmd} --help")
for c in commands:
    if c not in shown:
        bad.append(f"pctl {c} is not shown")

# Metric names.
metrics = open(os.path.join(src, "daemon", "metrics.c")).read()
for name in sorted(set(re.findall(r"\bpctl_[a-z_]+_(?:total|bytes|seconds|watts|joules|ratio|per_second)\b", text))):
    if f'"{name}"' not in metrics:
        bad.append(f"metric {name} is not one daemon/metrics.c serves")

for b in bad:
    print("README.md:", b)
sys.exit(1 if bad else 0)
PY
echo "ok: README.md agrees with docs/, pctl --help, pbench --help and daemon/metrics.c"
