#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Guest b of the pair selftest: ping guest a, then the rxe ping-pong client.
set -uo pipefail
. /mroce/tools/testbed/guest/lib.sh
tb_wait_ping 10.11.0.1 && echo "ping a ok"
modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0 || exit 1
gid=$(tb_wait_gid rxe0) || exit 1
for i in $(seq 30); do
	timeout 200 ibv_rc_pingpong -d rxe0 -g "$gid" -n 20 -s 4096 10.11.0.1 >/tmp/cli.log 2>&1 && break
	sleep 1
done
if grep -q 'iters in' /tmp/cli.log; then
	echo "rxe pingpong ok"
else
	sed 's/^/cli: /' /tmp/cli.log
	exit 1
fi
