#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The Wireshark dissector (tools/wireshark/mroce.lua) on real traffic:
# dumpcap records the veth of namespace ns_a while RC (SEND, WRITE, READ,
# atomics, every ibv_wr_* operation of mroce_wr_api), UC and UD traffic
# runs between mroce_a and mroce_b; then tshark must decode every mroce
# datagram of the capture, with no malformed packet and no expert warning
# or error, every ICRC correct, and opcode counts that match what the two
# devices counted: all datagrams = tx_packets, RC data = rc_tx_data, ACKs
# and NAKs = rc_tx_acks, and at least the operations each program posts.
# Needs the host's tshark and dumpcap (tb --hostroot; selftests/run.sh
# boots the guest so when this test is in its list).
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

lua=/mroce/tools/wireshark/mroce.lua
if ! command -v tshark >/dev/null || ! command -v dumpcap >/dev/null; then
	tb_skip "capture" "tshark or dumpcap not in the guest (Debian's tshark on the host, tb --hostroot)"
	exit 0
fi

mroce_netns_devices
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# total NAME: the counter summed over both devices.
total() { echo $(($(mroce_stat mroce_a "$1") + $(mroce_stat mroce_b "$1"))); }

pcap=$tmp/mroce.pcap
$A dumpcap -q -P -i va -f "udp port $(cat /sys/module/rdma_mroce/parameters/udp_port)" \
	-w "$pcap" >"$tmp/dumpcap.log" 2>&1 &
cap=$!
# dumpcap writes the pcap header once it captures (tshark's start is slow
# under TCG: up to 30 s).
for _ in $(seq $((300 * MROCE_TIME_FACTOR))); do
	[ -s "$pcap" ] && break
	sleep 0.1
done
if [ ! -s "$pcap" ]; then
	tb_not_ok "capture: dumpcap records va" "$(tr '\n' ' ' <"$tmp/dumpcap.log")"
	kill "$cap" 2>/dev/null
	mroce_netns_teardown
	exit 0
fi
tb_ok "capture: dumpcap records va"
pkts0=$(total tx_packets)
data0=$(total rc_tx_data)
acks0=$(total rc_tx_acks)

pair "capture: ibv_rc_pingpong 4 KiB x 50" \
	ibv_rc_pingpong -d mroce_b -g "$gb" -n 50 -s 4096 -m 1024 -c -- \
	ibv_rc_pingpong -d mroce_a -g "$ga" -n 50 -s 4096 -m 1024 -c 10.12.0.2
pair "capture: ib_write_bw 8 KiB x 100" \
	ib_write_bw -d mroce_b -x "$gb" -s 8192 -n 100 -F -- \
	ib_write_bw -d mroce_a -x "$ga" -s 8192 -n 100 -F 10.12.0.2
pair "capture: ib_read_bw 8 KiB x 100" \
	ib_read_bw -d mroce_b -x "$gb" -s 8192 -n 100 -F -- \
	ib_read_bw -d mroce_a -x "$ga" -s 8192 -n 100 -F 10.12.0.2
pair "capture: ib_atomic_bw compare-and-swap x 100" \
	ib_atomic_bw -d mroce_b -x "$gb" -n 100 -F -A CMP_AND_SWAP -- \
	ib_atomic_bw -d mroce_a -x "$ga" -n 100 -F -A CMP_AND_SWAP 10.12.0.2
pair "capture: ibv_uc_pingpong 4 KiB x 50" \
	ibv_uc_pingpong -d mroce_b -g "$gb" -n 50 -s 4096 -m 1024 -c -- \
	ibv_uc_pingpong -d mroce_a -g "$ga" -n 50 -s 4096 -m 1024 -c 10.12.0.2
pair "capture: ibv_ud_pingpong 1 KiB x 50" \
	ibv_ud_pingpong -d mroce_b -g "$gb" -n 50 -s 1024 -- \
	ibv_ud_pingpong -d mroce_a -g "$ga" -n 50 -s 1024 10.12.0.2
if [ -x "$MROCE_WR_API" ]; then
	$A timeout "$(mroce_t 120)" "$MROCE_WR_API" mroce_a "$ga" mroce_b "$gb" >"$tmp/wr_api.log" 2>&1
	check "capture: mroce_wr_api (every ibv_wr_* operation)" \
		test "$(grep -c '^not ok' "$tmp/wr_api.log")" = 0 -a -s "$tmp/wr_api.log"
else
	tb_not_ok "capture: mroce_wr_api" "$MROCE_WR_API not built"
