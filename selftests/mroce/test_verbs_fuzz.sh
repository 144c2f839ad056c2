#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The verbs fuzzer (selftests/mroce/verbs_fuzz.cpp): random create/modify/
# post/poll/destroy of PD, CQ, MR, QP (RC, UD), SRQ and AH with invalid
# arguments and corrupted shared rings, for MROCE_VERBS_FUZZ_SECONDS (60; the
# debug lane 300).  MROCE_VERBS_FUZZ_SEED replays a run (the seed is printed);
# MROCE_VERBS_FUZZ_NO_ROLLBACK=1 leaves out producer rollback and out-of-range
# producers (the kernel before the ring-index fix loops on them).
# A kernel report fails the run through the harness.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

fuzz=$MROCE_BUILD/selftests/mroce_verbs_fuzz
secs=${MROCE_VERBS_FUZZ_SECONDS:-60}
if [ ! -x "$fuzz" ]; then
	tb_not_ok "verbs_fuzz" "$fuzz not built (make userspace)"
	exit 0
fi

gid=$(mroce_link_setup mroce0 m0 m1 10.13.0.1)
check "verbs_fuzz: no live objects before" test -z "$(mroce_live_objects)"

args=(--seconds "$secs" --watchdog "$(mroce_t 60)")
[ -n "${MROCE_VERBS_FUZZ_SEED:-}" ] && args+=(--seed "$MROCE_VERBS_FUZZ_SEED")
# The program's own watchdog catches a hung verb; this one a hung process.
timeout "$((secs + $(mroce_t 300)))" "$fuzz" "${args[@]}" mroce0 "$gid" 2>&1 | ktap_relay verbs_fuzz
rc=${PIPESTATUS[0]}
[ "$rc" = 0 ] || tb_not_ok "verbs_fuzz: exit status" "$rc (124: killed by timeout)"

live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "verbs_fuzz: every object released after the program exits"
else
	tb_not_ok "verbs_fuzz: every object released after the program exits" "$(echo "$live" | tr '\n' ' ')"
fi
sed 's/^/# mroce0: /' "$MROCE_DEBUGFS/mroce0/counters" | grep -E "rx_|tx_|ring" | head -20
check "verbs_fuzz: link delete" rdma link delete mroce0
ip link del m0
check "verbs_fuzz: rmmod" mroce_unload
