#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/debugkernel/build.sh - build (or reuse) the mroce debug kernel: Debian's
# linux-source-6.1 with x86_64 defconfig + tools/debugkernel/debug.config
# (KASAN, lockdep, kmemleak, UBSAN, DEBUG_LIST, DEBUG_OBJECTS, ...).
#
#   tools/debugkernel/build.sh [--print-env]
#
# Result, in $MROCE_CACHE/debug-kernel/<key>/ (MROCE_CACHE defaults to
# /var/cache/mroce), where <key> hashes the source package version, the
# config fragment, the build recipe (RECIPE below) and the compiler version:
#   bzImage            the kernel
#   modroot/           `make modules_install` tree: modroot/lib/modules/<krel>/
#   build/             the O= build tree; `make -C build M=DIR modules` builds
#                      out-of-tree modules against it
#   krel, build-time   kernel release string; wall-clock seconds of the build
#   env                MROCE_TB_KERNEL/MROCE_TB_MODULES/MROCE_DEBUG_KDIR lines
# Idempotent: a complete entry is reused as is (prints its path and exits).
# Prints the entry's directory on stdout (or with --print-env its env file).
#
# Environment: MROCE_CACHE, MROCE_KSRC_TARBALL (/usr/src/linux-source-6.1.tar.xz),
# MROCE_DEBUGKERNEL_JOBS (2; never more than 2 on the shared build host),
# MROCE_NO_CCACHE=1 to build without ccache.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
fragment=$here/debug.config
tarball=${MROCE_KSRC_TARBALL:-/usr/src/linux-source-6.1.tar.xz}
jobs=${MROCE_DEBUGKERNEL_JOBS:-2}
print=dir
[ "${1:-}" = --print-env ] && print="env"

die() { echo "debugkernel: $*" >&2; exit 1; }
log() { echo "debugkernel: $*" >&2; }

CACHE=${MROCE_CACHE:-/var/cache/mroce}
mkdir -p "$CACHE" 2>/dev/null && [ -w "$CACHE" ] || CACHE=${HOME:-/tmp}/.cache/mroce
top=$CACHE/debug-kernel
mkdir -p "$top"

[ -f "$tarball" ] || die "no kernel source $tarball (apt-get install linux-source-6.1, or run tools/setup.sh)"
[[ "$jobs" =~ ^[12]$ ]] || die "MROCE_DEBUGKERNEL_JOBS must be 1 or 2 (got '$jobs')"
for t in make gcc flex bison bc xz perl; do
	command -v "$t" >/dev/null || die "'$t' is missing (run tools/setup.sh)"
done
[ -e /usr/include/libelf.h ] || die "libelf-dev is missing (run tools/setup.sh)"
cc=gcc
if [ -z "${MROCE_NO_CCACHE:-}" ]; then
	command -v ccache >/dev/null || die "ccache is missing (run tools/setup.sh, or MROCE_NO_CCACHE=1)"
	cc="ccache gcc"
fi

# The source version: the package's when the tarball is the packaged one.
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null || true)
if [ -z "$srcver" ] || [ "$tarball" != /usr/src/linux-source-6.1.tar.xz ]; then
	srcver=$(stat -c '%s-%Y' "$tarball")
fi
# Bump RECIPE when a change below alters what is built (not for messages).
RECIPE=1
key=$({
	echo "recipe $RECIPE src $srcver $(stat -c %s "$tarball")"
	gcc --version | head -1
	cat "$fragment"
} | sha256sum | cut -c1-16)
dir=$top/$key

emit() {
	if [ "$print" = env ]; then cat "$dir/env"; else echo "$dir"; fi
}
if [ -f "$dir/done" ]; then
	log "reusing $dir ($(cat "$dir/krel"))"
	emit
	exit 0
fi

exec 9>"$top/.lock"
flock 9
if [ -f "$dir/done" ]; then
	emit
	exit 0
fi
t0=$(date +%s)

