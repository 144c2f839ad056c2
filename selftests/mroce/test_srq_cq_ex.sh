#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Completion timestamps, SRQ resize and SRQ limit events through the mroce
# provider (build/selftests/mroce_srq_cq_ex): stamps bracketed by the
# matching clocks, an SRQ grown and shrunk with receives outstanding and
# under traffic (every message once, in order, bytes checked), the EINVAL
# cases, hostile ring indices and driver commands, and
# IBV_EVENT_SRQ_LIMIT_REACHED exactly once per arming.  Two
# devices in two network namespaces, one process.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

MROCE_SRQ_CQ_EX=$MROCE_BUILD/selftests/mroce_srq_cq_ex

tb_netns_pair
ga=$(mroce_link_setup -n ns_a mroce_a va)
gb=$(mroce_link_setup -n ns_b mroce_b vb)
if [ -x "$MROCE_SRQ_CQ_EX" ]; then
	timeout "$(mroce_t 240)" "$MROCE_SRQ_CQ_EX" mroce_a "$ga" mroce_b "$gb" 2>&1 |
		ktap_relay srq_cq_ex
else
	tb_not_ok srq_cq_ex "$MROCE_SRQ_CQ_EX not built"
fi
live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "every object released after the program exits"
else
	tb_not_ok "every object released after the program exits" "$live"
fi
# mroce_b: exactly the one overrun producer index of the hostile case.
for d in mroce_a:0 mroce_b:1; do
	want=${d#*:}
	d=${d%:*}
	bad=$(awk '$1 == "ring_bad_index" {print $2}' "$MROCE_DEBUGFS/$d/counters")
	if [ "${bad:-x}" = "$want" ]; then
		tb_ok "$d: ring_bad_index $want"
	else
		tb_not_ok "$d: ring_bad_index $want" "ring_bad_index ${bad:-missing}"
	fi
done
ip netns exec ns_a rdma link delete mroce_a
ip netns exec ns_b rdma link delete mroce_b
ip netns del ns_a
ip netns del ns_b
