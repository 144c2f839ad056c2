#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# A real kernel ULP over mroce: an NVMe-oF RDMA target (nvmet-rdma, a
# memory-backed null_blk namespace, configured through configfs) and the
# NVMe-oF RDMA host (nvme-rdma) on the same mroce device, connected over
# loopback.  The host registers every I/O buffer with fast-register MRs
# (IB_WR_REG_MR) and the target answers with SEND_WITH_INV; data written
# through /dev/nvmeXnY is read back and compared.  In the default list;
# skipped when the guest has no NVMe-oF modules.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

NQN=mroce-test
CFG=/sys/kernel/config/nvmet

if ! modprobe -a nvmet nvmet-rdma nvme-rdma 2>/dev/null ||
   ! modprobe null_blk nr_devices=1 gb=1 memory_backed=1 2>/dev/null; then
	tb_skip "nvme-rdma over mroce" "no nvmet-rdma/nvme-rdma/null_blk modules in this guest"
	exit 0
fi
grep -q ' /sys/kernel/config ' /proc/mounts || mount -t configfs none /sys/kernel/config

mroce_link_setup mroce0 n0 n1 10.15.0.1 >/dev/null

ok=1
mkdir "$CFG/subsystems/$NQN" &&
	echo 1 >"$CFG/subsystems/$NQN/attr_allow_any_host" &&
	mkdir "$CFG/subsystems/$NQN/namespaces/1" &&
	echo -n /dev/nullb0 >"$CFG/subsystems/$NQN/namespaces/1/device_path" &&
	echo 1 >"$CFG/subsystems/$NQN/namespaces/1/enable" &&
	mkdir "$CFG/ports/1" &&
	echo rdma >"$CFG/ports/1/addr_trtype" &&
	echo ipv4 >"$CFG/ports/1/addr_adrfam" &&
	echo 10.15.0.1 >"$CFG/ports/1/addr_traddr" &&
	echo 4420 >"$CFG/ports/1/addr_trsvcid" &&
	ln -s "$CFG/subsystems/$NQN" "$CFG/ports/1/subsystems/$NQN" || ok=0
if [ $ok = 1 ]; then
	tb_ok "nvmet-rdma: port listening on mroce0"
else
	tb_not_ok "nvmet-rdma: port listening on mroce0" "configfs setup failed"
fi

if [ $ok = 1 ] &&
   echo "transport=rdma,traddr=10.15.0.1,trsvcid=4420,nqn=$NQN" >/dev/nvme-fabrics; then
	tb_ok "nvme-rdma: connect to the target over mroce loopback"
else
	tb_not_ok "nvme-rdma: connect to the target over mroce loopback" "connect failed"
	ok=0
fi
dev=
for i in $(seq 100); do
	for b in /sys/block/nvme*n*; do
		[ -e "$b" ] && dev=/dev/${b##*/}
	done
	[ -n "$dev" ] && [ -b "$dev" ] && break
	sleep 0.2
done
if [ $ok = 1 ] && [ -n "$dev" ] && [ -b "$dev" ]; then
	tb_ok "nvme-rdma: namespace $dev appears"
	head -c 4194304 /dev/urandom >/tmp/nvme.in
	if dd if=/tmp/nvme.in of="$dev" bs=64k oflag=direct 2>/dev/null &&
	   dd if="$dev" of=/tmp/nvme.out bs=64k count=64 iflag=direct 2>/dev/null &&
	   cmp /tmp/nvme.in /tmp/nvme.out; then
		tb_ok "nvme-rdma: 4 MiB written and read back with O_DIRECT, bytes equal"
	else
		tb_not_ok "nvme-rdma: 4 MiB written and read back with O_DIRECT, bytes equal" "dd/cmp failed"
	fi
	if dd if=/tmp/nvme.in of="$dev" bs=4k count=256 seek=2048 oflag=direct 2>/dev/null &&
	   dd if="$dev" of=/tmp/nvme.out bs=4k count=256 skip=2048 iflag=direct 2>/dev/null &&
	   head -c 1048576 /tmp/nvme.in >/tmp/nvme.in1 &&
	   cmp /tmp/nvme.in1 /tmp/nvme.out; then
		tb_ok "nvme-rdma: 256 x 4 KiB I/Os, bytes equal"
	else
		tb_not_ok "nvme-rdma: 256 x 4 KiB I/Os, bytes equal" "dd/cmp failed"
	fi
	rm -f /tmp/nvme.in /tmp/nvme.in1 /tmp/nvme.out
else
	tb_not_ok "nvme-rdma: namespace appears" "no /dev/nvme*n*"
fi
c=$MROCE_DEBUGFS/mroce0/counters
sed 's/^/# /' "$c"
reg=$(awk '$1 == "mr_fast_reg" {print $2}' "$c")
inv=$(awk '$1 == "mr_remote_inv" {s += $2} $1 == "mr_local_inv" {s += $2} END {print s + 0}' "$c")
if [ "${reg:-0}" -gt 0 ] && [ "${inv:-0}" -gt 0 ]; then
	tb_ok "nvme-rdma used fast-register MRs: $reg REG_MR, $inv invalidations"
else
	tb_not_ok "nvme-rdma used fast-register MRs" "REG_MR ${reg:-?}, invalidations ${inv:-?}"
fi

for c in /sys/class/nvme/nvme*; do
	[ -e "$c/delete_controller" ] && echo 1 >"$c/delete_controller"
done
rm -f "$CFG/ports/1/subsystems/$NQN"
rmdir "$CFG/ports/1" 2>/dev/null
echo 0 >"$CFG/subsystems/$NQN/namespaces/1/enable" 2>/dev/null
rmdir "$CFG/subsystems/$NQN/namespaces/1" "$CFG/subsystems/$NQN" 2>/dev/null
modprobe -r nvme-rdma nvmet-rdma 2>/dev/null
check "nvme-rdma, nvmet-rdma unload" bash -c '! [ -d /sys/module/nvme_rdma ] && ! [ -d /sys/module/nvmet_rdma ]'
live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "nvme: no mroce object left"
else
	tb_not_ok "nvme: no mroce object left" "$live"
fi
rdma link delete mroce0
ip link del n0
check "rdma_mroce unloads after nvme" mroce_unload
modprobe -r nvmet null_blk 2>/dev/null
