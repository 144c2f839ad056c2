#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The mroce tracepoints (mroce_trace.h; Documentation/mroce.7, TRACEPOINTS)
# and dynamic debug.  Two devices in two network namespaces:
#  - events off: traffic records nothing;
#  - events on (tracefs), ib_write_bw with netem loss on va, then the QP
#    errors of build/selftests/mroce_trace_qp (a wrong rkey, RNR retries
#    exhausted): loss verdicts, window changes, QP state changes and
#    errors appear with sane fields, and the counts agree with the deltas
#    of "rdma statistic" (one RTO event per rc_rtos, the packets of the
#    RACK and RTO verdicts sum to rc_lost, ...);
#  - UD and UC drops (mroce_drop) from mroce_wr_api and mroce_uc, one
#    event per drop, equal to the rx_ud_* and rx_uc_* counter deltas;
#  - events off again: nothing more is recorded;
#  - dynamic debug ('module rdma_mroce +p') logs QP state changes.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

MROCE_TRACE_QP=$MROCE_BUILD/selftests/mroce_trace_qp
T=/sys/kernel/tracing
tmp=$(mktemp -d)

mroce_netns_devices

[ -e $T/trace ] || mount -t tracefs nodev $T 2>/dev/null
events="mroce_path_state mroce_steer mroce_loss mroce_spurious mroce_cwnd mroce_rnr
mroce_conn_error mroce_qp_create mroce_qp_destroy mroce_qp_state mroce_qp_error
mroce_drop"
missing=""
for e in $events; do
	[ -e "$T/events/mroce/$e/enable" ] || missing="$missing $e"
done
if [ -n "$missing" ] || [ ! -w $T/events/mroce/enable ]; then
	tb_not_ok "tracefs lists the mroce events" "missing:${missing:- $T/events/mroce}"
else
	tb_ok "tracefs lists the $(echo "$events" | wc -w) mroce events"
fi

# stats IBDEV: "name value" per counter (test_rdma_tool.sh).
stats() {
	rdma -j statistic show link "$1/1" | tr ',{}[]' '\n\n\n\n\n' |
		sed -n 's/^"\([a-z_0-9]*\)":\([0-9][0-9]*\)$/\1 \2/p'
}
# delta NAME DEV: a counter's change between $tmp/DEV.0 and $tmp/DEV.1.
delta() {
	awk -v n="$1" '$1 == n {v[FILENAME] = $2} END {print v[ARGV[2]] - v[ARGV[1]]}' \
		"$tmp/$2.0" "$tmp/$2.1"
}
# ev EVENT [KEY=VALUE...]: the recorded lines of EVENT with every KEY=VALUE.
ev() {
	local e=$1
	shift
	awk -v e="$e:" -v want="$*" '
		BEGIN { n = split(want, w, " ") }
		{
			for (i = 1; i <= NF && $i != e; i++)
				;
			if (i > NF)
				next
			for (k = 1; k <= n; k++) {
				hit = 0
				for (j = i + 1; j <= NF; j++)
					if ($j == w[k])
						hit = 1
				if (!hit)
					next
			}
			print
		}' "$tmp/trace"
}
nev() { ev "$@" | wc -l; }
# sumf FIELD EVENT [KEY=VALUE...]: the sum of FIELD over those lines.
sumf() {
	local f=$1
	shift
	ev "$@" | tr ' ' '\n' | awk -F= -v f="$f" '$1 == f {s += $2} END {print s + 0}'
}
# mroce_lines FILE: the mroce events in a trace file.
mroce_lines() { grep -cE ' mroce_[a-z_]+: ' "$1"; }

# "1408", or "7 (expanded: 1408)" before the buffer was first used.
old_size=$(sed 's/.*expanded: \([0-9]*\).*/\1/; s/ .*//' $T/buffer_size_kb 2>/dev/null)
echo 0 >$T/events/mroce/enable
echo 8192 >$T/buffer_size_kb
echo 1 >$T/tracing_on
echo >$T/trace

# 1. Events off: traffic records nothing.
pair "events off: ibv_rc_pingpong 4 KiB x 100" \
	ibv_rc_pingpong -d mroce_b -g "$gb" -n 100 -s 4096 -- \
	ibv_rc_pingpong -d mroce_a -g "$ga" -n 100 -s 4096 10.12.0.2
