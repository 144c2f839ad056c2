#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/qp_scale.sh - `make bench-qpscale` (issue 18, "scale targets,
# measured"): many connected RC QPs between two testbed guests, mroce and
# rxe in the same run.  Guest a (10.11.0.1) runs the clients, guest b
# (10.11.0.2) the servers, rxe0 and mroce0 on each guest's eth0
# (bench/common.sh).  For each N of QP_SCALE_NS, mroce_qp_scale
# (selftests/mroce/qp_scale.cpp) creates N RC QPs on each side, exchanges
# QPNs over TCP, connects them (create and connect rates timed apart),
# moves a 4 KiB WRITE + SEND with immediate + READ back on every QP (every
# byte verified at both ends) and tears down with WRITEs in flight; first
# on a clean link for mroce and rxe, then for mroce with netem loss
# (QP_SCALE_LOSS %, on each guest's egress) for each N of
# QP_SCALE_LOSS_NS.  Then ib_write_bw -s 4096 -D 8 with -q for each of
# QP_SCALE_BW_QS (1 64 256), both drivers on a clean link and mroce at the
# loss.  Then QP_SCALE_PACED_NS paced (see below).  Results: QP_SCALE_OUT (bench/results/qp-scale.md): generated
# tables, then the notes kept from the previous file (its "## Notes" line
# on).  A kernel WARNING/BUG/Call Trace in either guest fails the run (tb).
#
#   bench/qp_scale.sh [--out FILE]
# Environment (a list set empty runs none of its cases):
# QP_SCALE_NS ("64 256 1000 4000"), QP_SCALE_LOSS_NS
# ("64 256 1000 4000"), QP_SCALE_LOSS (1), QP_SCALE_DRIVERS ("mroce rxe"),
# QP_SCALE_PACED_NS ("1000 4000": these N again, both drivers clean and
# mroce at the loss, with at most QP_SCALE_PACED (192) WRs outstanding
# over all QPs: mroce_qp_scale --max-outstanding),
# QP_SCALE_BW_QS ("1 64 256"; empty: no ib_write_bw), QP_SCALE_BW_ARGS
# (more ib_write_bw options, e.g. "-t 64"), QP_SCALE_MEM (guest
# memory in MB, the testbed's pair default 1536), QP_SCALE_TIMEOUT (the
# whole run's limit, 5400 s).
#
# Rates and goodput are wall-clock numbers of TCG guests on a shared host:
# compare mroce with rxe in the same run, not across runs.
set -euo pipefail

