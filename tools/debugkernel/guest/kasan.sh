#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
# Guest half of selfcheck.sh: KASAN's module test makes out-of-bounds
# accesses on purpose (it refuses to stay loaded: its init returns -EAGAIN).
set -uo pipefail
modinfo kasan_test_module >/dev/null || exit 1
modprobe kasan_test_module 2>/dev/null
echo "loaded" >/out/kasan
exit 0
