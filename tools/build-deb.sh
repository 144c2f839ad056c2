#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/build-deb.sh - build the Debian packages (make deb).
#
#   tools/build-deb.sh [OUTDIR]       (default build/deb)
#
# Copies the tree's sources (git's tracked and untracked-but-not-ignored
# files: no build products, uncommitted edits included) to
# OUTDIR/mroce-VERSION, runs `dpkg-buildpackage -us -uc -b` there and leaves
# mroce-dkms_*.deb, ibverbs-providers-mroce_*.deb, mroce-tools_*.deb (and
# the .changes/.buildinfo) in OUTDIR; then lintian, when installed, on the
# result (its tags are printed, they do not fail the build).  The version
# is debian/changelog's.  Build dependencies: tools/setup.sh installs them.
set -euo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(realpath -m "${1:-$top/build/deb}")
version=$(dpkg-parsechangelog -l "$top/debian/changelog" -S Version)
stage=$out/mroce-$version
jobs=${JOBS:-$(nproc 2>/dev/null || echo 2)}

rm -rf "$stage"
rm -f "$out"/*.deb "$out"/*.changes "$out"/*.buildinfo
mkdir -p "$stage"
if git -C "$top" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$top" ls-files -z --cached --others --exclude-standard |
		while IFS= read -r -d '' f; do
			# tracked files deleted in the work tree are left out
			[ -e "$top/$f" ] && printf '%s\0' "$f"
		done | tar -C "$top" --null -T - -cf - | tar -C "$stage" -xf -
else
	tar -C "$top" --exclude=./build --exclude-vcs --exclude='*.o' --exclude='*.ko' \
		--exclude='*.mod' --exclude='*.mod.c' --exclude='.*.cmd' --exclude=Module.symvers \
		--exclude=modules.order -cf - . | tar -C "$stage" -xf -
fi
echo "deb: building mroce $version in $stage" >&2
(cd "$stage" && DEB_BUILD_OPTIONS="parallel=$jobs ${DEB_BUILD_OPTIONS:-}" \
	dpkg-buildpackage -us -uc -b) >"$out/build.log" 2>&1 || {
	tail -40 "$out/build.log" >&2
	echo "deb: dpkg-buildpackage failed, log in $out/build.log" >&2
	exit 1
}
rm -rf "$stage"
if command -v lintian >/dev/null; then
	echo "deb: lintian" >&2
	lintian --display-info "$out"/mroce_"${version}"_*.changes >"$out/lintian.log" 2>&1 || true
	sed 's/^/  /' "$out/lintian.log" >&2
fi
ls -1 "$out"/*.deb
