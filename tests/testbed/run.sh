#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The testbed's own tests (tb selftest): run on the host, each boots guests
# running the scripts beside this one.  KTAP; the last line is
# "N passed, N failed".
set -uo pipefail
tb=$(cd "$(dirname "$0")/../.." && pwd)/tools/testbed/tb
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/tb-selftest.XXXXXX")
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

t0=$(date +%s.%N)
rd=$("$tb" initramfs 2>/dev/null)
result $? "initramfs builds"
t1=$(date +%s.%N)
rd2=$("$tb" initramfs 2>&1)
t2=$(date +%s.%N)
[ "$rd" = "$rd2" ] && [ -s "$rd" ]
result $? "initramfs is reused from the cache" "$rd2"
echo "# initramfs: first call $(awk -v a="$t0" -v b="$t1" -v c="$t2" 'BEGIN {printf "%.1fs, cached %.2fs", b - a, c - b}')"
acc=$("$tb" accel)
case "$acc" in kvm | tcg) r=0 ;; *) r=1 ;; esac
result $r "accelerator probe answers ($acc)"

# One guest: arguments, exit status, /out, read-only /mroce, netns.
t0=$(date +%s)
"$tb" run --quiet --out "$work/basic" --timeout 300 "$here/basic.sh" "one" "two words" >"$work/basic.txt" 2>&1
rc=$?
echo "# single guest boot-run-poweroff: $(($(date +%s) - t0))s"
[ $rc = 7 ]
result $? "exit status propagates (exit 7 -> 7)" "got $rc"
grep -qx 'args=2 one|two words' "$work/basic.txt"
result $? "arguments reach the guest script" "$(head -3 "$work/basic.txt")"
grep -qx written "$work/basic/result.txt" 2>/dev/null
result $? "files written to /out appear on the host"
grep -qx 'mroce read-only' "$work/basic.txt"
result $? "/mroce is read-only in the guest"
grep -qx 'netns ping ok' "$work/basic.txt"
result $? "netns topology: ns_a pings ns_b over veth"
grep -q '^ok 1 ktap-from-two-processes' "$work/basic.txt" && grep -q '^ok 2 ktap-from-two-processes' "$work/basic.txt"
result $? "KTAP numbering is shared between guest processes"

"$tb" run --quiet --out "$work/warn" --timeout 300 "$here/warn.sh" >/dev/null 2>"$work/warn.err"
rc=$?
[ $rc = 3 ]
result $? "a WARNING in the guest kernel log fails the run with 3" "got $rc"

t0=$(date +%s)
"$tb" run --quiet --out "$work/hang" --timeout 30 "$here/hang.sh" >/dev/null 2>&1
rc=$?
[ $rc = 124 ] && ! pgrep -f "path=$work/hang," >/dev/null
result $? "a timeout returns 124 and stops QEMU" "got $rc after $(($(date +%s) - t0))s"

t0=$(date +%s)
"$tb" pair --quiet --out "$work/pair" --timeout 600 "$here/pair-a.sh" "$here/pair-b.sh" >"$work/pair.txt" 2>&1
rc=$?
echo "# pair boot-run-poweroff: $(($(date +%s) - t0))s"
grep -qx 'ping a ok' "$work/pair.txt"
result $? "pair topology: guest b pings guest a" "$(tail -5 "$work/pair.txt")"
grep -qx 'rxe pingpong ok' "$work/pair.txt"
result $? "pair topology: rxe RC ping-pong between the guests"
[ $rc = 0 ]
result $? "pair run succeeds" "got $rc"
[ $rc = 0 ] || sed 's/^/# /' "$work/pair.txt" | tail -30

echo "1..$n"
echo "$((n - failed)) passed, $failed failed"
[ $failed = 0 ]
