#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/ucx-uct-pair/run.sh [--out DIR] - ucx_perftest at the UCT level
# (-d mroce0:1 -x rc_verbs / ud_verbs) between two testbed guests.  Its
# server takes all parameters from the client, the device name included,
# so the two ends need devices of the same name: two kernels, not two
# namespaces (selftests/mroce/test_ucx.sh covers the UCP level there).
# UCX comes from the host (tb --hostroot).  KTAP on stdout; under TCG the
# numbers are only good for comparisons within one run.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/ucx-uct-pair.XXXXXX")
if [ "${1:-}" = --out ]; then
	out=$2
	mkdir -p "$out"
fi
g=$top/tools/ucx-uct-pair/guest.sh
exec "$top/tools/testbed/tb" pair --hostroot --quiet --out "$out" --timeout 2400 "$g" "$g"
