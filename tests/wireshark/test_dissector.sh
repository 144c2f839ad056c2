#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tests/wireshark/test_dissector.sh MKPCAP - the Wireshark dissector
# (tools/wireshark/mroce.lua) against packets built by the protocol core:
# MKPCAP (mroce_mkpcap) writes one packet of every opcode, an ACK with a
# SACK and three ACK blocks, an RNR NAK and two XRC requests (XRCETH);
# tshark must decode them all
# as mroce, with every field and the ICRC as built, and flag the one
# packet of the --corrupt capture whose payload was damaged.  KTAP output.
set -uo pipefail
mkpcap=${1:?usage: $0 MKPCAP}
lua=$(cd "$(dirname "$0")/../../tools/wireshark" && pwd)/mroce.lua
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n $1"; [ -n "${2:-}" ] && echo "# $2"; }
check() {	# check NAME GOT WANT
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "got '$2', want '$3'"; fi
}

echo "KTAP version 1"
if ! command -v tshark >/dev/null; then
	echo "1..1"
	not_ok "tshark is installed (tools/setup.sh installs it)"
	exit 1
fi
"$mkpcap" "$tmp/ok.pcap" >/dev/null || { echo "1..1"; not_ok "mroce_mkpcap"; exit 1; }
"$mkpcap" "$tmp/bad.pcap" --corrupt >/dev/null
ts() {	# ts PCAP tshark-args...: fields (tab-separated become /)
	local f=$1
	shift
	tshark -X lua_script:"$lua" -r "$f" "$@" 2>>"$tmp/err" | tr '\t' /
}
bad='_ws.malformed || _ws.expert.severity >= 0x00600000 || mroce.rsvd.nonzero'
echo "1..15"
check "every packet decodes as mroce" \
	"$(ts "$tmp/ok.pcap" -T fields -e frame.protocols | grep -c ':mroce$')" 21
check "opcodes in order" \
	"$(ts "$tmp/ok.pcap" -T fields -e mroce.opcode | tr '\n' ' ')" \
	"0x01 0x02 0x03 0x04 0x05 0x06 0x07 0x08 0x09 0x0a 0x10 0x10 0x11 0x12 0x13 0x14 0x15 0x16 0x17 0x01 0x06 "
# the filter itself works: it finds the damaged packet of bad.pcap
check "no malformed packet, no expert warning or error" \
	"$(ts "$tmp/ok.pcap" -Y "$bad" -T fields -e frame.number | wc -l)/$(ts "$tmp/bad.pcap" -Y "$bad" -T fields -e frame.number)" "0/4"
check "every ICRC correct" \
	"$(ts "$tmp/ok.pcap" -T fields -e mroce.icrc.ok | sort | uniq -c | awk '{print $1 "x" $2}')" "21x1"
check "base header fields" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number == 4' -T fields -e mroce.path -e mroce.dqpn -e mroce.psn -e mroce.dsn -e mroce.msn -e mroce.tx_ts -e mroce.flags.first -e mroce.flags.last)" \
	"3/0x00000123/1000/2000/30/123456/1/0"
check "segment size (x 64 bytes) and an ACK's max_seg" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number == 4 || frame.number == 11' -T fields -e mroce.seg -e mroce.ack.max_seg | tr '\n' ' ')" \
	"21/ 0/1344 "
check "RETH and payload" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number == 4' -T fields -e mroce.reth.va -e mroce.reth.rkey -e mroce.reth.length -e mroce.payload_len)" \
	"0x00007f0000001000/0x00001234/300/100"
check "SACK bitmap as received PSN ranges" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number == 11' -T fields -e mroce.ack.sack_range | cut -d, -f1,2)" \
	"990-999,1001-1004"
check "ACK blocks: three, paths 0 5 63" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number == 11' -T fields -e mroce.ack.blocks -e mroce.blk.path)" \
	"3/0,5,63"
check "RNR NAK syndrome and timer" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number == 12' -T fields -e mroce.ack.syndrome -e mroce.ack.rnr_timer)" \
	"1/14"
check "atomic and datagram headers" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number == 10 || frame.number == 14' -T fields -e mroce.atketh.orig -e mroce.deth.qkey -e mroce.deth.src_qpn | tr '\n' ' ')" \
	"0x1122334455667788// /0x80010000/0x00000456 "
check "UC headers (UC_WRITE_IMM: RETH, SETH, IMETH)" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number == 19' -T fields -e mroce.opcode -e mroce.msn -e mroce.reth.va -e mroce.reth.rkey -e mroce.seth.length -e mroce.imeth.imm)" \
	"0x17/77/0x00007f0000002000/0x00004321/100/0x00000033"
check "XRC: the XRCETH after the SETH and after the RETH" \
	"$(ts "$tmp/ok.pcap" -Y 'frame.number >= 20' -T fields -e mroce.flags.xrc -e mroce.seth.length -e mroce.reth.rkey -e mroce.xrceth.srqn | tr '\n' ' ')" \
	"1/100//0x00abcdef 1//0x00005678/0x00000042 "
check "a damaged payload fails its ICRC, only there" \
	"$(ts "$tmp/bad.pcap" -Y 'mroce.icrc.bad' -T fields -e frame.number | tr '\n' ' ')" "4 "
check "no Lua error" "$(grep -ci 'lua' "$tmp/err")" 0
echo "# $((n - fail)) passed, $fail failed"
[ "$fail" = 0 ]