# 1) A private, pristine copy of the source, shared by every config key.
src_root=$top/src-${srcver//[^A-Za-z0-9.+-]/_}
src=$src_root/linux-source-6.1
if [ ! -f "$src_root/.extracted" ]; then
	log "extracting $tarball into $src_root"
	rm -rf "$src_root"
	mkdir -p "$src_root"
	nice -n 15 tar -C "$src_root" -xf "$tarball"
	[ -f "$src/Makefile" ] || die "$tarball did not hold linux-source-6.1/"
	touch "$src_root/.extracted"
fi
[ ! -e "$src/.config" ] || die "$src is not pristine (has .config); remove $src_root"

# Reproducible: fixed build stamps, compiler paths relative to the source.
epoch=$(stat -c %Y "$tarball")
export KBUILD_BUILD_TIMESTAMP
KBUILD_BUILD_TIMESTAMP=$(date -u -d "@$epoch" '+%Y-%m-%d %H:%M:%S UTC')
export KBUILD_BUILD_USER=mroce KBUILD_BUILD_HOST=debugkernel KBUILD_BUILD_VERSION=1
export CCACHE_DIR=${CCACHE_DIR:-$top/ccache} CCACHE_BASEDIR=$top CCACHE_COMPILERCHECK=content
export CCACHE_NOHASHDIR=1
command -v ccache >/dev/null && ccache -M 8G >/dev/null 2>&1 || true

obj=$dir/build
rm -rf "$dir"
mkdir -p "$obj"
kmake() { nice -n 15 make -C "$src" O="$obj" ARCH=x86_64 CC="$cc" HOSTCC=gcc "$@"; }

# 2) Configuration: defconfig + fragment, then check nothing was dropped.
log "configuring (key $key)"
kmake -s defconfig >/dev/null
ARCH=x86_64 "$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$fragment" >"$dir/merge.log" 2>&1 ||
	die "merge_config failed (see $dir/merge.log)"
kmake -s olddefconfig >/dev/null
bad=()
while IFS= read -r line; do
	case "$line" in
	"# CONFIG_"*" is not set")
		sym=${line#"# "}
		sym=${sym%" is not set"}
		grep -qE "^$sym=" "$obj/.config" && bad+=("$sym wanted off, is $(grep -E "^$sym=" "$obj/.config")")
		;;
	CONFIG_*=*)
		grep -qxF "$line" "$obj/.config" ||
			bad+=("$line wanted, is: $(grep -E "^(# )?${line%%=*}[= ]" "$obj/.config" || echo absent)")
		;;
	esac
done <"$fragment"
if [ ${#bad[@]} -gt 0 ]; then
	printf 'debugkernel:   %s\n' "${bad[@]}" >&2
	die "Kconfig did not take ${#bad[@]} line(s) of $fragment (dependencies missing?)"
fi

# 3) Build, install the modules, keep the build tree for out-of-tree modules.
log "building with -j$jobs (nice 15, CC='$cc'); log: $dir/build.log"
if ! kmake -j"$jobs" bzImage modules >"$dir/build.log" 2>&1; then
	tail -n 30 "$dir/build.log" >&2
	die "kernel build failed (see $dir/build.log)"
fi
kmake -s INSTALL_MOD_PATH="$dir/modroot" modules_install >>"$dir/build.log" 2>&1 ||
	die "modules_install failed (see $dir/build.log)"
krel=$(kmake -s kernelrelease)
[ -d "$dir/modroot/lib/modules/$krel/kernel" ] || die "modules_install left no lib/modules/$krel/kernel"
cp "$obj/arch/x86/boot/bzImage" "$dir/bzImage"
echo "$krel" >"$dir/krel"
t1=$(date +%s)
echo $((t1 - t0)) >"$dir/build-time"
{
	echo "MROCE_TB_KERNEL=$dir/bzImage"
	echo "MROCE_TB_MODULES=$dir/modroot/lib/modules/$krel"
	echo "MROCE_DEBUG_KDIR=$obj"
	echo "MROCE_DEBUG_KREL=$krel"
} >"$dir/env"
command -v ccache >/dev/null && ccache -s >"$dir/ccache-stats" 2>&1 || true
touch "$dir/done"
log "built $krel in $((t1 - t0)) s: $dir"
# Older entries are someone else's cache keys: keep them, they are cheap to
# drop by hand (rm -rf $top/<key>).
emit
