#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# ibv_rereg_mr through the mroce provider (build/selftests/mroce_rereg_mr):
# a remote WRITE into a region, then CHANGE_TRANSLATION, CHANGE_ACCESS and
# CHANGE_PD alone and together, the error cases, and reregs while WRITEs
# use the region.  Two devices in two network namespaces, one process.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

MROCE_REREG_MR=$MROCE_BUILD/selftests/mroce_rereg_mr

tb_netns_pair
ga=$(mroce_link_setup -n ns_a mroce_a va)
gb=$(mroce_link_setup -n ns_b mroce_b vb)
if [ -x "$MROCE_REREG_MR" ]; then
	timeout "$(mroce_t 300)" "$MROCE_REREG_MR" mroce_a "$ga" mroce_b "$gb" 2>&1 |
		ktap_relay rereg_mr
else
	tb_not_ok rereg_mr "$MROCE_REREG_MR not built"
fi
live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "every object released after the program exits"
else
	tb_not_ok "every object released after the program exits" "$live"
fi
ip netns exec ns_a rdma link delete mroce_a
ip netns exec ns_b rdma link delete mroce_b
ip netns del ns_a
ip netns del ns_b
