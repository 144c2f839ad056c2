#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
set -uo pipefail
. /mroce/tools/testbed/guest/lib.sh
echo "args=$# $1|$2"
echo written >/out/result.txt
touch /mroce/.tb-write-test 2>/dev/null || echo "mroce read-only"
tb_netns_pair
ip netns exec ns_a ping -c 1 -W 5 10.12.0.2 >/dev/null && echo "netns ping ok"
bash -c '. /mroce/tools/testbed/guest/lib.sh; tb_ok ktap-from-two-processes'
bash -c '. /mroce/tools/testbed/guest/lib.sh; tb_ok ktap-from-two-processes'
exit 7
