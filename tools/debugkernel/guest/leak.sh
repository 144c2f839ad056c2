#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Guest half of selfcheck.sh: the checkers are configured, then a module
# leaks memory on purpose (the run must then fail with a kmemleak report).
set -uo pipefail
missing=
config=$(zcat /proc/config.gz)
for c in KASAN KASAN_GENERIC KASAN_INLINE PROVE_LOCKING DEBUG_ATOMIC_SLEEP DEBUG_KMEMLEAK UBSAN \
	UBSAN_BOUNDS UBSAN_SHIFT DEBUG_LIST SLUB_DEBUG DEBUG_OBJECTS; do
	grep -qx "CONFIG_$c=y" <<<"$config" || missing+=" $c"
done
grep -qx "# CONFIG_DEBUG_KMEMLEAK_AUTO_SCAN is not set" <<<"$config" || missing+=" !DEBUG_KMEMLEAK_AUTO_SCAN"
grep -qw 'slub_debug=FZP' /proc/cmdline || missing+=" slub_debug=FZP"
[ -w /sys/kernel/debug/kmemleak ] || missing+=" /sys/kernel/debug/kmemleak"
echo "checkers missing:${missing:- none}" >/out/checkers
modprobe kmemleak-test || echo "modprobe kmemleak-test failed" >>/out/checkers
exit 0
