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

mroce_netns_devices
mroce_pair_prog fence "$MROCE_FENCE" 240
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
