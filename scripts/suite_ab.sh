#!/usr/bin/env bash
# Alternates builds of astrabox on one project's default suite, the way docs/performance.md compares them on a
# shared machine: each round measures the floor (the median of ten bare `python3 -c pass`) and then runs every
# build once under /usr/bin/time; the summary gives each build's median wall time, in milliseconds and in
# interpreter starts of the median floor, and its median CPU (user + sys, the kit and every child).
#
#   scripts/suite_ab.sh [-r ROUNDS] [-p PROJECT] NAME=BINARY[:FLAGS] ...
#   scripts/suite_ab.sh -r 6 before=/tmp/ab-before after=/tmp/ab-after 'after4=/tmp/ab-after:--jobs 4'
#
# Build each binary first (`go build -o /tmp/ab-NAME ./cmd/astrabox` at each commit). The project defaults to
# examples/providers/reference. Nothing else should run meanwhile; write `uptime` beside the figures.
set -euo pipefail
rounds=6
project="$(cd "$(dirname "$0")/.." && pwd)/examples/providers/reference"
while getopts "r:p:" opt; do
	case $opt in
	r) rounds=$OPTARG ;;
	p) project=$(cd "$OPTARG" && pwd) ;;
	*) echo "usage: $0 [-r ROUNDS] [-p PROJECT] NAME=BINARY[:FLAGS] ..." >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
if [ $# -eq 0 ]; then
	echo "usage: $0 [-r ROUNDS] [-p PROJECT] NAME=BINARY[:FLAGS] ...  (give at least one build)" >&2
	exit 2
fi
for spec in "$@"; do
	bin=${spec#*=}; bin=${bin%%:*}
	if [ "$spec" = "${spec#*=}" ] || [ ! -x "$bin" ]; then
		echo "$0: '$spec' is not NAME=BINARY[:FLAGS] with an executable BINARY" >&2
		exit 2
	fi
done
log=$(mktemp)
errs=$(mktemp)
trap 'rm -f "$log" "$errs"' EXIT
echo "load before: $(uptime)"
cd "$project"
for r in $(seq "$rounds"); do
	floor=$(for _ in $(seq 10); do /usr/bin/time -f "%e" python3 -c pass 2>&1; done | sort -n | sed -n 5p)
	echo "floor $r $floor" >>"$log"
	for spec in "$@"; do
		name=${spec%%=*}; rest=${spec#*=}; bin=${rest%%:*}; flags=""
		[ "$rest" != "$bin" ] && flags=${rest#*:}
		# shellcheck disable=SC2086 # FLAGS are words on purpose
		if ! /usr/bin/time -f "run $name $r %e %U %S" "$bin" conformance run $flags . >/dev/null 2>>"$errs"; then
			echo "$0: $name failed in round $r (its last lines follow)" >&2
			tail -5 "$errs" >&2
			exit 1
		fi
		grep '^run ' "$errs" | tail -1 >>"$log"
	done
done
echo "load after:  $(uptime)"
python3 - "$log" <<'PY'
import collections, statistics, sys
walls, cpus, floors = collections.defaultdict(list), collections.defaultdict(list), []
for line in open(sys.argv[1]):
    p = line.split()
    if p[0] == "floor":
        floors.append(float(p[2]))
    else:
        walls[p[1]].append(float(p[3]))
        cpus[p[1]].append(float(p[4]) + float(p[5]))
floor = statistics.median(floors)
print("floor: median %.0f ms (rounds: %s)" % (floor * 1000, " ".join("%.0f" % (f * 1000) for f in floors)))
for name in walls:
    w = statistics.median(walls[name])
    print("%-10s %5.0f ms = %.2f interpreter starts; CPU %.2f s; runs %s" % (
        name, w * 1000, w / floor, statistics.median(cpus[name]), " ".join("%.0f" % (x * 1000) for x in walls[name])))
PY
