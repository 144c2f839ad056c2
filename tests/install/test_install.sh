#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tests/install/test_install.sh - `make install DESTDIR=... PREFIX=/usr`
# stages the module, the provider, its .driver file, mroce(7), mroce-paths
# and the Wireshark dissector under DESTDIR and writes nothing outside it;
# a relative DESTDIR is taken from the directory make runs in (not the
# kernel's build directory, where Kbuild's modules_install runs);
# `make uninstall DESTDIR=...` removes them again.  Needs `make all` first
# (tools/check.sh host).  KTAP.
set -uo pipefail
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=0 fail=0
ok() { n=$((n + 1)); echo "ok $n $1"; }
not_ok() { n=$((n + 1)); fail=$((fail + 1)); echo "not ok $n $1"; [ -n "${2:-}" ] && echo "# $2"; }
files=(
	lib/modules/*/updates/rdma_mroce.ko
	usr/lib/x86_64-linux-gnu/libibverbs/libmroce-rdmav34.so
	etc/libibverbs.d/mroce.driver
	usr/share/man/man7/mroce.7
	usr/sbin/mroce-paths
	usr/lib/x86_64-linux-gnu/wireshark/plugins/mroce.lua
)
echo "KTAP version 1"
echo "1..$((${#files[@]} + 5))"
# what the real system has before, to see that the install leaves it alone
stamp() { for f in "${files[@]}"; do stat -c '%n %Y' /$f 2>/dev/null; done; }
before=$(stamp)
if make -C "$top" --no-print-directory install DESTDIR="$tmp/root" PREFIX=/usr >"$tmp/log" 2>&1; then
	ok "make install DESTDIR PREFIX=/usr"
else
	sed 's/^/# /' "$tmp/log" | tail -20
	not_ok "make install DESTDIR PREFIX=/usr"
fi
for f in "${files[@]}"; do
	# shellcheck disable=SC2086 # the module's path is a glob (KVER)
	if [ -s "$(echo $tmp/root/$f)" ]; then ok "staged $f"; else not_ok "staged $f"; fi
done
after=$(stamp)
if [ "$before" = "$after" ]; then
	ok "nothing installed outside DESTDIR"
else
	not_ok "nothing installed outside DESTDIR" "before: $before; after: $after"
fi
if grep -qx 'driver mroce' "$tmp/root/etc/libibverbs.d/mroce.driver" &&
   modinfo -F name "$tmp"/root/lib/modules/*/updates/rdma_mroce.ko | grep -qx rdma_mroce; then
	ok "the staged driver file and module are mroce's"
else
	not_ok "the staged driver file and module are mroce's"
fi
# shellcheck disable=SC2016 # $(KDIR) is make's
kdir=$(make -C "$top" --no-print-directory -s --eval 'print-kdir: ; @echo $(KDIR)' print-kdir 2>/dev/null)
rel=mroce-rel-destdir.$$
if (cd "$tmp" && make -f "$top/Makefile" --no-print-directory install DESTDIR=$rel PREFIX=/usr) >"$tmp/log" 2>&1 &&
   [ -s "$(echo "$tmp/$rel"/lib/modules/*/updates/rdma_mroce.ko)" ] &&
   [ -s "$tmp/$rel/usr/lib/x86_64-linux-gnu/libibverbs/libmroce-rdmav34.so" ] &&
   [ -n "$kdir" ] && [ ! -e "$kdir/$rel" ]; then
	ok "make install DESTDIR=relative stages under the directory make runs in"
else
	sed 's/^/# /' "$tmp/log" | tail -10
	not_ok "make install DESTDIR=relative stages under the directory make runs in" "kdir '$kdir'"
	# what a Kbuild-relative INSTALL_MOD_PATH wrote into the headers
	[ -n "$kdir" ] && rm -rf "${kdir:?}/$rel"
fi
make -C "$top" --no-print-directory uninstall DESTDIR="$tmp/root" >"$tmp/log" 2>&1
left=$(find "$tmp/root" -type f ! -name 'modules.*')
if [ -z "$left" ]; then
	ok "make uninstall DESTDIR removes them"
else
	not_ok "make uninstall DESTDIR removes them" "left: $(echo $left)"
fi
echo "# $((n - fail)) passed, $fail failed"
[ "$fail" = 0 ]
