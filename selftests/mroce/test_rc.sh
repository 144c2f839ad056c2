#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# RC datapath between two network namespaces joined by veth: real
# rdma-core and perftest clients through our provider, with the payload
# checked end to end where the tool can (ibv_rc_pingpong -c) and the
# device counters checked afterwards.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

mroce_netns_devices
pair "ibv_rc_pingpong 4 KiB x 200, payload checked" \
	ibv_rc_pingpong -d mroce_b -g "$gb" -n 200 -s 4096 -c -- \
	ibv_rc_pingpong -d mroce_a -g "$ga" -n 200 -s 4096 -c 10.12.0.2
pair "ibv_rc_pingpong 1 B, payload checked" \
	ibv_rc_pingpong -d mroce_b -g "$gb" -n 50 -s 1 -c -- \
	ibv_rc_pingpong -d mroce_a -g "$ga" -n 50 -s 1 -c 10.12.0.2
pair "ibv_rc_pingpong 1 MiB, events, payload checked" \
	ibv_rc_pingpong -d mroce_b -g "$gb" -n 10 -s 1048576 -e -c -- \
	ibv_rc_pingpong -d mroce_a -g "$ga" -n 10 -s 1048576 -e -c 10.12.0.2
pair "ibv_srq_pingpong 4 QPs on one SRQ, payload checked" \
	ibv_srq_pingpong -d mroce_b -g "$gb" -n 100 -q 4 -s 4096 -c -- \
	ibv_srq_pingpong -d mroce_a -g "$ga" -n 100 -q 4 -s 4096 -c 10.12.0.2
pair "ibv_rc_pingpong new post-send API (-N), payload checked" \
	ibv_rc_pingpong -d mroce_b -g "$gb" -n 50 -s 4096 -N -c -- \
	ibv_rc_pingpong -d mroce_a -g "$ga" -n 50 -s 4096 -N -c 10.12.0.2
pair "ibv_rc_pingpong -N, events, 64 KiB" \
	ibv_rc_pingpong -d mroce_b -g "$gb" -n 20 -s 65536 -N -e -c -- \
	ibv_rc_pingpong -d mroce_a -g "$ga" -n 20 -s 65536 -N -e -c 10.12.0.2
# Every ibv_wr_* operation and the ibv_cq_ex API, from one process on
# both devices (RDMA devices are visible in every netns in shared mode).
if [ -x "$MROCE_WR_API" ]; then
	$A timeout "$(mroce_t 120)" "$MROCE_WR_API" mroce_a "$ga" mroce_b "$gb" 2>&1 | ktap_relay wr_api
else
	tb_not_ok wr_api "$MROCE_WR_API not built"
fi
for t in send write read; do
	pair "ib_${t}_bw 64 KiB" \
		ib_${t}_bw -d mroce_b -x "$gb" -s 65536 -n 200 -F -- \
		ib_${t}_bw -d mroce_a -x "$ga" -s 65536 -n 200 -F 10.12.0.2
	pair "ib_${t}_lat 64 B" \
		ib_${t}_lat -d mroce_b -x "$gb" -s 64 -n 200 -F -- \
		ib_${t}_lat -d mroce_a -x "$ga" -s 64 -n 200 -F 10.12.0.2
done
# The per-packet step (rx_batch=0; default: once per softirq batch,
# mroce_rxbatch.c) still moves data.
echo 0 > /sys/module/rdma_mroce/parameters/rx_batch
for t in send read; do
	pair "ib_${t}_bw 64 KiB, rx_batch=0" \
		ib_${t}_bw -d mroce_b -x "$gb" -s 65536 -n 200 -F -- \
		ib_${t}_bw -d mroce_a -x "$ga" -s 65536 -n 200 -F 10.12.0.2
done
echo 1 > /sys/module/rdma_mroce/parameters/rx_batch
pair "ib_atomic_bw fetch-and-add" \
	ib_atomic_bw -d mroce_b -x "$gb" -n 200 -F -A FETCH_AND_ADD -- \
	ib_atomic_bw -d mroce_a -x "$ga" -n 200 -F -A FETCH_AND_ADD 10.12.0.2
pair "ib_atomic_lat compare-and-swap" \
	ib_atomic_lat -d mroce_b -x "$gb" -n 200 -F -A CMP_AND_SWAP -- \
	ib_atomic_lat -d mroce_a -x "$ga" -n 200 -F -A CMP_AND_SWAP 10.12.0.2

