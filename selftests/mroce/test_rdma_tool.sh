#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The rdma(8) tool's views of mroce: "rdma statistic show link" (the port
# counters: datagram counters and RC transport totals, mroce_hw_counters.c),
# "rdma statistic qp" (per-QP counters, manual and auto binding)
# and "rdma resource show qp -dd" (per-path attributes of an RC QP,
# mroce_restrack.c), around a streaming ib_write_bw between two network
# namespaces.  Asserts that the counters are there, move with traffic,
# agree between the two ends and never go backwards when the QPs are
# destroyed, and that a live RC QP shows sane per-path values.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

mroce_netns_devices

# The counters this test expects (Documentation/mroce.7, "COUNTERS").
names="rx_datagrams rx_dropped rx_short rx_malformed rx_no_qp rx_stale_qp
rx_qp_state rx_packets rx_rejected rx_ud_no_wqe rx_ud_qkey tx_packets
tx_errors mr_fast_reg mr_local_inv mr_remote_inv ring_bad_index
rx_uc_msgs rx_uc_broken rx_uc_no_wqe rx_uc_refused
rc_tx_data rc_rx_data rc_tx_acks rc_rx_acks rc_retx rc_lost rc_rtos
rc_tlps rc_spurious rc_steers rc_path_downs rc_ecn_ce rc_rnr_rounds
rc_nak_tx rc_nak_rx rc_rx_dup rc_acks_gap rc_acks_dup rc_acks_req
rc_acks_every rc_acks_other rc_acks_timer"

# stats IBDEV: "name value" per counter, from rdma -j statistic (the
# guest has no jq: the JSON object is flat).
stats() {
	rdma -j statistic show link "$1/1" | tr ',{}[]' '\n\n\n\n\n' |
		sed -n 's/^"\([a-z_0-9]*\)":\([0-9][0-9]*\)$/\1 \2/p'
}
# val FILE NAME: a value in a stats() snapshot ("" if absent).
val() { awk -v n="$2" '$1 == n {print $2}' "$1"; }
# num FILE NAME: a counter's value, -1 if absent (fails every check).
num() { local v; v=$(val "$1" "$2"); echo "${v:--1}"; }
# monotonic OLD NEW: every counter of OLD is present in NEW and not lower.
monotonic() {
	[ -s "$1" ] || { echo "no counters"; return 1; }
	awk 'NR == FNR {o[$1] = $2; next} {n[$1] = $2}
	     END {for (k in o) if (!(k in n) || n[k] < o[k]) {print k, o[k], n[k]; bad = 1}
		  exit bad}' "$1" "$2"
}

tmp=$(mktemp -d)
for d in mroce_a mroce_b; do
	stats $d >"$tmp/$d.0"
	missing=""
	for n in $names; do
		[ -n "$(val "$tmp/$d.0" "$n")" ] || missing="$missing $n"
	done
	if [ -z "$missing" ] && [ -s "$tmp/$d.0" ]; then
		tb_ok "$d: rdma statistic lists the $(wc -l <"$tmp/$d.0") counters"
	else
		rdma statistic show link $d/1 | sed 's/^/# /'
		tb_not_ok "$d: rdma statistic lists the counters" "missing:${missing:- all}"
	fi
done
check "plain output names the RC totals" \
	grep -q "rc_tx_data [0-9]" <<<"$(rdma statistic show link mroce_a/1)"

# Streaming WRITEs on two QPs, mroce_a (client) to mroce_b (server), long
# enough to look at the live QPs: the checks below took more than 8 s on a
# loaded host, and the QPs were gone before the last of them (25 s; 40 s
# since a run where they took 26 s).
$B timeout "$(mroce_t 120)" ib_write_bw -d mroce_b -x "$gb" -s 65536 -D 40 -q 2 -F \
	>"$log/rdma_tool.srv" 2>&1 &
spid=$!
sleep 1
cpid=""
t_start=$SECONDS
for i in 1 2 3 4 5 6; do
	$A timeout "$(mroce_t 120)" ib_write_bw -d mroce_a -x "$ga" -s 65536 -D 40 -q 2 -F \
		10.12.0.2 >"$log/rdma_tool.cli" 2>&1 &
	cpid=$!
	sleep 1
	kill -0 $cpid 2>/dev/null && break
	wait $cpid
	grep -qiE "couldn't connect|Connection refused" "$log/rdma_tool.cli" || break
