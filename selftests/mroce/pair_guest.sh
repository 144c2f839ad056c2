#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# The real clients between two testbed guests (selftests/run_pair.sh): the
# second topology next to the netns pairs of test_rc.sh and test_ud_cm.sh.
# Guest b (10.11.0.2) runs the servers one after the other, in the order of
# the tests, each on its own TCP or rdma_cm port so that a failed client
# cannot meet the next test's server; guest a runs the clients in the same
# order and reports KTAP, retrying while its server is not up yet.  A
# server whose client never came ends by its own timeout, so one hung test
# costs its timeouts, not the tests after it.  For the diagnosis, a
# process still running 20 s before its timeout has its guest's mroce
# connection state taken: a prints it with the failure, b writes it to
# /out/srvN.state.
set -uo pipefail
. /mroce/selftests/mroce/lib.sh

# name | server args | client args (the client gets the server address last)
tests=(
	"ibv_rc_pingpong 4 KiB x 200, payload checked|ibv_rc_pingpong -p 18601 -n 200 -s 4096 -c|ibv_rc_pingpong -p 18601 -n 200 -s 4096 -c"
	"ibv_rc_pingpong 1 MiB x 10, events, payload checked|ibv_rc_pingpong -p 18602 -n 10 -s 1048576 -e -c|ibv_rc_pingpong -p 18602 -n 10 -s 1048576 -e -c"
	"ibv_ud_pingpong 1 KiB x 100|ibv_ud_pingpong -p 18603 -n 100 -s 1024|ibv_ud_pingpong -p 18603 -n 100 -s 1024"
	"ibv_srq_pingpong 4 QPs, payload checked|ibv_srq_pingpong -p 18604 -n 100 -q 4 -s 4096 -c|ibv_srq_pingpong -p 18604 -n 100 -q 4 -s 4096 -c"
	"rping -V, 20 iterations over rdma_cm|rping -s -a 10.11.0.2 -p 18605 -C 20 -S 4096 -V|rping -c -a 10.11.0.2 -p 18605 -C 20 -S 4096 -V"
	"ib_write_bw 64 KiB|ib_write_bw -p 18606 -s 65536 -n 200 -F|ib_write_bw -p 18606 -s 65536 -n 200 -F"
	"ib_read_bw 64 KiB|ib_read_bw -p 18607 -s 65536 -n 200 -F|ib_read_bw -p 18607 -s 65536 -n 200 -F"
	"ib_send_bw 64 KiB|ib_send_bw -p 18608 -s 65536 -n 200 -F|ib_send_bw -p 18608 -s 65536 -n 200 -F"
	"ib_send_lat 64 B|ib_send_lat -p 18609 -s 64 -n 200 -F|ib_send_lat -p 18609 -s 64 -n 200 -F"
	"ib_atomic_bw fetch-and-add|ib_atomic_bw -p 18610 -n 200 -F -A FETCH_AND_ADD|ib_atomic_bw -p 18610 -n 200 -F -A FETCH_AND_ADD"
	"ib_write_bw -R (rdma_cm)|ib_write_bw -p 18611 -s 65536 -n 200 -F -R|ib_write_bw -p 18611 -s 65536 -n 200 -F -R"
)

gid=$(mroce_link_setup mroce0 eth0)
# Device and GID arguments differ by tool family.  perftest gets a local
# ACK timeout of 1 s (-u 18; 4.096 us << 18, mroce clamps it to 1 s)
# instead of its 67 ms: with retry_cnt 7 a QP gives up after about 8
# timeouts of a silent peer, and a TCG guest on a loaded host can stand
# still for longer than 8 x 67 ms (seen: ib_read_bw RETRY_EXC in CI; with
# guests stopped for 0.2-2.5 s by SIGSTOP it fails 2 runs in 15).  The
# pingpongs and rping hard-code their timeouts.
dev_args() {
	case $1 in
	ibv_*) echo "-d mroce0 -g $gid" ;;
	ib_*) echo "-d mroce0 -x $gid -u 18" ;;
	*) echo "" ;;
	esac
}

