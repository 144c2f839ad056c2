#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# Run the ns-3 model's scenarios (mroce next to go-back-N, DCTCP, Cubic,
# BBR on the same fabric), the cross-check against tools/sim, and write
# CSV + PNG + summary.md to OUTDIR.
#   tools/ns3/run_scenarios.sh OUTDIR [--quick] [--large] [--report]
# --quick: small sizes (about a minute); --large: also the 1,024-host runs
# (all-reduce and grouped all-to-all, ~15-25 min more); --report: run nothing,
# only redo the cross-check, plots and summary.md from OUTDIR's files.  Binaries are
# built in $BUILD (default <repo>/build) unless MROCE_NS3 / MROCE_SIM name
# them.  Runs under nice -n 10, one process at a time.
set -euo pipefail

out=${1:?usage: $0 OUTDIR [--quick] [--large] [--report]}
shift
quick= large= report=
for a in "$@"; do
	case $a in
	--quick) quick=--quick ;;
	--large) large=1 ;;
	--report) report=1 ;;
	*) echo "unknown option $a" >&2; exit 2 ;;
	esac
done
top=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$top/build}
. "$top/tools/sim/report.sh"
ns3=${MROCE_NS3:-}
sim=${MROCE_SIM:-}
if [ -z "$report" ] && { [ -z "$ns3" ] || [ -z "$sim" ]; }; then
	build_target mroce_sim
	if ! build_target mroce_ns3 2>/dev/null; then
		echo "mroce_ns3 not built: ns-3 missing? (make setup installs libns3-dev;" \
			"cmake prints why tools/ns3 was skipped)" >&2
		exit 1
	fi
	ns3=${ns3:-$build/tools/ns3/mroce_ns3}
	sim=${sim:-$build/tools/sim/mroce_sim}
fi
mkdir -p "$out/logs" "$out/sim" "$out/large"
out=$(cd "$out" && pwd)

status=0
run_all() {
	local mib=$((1 << 20))
	run regress "$ns3" regress --out "$out"
	if [ -n "$quick" ]; then
		run bulk "$ns3" bulk --out "$out" --bytes $((4 * mib))
		run loss "$ns3" loss --out "$out" --bytes $((4 * mib))
		run burst "$ns3" burst --out "$out" --bytes $((4 * mib))
		run incast "$ns3" incast --out "$out"
		run alltoall "$ns3" alltoall --out "$out"
		run allreduce "$ns3" allreduce --out "$out" --hosts 16 --bytes $((4 * mib))
		run plane "$ns3" plane --out "$out" --bytes $((24 * mib)) --transports mroce,dctcp
		run linkfail "$ns3" linkfail --out "$out" --bytes $((24 * mib)) --transports mroce,dctcp
		run scale "$ns3" scale --out "$out" --hosts 64
	else
		run bulk "$ns3" bulk --out "$out" --seeds 5
		# 32 MiB flows: the same workload as tools/sim's loss scenario
		run loss "$ns3" loss --out "$out" --bytes $((32 * mib))
		run burst "$ns3" burst --out "$out"
		run incast "$ns3" incast --out "$out"
		run alltoall "$ns3" alltoall --out "$out"
		run allreduce "$ns3" allreduce --out "$out" --hosts 64
		run plane "$ns3" plane --out "$out"
		run linkfail "$ns3" linkfail --out "$out"
		run scale "$ns3" scale --out "$out" --hosts 256
		# the in-house simulator on the workloads both can run
		run sim_loss "$sim" loss --out "$out/sim"
		run sim_allreduce "$sim" allreduce --nodes 64 --out "$out/sim"
		run sim_fct "$sim" fct --out "$out/sim"
		# seed spread at 1% loss in both simulators (ECMP salts differ per seed)
		mkdir -p "$out/seeds"
		run seeds_ns3 "$ns3" loss --out "$out/seeds" --loss 1 --seeds 8 --transports mroce,gbn \
			--bytes $((32 * mib))
		for s in 1 2 3 4 5 6 7 8; do
			mkdir -p "$out/seeds/sim$s"
			run seeds_sim$s "$sim" loss --seed $s --out "$out/seeds/sim$s"	# all losses
		done
	fi
	if [ -n "$large" ]; then
		# 1,024 hosts: 32 leaves x 32 hosts, 32 spines (non-blocking)
		run scale1024 "$ns3" scale --out "$out/large" --hosts 1024 --transports mroce,dctcp
		run alltoall1024 "$ns3" alltoall --out "$out/large" --hosts 1024 --group 16 \
			--bytes $((256 << 10)) --transports mroce,dctcp
		# the same with 16 paths per connection (> 5 GB)
		mkdir -p "$out/large/paths16"
		run alltoall1024_p16 "$ns3" alltoall --out "$out/large/paths16" --hosts 1024 --group 16 \
			--bytes $((256 << 10)) --transports mroce --paths 16
	fi
}
[ -n "$report" ] || run_all

