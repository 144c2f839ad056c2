#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/debugkernel/selfcheck.sh - the debug lane can fail: on the debug
# kernel (env from tools/debugkernel/env.sh) the checkers are configured,
# a deliberate kmemleak leak and a deliberate KASAN report each make a
# testbed run fail with status 3.  KTAP on stdout.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tb=$here/../testbed/tb
[ -n "${MROCE_TB_KERNEL:-}" ] || { echo "selfcheck: run with the environment of tools/debugkernel/env.sh" >&2; exit 2; }
work=$(mktemp -d "${TMPDIR:-/tmp}/dbg-selfcheck.XXXXXX")
trap 'rm -rf "$work"' EXIT
n=0
failed=0
result() { # result OK NAME [DIAG]
	n=$((n + 1))
	if [ "$1" = 0 ]; then
		echo "ok $n $2"
	else
		failed=$((failed + 1))
		[ -n "${3:-}" ] && echo "# $2: $3"
		echo "not ok $n $2"
	fi
}
echo "KTAP version 1"

"$tb" run --quiet --out "$work/leak" --timeout 600 "$here/guest/leak.sh" >/dev/null 2>"$work/leak.err"
rc=$?
c=$(cat "$work/leak/checkers" 2>/dev/null || echo "no result")
[ "$c" = "checkers missing: none" ]
result $? "debug kernel has KASAN, lockdep, kmemleak, UBSAN, DEBUG_LIST, DEBUG_OBJECTS, slub_debug" "$c"
[ "$rc" = 3 ] && grep -q '^unreferenced object' "$work/leak/.tb/kmemleak" 2>/dev/null
result $? "a kmemleak report fails the run (status 3)" "status $rc; $(tail -c 400 "$work/leak.err")"

"$tb" run --quiet --out "$work/kasan" --timeout 600 "$here/guest/kasan.sh" >/dev/null 2>"$work/kasan.err"
rc=$?
[ "$rc" = 3 ] && [ -e "$work/kasan/kasan" ] && grep -q 'BUG: KASAN' "$work/kasan/.tb/dmesg" "$work/kasan/console.log"
result $? "a KASAN report fails the run (status 3)" "status $rc; $(tail -c 400 "$work/kasan.err")"
echo "1..$n"
[ "$failed" = 0 ]
