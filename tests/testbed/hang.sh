#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
sleep 100000
