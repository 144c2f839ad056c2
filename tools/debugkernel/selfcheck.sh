#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/debugkernel/selfcheck.sh - the debug lane can fail: on the debug
# kernel (env from tools/debugkernel/env.sh) the checkers are configured,
# a deliberate kmemleak leak, a deliberate KASAN report and lockdep switched
# off without a message (tools/debugkernel/lockdep-test, built here against
# MROCE_DEBUG_KDIR) each make a testbed run fail with status 3.  KTAP on
# stdout.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
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

# Lockdep off in the middle of a run.  The module is built in the tree (the
# guest sees only the tree) against the debug kernel.
ld=$top/build/debug-module/${MROCE_DEBUG_KREL:-unknown}/lockdep-test
rm -rf "$ld"
mkdir -p "$ld"
cp "$here/lockdep-test/Makefile" "$here/lockdep-test/mroce_lockdep_test.c" "$ld/"
if [ -n "${MROCE_DEBUG_KDIR:-}" ] &&
	nice -n 15 make -C "$MROCE_DEBUG_KDIR" M="$ld" modules >"$work/lockdep-build.log" 2>&1; then
	"$tb" run --quiet --out "$work/lockdep" --timeout 600 --env "LOCKDEP_KO=/mroce/${ld#"$top"/}/mroce_lockdep_test.ko" \
		"$here/guest/lockdep.sh" >/dev/null 2>"$work/lockdep.err"
	rc=$?
	[ "$rc" = 3 ] && [ -e "$work/lockdep/lockdep-before" ] && [ -e "$work/lockdep/lockdep-after" ] &&
		grep -q 'lockdep turned off during the run' "$work/lockdep.err"
	result $? "lockdep switched off during a run (no message) fails the run (status 3)" \
		"status $rc; $(tail -c 400 "$work/lockdep.err")"
else
	result 1 "lockdep switched off during a run (no message) fails the run (status 3)" \
		"building the test module failed: $(tail -c 400 "$work/lockdep-build.log" 2>/dev/null || echo "no MROCE_DEBUG_KDIR")"
fi
echo "1..$n"
[ "$failed" = 0 ]
