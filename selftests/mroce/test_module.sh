#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Module load/unload and parameter validation.
. "$(dirname "$0")/lib.sh"

mroce_unload
mroce_load; mroce_unload
check_fails "insmod udp_port=0 is refused" insmod "$MROCE_KO" udp_port=0
check_fails "insmod udp_port=65536 is refused" insmod "$MROCE_KO" udp_port=65536
check_fails "insmod udp_port=abc is refused" insmod "$MROCE_KO" udp_port=abc
if dmesg | grep -q 'mroce.*udp_port'; then
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
