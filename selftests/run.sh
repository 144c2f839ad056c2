#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# selftests/run.sh - boot a testbed guest and run the mroce selftests in it.
#
#   selftests/run.sh [--out DIR] [TEST.sh ...]
#
# Needs `make` first (module, provider and test programs in the tree).  KTAP
# on stdout; exit status non-zero when a test failed, the guest timed out or
# its kernel log has a WARNING/BUG/Oops/KASAN/Call Trace.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
out=$top/build/selftests-guest
if [ "${1:-}" = --out ]; then
	out=$2
	shift 2
fi
mkdir -p "$out"
# MROCE_KFLAVOUR=rt|cloud|amd64 (or a kernel release, e.g.
# 6.1.0-57-rt-amd64): boot that Debian kernel instead, with the module built
# for it (tools/kernels.sh env: fetches the image and headers into the
# cache, builds into build/kernels/KREL); README, "Kernels".
if [ -n "${MROCE_KFLAVOUR:-}" ]; then
	kenv=$("$top/tools/kernels.sh" env "$MROCE_KFLAVOUR") || exit 2
	while IFS='=' read -r k v; do export "$k=$v"; done <<<"$kenv"
fi
# Passed on to the guest: MROCE_STRESS(_ROUNDS), MROCE_VERBS_FUZZ_SECONDS,
# MROCE_VERBS_FUZZ_SEED, MROCE_VERBS_FUZZ_NO_ROLLBACK (test_verbs_fuzz.sh;
# MROCE_FUZZ_SECONDS is the host libFuzzer's), MROCE_REREG_TRAFFIC_DEPTH
# (test_rereg_mr.sh: WRITEs in flight in its traffic case), MROCE_TIME_FACTOR (the
# scale of the tests' time limits, selftests/mroce/lib.sh; the guest's own
# limit here scales with it), and MROCE_KO, MROCE_KTEST_KO (host paths in
# this tree: the module to test and the kernel-verbs test module, e.g. ones
# built for the debug kernel).
# The kernel: tb's MROCE_TB_KERNEL/MROCE_TB_MODULES/MROCE_TB_APPEND.
env=()
for v in MROCE_STRESS MROCE_STRESS_ROUNDS MROCE_TIME_FACTOR MROCE_REREG_TRAFFIC_DEPTH \
	MROCE_VERBS_FUZZ_SECONDS MROCE_VERBS_FUZZ_SEED MROCE_VERBS_FUZZ_NO_ROLLBACK; do
	[ -n "${!v:-}" ] && env+=(--env "$v=${!v}")
done
for v in MROCE_KO MROCE_KTEST_KO; do
	[ -n "${!v:-}" ] || continue
	ko=$(realpath "${!v}") || { echo "selftests: no module ${!v}" >&2; exit 2; }
	case "$ko" in
	"$top"/*) env+=(--env "$v=/mroce/${ko#"$top"/}") ;;
	*) echo "selftests: $v must be inside $top (the guest sees only the tree)" >&2; exit 2 ;;
	esac
done
# test_ucx.sh (in the default list) runs UCX and Open MPI from the host's
# /usr, test_capture.sh the host's tshark and dumpcap: the guest then gets the host's userland (tb --hostroot), which has
# the guest kernel's modules only for the Debian kernel, so not with
# another kernel (there test_ucx.sh reports a skip).
hostroot=()
if [ -z "${MROCE_TB_KERNEL:-}" ]; then
	case " $* " in
	"  " | *" test_ucx.sh "* | *" test_capture.sh "*) hostroot=(--hostroot) ;;
	esac
fi
# The guest's wall-clock limit is a hang guard, not a speed check: every
# test has its own watchdog.  The default list takes about 20 min of a
# loaded 2-core TCG host (1177 s measured), so the guard is 50 min.
exec "$top/tools/testbed/tb" run --quiet "${hostroot[@]}" --out "$out" \
	--timeout "${MROCE_SELFTEST_TIMEOUT:-$((3000 * ${MROCE_TIME_FACTOR:-1}))}" \
	"${env[@]}" "$top/selftests/mroce/run_guest.sh" "$@"
