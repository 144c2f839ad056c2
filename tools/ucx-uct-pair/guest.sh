#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Both guests of tools/ucx-uct-pair/run.sh: b serves one ucx_perftest run
# per test, a runs the clients against 10.11.0.2 and reports.
set -uo pipefail
. /mroce/selftests/mroce/lib.sh
tests=(
	"-x rc_verbs -t am_lat -n 1000 -w 10"
	"-x rc_verbs -t put_lat -n 1000 -w 10"
	"-x rc_verbs -t am_bw -D bcopy -s 4096 -n 1000 -w 10"
	"-x rc_verbs -t put_bw -D zcopy -s 65536 -n 300 -w 10"
	"-x ud_verbs -t am_lat -n 1000 -w 10"
	"-x ud_verbs -t am_bw -D bcopy -s 1000 -n 1000 -w 10"
)
export UCX_WARN_UNUSED_ENV_VARS=n
if ! command -v ucx_perftest >/dev/null; then
	[ "$MROCE_ROLE" = a ] && tb_skip "ucx uct pair" "ucx_perftest is not installed on the host"
	exit 0
fi
mroce_link_setup mroce0 eth0 >/dev/null
if [ "$MROCE_ROLE" = b ]; then
	# One server per test; a server whose client failed ends by timeout.
	for i in "${!tests[@]}"; do
		timeout 300 ucx_perftest >"/out/srv$i.log" 2>&1
	done
	exit 0
fi
echo "KTAP version 1"
tb_wait_ping 10.11.0.2 >/dev/null
for i in "${!tests[@]}"; do
	t=${tests[$i]}
	# The server may still be starting (or ending the previous test).
	for try in $(seq 150); do
		# shellcheck disable=SC2086
		timeout 280 ucx_perftest -d mroce0:1 $t 10.11.0.2 >"/out/cli$i.log" 2>&1
		rc=$?
		grep -q "Connection refused" "/out/cli$i.log" || break
		sleep 2
	done
	iters=$(echo "$t" | sed -E 's/.*-n ([0-9]+).*/\1/')
	final=$(grep '^Final:' "/out/cli$i.log")
	if [ $rc = 0 ] && [ "$(echo "$final" | awk '{print $2}')" = "$iters" ] &&
	   ! grep -q 'UCX  ERROR' "/out/cli$i.log"; then
		tb_ok "ucx_perftest -d mroce0:1 $t"
		echo "# $final"
	else
		tb_not_ok "ucx_perftest -d mroce0:1 $t" "rc $rc, final line '${final:-none}'"
		grep -E 'UCX  ERROR|error' "/out/cli$i.log" | head -3 | sed 's/^/# /'
	fi
done
echo "# columns: iterations, overhead 50%ile/average/overall (us), bandwidth average/overall (MB/s), msg/s average/overall"
tb_ktap_plan_end
! tb_ktap_failed
