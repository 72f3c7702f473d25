#!/usr/bin/env bash
# The affinity fallback (no cgroup): the same adopt / restrict / widen / release checks as
# test_actuator_adopt.sh, with sched_setaffinity on every thread.
ACT_MODE=affinity exec bash "$(dirname "$0")/test_actuator_adopt.sh"
