#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/check.sh - run every test suite and print one summary.
#
#   tools/check.sh [all|host|guest|debug]
#
# debug (make check-debug): the guest selftests plus the stress set on the
# debug kernel (tools/debugkernel/), with the lane's own self-check.
# all (make check) ends with the lane as MROCE_CHECK_DEBUG says (README,
# "Debug kernel"): 0 (the default) leaves it out; reduced the self-check and the object
# lifetime and teardown tests (DEBUG_TESTS_REDUCED) with one stress round;
# full the whole lane with one stress round.
#
# Each suite emits KTAP (or is ctest, whose per-test lines are converted);
# every top-level "ok"/"not ok" line counts once.  A suite that exits non-zero
# without reporting a failure counts as one failure of its own.  The last
# line is "N passed, N failed" (skips are reported on the line before).
# Logs: build/check/*.log.
set -uo pipefail
top=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:-all}
logs=$top/build/check
mkdir -p "$logs"
pass=0
fail=0
skip=0
failed_names=()

# count_ktap LOG SUITE: add the top-level KTAP results of LOG to the totals;
# sets suite_failed to the number of failures found.
count_ktap() {
	local log=$1 suite=$2 p f s
	p=$(grep -cE '^ok [0-9]+ ' "$log")
	s=$(grep -E '^ok [0-9]+ ' "$log" | grep -ciE '# *skip')
	f=$(grep -cE '^not ok [0-9]+ ' "$log")
	pass=$((pass + p - s))
	skip=$((skip + s))
	fail=$((fail + f))
	while IFS= read -r l; do
		failed_names+=("$suite: ${l#not ok }")
	done < <(grep -E '^not ok [0-9]+ ' "$log")
	suite_failed=$f
}

# suite NAME CMD...: run a KTAP-emitting command, tee its output to a log.
suite() {
	local name=$1 log=$logs/$1.log rc
	shift
	echo "== $name: $*"
	"$@" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	count_ktap "$log" "$name"
	# The guest selftests (tools/testbed/tb run): the testbed's own
	# verdicts come after the guest's KTAP, so a kernel problem report (a
	# checker's, the end-of-run kmemleak scan's, or a checker found
	# switched off) and a timeout each count as a failure of their own.
	case "$name:$rc" in
	*:0) ;;
	selftests*:3)
		fail=$((fail + 1))
		failed_names+=("$name: kernel problem report or a checker switched off (tb status 3, see $log)") ;;
	selftests*:124)
		fail=$((fail + 1))
		failed_names+=("$name: the guest timed out (tb status 124)") ;;
	*)
		if [ "$suite_failed" = 0 ]; then
			fail=$((fail + 1))
			failed_names+=("$name: exited with status $rc")
		fi ;;
	esac
}

# ctest_ktap: ctest's per-test result lines as KTAP.
ctest_ktap() {
	local rc n=0 line
	echo "KTAP version 1"
	ctest --test-dir "$top/build" --output-on-failure --timeout 600 >"$logs/ctest.raw" 2>&1
	rc=$?
	sed 's/^/# /' "$logs/ctest.raw" | grep -vE '^# +[0-9]+/[0-9]+ Test +#' 
	while IFS= read -r line; do
		n=$((n + 1))
		name=$(echo "$line" | sed -E 's/.*Test +#[0-9]+: ([^ ]+) .*/\1/')
		case "$line" in
		*" Passed"*) echo "ok $n ctest: $name" ;;
		*"Not Run"*|*Skipped*) echo "ok $n ctest: $name # SKIP" ;;
		*) echo "not ok $n ctest: $name" ;;
		esac
	done < <(grep -E '^ *[0-9]+/[0-9]+ Test +#' "$logs/ctest.raw")
	echo "1..$n"
	return $rc
}

if [ "$mode" = all ] || [ "$mode" = host ]; then
	suite ctest ctest_ktap
	suite checkpatch "$top/tools/checkpatch.sh"
	suite install "$top/tests/install/test_install.sh"
	# The module against every Debian 12 kernel flavour (README,
	# "Kernels"): about 2 min the first time, seconds afterwards.
	suite kernels "$top/tools/kernels.sh" build --ktap
	if [ -x "$top/tests/fuzz/run.sh" ]; then
		suite fuzz-short "$top/tests/fuzz/run.sh" "${MROCE_FUZZ_SECONDS:-15}"
	fi
fi
if [ "$mode" = all ] || [ "$mode" = guest ]; then
	suite testbed "$top/tools/testbed/tb" selftest
	suite selftests "$top/selftests/run.sh" --out "$logs/guest"
	if [ -x "$top/selftests/run_pair.sh" ]; then
		suite selftests-pair "$top/selftests/run_pair.sh" --out "$logs/pair"
	fi
fi

# The debug lane in make check (README, "Debug kernel"): the tests where the
# checkers find the most (object lifetimes, teardown under live objects and
# under traffic, the stress set) and that have no throughput-bound clients;
# make check-debug runs every test.  test_attack.sh: the use-after-free
# races it provokes (AH destroyed under a sender, QPs hit during create) are
# reported only by KASAN.
DEBUG_TESTS_REDUCED=(test_module.sh test_verbs.sh test_unload_busy.sh test_unload_traffic.sh test_stress.sh
		     test_verbs_fuzz.sh test_attack.sh)
debug_tests=()
if [ "$mode" = all ]; then
	case "${MROCE_CHECK_DEBUG:-0}" in
	0 | no | off) ;;
	reduced)
		mode=debug
		debug_tests=("${DEBUG_TESTS_REDUCED[@]}")
		export MROCE_STRESS_ROUNDS=${MROCE_STRESS_ROUNDS:-1} ;;
	1 | full)
		mode=debug
		export MROCE_STRESS_ROUNDS=${MROCE_STRESS_ROUNDS:-1} ;;
	*)
		echo "check: MROCE_CHECK_DEBUG must be reduced, full or 0 (got '$MROCE_CHECK_DEBUG')" >&2
		exit 2 ;;
	esac
fi
if [ "$mode" = debug ]; then
	t0=$(date +%s)
	if denv=$("$top/tools/debugkernel/env.sh"); then
		eval "$denv"
		echo "== debug kernel $MROCE_DEBUG_KREL, module $MROCE_KO ($(($(date +%s) - t0)) s)"
		suite debug-selfcheck "$top/tools/debugkernel/selfcheck.sh"
		# The verbs fuzzer runs longer where the checkers watch
		# (test_verbs_fuzz.sh; 60 s in the Debian kernel's run).
		MROCE_VERBS_FUZZ_SECONDS=${MROCE_VERBS_FUZZ_SECONDS:-300} \
		MROCE_STRESS=1 suite selftests-debug "$top/selftests/run.sh" --out "$logs/guest-debug" \
			"${debug_tests[@]}"
	else
		fail=$((fail + 1))
		failed_names+=("debug-kernel: building the debug kernel or the module failed")
	fi
	echo "== check-debug took $(($(date +%s) - t0)) s"
fi

echo
if [ ${#failed_names[@]} -gt 0 ]; then
	echo "Failures:"
	printf '  %s\n' "${failed_names[@]}"
fi
if [ "$skip" -gt 0 ]; then
	echo "($skip skipped, not counted)"
	echo "$pass passed, $fail failed"
else
	echo "$pass passed, $fail failed"
fi
[ "$fail" = 0 ]