# ------------------------------------------------------------ cross-check
# tools/sim and the ns-3 model on the same workload, topology and seed:
# completion time (all-reduce) and goodput (loss sweep, incast, all-to-all).
# Tolerance 10%; see tools/ns3/README.md for why they differ at all.
if [ -f "$out/sim/loss.csv" ]; then
	awk -F, -v tol=10 '
	FNR == 1 { file++; next }
	file == 1 { sim["loss", $1, $2 + 0] = $3 }				# sim loss.csv
	file == 2 { sim["allreduce", $1, $4 + 0] = $5 }				# sim allreduce.csv
	file == 3 && $1 == "incast15to1" { sim["incast15", $2, $3 + 0] = $5 }	# sim fct.csv
	file == 3 && $1 == "alltoall16" { sim["alltoall", $2, $3 + 0] = $5 }
	file == 4 { ns["loss", $2, $5 + 0] = $8 }				# ns-3 loss.csv
	file == 5 { ns["allreduce", $2, $5 + 0] = $7 / 1000 }			# ns-3 allreduce.csv
	file == 6 && $1 == "incast15" { ns["incast15", $2, $5 + 0] = $8 }	# ns-3 incast.csv
	file == 7 { ns["alltoall", $2, $5 + 0] = $8 }				# ns-3 alltoall.csv
	END {
		print "workload,model,loss_pct,metric,tools_sim,ns3,diff_pct,within_" tol "pct"
		n = split("loss allreduce incast15 alltoall", w, " ")
		for (k in ns) {
			split(k, f, SUBSEP)
			if (!(k in sim) || sim[k] == "" || sim[k] + 0 == 0)
				continue
			d = (ns[k] - sim[k]) / sim[k] * 100
			m = f[1] == "allreduce" ? "completion_ms" : "goodput_gbps"
			printf "%s,%s,%.1f,%s,%.3f,%.3f,%+.1f,%d\n", f[1], f[2], f[3], m, sim[k], ns[k], d,
				(d < tol && d > -tol)
		}
	}' "$out/sim/loss.csv" "$out/sim/allreduce.csv" "$out/sim/fct.csv" \
		"$out/loss.csv" "$out/allreduce.csv" "$out/incast.csv" "$out/alltoall.csv" |
		{ read -r h; echo "$h"; sort -t, -k1,1 -k2,2 -k3,3n; } >"$out/crosscheck.csv"
fi

# Bulk over seeds: mean, min, max aggregate goodput per transport.
if [ -f "$out/bulk.csv" ]; then
	awk -F, 'NR > 1 { k = $2; if (!(k in n)) o[m++] = k; v = $8 + 0
		if (!n[k] || v < lo[k]) lo[k] = v; if (!n[k] || v > hi[k]) hi[k] = v; s[k] += v; n[k]++ }
		END { print "transport,seeds,mean_gbps,min_gbps,max_gbps"
		      for (i = 0; i < m; i++) { k = o[i]; printf "%s,%d,%.1f,%.1f,%.1f\n", k, n[k], s[k] / n[k], lo[k], hi[k] } }' \
		"$out/bulk.csv" >"$out/bulk_seeds.csv"
fi

# Goodput at 1% loss over 8 seeds: mean, min, max per simulator and model.
if [ -f "$out/seeds/loss.csv" ]; then
	{
		echo "model,sim,seeds,mean_gbps,min_gbps,max_gbps"
		for m in mroce gbn; do
			awk -F, -v m=$m 'FNR > 1 && $1 == m && $2 + 0 == 1 { print $3 }' "$out"/seeds/sim*/loss.csv
			echo "--"
			awk -F, -v m=$m 'FNR > 1 && $2 == m && $5 + 0 == 1 { print $8 }' "$out/seeds/loss.csv"
			echo "=="
		done | awk -v ms="mroce gbn" '
			BEGIN { split(ms, M, " "); k = 1; w = "tools_sim" }
			function flush() { printf "%s,%s,%d,%.1f,%.1f,%.1f\n", M[k], w, n, s / n, lo, hi; n = s = 0 }
			$0 == "--" { flush(); w = "ns3"; next }
			$0 == "==" { flush(); w = "tools_sim"; k++; next }
			{ v = $1 + 0; if (!n || v < lo) lo = v; if (!n || v > hi) hi = v; s += v; n++ }'
	} >"$out/seeds_loss1.csv"
fi

# ------------------------------------------------------------ plots
plots "$out" <<'EOF'

set output "loss.png"
set title "ns-3: 8 cross-leaf bulk flows (16 hosts, 100G) under random loss"
set xlabel "end-to-end random loss (%)"
set ylabel "aggregate goodput (Gb/s)"
set logscale x
set xrange [0.08:12]
set yrange [0:*]
plot for [t in "mroce gbn dctcp cubic"] \
     sprintf("< awk -F, '$2 == \"%s\" && $5 > 0' loss.csv", t) using 5:8 with linespoints lw 2 title t
