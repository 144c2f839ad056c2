#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tests/fuzz/run.sh [SECONDS] - build the libFuzzer targets of the protocol
# core with clang (-fsanitize=fuzzer,address,undefined) and run each for
# SECONDS (default 20).  Working corpora live in $BUILD/fuzz (seeded from
# tests/fuzz/corpus/<target>); crashers are written to $BUILD/fuzz/crashes
# and make the script fail: copy each into tests/fuzz/corpus/<target>/ as
# crash-<name>, where the unit tests (tests/unit/test_regressions.cpp) replay
# it in every ctest run and later fuzzing runs start from it.  Inputs that
# reach new coverage are kept there too, merged against what is there:
#   $BUILD/fuzz/<target> -merge=1 -use_counters=0 corpus/<target> $BUILD/fuzz/corpus-<target>
#   --build-only   build, do not run
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
build=${BUILD:-$top/build}/fuzz
core=$top/drivers/infiniband/sw/mroce/core
secs=20
build_only=
for a in "$@"; do
	case $a in
	--build-only) build_only=1 ;;
	''|*[!0-9]*) echo "usage: $0 [SECONDS] [--build-only]" >&2; exit 2 ;;
	*) secs=$a ;;
	esac
done

cc=$(command -v clang || command -v clang-14 || true)
cxx=$(command -v clang++ || command -v clang++-14 || true)
if [ -z "$cc" ] || [ -z "$cxx" ]; then
	echo "fuzz: clang not found (apt install clang-14 libclang-rt-14-dev)" >&2
	exit 1
fi

mkdir -p "$build/obj" "$build/crashes"
san="-fsanitize=address,undefined -fno-sanitize-recover=all -g -O1"
objs=()
for src in "$core"/*.c "$here/fuzz_harness.cpp"; do
	obj=$build/obj/$(basename "$src").o
	if [ ! -e "$obj" ] || [ "$src" -nt "$obj" ] || \
	   [ -n "$(find "$core" "$top/include/mroce" "$here" -name '*.h' -newer "$obj" 2>/dev/null | head -1)" ]; then
		case $src in
		*.c) "$cc" -std=gnu11 $san -fsanitize=fuzzer-no-link -I"$core" -I"$top/include" \
			-c "$src" -o "$obj" ;;
		*) "$cxx" -std=c++20 $san -fsanitize=fuzzer-no-link -I"$core" -I"$top/include" \
			-c "$src" -o "$obj" ;;
		esac
	fi
	objs+=("$obj")
done

targets=(fuzz_parse fuzz_conn fuzz_uc)
for t in "${targets[@]}"; do
	"$cxx" -std=c++20 $san -fsanitize=fuzzer -I"$core" -I"$top/include" \
		"$here/$t.cpp" "${objs[@]}" -o "$build/$t"
done
[ -n "$build_only" ] && { echo "fuzz: built ${targets[*]} in $build"; exit 0; }

rc=0
for t in "${targets[@]}"; do
	work=$build/corpus-$t
	mkdir -p "$work"
	[ -d "$here/corpus/$t" ] && cp -n "$here/corpus/$t"/* "$work"/ 2>/dev/null || true
	log=$build/$t.log
	echo "fuzz: $t for ${secs}s"
	if ! "$build/$t" -max_total_time="$secs" -print_final_stats=1 \
		-artifact_prefix="$build/crashes/$t-" -max_len=4200 \
		"$work" >"$log" 2>&1; then
		echo "fuzz: $t FAILED, see $log and $build/crashes/" >&2
		grep -E 'ERROR|violated|SUMMARY' "$log" | head -5 >&2 || true
		rc=1
	fi
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
	cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 || true)
	echo "fuzz: $t executions=${execs:-?} ${cov} corpus=$(ls "$work" | wc -l)"
done
exit $rc
