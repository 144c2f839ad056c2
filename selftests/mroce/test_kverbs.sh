#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Kernel verbs as kernel ULPs use them: the mroce_ktest module
# (selftests/mroce/ktest) runs fast-register MR, REG_MR, LOCAL_INV and
# SEND_WITH_INV cases on mroce0 at load time and prints KTAP lines to the
# kernel log, which are relayed here one result a case.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

KTEST_KO=${MROCE_KTEST_KO:-$MROCE_SRC/selftests/mroce/ktest/mroce_ktest.ko}

if [ ! -e "$KTEST_KO" ]; then
	tb_not_ok "kverbs" "$KTEST_KO not built (make)"
	exit 0
fi
# Built against the Debian kernel's headers; another kernel (the debug
# lane) cannot load it.
vermagic=$(modinfo -F vermagic "$KTEST_KO" 2>/dev/null)
if [ "${vermagic%% *}" != "$(uname -r)" ]; then
	tb_skip "kverbs" "mroce_ktest.ko is for ${vermagic%% *}, not $(uname -r)"
	exit 0
fi

if mroce_link_setup mroce0 k0 k1 10.14.0.1 >/dev/null; then
	tb_ok "kverbs: mroce0 has a RoCE v2 IPv4 GID"
else
	tb_not_ok "kverbs: mroce0 has a RoCE v2 IPv4 GID" "no GID"
fi

before=$(dmesg | wc -l)
if insmod "$KTEST_KO" dev=mroce0; then
	tb_ok "kverbs: mroce_ktest loads"
else
	tb_not_ok "kverbs: mroce_ktest loads" "insmod failed"
fi
# The module prints "mroce_ktest: <KTAP line>"; keep what this load printed.
dmesg | tail -n +"$((before + 1))" | sed -n 's/^\[[ 0-9.]*\] mroce_ktest: //p' |
	ktap_relay kverbs
if rmmod mroce_ktest; then
	tb_ok "kverbs: mroce_ktest unloads"
else
	tb_not_ok "kverbs: mroce_ktest unloads" "rmmod failed"
fi
live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "kverbs: no mroce object left after the test module"
else
	tb_not_ok "kverbs: no mroce object left after the test module" "$live"
fi
rdma link delete mroce0
ip link del k0
if mroce_unload; then
	tb_ok "kverbs: rdma_mroce unloads"
else
	tb_not_ok "kverbs: rdma_mroce unloads" "rmmod failed"
fi
