#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/checkpatch.sh - run the kernel's checkpatch.pl (--no-tree) over every
# kernel C source and header of the module.  KTAP output, one result a file.
# CHECKPATCH=/path/to/checkpatch.pl overrides the linux-source-6.1 copy.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
cp=${CHECKPATCH:-/usr/src/linux-source-6.1/scripts/checkpatch.pl}
echo "KTAP version 1"
if [ ! -x "$cp" ] && [ ! -f "$cp" ]; then
	echo "not ok 1 checkpatch # checkpatch.pl not found at $cp (run tools/setup.sh)"
	echo "1..1"
	exit 1
fi
n=0
failed=0
mapfile -t files < <(cd "$top" && find drivers include/uapi include/mroce selftests/mroce/ktest -type f \
	\( -name '*.c' -o -name '*.h' \) 2>/dev/null | grep -v '\.mod\.c$' | sort)
for f in "${files[@]}"; do
	n=$((n + 1))
	out=$(cd "$top" && perl "$cp" --no-tree --terse --show-types -f "$f" 2>&1)
	if grep -qE ': (ERROR|WARNING):' <<<"$out"; then
		failed=$((failed + 1))
		echo "$out" | grep -E ': (ERROR|WARNING):' | sed 's/^/# /'
		echo "not ok $n checkpatch: $f"
	else
		echo "ok $n checkpatch: $f"
	fi
done
echo "1..$n"
[ "$failed" = 0 ]
