#!/usr/bin/env bash
# make lint, and make test's lint beside its tests: gofmt, go vet, staticcheck and deadcode (see the Makefile
# for what each finds), run so that no core idles while one of them works alone.
#
#   scripts/lint.sh                 every tool; exit 1 when any finds something
#   scripts/lint.sh -- CMD ARGS...  the same, with CMD (make test's go test) run once gofmt and go vet pass,
#                                   beside staticcheck and deadcode; exit 1 when CMD or any tool fails
#
# staticcheck and deadcode start first, in the background: neither uses go's build cache (both load the
# packages from source), deadcode has no cache of its own and analyses the whole program on about one core,
# and staticcheck's cache makes it cheap after a small change. go vet runs meanwhile (its compiles warm the
# build cache the tests then use), and a vet or gofmt finding stops the tests from starting, as the lint step
# before them did. Each tool's output is kept in a file and shown, with the tool's name, when the tool fails
# or prints anything; CMD's output streams as it runs.
#
# GO, PKGS, STATICCHECK and DEADCODE come from the Makefile.
set -uo pipefail
cd "$(dirname "$0")/.."

GO=${GO:-go}
PKGS=${PKGS:-./...}
STATICCHECK=${STATICCHECK:?set by the Makefile}
DEADCODE=${DEADCODE:?set by the Makefile}

cmd=()
if [ "${1:-}" = "--" ]; then
	shift
	cmd=("$@")
fi

out=$(mktemp -d)
pids=()
# An interrupt from the terminal reaches every tool (they share the foreground process group); a script
# stopped otherwise stops the tools it started in the background, and their children (go run's tool).
cleanup() {
	for p in ${pids[@]+"${pids[@]}"}; do # (bash 3.2, macOS: an empty array is unbound under set -u)
		pkill -TERM -P "$p" 2>/dev/null
		kill "$p" 2>/dev/null
	done
	rm -rf "$out"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

failed=0
# show NAME STATUS: prints a tool's kept output under its name when it failed or said anything.
show() {
	local name=$1 status=$2
	if [ "$status" -ne 0 ] || [ -s "$out/$name" ]; then
		echo "== $name (exit $status):"
		cat "$out/$name"
	fi
	if [ "$status" -ne 0 ]; then failed=1; fi
}

# shellcheck disable=SC2086 # PKGS is a list of patterns
"$GO" run "$STATICCHECK" $PKGS >"$out/staticcheck" 2>&1 &
sc=$!
# deadcode exits 0 when it finds unreachable functions: anything on its standard output is a finding (its
# standard error, such as go's first download of it, is not).
deadcode() {
	local status
	# shellcheck disable=SC2086
	"$GO" run "$DEADCODE" -test $PKGS >"$out/deadcode.found" 2>"$out/deadcode"
	status=$?
	if [ -s "$out/deadcode.found" ]; then
		{ echo "unreachable functions (deadcode):"; cat "$out/deadcode.found"; } >>"$out/deadcode"
		status=1
	fi
	return "$status"
}
deadcode &
dc=$!
pids=("$sc" "$dc")

gofmtOut=$(gofmt -l $(git ls-files '*.go'))
if [ -n "$gofmtOut" ]; then
	printf 'gofmt needed:\n%s\n' "$gofmtOut" >"$out/gofmt"
	show gofmt 1
fi
# shellcheck disable=SC2086
"$GO" vet $PKGS >"$out/vet" 2>&1
show vet $?

if [ "${#cmd[@]}" -gt 0 ]; then
	if [ "$failed" -eq 0 ]; then
		"${cmd[@]}"
		status=$?
		if [ "$status" -ne 0 ]; then
			echo "== ${cmd[*]}: exit $status"
			failed=1
		fi
	else
		echo "== not run, gofmt or go vet failed: ${cmd[*]}"
	fi
fi

wait "$sc"
show staticcheck $?
wait "$dc"
show deadcode $?
pids=()
exit "$failed"
