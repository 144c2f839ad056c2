#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/setup.sh - install what mroce needs to build and to run its QEMU testbed.
#
# Idempotent: prints nothing and installs nothing when everything is present.
# Picks the guest kernel ABI from Debian's linux-image-amd64 metapackage (or
# MROCE_KVER=6.1.0-N-amd64 when set), and installs the image and the headers
# of that same ABI.  Usage: tools/setup.sh [--print-kver]
set -euo pipefail

pkgs=(
	build-essential make gcc g++ cmake pkg-config git kmod cpio gzip
	qemu-system-x86 busybox-static iproute2 iputils-ping
	rdma-core ibverbs-utils ibverbs-providers rdmacm-utils perftest iperf3
	libibverbs-dev librdmacm-dev
	googletest libgtest-dev
	linux-source-6.1 xz-utils
	clang-14 libclang-rt-14-dev
	gnuplot-nox ucx-utils openmpi-bin libopenmpi-dev
	libns3-dev
	ccache flex bison bc libelf-dev libssl-dev
	tshark groff-base
	debhelper dh-dkms dkms
)

kver_file=/var/lib/mroce-kver
pick_kver() {
	if [ -n "${MROCE_KVER:-}" ]; then
		echo "$MROCE_KVER"
		return
	fi
	# An already installed Debian 6.1 amd64 kernel with its headers wins.
	local k
	for k in $(ls /lib/modules 2>/dev/null | grep -E '^6\.1\.0-[0-9]+-amd64$' | sort -V -r); do
		if [ -f "/boot/vmlinuz-$k" ] && [ -e "/lib/modules/$k/build/Makefile" ]; then
			echo "$k"
			return
		fi
	done
	[ -s "$kver_file" ] && { cat "$kver_file"; return; }
	apt_update
	apt-cache depends linux-image-amd64 2>/dev/null |
		awk '/Depends: linux-image-6\.1\.0-[0-9]+-amd64$/ {sub("linux-image-", "", $2); print $2; exit}'
}

updated=
apt_update() {
	[ -n "$updated" ] && return
	# Only refresh the lists when they are missing or older than a day.
	if [ -z "$(find /var/lib/apt/lists -maxdepth 1 -name '*Packages*' -mtime -1 2>/dev/null | head -1)" ]; then
		echo "setup: apt-get update" >&2
		apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
	fi
	updated=1
}

if [ "$(id -u)" != 0 ]; then
	echo "setup: needs root to install packages (run: sudo $0)" >&2
	exit 1
fi

kver=$(pick_kver)
if [ -z "$kver" ]; then
	echo "setup: cannot determine a linux-image-6.1.0-*-amd64 ABI from apt" >&2
	exit 1
fi
echo "$kver" >"$kver_file"
if [ "${1:-}" = --print-kver ]; then
	echo "$kver"
	exit 0
fi
pkgs+=("linux-image-$kver" "linux-headers-$kver")
[ -n "${MROCE_SETUP_EXTRA:-}" ] && read -r -a extra <<<"$MROCE_SETUP_EXTRA" && pkgs+=("${extra[@]}")

# checkpatch.pl and its data files, from the linux-source tarball.
extract_checkpatch() {
	local src=/usr/src/linux-source-6.1 tarball=/usr/src/linux-source-6.1.tar.xz
	[ -f "$src/scripts/checkpatch.pl" ] && return
	[ -f "$tarball" ] || return 0
	echo "setup: extracting checkpatch.pl from $tarball" >&2
	tar -C /usr/src -xJf "$tarball" linux-source-6.1/scripts/checkpatch.pl \
		linux-source-6.1/scripts/spelling.txt \
		linux-source-6.1/scripts/const_structs.checkpatch
}

missing=()
for p in "${pkgs[@]}"; do
	st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
	[ "$st" = "install ok installed" ] || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	extract_checkpatch
	exit 0
fi

apt_update
echo "setup: installing ${missing[*]}" >&2
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${missing[@]}" >&2
extract_checkpatch
