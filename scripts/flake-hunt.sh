#!/usr/bin/env bash
# flake-hunt.sh: runs a chosen set of Go tests N times under K busy loops and reports every failure with the
# seed that reproduces its order and the path of its log. A test that passes here N times out of N does not
# depend on the machine's speed, as far as N runs can show.
#
#   make flake-hunt PKGS='./cmd/tts-bench' RUN='^TestTTotal' N=10 LOAD=2
#   scripts/flake-hunt.sh              (the same settings from the environment)
#
# Settings (environment variables):
#   PKGS     the packages, as go test takes them (required)
#   RUN      a -run pattern (default: every test in PKGS)
#   N        how many runs (default 10)
#   LOAD     how many busy loops run beside the tests, each a shell spinning on a core (default 2)
#   PAR      how many runs at once (default 1): for tests that mostly wait (on the emulator's clock, on a
#            measure window), PAR=2 halves the hunt's time; each run is then beside the busy loops and the
#            other runs, a heavier load than LOAD alone
#   RACE     1 to run under -race (default 1)
#   TAGS     build tags (default none)
#   TIMEOUT  go test's -timeout for one run (default 30m)
#   OUT      where the logs go (default .cache/flake-hunt)
#
# Every run uses -shuffle=on, so a failure that depends on the tests' order names its seed: re-run it with
# go test -shuffle=<seed> -run '<test>' <package>. Exit 0: every run passed. Exit 1: the failures, listed.
# Exit 2: a setting is wrong.
set -euo pipefail
: "${PKGS:?flake-hunt: set PKGS to the packages to run, e.g. PKGS=./cmd/tts-bench}"
N=${N:-10}
LOAD=${LOAD:-2}
PAR=${PAR:-1}
RACE=${RACE:-1}
RUN=${RUN:-}
TAGS=${TAGS:-}
TIMEOUT=${TIMEOUT:-30m}
OUT=${OUT:-.cache/flake-hunt}
for v in N LOAD PAR; do
	case ${!v} in '' | *[!0-9]*) echo "flake-hunt: $v must be a whole number, not '${!v}'" >&2; exit 2 ;; esac
done
[ "$N" -ge 1 ] || { echo "flake-hunt: N must be at least 1" >&2; exit 2; }
[ "$PAR" -ge 1 ] || { echo "flake-hunt: PAR must be at least 1" >&2; exit 2; }
case $RACE in 0 | 1) ;; *) echo "flake-hunt: RACE must be 0 or 1, not '$RACE'" >&2; exit 2 ;; esac
mkdir -p "$OUT"
rm -f "$OUT"/run-*.log "$OUT"/run-*.rc

loops=()
stop_loops() {
	for p in "${loops[@]}"; do kill "$p" 2>/dev/null || true; done
	for p in "${loops[@]}"; do wait "$p" 2>/dev/null || true; done
	loops=()
}
# The runs in flight, each in a process group of its own (set -m below): a signal to the hunt stops them, the
# go test, its test binary and whatever that started, instead of leaving them running after the hunt.
batch=()
stop_runs() {
	for p in "${batch[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	for p in "${batch[@]}"; do wait "$p" 2>/dev/null || true; done
	batch=()
}
trap 'stop_runs; stop_loops' EXIT
trap 'stop_runs; stop_loops; exit 130' INT
trap 'stop_runs; stop_loops; exit 143' TERM

args=(-count=1 -shuffle=on -timeout "$TIMEOUT")
[ "$RACE" = 1 ] && args+=(-race)
[ -n "$TAGS" ] && args+=(-tags "$TAGS")
[ -n "$RUN" ] && args+=(-run "$RUN")
read -r -a pkgs <<<"$PKGS"

# Compile first, without load, so that the runs measure the tests, not the compiler.
echo "flake-hunt: compiling ${pkgs[*]}"
go test "${args[@]}" -run '^$' "${pkgs[@]}" >/dev/null

for ((i = 0; i < LOAD; i++)); do
	bash -c 'while :; do :; done' &
	loops+=($!)
done
echo "flake-hunt: $N run(s) of ${pkgs[*]}${RUN:+ -run '$RUN'} beside $LOAD busy loop(s), $PAR at a time; logs in $OUT"

failed=0
failures=()
# one RUN: runs go test once into its log and writes the exit code and the time it took beside it.
one() {
	local run=$1 log="$OUT/run-$1.log" t0 rc=0
	t0=$(date +%s)
	go test "${args[@]}" -v "${pkgs[@]}" >"$log" 2>&1 || rc=$?
	echo "$rc $(($(date +%s) - t0))" >"$OUT/run-$run.rc"
}
# report RUN: prints the run's result from its log and exit code.
report() {
	local run=$1 log="$OUT/run-$1.log" rc took seeds tests pkgfail
	read -r rc took <"$OUT/run-$run.rc"
	if [ "$rc" = 0 ]; then
		echo "flake-hunt: run $run/$N passed ($took s)"
		return
	fi
	failed=$((failed + 1))
	# go test -v prints "-test.shuffle <seed>" at the start of each package's output, then "--- FAIL: <test>"
	# for each failed test and "FAIL<tab><package>" for each failed package.
	seeds=$(grep -oE -- '-test\.shuffle [0-9]+' "$log" | awk '{print $2}' | sort -u | paste -sd, -)
	tests=$(grep -oE -- '--- FAIL: [^ ]+' "$log" | awk '{print $3}' | sort -u | paste -sd' ' -)
	pkgfail=$(grep -E $'^FAIL\t' "$log" | awk '{print $2}' | sort -u | paste -sd' ' -)
	[ -n "$tests" ] || tests="(no test named: a build failure, panic or timeout; see the log)"
	echo "flake-hunt: run $run/$N FAILED: $tests in ${pkgfail:-?} (seed ${seeds:-?}; log $log)"
	failures+=("run $run: $tests in ${pkgfail:-?} -shuffle=${seeds:-?} log $log")
}
set -m
for ((first = 1; first <= N; first += PAR)); do
	batch=()
	for ((run = first; run < first + PAR && run <= N; run++)); do
		one "$run" &
		batch+=($!)
	done
	wait "${batch[@]}"
	batch=()
	for ((run = first; run < first + PAR && run <= N; run++)); do report "$run"; done
done
stop_loops
if [ "$failed" -gt 0 ]; then
	echo "flake-hunt: $failed of $N run(s) failed beside $LOAD busy loop(s):"
	printf '  %s\n' "${failures[@]}"
	exit 1
fi
echo "flake-hunt: $N of $N run(s) passed beside $LOAD busy loop(s)"
