#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Module load/unload and parameter validation.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

mroce_unload
mroce_load; mroce_unload
check_fails "insmod udp_port=0 is refused" insmod "$MROCE_KO" udp_port=0
check_fails "insmod udp_port=65536 is refused" insmod "$MROCE_KO" udp_port=65536
check_fails "insmod udp_port=abc is refused" insmod "$MROCE_KO" udp_port=abc
if grep -q 'mroce.*udp_port' <<<"$(dmesg)"; then
	tb_ok "bad udp_port gives a kernel log message"
else
	tb_not_ok "bad udp_port gives a kernel log message" "nothing in dmesg"
fi
check "insmod with defaults" mroce_load
port=$(cat /sys/module/rdma_mroce/parameters/udp_port 2>/dev/null)
if [ "$port" = "$MROCE_PORT_DEFAULT" ]; then
	tb_ok "default udp_port is $MROCE_PORT_DEFAULT (not 4791)"
else
	tb_not_ok "default udp_port is $MROCE_PORT_DEFAULT (not 4791)" "udp_port=$port"
fi
check_fails "udp_port is read-only at run time" bash -c 'echo 5000 > /sys/module/rdma_mroce/parameters/udp_port'
check "debugfs object counters exist" test -r "$MROCE_DEBUGFS/objects"
check "rmmod" mroce_unload
check "module is gone after rmmod" test ! -d /sys/module/rdma_mroce
check "insmod udp_port=5000" mroce_load udp_port=5000
check "udp_port=5000 is applied" grep -qx 5000 /sys/module/rdma_mroce/parameters/udp_port
check "rmmod again" mroce_unload

# The transport tunables: ranges enforced at load and at run time.
pdir=/sys/module/rdma_mroce/parameters
check_fails "insmod paths=0 is refused" insmod "$MROCE_KO" paths=0
check_fails "insmod paths=65 is refused" insmod "$MROCE_KO" paths=65
check_fails "insmod rto_min_us=5 is refused" insmod "$MROCE_KO" rto_min_us=5
check "insmod paths=4 cc_target_us=500 rto_min_us=1000" mroce_load paths=4 cc_target_us=500 rto_min_us=1000
check "paths=4 cc_target_us=500 rto_min_us=1000 are applied" \
	bash -c "grep -qx 4 $pdir/paths && grep -qx 500 $pdir/cc_target_us && grep -qx 1000 $pdir/rto_min_us"
check_fails "writing paths=65 at run time is refused" bash -c "echo 65 > $pdir/paths"
check_fails "writing cc_target_us=0 at run time is refused" bash -c "echo 0 > $pdir/cc_target_us"
check_fails "writing rto_min_us=abc at run time is refused" bash -c "echo abc > $pdir/rto_min_us"
check "a refused write changes nothing" \
	bash -c "grep -qx 4 $pdir/paths && grep -qx 500 $pdir/cc_target_us && grep -qx 1000 $pdir/rto_min_us"
check "writing paths=16 at run time" bash -c "echo 16 > $pdir/paths && grep -qx 16 $pdir/paths"
check "netdev_seg is 1 by default" grep -qx 1 $pdir/netdev_seg
check_fails "writing netdev_seg=2 at run time is refused" bash -c "echo 2 > $pdir/netdev_seg"
check "writing netdev_seg=0 at run time" bash -c "echo 0 > $pdir/netdev_seg && grep -qx 0 $pdir/netdev_seg"
check "rx_batch is 1 by default" grep -qx 1 $pdir/rx_batch
check_fails "writing rx_batch=2 at run time is refused" bash -c "echo 2 > $pdir/rx_batch"
check "writing rx_batch=0 at run time" bash -c "echo 0 > $pdir/rx_batch && grep -qx 0 $pdir/rx_batch"
check "cc_share is 0 by default" grep -qx 0 $pdir/cc_share
check_fails "writing cc_share=2 at run time is refused" bash -c "echo 2 > $pdir/cc_share"
check "writing cc_share=1 at run time" bash -c "echo 1 > $pdir/cc_share && grep -qx 1 $pdir/cc_share"
check "rmmod after the tunables" mroce_unload