cat $T/trace >"$tmp/off1"
n=$(mroce_lines "$tmp/off1")
check "events off: nothing recorded ($n mroce lines)" test "$n" = 0

# 2. Events on: streaming WRITEs through 2% loss on va (a -> b), then the
# QP errors.
stats mroce_a >"$tmp/mroce_a.0"
stats mroce_b >"$tmp/mroce_b.0"
echo >$T/trace
echo 1 >$T/events/mroce/enable
modprobe sch_netem >/dev/null 2>&1
if ! tc -n ns_a qdisc add dev va root netem loss 2%; then
	tb_not_ok "netem loss on va" "tc qdisc add failed"
fi
pair "events on: ib_write_bw 64 KiB x 500 through 2% loss" \
	ib_write_bw -d mroce_b -x "$gb" -s 65536 -n 500 -F -- \
	ib_write_bw -d mroce_a -x "$ga" -s 65536 -n 500 -F 10.12.0.2
drops=$(tc -n ns_a -s qdisc show dev va | awk '/dropped/ {sub(",", "", $7); print $7; exit}')
tc -n ns_a qdisc del dev va root 2>/dev/null
echo "# netem dropped ${drops:-?} packets"
qpout=$tmp/trace_qp.out
if [ -x "$MROCE_TRACE_QP" ]; then
	$A timeout "$(mroce_t 120)" "$MROCE_TRACE_QP" mroce_a "$ga" mroce_b "$gb" >"$qpout" 2>&1
	ktap_relay trace_qp <"$qpout"
else
	tb_not_ok trace_qp "$MROCE_TRACE_QP not built"
	: >"$qpout"
fi
# Late packets of the destroyed QPs are counted nowhere; let them pass.
sleep "$(mroce_t 2)"
echo 0 >$T/events/mroce/enable
stats mroce_a >"$tmp/mroce_a.1"
stats mroce_b >"$tmp/mroce_b.1"
cat $T/trace >"$tmp/trace"
echo "# $(mroce_lines "$tmp/trace") mroce events recorded"
for e in $events; do
	echo "#   $e: $(nev "$e")"
done

# Nothing lost from the ring buffer, so that counts can be compared.
hdr=$(grep -m1 'entries-in-buffer/entries-written' "$tmp/trace")
inbuf=$(echo "$hdr" | sed -n 's/.*written: \([0-9]*\)\/\([0-9]*\).*/\1/p')
written=$(echo "$hdr" | sed -n 's/.*written: \([0-9]*\)\/\([0-9]*\).*/\2/p')
check "ring buffer kept every event (${inbuf:-?}/${written:-?})" \
	test -n "$inbuf" -a "$inbuf" = "$written"

# Every event names a device of ours and a QP; path indexes are small.
bad=$(grep -E ' mroce_[a-z_]+: ' "$tmp/trace" |
	grep -vE ' dev=mroce_[ab] qpn=[1-9][0-9]* ' | head -3)
badpath=$(grep -E ' mroce_[a-z_]+: ' "$tmp/trace" | tr ' ' '\n' |
	awk -F= '$1 == "path" && ($2 < -1 || $2 >= 64)' | head -3)
check "every event has dev=mroce_a|b, a QPN and a path below 64" \
	test -z "$bad$badpath"
[ -z "$bad$badpath" ] || echo "# bad: $bad $badpath"

# Loss verdicts agree with the counters, on both devices.
for d in mroce_a mroce_b; do
	rack=$(sumf count mroce_loss dev="$d" verdict=rack)
	rto_pkts=$(sumf count mroce_loss dev="$d" verdict=rto)
	rtos=$(nev mroce_loss dev="$d" verdict=rto)
	tlps=$(nev mroce_loss dev="$d" verdict=tlp)
	spur=$(nev mroce_spurious dev="$d")
	steers=$(($(nev mroce_steer dev="$d" reason=ecn) + $(nev mroce_steer dev="$d" reason=loss) +
		  $(nev mroce_steer dev="$d" reason=delay)))
	downs=$(nev mroce_path_state dev="$d" state=down)
	rnr=$(nev mroce_rnr dev="$d" nak=rx new_round=1)
	got="rtos $rtos lost $((rack + rto_pkts)) tlps $tlps spurious $spur steers $steers downs $downs rnr_rounds $rnr"
	want="rtos $(delta rc_rtos $d) lost $(delta rc_lost $d) tlps $(delta rc_tlps $d)"
	want="$want spurious $(delta rc_spurious $d) steers $(delta rc_steers $d)"
	want="$want downs $(delta rc_path_downs $d) rnr_rounds $(delta rc_rnr_rounds $d)"
	if [ "$got" = "$want" ]; then
		tb_ok "$d: events match rdma statistic ($got)"
	else
		tb_not_ok "$d: events match rdma statistic" "events: $got; counters: $want"
	fi
