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

mroce_netns_devices
mroce_pair_prog srq_cq_ex "$MROCE_SRQ_CQ_EX" 240
mroce_check_released
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
mroce_netns_teardown
