#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/guest_b.sh - the bench's server guest (10.11.0.2): rxe0 and
# mroce0 on eth0, a control server on TCP 9000 (bench/ctl_srv.sh) that
# guest a drives, until guest a sends QUIT.
set -uo pipefail
. /mroce/bench/common.sh
bench_devices || { echo "bench: devices failed"; exit 1; }
echo "bench-b: rxe0 gid $GID_RXE, mroce0 gid $GID_MROCE"
nc -ll -p 9000 -e /mroce/bench/ctl_srv.sh &
ncpid=$!
deadline=$((SECONDS + ${BENCH_B_TIMEOUT:-3000}))
while [ ! -e /tmp/quit ] && [ $SECONDS -lt $deadline ]; do
	sleep 1
done
kill $ncpid 2>/dev/null
cat "$MROCE_DEBUGFS/mroce0/counters" >/out/mroce0.counters 2>/dev/null
exit 0
