# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# selftests/mroce/lib.sh - helpers for the mroce guest selftests.  Sources
# the testbed's guest library (tools/testbed/guest/lib.sh) for the KTAP
# emitters tb_ok/tb_not_ok/tb_skip and the tb_* topology helpers.
#
# Shell policy, for every script in selftests/, tests/, tools/ and bench/
# (each states it on its own `set` line, after its header):
#   set -uo pipefail   scripts that report results: the KTAP test scripts
#                      and their guest halves, the runners (run.sh,
#                      run_guest.sh, tools/check.sh, tools/demo.sh, tb, ...)
#                      and the bench's guest scripts.  No -e: a failing
#                      check is reported and the script goes on to the
#                      next one, so every result is reported; each step's
#                      status is tested where it matters (check,
#                      check_fails, if, ||).
#   set -euo pipefail  every other script (build, setup, fuzz, sim, bench
#                      driver and summaries, demo-guest.sh, wrappers): the
#                      first failing step stops it.
# Unset variables are errors everywhere (-u: optional ones are read as
# ${VAR:-}), and a pipeline fails when any part of it fails (pipefail: to
# test what grep -q finds, feed it with <<<"$(cmd)", not cmd | grep -q,
# which SIGPIPE can fail).  Sourced libraries (this file, pair.sh,
# tools/testbed/guest/lib.sh, bench/common.sh) set nothing and work
# under both.  tools/testbed/init.sh (/bin/sh, the guest's PID 1) sets
# nothing either: it must reach the power-off whatever fails.

MROCE_SRC=${MROCE_SRC:-/mroce}
# shellcheck source=../../tools/testbed/guest/lib.sh
. "$MROCE_SRC/tools/testbed/guest/lib.sh"
MROCE_BUILD=${MROCE_BUILD:-$MROCE_SRC/build}
MROCE_KO=${MROCE_KO:-$MROCE_SRC/drivers/infiniband/sw/mroce/rdma_mroce.ko}
MROCE_DEBUGFS=/sys/kernel/debug/mroce
MROCE_PORT_DEFAULT=4792

# MROCE_TIME_FACTOR: how many times longer than on the Debian kernel the
# tests' hang detectors (timeouts, wait loops) give an operation before they
# call it hung.  Only time limits scale; what a test runs and asserts (sizes,
# iteration counts, results, counters) never does.  1 on the Debian kernel;
# on the debug kernel (tools/debugkernel: KASAN, lockdep, kmemleak, UBSAN,
# slub_debug, release *-mroce-dbg) 4, see tools/debugkernel/README.md for
# the measurement behind it.  An explicit MROCE_TIME_FACTOR (selftests/run.sh
# passes the host's on) wins.
if [ -z "${MROCE_TIME_FACTOR:-}" ]; then
	case "$(uname -r)" in
	*-mroce-dbg) MROCE_TIME_FACTOR=4 ;;
	*) MROCE_TIME_FACTOR=1 ;;
	esac
fi
[[ "$MROCE_TIME_FACTOR" =~ ^[1-9][0-9]*$ ]] || MROCE_TIME_FACTOR=1

# mroce_t SECONDS: a time limit scaled by MROCE_TIME_FACTOR.
mroce_t() { echo $(($1 * MROCE_TIME_FACTOR)); }

# The provider from the build tree, without installing it.
export RDMAV_DRIVERS=$MROCE_BUILD/userspace_provider/libmroce
MROCE_VERBS_OBJECTS=$MROCE_BUILD/selftests/mroce_verbs_objects
MROCE_WR_API=$MROCE_BUILD/selftests/mroce_wr_api

# check NAME CMD...: one KTAP result from a command's exit status.
check() {
	local name=$1
	shift
	if "$@"; then
		tb_ok "$name"
	else
		tb_not_ok "$name" "command failed: $*"
	fi
}

# check_fails NAME CMD...: the command must fail.
check_fails() {
	local name=$1
	shift
	if "$@"; then
		tb_not_ok "$name" "succeeded, must fail: $*"
	else
		tb_ok "$name"
	fi
}

mroce_loaded() { [ -d /sys/module/rdma_mroce ]; }

# mroce_load [PARAM=VALUE...]: load what the module depends on (insmod
# resolves nothing itself), then the module from the tree.
mroce_load() {
	tb_modprobe_rdma >/dev/null 2>&1
	mroce_loaded && return 0
	modprobe -a $(modinfo -F depends "$MROCE_KO" | tr , ' ') || return 1
	insmod "$MROCE_KO" "$@"
}

mroce_unload() {
	mroce_loaded || return 0
	rmmod rdma_mroce
}

