#!/bin/bash
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
#
# What tools/sim/run_scenarios.sh and tools/ns3/run_scenarios.sh share,
# sourced by both (it runs nothing itself):
#   build_target TARGET...   cmake-build them in $build (configured if need
#                            be) under nice -n 10; $top is the repository
#   run NAME CMD...          CMD under nice -n 10, output to $out/logs/NAME.log;
#                            on failure says so and sets status=1
#   plots DIR [PREP]         gnuplot in DIR on the script read from stdin,
#                            after the common settings (PNG, CSV input); PREP,
#                            a command, runs in DIR first; status=1 when it
#                            fails; says so when gnuplot is not installed
#   table CSV [COLUMNS]      the CSV file (or those columns) as a markdown table
#   regression LOG [TITLE]   the summary's "Regression" block (or TITLE's) from LOG
#   revision                 the short commit of $top, or "unknown"

build_target() {
	[ -f "$build/CMakeCache.txt" ] ||
		cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	local t
	for t in "$@"; do
		nice -n 10 cmake --build "$build" --target "$t" -j 2 >/dev/null || return
	done
}

run() {
	local name=$1
	shift
	local t0=$SECONDS
	echo "== $name"
	if ! nice -n 10 "$@" >"$out/logs/$name.log" 2>&1; then
		echo "   FAILED (see $out/logs/$name.log)"
		status=1
	fi
	echo "   $((SECONDS - t0)) s"
}

plots() {
	local dir=$1 prep=${2:-}
	if ! command -v gnuplot >/dev/null; then
		echo "gnuplot not installed (make setup): no PNGs"
		return 0
	fi
	(
		cd "$dir"
		[ -z "$prep" ] || $prep
		{
			cat <<'EOF'
set datafile separator ","
set terminal pngcairo size 900,540 noenhanced
set key top right
set grid
EOF
			cat
		} | gnuplot
	) || { echo "gnuplot failed"; status=1; }
}

table() {
	awk -F, -v cols="${2:-}" '
	BEGIN { nc = split(cols, c, " ") }
	{ r = "|"; if (nc) { for (i = 1; i <= nc; i++) r = r " " $c[i] " |" } else { for (i = 1; i <= NF; i++) r = r " " $i " |" }
	  print r
	  if (NR == 1) { s = "|"; m = nc ? nc : NF; for (i = 1; i <= m; i++) s = s "---|"; print s } }' "$1"
}

regression() {
	echo "## ${2:-Regression}"
	echo '```'
	grep -E 'PASS|FAIL|failure' "$1" || true
	echo '```'
}

revision() {
	git -C "$top" rev-parse --short HEAD 2>/dev/null || echo unknown
}