done
# Data flows: a connection of mroce_a has sent more than 100 packets.
flowing=0
for ((i = 0; i < $(mroce_t 30) * 10; i++)); do
	if awk 'NR > 1 && $4 > 100 { f = 1 } END { exit !f }' "$MROCE_DEBUGFS/mroce_a/conns"; then
		flowing=1
		break
	fi
	sleep 0.1
done
[ $flowing = 1 ] || tb_not_ok "traffic starts" "no connection of mroce_a sent data"

# The first counter reading, right away while the QPs surely live (the
# checks below can outlast the transfer on a loaded host); the second
# after them.
stats mroce_a >"$tmp/mroce_a.1"
stats mroce_b >"$tmp/mroce_b.1"
rdma res show qp link mroce_a >"$tmp/res.alive" 2>&1
alive=$(grep -cw RC "$tmp/res.alive")
t_first=$((SECONDS - t_start))

# rdma resource, while the QPs live: the RC QP's driver attributes.
rdma -j -dd res show qp link mroce_a >"$tmp/res.json" 2>&1
rdma -dd res show qp link mroce_a >"$tmp/res.txt" 2>&1
# The first RC QP with paths, one "key value" per line (rdma -j names
# driver attributes drv_NAME; the prefix is dropped).
tr '{}' '\n\n' <"$tmp/res.json" | grep '"type":"RC"' | grep '"drv_num_paths":[1-9]' | head -1 |
	tr ',' '\n' | sed -n 's/^"\(drv_\)\{0,1\}\([a-z_0-9]*\)":"\{0,1\}\([^"]*\)"\{0,1\}$/\2 \3/p' >"$tmp/qp"
# The values in a bash array: no process per value (on a loaded host each
# one took a noticeable part of the transfer's lifetime).
declare -A qpv=()
while read -r k v; do qpv[$k]=$v; done <"$tmp/qp"
qv() { echo "${qpv[$1]:-}"; }
np=$(qv num_paths)
shown=$(qv paths_shown)
if [ -n "$np" ] && [ -n "$shown" ] && [ "$shown" -ge 1 ] && [ "$shown" -le "$np" ]; then
	tb_ok "rdma res -dd -j: RC QP $(qv lqpn) with $np paths, $shown shown"
else
	sed 's/^/# res -j: /' "$tmp/res.json" | head -20
	tb_not_ok "rdma res -dd -j: RC QP with paths" "num_paths ${np:-none} paths_shown ${shown:-none}"
	shown=0
fi
# Every shown path: sport a port number, distinct; state up or down;
# srtt below 10 s and non-zero on a path that carried data; cwnd > 0;
# inflight <= a few MiB; lost and retx numbers.
bad=""
up=0
srtt_seen=0
for ((p = 0; p < shown; p++)); do
	sp=${qpv[p${p}_sport]:-}
	st=${qpv[p${p}_state]:-}
	srtt=${qpv[p${p}_srtt_us]:-}
	cw=${qpv[p${p}_cwnd]:-}
	inf=${qpv[p${p}_inflight]:-}
	lost=${qpv[p${p}_lost]:-}
	retx=${qpv[p${p}_retx]:-}
	echo "# path $p: sport $sp $st srtt_us $srtt cwnd $cw inflight $inf lost $lost retx $retx"
	case "$sp$srtt$cw$inf$lost$retx" in
	"" | *[!0-9]*) bad="$bad p$p:non-numeric"; continue ;;
	esac
	[ "$sp" -ge 1 ] && [ "$sp" -le 65535 ] || bad="$bad p$p:sport=$sp"
	case "$st" in
	up) up=$((up + 1)) ;;
	down) ;;
	*) bad="$bad p$p:state=$st" ;;
	esac
	[ "$srtt" -lt 10000000 ] || bad="$bad p$p:srtt=$srtt"
	[ "$srtt" -gt 0 ] && srtt_seen=$((srtt_seen + 1))
	[ "$cw" -gt 0 ] || bad="$bad p$p:cwnd=$cw"
	[ "$inf" -le $((64 << 20)) ] || bad="$bad p$p:inflight=$inf"
