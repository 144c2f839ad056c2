#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/guest_a.sh - the bench's client guest (10.11.0.1).  Drives the
# server guest through the control channel (bench/ctl_srv.sh) and runs
# every point for mroce and rxe alternately; raw results in /out/raw.csv:
#   driver,test,size,qps,loss,rep,gbps,lat_typ_us,lat_avg_us,secs,cpu_a_s,cpu_b_s,cpu_s_per_gb,rc
# /out/bench.conf (written by bench/bench.sh) may set REPS, DUR,
# LOSSES, SIZES, QPSS, BW_TESTS, LAT_TESTS, EV_TESTS, DRIVERS, TCP_REF
# (0: no iperf3).
. /mroce/bench/common.sh
set -uo pipefail
REPS=3 DUR=3 LATN=200
LOSSES="0 0.1 1 2 5 10"
SIZES="65536 4096"
QPSS="1 4"
BW_TESTS="ib_write_bw ib_send_bw ib_read_bw"
LAT_TESTS="ib_send_lat ib_write_lat"
DRIVERS="mroce rxe"
TCP_REF=1
# Event-driven clients (perftest -e: they sleep on the completion channel
# instead of polling), whose CPU rows count kernel time only (system, irq,
# softirq of both guests): the driver's cost per GB.  perftest refuses -e
# for WRITE, so SEND and READ.
# perftest has no duration mode with events: EVN iterations instead.
EV_TESTS="ib_send_bw_ev ib_read_bw_ev" EVN=500
# shellcheck disable=SC1091
[ -f /out/bench.conf ] && . /out/bench.conf
SRV=10.11.0.2
CSV=/out/raw.csv
LOG=/out/log
mkdir -p $LOG
PORT=20000

bench_devices || { echo "bench: devices failed"; exit 1; }
tb_wait_ping $SRV || { echo "bench: no server"; exit 1; }
# Wait for the server guest's control channel.
for _ in $(seq 120); do
	exec 3<>/dev/tcp/$SRV/9000 2>/dev/null && break
	sleep 1
done
echo STAT >&3
cat <&3 >/dev/null
exec 3<&-

ctl() {
	exec 3<>/dev/tcp/$SRV/9000 || return 1
	echo "$*" >&3
	cat <&3
	exec 3<&-
}

echo "driver,test,size,qps,loss,rep,gbps,lat_typ_us,lat_avg_us,secs,cpu_a_s,cpu_b_s,cpu_s_per_gb,rc" >$CSV
echo "bench-a: accel $(grep -q hypervisor /proc/cpuinfo && echo virtualized) cpus $(nproc)"

# point DRIVER TEST SIZE QPS LOSS REP: one measurement, one CSV row.  A
# perftest client that could not calibrate its cycle counter (under a
# loaded TCG host: "Correlation coefficient r^2 ... < 0.9", then 0 Gb/s
# however much it moved, whichever the driver) is run again, up to 3 times.
point() {
	local try
	for try in 1 2 3; do
		point_once "$@" "$try" && return 0
		echo "# $1 $2 $3 q$4 loss $5 rep $6: perftest's clock calibration failed, run again"
	done
	point_once "$@" 4
}

