#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Runs inside a testbed guest: every selftests/mroce/test_*.sh (or those
# named as arguments) in order, as one KTAP stream.
set -uo pipefail
. /mroce/selftests/mroce/lib.sh
here=$(dirname "$0")
tests=("$@")
if [ ${#tests[@]} -eq 0 ]; then
	tests=(test_module.sh test_link.sh test_verbs.sh test_rc.sh test_rdma_tool.sh test_kverbs.sh test_nvme.sh test_ud_cm.sh
	       test_verify.sh test_resize_cq.sh test_rereg_mr.sh test_fence.sh test_mw.sh test_srq_cq_ex.sh test_xrc.sh test_trace.sh
	       test_qp_mem.sh test_qp_scale.sh
	       test_uc.sh test_ucx.sh test_capture.sh test_fabric.sh test_unload_busy.sh test_unload_traffic.sh
	       test_verbs_fuzz.sh)
	# The checker-oriented stress set: about 20 s on the Debian kernel, so
	# always on; MROCE_STRESS=0 leaves it out.
	[ "${MROCE_STRESS:-1}" != 0 ] && tests+=(test_stress.sh)
	# Last: on a kernel where an attack spins in the kernel, the device
	# stays busy and nothing after it could set up its own.
	tests+=(test_attack.sh)
fi
echo "KTAP version 1"
echo "# kernel $(uname -r), module $MROCE_KO"
for t in "${tests[@]}"; do
	echo "# selftests: mroce: $t"
	t0=$SECONDS
	bash "$here/$t" || tb_not_ok "$t" "exited with $?"
	echo "# selftests: mroce: $t took $((SECONDS - t0)) s"
done
if tb_dmesg_check; then
	tb_ok "kernel log is clean"
else
	tb_not_ok "kernel log is clean" "problem report in dmesg"
fi
# On the debug kernel: lockdep must still be validating at the end (it goes
# quiet for the rest of the boot after its first report).  The kmemleak scan
# follows the script (tools/testbed/init.sh; a report fails the run).
if [ -r /proc/lockdep_stats ]; then
	if tb_lockdep_on; then
		tb_ok "lockdep still on at the end"
	else
		tb_not_ok "lockdep still on at the end" "debug_locks=0: lockdep switched itself off during the run"
	fi
fi
tb_ktap_plan_end
! tb_ktap_failed
