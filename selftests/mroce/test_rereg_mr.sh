#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# ibv_rereg_mr through the mroce provider (build/selftests/mroce_rereg_mr):
# a remote WRITE into a region, then CHANGE_TRANSLATION, CHANGE_ACCESS and
# CHANGE_PD alone and together, the error cases, and reregs while WRITEs
# use the region.  Two devices in two network namespaces, one process.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

MROCE_REREG_MR=$MROCE_BUILD/selftests/mroce_rereg_mr

mroce_netns_devices
mroce_pair_prog rereg_mr "$MROCE_REREG_MR" 300
mroce_check_released
mroce_netns_teardown
