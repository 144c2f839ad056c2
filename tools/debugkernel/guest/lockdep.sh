#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Guest half of selfcheck.sh: lockdep is on, then a test module turns it
# off (mroce_lockdep_test: debug_locks_off(), no message at all, or with
# ABBA=1 a real AB-BA report); the run must then fail.
set -uo pipefail
. /mroce/tools/testbed/guest/lib.sh
tb_lockdep_on && echo on >/out/lockdep-before
insmod "$LOCKDEP_KO" ${ABBA:+abba=1} 2>/dev/null
tb_lockdep_on || echo off >/out/lockdep-after
exit 0
