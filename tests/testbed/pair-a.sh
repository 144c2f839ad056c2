#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Guest a of the pair selftest: the rxe ping-pong server.
set -uo pipefail
. /mroce/tools/testbed/guest/lib.sh
modprobe rdma_rxe && rdma link add rxe0 type rxe netdev eth0 || exit 1
gid=$(tb_wait_gid rxe0) || exit 1
timeout 240 ibv_rc_pingpong -d rxe0 -g "$gid" -n 20 -s 4096 >/tmp/srv.log 2>&1
rc=$?
sed 's/^/srv: /' /tmp/srv.log
exit $rc