fi
# The last ACKs of the last QPs, and no RC QP left to send more.
no_rc_qp() { test -z "$(rdma res show qp link mroce_a | grep -w RC)"; }
wait_for no_rc_qp
sleep 1
pkts=$(($(total tx_packets) - pkts0))
data=$(($(total rc_tx_data) - data0))
acks=$(($(total rc_tx_acks) - acks0))
kill -INT "$cap"
wait "$cap"
echo "# devices sent $pkts datagrams: $data RC data, $acks ACK/NAK"

# ts ARGS...: tshark with the dissector over the capture.
ts() { tshark -X lua_script:"$lua" -r "$pcap" "$@" 2>>"$tmp/tshark.err"; }
# One pass (tshark starts slowly under TCG): protocols, opcode, ICRC, the
# expert severities (warning 0x600000, error 0x800000), malformed, the
# segment size (x 64 bytes) and the payload length.
ts -T fields -e frame.protocols -e mroce.opcode -e mroce.icrc.ok \
	-e _ws.expert.severity -e _ws.malformed -e mroce.seg \
	-e mroce.payload_len >"$tmp/fields"
frames=$(wc -l <"$tmp/fields")
mroce=$(awk -F'\t' '$1 ~ /:mroce$/' "$tmp/fields" | wc -l)
echo "# capture: $frames frames, $mroce decoded as mroce"
check "capture: tshark decodes all $frames frames as mroce" \
	test "$frames" -gt 0 -a "$mroce" = "$frames"
check "capture: the capture holds every datagram the devices sent ($pkts)" \
	test "$frames" = "$pkts"
nbad=$(awk -F'\t' '{n = split($4, v, ","); for (i = 1; i <= n; i++)
	if (v[i] + 0 >= 6291456) $5 = "x"} $5 != ""' "$tmp/fields" | wc -l)
check "capture: no malformed packet, no expert warning or error ($nbad)" test "$nbad" = 0
icrc_ok=$(awk -F'\t' '$3 == 1' "$tmp/fields" | wc -l)
check "capture: every ICRC correct ($icrc_ok of $frames)" test "$icrc_ok" = "$frames"

# count OPCODE...: frames with one of these opcodes.
count() {
	local o re=
	for o in "$@"; do re="$re|$o"; done
	awk -F'\t' -v re="^(${re#|})\$" '$2 ~ re' "$tmp/fields" | wc -l
}
rc_data=$(count 0x01 0x02 0x03 0x04 0x05 0x06 0x07 0x08 0x09 0x0a)
n_ack=$(count 0x10)
echo "# opcodes: $(awk -F'\t' '{print $2}' "$tmp/fields" | sort | uniq -c | awk '{printf "%s x%s ", $2, $1}')"
check "capture: RC data packets = rc_tx_data ($rc_data, $data)" test "$rc_data" = "$data"
check "capture: ACKs and NAKs = rc_tx_acks ($n_ack, $acks)" test "$n_ack" = "$acks"
# What the programs post, at least (resends only add): 50 + 50 SENDs of 4
# packets, 100 WRITEs of 7 (1344-byte segments, spec 5.1a; 8 in the path
# MTU before the peer's first ACK), 100 READs answered by 7 packets each,
# 100 CMP_SWAPs, UC SENDs of 4 packets both ways, UD datagrams both ways.
ge() {	# ge NAME GOT MIN
	check "capture: $1: $2 >= $3" test "$2" -ge "$3"
}
ge SEND "$(count 0x01)" 400
ge WRITE "$(count 0x04)" 700
ge READ_REQ "$(count 0x06)" 100
ge READ_RESP "$(count 0x07)" 700
ge CMP_SWAP "$(count 0x08)" 100
ge ATOMIC_RESP "$(count 0x0a)" 100
ge "SEND_IMM, SEND_INV, WRITE_IMM, FETCH_ADD (mroce_wr_api)" \
	"$(count 0x02 0x03 0x05 0x09)" 4
ge UC_SEND "$(count 0x14)" 400
ge UD_SEND "$(count 0x12)" 100
# Segments as large as the veth's MTU 1500 carries (netdev_seg, spec
# 5.1a): RC data naming 1344 bytes (seg 21), none with a larger payload.
if [ "$(cat /sys/module/rdma_mroce/parameters/netdev_seg)" = 1 ]; then
	big=$(awk -F'\t' '$6 == 21' "$tmp/fields" | wc -l)
	over=$(awk -F'\t' '$7 + 0 > 1344' "$tmp/fields" | wc -l)
	check "capture: 1344-byte segments ($big packets), no payload above ($over)" \
		test "$big" -ge 1000 -a "$over" = 0
fi
mroce_netns_teardown
