#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# selftests/run.sh - boot a testbed guest and run the mroce selftests in it.
#
#   selftests/run.sh [--out DIR] [TEST.sh ...]
#
# Needs `make` first (module, provider and test programs in the tree).  KTAP
# on stdout; exit status non-zero when a test failed, the guest timed out or
# its kernel log has a WARNING/BUG/Oops/KASAN/Call Trace.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/selftests-guest
if [ "${1:-}" = --out ]; then
	out=$2
	shift 2
fi
mkdir -p "$out"
exec "$top/tools/testbed/tb" run --quiet --out "$out" --timeout "${MROCE_SELFTEST_TIMEOUT:-1200}" \
	"$top/selftests/mroce/run_guest.sh" "$@"