# point_once DRIVER TEST SIZE QPS LOSS REP TRY: returns 1 (and writes no
# row) for a clock-calibration failure when TRY < 4.
point_once() {
	local drv=$1 t=$2 size=$3 qps=$4 loss=$5 rep=$6 dev gid opts srv cli rc=1 i
	local a0 a1 b0 b1 t0 t1 gbps= typ= avg= secs cpa cpb cpg=
	local bin=${t%_ev} stat=STAT cpu=cpu_busy ev=
	if [ "$bin" != "$t" ]; then
		ev=-e stat=STATK cpu=cpu_kernel
	fi
	case $drv in
	mroce) dev=mroce0 gid=$GID_MROCE ;;
	rxe) dev=rxe0 gid=$GID_RXE ;;
	esac
	PORT=$((PORT + 1))
	local name=$drv-$t-$size-q$qps-l$loss-r$rep try=$7
	case $t in
	ib_*_bw) opts="-d $dev -x $gid -F --report_gbits -p $PORT -s $size -q $qps -D $DUR" ;;
	ib_*_bw_ev) opts="-d $dev -x $gid -F --report_gbits -p $PORT -s $size -q $qps -n $EVN $ev" ;;
	ib_*_lat) opts="-d $dev -x $gid -F -p $PORT -s $size -n $LATN" ;;
	xfer) opts="-d $dev -g $gid -p $PORT -s $size -n 64 -m write -t 90" ;;
	iperf3) opts= ;;
	esac
	if [ "$t" = iperf3 ]; then
		srv="iperf3 -s -1 -p $PORT"
		cli="iperf3 -c $SRV -p $PORT -t $DUR -f m"
	elif [ "$t" = xfer ]; then
		srv="$MROCE_BUILD/tools/mroce_xfer $opts"
		cli="$MROCE_BUILD/tools/mroce_xfer $opts $SRV"
	else
		srv="timeout 90 $bin $opts"
		cli="$bin $opts $SRV"
	fi
	ctl START "$srv" >/dev/null
	sleep 0.5
	b0=$(ctl $stat)
	a0=$($cpu)
	t0=$EPOCHREALTIME
	for i in 1 2 3 4 5 6; do
		# shellcheck disable=SC2086
		timeout 90 $cli >"$LOG/$name.cli" 2>&1
		rc=$?
		[ $rc = 0 ] && break
		grep -qiE "couldn't connect|Connection refused|Unable to init|unable to connect" \
			"$LOG/$name.cli" || break
		sleep 1
	done
	t1=$EPOCHREALTIME
	a1=$($cpu)
	b1=$(ctl $stat)
	ctl WAIT 30 >"$LOG/$name.srv"
	grep -q "^rc 0" "$LOG/$name.srv" || { [ $rc = 0 ] && rc=99; }
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.3f", b - a}')
	case $t in
	ib_*_bw | ib_*_bw_ev)
		gbps=$(awk -v s="$size" '$1 == s && NF >= 4 {print $4; exit}' "$LOG/$name.cli") ;;
	ib_*_lat)
		typ=$(awk -v s="$size" '$1 == s && NF >= 6 {print $5; exit}' "$LOG/$name.cli")
		avg=$(awk -v s="$size" '$1 == s && NF >= 6 {print $6; exit}' "$LOG/$name.cli") ;;
	xfer) gbps=$(awk '/^xfer /{for (i = 1; i <= NF; i++) if ($i ~ /^goodput_mbps=/) {sub("goodput_mbps=", "", $i); printf "%.6f", $i / 1000}}' "$LOG/$name.cli")
		grep -q "verify=ok" "$LOG/$name.cli" || { [ $rc = 0 ] && rc=98; } ;;
	iperf3) gbps=$(awk '/receiver/ {for (i = 1; i <= NF; i++) if ($i == "Mbits/sec") printf "%.6f", $(i - 1) / 1000}' "$LOG/$name.cli") ;;
	esac
	if [ "$try" -lt 4 ] && [ $rc = 0 ] && grep -q "Correlation coefficient" "$LOG/$name.cli" &&
		awk -v g="${gbps:-0}" 'BEGIN {exit !(g + 0 == 0)}'; then
		mv "$LOG/$name.cli" "$LOG/$name.cli.clock$try"
		return 1
	fi
	cpa=$(awk -v a="$a0" -v b="$a1" 'BEGIN {printf "%.2f", (b - a) / 100}')
	cpb=$(awk -v a="$b0" -v b="$b1" 'BEGIN {printf "%.2f", (b - a) / 100}')
	# CPU seconds (both guests) per GB moved, for the throughput tests.
	if [ -n "$gbps" ] && [ -n "$ev" ]; then
		cpg=$(awk -v n="$EVN" -v s="$size" -v q="$qps" -v a="$cpa" -v b="$cpb" \
			'BEGIN {by = n * s * q; if (by > 0) printf "%.1f", (a + b) / (by / 1e9)}')
	elif [ -n "$gbps" ] && [ "$t" != xfer ]; then
		cpg=$(awk -v g="$gbps" -v d="$DUR" -v a="$cpa" -v b="$cpb" \
			'BEGIN {by = g * 1e9 / 8 * d; if (by > 0) printf "%.1f", (a + b) / (by / 1e9)}')
	fi
	echo "$drv,$t,$size,$qps,$loss,$rep,$gbps,$typ,$avg,$secs,$cpa,$cpb,$cpg,$rc" | tee -a $CSV
}

set_loss() {
	if [ "$1" = 0 ]; then
		tc qdisc del dev eth0 root 2>/dev/null
	else
		tc qdisc replace dev eth0 root netem loss "$1%"
	fi
	return 0
}

start=$SECONDS
echo "# phase 1: throughput, latency, TCP reference (lossless)"
for rep in $(seq "$REPS"); do
	for t in $BW_TESTS; do
		for size in $SIZES; do
			for q in $QPSS; do
				for d in $DRIVERS; do point "$d" "$t" "$size" "$q" 0 "$rep"; done
			done
		done
	done
	for t in $EV_TESTS; do
		for d in $DRIVERS; do point "$d" "$t" 65536 1 0 "$rep"; done
	done
	for t in $LAT_TESTS; do
		for d in $DRIVERS; do point "$d" "$t" 64 1 0 "$rep"; done
	done
	[ "$TCP_REF" = 1 ] && point tcp iperf3 0 1 0 "$rep"
done
echo "# phase 2: loss sweep (netem on the sender's egress), ib_write_bw 64 KiB 1 QP + verified mroce_xfer"
for rep in $(seq "$REPS"); do
	for loss in $LOSSES; do
		set_loss "$loss"
		for d in $DRIVERS; do point "$d" ib_write_bw 65536 1 "$loss" "$rep"; done
		if [ "$rep" = 1 ]; then
			for d in $DRIVERS; do point "$d" xfer 65536 1 "$loss" "$rep"; done
		fi
	done
	set_loss 0
done
echo "# bench done in $((SECONDS - start)) s"
cat "$MROCE_DEBUGFS/mroce0/counters" >/out/mroce0.counters 2>/dev/null
ctl QUIT >/dev/null
exit 0
