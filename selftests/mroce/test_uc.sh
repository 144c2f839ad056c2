#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Unreliable connected QPs (IBV_QPT_UC) between two devices in two network
# namespaces, through the mroce provider (build/selftests/mroce_uc): SEND
# and WRITE(+IMM) with the bytes verified, ibv_create_qp and
# ibv_create_qp_ex + ibv_wr_*, READ/atomics refused, messages the
# responder cannot take dropped; then the same under 5% netem loss on the
# sender's veth: every completed receive holds exactly its message, some
# messages are dropped (counted as rx_uc_broken), the QPs stay in RTS;
# then packets forged from A's address at B's QPs (malformed, outside the
# MSN window, wrong transport, bad rkey or range, headless) complete and
# write nothing.  Last, rdma-core's ibv_uc_pingpong between the namespaces.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

MROCE_UC=$MROCE_BUILD/selftests/mroce_uc

# counter IBDEV NAME: a device counter from debugfs (-1 if absent).
counter() {
	local v
	v=$(awk -v n="$2" '$1 == n {print $2}' "$MROCE_DEBUGFS/$1/counters" 2>/dev/null)
	echo "${v:--1}"
}

mroce_netns_devices
if [ -x "$MROCE_UC" ]; then
	timeout "$(mroce_t 300)" "$MROCE_UC" mroce_a "$ga" mroce_b "$gb" basic 2>&1 |
		ktap_relay uc
	refused=$(counter mroce_b rx_uc_refused)
	nowqe=$(counter mroce_b rx_uc_no_wqe)
	if [ "$refused" -ge 3 ] && [ "$nowqe" -ge 1 ]; then
		tb_ok "uc: the responder counted the dropped messages"
	else
		tb_not_ok "uc: the responder counted the dropped messages" \
			"rx_uc_refused $refused (want >= 3), rx_uc_no_wqe $nowqe (want >= 1)"
	fi

	broken0=$(counter mroce_b rx_uc_broken)
	modprobe sch_netem >/dev/null 2>&1
	if ip netns exec ns_a tc qdisc add dev va root netem loss 5%; then
		timeout "$(mroce_t 300)" "$MROCE_UC" mroce_a "$ga" mroce_b "$gb" loss 2>&1 |
			ktap_relay uc
		drops=$(ip netns exec ns_a tc -s qdisc show dev va |
			awk '/dropped/ {sub(",", "", $7); print $7; exit}')
		ip netns exec ns_a tc qdisc del dev va root
		broken=$(( $(counter mroce_b rx_uc_broken) - broken0 ))
		echo "# netem dropped ${drops:-?} packets; rx_uc_broken +$broken"
		for n in rx_uc_msgs rx_uc_broken rx_uc_no_wqe rx_uc_refused; do
			check "uc: rdma statistic $n = debugfs ($(counter mroce_b $n))" \
				test "$(mroce_stat mroce_b $n)" = "$(counter mroce_b $n)"
		done
		if [ "$broken" -gt 0 ]; then
			tb_ok "uc: loss: the responder counted broken messages"
		else
			tb_not_ok "uc: loss: the responder counted broken messages" \
				"rx_uc_broken +$broken, netem dropped ${drops:-?}"
		fi
	else
		tb_not_ok "uc: loss" "tc qdisc add netem failed"
	fi

	# Forged packets from A's address (a socket in ns_a) at B's QPs.
	mal0=$(( $(counter mroce_b rx_malformed) + $(counter mroce_b rx_short) ))
	noqp0=$(counter mroce_b rx_no_qp)
	$A timeout "$(mroce_t 120)" "$MROCE_UC" mroce_a "$ga" mroce_b "$gb" forge 10.12.0.2 2>&1 |
		ktap_relay uc
	# 11 malformed packets: 10 fail the parser, 1 is too short for it
	mal=$(( $(counter mroce_b rx_malformed) + $(counter mroce_b rx_short) - mal0 ))
	noqp=$(( $(counter mroce_b rx_no_qp) - noqp0 ))
	if [ "$mal" -ge 11 ] && [ "$noqp" -ge 2 ]; then
		tb_ok "uc: forge: malformed and misdirected packets counted"
	else
		tb_not_ok "uc: forge: malformed and misdirected packets counted" \
			"rx_malformed + rx_short +$mal (want >= 11), rx_no_qp +$noqp (want >= 2)"
	fi
else
	tb_not_ok uc "$MROCE_UC not built"
fi

pair "ibv_uc_pingpong 4 KiB x 200, payload checked" \
	ibv_uc_pingpong -d mroce_b -g "$gb" -n 200 -s 4096 -c -- \
	ibv_uc_pingpong -d mroce_a -g "$ga" -n 200 -s 4096 -c 10.12.0.2
pair "ibv_uc_pingpong 1 B, events" \
	ibv_uc_pingpong -d mroce_b -g "$gb" -n 50 -s 1 -e -- \
	ibv_uc_pingpong -d mroce_a -g "$ga" -n 50 -s 1 -e 10.12.0.2

live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "every object released after the programs exit"
else
	tb_not_ok "every object released after the programs exit" "$live"
fi
mroce_netns_teardown
