#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/bench.sh - `make bench` (issue #7): boot the two-guest testbed
# once, run every point for mroce and rxe alternately (bench/guest_a.sh
# drives, guest_b.sh serves), then summarise into bench/results/:
#   raw.csv       every run
#   summary.csv   median, min, max per point
#   README.md     tables (throughput, latency, CPU s/GB, loss sweep as
#                 ratios to each driver's own lossless goodput)
#   *.png         gnuplot plots (when gnuplot is installed)
#   fabric_fail.* plane-failure timeline on the multipath fabric
#
#   bench/bench.sh [--quick] [--out DIR]
# --quick: 1 repetition, 64 KiB only, 1 QP, losses 0 1 10 (a smoke test).
# Environment: BENCH_CONF="VAR=value ..." overrides guest_a.sh settings;
# BENCH_FABRIC=0 skips the plane-failure timeline (bench/fabric_timeline.sh);
# BENCH_LINK=tcp|tcp-nodelay|unix is the bandwidth session's link (tb pair
# --link; tcp).
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
res=$top/bench/results
quick=0
while [ $# -gt 0 ]; do
	case $1 in
	--quick) quick=1; shift ;;
	--out) res=$2; shift 2 ;;
	*) echo "usage: $0 [--quick] [--out DIR]" >&2; exit 2 ;;
	esac
done
[ -x "$top/build/tools/mroce_xfer" ] || { echo "bench: run make first" >&2; exit 1; }
raw=$(mktemp -d "${TMPDIR:-/tmp}/mroce-bench.XXXXXX")
# Two testbed sessions: bandwidth, loss sweep and TCP reference over the
# TCP link; latency over the Unix link, since the TCP link adds a 22 ms
# floor to every exchange (tools/testbed/README.md, "The link").
lat=$raw/lat
mkdir -p "$raw/a" "$lat/a" "$res"
conf() {
	if [ $quick = 1 ]; then
		echo 'REPS=1 SIZES=65536 QPSS=1 LOSSES="0 1 10" BW_TESTS="ib_write_bw ib_send_bw" LAT_TESTS=ib_send_lat'
	fi
	echo "${BENCH_CONF:-}"
	echo "$1"
}
conf 'LAT_TESTS=""' >"$raw/a/bench.conf"
conf 'BW_TESTS="" EV_TESTS="" LOSSES="" TCP_REF=0' >"$lat/a/bench.conf"
accel=$("$top/tools/testbed/tb" accel)
echo "bench: accel=$accel raw=$raw"
t0=$SECONDS
rc=0
"$top/tools/testbed/tb" pair --quiet --link "${BENCH_LINK:-tcp}" \
	--timeout "${BENCH_TIMEOUT:-2700}" --out "$raw" \
	"$top/bench/guest_a.sh" "$top/bench/guest_b.sh" || rc=$?
"$top/tools/testbed/tb" pair --quiet --link unix --timeout 600 --out "$lat" \
	"$top/bench/guest_a.sh" "$top/bench/guest_b.sh" || rc=$?
elapsed=$((SECONDS - t0))
[ -s "$raw/a/raw.csv" ] || { echo "bench: no results (tb rc $rc), see $raw" >&2; exit 1; }
cp "$raw/a/raw.csv" "$res/raw.csv"
[ -s "$lat/a/raw.csv" ] && tail -n +2 "$lat/a/raw.csv" >>"$res/raw.csv"
"$top/bench/summarize.sh" "$res" "$accel" "$elapsed" "$rc"
# Plane-failure timeline on the 4-link multipath fabric (one guest, ~1 min).
if [ "${BENCH_FABRIC:-1}" = 1 ]; then
	"$top/bench/fabric_timeline.sh" "$res" || echo "bench: fabric timeline failed" >&2
fi
echo "bench: done in ${elapsed}s (tb rc $rc): $res/README.md"
exit $rc
