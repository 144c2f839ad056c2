#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# selftests/run_pair.sh [--out DIR] - the real clients (pingpongs, rping,
# perftest) between two testbed guests on a socket link
# (selftests/mroce/pair_guest.sh).  KTAP on stdout from guest a; tb fails
# the run when either guest's kernel log has a problem report.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/selftests-pair
if [ "${1:-}" = --out ]; then
	out=$2
	shift 2
fi
mkdir -p "$out"
g=$top/selftests/mroce/pair_guest.sh
exec "$top/tools/testbed/tb" pair --quiet --out "$out" --timeout "${MROCE_SELFTEST_TIMEOUT:-1200}" "$g" "$g"
