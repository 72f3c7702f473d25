#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, for tests and for a first try of pctl_spank.so:
# munged with a key of its own, slurmctld and slurmd from Debian, a generated slurm.conf with
# this node's name and CPUs, and plugstack.conf loading the plugin. Everything lives under one
# directory (PCTL_SLURM_DIR, default /tmp/pctl-slurm): configuration, key, sockets, state,
# logs. The daemons run in the foreground of their own session, tracked by PID; `stop` ends
# them, the job steps they left, and removes the directory.
#
#   scripts/slurm-local.sh start [--plugin SO] [--pctl-socket PATH]
#   scripts/slurm-local.sh stop
#   scripts/slurm-local.sh status
#
# Then: . "$PCTL_SLURM_DIR/env" (or SLURM_CONF=$PCTL_SLURM_DIR/slurm.conf) and
# srun --pctl-policy=edp -n1 -c2 pbench --p 0.2 --t1 5.
#
# Plugins: proctrack/linuxproc and task/none. pctld places apps by moving them between cpusets
# of its own (cgroup v1 here, where a task is in exactly one cpuset) and by affinity; task/cgroup
# would confine the step to a Slurm cpuset and task/affinity would bind its tasks, both the very
# things pctld changes, so each would undo the other. proctrack/linuxproc follows a step's
# processes through /proc's parent links and writes no cgroup at all. Exit codes: 0 done, 1 a
# daemon did not come up (its log is printed), 2 bad command line or missing Slurm/munge.
set -u

dir=${PCTL_SLURM_DIR:-/tmp/pctl-slurm}
src=$(cd "$(dirname "$0")/.." && pwd)
ctld_port=${PCTL_SLURM_PORT:-16817}
slurmd_port=$((ctld_port + 1))

