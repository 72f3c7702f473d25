#!/usr/bin/env bash
# The soak of issue 28 (tests/soak/soak.sh) in its short mode: 20 s of load, 12 apps, pctld restarted
# every 10 s, with the 20 users, the slow metrics clients and the history locks all the same.
# The 10-minute run is `make soak`.
exec bash "$SRC_DIR/tests/soak/soak.sh" 20 12 10 0
