#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/profile_pair.sh - a kernel and user-space profile (perf, cpu-clock)
# of guest a while it runs one perftest client against guest b, for mroce
# and rxe in turn:
#
#   tools/testbed/tb pair --hostroot --out DIR \
#       [--env BIN=ib_send_bw] [--env SIZE=65536] [--env DRVS=mroce] \
#       bench/profile_pair.sh bench/profile_pair.sh
#
# DIR/a/prof.<driver>: perf report (dso, symbol) of the whole client run;
# DIR/a/<driver>.cli, DIR/b/<driver>.srv: perftest's output.  Needs the
# host's perf (linux-perf) through --hostroot.
#
# Reading it: perf's cpu-clock sample waits while interrupts are off, so a
# section run under spin_lock_irqsave() is reported at the
# _raw_spin_unlock_irqrestore() that ends it.  mroce's datapath runs under
# its QP lock with interrupts off: to see inside it, build the module with
# that lock taken _bh for the measurement only (spec, open question 30).
set -uo pipefail
. /mroce/bench/common.sh
bench_devices || exit 1
BIN=${BIN:-ib_read_bw}
SIZE=${SIZE:-4096}
DRVS=${DRVS:-"mroce rxe"}
port=31000
if [ "$MROCE_ROLE" = b ]; then
	for drv in $DRVS; do
		port=$((port + 1))
		gid=$GID_MROCE
		[ "$drv" = rxe ] && gid=$GID_RXE
		timeout 90 "$BIN" -d "${drv}0" -x "$gid" -F --report_gbits -p $port \
			-s "$SIZE" -D 8 >"/out/$drv.srv" 2>&1
	done
	sleep 2
	exit 0
fi
tb_wait_ping 10.11.0.2 || exit 1
echo 0 >/proc/sys/kernel/kptr_restrict
echo -1 >/proc/sys/kernel/perf_event_paranoid
rc=0
for drv in $DRVS; do
	port=$((port + 1))
	gid=$GID_MROCE
	[ "$drv" = rxe ] && gid=$GID_RXE
	sleep 2
	perf record -o "/tmp/perf.$drv" -a -e cpu-clock -F 1000 -- \
		timeout 90 "$BIN" -d "${drv}0" -x "$gid" -F --report_gbits -p $port \
		-s "$SIZE" -D 8 10.11.0.2 >"/out/$drv.cli" 2>"/out/$drv.perf.err" || rc=1
	echo "$drv $BIN $SIZE: $(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print $4}' "/out/$drv.cli" | tail -1) Gb/s"
	perf report -i "/tmp/perf.$drv" --no-children --sort dso,sym --stdio 2>/dev/null |
		grep -v '^$' | head -80 >"/out/prof.$drv"
done
exit $rc
