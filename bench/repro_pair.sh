#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/repro_pair.sh - reproduce an mroce RC failure between the two
# testbed guests with the sender's per-path state sampled every 50 ms:
#
#   tools/testbed/tb pair --out DIR bench/repro_pair.sh bench/repro_pair.sh
#
# Runs `ib_send_bw -s 65536 -n 200` then `ib_write_bw -s 65536 -n 500`
# (guest a client, guest b server).  DIR/a/paths.timeline holds the
# sender's /sys/kernel/debug/mroce/mroce0/paths samples every 20 ms ("t
# <epoch>" lines between them; DIR/b/paths.timeline the receiver's),
# DIR/{a,b}/counters.* the device counters after each test.
set -uo pipefail
. /mroce/bench/common.sh
G=$(mroce_link_setup mroce0 eth0) || exit 1
rc=0
if [ "$MROCE_ROLE" = b ]; then
	(
		while :; do
			echo "t $EPOCHREALTIME"
			cat "$MROCE_DEBUGFS/mroce0/paths"
			sleep 0.02
		done
	) >/out/paths.timeline 2>/dev/null &
	timeout 30 ib_send_bw -d mroce0 -x "$G" -F -s 65536 -n 200 >/out/send_srv.log 2>&1
	echo "send server rc $?"
	cp "$MROCE_DEBUGFS/mroce0/counters" /out/counters.send
	timeout 30 ib_write_bw -d mroce0 -x "$G" -F -s 65536 -n 500 >/out/write_srv.log 2>&1
	echo "write server rc $?"
	cp "$MROCE_DEBUGFS/mroce0/counters" /out/counters
	exit 0
fi
tb_wait_ping 10.11.0.2 || exit 1
(
	while :; do
		echo "t $EPOCHREALTIME"
		cat "$MROCE_DEBUGFS/mroce0/paths"
		sleep 0.02
	done
) >/out/paths.timeline 2>/dev/null &
sampler=$!
for t in send write; do
	n=200
	[ $t = write ] && n=500
	for _ in $(seq 10); do
		timeout 120 ib_${t}_bw -d mroce0 -x "$G" -F -s 65536 -n $n 10.11.0.2 >/out/$t.log 2>&1
		r=$?
		grep -qiE "couldn't connect|Unable to init" /out/$t.log || break
		sleep 1
	done
	echo "ib_${t}_bw client rc $r at $EPOCHREALTIME"
	cp "$MROCE_DEBUGFS/mroce0/counters" /out/counters.$t
	grep -E "Failed status|^ 65536" /out/$t.log
	[ $r = 0 ] || rc=1
	sleep 3
done
kill $sampler
cat "$MROCE_DEBUGFS/mroce0/counters" >/out/counters
exit $rc