if [ -n "${MROCE_ROLE:-}" ]; then
	# In a guest (tb pair): guest a writes /out/qpscale.txt and
	# /out/writebw.txt, guest b the servers' lines in /out/qpscale_b.txt.
	set +e
	. /mroce/bench/common.sh
	bench_devices || { echo "qp_scale: devices failed" >&2; exit 1; }
	prog=$MROCE_BUILD/selftests/mroce_qp_scale
	ns=${QP_SCALE_NS-"64 256 1000 4000"}
	loss_ns=${QP_SCALE_LOSS_NS-"64 256 1000 4000"}
	loss=${QP_SCALE_LOSS:-1}
	drivers=${QP_SCALE_DRIVERS:-"mroce rxe"}
	qs=${QP_SCALE_BW_QS-"1 64 256"}
	srv=10.11.0.2
	cases=()
	paced_ns=${QP_SCALE_PACED_NS-"1000 4000"}
	paced=${QP_SCALE_PACED:-192}
	for n in $ns; do
		for d in $drivers; do cases+=("qps $d $n 0 0"); done
	done
	for n in $loss_ns; do cases+=("qps mroce $n $loss 0"); done
	for n in $paced_ns; do
		for d in $drivers; do cases+=("qps $d $n 0 $paced"); done
	done
	for n in $paced_ns; do cases+=("qps mroce $n $loss $paced"); done
	for q in $qs; do
		for d in $drivers; do cases+=("bw $d $q 0 0"); done
	done
	for q in $qs; do cases+=("bw mroce $q $loss 0"); done
	modprobe sch_netem 2>/dev/null
	cur=0
	setloss() {
		[ "$1" = "$cur" ] && return
		if [ "$1" = 0 ]; then
			tc qdisc del dev eth0 root 2>/dev/null
		else
			tc qdisc replace dev eth0 root netem loss "$1%"
		fi
		cur=$1
	}
	# mroce's retransmission counters, for the loss rows.
	retx() {
		rdma statistic show link mroce0/1 | tr ' ' '\n' | paste - - |
			awk '$1 ~ /^rc_(retx|rtos|tlps)$/ {printf "%s=%s ", $1, $2}'
	}
	# packets eth0's qdisc dropped so far (bursts above its limit)
	qdrops() {
		tc -s qdisc show dev eth0 | sed -n 's/.*(dropped \([0-9]*\),.*/\1/p' |
			awk '{s += $1} END {print s + 0}'
	}
	[ "$MROCE_ROLE" = a ] && { tb_wait_ping $srv >/dev/null || exit 1; }
	echo "# kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB" |
		tee -a /out/qpscale.txt
	port=19000
	for c in "${cases[@]}"; do
		read -r kind drv n l mo <<<"$c"
		port=$((port + 1))
		gid=$GID_MROCE
		[ "$drv" = rxe ] && gid=$GID_RXE
		setloss "$l"
		if [ "$kind" = qps ]; then
			t=$((240 + n / 10))
			if [ "$MROCE_ROLE" = b ]; then
				timeout $((t + 60)) "$prog" --qps "$n" --port $port --destroy reverse \
					--timeout $t "${drv}0" "$gid" >/out/srv-$port.log 2>&1
				echo "case=$port drv=$drv n=$n loss=$l mo=$mo rc=$? $(sed -n 's/^# qpscale //p' /out/srv-$port.log)" \
					>>/out/qpscale_b.txt
				continue
			fi
			r0=$(retx)
			q0=$(qdrops)
			timeout $((t + 60)) "$prog" --qps "$n" --port $port --destroy forward \
				--max-outstanding "$mo" --timeout $t \
				--per-qp "/out/perqp-$drv-$n-$l-$mo.txt" "${drv}0" "$gid" "$srv" \
				>/out/cli-$port.log 2>&1
			rc=$?
			line=$(sed -n 's/^# qpscale //p' /out/cli-$port.log)
			fails=$(grep -c '^not ok' /out/cli-$port.log)
			ferr=$(sed -n 's/^# first error of the QPs that failed: *//p' /out/cli-$port.log | head -1)
			extra="qdisc_drops=$(($(qdrops) - q0)) first_errors=[$ferr]"
			[ "$drv" = mroce ] && extra+=" retx_before=[$r0] retx_after=[$(retx)]"
			echo "case=$port drv=$drv n=$n loss=$l mo=$mo rc=$rc not_ok=$fails $line $extra" |
				tee -a /out/qpscale.txt
			continue
		fi
		# ib_write_bw: 4 KiB, 8 s, q QPs; a local ACK timeout of 1 s
		# (-u 18) as in selftests/mroce/pair_guest.sh; QP_SCALE_BW_ARGS
		# added (e.g. -t 64: rxe's CQ holds 32767 CQEs, perftest asks
		# q x its TX depth 128).
		# shellcheck disable=SC2206
		args=(-d "${drv}0" -x "$gid" -F --report_gbits -p $port -s 4096 -q "$n" -D 8 -u 18
		      ${QP_SCALE_BW_ARGS:-})
		if [ "$MROCE_ROLE" = b ]; then
			timeout 200 ib_write_bw "${args[@]}" >/out/bw-$port.srv 2>&1
			continue
		fi
		for try in 1 2 3 4 5 6; do
			sleep 2
			timeout 200 ib_write_bw "${args[@]}" $srv >/out/bw-$port.cli 2>&1
			rc=$?
			[ $rc = 0 ] && break
			grep -qiE "couldn't connect|Connection refused|Unable to init" /out/bw-$port.cli || break
		done
		gbps=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $4}' /out/bw-$port.cli | tail -1)
		err=$(grep -im1 'status\|fail\|error' /out/bw-$port.cli | tr -s ' ')
		echo "case=$port drv=$drv q=$n loss=$l rc=$rc gbps=${gbps:-none} tries=$try err=[${err}]" |
			tee -a /out/writebw.txt
	done
	setloss 0
	exit 0
