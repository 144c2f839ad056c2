#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/debugkernel/module.sh KDIR OUTDIR - build rdma_mroce.ko against the
# kernel build tree KDIR (the debug kernel's, see build.sh) without touching
# the stock build in drivers/infiniband/sw/mroce/: the module sources and the
# headers they include are copied to OUTDIR/tree/ and built there; the result
# is OUTDIR/rdma_mroce.ko (printed), with the kernel-verbs test module
# OUTDIR/mroce_ktest.ko beside it.  Incremental: unchanged sources are not
# rebuilt.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
die() { echo "debugkernel/module: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: $0 KDIR OUTDIR"
kdir=$1
out=$2
[ -f "$kdir/Makefile" ] && [ -f "$kdir/Module.symvers" ] || die "$kdir is not a built kernel tree"
mkdir -p "$out/tree/drivers/infiniband/sw" "$out/tree/include"
out=$(realpath "$out")
tree=$out/tree
# Mirror the sources (cp -u keeps the mtimes make relies on; files removed
# from the tree are removed here too).
sync_dir() { # sync_dir SRC DST
	rm -rf "$2.new"
	mkdir -p "$2"
	(cd "$1" && find . -type f \( -name '*.[ch]' -o -name Makefile -o -name Kbuild -o -name Kconfig \) -print0) |
		(cd "$1" && xargs -0r cp --parents -u -p -t "$2")
	(cd "$2" && find . -type f \( -name '*.[ch]' -o -name Makefile -o -name Kbuild -o -name Kconfig \) -print0) |
		while IFS= read -r -d '' f; do [ -e "$1/$f" ] || rm -f "$2/$f" "$2/${f%.c}.o"; done
}
sync_dir "$top/drivers/infiniband/sw/mroce" "$tree/drivers/infiniband/sw/mroce"
sync_dir "$top/include" "$tree/include"
nice -n 15 make -C "$kdir" M="$tree/drivers/infiniband/sw/mroce" CONFIG_RDMA_MROCE=m -j"${MROCE_DEBUGKERNEL_JOBS:-2}" modules >"$out/build.log" 2>&1 ||
	{ tail -n 40 "$out/build.log" >&2; die "module build failed (see $out/build.log)"; }
if grep -E 'warning:' "$out/build.log" >&2; then
	die "the module build against the debug kernel has warnings (see $out/build.log)"
fi
cp "$tree/drivers/infiniband/sw/mroce/rdma_mroce.ko" "$out/rdma_mroce.ko"
# The kernel-verbs test module (test_kverbs.sh), against the same kernel.
sync_dir "$top/selftests/mroce/ktest" "$tree/selftests/mroce/ktest"
nice -n 15 make -C "$kdir" M="$tree/selftests/mroce/ktest" modules >"$out/ktest-build.log" 2>&1 ||
	{ tail -n 40 "$out/ktest-build.log" >&2; die "mroce_ktest build failed (see $out/ktest-build.log)"; }
if grep -E 'warning:' "$out/ktest-build.log" >&2; then
	die "the mroce_ktest build against the debug kernel has warnings (see $out/ktest-build.log)"
fi
cp "$tree/selftests/mroce/ktest/mroce_ktest.ko" "$out/mroce_ktest.ko"
echo "$out/rdma_mroce.ko"