for d in mroce_a mroce_b; do
	c=$MROCE_DEBUGFS/$d/counters
	tx=$(awk '$1 == "tx_packets" {print $2}' "$c")
	rx=$(awk '$1 == "rx_packets" {print $2}' "$c")
	# Late packets for a QP the peer's client already destroyed are
	# normal (rx_stale_qp, reported only); a datagram for a QP that
	# never was, or not from its peer, is not (rx_no_qp).
	bad=$(awk '$1 == "rx_malformed" || $1 == "rx_no_qp" {s += $2} END {print s + 0}' "$c")
	stale=$(awk '$1 == "rx_stale_qp" {print $2}' "$c")
	if [ "${tx:-0}" -gt 1000 ] && [ "${rx:-0}" -gt 1000 ] && [ "$bad" = 0 ]; then
		tb_ok "$d counters: tx $tx rx $rx, nothing malformed or misdirected (stale ${stale:-?})"
	else
		sed "s/^/# $d: /" "$c"
		tb_not_ok "$d counters" "tx ${tx:-?} rx ${rx:-?} malformed+no_qp $bad (stale ${stale:-?})"
	fi
done
# A peer that vanishes mid-transfer: the server is killed while the client
# streams, so the client's packets (retransmissions included) reach a
# destroyed QP.  They count as rx_stale_qp on mroce_b, never as rx_no_qp.
# The client must have WRITEs in flight when the server dies: a streaming
# ib_write_bw, not a ping-pong, which between exchanges has nothing unacked.
cnt() { awk -v n="$2" '$1 == n {print $2}' "$MROCE_DEBUGFS/$1/counters"; }
stale0=$(cnt mroce_b rx_stale_qp)
noqp0=$(cnt mroce_b rx_no_qp)
$B ib_write_bw -d mroce_b -x "$gb" -s 65536 -D 120 -F >/dev/null 2>&1 &
spid=$!
sleep 1
$A timeout "$(mroce_t 60)" ib_write_bw -d mroce_a -x "$ga" -s 65536 -D 120 -F \
	10.12.0.2 >/dev/null 2>&1 &
cpid=$!
# Kill the server only once data flows (the TCP exchange before it can take
# seconds on a loaded TCG host): a connection of mroce_a with tx_data > 100.
for ((i = 0; i < $(mroce_t 30) * 10; i++)); do
	awk 'NR > 1 && $4 > 100 { f = 1 } END { exit !f }' "$MROCE_DEBUGFS/mroce_a/conns" && break
	sleep 0.1
done
# While it streams: the receiver acknowledges paths together, the other
# paths with news riding along as ACK blocks (spec 6.2).  How many ACKs per
# data packet depends on the guests' speed (a packet arriving after the
# 10 us ACK delay gets its own ACK): 0.52 in one TCG run, against 0.74
# before ACK blocks; the check asserts blocks and a ratio below 0.9.
# Columns: 5 tx_acks, 8 rx_data, 23 tx_ack_blks.
for ((i = 0; i < $(mroce_t 30) * 10; i++)); do
	row=$(awk 'NR > 1 && $8 > 2000 { print; exit }' "$MROCE_DEBUGFS/mroce_b/conns")
	[ -n "$row" ] && break
	sleep 0.1
done
if [ -n "$row" ] && awk -v r="$row" 'BEGIN { split(r, f, " "); exit !(f[5] * 10 <= f[8] * 9 && f[23] > 0) }'; then
	tb_ok "bulk WRITE: ACKs coalesced across paths ($(echo "$row" | awk '{ print $5 " ACKs, " $23 " blocks, " $8 " data" }'))"
else
	tb_not_ok "bulk WRITE: ACKs coalesced across paths" "conns row: ${row:-none with rx_data > 2000}"
fi
kill -KILL $spid 2>/dev/null
wait $spid 2>/dev/null
sleep "$(mroce_t 2)"
kill -KILL $cpid 2>/dev/null
wait $cpid 2>/dev/null
stale=$(($(cnt mroce_b rx_stale_qp) - stale0))
noqp=$(($(cnt mroce_b rx_no_qp) - noqp0))
if [ "$stale" -gt 0 ] && [ "$noqp" = 0 ]; then
	tb_ok "killed peer: late packets are stale ($stale), none misdirected"
else
	tb_not_ok "killed peer: late packets are stale, none misdirected" "rx_stale_qp +$stale rx_no_qp +$noqp"
fi
ip netns exec ns_a rdma link delete mroce_a
ip netns exec ns_b rdma link delete mroce_b
if [ -z "$(mroce_live_objects)" ]; then
	tb_ok "rc: no live objects after the clients exit"
else
	tb_not_ok "rc: no live objects after the clients exit" "$(mroce_live_objects | tr '\n' ' ')"
fi
ip netns del ns_a
ip netns del ns_b
