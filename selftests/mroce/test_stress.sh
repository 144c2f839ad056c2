#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Stress for the debug-kernel checkers: parallel processes churning QPs, MRs
# and CQs on two devices; then link delete, netdev delete and rmmod while
# processes hold (and keep churning) live objects.  run_guest.sh runs it
# unless MROCE_STRESS=0 (about 20 s on the Debian kernel, 6 min on the debug
# kernel under TCG).  MROCE_STRESS_ROUNDS (3) scales it.
set -uo pipefail
. "$(dirname "$0")/lib.sh"

rounds=${MROCE_STRESS_ROUNDS:-3}
stress=$MROCE_BUILD/selftests/mroce_verbs_stress
w=/tmp/stress
mkdir -p $w

if [ ! -x "$stress" ]; then
	tb_not_ok "stress" "$stress not built (make userspace)"
	exit 0
fi

links_up() { # links_up: mroce0 on m0, mroce1 on m1 (a veth pair)
	gid0=$(mroce_link_setup mroce0 m0 m1 10.13.0.1) || return 1
	ip addr add 10.13.0.2/24 dev m1
	gid1=$(mroce_link_setup mroce1 m1)
}

# wait_long CMD...: retry a condition for up to 60 s (times
# MROCE_TIME_FACTOR).
wait_long() {
	local i
	for i in $(seq $((300 * MROCE_TIME_FACTOR))); do
		"$@" && return 0
		sleep 0.2
	done
	return 1
}

# start NAME ARGS...: one stress process in the background.
declare -A pid
start() {
	local name=$1
	shift
	"$stress" "$@" >"$w/$name.out" 2>&1 &
	pid[$name]=$!
}

# reap WHAT NAME...: one KTAP result per process: it must exit 0.
reap() {
	local what=$1 n rc
	shift
	for n in "$@"; do
		wait "${pid[$n]}"
		rc=$?
		sed "s/^/# $n: /" "$w/$n.out"
		if [ $rc = 0 ]; then
			tb_ok "$what: $n exited cleanly"
		else
			tb_not_ok "$what: $n exited cleanly" "exit $rc"
		fi
	done
}

no_live_objects() { # no_live_objects WHAT
	local live
	live=$(mroce_live_objects)
	if [ -z "$live" ]; then
		tb_ok "$1: no live objects left"
	else
		tb_not_ok "$1: no live objects left" "$(echo $live)"
	fi
}

# start_live TAG IBDEV GID: three churning holders (qp, mr, cq) with a
# standing set of objects each; waits until all hold their objects.
start_live() {
	local tag=$1 dev=$2 gid=$3 m
	for m in qp mr cq; do
		rm -f "$w/$tag-$m.ready"
		start "$tag-$m" --qps 16 --live "$w/$tag-$m.ready" "$dev" "$gid" "$m"
	done
	for m in qp mr cq; do
		wait_long test -e "$w/$tag-$m.ready" || return 1
	done
}
stop_live() { # stop_live TAG: SIGTERM to the holders still running
	local m
	for m in qp mr cq; do kill -TERM "${pid[$1-$m]}" 2>/dev/null; done
}

# Verified traffic between mroce0 and mroce1 during the churn is not run:
# both devices sit in one namespace, and an RC connection between two
# devices of one namespace (datagrams looped back on the host) did not
# come up in a first try (mroce_verify: "connect ... not ok").  Open; until
# then the hook reports a skip with that reason.  Traffic under teardown is
# covered by test_unload_traffic.sh (two namespaces).
mroce_stress_traffic_hook() {
	tb_skip "stress: verified traffic during churn" "RC between two devices of one namespace does not connect yet (open)"
}

# 1) Parallel churn on two devices, eight processes.
check "stress: two devices up" links_up
start qp0 --rounds "$rounds" --qps 64 mroce0 "$gid0" qp
start qp1 --rounds "$rounds" --qps 64 mroce1 "$gid1" qp
start mr0 --rounds "$rounds" mroce0 "$gid0" mr
start mr1 --rounds "$rounds" mroce1 "$gid1" mr
start cq0 --rounds "$rounds" mroce0 "$gid0" cq
start cq1 --rounds "$rounds" mroce1 "$gid1" cq
start mixed0 --rounds "$rounds" --qps 32 mroce0 "$gid0" mixed
start mixed1 --rounds "$rounds" --qps 32 mroce1 "$gid1" mixed
mroce_stress_traffic_hook
reap "churn" qp0 qp1 mr0 mr1 cq0 cq1 mixed0 mixed1
no_live_objects "churn"

# 2) rdma link delete under churning holders (mroce1 stays, busy too).
check "link delete: holders on mroce0 ready" start_live l0 mroce0 "$gid0"
check "link delete: holders on mroce1 ready" start_live l1 mroce1 "$gid1"
check "link delete: mroce0 with live objects" timeout "$(mroce_t 60)" rdma link delete mroce0
check "link delete: mroce0 is gone" test ! -e /sys/class/infiniband/mroce0
reap "link delete" l0-qp l0-mr l0-cq
check "link delete: mroce1 still there" test -e /sys/class/infiniband/mroce1
stop_live l1
reap "link delete (other device)" l1-qp l1-mr l1-cq
no_live_objects "link delete"

# 3) netdev delete under churning holders: the notifier removes mroce1.
check "netdev delete: re-add mroce0" rdma link add mroce0 type mroce netdev m0
gid0=$(tb_wait_gid mroce0)
check "netdev delete: holders on mroce1 ready" start_live n1 mroce1 "$gid1"
check "netdev delete: ip link del m1 (veth pair) with live objects" timeout "$(mroce_t 60)" ip link del m1
check "netdev delete: mroce1 and mroce0 are gone" \
	wait_long test ! -e /sys/class/infiniband/mroce1 -a ! -e /sys/class/infiniband/mroce0
reap "netdev delete" n1-qp n1-mr n1-cq
no_live_objects "netdev delete"
check "netdev delete: rmmod" mroce_unload

# 4) rmmod under churning holders on two devices.
check "rmmod: two devices up" links_up
check "rmmod: holders on mroce0 ready" start_live r0 mroce0 "$gid0"
check "rmmod: holders on mroce1 ready" start_live r1 mroce1 "$gid1"
check "rmmod: with live objects on two devices" timeout "$(mroce_t 60)" rmmod rdma_mroce
check "rmmod: module is gone" test ! -d /sys/module/rdma_mroce
reap "rmmod" r0-qp r0-mr r0-cq r1-qp r1-mr r1-cq
ip link del m0 2>/dev/null

# 5) Load / link add / open / delete / unload cycles.
ok=1
for i in $(seq "$rounds"); do
	links_up && ibv_devinfo -d mroce0 >/dev/null && ibv_devinfo -d mroce1 >/dev/null &&
		rdma link delete mroce0 && ip link del m0 && mroce_unload || { ok=0; break; }
done
if [ $ok = 1 ]; then
	tb_ok "cycles: $rounds x load, link add, open, delete, unload"
else
	tb_not_ok "cycles: $rounds x load, link add, open, delete, unload" "failed in round $i"
	ip link del m0 2>/dev/null
	mroce_unload
fi
exit 0
