#!/usr/bin/env bash
# check-leaks-selftest.sh: shows that scripts/check-leaks.sh catches a leak. It runs a test that starts the local
# emulator and never stops it (cmd/speech-infra's TestPlantedEmulatorLeak, built only with the leakplant tag),
# expects check-leaks.sh to fail naming that emulator, stops it, and expects check-leaks.sh to pass again.
# Run it where no other test runs (make check-leaks-selftest, after make test's tests).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check-leaks-selftest: $*" >&2; exit 1; }
scripts/check-leaks.sh >/dev/null 2>&1 || fail "a process was already left before the plant ran (run scripts/check-leaks.sh)"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -count=1 -tags leakplant -run '^TestPlantedEmulatorLeak$' -v ./cmd/speech-infra >"$log" 2>&1 || { cat "$log" >&2; fail "the planted test failed to start its emulator"; }
if out=$(scripts/check-leaks.sh 2>&1); then
	fail "check-leaks.sh passed with the planted emulator running:\n$out"
fi
grep -E 'local serve --state-dir [^ ]*/TestPlantedEmulatorLeak[0-9]+/' <<<"$out" >/dev/null || fail "check-leaks.sh failed without naming the planted emulator:\n$out"
echo "check-leaks-selftest: check-leaks.sh caught the planted emulator:"
grep -E 'TestPlantedEmulatorLeak' <<<"$out" | sed 's/^/  /'
# Stop what the plant left: the emulator, and any instance it started.
pids=$(ps -eo pid=,args= | grep -E '/TestPlantedEmulatorLeak[0-9]+/' | grep -v grep | awk '{print $1}' || true)
[ -z "$pids" ] || kill $pids 2>/dev/null || true
scripts/check-leaks.sh --wait 15 >/dev/null || fail "the planted emulator did not stop on SIGTERM"
echo "check-leaks-selftest: passed"
