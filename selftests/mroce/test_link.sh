#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# rdma link add/delete, GIDs, network namespaces, netdev removal.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

mroce_load
tb_netns_pair
# The default namespace gets its own veth pair as well.
ip link add m0 type veth peer name m1
ip addr add 10.13.0.1/24 dev m0
ip link set m0 up
ip link set m1 up

check "rdma link add mroce0 on a veth" rdma link add mroce0 type mroce netdev m0
check "rdma link show lists mroce0" bash -c 'rdma link show | grep -q "mroce0/1.*netdev m0"'
check "mroce_abi_version attribute reads 2" grep -qx 2 /sys/class/infiniband/mroce0/mroce_abi_version
check_fails "mroce_abi_version is read-only" bash -c 'echo 3 > /sys/class/infiniband/mroce0/mroce_abi_version'
gid=$(tb_wait_gid mroce0)
if [ -n "$gid" ] && grep -q '0000:0000:0000:0000:0000:ffff:0a0d:0001' \
	"/sys/class/infiniband/mroce0/ports/1/gids/$gid"; then
	tb_ok "IPv4-mapped RoCE v2 GID follows the address"
else
	tb_not_ok "IPv4-mapped RoCE v2 GID follows the address" "gid index '$gid'"
fi
ip addr add 10.13.9.9/24 dev m0
if wait_for grep -qs 'ffff:0a0d:0909' /sys/class/infiniband/mroce0/ports/1/gids/*; then
	tb_ok "a second address adds a GID"
else
	tb_not_ok "a second address adds a GID" "no ::ffff:10.13.9.9"
fi
ip addr del 10.13.9.9/24 dev m0
if wait_for bash -c '! grep -qs "ffff:0a0d:0909" /sys/class/infiniband/mroce0/ports/1/gids/*'; then
	tb_ok "removing the address removes its GID"
else
	tb_not_ok "removing the address removes its GID" "still present"
fi
ip link set m0 down
if wait_for bash -c 'rdma link show mroce0/1 | grep -q "state DOWN"'; then
	tb_ok "port goes DOWN with the netdev"
else
	tb_not_ok "port goes DOWN with the netdev" "$(rdma link show mroce0/1)"
fi
ip link set m0 up
if wait_for bash -c 'rdma link show mroce0/1 | grep -q "state ACTIVE"'; then
	tb_ok "port comes back ACTIVE"
else
	tb_not_ok "port comes back ACTIVE" "$(rdma link show mroce0/1)"
fi
port_hex=$(printf '%04X' "$MROCE_PORT_DEFAULT")
check "UDP port $MROCE_PORT_DEFAULT is bound in init_net" grep -q ":$port_hex " /proc/net/udp

check_fails "second link on the same netdev is refused" rdma link add mroce9 type mroce netdev m0
check_fails "link on loopback (not Ethernet) is refused" rdma link add mroce8 type mroce netdev lo
check_fails "link on a missing netdev is refused" rdma link add mroce7 type mroce netdev nosuch0

# Inside a network namespace.
check "rdma link add inside netns ns_b" ip netns exec ns_b rdma link add mroce1 type mroce netdev vb
check "UDP port is bound inside ns_b" ip netns exec ns_b grep -q ":$port_hex " /proc/net/udp
check "ns_b device gets its GID" bash -c 'ip netns exec ns_b bash -c ". /mroce/tools/testbed/guest/lib.sh; tb_wait_gid mroce1" >/dev/null'
check "rdma link add inside netns ns_a" ip netns exec ns_a rdma link add mroce2 type mroce netdev va
check "delete in ns_a" ip netns exec ns_a rdma link delete mroce2
check "UDP port stays bound in ns_b after ns_a's device went" ip netns exec ns_b grep -q ":$port_hex " /proc/net/udp
# Removing the netdev removes the ib_device and the namespace's socket.
ip netns exec ns_b ip link del vb
if wait_for bash -c '! ip netns exec ns_b rdma link show 2>/dev/null | grep -q mroce1'; then
	tb_ok "netdev removal removes its mroce device"
else
	tb_not_ok "netdev removal removes its mroce device" "mroce1 still there"
fi
check "last device of ns_b gone: its UDP socket is closed" bash -c "! ip netns exec ns_b grep -q ':$port_hex ' /proc/net/udp"

check "rdma link delete mroce0" rdma link delete mroce0
check "mroce0 is gone" test ! -e /sys/class/infiniband/mroce0
check "UDP socket of init_net is closed" bash -c "! grep -q ':$port_hex ' /proc/net/udp"

# 100 add/delete cycles must leave nothing behind.
fails=0
for i in $(seq 100); do
	rdma link add mroce0 type mroce netdev m0 || fails=$((fails + 1))
	rdma link delete mroce0 || fails=$((fails + 1))
done
if [ $fails = 0 ]; then
	tb_ok "100 link add/delete cycles"
else
	tb_not_ok "100 link add/delete cycles" "$fails failures"
fi
live=$(mroce_live_objects)
if [ -z "$live" ] && [ -z "$(mroce_ibdevs)" ]; then
	tb_ok "no live objects or devices after the cycles"
else
	tb_not_ok "no live objects or devices after the cycles" "$live $(mroce_ibdevs)"
fi

# Unload with devices present (one per namespace).
rdma link add mroce0 type mroce netdev m0
ip netns exec ns_a rdma link add mroce2 type mroce netdev va
check "rmmod with two devices present" mroce_unload
check "no mroce device left" test -z "$(mroce_ibdevs)"
ip link del m0
ip netns del ns_a
ip netns del ns_b