unset logscale x
set xrange [*:*]

set output "plane.png"
set title "ns-3: 1 of 4 planes black-holed 2..8 ms (16 hosts x 4 x 25G)"
set xlabel "time (ms)"
set ylabel "aggregate goodput (Gb/s)"
set xrange [0:20]
plot for [t in "mroce gbn dctcp cubic"] \
     sprintf("< grep '^%s,' plane_timeline.csv", t) using 2:3 with lines lw 2 title t

set output "linkfail.png"
set title "ns-3: link leaf0-spine1 black-holed 2..8 ms (16 hosts, 100G)"
plot for [t in "mroce gbn dctcp cubic"] \
     sprintf("< grep '^%s,' linkfail_timeline.csv", t) using 2:3 with lines lw 2 title t
set xrange [*:*]

set style data histograms
set key top left
set style histogram clustered
set style fill solid 0.7
set boxwidth 0.8
set xrange [-0.6:*]
set yrange [0:*]

set output "incast.png"
set title "ns-3: incast, every sender 1 MiB: completion time"
set xlabel "transport"
set ylabel "completion (us)"
plot "< awk -F, '$1 == \"incast15\"' incast.csv" using 7:xtic(2) title "15:1", \
     "< awk -F, '$1 == \"incast63\"' incast.csv" using 7 title "63:1"

set output "allreduce.png"
set title "ns-3: ring all-reduce completion time"
set ylabel "completion (ms)"
plot "< awk -F, 'NR > 1 && $5 == 0' allreduce.csv" using ($7/1000):xtic(2) title "lossless", \
     "< awk -F, 'NR > 1 && $5 > 0' allreduce.csv" using ($7/1000) title "1% loss"

set output "alltoall.png"
set title "ns-3: all-to-all (MoE dispatch), 16 hosts, 256 KiB per pair"
set ylabel "completion (us)"
plot "< tail -n +2 alltoall.csv" using 7:xtic(2) title "completion", '' using 10 title "flow FCT p99"
EOF

# ------------------------------------------------------------ summary
cols="1 2 3 4 5 7 8 9 10 11 12 13 14 16 17 18 24"
perf="1 2 3 4 19 20 21 22 23"
{
	echo "<!-- SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB -->"
	echo "# mroce ns-3 model results"
	echo
	if [ -n "$report" ]; then
		echo "Report rebuilt by tools/ns3/run_scenarios.sh --report on $(date -u +%FT%TZ)" \
			"($(revision)) from the CSV files" \
			"of earlier runs (tools/ns3/README.md says which); ns-3 $(dpkg-query -W -f='${Version}' libns3-dev 2>/dev/null || echo '?')."
	else
		echo "Generated by tools/ns3/run_scenarios.sh ${quick:-full}${large:+ --large} on $(date -u +%FT%TZ)," \
			"$(revision), ns-3 $(dpkg-query -W -f='${Version}' libns3-dev 2>/dev/null || echo '?')."
	fi
	echo "Deterministic: same binary + seed gives the same numbers (wall_s and events_per_s excepted)."
	echo "Columns: completion_us = last message delivered; goodput = bytes delivered x 8 / completion;"
	echo "fct = per flow, first post to last byte; retx/rtos only for the models whose counters we read (mroce, gbn)."
	echo
	regression "$out/logs/regress.log"
	if [ -f "$out/bulk_seeds.csv" ]; then
		echo
		echo "## bulk: 8 cross-leaf flows, lossless, over seeds (aggregate goodput)"
		echo
		table "$out/bulk_seeds.csv"
	fi
	for f in bulk loss burst incast alltoall allreduce plane linkfail; do
		[ -f "$out/$f.csv" ] || continue
		echo
		echo "## $f"
		echo
		table "$out/$f.csv" "$cols"
	done
	for f in "$out/scale.csv" "$out/large/scale.csv" "$out/large/alltoall_groups.csv" \
		"$out/large/paths16/alltoall_groups.csv"; do
		[ -f "$f" ] || continue
		echo
		echo "## ${f#"$out"/} (simulator cost)"
		echo
		table "$f" "$cols"
		echo
		table "$f" "$perf"
	done
	if [ -f "$out/crosscheck.csv" ]; then
		echo
		echo "## Cross-check with tools/sim (tolerance 10%)"
		echo
		table "$out/crosscheck.csv"
	fi
	if [ -f "$out/seeds_loss1.csv" ]; then
		echo
		echo "## 1% loss over 8 seeds (loss workload, 32 MiB flows): both simulators"
		echo
		table "$out/seeds_loss1.csv"
	fi
	echo
	echo "Plots: loss.png plane.png linkfail.png incast.png allreduce.png alltoall.png"
} >"$out/summary.md"
echo "summary: $out/summary.md"
exit $status
