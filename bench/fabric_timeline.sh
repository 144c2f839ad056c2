#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/fabric_timeline.sh [RESULTS_DIR] - plane-failure timeline on
# the 4-link multipath fabric of selftests/mroce/test_fabric.sh: one guest
# runs the "fail" scenario (link p2 blackholed for 4 s mid-transfer), the
# sender's paths file sampled every 0.3 s becomes
#   fabric_fail.csv  t_s,mbps,paths_up,paths_down,retx,steers,downs
#   fabric_fail.png  goodput (tx Mbit/s) and paths down over time
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
res=${1:-$top/bench/results}
raw=$(mktemp -d "${TMPDIR:-/tmp}/mroce-fabric.XXXXXX")
mkdir -p "$res"
"$top/tools/testbed/tb" run --quiet --timeout 600 --out "$raw" \
	"$top/selftests/mroce/test_fabric.sh" ecmp fail | tee "$res/fabric_fail.ktap" || true
tl=$raw/test_fabric/fail.timeline
ev=$raw/test_fabric/fail.events
[ -s "$tl" ] || { echo "fabric_timeline: no timeline in $raw" >&2; exit 1; }
t0=$(awk '$1 == "t" {print $2; exit}' "$tl")
awk -v t0="$t0" '
function flush() {
	if (have) {
		d = by - pby
		if (d < 0) d = by	# a new QP (the send phase): counters restart
		if (pt != "") printf "%.3f,%.3f,%d,%d,%d,%d,%d\n", t - t0, d * 8 / (t - pt) / 1e6, up, dn, rx, st, dw
		pt = t; pby = by
	}
}
BEGIN { print "t_s,mbps,paths_up,paths_down,retx,steers,downs"; pt = "" }
$1 == "t" { flush(); t = $2; by = 0; up = 0; dn = 0; rx = 0; st = 0; dw = 0; have = 0; next }
$1 == "qpn" { next }
{ have = 1; by += $10; if ($4 == "up") up++; else dn++; rx += $13; st += $16; dw += $17 }
END { flush() }' "$tl" >"$res/fabric_fail.csv"
down=$(awk -v t0="$t0" '$1 == "down" {printf "%.3f", $2 - t0}' "$ev" 2>/dev/null || true)
back=$(awk -v t0="$t0" '$1 == "up" {printf "%.3f", $2 - t0}' "$ev" 2>/dev/null || true)
echo "fabric_timeline: link p2 down at ${down:-?} s, back at ${back:-?} s (from the first sample)" | tee "$res/fabric_fail.txt"
command -v gnuplot >/dev/null || exit 0
gnuplot <<GP
set terminal png size 900,500
set output '$res/fabric_fail.png'
set datafile separator ','
set title 'plane failure: link p2 of 4 blackholed mid-transfer (sender tx rate, paths down)'
set xlabel 'time (s)'
set ylabel 'sender tx Mbit/s'
set y2label 'paths down (of 16)'
set y2range [0:16]
set y2tics
set ytics nomirror
set grid
$( [ -n "$down" ] && echo "set arrow from $down, graph 0 to $down, graph 1 nohead lc rgb 'red' dt 2" )
$( [ -n "$back" ] && echo "set arrow from $back, graph 0 to $back, graph 1 nohead lc rgb 'dark-green' dt 2" )
plot '$res/fabric_fail.csv' every ::1 using 1:2 with linespoints lw 2 title 'tx Mbit/s', \
     '' every ::1 using 1:4 axes x1y2 with steps lw 2 title 'paths down'
GP
