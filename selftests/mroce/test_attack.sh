#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# The attack suite: an unprivileged process corrupts the rings it shares
# with the kernel, races object destruction with traffic, and forges mroce
# packets from a plain UDP socket against a live loopback RC connection
# (selftests/mroce/attack.cpp).  Every group runs in its own process as
# uid 65534 under a watchdog; the groups that can spin in the kernel run
# last, and after one of them hangs the rest is skipped (reported) instead
# of wedging the guest.
#   bash test_attack.sh [GROUP...]     (default: all, in the order below)
set -uo pipefail
. "$(dirname "$0")/lib.sh"

MROCE_ATTACK=$MROCE_BUILD/selftests/mroce_attack
ATTACK_UID=65534
ATTACK_DIR=/tmp/attack
# group:watchdog seconds; the rolled-back-producer groups last.
groups=(ring:300 ah:120 qp-flood:120 mr-dereg:180 read-inval:180 forge:300
	sq-rollback-rc:60 rq-rollback-ud:90 rq-rollback-rc:90)
[ $# -gt 0 ] && groups=("$@")

if [ ! -x "$MROCE_ATTACK" ]; then
	tb_not_ok attack "$MROCE_ATTACK not built"
	exit 0
fi

gid=$(mroce_link_setup mroce0 t0 t1 10.14.0.1)
# What rdma-core's udev rules give every user on a real system; the
# program drops to ATTACK_UID itself before opening the device.
chmod 0666 /dev/infiniband/uverbs*
# The testbed's initramfs root is mode 0700 (mktemp -d): make it searchable
# as on any real system, or uid 65534 cannot even reach /dev.
chmod 0755 /
mkdir -p "$ATTACK_DIR"
chmod 1777 "$ATTACK_DIR"
counters=$MROCE_DEBUGFS/mroce0/counters
hung=

counter() { awk -v k="$1" '$1 == k {print $2}' "$2"; }

# forge_counters BEFORE AFTER CONNS OUT: the forged packets left a trace in
# the device counters and in the attacked connections' counters.
forge_counters() {
	local before=$1 after=$2 conns=$3 out=$4 qpns d_drop d_rej c_drop sent
	read -r -a qpns <"$ATTACK_DIR/hold.ready"
	sed 's/^/# counters: /' "$after"
	grep -E "^(qpn|${qpns[0]}|${qpns[1]}) " "$conns" | sed 's/^/# conns: /'
	d_drop=$(($(counter rx_dropped "$after") - $(counter rx_dropped "$before")))
	d_rej=$(($(counter rx_rejected "$after") - $(counter rx_rejected "$before")))
	c_drop=$(awk -v a="${qpns[0]}" -v b="${qpns[1]}" '
		NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
		$1 == a || $1 == b { n += $col["rx_drop"] + $col["rx_dup"] }
		END { print n + 0 }' "$conns")
	sent=$(sed -n 's/^# \([0-9]*\) forged packets sent/\1/p' "$out")
	echo "# forged packets sent ${sent:-?}: device rx_dropped +$d_drop, rx_rejected +$d_rej; connections rx_drop + rx_dup $c_drop"
	[ $((d_drop + d_rej + c_drop)) -gt 0 ]
}

# attack_group GROUP SECONDS: one group as ATTACK_UID under a watchdog.
attack_group() {
	local group=$1 limit out pid i dm0 bad0 bad hold=() reports
	limit=$(mroce_t "$2")
	out=$ATTACK_DIR/$group.out
	if [ -n "$hung" ]; then
		tb_skip "attack: $group" "not run: the $hung group is still spinning in the kernel"
		return
	fi
	dm0=$(dmesg | wc -l)
	bad0=$(awk '$1 == "ring_bad_index" { print $2 }' "$counters")
	rm -f "$ATTACK_DIR"/hold.*
	if [ "$group" = forge ]; then
		hold=(--hold "$ATTACK_DIR/hold")
		cp "$counters" "$ATTACK_DIR/counters.before"
	fi
	MROCE_TIME_FACTOR=$MROCE_TIME_FACTOR "$MROCE_ATTACK" --user "$ATTACK_UID" "${hold[@]}" mroce0 "$gid" "$group" >"$out" 2>&1 &
	pid=$!
	for ((i = 0; i < limit * 10; i++)); do
		kill -0 "$pid" 2>/dev/null || break
		if [ ${#hold[@]} -gt 0 ] && [ -e "$ATTACK_DIR/hold.ready" ] && [ ! -e "$ATTACK_DIR/hold.done" ]; then
			cp "$MROCE_DEBUGFS/mroce0/conns" "$ATTACK_DIR/conns"
			cp "$counters" "$ATTACK_DIR/counters.after"
			touch "$ATTACK_DIR/hold.done"
		fi
		sleep 0.1
	done
	if kill -0 "$pid" 2>/dev/null; then
		kill -KILL "$pid"
		for ((i = 0; i < 50; i++)); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		ktap_relay "attack: $group" <"$out"
		if kill -0 "$pid" 2>/dev/null; then
			hung=$group
			tb_not_ok "attack: $group: finishes within ${limit} s" \
				"hung: still running and SIGKILL does not end it (stuck in the kernel); later groups and the teardown are skipped"
			dmesg | tail -n +"$((dm0 + 1))" | tail -20 | sed 's/^/# dmesg: /'
			return
		fi
		tb_not_ok "attack: $group: finishes within ${limit} s" "killed by the watchdog"
	else
		wait "$pid"
		ktap_relay "attack: $group" <"$out"
		tb_ok "attack: $group: finishes within ${limit} s"
	fi
	# The program detected a call that never returned and left its thread
	# spinning in the kernel (attack.cpp, hang()): nothing may touch the
	# device any more.
	if grep -q '^# HANG' "$out"; then
		hung=$group
		dmesg | tail -n +"$((dm0 + 1))" | grep -m 5 -E 'soft lockup|rcu.*stall' | sed 's/^/# dmesg: /'
		return
	fi
	if [ ${#hold[@]} -gt 0 ]; then
		if [ ! -e "$ATTACK_DIR/hold.done" ]; then
			tb_not_ok "attack: forge: counters show the dropped packets" "the program never reached the hold point"
		elif forge_counters "$ATTACK_DIR/counters.before" "$ATTACK_DIR/counters.after" \
			"$ATTACK_DIR/conns" "$out"; then
			tb_ok "attack: forge: counters show the dropped packets"
		else
			tb_not_ok "attack: forge: counters show the dropped packets" "no drop counted"
		fi
	fi
	# Every out-of-range producer the ring group writes is ignored and
	# counted (mroce_wq_avail()).
	if [ "$group" = ring ]; then
		bad=$(awk '$1 == "ring_bad_index" { print $2 }' "$counters")
		if [ "${bad:-0}" -gt "${bad0:-0}" ]; then
			tb_ok "attack: ring: ring_bad_index counts the bad producers"
		else
			tb_not_ok "attack: ring: ring_bad_index counts the bad producers" \
				"ring_bad_index ${bad0:-?} before, ${bad:-?} after"
		fi
	fi
	reports=$(dmesg | tail -n +"$((dm0 + 1))" | grep -E "$TB_PROBLEMS")
	if [ -z "$reports" ]; then
		tb_ok "attack: $group: no kernel report"
	else
		echo "$reports" | head -20 | sed 's/^/# dmesg: /'
		tb_not_ok "attack: $group: no kernel report"
	fi
}

for g in "${groups[@]}"; do
	case "$g" in
	*:*) attack_group "${g%%:*}" "${g#*:}" ;;
	*) attack_group "$g" 300 ;;
	esac
done
dmesg | grep -c 'ring producer .* outside \[' | sed 's/^/# ring index warnings (ratelimited): /'

if [ -n "$hung" ]; then
	echo "# teardown skipped: a process of the $hung group is stuck in the kernel"
	exit 0
fi
rdma link delete mroce0
ip link del t0
live=$(mroce_live_objects)
if [ -z "$live" ]; then
	tb_ok "attack: every object released"
else
	tb_not_ok "attack: every object released" "$live"
fi
mroce_unload
