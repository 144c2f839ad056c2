#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/demo.sh - boot a testbed guest, create mroce0 on a veth inside a
# network namespace and show it through libibverbs and iproute2's rdma tool;
# then the headline: goodput at 1% loss, mroce against rxe, two guests.
# Run by `make demo` after the build.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/demo
mkdir -p "$out"
echo "demo: booting a guest ($("$top/tools/testbed/tb" accel)); this takes a little while under TCG" >&2
"$top/tools/testbed/tb" run --quiet --out "$out" --timeout 600 "$top/tools/demo-guest.sh"
rc=$?
[ $rc = 0 ] || { echo "demo: guest failed (status $rc); console log: $out/console.log" >&2; exit $rc; }

# The headline: RDMA WRITE goodput at 1% packet loss against each driver's
# own lossless goodput, mroce and rxe in the same two-guest run (the bench
# machinery, reduced: one repetition; MROCE_DEMO_BENCH=0 skips it).
[ "${MROCE_DEMO_BENCH:-1}" = 1 ] || exit 0
echo "demo: mroce vs rxe at 1% loss, two guests (a few minutes under TCG)" >&2
BENCH_FABRIC=0 BENCH_CONF='REPS=1 SIZES=65536 QPSS=1 LOSSES="0 1" BW_TESTS=ib_write_bw LAT_TESTS= XFER=0' \
	"$top/bench/bench.sh" --out "$out/bench" >"$out/bench.log" 2>&1
rc=$?
if [ -s "$out/bench/loss.csv" ]; then
	echo "== goodput at 1% loss, as a ratio to the same driver's lossless goodput"
	awk -F, 'NR > 1 && $1 == 1 && $3 == "ib_write_bw" {
		printf "  %-6s %s of lossless (%s Gbit/s)\n", $2, $7, $4 }' "$out/bench/loss.csv"
	echo "   (full report: $out/bench/README.md; make bench for every point)"
else
	echo "demo: bench failed (status $rc), see $out/bench.log" >&2
fi
exit $rc
