#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Pretend the kernel warned: the harness must fail this run with 3.
set -uo pipefail
echo "<4>WARNING: CPU: 0 PID: 1 at tb selftest" >/dev/kmsg
exit 0
