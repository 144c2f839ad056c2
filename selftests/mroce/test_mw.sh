#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Memory windows (type 1 and 2) and user-space LOCAL_INV / SEND_WITH_INV
# through the mroce provider (build/selftests/mroce_mw): binds, accesses
# through the windows' rkeys checked byte by byte, invalidation, the error
# completions and the lifetime rules (see mw.cpp).  Two devices in two
# network namespaces, one process.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

MROCE_MW=$MROCE_BUILD/selftests/mroce_mw

mroce_netns_devices
if [ -x "$MROCE_MW" ]; then
	timeout "$(mroce_t 300)" "$MROCE_MW" mroce_a "$ga" mroce_b "$gb" 2>&1 |
		ktap_relay mw
	# A process that exits with windows bound to a region: the kernel's
	# cleanup (the region's dereg fails until the windows are gone) must
	# release everything, without a kernel warning.
	timeout "$(mroce_t 120)" "$MROCE_MW" mroce_a "$ga" mroce_b "$gb" --exit-bound 2>&1 |
		ktap_relay mw_exit
else
	tb_not_ok mw "$MROCE_MW not built"
fi
mroce_check_released
mroce_netns_teardown
