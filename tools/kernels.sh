#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/kernels.sh - the Debian 12 kernels mroce is built and tested against
# (README, "Kernels").
#
#   tools/kernels.sh list               the kernels `build` checks, one a line
#   tools/kernels.sh build [--ktap] [KREL...]
#                                       build rdma_mroce.ko and mroce_ktest.ko
#                                       against each kernel's headers: "built",
#                                       "skipped (reason)" or "FAILED" per
#                                       kernel (--ktap: as KTAP); fails on an
#                                       error or a warning
#   tools/kernels.sh env FLAVOUR|KREL   the variables for booting the testbed
#                                       on that kernel with the module built
#                                       for it (selftests/run.sh reads them
#                                       when MROCE_KFLAVOUR is set)
#   tools/kernels.sh kdir KREL          the headers directory (fetched if needed)
#
# The kernels: Debian's 6.1 ABI in use (tools/setup.sh: MROCE_KVER or the
# installed 6.1.0-N-amd64) in its three flavours, -amd64, -rt-amd64
# (PREEMPT_RT) and -cloud-amd64, and the newest 6.12 kernel bookworm ships
# (bookworm-security carries linux-6.12 for the move to trixie), -amd64
# and -rt-amd64 (MROCE_KERNELS overrides the list).  FLAVOUR is amd64, rt
# or cloud (of the 6.1 ABI in use).
#
# Only the 6.1 -amd64 headers are installed (tools/setup.sh).  The others are
# fetched with `apt-get download` and unpacked into
# $MROCE_CACHE/kernels/KREL (about 60 MB each; the -rt image, 400 MB
# unpacked, only for `env`), not installed: an installed
# /lib/modules/6.1.0-N-rt-amd64/build would become the kernel a plain `make`
# builds for (the Makefile's fallback takes the newest 6.1.0-*), and DKMS
# would build every installed DKMS module for it.
set -euo pipefail
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cache=${MROCE_CACHE:-/var/cache/mroce}
mkdir -p "$cache" 2>/dev/null && [ -w "$cache" ] || cache=${HOME:-/tmp}/.cache/mroce
kcache=$cache/kernels
out_base=${MROCE_KERNELS_OUT:-$top/build/kernels}
die() { echo "kernels: $*" >&2; exit 2; }

# The 6.1 ABI in use, as tools/setup.sh and tools/testbed/tb pick it.
base_kver() {
	local k
	if [ -n "${MROCE_KVER:-}" ]; then
		echo "$MROCE_KVER"
		return
	fi
	k=$(find /lib/modules -mindepth 1 -maxdepth 1 -printf '%f\n' 2>/dev/null |
		grep -E '^6\.1\.0-[0-9]+-amd64$' | sort -V -r |
		while read -r k; do [ -e "/lib/modules/$k/build/Makefile" ] && echo "$k"; done | head -1)
	[ -n "$k" ] && { echo "$k"; return; }
	die "no Debian 6.1 -amd64 kernel headers installed (run make setup)"
}

# The newest Debian 12 kernel newer than 6.1 whose headers apt knows of,
# e.g. 6.12.118+deb12-amd64 (nothing when there is none).
newer_kver() {
	apt-cache pkgnames linux-headers- 2>/dev/null |
		sed -nE 's/^linux-headers-([0-9]+\.[0-9]+\.[0-9]+\+deb12)-amd64$/\1/p' |
		sort -V | tail -1
}

cmd_list() {
	local b n
	if [ -n "${MROCE_KERNELS:-}" ]; then
		# shellcheck disable=SC2086 # a space-separated list
		printf '%s\n' $MROCE_KERNELS
		return
	fi
	b=$(base_kver)
	echo "$b"
	echo "${b%-amd64}-rt-amd64"
	echo "${b%-amd64}-cloud-amd64"
	n=$(newer_kver)
	if [ -n "$n" ]; then
		echo "$n-amd64"
		echo "$n-rt-amd64"
	fi
}

