# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# tools/testbed/guest/lib.sh - helpers for scripts running in a testbed
# guest (bash).  Source it:  . /mroce/tools/testbed/guest/lib.sh

TB_KTAP_STATE=${TB_KTAP_STATE:-/tmp/.tb_ktap_n}
TB_PROBLEMS='WARNING:|BUG:|Oops|KASAN|UBSAN|Call Trace|general protection fault|kernel BUG'
TB_PROBLEMS+='|possible recursive locking|INFO: task .* blocked|circular locking|refcount_t:'
TB_PROBLEMS+='|list_add corruption|list_del corruption|kmemleak: .*suspected memory leak|unreferenced object 0x'
TB_PROBLEMS+='|turning off the locking correctness validator|Disabling lock debugging|trying to register non-static key'
TB_PROBLEMS+='|Kernel memory leak detector disabled'

# ---- KTAP ------------------------------------------------------------------
# The result counter lives in a file so that every process of one guest run
# shares one numbering.

_tb_next() {
	local n
	exec {_tb_fd}>>"$TB_KTAP_STATE.lock"
	flock "$_tb_fd"
	n=$(($(cat "$TB_KTAP_STATE" 2>/dev/null || echo 0) + 1))
	echo "$n" >"$TB_KTAP_STATE"
	exec {_tb_fd}>&-
	echo "$n"
}

tb_ktap_plan() { echo "1..$1"; }
tb_ktap_plan_end() { echo "1..$(cat "$TB_KTAP_STATE" 2>/dev/null || echo 0)"; }
tb_ok() { echo "ok $(_tb_next) $1"; }
# tb_not_ok NAME [REASON]
tb_not_ok() {
	[ -n "${2:-}" ] && echo "# $1: $2"
	echo "not ok $(_tb_next) $1"
	echo x >>"${TB_KTAP_STATE}.failed"
}
# tb_ktap_failed: true when any tb_not_ok ran in this KTAP run
tb_ktap_failed() { [ -s "${TB_KTAP_STATE}.failed" ]; }
# tb_skip NAME REASON
tb_skip() { echo "ok $(_tb_next) $1 # SKIP ${2:-}"; }

# ---- kernel ------------------------------------------------------------------

tb_modprobe_rdma() {
	modprobe -a ib_core ib_uverbs rdma_ucm veth sch_netem
}

# tb_dmesg_check: fails (and prints the lines) when dmesg holds a problem report.
tb_dmesg_check() {
	local hits
	hits=$(dmesg | grep -E "$TB_PROBLEMS" || true)
	[ -z "$hits" ] && return 0
	echo "$hits" | sed 's/^/# dmesg: /'
	return 1
}

# tb_lockdep_on: true unless the kernel has lockdep and it has switched
# itself off (after its first report, or on a taint that makes it
# unreliable: nothing after that is validated).
tb_lockdep_on() {
	[ -r /proc/lockdep_stats ] || return 0
	[ "$(awk '$1 == "debug_locks:" {print $2}' /proc/lockdep_stats)" = 1 ]
}

# ---- topology ----------------------------------------------------------------

# tb_netns_pair: namespaces ns_a and ns_b joined by veth va (10.12.0.1/24)
# and vb (10.12.0.2/24).
tb_netns_pair() {
	modprobe veth
	ip netns add ns_a
	ip netns add ns_b
	ip link add va netns ns_a type veth peer name vb netns ns_b
	ip -n ns_a addr add 10.12.0.1/24 dev va
	ip -n ns_b addr add 10.12.0.2/24 dev vb
	ip -n ns_a link set lo up
	ip -n ns_b link set lo up
	ip -n ns_a link set va up
	ip -n ns_b link set vb up
}

# tb_wait_gid IBDEV [PORT]: print the index of the RoCE v2 IPv4-mapped GID,
# waiting up to 10 s for ib_core to fill the table.
tb_wait_gid() {
	local d=/sys/class/infiniband/$1/ports/${2:-1} g n i
	for i in $(seq 100); do
		for g in "$d"/gids/*; do
			n=${g##*/}
			case "$(cat "$g" 2>/dev/null)" in
			0000:0000:0000:0000:0000:ffff:*)
				if [ "$(cat "$d/gid_attrs/types/$n" 2>/dev/null)" = "RoCE v2" ]; then
					echo "$n"
					return 0
				fi ;;
			esac
		done
		sleep 0.1
	done
	return 1
}

# tb_wait_ping ADDR: wait up to 20 s for ADDR to answer.
tb_wait_ping() {
	local i
	for i in $(seq 20); do
		ping -c 1 -W 1 "$1" >/dev/null 2>&1 && return 0
	done
	return 1
}