# mroce_link_setup [-n NETNS] IBDEV NETDEV [PEER ADDR]: the setup a test
# starts with.  Loads the module (mroce_load); with PEER, creates the veth
# pair NETDEV-PEER (ADDR/24 on NETDEV, both ends up); adds the mroce device
# IBDEV on NETDEV (in NETNS with -n, where NETDEV must then be) and waits
# for its RoCE v2 IPv4-mapped GID.  Prints the GID's index:
#   gid=$(mroce_link_setup mroce0 m0 m1 10.13.0.1)
#   ga=$(mroce_link_setup -n ns_a mroce_a va)      (after tb_netns_pair)
# Returns non-zero at the first step that fails, named on stderr.
mroce_link_setup() {
	local ns=() gid
	if [ "${1:-}" = -n ]; then
		ns=(ip netns exec "$2")
		shift 2
	fi
	local ibdev=$1 netdev=$2 peer=${3:-} addr=${4:-}
	if ! mroce_load; then
		echo "# mroce_link_setup: loading $MROCE_KO failed" >&2
		return 1
	fi
	if [ -n "$peer" ]; then
		if ! "${ns[@]}" ip link add "$netdev" type veth peer name "$peer" ||
		   ! "${ns[@]}" ip addr add "$addr/24" dev "$netdev" ||
		   ! "${ns[@]}" ip link set "$netdev" up ||
		   ! "${ns[@]}" ip link set "$peer" up; then
			echo "# mroce_link_setup: veth $netdev-$peer ($addr) failed" >&2
			return 1
		fi
	fi
	if ! "${ns[@]}" rdma link add "$ibdev" type mroce netdev "$netdev"; then
		echo "# mroce_link_setup: rdma link add $ibdev on $netdev failed" >&2
		return 1
	fi
	if ! gid=$(tb_wait_gid "$ibdev"); then
		echo "# mroce_link_setup: $ibdev has no RoCE v2 IPv4 GID" >&2
		return 1
	fi
	echo "$gid"
}

# mroce_live_objects: print "name value" for every live verbs object count
# that is not zero (empty output: nothing alive).
mroce_live_objects() {
	awk '$2 != 0' "$MROCE_DEBUGFS/objects" 2>/dev/null
}

# mroce_ibdevs: names of the mroce ib_devices present (by their ABI attribute).
mroce_ibdevs() {
	local d
	for d in /sys/class/infiniband/*; do
		[ -e "$d/mroce_abi_version" ] && echo "${d##*/}"
	done
}

# mroce_netns_devices: tb_netns_pair, then mroce_a on va in ns_a and
# mroce_b on vb in ns_b; sets ga and gb to their GID indexes.
mroce_netns_devices() {
	tb_netns_pair
	ga=$(mroce_link_setup -n ns_a mroce_a va)
	gb=$(mroce_link_setup -n ns_b mroce_b vb)
}

# mroce_netns_teardown: remove what mroce_netns_devices set up.
mroce_netns_teardown() {
	ip netns exec ns_a rdma link delete mroce_a
	ip netns exec ns_b rdma link delete mroce_b
	ip netns del ns_a
	ip netns del ns_b
}

# mroce_pair_prog NAME PROG SECONDS [ARGS...]: a verbs test program on
# both devices of mroce_netns_devices (PROG mroce_a GA mroce_b GB ARGS),
# its KTAP results relayed as "NAME: ...", with SECONDS (times
# MROCE_TIME_FACTOR) before it counts as hung.
mroce_pair_prog() {
	local name=$1 prog=$2 secs=$3
	shift 3
	if [ -x "$prog" ]; then
		timeout "$(mroce_t "$secs")" "$prog" mroce_a "$ga" mroce_b "$gb" "$@" 2>&1 |
			ktap_relay "$name"
	else
		tb_not_ok "$name" "$prog not built"
	fi
}

# mroce_check_released: every verbs object is gone once the programs
# exited.
mroce_check_released() {
	local live
	live=$(mroce_live_objects)
	if [ -z "$live" ]; then
		tb_ok "every object released after the program exits"
	else
		tb_not_ok "every object released after the program exits" "$live"
	fi
}

# mroce_stat IBDEV NAME: one counter of `rdma statistic` (-1 if absent).
mroce_stat() {
	local v
	v=$(rdma statistic show link "$1/1" | tr ' ' '\n' |
		awk -v n="$2" 'p {print; exit} $1 == n {p = 1}')
	echo "${v:--1}"
}

# wait_for CMD...: retry a condition for up to 5 s (times MROCE_TIME_FACTOR).
wait_for() {
	local i
	for i in $(seq $((50 * MROCE_TIME_FACTOR))); do
		"$@" && return 0
		sleep 0.1
	done
	return 1
}

# ktap_relay PREFIX: re-emit the KTAP results read on stdin as our own
# results, named "PREFIX: name", and pass diagnostics through.
ktap_relay() {
	local prefix=$1 line name seen=0
	while IFS= read -r line; do
		case "$line" in
		"ok "*)
			name=${line#ok }
			tb_ok "$prefix: ${name#* }"
			seen=1 ;;
		"not ok "*)
			name=${line#not ok }
			tb_not_ok "$prefix: ${name#* }" "see diagnostics above"
			seen=1 ;;
		"#"*) echo "$line" ;;
		esac
	done
	[ $seen = 1 ] || tb_not_ok "$prefix" "no results"
}
