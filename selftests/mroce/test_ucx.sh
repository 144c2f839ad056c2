#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# UCX and Open MPI over mroce between two network namespaces: ucx_perftest
# at the UCP level (tag matching, RMA put) over rc_verbs (with ud_verbs for
# UCX's wireup) and over ud_verbs alone, then an MPI ping-pong with Open
# MPI's UCX PML and payloads checked.  UCX, Open MPI and the ping-pong come
# from the host's /usr: selftests/run.sh boots the guest with --hostroot
# for this test.
#
# ucx_perftest's UCT level (-x rc_verbs -t am_bw ...) is not run here: its
# server takes every parameter from the client, the device name included,
# so both ends must have a device of the same name, and RDMA device names
# are global to a kernel.  tools/ucx-uct-pair/run.sh runs it between two
# testbed guests.
set -uo pipefail
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/pair.sh"

if ! command -v ucx_perftest >/dev/null; then
	tb_skip "ucx" "ucx_perftest is not installed in the guest (Debian ucx-utils on the host, tb --hostroot)"
	exit 0
fi

tb_netns_pair
mroce_link_setup -n ns_a mroce_a va >/dev/null
mroce_link_setup -n ns_b mroce_b vb >/dev/null

# Only mroce may carry the traffic: without UCX_TLS, UCX would pick shared
# memory or TCP between two processes of one kernel.
export UCX_WARN_UNUSED_ENV_VARS=n
RC_TLS=rc_verbs,ud_verbs,self
UD_TLS=ud_verbs,self

# rx_packets of a device.
rx_packets() {
	awk '$1 == "rx_packets" {print $2}' "$MROCE_DEBUGFS/$1/counters"
}

# perf NAME TLS ITERS ARGS...: ucx_perftest between ns_b (server) and ns_a,
# each on its own device; then the client must report ITERS iterations in
# its final line, neither side may log a UCX error, and both devices must
# have received packets meanwhile.
perf() {
	local name=$1 tls=$2 iters=$3 ra rb final
	shift 3
	ra=$(rx_packets mroce_a)
	rb=$(rx_packets mroce_b)
	pair "$name" \
		env UCX_TLS="$tls" UCX_NET_DEVICES=mroce_b:1 ucx_perftest -n "$iters" "$@" -- \
		env UCX_TLS="$tls" UCX_NET_DEVICES=mroce_a:1 ucx_perftest -n "$iters" "$@" 10.12.0.2
	final=$(grep '^Final:' "$log/$name.cli")
	if [ "$(echo "$final" | awk '{print $2}')" = "$iters" ] &&
	   ! grep -q 'UCX  ERROR' "$log/$name.cli" "$log/$name.srv" &&
	   [ "$(rx_packets mroce_a)" -gt "$ra" ] && [ "$(rx_packets mroce_b)" -gt "$rb" ]; then
		tb_ok "$name: $iters iterations over mroce"
		echo "# $name: $final"
	else
		tb_not_ok "$name: $iters iterations over mroce" \
			"final line '${final:-none}', rx_packets a $ra -> $(rx_packets mroce_a), b $rb -> $(rx_packets mroce_b)"
		grep -h 'UCX  ERROR' "$log/$name.cli" "$log/$name.srv" | head -5 | sed 's/^/# /'
	fi
}

perf "ucx tag_lat rc_verbs" $RC_TLS 1000 -t tag_lat -w 10
perf "ucx tag_bw rc_verbs 64 KiB" $RC_TLS 200 -t tag_bw -s 65536 -w 10
perf "ucx ucp_put_bw rc_verbs 64 KiB" $RC_TLS 200 -t ucp_put_bw -s 65536 -w 10
perf "ucx tag_lat ud_verbs" $UD_TLS 500 -t tag_lat -w 10
perf "ucx tag_bw ud_verbs 16 KiB" $UD_TLS 200 -t tag_bw -s 16384 -w 10

# Open MPI with the UCX PML: mpirun in ns_a starts rank 0 there and rank 1
# in ns_b through mpi_netns_agent.sh; ucx_rank_env.sh gives each rank its
# namespace's device.
pingpong=$MROCE_BUILD/tools/mroce_mpi_pingpong
if ! command -v mpirun >/dev/null; then
	tb_skip "mpi pingpong over pml ucx" "mpirun is not installed (Debian openmpi-bin on the host)"
elif [ ! -x "$pingpong" ]; then
	tb_skip "mpi pingpong over pml ucx" "$pingpong not built (needs libopenmpi-dev at build time)"
else
	ra=$(rx_packets mroce_a)
	rb=$(rx_packets mroce_b)
	(cd /tmp && ip netns exec ns_a unshare --uts /bin/sh -c "hostname ns-a && exec timeout 300 \
		mpirun --allow-run-as-root -np 2 --host ns-a,ns-b \
		--mca plm_rsh_agent $MROCE_SRC/selftests/mroce/mpi_netns_agent.sh \
		--mca pml ucx --mca btl self --mca osc ^ucx \
		-x UCX_TLS=$RC_TLS -x UCX_WARN_UNUSED_ENV_VARS=n \
		$MROCE_SRC/selftests/mroce/ucx_rank_env.sh $pingpong 65536 50") >"$log/mpi.log" 2>&1
	rc=$?
	if [ $rc = 0 ] && grep -q '^pingpong: OK' "$log/mpi.log" &&
	   grep -q '^pingpong: 65536 bytes x 50 iterations, 0 errors' "$log/mpi.log" &&
	   [ "$(rx_packets mroce_a)" -gt "$ra" ] && [ "$(rx_packets mroce_b)" -gt "$rb" ]; then
		tb_ok "mpi pingpong over pml ucx, 64 KiB x 50, payload checked"
		grep '^pingpong: 65536' "$log/mpi.log" | sed 's/^/# /'
	else
		tb_not_ok "mpi pingpong over pml ucx, 64 KiB x 50, payload checked" \
			"mpirun rc $rc, rx_packets a $ra -> $(rx_packets mroce_a), b $rb -> $(rx_packets mroce_b)"
		tail -n 20 "$log/mpi.log" | sed 's/^/# mpi: /'
	fi
fi

for d in mroce_a mroce_b; do
	bad=$(awk '$1 == "rx_malformed" {print $2}' "$MROCE_DEBUGFS/$d/counters")
	if [ "${bad:-1}" = 0 ]; then
		tb_ok "ucx $d: no malformed packets"
	else
		tb_not_ok "ucx $d: no malformed packets" "rx_malformed ${bad:-?}"
	fi
done
ip netns exec ns_a rdma link delete mroce_a
ip netns exec ns_b rdma link delete mroce_b
if wait_for bash -c '[ -z "$(awk '"'"'$2 != 0'"'"' '"$MROCE_DEBUGFS"'/objects)" ]'; then
	tb_ok "ucx: no live objects after the clients exit"
else
	tb_not_ok "ucx: no live objects after the clients exit" "$(mroce_live_objects | tr '\n' ' ')"
fi
ip netns del ns_a
ip netns del ns_b