# usage [WHAT]: says what is wrong, if given, and the usage line; exit status 2.
usage() {
        [ $# -gt 0 ] && echo "slurm-local.sh: $*" >&2
        echo "Usage: slurm-local.sh start [--plugin SO] [--pctl-socket PATH] | stop | status" >&2
        exit 2
}

need() {
        command -v "$1" >/dev/null || {
                echo "slurm-local.sh: $1 is not installed (Debian: $2)" >&2
                exit 2
        }
}

# The PIDs we started, one "NAME PID" line each.
pids_of() { [ -f "$dir/pids" ] && awk -v n="$1" '$1 == n { print $2 }' "$dir/pids"; }
alive() { [ -n "$1" ] && kill -0 "$1" 2>/dev/null; }

# Processes that hold a file under $dir open (slurmstepd keeps slurmd's log): what a stop must
# not leave behind.
holders() {
        local p f
        for p in /proc/[0-9]*; do
                for f in "$p"/fd/*; do
                        case $(readlink "$f" 2>/dev/null) in
                        "$dir"/*) echo "${p#/proc/}" && break ;;
                        esac
                done
        done
}

stop_pid() {
        local pid=$1
        alive "$pid" || return 0
        kill -TERM "$pid" 2>/dev/null
        for _ in $(seq 50); do
                alive "$pid" || return 0
                sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null
}

cmd_stop() {
        local p
        [ -d "$dir" ] || { echo "slurm-local.sh: nothing to stop ($dir does not exist)"; return 0; }
        # Jobs first, so their steps end through Slurm and run the plugin's exit hooks.
        if alive "$(pids_of slurmctld)"; then
                SLURM_CONF="$dir/slurm.conf" scancel --quiet --user=root 2>/dev/null
                for _ in $(seq 50); do
                        [ -z "$(SLURM_CONF="$dir/slurm.conf" squeue -h 2>/dev/null)" ] && break
                        sleep 0.1
                done
        fi
        for name in slurmd slurmctld munged; do
                for p in $(pids_of "$name"); do stop_pid "$p"; done
        done
        for p in $(holders); do
                [ "$p" = $$ ] || stop_pid "$p"
        done
        rm -rf "$dir"
        echo "slurm-local.sh: stopped; $dir removed"
}

# start NAME CMD...: CMD in its own session, output to log/NAME.out, its PID recorded.
start_daemon() {
        local name=$1
        shift
        setsid "$@" </dev/null >>"$dir/log/$name.out" 2>&1 &
        echo "$name $!" >>"$dir/pids"
}

# wait_for WHAT CMD...: retries CMD for 20 s.
wait_for() {
        local what=$1
        shift
        for _ in $(seq 200); do
                "$@" >/dev/null 2>&1 && return 0
                sleep 0.1
        done
        echo "slurm-local.sh: $what did not come up; its logs:" >&2
        tail -n 30 "$dir"/log/* >&2
        cmd_stop >&2
        exit 1
}

cmd_start() {
        local plugin="" pctl_socket="" node cpus
        while [ $# -gt 0 ]; do
                case $1 in
                --plugin) [ $# -ge 2 ] || usage "--plugin needs a file"; plugin=$2; shift 2 ;;
                --pctl-socket) [ $# -ge 2 ] || usage "--pctl-socket needs a path"; pctl_socket=$2; shift 2 ;;
                *) usage "unknown option '$1'" ;;
                esac
        done
        case $pctl_socket in "" | /*) ;; *) echo "slurm-local.sh: --pctl-socket takes an absolute path" >&2; exit 2 ;; esac
        need munged munge
        need slurmctld slurmctld
        need slurmd slurmd
        need srun slurm-client
        [ "$(id -u)" -eq 0 ] || { echo "slurm-local.sh: slurmd runs jobs as their users and needs root" >&2; exit 2; }
        if [ -z "$plugin" ]; then
                plugin="$src/build/pctl_spank.so"
        fi
        [ -f "$plugin" ] || { echo "slurm-local.sh: no plugin at $plugin (make build, or --plugin SO)" >&2; exit 2; }
        plugin=$(cd "$(dirname "$plugin")" && pwd)/$(basename "$plugin")
        if [ -e "$dir" ]; then
                echo "slurm-local.sh: $dir exists: a cluster is running, or a stop did not finish (slurm-local.sh stop)" >&2
                exit 2
        fi
        if command -v ss >/dev/null && ss -ltn | awk '{ print $4 }' | grep -Eq ":($ctld_port|$slurmd_port)\$"; then
                echo "slurm-local.sh: port $ctld_port or $slurmd_port is taken (PCTL_SLURM_PORT=N picks N and N+1)" >&2
                exit 2
        fi
        node=$(hostname -s)
        cpus=$(nproc)
        # munged refuses keys and sockets others could write to: the directory is root's, 0700.
        mkdir -p "$dir" && chmod 700 "$dir"
        mkdir -p "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"
        chmod 700 "$dir/munge"
        : >"$dir/pids"
        dd if=/dev/urandom of="$dir/munge/munge.key" bs=1 count=1024 status=none
        chmod 400 "$dir/munge/munge.key"

        cat >"$dir/slurm.conf" <<CONF
# Generated by scripts/slurm-local.sh: one node, everything under $dir.
ClusterName=pctl-local
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/munge.socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmdDebug=info
PlugStackConfig=$dir/plugstack.conf
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SwitchType=switch/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
NodeName=$node CPUs=$cpus State=UNKNOWN
PartitionName=local Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
        # optional: a plugin that fails to load must not stop jobs from running.
        echo "optional $plugin${pctl_socket:+ socket=$pctl_socket}" >"$dir/plugstack.conf"
        echo "export SLURM_CONF=$dir/slurm.conf" >"$dir/env"

        start_daemon munged munged --foreground --force --socket="$dir/munge/munge.socket" \
                --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
                --log-file="$dir/log/munged.log" --seed-file="$dir/munge/munged.seed"
        wait_for munged test -S "$dir/munge/munge.socket"
        start_daemon slurmctld slurmctld -D -i -f "$dir/slurm.conf"
        start_daemon slurmd slurmd -D -f "$dir/slurm.conf"
        wait_for "slurmctld and slurmd" sh -c \
                "SLURM_CONF=$dir/slurm.conf sinfo -h -n $node -o %t | grep -Eq '^(idle|mix|alloc)'"
        echo "slurm-local.sh: one-node cluster up in $dir (node $node, $cpus CPUs, plugin $plugin)"
        echo "slurm-local.sh: . $dir/env   # then srun --pctl-policy=NAME ..."
}

cmd_status() {
        local name p
        [ -d "$dir" ] || { echo "slurm-local.sh: not running ($dir does not exist)"; return 1; }
        for name in munged slurmctld slurmd; do
                p=$(pids_of "$name")
                if alive "$p"; then echo "$name pid $p"; else echo "$name not running"; fi
        done
        SLURM_CONF="$dir/slurm.conf" sinfo 2>&1
}

case ${1:-} in
start) shift; cmd_start "$@" ;;
stop) [ $# -eq 1 ] || usage "stop takes no arguments"; cmd_stop ;;
status) [ $# -eq 1 ] || usage "status takes no arguments"; cmd_status ;;
"") usage ;;
*) usage "unknown command '$1'" ;;
esac
