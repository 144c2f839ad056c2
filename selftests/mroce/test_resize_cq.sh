#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# ibv_resize_cq through the mroce provider (build/selftests/mroce_resize_cq):
# unpolled completions moved by a grow and a shrink, each seen once and in
# order with the data checked, the EINVAL cases, and resizes under traffic
# from another thread.  Two devices in two network namespaces, one process.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

MROCE_RESIZE_CQ=$MROCE_BUILD/selftests/mroce_resize_cq

tb_netns_pair
ga=$(mroce_link_setup -n ns_a mroce_a va)
gb=$(mroce_link_setup -n ns_b mroce_b vb)
if [ -x "$MROCE_RESIZE_CQ" ]; then
	timeout "$(mroce_t 180)" "$MROCE_RESIZE_CQ" mroce_a "$ga" mroce_b "$gb" 2>&1 |
		ktap_relay resize_cq
else
	tb_not_ok resize_cq "$MROCE_RESIZE_CQ not built"
fi
live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "every object released after the program exits"
else
	tb_not_ok "every object released after the program exits" "$live"
fi
for d in mroce_a mroce_b; do
	bad=$(awk '$1 == "ring_bad_index" {print $2}' "$MROCE_DEBUGFS/$d/counters")
	if [ "${bad:-x}" = 0 ]; then
		tb_ok "$d: ring_bad_index 0"
	else
		tb_not_ok "$d: ring_bad_index 0" "ring_bad_index ${bad:-missing}"
	fi
done
ip netns exec ns_a rdma link delete mroce_a
ip netns exec ns_b rdma link delete mroce_b
ip netns del ns_a
ip netns del ns_b