# The installed headers (the ABI tools/setup.sh installs), else the cache's.
kdir_of() {
	local krel=$1
	if [ -e "/lib/modules/$krel/build/Makefile" ]; then
		realpath "/lib/modules/$krel/build"
	else
		echo "$kcache/$krel/root/usr/src/linux-headers-$krel"
	fi
}

# pkg_deps PKG: the packages PKG needs from the kernel build (the common
# headers and kbuild), as apt-cache lists them.
pkg_deps() {
	apt-cache depends "$1" 2>/dev/null |
		awk '$1 ~ /Depends:$/ && $2 ~ /^linux-(headers-.*-common(-rt)?|kbuild-.*)$/ {print $2}' | sort -u
}

# fetch KREL [image]: unpack the headers (and with image, the kernel image
# and modules) of KREL into $kcache/KREL/root.  Returns 3 when apt has no
# such package.
fetch() {
	local krel=$1 what=${2:-} d pkgs=() p tmp
	d=$kcache/$krel
	pkgs=("linux-headers-$krel")
	[ "$what" = image ] && pkgs+=("linux-image-$krel")
	for p in "${pkgs[@]}"; do
		[ -e "$d/.done-$p" ] && continue
		apt-cache show "$p" >/dev/null 2>&1 || return 3
		local all=("$p")
		[ "$p" = "linux-headers-$krel" ] && mapfile -t -O 1 all < <(pkg_deps "$p")
		tmp=$(mktemp -d "$cache/.kernels-dl.XXXXXX")
		chmod 755 "$tmp"
		echo "kernels: fetching ${all[*]}" >&2
		(cd "$tmp" && apt-get -q -o APT::Sandbox::User=root download "${all[@]}" >/dev/null) ||
			{ rm -rf "$tmp"; die "apt-get download ${all[*]} failed"; }
		mkdir -p "$d/root"
		for f in "$tmp"/*.deb; do dpkg-deb -x "$f" "$d/root"; done
		rm -rf "$tmp"
		if [ "$p" = "linux-headers-$krel" ]; then
			# The flavour's Makefile includes the common headers by
			# their absolute path under /usr/src.
			sed -i "s|^include /usr/src/|include $d/root/usr/src/|" \
				"$d/root/usr/src/linux-headers-$krel/Makefile"
		else
			depmod -b "$d/root" "$krel"
		fi
		touch "$d/.done-$p"
	done
}

# config_skip KDIR: why the module cannot be built for this kernel (its
# Kconfig dependencies, as dkms.conf's BUILD_EXCLUSIVE_CONFIG), or nothing.
config_skip() {
	local c
	for c in CONFIG_INFINIBAND CONFIG_INFINIBAND_VIRT_DMA CONFIG_INET; do
		grep -qE "^$c=[ym]" "$1/.config" || { echo "$c is not set in its .config"; return; }
	done
}

# build_one KREL: 0 built, 77 skipped, 1 failed; one report line on stdout.
build_one() {
	local krel=$1 kdir why out t0 rc=0
	kdir=$(kdir_of "$krel")
	if [ ! -e "$kdir/Makefile" ]; then
		fetch "$krel" || rc=$?
		if [ "$rc" = 3 ]; then
			echo "$krel: skipped (no linux-headers-$krel in the configured apt sources)"
			return 77
		fi
	fi
	why=$(config_skip "$kdir")
	if [ -n "$why" ]; then
		echo "$krel: skipped ($why: the module needs the kernel's RDMA core; DKMS skips it too)"
		return 77
	fi
	# Headers that ship vmlinux (6.12) make BTF for the module: pahole.
	if [ -f "$kdir/vmlinux" ] && grep -q '^CONFIG_DEBUG_INFO_BTF_MODULES=y' "$kdir/.config" &&
		! command -v pahole >/dev/null; then
		MROCE_SETUP_EXTRA=pahole "$top/tools/setup.sh" >&2 || {
			echo "$krel: FAILED (its headers need pahole: apt-get install pahole)"
			return 1
		}
	fi
	out=$out_base/$krel
	mkdir -p "$out"
	t0=$SECONDS
	if ! MROCE_DEBUGKERNEL_JOBS=${JOBS:-2} "$top/tools/debugkernel/module.sh" "$kdir" "$out" >/dev/null 2>"$out/errors"; then
		echo "$krel: FAILED ($(cat "$out/build.log" "$out/ktest-build.log" 2>/dev/null |
			grep -m1 -E 'error|Error|\*\*\*'); see $out/build.log)"
		return 1
	fi
	# module.sh fails on compiler warnings; modpost's count as well.
	if grep -hiE 'warning' "$out/build.log" "$out/ktest-build.log" >"$out/warnings"; then
		echo "$krel: FAILED (warnings, see $out/warnings)"
		return 1
	fi
	echo "$krel: built ($((SECONDS - t0)) s; $out/rdma_mroce.ko, $(modinfo -F vermagic "$out/rdma_mroce.ko" | xargs))"
}

# cmd_build [--ktap] [KREL...]: --ktap reports each kernel as a KTAP
# result (tools/check.sh host): skipped ones as SKIP.
cmd_build() {
	local ktap='' krels k built=0 skipped=0 failed=0 rc line n=0
	[ "${1:-}" = --ktap ] && { ktap=1; shift; }
	krels=("$@")
	[ ${#krels[@]} -gt 0 ] || mapfile -t krels < <(cmd_list)
	[ -n "$ktap" ] && echo "KTAP version 1"
	for k in "${krels[@]}"; do
		rc=0
		n=$((n + 1))
		line=$(build_one "$k") || rc=$?
		case $rc in
		0) built=$((built + 1)) ;;
		77) skipped=$((skipped + 1)) ;;
		*) failed=$((failed + 1)) ;;
		esac
		if [ -z "$ktap" ]; then
			echo "$line"
			continue
		fi
		echo "# $line"
		case $rc in
		0) echo "ok $n module builds against $k" ;;
		77) echo "ok $n module builds against $k # SKIP ${line#*skipped }" ;;
		*) echo "not ok $n module builds against $k" ;;
		esac
	done
	echo "${ktap:+# }kernels: $built built, $skipped skipped, $failed failed"
	[ -n "$ktap" ] && echo "1..$n"
	[ "$failed" = 0 ]
}

# krel_of FLAVOUR|KREL
krel_of() {
	local b
	case "$1" in
	amd64 | rt | cloud)
		b=$(base_kver)
		[ "$1" = amd64 ] && echo "$b" || echo "${b%-amd64}-$1-amd64" ;;
	*) echo "$1" ;;
	esac
}

cmd_env() {
	local krel rc=0 line
	[ $# -eq 1 ] || die "usage: $0 env FLAVOUR|KREL"
	krel=$(krel_of "$1")
	fetch "$krel" image || rc=$?
	[ "$rc" = 3 ] && die "no linux-image-$krel or linux-headers-$krel in the configured apt sources"
	line=$(build_one "$krel") || { echo "$line" >&2; die "cannot build the module for $krel"; }
	echo "$line" >&2
	echo "MROCE_TB_KERNEL=$kcache/$krel/root/boot/vmlinuz-$krel"
	echo "MROCE_TB_MODULES=$kcache/$krel/root/lib/modules/$krel"
	echo "MROCE_KO=$out_base/$krel/rdma_mroce.ko"
	echo "MROCE_KTEST_KO=$out_base/$krel/mroce_ktest.ko"
}

case "${1:-}" in
list) cmd_list ;;
build) shift; cmd_build "$@" ;;
env) shift; cmd_env "$@" ;;
kdir)
	[ $# -eq 2 ] || die "usage: $0 kdir KREL"
	[ -e "$(kdir_of "$2")/Makefile" ] || fetch "$2" || die "no linux-headers-$2 in the configured apt sources"
	kdir_of "$2" ;;
*) sed -n '3,/^set /p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 2 ;;
esac
