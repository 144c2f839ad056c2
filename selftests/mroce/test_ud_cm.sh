#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# UD datagrams and the GSI QP: ibv_ud_pingpong, then rdma_cm (which runs
# its CM MADs over QP1) with rping -V (payload verified), ucmatose and
# perftest with -R, between two network namespaces.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

mroce_netns_devices

pair "ibv_ud_pingpong 1 KiB x 100" \
	ibv_ud_pingpong -d mroce_b -g "$gb" -n 100 -s 1024 -- \
	ibv_ud_pingpong -d mroce_a -g "$ga" -n 100 -s 1024 10.12.0.2
pair "rping -V, 20 iterations over rdma_cm" \
	rping -s -a 10.12.0.2 -C 20 -S 4096 -V -- \
	rping -c -a 10.12.0.2 -C 20 -S 4096 -V
pair "ucmatose" \
	ucmatose -b 10.12.0.2 -c 2 -C 10 -- \
	ucmatose -s 10.12.0.2 -c 2 -C 10
pair "ib_write_bw -R (rdma_cm connection)" \
	ib_write_bw -d mroce_b -R -s 65536 -n 100 -F -- \
	ib_write_bw -d mroce_a -R -s 65536 -n 100 -F 10.12.0.2
pair "ib_send_lat -R (rdma_cm connection)" \
	ib_send_lat -d mroce_b -R -s 64 -n 100 -F -- \
	ib_send_lat -d mroce_a -R -s 64 -n 100 -F 10.12.0.2

for d in mroce_a mroce_b; do
	c=$MROCE_DEBUGFS/$d/counters
	bad=$(awk '$1 == "rx_malformed" {print $2}' "$c")
	if [ "${bad:-1}" = 0 ]; then
		tb_ok "$d: no malformed datagrams"
	else
		tb_not_ok "$d: no malformed datagrams" "rx_malformed ${bad:-?}"
	fi
done
ip netns exec ns_a rdma link delete mroce_a
ip netns exec ns_b rdma link delete mroce_b
if wait_for bash -c '[ -z "$(awk '"'"'$2 != 0'"'"' '"$MROCE_DEBUGFS"'/objects)" ]'; then
	tb_ok "ud/cm: no live objects after the clients exit"
else
	tb_not_ok "ud/cm: no live objects after the clients exit" "$(mroce_live_objects | tr '\n' ' ')"
fi
ip netns del ns_a
ip netns del ns_b
