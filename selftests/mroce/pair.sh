# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# shellcheck shell=bash
#
# selftests/mroce/pair.sh - run a server in namespace ns_b and its client in
# ns_a, as one KTAP result (source after lib.sh).
A="ip netns exec ns_a"
B="ip netns exec ns_b"
# The server's and the client's output, kept in the run's output directory
# when there is one (tb: MROCE_OUT=/out, the host's --out DIR).
log=${MROCE_OUT:+$MROCE_OUT/pair-logs}
log=${log:-/tmp/mroce_pair}
mkdir -p "$log"

# pair NAME SERVER_CMD... -- CLIENT_CMD...: run a server in ns_b and its
# client in ns_a (the client retries while the server starts listening).
# Each side gets 120 s (times MROCE_TIME_FACTOR) before it counts as hung.
pair() {
	local name=$1 srv=() cli=() rc_s rc_c t0=$SECONDS
	shift
	while [ "$1" != -- ]; do srv+=("$1"); shift; done
	shift
	cli=("$@")
	$B timeout "$(mroce_t 120)" "${srv[@]}" >"$log/$name.srv" 2>&1 &
	local spid=$!
	sleep 0.5
	local i
	for i in 1 2 3 4 5 6; do
		$A timeout "$(mroce_t 120)" "${cli[@]}" >"$log/$name.cli" 2>&1
		rc_c=$?
		[ $rc_c = 0 ] && break
		# The server is not listening yet (TCP side channel refused,
		# or rdma_cm's REJECTED with "invalid service ID", 8): retry.
		grep -qiE "couldn't connect|Connection refused|Unable to init|EVENT_REJECTED, error:? 8" \
			"$log/$name.cli" || break
		sleep 1
	done
	wait $spid
	rc_s=$?
	# Against the limit: how close a slow kernel comes to it.
	echo "# $name: $((SECONDS - t0)) s (limit $(mroce_t 120) s a side)"
	if [ $rc_c = 0 ] && [ $rc_s = 0 ]; then
		tb_ok "$name"
	else
		tb_not_ok "$name" "client rc $rc_c, server rc $rc_s"
		# stderr is unbuffered: the error lines may precede the tail.
		grep -iE "error|fail|unable|couldn't|timeout" "$log/$name.cli" | sed 's/^/# cli error: /' | head -10
		grep -iE "error|fail|unable|couldn't|timeout" "$log/$name.srv" | sed 's/^/# srv error: /' | head -10
		sed 's/^/# cli: /' "$log/$name.cli" | tail -15
		sed 's/^/# srv: /' "$log/$name.srv" | tail -15
	fi
}