done
dup=$(for ((p = 0; p < shown; p++)); do echo "${qpv[p${p}_sport]:-}"; done | sort | uniq -d)
[ -z "$dup" ] || bad="$bad duplicate-sports:$dup"
if [ "$shown" -gt 0 ] && [ -z "$bad" ] && [ $up -gt 0 ] && [ $srtt_seen -gt 0 ]; then
	tb_ok "per-path attributes sane ($up of $shown paths up, $srtt_seen with an RTT sample)"
else
	tb_not_ok "per-path attributes sane" "${bad:-none up or no RTT sample} (up $up, srtt $srtt_seen)"
fi
# Every RC QP has its driver attributes (an entry of 8 paths fills half
# of a netlink message: the dump goes on in the next one).
nrc=$(tr '{}' '\n\n' <"$tmp/res.json" | grep -c '"type":"RC"')
ndrv=$(tr '{}' '\n\n' <"$tmp/res.json" | grep '"type":"RC"' | grep -c '"drv_paths_shown":')
if [ "$nrc" -ge 2 ] && [ "$ndrv" = "$nrc" ]; then
	tb_ok "rdma res -dd -j: all $nrc RC QPs have per-path attributes"
else
	tb_not_ok "rdma res -dd -j: all RC QPs have per-path attributes" "$ndrv of $nrc RC QPs (want 2 or more)"
fi
# One QP by number (a single reply message rather than a dump).
lqpn=$(qv lqpn)
last=$((${shown:-1} - 1))
check "rdma res show qp lqpn ${lqpn:-?} -dd shows all $shown paths" \
	grep -q "p${last}_retx [0-9]" <<<"$(rdma -dd res show qp link mroce_a lqpn "${lqpn:-0}" 2>&1)"
check "rdma res -dd (text) shows p0_sport and p0_srtt_us" \
	grep -q "p0_sport [0-9].*p0_srtt_us [0-9]" <<<"$(tr '\n' ' ' <"$tmp/res.txt")"

# Per-QP counters (rdma statistic qp, ib_core's counter binding): bind the
# live QP to a new counter, see it count the QP's packets, unbind it.  The
# port totals, which include every counter, must not go backwards across
# (checked with the readings around this).
# qpstats FILE: "name value" of the first counter of mroce_a, and "cntn N".
qpstats() {
	rdma -j statistic qp show link mroce_a/1 | tr ',{}[]' '\n\n\n\n\n' |
		sed -n 's/^"\([a-z_0-9]*\)":\([0-9][0-9]*\)$/\1 \2/p' | awk '!seen[$1]++' >"$1"
}
if rdma statistic qp bind link mroce_a/1 lqpn "${lqpn:-0}" 2>"$tmp/bind.err"; then
	qpstats "$tmp/qpc.1"
	sleep 1
	qpstats "$tmp/qpc.2"
	cntn=$(val "$tmp/qpc.1" cntn)
	c1=$(num "$tmp/qpc.1" rc_tx_data)
	c2=$(num "$tmp/qpc.2" rc_tx_data)
	if [ -n "$cntn" ] && [ "$c1" -ge 0 ] && [ "$c2" -gt "$c1" ] &&
	   [ -n "$(val "$tmp/qpc.2" rc_rx_acks)" ]; then
		tb_ok "rdma statistic qp: counter $cntn of QP $lqpn counts its packets (rc_tx_data $c1 -> $c2)"
	else
		sed 's/^/# qp counter: /' "$tmp/qpc.2" | head -20
		tb_not_ok "rdma statistic qp: a bound QP's counter counts" "cntn ${cntn:-none} rc_tx_data $c1 -> $c2"
	fi
	rdma statistic qp unbind link mroce_a/1 cntn "${cntn:-0}" lqpn "$lqpn"
	check "rdma statistic qp unbind: the counter is released" \
		test -z "$(rdma statistic qp show link mroce_a/1)"
else
	tb_not_ok "rdma statistic qp bind link mroce_a/1 lqpn ${lqpn:-?}" "$(cat "$tmp/bind.err")"
fi

# Counters during the transfer: read twice, the second not lower.
stats mroce_a >"$tmp/mroce_a.2"
stats mroce_b >"$tmp/mroce_b.2"
if [ "$alive" -gt 0 ]; then
	tb_ok "first counter reading taken with $alive RC QPs alive"
	echo "# first reading ${t_first} s, second $((SECONDS - t_start)) s after the client started"
