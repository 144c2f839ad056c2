#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/demo.sh - boot a testbed guest, create mroce0 on a veth inside a
# network namespace and show it through libibverbs and iproute2's rdma tool.
# Run by `make demo` after the build.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/demo
mkdir -p "$out"
echo "demo: booting a guest ($("$top/tools/testbed/tb" accel)); this takes a little while under TCG" >&2
"$top/tools/testbed/tb" run --quiet --out "$out" --timeout 600 "$top/tools/demo-guest.sh"
rc=$?
[ $rc = 0 ] || echo "demo: guest failed (status $rc); console log: $out/console.log" >&2
exit $rc
