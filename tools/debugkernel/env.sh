#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# tools/debugkernel/env.sh - build (or reuse) the debug kernel and build
# rdma_mroce.ko against it; print the environment that points the testbed
# and the selftests at them (for eval):
#   MROCE_TB_KERNEL MROCE_TB_MODULES MROCE_TB_APPEND MROCE_KO MROCE_KTEST_KO
#   MROCE_DEBUG_KDIR MROCE_DEBUG_KREL
#   MROCE_TIME_FACTOR  how much longer the tests' time limits are on this
#                      kernel (selftests/mroce/lib.sh; README.md here, "Time
#                      limits on the debug kernel"); an existing value is kept
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
top=$(cd "$here/../.." && pwd)
envf=$("$here/build.sh" --print-env) || { echo "debugkernel: kernel build failed" >&2; exit 1; }
eval "$envf"
for v in MROCE_TB_KERNEL MROCE_TB_MODULES MROCE_DEBUG_KDIR MROCE_DEBUG_KREL; do
	[ -n "${!v:-}" ] || { echo "debugkernel: build.sh printed no $v" >&2; exit 1; }
done
ko=$("$here/module.sh" "$MROCE_DEBUG_KDIR" "$top/build/debug-module/$MROCE_DEBUG_KREL")
# slub_debug: red zones, sanity checks, poisoning.  pci=noacpi: under TCG the
# instrumented ACPI interpreter hits its 30 s AML loop timeout on every _PRT
# evaluation (90 s of boot, devices without INTx routing); the PIRQ table
# works and boots in ~15 s.  no_timer_check: on a loaded host the slow TCG
# guest misses the IO-APIC timer check and panics ("IO-APIC + timer doesn't
# work!").
printf 'export %s=%q\n' MROCE_TB_KERNEL "$MROCE_TB_KERNEL" MROCE_TB_MODULES "$MROCE_TB_MODULES" \
	MROCE_TB_APPEND "slub_debug=FZP pci=noacpi no_timer_check${MROCE_TB_APPEND:+ $MROCE_TB_APPEND}" \
	MROCE_KO "$ko" MROCE_KTEST_KO "$(dirname "$ko")/mroce_ktest.ko" MROCE_DEBUG_KDIR "$MROCE_DEBUG_KDIR" MROCE_DEBUG_KREL "$MROCE_DEBUG_KREL" \
	MROCE_TIME_FACTOR "${MROCE_TIME_FACTOR:-4}"
