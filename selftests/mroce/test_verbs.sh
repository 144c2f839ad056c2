#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# libibverbs through the mroce provider: devices, objects, QP states, errors.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

gid=$(mroce_link_setup mroce0 m0 m1 10.13.0.1)
modprobe rdma_rxe 2>/dev/null
rdma link add rxe0 type rxe netdev m1 2>/dev/null

check "ibv_devices lists mroce0" bash -c 'ibv_devices | grep -qw mroce0'
out=$(ibv_devinfo -d mroce0 -v 2>&1)
echo "$out" | sed 's/^/# /'
case "$out" in
*"hca_id:	mroce0"*) tb_ok "ibv_devinfo opens mroce0 through the provider" ;;
*) tb_not_ok "ibv_devinfo opens mroce0 through the provider" "no hca_id" ;;
esac
case "$out" in
*PORT_ACTIVE*) tb_ok "ibv_devinfo: port active" ;;
*) tb_not_ok "ibv_devinfo: port active" "no PORT_ACTIVE" ;;
esac
case "$out" in
*"link_layer:		Ethernet"*) tb_ok "ibv_devinfo: Ethernet link layer" ;;
*) tb_not_ok "ibv_devinfo: Ethernet link layer" "no Ethernet" ;;
esac
if [ -e /sys/class/infiniband/rxe0 ]; then
	# rxe0 has uverbs ABI 2; our provider (ABI 1) claiming it would fail.
	check "rxe0 still opens through librxe beside mroce" bash -c 'ibv_devinfo -d rxe0 | grep -q PORT_'
else
	tb_skip "rxe0 still opens through librxe beside mroce" "rdma_rxe not available"
fi

if [ -x "$MROCE_VERBS_OBJECTS" ]; then
	"$MROCE_VERBS_OBJECTS" mroce0 "$gid" 2>&1 | ktap_relay verbs
else
	tb_not_ok verbs "$MROCE_VERBS_OBJECTS not built"
fi
mroce_check_released
rdma link delete rxe0 2>/dev/null
rdma link delete mroce0
ip link del m0
mroce_unload
