#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Open MPI's launch agent for network-namespace "hosts" (--mca
# plm_rsh_agent): called as AGENT [OPTIONS] HOST COMMAND..., where HOST is
# a network namespace's name with '-' for '_' (ns-b for ns_b: hostnames
# have no underscores).  Runs the command line in that namespace, in a UTS
# namespace of its own whose hostname is HOST, so that every "host" has a
# name of its own (mpirun tells its nodes apart by hostname).
set -euo pipefail
while [ "${1#-}" != "$1" ]; do shift; done
host=$1
shift
exec ip netns exec "${host//-/_}" unshare --uts /bin/sh -c "hostname $host && exec $*"
