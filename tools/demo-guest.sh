#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Guest side of tools/demo.sh.
set -euo pipefail
. /mroce/tools/testbed/guest/lib.sh
. /mroce/selftests/mroce/lib.sh
mroce_load
tb_netns_pair
echo "\$ ip netns exec ns_a rdma link add mroce0 type mroce netdev va"
ip netns exec ns_a rdma link add mroce0 type mroce netdev va
ip netns exec ns_a bash -c '. /mroce/tools/testbed/guest/lib.sh; tb_wait_gid mroce0 >/dev/null'
echo "\$ rdma link show"
ip netns exec ns_a rdma link show
echo "\$ ibv_devices"
ip netns exec ns_a ibv_devices
echo "\$ ibv_devinfo -d mroce0"
ip netns exec ns_a ibv_devinfo -d mroce0
ip netns exec ns_a rdma link delete mroce0
mroce_unload
tb_dmesg_check