# Connection and path state of this guest's mroce device, as # lines.
state() {
	echo "# $1 conns:"
	sed 's/^/#   /' "$MROCE_DEBUGFS/mroce0/conns"
	echo "# $1 paths (qpn path sport state srtt_us min_rtt_us cwnd inflight ...):"
	head -40 "$MROCE_DEBUGFS/mroce0/paths" | sed 's/^/#   /'
	echo "# $1 device counters (non-zero):"
	awk '$2 != 0 { printf "#   %s %s\n", $1, $2 }' "$MROCE_DEBUGFS/mroce0/counters"
}

# watched SECONDS LABEL FILE CMD...: run CMD; if it still runs after
# SECONDS, write the state to FILE.  Meanwhile FILE.last holds the state
# as it was at most 5 s ago, for a command that fails before SECONDS.
# Returns CMD's status.
watched() {
	local after=$1 label=$2 file=$3 pid wpid rc
	shift 3
	"$@" &
	pid=$!
	(
		end=$((SECONDS + after))
		while [ $SECONDS -lt $end ] && kill -0 "$pid" 2>/dev/null; do
			state "$label, last look before it ended" >"$file.new"
			mv "$file.new" "$file.last"
			sleep 5
		done
		kill -0 "$pid" 2>/dev/null && state "$label" >"$file"
	) &
	wpid=$!
	wait "$pid"
	rc=$?
	kill "$wpid" 2>/dev/null
	wait "$wpid" 2>/dev/null
	return $rc
}

if [ "$MROCE_ROLE" = b ]; then
	for i in "${!tests[@]}"; do
		IFS='|' read -r _ srv _ <<<"${tests[$i]}"
		set -- $srv
		tool=$1
		shift
		# shellcheck disable=SC2046
		watched 280 "b, server $i after 280 s" "/out/srv$i.state" \
			timeout 300 "$tool" $(dev_args "$tool") "$@" >"/out/srv$i.log" 2>&1
	done
	exit 0
fi
echo "KTAP version 1"
tb_wait_ping 10.11.0.2 >/dev/null
for i in "${!tests[@]}"; do
	IFS='|' read -r name _ cli <<<"${tests[$i]}"
	set -- $cli
	tool=$1
	shift
	args=("$@")
	[ "$tool" = rping ] || args+=(10.11.0.2)
	# The server may still be starting, or the previous one ending by
	# its own timeout after a failed client: retry while it refuses, for
	# longer than a server's timeout (300 s).
	t0=$SECONDS
	while :; do
		rm -f "/out/cli$i.state" "/out/cli$i.state.last"
		# shellcheck disable=SC2046
		watched 180 "a, client $i after 180 s" "/out/cli$i.state" \
			timeout 200 "$tool" $(dev_args "$tool") "${args[@]}" >"/out/cli$i.log" 2>&1
		rc=$?
		grep -qiE "couldn't connect|Connection refused|Unable to init|EVENT_REJECTED, error:? 8" \
			"/out/cli$i.log" || break
		[ $((SECONDS - t0)) -lt 330 ] || break
		sleep 2
	done
	if [ $rc = 0 ]; then
		tb_ok "two guests: $name"
		grep -E "^ *[0-9]+ +[0-9]+ " "/out/cli$i.log" | tail -1 | sed 's/^ */# perftest: /'
	else
		tb_not_ok "two guests: $name" "client rc $rc"
		grep -iE "error|fail|unable|couldn't|timeout" "/out/cli$i.log" | head -5 | sed 's/^/# cli: /'
		if [ -f "/out/cli$i.state" ]; then
			cat "/out/cli$i.state"
		elif [ -f "/out/cli$i.state.last" ]; then
			cat "/out/cli$i.state.last"
		fi
	fi
done
c=$MROCE_DEBUGFS/mroce0/counters
if [ "$(awk '$1 == "rx_malformed" {print $2}' "$c")" = 0 ]; then
	tb_ok "two guests: no malformed packets at a"
else
	tb_not_ok "two guests: no malformed packets at a" "$(grep rx_malformed "$c")"
fi
if tb_dmesg_check; then
	tb_ok "two guests: kernel log of a is clean"
else
	tb_not_ok "two guests: kernel log of a is clean"
fi
tb_ktap_plan_end
! tb_ktap_failed
