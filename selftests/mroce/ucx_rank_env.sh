#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Runs COMMAND with UCX_NET_DEVICES naming the mroce device of the network
# namespace it runs in (ns_a: mroce_a, ns_b: mroce_b, as test_ucx.sh sets
# them up).  RDMA devices are visible from every namespace, but their names
# are global, so the two ranks of a job need different UCX_NET_DEVICES.
set -euo pipefail
ns=$(ip netns identify $$) || ns=
case "$ns" in
ns_a) export UCX_NET_DEVICES=mroce_a:1 ;;
ns_b) export UCX_NET_DEVICES=mroce_b:1 ;;
*) echo "ucx_rank_env: not in ns_a or ns_b (${ns:-init netns})" >&2; exit 2 ;;
esac
exec "$@"
