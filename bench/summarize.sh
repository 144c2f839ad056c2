#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/summarize.sh RESULTS_DIR ACCEL ELAPSED_S TB_RC - raw.csv ->
# summary.csv, loss.csv, README.md and PNG plots (gnuplot, when installed).
set -euo pipefail
res=$1 accel=$2 elapsed=$3 tbrc=$4
cd "$res"

# summary.csv: per point (driver,test,size,qps,loss) the median, min, max
# of the metric (Gbit/s, or typical latency in us for *_lat), the median
# CPU s/GB, runs and failed runs.
awk -F, 'NR > 1 {
	k = $1 "," $2 "," $3 "," $4 "," $5
	v = ($2 ~ /_lat$/) ? $8 : $7
	if (!(k in n)) order[++no] = k
	n[k]++
	# A throughput run that moved nothing (0 Gb/s, rc 0) stalled: failed.
	if ($14 != 0 || v == "" || ($2 !~ /_lat$/ && v + 0 == 0)) { fail[k]++; next }
	m = ++ok[k]; val[k, m] = v + 0
	if ($13 != "") { c = ++nc[k]; cpu[k, c] = $13 + 0 }
}
function med(a, k, cnt,    i, j, t, x) {
	if (!cnt) return ""
	for (i = 1; i <= cnt; i++) x[i] = a[k, i]
	for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (x[j] < x[i]) { t = x[i]; x[i] = x[j]; x[j] = t }
	lo = x[1]; hi = x[cnt]
	return (cnt % 2) ? x[(cnt + 1) / 2] : (x[cnt / 2] + x[cnt / 2 + 1]) / 2
}
BEGIN { print "driver,test,size,qps,loss,metric,median,min,max,cpu_s_per_gb,runs,failed" }
END {
	for (i = 1; i <= no; i++) {
		k = order[i]; split(k, f, ",")
		metric = (f[2] ~ /_lat$/) ? "lat_typ_us" : "gbps"
		md = med(val, k, ok[k]); l = lo; h = hi
		if (md == "") { l = ""; h = "" }
		cm = med(cpu, k, nc[k])
		printf "%s,%s,%s,%s,%s,%s,%s,%s,%s\n", k, metric, md, l, h, cm, n[k], fail[k] + 0, ""
	}
}' raw.csv | sed 's/,$//' >summary.csv

# loss.csv: goodput vs loss, ratio to the same driver's lossless median.
awk -F, 'NR > 1 && (($2 == "ib_write_bw" && $3 == 65536 && $4 == 1) || $2 == "xfer") {
	k = $1 "," $2
	if ($2 == "ib_write_bw" && !($5 in seen)) { seen[$5] = 1; losses[++nl] = $5 }
	if ($2 == "ib_write_bw" && !($1 in dseen)) { dseen[$1] = 1; drv[++nd] = $1 }
	med[k, $5] = $7; lo[k, $5] = $8; hi[k, $5] = $9; fl[k, $5] = $12
}
END {
	print "loss_pct,driver,test,median_gbps,min_gbps,max_gbps,ratio_to_lossless,failed"
	for (i = 1; i <= nl; i++) for (d = 1; d <= nd; d++) for (t = 1; t <= 2; t++) {
		tn = (t == 1) ? "ib_write_bw" : "xfer"; k = drv[d] "," tn
		if (!((k, losses[i]) in med)) continue
		b = med[k, 0]; v = med[k, losses[i]]
		r = (b > 0 && v != "") ? sprintf("%.3f", v / b) : ""
		printf "%s,%s,%s,%s,%s,%s,%s,%s\n", losses[i], drv[d], tn, v, lo[k, losses[i]], hi[k, losses[i]], r, fl[k, losses[i]]
	}
}' summary.csv >loss.csv