done
lost_a=$(($(sumf count mroce_loss dev=mroce_a verdict=rack) + $(sumf count mroce_loss dev=mroce_a verdict=rto)))
if [ "${drops:-0}" -gt 0 ]; then
	check "mroce_a: loss verdicts under loss ($lost_a packets, netem dropped $drops, retx +$(delta rc_retx mroce_a))" \
		test "$lost_a" -gt 0 -o "$(nev mroce_loss dev=mroce_a verdict=tlp)" -gt 0
else
	tb_skip "mroce_a: loss verdicts under loss" "netem dropped nothing"
fi
# Window changes: real ones only; cuts under loss; increases as well.
cw_bad=$(ev mroce_cwnd | tr ' ' '\n' | awk -F= '
	$1 == "old" {o = $2} $1 == "new" {n = $2}
	$1 == "reason" {
		if (o == n || n <= 0) bad++
		else if ($2 == "increase" && n < o) bad++
		else if (($2 == "loss" || $2 == "ecn" || $2 == "rto" || $2 == "delay") && n > o) bad++
		else if ($2 !~ /^(increase|loss|ecn|rto|delay|reset)$/) bad++
	} END {print bad + 0}')
cuts=$(($(nev mroce_cwnd dev=mroce_a reason=loss) + $(nev mroce_cwnd dev=mroce_a reason=rto) +
	$(nev mroce_cwnd dev=mroce_a reason=ecn) + $(nev mroce_cwnd dev=mroce_a reason=delay)))
incs=$(nev mroce_cwnd dev=mroce_a reason=increase)
check "cwnd events: $cuts cuts and $incs increases at mroce_a, $cw_bad inconsistent" \
	test "$cuts" -gt 0 -a "$incs" -gt 0 -a "$cw_bad" = 0

# The QPs of mroce_trace_qp: their life and their errors.
qpn() { awk -v p="$1" -v k="$2" '$2 == "pair" && $3 == p {for (i = 4; i < NF; i++) if ($i == k) print $(i + 1)}' "$qpout"; }
qa=$(qpn access a_qpn); qb=$(qpn access b_qpn)
ra=$(qpn rnr a_qpn); rb=$(qpn rnr b_qpn)
echo "# access pair: $qa -> $qb, rnr pair: $ra -> $rb"
lifecycle() {
	local d=$1 q=$2
	[ "$(nev mroce_qp_create dev="$d" qpn="$q" type=RC)" = 1 ] &&
	[ "$(nev mroce_qp_state dev="$d" qpn="$q" old=RESET new=INIT)" = 1 ] &&
	[ "$(nev mroce_qp_state dev="$d" qpn="$q" old=INIT new=RTR)" = 1 ] &&
	[ "$(nev mroce_qp_state dev="$d" qpn="$q" old=RTR new=RTS)" = 1 ] &&
	[ "$(nev mroce_qp_destroy dev="$d" qpn="$q" type=RC)" = 1 ]
}
if [ -n "$qa" ] && [ -n "$qb" ] && [ -n "$ra" ] && [ -n "$rb" ]; then
	check "QP $qa: create, RESET -> INIT -> RTR -> RTS, destroy" lifecycle mroce_a "$qa"
	check "QP $qb (peer): create, RESET -> INIT -> RTR -> RTS, destroy" lifecycle mroce_b "$qb"
	check "QP $ra: create, RESET -> INIT -> RTR -> RTS, destroy" lifecycle mroce_a "$ra"
	# A wrong rkey: the requester fails on the NAK it receives (status 10,
	# REM_ACCESS_ERR; syndrome 2, REM_ACCESS), the responder on its own.
	check "QP $qa: conn_error nak_rx status 10 syndrome 2" \
		test "$(nev mroce_conn_error dev=mroce_a qpn="$qa" reason=nak_rx status=10 syndrome=2)" = 1
	check "QP $qa: qp_error RTS -> ERR, a WR failed with status 10" \
		test "$(nev mroce_qp_error dev=mroce_a qpn="$qa" old=RTS reason=wc status=10)" = 1
	check "QP $qb: conn_error nak_tx status 10 syndrome 2" \
		test "$(nev mroce_conn_error dev=mroce_b qpn="$qb" reason=nak_tx status=10 syndrome=2)" = 1
	check "QP $qb: qp_error RTS -> ERR, connection failed with status 10" \
		test "$(nev mroce_qp_error dev=mroce_b qpn="$qb" old=RTS reason=conn status=10)" = 1
	# RNR: rnr_retry 1, so the second round fails (status 13).
	check "QP $rb: RNR NAKs sent ($(nev mroce_rnr dev=mroce_b qpn="$rb" nak=tx))" \
		test "$(nev mroce_rnr dev=mroce_b qpn="$rb" nak=tx)" -ge 2
	check "QP $ra: RNR rounds 1 and 2 received" \
		test "$(nev mroce_rnr dev=mroce_a qpn="$ra" nak=rx rounds=1 new_round=1)" = 1 -a \
		     "$(nev mroce_rnr dev=mroce_a qpn="$ra" nak=rx rounds=2 new_round=1)" = 1
	check "QP $ra: conn_error rnr_retry_exc status 13, qp_error status 13" \
		test "$(nev mroce_conn_error dev=mroce_a qpn="$ra" reason=rnr_retry_exc status=13 syndrome=1)" = 1 -a \
		     "$(nev mroce_qp_error dev=mroce_a qpn="$ra" old=RTS reason=wc status=13)" = 1
	check "no errors on the QPs of the lossy transfer" \
		test "$(($(nev mroce_conn_error reason=nak_rx) + $(nev mroce_conn_error reason=retry_exc)))" = 1
else
	tb_not_ok "QPNs of mroce_trace_qp" "not found in its output"
fi

# 2b. UD and UC receive drops (mroce_drop): mroce_wr_api sends B a UD
# datagram with a wrong Q_Key and one with no receive posted; mroce_uc's
# basic run has B refuse messages and miss receives, its loss run (5%
# netem loss on va) breaks messages.  One event per dropped datagram or
# refused message, msgs= summing the broken ones: equal to the deltas of
# the device counters.
MROCE_UC=$MROCE_BUILD/selftests/mroce_uc
stats mroce_b >"$tmp/mroce_b.0"
echo >$T/trace
echo 1 >$T/events/mroce/mroce_drop/enable
echo 1 >$T/events/mroce/mroce_qp_create/enable
if [ -x "$MROCE_WR_API" ] && [ -x "$MROCE_UC" ]; then
	$A timeout "$(mroce_t 120)" "$MROCE_WR_API" mroce_a "$ga" mroce_b "$gb" >"$tmp/wr_api.out" 2>&1
	check "drops: mroce_wr_api passed" test "$(grep -c '^not ok' "$tmp/wr_api.out")" = 0 -a -s "$tmp/wr_api.out"
	timeout "$(mroce_t 300)" "$MROCE_UC" mroce_a "$ga" mroce_b "$gb" basic >"$tmp/uc.out" 2>&1
	tc -n ns_a qdisc add dev va root netem loss 5%
	timeout "$(mroce_t 300)" "$MROCE_UC" mroce_a "$ga" mroce_b "$gb" loss >>"$tmp/uc.out" 2>&1
	tc -n ns_a qdisc del dev va root 2>/dev/null
	check "drops: mroce_uc basic and loss passed" test "$(grep -c '^not ok' "$tmp/uc.out")" = 0 -a -s "$tmp/uc.out"
else
	tb_not_ok "drops: $MROCE_WR_API and $MROCE_UC" "not built"
fi
sleep 1
echo 0 >$T/events/mroce/mroce_drop/enable
echo 0 >$T/events/mroce/mroce_qp_create/enable
stats mroce_b >"$tmp/mroce_b.1"
cat $T/trace >"$tmp/trace"
got="ud_qkey $(nev mroce_drop dev=mroce_b type=UD reason=ud_qkey)"
got="$got ud_no_wqe $(nev mroce_drop dev=mroce_b type=UD reason=ud_no_wqe)"
got="$got uc_broken $(sumf msgs mroce_drop dev=mroce_b type=UC reason=uc_broken)"
got="$got uc_no_wqe $(nev mroce_drop dev=mroce_b type=UC reason=uc_no_wqe)"
got="$got uc_refused $(nev mroce_drop dev=mroce_b type=UC reason=uc_refused)"
want="ud_qkey $(delta rx_ud_qkey mroce_b) ud_no_wqe $(delta rx_ud_no_wqe mroce_b)"
want="$want uc_broken $(delta rx_uc_broken mroce_b) uc_no_wqe $(delta rx_uc_no_wqe mroce_b)"
want="$want uc_refused $(delta rx_uc_refused mroce_b)"
if [ "$got" = "$want" ]; then
	tb_ok "drops: mroce_drop events match the counters ($got)"
else
	tb_not_ok "drops: mroce_drop events match the counters" "events: $got; counters: $want"
fi
check "drops: every reason seen (ud_qkey, ud_no_wqe >= 1, uc_* >= 1)" \
	test "$(delta rx_ud_qkey mroce_b)" -ge 1 -a "$(delta rx_ud_no_wqe mroce_b)" -ge 1 -a \
	     "$(delta rx_uc_broken mroce_b)" -ge 1 -a "$(delta rx_uc_no_wqe mroce_b)" -ge 1 -a \
	     "$(delta rx_uc_refused mroce_b)" -ge 1
check "drops: UC QPs created with type=UC ($(nev mroce_qp_create dev=mroce_b type=UC))" \
	test "$(nev mroce_qp_create dev=mroce_b type=UC)" -ge 1

# 3. Events off again: nothing more is recorded.
echo >$T/trace
pair "events off again: ibv_rc_pingpong 4 KiB x 100" \
	ibv_rc_pingpong -d mroce_b -g "$gb" -n 100 -s 4096 -- \
	ibv_rc_pingpong -d mroce_a -g "$ga" -n 100 -s 4096 10.12.0.2
cat $T/trace >"$tmp/off2"
n=$(mroce_lines "$tmp/off2")
check "events off again: nothing recorded ($n mroce lines)" test "$n" = 0
echo "${old_size:-1408}" >$T/buffer_size_kb

# 4. Dynamic debug: QP creation, state changes and connection setup.
ctl=/proc/dynamic_debug/control
[ -w $ctl ] || ctl=/sys/kernel/debug/dynamic_debug/control
sites=$(grep -c '\[rdma_mroce\]' $ctl 2>/dev/null)
if [ "${sites:-0}" -gt 0 ] && [ -x "$MROCE_TRACE_QP" ]; then
	marker="mroce test_trace dyndbg $$"
	echo "$marker" >/dev/kmsg
	echo 'module rdma_mroce +p' >$ctl
	$A timeout "$(mroce_t 120)" "$MROCE_TRACE_QP" mroce_a "$ga" mroce_b "$gb" >"$qpout" 2>&1
	echo 'module rdma_mroce -p' >$ctl
	q=$(qpn access a_qpn)
	dmesg | sed -n "/$marker/,\$p" >"$tmp/dmesg"
	grep 'mroce_a: QP' "$tmp/dmesg" | head -4 | sed 's/^/# dyndbg: /'
	dyn_ok() {
		grep -q "mroce_a: QP $q created" "$tmp/dmesg" &&
			grep -q "mroce_a: QP $q: state 2 -> 3" "$tmp/dmesg"
	}
	check "dynamic debug ($sites sites): QP ${q:-?} created, RTR -> RTS logged" dyn_ok
	check "dynamic debug: connection setup and destroy logged" \
		test "$(grep -c "mroce_a: QP $q: connection to QPN" "$tmp/dmesg")" = 1 -a \
		     "$(grep -c "mroce_a: QP $q destroyed" "$tmp/dmesg")" = 1
else
	tb_not_ok "dynamic debug" "no rdma_mroce sites in $ctl or $MROCE_TRACE_QP missing"
fi

mroce_netns_teardown
rm -rf "$tmp"
