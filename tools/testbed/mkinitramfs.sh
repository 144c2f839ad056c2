#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# mkinitramfs.sh KVER OUT [MODDIR] - build the testbed initramfs from installed
# packages (modules from MODDIR=BASE/lib/modules/KVER when given, e.g. the
# debug kernel's, else from /lib/modules/KVER): busybox, the kernel modules the tests need (with everything they
# depend on), the RDMA/perftest/iproute2 userland with its libraries, and
# tools/testbed/init.sh as /init.  mroce's own module and provider are NOT
# included: guests load them from the shared source tree.
set -euo pipefail
kver=$1
out=$2
moddir=${3:-/lib/modules/$kver}
modbase=${moddir%/lib/modules/"$kver"}
[ "$modbase/lib/modules/$kver" = "$moddir" ] || { echo "mkinitramfs: $moddir is not BASE/lib/modules/$kver" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
root=$(mktemp -d "${TMPDIR:-/tmp}/mroce-initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT

die() { echo "mkinitramfs: $*" >&2; exit 2; }
[ -d "$moddir/kernel" ] || die "no modules for $kver (run tools/setup.sh)"
[ -x /bin/busybox ] || die "busybox-static is not installed (run tools/setup.sh)"

mkdir -p "$root"/{bin,usr/bin,usr/sbin,etc,proc,sys,dev,tmp,run,mroce,out,hostroot,root,var/tmp}
mkdir -p "$root/usr/lib/x86_64-linux-gnu" "$root/usr/lib/modules/$kver"
ln -s usr/lib "$root/lib"
ln -s usr/lib "$root/lib64"
ln -s usr/sbin "$root/sbin"
cp /bin/busybox "$root/bin/busybox"
ln -s ../usr/bin/bash "$root/bin/bash"

# Userland: real tools in /usr/bin and /usr/sbin (they win over busybox in
# PATH order for bash; busybox ash would still prefer its own applets).
bins=(bash ip tc rdma ss nstat ethtool strace taskset timeout kmod
	ibv_devices ibv_devinfo ibv_rc_pingpong ibv_uc_pingpong ibv_ud_pingpong ibv_srq_pingpong
	ibv_xsrq_pingpong ibv_asyncwatch rping ucmatose udaddy mckey rdma_client rdma_server
	rdma_xclient rdma_xserver riostream rstream cmtime iperf3
	ib_write_bw ib_write_lat ib_read_bw ib_read_lat ib_send_bw ib_send_lat
	ib_atomic_bw ib_atomic_lat raw_ethernet_bw
	flock setsid nproc stdbuf)
found=()
for b in "${bins[@]}"; do
	p=$(command -v "$b" 2>/dev/null) || continue
	p=$(readlink -f "$p")
	# Every tool under both /usr/bin and /usr/sbin: scripts name either.
	cp "$p" "$root/usr/bin/$b"
	ln -sf "../bin/$b" "$root/usr/sbin/$b"
	found+=("$p")
done
for t in modprobe insmod rmmod lsmod modinfo depmod; do
	ln -sf kmod "$root/usr/bin/$t"
	ln -sf ../bin/kmod "$root/usr/sbin/$t"
done
# stdbuf preloads this helper.
[ -f /usr/libexec/coreutils/libstdbuf.so ] &&
	install -D /usr/libexec/coreutils/libstdbuf.so "$root/usr/libexec/coreutils/libstdbuf.so"

# busybox applets for everything else (never over a real tool).
for a in $("$root/bin/busybox" --list); do
	[ -e "$root/usr/bin/$a" ] || [ -e "$root/usr/sbin/$a" ] || [ -e "$root/bin/$a" ] || [ -L "$root/bin/$a" ] ||
		ln -s busybox "$root/bin/$a"
done

# Verbs providers and their configuration.
provs=(/usr/lib/x86_64-linux-gnu/libibverbs/*.so)
mkdir -p "$root/usr/lib/x86_64-linux-gnu/libibverbs" "$root/etc/libibverbs.d"
cp -L "${provs[@]}" "$root/usr/lib/x86_64-linux-gnu/libibverbs/"
cp /etc/libibverbs.d/*.driver "$root/etc/libibverbs.d/"
[ -d /etc/rdma ] && cp -a /etc/rdma "$root/etc/"

# Shared libraries of all of the above, plus what C++ programs built in the
# tree need (libstdc++, libgcc_s) and gtest when installed.
extra_libs=(libstdc++.so.6 libgcc_s.so.1 libm.so.6 libibverbs.so.1 librdmacm.so.1 libnl-3.so.200
	libnl-route-3.so.200 libgtest.so libgtest_main.so libgmock.so)
libs=()
for l in "${extra_libs[@]}"; do
	p=$(ldconfig -p | awk -v n="$l" '$1 == n && /x86-64/ && !f {print $NF; f = 1}')
	[ -n "$p" ] && libs+=("$p")
done
while read -r l; do libs+=("$l"); done < <(
	ldd "${found[@]}" "${provs[@]}" "${libs[@]}" 2>/dev/null |
		awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\/lib64\// {print $1}' | sort -u)
for l in "${libs[@]}"; do
	r=$(readlink -f "$l")
	install -D -m 0755 "$r" "$root/usr/lib/x86_64-linux-gnu/$(basename "$l")"
done
ln -sf x86_64-linux-gnu/ld-linux-x86-64.so.2 "$root/usr/lib/ld-linux-x86-64.so.2"
[ -e "$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" ] || die "no dynamic loader found"

# Kernel modules and their dependencies.
mods=(virtio_pci virtio_net virtio_console virtio_blk 9pnet_virtio 9p veth dummy bonding macvlan
	sch_netem sch_tbf sch_red sch_fq_codel sch_prio sch_htb sch_ingress cls_u32 cls_flower
	cls_matchall act_mirred act_gact ib_core ib_uverbs rdma_ucm rdma_cm ib_cm iw_cm ib_umad
	rdma_rxe udp_tunnel ip6_udp_tunnel crc32_generic crc32-pclmul crc32c_generic crc32c-intel
	nf_tables nvme-rdma nvmet-rdma null_blk)
{
for m in "${mods[@]}"; do
	modprobe ${modbase:+-d "$modbase"} -S "$kver" --show-depends "$m" 2>/dev/null || echo "mkinitramfs: no module $m" >&2
done
# Only on kernels that have them (the debug kernel's checker self-check).
for m in kmemleak-test kasan_test_module; do
	modprobe ${modbase:+-d "$modbase"} -S "$kver" --show-depends "$m" 2>/dev/null || true
done
} | awk '$1 == "insmod" {print $2}' | sort -u | while read -r f; do
	install -D -m 0644 "$f" "$root/usr/lib/modules/$kver/${f#"$moddir"/}"
done
for f in modules.order modules.builtin modules.builtin.modinfo; do
	[ -f "$moddir/$f" ] && cp "$moddir/$f" "$root/usr/lib/modules/$kver/"
done
depmod -b "$root" "$kver"

install -m 0755 "$here/init.sh" "$root/init"
echo "root:x:0:0:root:/root:/bin/bash" >"$root/etc/passwd"
echo "root:x:0:" >"$root/etc/group"
echo "127.0.0.1 localhost" >"$root/etc/hosts"
tmp=$out.tmp.$$
(cd "$root" && find . -print0 | cpio --null -o -H newc --quiet | gzip -1) >"$tmp"
mv -f "$tmp" "$out"
