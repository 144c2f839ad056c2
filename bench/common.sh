# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# bench/common.sh - shared by the bench guest scripts: load rxe and
# mroce side by side on eth0 (rxe on UDP 4791, mroce on 4792).
. /mroce/selftests/mroce/lib.sh

bench_devices() {
	modprobe -a rdma_rxe crc32_generic 2>/dev/null
	rdma link add rxe0 type rxe netdev eth0 || return 1
	GID_MROCE=$(mroce_link_setup mroce0 eth0) || return 1
	GID_RXE=$(tb_wait_gid rxe0) || return 1
}

# cpu_busy: busy jiffies (USER_HZ) of the whole guest since boot.
cpu_busy() {
	awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8; exit}' /proc/stat
}

# cpu_kernel: jiffies in the kernel (system, irq, softirq) since boot.
cpu_kernel() {
	awk '$1 == "cpu" {print $4 + $7 + $8; exit}' /proc/stat
}
