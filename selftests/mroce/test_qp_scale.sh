#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Several RC QPs per peer under loss (issue 18, "scale targets, measured";
# bench/qp_scale.sh runs the same program with up to 4,000 QPs between two
# guests): build/selftests/mroce_qp_scale between mroce_a (ns_a) and
# mroce_b (ns_b), 1% netem loss on both veth ends, MROCE_QP_SCALE_QPS (32)
# QPs per peer.  Three runs, each with its KTAP relayed from both sides:
#   - 4 rounds of WRITE + SEND with immediate + READ back on every QP,
#     every byte verified at both ends; the client destroys its QPs forward
#     with WRITEs in flight on the others, the server reverse;
#   - QP 5's first WR is a WRITE to an invalid rkey: it fails with a remote
#     access error while every other QP completes and verifies its data
#     (2 rounds); client reverse, server interleaved;
#   - the same with QP 0 failing; client interleaved, server forward.
# Then every verbs object is released and the kernel log has no problem
# report.  Not a timed test: the limits are hang guards.  (The memory per
# QP that the program prints counts both sides here: one guest.)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

prog=$MROCE_BUILD/selftests/mroce_qp_scale
if [ ! -x "$prog" ]; then
	tb_not_ok "qp_scale" "$prog not built (make userspace)"
	exit 0
fi
A="ip netns exec ns_a"
B="ip netns exec ns_b"
log=${MROCE_OUT:+$MROCE_OUT/qp-scale-logs}
log=${log:-/tmp/mroce_qp_scale}
mkdir -p "$log"
qps=${MROCE_QP_SCALE_QPS:-32}

modprobe sch_netem 2>/dev/null
mroce_netns_devices
if [ -z "${ga:-}" ] || [ -z "${gb:-}" ]; then
	tb_not_ok "qp_scale: device setup" "mroce_link_setup failed"
	exit 0
fi
if tc -n ns_a qdisc add dev va root netem loss 1% &&
   tc -n ns_b qdisc add dev vb root netem loss 1%; then
	tb_ok "qp_scale: 1% netem loss on both veth ends"
else
	tb_not_ok "qp_scale: 1% netem loss on both veth ends" "tc failed"
fi

port=18720
# run NAME CLIENT_ORDER SERVER_ORDER [CLIENT_ARGS...]
run() {
	local name=$1 corder=$2 sorder=$3 spid rc_c rc_s
	shift 3
	port=$((port + 1))
	$B timeout "$(mroce_t 150)" "$prog" --qps "$qps" --port $port --destroy "$sorder" \
		--timeout "$(mroce_t 120)" mroce_b "$gb" >"$log/$port.srv" 2>&1 &
	spid=$!
	$A timeout "$(mroce_t 150)" "$prog" --qps "$qps" --port $port --destroy "$corder" \
		--timeout "$(mroce_t 120)" "$@" mroce_a "$ga" 10.12.0.2 >"$log/$port.cli" 2>&1
	rc_c=$?
	wait $spid
	rc_s=$?
	ktap_relay "qp_scale $name, client" <"$log/$port.cli"
	ktap_relay "qp_scale $name, server" <"$log/$port.srv"
	[ $rc_c = 0 ] && [ $rc_s = 0 ] ||
		echo "# qp_scale $name: client exit $rc_c, server exit $rc_s"
}
run "$qps QPs, 4 rounds, destroy forward/reverse" forward reverse --rounds 4
run "$qps QPs, QP 5 errors, destroy reverse/interleaved" reverse interleaved --rounds 2 --fail-qp 5
run "$qps QPs, QP 0 errors, destroy interleaved/forward" interleaved forward --rounds 2 --fail-qp 0

drops=0
for ns in ns_a:va ns_b:vb; do
	d=$(tc -s -n "${ns%%:*}" qdisc show dev "${ns##*:}" |
		sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' | head -1)
	drops=$((drops + ${d:-0}))
done
echo "# qp_scale: netem dropped $drops packets"
tc -n ns_a qdisc del dev va root 2>/dev/null
tc -n ns_b qdisc del dev vb root 2>/dev/null
mroce_check_released
if tb_dmesg_check; then
	tb_ok "qp_scale: kernel log is clean"
else
	tb_not_ok "qp_scale: kernel log is clean" "problem report in dmesg"
fi
mroce_netns_teardown
