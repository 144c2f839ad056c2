#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Tear-down under traffic: while RC WRITEs stream between two namespaces,
# delete one link, then unload the module with the other still carrying
# traffic.  The clients must fail cleanly, every object must be released
# and the kernel log stay clean (run_guest.sh checks it at the end).
set -uo pipefail
. "$(dirname "$0")/lib.sh"

start_stream() {	# start_stream PORT: ib_write_bw for 60 s in both namespaces
	ip netns exec ns_b timeout "$((60 + $(mroce_t 30)))" ib_write_bw -d mroce_b -x "$gb" -s 65536 -D 60 -F \
		-p "$1" >/tmp/unl_srv_$1.log 2>&1 &
	srv=$!
	sleep 1
	# The server may not listen yet on a loaded host: a client whose
	# connect was refused tries again (else the server waits to its
	# timeout and the test reads a hang).
	for _ in 1 2 3 4 5 6; do
		ip netns exec ns_a timeout "$((60 + $(mroce_t 30)))" ib_write_bw -d mroce_a -x "$ga" -s 65536 -D 60 -F \
			-p "$1" 10.12.0.2 >/tmp/unl_cli_$1.log 2>&1 &
		cli=$!
		sleep 1
		kill -0 $cli 2>/dev/null && break
		wait $cli
		grep -qiE "couldn't connect|Connection refused" /tmp/unl_cli_$1.log || break
	done
}

tx_a() { awk '$1 == "tx_packets" {print $2}' "$MROCE_DEBUGFS/mroce_a/counters"; }
# tx_grew COUNTER_BEFORE: tx_packets of mroce_a grew by 100 since then
tx_grew() { [ "$(tx_a)" -gt "$(($1 + 100))" ]; }

mroce_netns_devices

start_stream 18600
t0=$(tx_a)
sleep 4
check "traffic is flowing before the link delete" wait_for tx_grew "$t0"
check "rdma link delete under traffic returns" timeout "$(mroce_t 60)" ip netns exec ns_b rdma link delete mroce_b
wait $cli; rc_c=$?
wait $srv; rc_s=$?
check "both clients ended (rc $rc_c/$rc_s) instead of hanging" \
	test "$rc_c" != 124 -a "$rc_s" != 124

gb=$(mroce_link_setup -n ns_b mroce_b vb)
start_stream 18601
t0=$(tx_a)
sleep 4
check "traffic flows again on a new link" wait_for tx_grew "$t0"
check "rmmod under traffic returns" timeout "$(mroce_t 60)" rmmod rdma_mroce
wait $cli; rc_c=$?
wait $srv; rc_s=$?
check "both clients ended after rmmod (rc $rc_c/$rc_s)" test "$rc_c" != 124 -a "$rc_s" != 124
check "module is gone" test ! -d /sys/module/rdma_mroce
ip netns del ns_a
ip netns del ns_b