else
	echo "# first reading ${t_first} s after the client started"
	sed 's/^/# res: /' "$tmp/res.alive" | head -10
	tb_not_ok "first counter reading taken with RC QPs alive" "no RC QP listed right after traffic started"
fi
for d in mroce_a mroce_b; do
	if out=$(monotonic "$tmp/$d.1" "$tmp/$d.2"); then
		tb_ok "$d: counters do not go backwards during traffic"
	else
		tb_not_ok "$d: counters do not go backwards during traffic" "$(echo "$out" | tr "\n" " ")"
	fi
done

wait $cpid
rc_c=$?
wait $spid
rc_s=$?
if [ $rc_c = 0 ] && [ $rc_s = 0 ]; then
	tb_ok "ib_write_bw 64 KiB, 2 QPs, 40 s"
else
	sed 's/^/# cli: /' "$log/rdma_tool.cli" | tail -10
	sed 's/^/# srv: /' "$log/rdma_tool.srv" | tail -10
	tb_not_ok "ib_write_bw 64 KiB, 2 QPs, 40 s" "client rc $rc_c, server rc $rc_s"
fi

# The QPs are destroyed: their counts moved to the device totals.  Late
# packets may still arrive for a moment; then the totals are final.
sleep "$(mroce_t 2)"
stats mroce_a >"$tmp/mroce_a.3"
stats mroce_b >"$tmp/mroce_b.3"
for d in mroce_a mroce_b; do
	if out=$(monotonic "$tmp/$d.1" "$tmp/$d.3") && out=$(monotonic "$tmp/$d.2" "$tmp/$d.3"); then
		tb_ok "$d: counters after the QPs are destroyed >= while they lived"
	else
		tb_not_ok "$d: counters after the QPs are destroyed >= while they lived" "$(echo "$out" | tr "\n" " ")"
	fi
done
check "no RC QP left on mroce_a" \
	test -z "$(rdma res show qp link mroce_a | grep -w RC)"

a=$tmp/mroce_a.3
b=$tmp/mroce_b.3
for n in rc_tx_data rc_rx_data rc_tx_acks rc_rx_acks rc_retx rc_rtos rc_tlps rc_lost rc_steers rc_path_downs; do
	echo "# $n: mroce_a $(val $a $n) (was $(val $tmp/mroce_a.0 $n)), mroce_b $(val $b $n) (was $(val $tmp/mroce_b.0 $n))"
done
# WRITEs go a -> b, ACKs b -> a.  What a device received was sent by the
# other (a veth pair, nothing else on it): rx of one <= tx of the other.
atx=$(num $a rc_tx_data); brx=$(num $b rc_rx_data)
btx=$(num $b rc_tx_data); arx=$(num $a rc_rx_data)
atxa=$(num $a rc_tx_acks); arxa=$(num $a rc_rx_acks)
btxa=$(num $b rc_tx_acks); brxa=$(num $b rc_rx_acks)
if [ "$brx" -gt 1000 ] && [ "$atx" -ge "$brx" ] && [ "$btx" -ge "$arx" ]; then
	tb_ok "data packets: mroce_a sent $atx >= mroce_b received $brx (b sent $btx >= a received $arx)"
else
	tb_not_ok "data packets consistent" "a tx ${atx:-?} b rx ${brx:-?}, b tx ${btx:-?} a rx ${arx:-?}"
fi
if [ "$arxa" -gt 0 ] && [ "$btxa" -ge "$arxa" ] && [ "$atxa" -ge "$brxa" ]; then
	tb_ok "ACKs: mroce_b sent $btxa >= mroce_a received $arxa (a sent $atxa >= b received $brxa)"
else
	tb_not_ok "ACKs consistent" "b tx ${btxa:-?} a rx ${arxa:-?}, a tx ${atxa:-?} b rx ${brxa:-?}"
fi
# Every ACK is counted once by what made it due.
bwhy=0
for n in gap dup req every other timer; do
	bwhy=$((bwhy + $(num $b rc_acks_$n)))
done
if [ "$btxa" -gt 0 ] && [ "$bwhy" -eq "$btxa" ] && [ "$(num $b rc_acks_every)" -gt 0 ]; then
	tb_ok "mroce_b's ACKs by cause sum to rc_tx_acks ($bwhy), every-N among them"
