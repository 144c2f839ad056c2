#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# bench/ctl_srv.sh - one request of the bench control channel, run by
# `nc -ll -p 9000 -e` on the server guest with the socket on stdin/stdout.
#   START CMD...  run CMD in the background (output /tmp/srv.out, status
#                 /tmp/srv.rc); replies "ok"
#   WAIT [SEC]    wait up to SEC (60) for it; replies "rc N" (N=124: still
#                 running, killed) and the output's last lines
#   STAT          replies the busy jiffies of this guest
#   STATK         replies its kernel (system, irq, softirq) jiffies
#   TC ARGS...    run tc ARGS; replies "rc N"
#   QUIT          make the server guest finish
set -uo pipefail
. /mroce/bench/common.sh
read -r verb rest || exit 0
case $verb in
START)
	rm -f /tmp/srv.rc /tmp/srv.out
	setsid bash -c "$rest >/tmp/srv.out 2>&1; echo \$? >/tmp/srv.rc" </dev/null >/dev/null 2>&1 &
	echo $! >/tmp/srv.pid
	echo ok ;;
WAIT)
	n=$(( ${rest:-60} * 10 ))
	for _ in $(seq "$n"); do
		[ -s /tmp/srv.rc ] && break
		sleep 0.1
	done
	if [ -s /tmp/srv.rc ]; then
		echo "rc $(cat /tmp/srv.rc)"
	else
		pkill -P "$(cat /tmp/srv.pid)" 2>/dev/null
		kill -- -"$(cat /tmp/srv.pid)" 2>/dev/null
		echo "rc 124"
	fi
	tail -3 /tmp/srv.out 2>/dev/null ;;
STAT)
	cpu_busy ;;
STATK)
	cpu_kernel ;;
TC)
	# shellcheck disable=SC2086
	tc $rest >/dev/null 2>&1
	echo "rc $?" ;;
QUIT)
	touch /tmp/quit
	echo bye ;;
*)
	echo "unknown $verb" ;;
esac
