#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# End-to-end integrity and error paths with mroce_verify (verify.cpp): both
# ends of RC connections between mroce_a (ns_a) and mroce_b (ns_b), every
# byte checked, lossless and then through netem loss and reordering; in
# both, several QPs to the same peer share one congestion group (cc_share=1
# for these runs, debugfs ccgroups), are reset, moved to ERR and destroyed
# in mixed orders.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

VERIFY=$MROCE_BUILD/selftests/mroce_verify
mroce_netns_devices

# run_verify NAME ARGS...: the tool's KTAP lines become diagnostics, its
# exit status one result.
run_verify() {
	local name=$1 out
	shift
	out=$(timeout "$(mroce_t 600)" "$VERIFY" "$@" mroce_a "$ga" mroce_b "$gb" 2>&1)
	local rc=$?
	echo "$out" | sed 's/^/# /'
	if [ $rc = 0 ]; then
		tb_ok "$name"
	else
		tb_not_ok "$name" "mroce_verify exited $rc"
	fi
}

# Congestion groups are off by default (cc_share=0): on for the group runs.
echo 1 > /sys/module/rdma_mroce/parameters/cc_share
run_verify "verify: lossless, 1 B..16 MiB, all operations, error paths, 8 QPs in a group" \
	--iters 150 --max-size 16777216 --seed 11 \
	--group-qps 8 --debugfs "$MROCE_DEBUGFS"
ip netns exec ns_a tc qdisc replace dev va root netem loss 2% reorder 10% 50% delay 1ms
ip netns exec ns_b tc qdisc replace dev vb root netem loss 1%
run_verify "verify: 2%/1% loss and reordering, 1 B..4 MiB, 4 QPs in a group" \
	--iters 100 --max-size 4194304 --seed 12 --skip-errors \
	--group-qps 4 --debugfs "$MROCE_DEBUGFS"
ip netns exec ns_a tc qdisc del dev va root
ip netns exec ns_b tc qdisc del dev vb root
echo 0 > /sys/module/rdma_mroce/parameters/cc_share
malformed=$(awk '$1 == "rx_malformed" {print $2}' "$MROCE_DEBUGFS/mroce_b/counters")
check "no packet failed validation" test "${malformed:-1}" = 0
mroce_netns_teardown
