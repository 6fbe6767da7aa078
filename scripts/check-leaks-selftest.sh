#!/usr/bin/env bash
# check-leaks-selftest.sh: shows that scripts/check-leaks.sh catches a leak. It runs a test that starts the local
# emulator and never stops it (cmd/speech-infra's TestPlantedEmulatorLeak, built only with the leakplant tag),
# expects check-leaks.sh to fail naming that emulator, stops it, and expects every process the plant left to go.
# It judges only what the plant left (the processes naming its temporary directory): other tests may run beside
# it (CI runs make test-measurement beside make test), and the check of the whole machine for leaks is CI's own
# step after both (scripts/check-leaks.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
fail() { echo "check-leaks-selftest: $*" >&2; exit 1; }
planted='/TestPlantedEmulatorLeak[0-9]+/'
# planted_pids lists the processes whose command line names a planted test's temporary directory.
planted_pids() { ps -eo pid=,args= | grep -E -- "$planted" | grep -v grep | awk '{print $1}' || true; }
[ -z "$(planted_pids)" ] || fail "an emulator planted by an earlier run is still running: $(planted_pids | tr '\n' ' ')"
log=$(mktemp)
trap 'rm -f "$log"' EXIT
go test -count=1 -tags leakplant -run '^TestPlantedEmulatorLeak$' -v ./cmd/speech-infra >"$log" 2>&1 || { cat "$log" >&2; fail "the planted test failed to start its emulator"; }
if out=$(scripts/check-leaks.sh 2>&1); then
	fail "check-leaks.sh passed with the planted emulator running:\n$out"
fi
grep -E "local serve --state-dir [^ ]*$planted" <<<"$out" >/dev/null || fail "check-leaks.sh failed without naming the planted emulator:\n$out"
echo "check-leaks-selftest: check-leaks.sh caught the planted emulator:"
grep -E 'TestPlantedEmulatorLeak' <<<"$out" | sed 's/^/  /'
# Stop what the plant left: the emulator, and any instance it started; all of it must be gone within 15 s.
pids=$(planted_pids)
[ -z "$pids" ] || kill $pids 2>/dev/null || true
for _ in $(seq 15); do
	[ -n "$(planted_pids)" ] || break
	sleep 1
done
[ -z "$(planted_pids)" ] || fail "the planted emulator did not stop on SIGTERM: $(planted_pids | tr '\n' ' ') still running"
echo "check-leaks-selftest: passed"
