#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/qp_lifecycle.sh - QP lifecycle rates (issue 18: "QP create +
# connect rate at least rxe's"): create, INIT, RTR, RTS and destroy of N
# RC QPs, each phase timed over all QPs by mroce_qp_mem --timing
# (selftests/mroce/qp_mem.cpp: QPs connected in pairs through the device's
# own GID, nothing sent), for rxe and one or more builds of the mroce
# module in the same guest boot, alternating, so that the ratios compare
# like with like on a shared host.
#
#   bench/qp_lifecycle.sh [--out DIR]
# Environment:
#   QP_LIFE_NS     QP counts (default "256 1000")
#   QP_LIFE_REPS   rounds over every count and driver (default 2)
#   QP_LIFE_KOS    the mroce modules, LABEL=PATH inside the tree, space
#                  separated (default: mroce=the tree's module), e.g.
#                  "base=build/base/rdma_mroce.ko new=drivers/infiniband/sw/mroce/rdma_mroce.ko"
# Results: DIR/lifecycle.txt, one "timing ..." line per run prefixed with
# the module's label (rxe: rxe).  Not a timed test: nothing passes or
# fails on a rate.  (function_graph tracing in the guest, to see where the
# time goes, is no option under TCG: switching the tracer on stalls both
# CPUs for minutes, soft lockups; temporary ktime counters were used.)
set -uo pipefail

if [ "${1:-}" = --guest ]; then
	. "$MROCE_SRC/selftests/mroce/lib.sh"
	counts=${QP_LIFE_NS:-"256 1000"}
	reps=${QP_LIFE_REPS:-2}
	kos=${QP_LIFE_KOS:-"mroce=${MROCE_KO#"$MROCE_SRC"/}"}
	prog=$MROCE_BUILD/selftests/mroce_qp_mem
	res=/out/lifecycle.txt
	: >"$res"
	echo "# kernel $(uname -r), $(nproc) CPUs" | tee -a "$res"
	tb_modprobe_rdma >/dev/null 2>&1
	modprobe -a rdma_rxe crc32_generic 2>/dev/null
	ip link add m0 type veth peer name m1 && ip addr add 10.13.0.1/24 dev m0 &&
		ip link set m0 up && ip link set m1 up || exit 1
	rdma link add rxe0 type rxe netdev m0 || exit 1
	gr=$(tb_wait_gid rxe0) || exit 1
	# mroce_use LABEL: the module of that label loaded, mroce0 on m0
	cur=
	mroce_use() {
		local l ko
		[ "$cur" = "$1" ] && return 0
		if [ -n "$cur" ]; then
			rdma link delete mroce0
			rmmod rdma_mroce || return 1
		fi
		cur=
		for l in $kos; do
			[ "${l%%=*}" = "$1" ] && ko=$MROCE_SRC/${l#*=}
		done
		# shellcheck disable=SC2119 # no module parameters
		MROCE_KO=$ko mroce_load || return 1
		rdma link add mroce0 type mroce netdev m0 || return 1
		gm=$(tb_wait_gid mroce0) || return 1
		cur=$1
	}
	run() { # LABEL DEV GID N
		local line
		line=$("$prog" --qps "$4" --settle 0 --timing "$2" "$3" | grep '^timing ') ||
			{ echo "qp_lifecycle: $1 N=$4 failed" >&2; return 1; }
		echo "drv=$1 $line" | tee -a "$res"
	}
	for _ in $(seq "$reps"); do
		for n in $counts; do
			for l in $kos; do
				mroce_use "${l%%=*}" || exit 1
				run "${l%%=*}" mroce0 "$gm" "$n" || exit 1
			done
			run rxe rxe0 "$gr" "$n" || exit 1
		done
	done
	[ -n "$cur" ] && { rdma link delete mroce0; rmmod rdma_mroce; }
	rdma link delete rxe0
	exit 0
fi

top=$(cd "$(dirname "$0")/.." && pwd)
out=$(mktemp -d "${TMPDIR:-/tmp}/mroce-qplife.XXXXXX")
[ "${1:-}" = --out ] && out=$2
[ -x "$top/build/selftests/mroce_qp_mem" ] || { echo "qp_lifecycle: run make first" >&2; exit 1; }
env=()
for v in QP_LIFE_NS QP_LIFE_REPS QP_LIFE_KOS; do
	[ -n "${!v:-}" ] && env+=(--env "$v=${!v}")
done
"$top/tools/testbed/tb" run --quiet --timeout "${QP_LIFE_TIMEOUT:-1800}" --out "$out" "${env[@]}" \
	"$top/bench/qp_lifecycle.sh" --guest
rc=$?
cat "$out/lifecycle.txt" 2>/dev/null
echo "qp_lifecycle: $out (tb exit $rc)"
exit $rc
