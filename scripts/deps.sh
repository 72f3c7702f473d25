#!/usr/bin/env bash
# Installs the Debian packages pctl builds and tests with, when some are missing.
# Idempotent and quiet when everything is there; needs root only when it installs.
set -euo pipefail

packages=(
        build-essential cmake pkg-config
        likwid            # liblikwid + likwid.h (Debian ships no separate -dev package)
        libcpupower-dev   # cpufreq.h, -lcpupower
        libsystemd-dev    # sd-event, sd-daemon, sd-journal
        libinih-dev       # INI parsing
        libjson-c-dev     # JSON: every --json output, the control protocol, sample files
        libcmocka-dev     # unit tests
        procps util-linux # pgrep, setpriv, taskset in the integration tests
        python3           # the tests and the demo read JSON with it
        bash-completion   # its helpers, which etc/bash-completion/pctl is tested with
        clang             # the fuzz harnesses (scripts/fuzz.sh, docs/fuzzing.md)
        libclang-rt-14-dev # libFuzzer and the sanitizer runtimes clang links them with
        dpkg-dev debhelper lintian # make package (debian/, scripts/package.sh)
        debootstrap systemd-container # the system test: a booted Debian container (tests/system)
        qemu-system-x86 qemu-utils e2fsprogs # the VM test: a Debian 12 VM under qemu (tests/vm)
        xz-utils zstd pigz lbzip2 stress-ng # tests/real: multi-threaded tools people run
        libbpf-dev bpftool # the eBPF thread-state sensor: libbpf, skeletons (sensors/bpf)
        libmicrohttpd-dev # pctld's Prometheus /metrics endpoint
        prometheus        # promtool and a real server scraping pctld in the tests
        libslurm-dev slurm-wlm slurmd slurmctld munge # the SPANK plugin and a one-node cluster
        libsqlite3-dev sqlite3 # pctl history: past runs of each app
        gnuplot-nox       # pctl stack --plot: the stacked bar as SVG
)

missing=()
for p in "${packages[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
        echo "deps: missing Debian packages: ${missing[*]}" >&2
        echo "deps: run 'make' as root, or: sudo apt-get install ${missing[*]}" >&2
        exit 1
fi
echo "deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