else
	tb_not_ok "ACKs by cause sum to rc_tx_acks" "causes $bwhy, rc_tx_acks $btxa, every $(num $b rc_acks_every)"
fi
# Packets declared lost are what the sender resends; none is lost for good.
if [ "$(num $a rc_retx)" -le "$(num $a rc_lost)" ] || [ "$(num $a rc_tlps)" -gt 0 ] ||
   [ "$(num $a rc_rtos)" -gt 0 ]; then
	tb_ok "retransmissions ($(num $a rc_retx)) follow losses, TLPs or RTOs"
else
	tb_not_ok "retransmissions follow losses, TLPs or RTOs" \
		"retx $(num $a rc_retx) lost $(num $a rc_lost) tlps $(num $a rc_tlps) rtos $(num $a rc_rtos)"
fi
# The device's packet counters cover the transport's packets (a packet
# that could not be sent counts in tx_errors).
dtx=$(($(num $a tx_packets) + $(num $a tx_errors)))
if [ "$atx" -gt 0 ] && [ "$dtx" -ge $((atx + atxa)) ]; then
	tb_ok "mroce_a tx_packets + tx_errors $dtx >= RC data + ACKs $((atx + atxa))"
else
	tb_not_ok "mroce_a tx_packets + tx_errors cover RC data and ACKs" "$dtx, data $atx + ACKs $atxa"
fi
# sysfs shows the same counters (hw_counters), equal once all is quiet.
sysv=$(cat /sys/class/infiniband/mroce_a/ports/1/hw_counters/rc_tx_data 2>/dev/null)
check "sysfs hw_counters/rc_tx_data ($sysv) equals rdma statistic ($(num $a rc_tx_data))" \
	test "$sysv" = "$(stats mroce_a | awk '$1 == "rc_tx_data" {print $2}')"

# QPs taken back through RESET and connected again start new connections
# (the core's counters restart): every round's packets must stay in the
# totals.  3 rounds of 100 one-packet SENDs between two QPs of mroce_a.
reuse=$MROCE_BUILD/selftests/mroce_rc_reuse
if [ -x "$reuse" ]; then
	# With the counter auto mode on (every new RC QP bound to a counter
	# of its type): the counts go to the counter, which ib_core adds to
	# the port's totals, also after the QPs are gone.
	stats mroce_a >"$tmp/mroce_a.4"
	rdma statistic qp set link mroce_a/1 auto type on
	check "rdma statistic qp mode: auto type on" \
		grep -q "auto type on" <<<"$(rdma statistic qp mode link mroce_a/1)"
	$A timeout "$(mroce_t 120)" "$reuse" mroce_a "$ga" 3 100 >"$log/rdma_tool.reuse" 2>&1
	rc=$?
	rdma statistic qp set link mroce_a/1 auto off
	stats mroce_a >"$tmp/mroce_a.5"
	dtx=$(($(num "$tmp/mroce_a.5" rc_tx_data) - $(num "$tmp/mroce_a.4" rc_tx_data)))
	drx=$(($(num "$tmp/mroce_a.5" rc_rx_data) - $(num "$tmp/mroce_a.4" rc_rx_data)))
	if [ $rc = 0 ] && [ $dtx -ge 300 ] && [ $drx -ge 300 ]; then
		tb_ok "QPs reused through RESET: 3 x 100 SENDs, rc_tx_data +$dtx rc_rx_data +$drx"
	else
		sed 's/^/# reuse: /' "$log/rdma_tool.reuse" | tail -5
		tb_not_ok "QPs reused through RESET keep every round's counts" \
			"rc $rc, rc_tx_data +$dtx rc_rx_data +$drx (want >= 300)"
	fi
else
	tb_not_ok "QPs reused through RESET" "$reuse not built"
fi

ip netns exec ns_a rdma link delete mroce_a
ip netns exec ns_b rdma link delete mroce_b
if [ -z "$(mroce_live_objects)" ]; then
	tb_ok "rdma_tool: no live objects after the clients exit"
else
	tb_not_ok "rdma_tool: no live objects after the clients exit" "$(mroce_live_objects | tr '\n' ' ')"
fi
rm -rf "$tmp"
ip netns del ns_a
ip netns del ns_b
