#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
set -uo pipefail
sleep 100000