fi

top=$(cd "$(dirname "$0")/.." && pwd)
md=${QP_SCALE_OUT:-$top/bench/results/qp-scale.md}
[ "${1:-}" = --out ] && md=$2
[ -x "$top/build/selftests/mroce_qp_scale" ] || { echo "qp_scale: run make first" >&2; exit 1; }
raw=$(mktemp -d "${TMPDIR:-/tmp}/mroce-qpscale.XXXXXX")
env=()
for v in QP_SCALE_NS QP_SCALE_LOSS_NS QP_SCALE_LOSS QP_SCALE_DRIVERS QP_SCALE_BW_QS \
	QP_SCALE_BW_ARGS QP_SCALE_PACED_NS QP_SCALE_PACED; do
	[ -n "${!v+x}" ] && env+=(--env "$v=${!v}")
done
mem=()
[ -n "${QP_SCALE_MEM:-}" ] && mem=(--mem "$QP_SCALE_MEM")
s=$top/bench/qp_scale.sh
rc=0
"$top/tools/testbed/tb" pair --quiet --timeout "${QP_SCALE_TIMEOUT:-5400}" --out "$raw" \
	"${mem[@]}" "${env[@]}" "$s" "$s" || rc=$?
echo "qp_scale: raw results in $raw (tb exit $rc)"
[ -s "$raw/a/qpscale.txt" ] || { echo "qp_scale: no results, see $raw" >&2; exit 1; }

