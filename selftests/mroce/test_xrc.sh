#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# XRC (extended reliable connected) through the mroce provider: the
# verbs program build/selftests/mroce_xrc (XRC domains and SRQs, initiator
# and target QPs, every SEND dispatched to the XRC SRQ it names with its
# bytes checked, RDMA through a target checked against the PD of the named
# SRQ, the refusals and the remote errors), then rdma-core's
# ibv_xsrq_pingpong between two devices in two network namespaces, with 1
# and with 3 clients of one server.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

MROCE_XRC=$MROCE_BUILD/selftests/mroce_xrc

mroce_netns_devices
mroce_pair_prog xrc "$MROCE_XRC" 240
if command -v ibv_xsrq_pingpong >/dev/null; then
	pair "ibv_xsrq_pingpong 1 client, 4 KiB x 20" \
		ibv_xsrq_pingpong -d mroce_b -g "$gb" -m 1024 -n 20 -p 18611 -- \
		ibv_xsrq_pingpong -d mroce_a -g "$ga" -m 1024 -n 20 -p 18611 10.12.0.2
	# One server, three client processes: the server's XRC SRQ takes the
	# SENDs of three target QPs, and each client's SRQ the server's.
	$B timeout "$(mroce_t 120)" ibv_xsrq_pingpong -d mroce_b -g "$gb" -m 1024 -n 50 \
		-s 64 -e -c 3 -p 18612 >"$log/xsrq3.srv" 2>&1 &
	spid=$!
	sleep 1
	cpids=()
	for i in 1 2 3; do
		$A timeout "$(mroce_t 120)" ibv_xsrq_pingpong -d mroce_a -g "$ga" -m 1024 \
			-n 50 -s 64 -e -p 18612 10.12.0.2 >"$log/xsrq3.cli$i" 2>&1 &
		cpids+=($!)
		sleep 0.3
	done
	rcs=""
	for p in "${cpids[@]}" "$spid"; do
		wait "$p"
		rcs="$rcs $?"
	done
	if [ "$rcs" = " 0 0 0 0" ]; then
		tb_ok "ibv_xsrq_pingpong 3 clients, 64 B x 50, events"
	else
		tb_not_ok "ibv_xsrq_pingpong 3 clients, 64 B x 50, events" "exit codes$rcs"
		tail -5 "$log"/xsrq3.* | sed 's/^/# /'
	fi
else
	tb_not_ok "ibv_xsrq_pingpong" "not installed"
fi
mroce_check_released
mroce_netns_teardown
