#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# ibv_resize_cq through the mroce provider (build/selftests/mroce_resize_cq):
# unpolled completions moved by a grow and a shrink, each seen once and in
# order with the data checked, the EINVAL cases, and resizes under traffic
# from another thread.  Two devices in two network namespaces, one process.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

MROCE_RESIZE_CQ=$MROCE_BUILD/selftests/mroce_resize_cq

mroce_netns_devices
mroce_pair_prog resize_cq "$MROCE_RESIZE_CQ" 180
mroce_check_released
for d in mroce_a mroce_b; do
	bad=$(awk '$1 == "ring_bad_index" {print $2}' "$MROCE_DEBUGFS/$d/counters")
	if [ "${bad:-x}" = 0 ]; then
		tb_ok "$d: ring_bad_index 0"
	else
		tb_not_ok "$d: ring_bad_index 0" "ring_bad_index ${bad:-missing}"
	fi
done
mroce_netns_teardown