# README.md
{
	echo "# mroce vs rxe bench ($(date -u +%F\ %H:%M) UTC)"
	echo
	echo "- accelerator: **$accel** (QEMU; under TCG absolute numbers are 20-50x below native: compare ratios)"
	echo "- two guests, 1 vCPU each, joined by a QEMU link (eth0, MTU 1500): bandwidth and loss rows over its TCP socket (${BENCH_LINK:-tcp}), latency rows over a Unix stream (the TCP link adds about 22 ms to each exchange, tools/testbed/README.md); mroce (UDP 4792, $(awk -F, 'NR > 1 && $1 == "mroce" {n++} END {print n + 0}' raw.csv) runs) and rxe (4791) side by side"
	echo "- each point: $(awk -F, 'NR > 1 {print $6}' raw.csv | sort -n | tail -1) repetitions, median [min-max]; perftest bandwidth tests -D 3 s (DUR), latency -n 200, --report_gbits, -F"
	echo "- loss: netem on the client (sender) guest's eth0 egress; ib_read_bw's data flows the other way"
	echo "- CPU s/GB: busy jiffies of both guests (/proc/stat) during the run / GB moved; for the *_ev rows (event-driven clients, perftest -e, which sleep instead of polling) kernel jiffies only (system, irq, softirq): the drivers' own cost per GB"
	echo "- bench wall time ${elapsed} s, tb status $tbrc; failed runs are excluded from medians and counted"
	echo "- the lossless ib_write_bw 64 KiB 1 QP point pools phase 1 and the loss sweep's 0% runs"
	echo
	echo "## Throughput and latency (lossless)"
	echo
	echo "| test | size | QPs | mroce | rxe | mroce/rxe | CPU s/GB mroce | CPU s/GB rxe |"
	echo "|---|---|---|---|---|---|---|---|"
	awk -F, 'NR > 1 && $5 == 0 && $2 != "xfer" {
		k = $2 "," $3 "," $4
		if (!(k in s)) o[++n] = k
		s[k] = 1
		unit = ($6 == "gbps") ? " Gb/s" : " us"
		cell = ($7 == "") ? "FAILED" : sprintf("%s [%s-%s]%s", $7, $8, $9, unit)
		if ($11 > 0 && $12 > 0) cell = cell sprintf(" (%d/%d failed)", $12, $11)
		v[$1, k] = cell; m[$1, k] = $7; c[$1, k] = $10
	}
	END {
		for (i = 1; i <= n; i++) {
			split(o[i], f, ",")
			if (f[1] == "iperf3") {
				printf "| iperf3 TCP (reference) | - | 1 | %s | | | | |\n", v["tcp", o[i]]
				continue
			}
			r = (m["rxe", o[i]] > 0 && m["mroce", o[i]] != "") ? sprintf("%.2f", m["mroce", o[i]] / m["rxe", o[i]]) : ""
			printf "| %s | %s | %s | %s | %s | %s | %s | %s |\n", f[1], f[2], f[3], v["mroce", o[i]], v["rxe", o[i]], r, c["mroce", o[i]], c["rxe", o[i]]
		}
	}' summary.csv
	echo
	echo "(latency rows: typical latency, lower is better; mroce/rxe < 1 means mroce is faster there)"
	echo
	echo "## Goodput vs loss (ib_write_bw 64 KiB, 1 QP; xfer = verified mroce_xfer RDMA WRITE, 4 MiB, 1 run)"
	echo
	echo "| loss % | mroce Gb/s | mroce ratio | rxe Gb/s | rxe ratio | mroce xfer ratio | rxe xfer ratio |"
	echo "|---|---|---|---|---|---|---|"
	awk -F, 'NR > 1 {
		if (!($1 in s)) o[++n] = $1
		s[$1] = 1
		g[$1, $2, $3] = ($4 == "") ? "FAILED" : sprintf("%s [%s-%s]", $4, $5, $6)
		r[$1, $2, $3] = $7
	}
	END {
		for (i = 1; i <= n; i++) { l = o[i]
			printf "| %s | %s | %s | %s | %s | %s | %s |\n", l, g[l, "mroce", "ib_write_bw"], r[l, "mroce", "ib_write_bw"], g[l, "rxe", "ib_write_bw"], r[l, "rxe", "ib_write_bw"], r[l, "mroce", "xfer"], r[l, "rxe", "xfer"]
		}
	}' loss.csv
	echo
	echo "Failed runs (client rc: perftest 17 / mroce_xfer 1 = a work completion error, see the logs;"
	echo "98 = data mismatch, 99 = the server side failed, 124 = timeout; 'stall' = rc 0 but the client reported 0 Gb/s):"
	echo
	awk -F, 'NR > 1 && ($14 != 0 || ($2 ~ /_bw$|_bw_ev$|xfer|iperf3/ && $7 + 0 == 0)) {
		printf "- %s %s size %s qps %s loss %s rep %s: %s\n", $1, $2, $3, $4, $5, $6, ($14 != 0) ? "rc " $14 : "stall (0 Gb/s)"; n++
		f[$1]++
	} NR > 1 { t[$1]++ }
	END { if (!n) print "- none"; else for (d in t) printf "\n%s: %d of %d runs failed", d, f[d] + 0, t[d]; print "" }' raw.csv
	echo
	echo "Files: raw.csv (every run), summary.csv, loss.csv, loss.png, throughput.png."
} >README.md

command -v gnuplot >/dev/null || { echo "summarize: gnuplot not installed, no plots" >&2; exit 0; }
awk -F, 'NR > 1 && $3 == "ib_write_bw" && $7 != "" {print $1, $2, $7, $4}' loss.csv >loss.dat
gnuplot <<'GP'
set terminal png size 800,500
set output 'loss.png'
set title 'ib\_write\_bw 64 KiB goodput vs random loss (ratio to own lossless)'
set xlabel 'loss (%)'
set ylabel 'goodput / lossless goodput'
set logscale x
set yrange [0:*]
set grid
set key top right
plot '< grep " mroce " loss.dat' using ($1 > 0 ? $1 : 0.03):3 with linespoints lw 2 title 'mroce', \
     '< grep " rxe " loss.dat' using ($1 > 0 ? $1 : 0.03):3 with linespoints lw 2 title 'rxe'
GP
awk -F, 'NR > 1 && $5 == 0 && $6 == "gbps" && $2 ~ /_bw$/ && $7 != "" {
	k = $2 "-" $3 "-q" $4; if (!(k in s)) o[++n] = k; s[k] = 1; v[$1, k] = $7 }
	END { for (i = 1; i <= n; i++) printf "%s %s %s\n", o[i], v["mroce", o[i]] + 0, v["rxe", o[i]] + 0 }' summary.csv >tput.dat
gnuplot <<'GP'
set terminal png size 1000,500
set output 'throughput.png'
set title 'lossless throughput (median, Gbit/s)'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set xtics rotate by -30
set ylabel 'Gbit/s'
set grid y
plot 'tput.dat' using 2:xtic(1) title 'mroce', '' using 3 title 'rxe'
GP
rm -f loss.dat tput.dat
