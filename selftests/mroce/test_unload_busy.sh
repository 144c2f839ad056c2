#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Remove the device, then the module, while a process holds verbs objects.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

setup() {
	gid=$(mroce_link_setup mroce0 m0 m1 10.13.0.1)
	rm -f /tmp/holder.ready /tmp/holder.out
	"$MROCE_VERBS_OBJECTS" --hold /tmp/holder.ready mroce0 "$gid" >/tmp/holder.out 2>&1 &
	holder=$!
	wait_for test -e /tmp/holder.ready
}

finish_holder() {
	local what=$1 rc
	kill -TERM "$holder" 2>/dev/null
	wait "$holder"
	rc=$?
	sed 's/^/# holder: /' /tmp/holder.out
	if [ $rc = 0 ]; then
		tb_ok "$what: holder released its objects and exited cleanly"
	else
		tb_not_ok "$what: holder released its objects and exited cleanly" "exit $rc"
	fi
}

# 1) rdma link delete under a live process: the core disassociates it.
setup
check "holder created objects" test -e /tmp/holder.ready
check "rdma link delete with live objects returns" timeout "$(mroce_t 30)" rdma link delete mroce0
check "device is gone" test ! -e /sys/class/infiniband/mroce0
finish_holder "link delete"
live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "link delete: no live objects left"
else
	tb_not_ok "link delete: no live objects left" "$live"
fi
ip link del m0

# 2) rmmod under a live process.
setup
check "rmmod with live objects returns" timeout "$(mroce_t 30)" rmmod rdma_mroce
check "module is gone" test ! -d /sys/module/rdma_mroce
finish_holder "rmmod"
ip link del m0
