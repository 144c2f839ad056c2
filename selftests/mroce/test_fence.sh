#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# IBV_SEND_FENCE through the mroce provider (build/selftests/mroce_fence):
# a WRITE or SEND fenced behind a READ or a fetch-and-add reaches the
# responder only after the READ's data (the atomic's result) is at the
# requester, and the READ returns the bytes from before the WRITE; with
# ibv_post_send and the ibv_wr_* API.  Two devices in two network
# namespaces, one process.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

MROCE_FENCE=$MROCE_BUILD/selftests/mroce_fence

tb_netns_pair
ga=$(mroce_link_setup -n ns_a mroce_a va)
gb=$(mroce_link_setup -n ns_b mroce_b vb)
if [ -x "$MROCE_FENCE" ]; then
	timeout "$(mroce_t 240)" "$MROCE_FENCE" mroce_a "$ga" mroce_b "$gb" 2>&1 |
		ktap_relay fence
else
	tb_not_ok fence "$MROCE_FENCE not built"
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