notes=
[ -f "$md" ] && notes=$(sed -n '/^## Notes/,$p' "$md")
kv() { sed -n "s/.* $2=\([^ ]*\).*/\1/p" <<<" $1"; }
# row DRV N LOSS: guest a's line for that case
row() { { grep " drv=$1 n=$2 loss=$3 mo=0 " "$raw/a/qpscale.txt" || true; } | head -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a != "" && b > 0) printf "%.2f", a / b; else print "-" }'; }
{
	echo "# RC QP scale: N connected QPs between two guests, traffic on every one"
	echo
	echo "Generated by \`make bench-qpscale\` (bench/qp_scale.sh) on $(date -u +%Y-%m-%d),"
	echo "commit $(git -C "$top" rev-parse --short HEAD), two TCG guests (Debian 6.1 kernel,"
	echo "$(sed -n 's/^# kernel [^,]*, \(.*\)/\1/p' "$raw/a/qpscale.txt" | head -1) each), a QEMU socket link;"
	echo "mroce and rxe in the same run.  tb exit status $rc (3: a kernel problem report in a guest log)."
	sets=
	for v in QP_SCALE_NS QP_SCALE_LOSS_NS QP_SCALE_LOSS QP_SCALE_DRIVERS QP_SCALE_BW_QS \
		QP_SCALE_BW_ARGS QP_SCALE_PACED_NS QP_SCALE_PACED QP_SCALE_MEM; do
		[ -n "${!v+x}" ] && sets+=" $v=\"${!v}\""
	done
	echo "Settings:${sets:- the defaults}."
	echo
	echo "## Create and connect rate (guest a, the client; QPs per second)"
	echo
	echo "create: N x ibv_create_qp; connect: N x INIT+RTR+RTS (three ibv_modify_qp)."
	echo "Ratios mroce/rxe from the same run (the host is shared: absolute rates are noisy)."
	echo
	echo "| N | mroce create | rxe create | ratio | mroce connect | rxe connect | ratio | mroce create+connect | rxe create+connect | ratio |"
	echo "|---|---|---|---|---|---|---|---|---|---|"
	for n in ${QP_SCALE_NS-64 256 1000 4000}; do
		m=$(row mroce "$n" 0)
		x=$(row rxe "$n" 0)
		echo "| $n | $(kv "$m" create_rate) | $(kv "$x" create_rate) | $(ratio "$(kv "$m" create_rate)" "$(kv "$x" create_rate)") |" \
			"$(kv "$m" connect_rate) | $(kv "$x" connect_rate) | $(ratio "$(kv "$m" connect_rate)" "$(kv "$x" connect_rate)") |" \
			"$(kv "$m" create_connect_rate) | $(kv "$x" create_connect_rate) | $(ratio "$(kv "$m" create_connect_rate)" "$(kv "$x" create_connect_rate)") |"
	done
	echo
	echo "## Traffic on every QP"
	echo
	echo "Per QP: 4 KiB RDMA WRITE, 4 KiB SEND with immediate, 4 KiB RDMA READ back; every byte"
	echo "verified (WRITE and SEND at the server, READ at the client).  goodput = verified bytes x 8 /"
	echo "the client's traffic time.  kernel KiB/QP = (Slab + VmallocUsed + Percpu) delta over"
	echo "create+connect on guest a / N (the user-mapped rings included).  Teardown: the client destroys"
	echo "forward with 2 WRITEs in flight per QP, the server reverse.  max outstanding WRs: all (3N):"
	echo "every QP's three WRs posted at once; a number: the client keeps at most that many WRs"
	echo "posted and not completed over all QPs (paced; still traffic on every QP)."
	echo
	echo "| driver | N | loss % | max outstanding WRs | exit | failed checks | QPs verified | completions ok | completion errors | QPs with errors | first error (QPs) | eth0 qdisc drops (guest a) | goodput Mb/s | kernel KiB/QP | destroy QP/s |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	{ grep '^case=' "$raw/a/qpscale.txt" || true; } | while read -r l; do
		ver=$(kv "$l" qps_verified)
		mo=$(kv "$l" mo)
		[ "$mo" = 0 ] && mo="all (3N)"
		echo "| $(kv "$l" drv) | $(kv "$l" n) | $(kv "$l" loss) | $mo | $(kv "$l" rc) | $(kv "$l" not_ok) | ${ver:--} |" \
			"$(kv "$l" ok_wcs) | $(kv "$l" err_wcs) | $(kv "$l" qps_with_errors) |" \
			"$(sed -n 's/.*first_errors=\[\([^]]*\)\].*/\1/p' <<<"$l") | $(kv "$l" qdisc_drops) |" \
			"$(kv "$l" goodput_mbps) | $(awk -v b="$(kv "$l" per_qp_kernel)" 'BEGIN { if (b != "") printf "%.1f", b / 1024; else print "-" }') |" \
			"$(kv "$l" destroy_rate) |"
	done
	if [ -s "$raw/a/writebw.txt" ]; then
		echo
		echo "## ib_write_bw -s 4096 -D 8 -u 18 -q Q ${QP_SCALE_BW_ARGS:-}"
		echo
		echo "| driver | Q | loss % | exit | Gb/s | tries | error line |"
		echo "|---|---|---|---|---|---|---|"
		while read -r l; do
			echo "| $(kv "$l" drv) | $(kv "$l" q) | $(kv "$l" loss) | $(kv "$l" rc) |" \
				"$(kv "$l" gbps) | $(kv "$l" tries) | $(sed -n 's/.*err=\[\(.*\)\]$/\1/p' <<<"$l") |"
		done <"$raw/a/writebw.txt"
	fi
	echo
	echo "Raw lines (guest a; guest b's servers below):"
	echo
	echo '```'
	cat "$raw/a/qpscale.txt"
	[ -f "$raw/a/writebw.txt" ] && cat "$raw/a/writebw.txt"
	echo '```'
	echo
	echo '```'
	[ -f "$raw/b/qpscale_b.txt" ] && cat "$raw/b/qpscale_b.txt"
	echo '```'
	if [ -n "$notes" ]; then
		echo
		echo "$notes"
	fi
} >"$md.new"
mv "$md.new" "$md"
echo "qp_scale: $md"
exit $rc
