#!/usr/bin/env bash
# check-leaks.sh: fails, naming each one, when a process that a test started is still running: one whose command
# line names a test's temporary directory (Go's t.TempDir is $TMPDIR/Test<name><digits>/NNN), a compiled test
# binary (*.test), or one of the project's binaries (speech-container, speech-infra, tts-bench, bin/demo).
#
#   scripts/check-leaks.sh            check now (what .ci/run does after `make test`)
#   scripts/check-leaks.sh --wait S   give processes that are exiting up to S seconds to go before judging
#
# Exit 0: none left. Exit 1: the list, one process a line (pid, parent, age in seconds, command line).
set -euo pipefail
wait_s=0
if [ "${1:-}" = "--wait" ]; then
	wait_s=${2:?--wait needs a number of seconds}
	case $wait_s in '' | *[!0-9]*) echo "check-leaks: --wait takes whole seconds, not '$wait_s'" >&2; exit 2 ;; esac
fi
tmp=${TMPDIR:-/tmp}
tmp=${tmp%/}
# One extended regular expression over the command line: a test's temporary directory, a test binary, a project binary.
pattern="(^|[[:space:]=])${tmp}/Test[A-Za-z0-9_]+[0-9]+/|(^|/)[A-Za-z0-9_.-]+\.test([[:space:]]|$)|(^|/)(speech-container|speech-infra|tts-bench)([[:space:]]|$)|(^|/)bin/demo([[:space:]]|$)"
leaks() {
	# ps lists every process; this script, its pipeline and its parent shell are left out by pid.
	ps -eo pid=,ppid=,etimes=,args= | awk -v self=$$ -v parent=$PPID '$1 != self && $2 != self && $1 != parent' |
		grep -E -- "$pattern" | grep -v -- 'check-leaks\.sh' || true
}
found=$(leaks)
while [ -n "$found" ] && [ "$wait_s" -gt 0 ]; do
	sleep 1
	wait_s=$((wait_s - 1))
	found=$(leaks)
done
if [ -n "$found" ]; then
	echo "check-leaks: these processes started by tests are still running (pid, parent, age in s, command); a test must stop what it starts:" >&2
	echo "$found" >&2
	exit 1
fi
echo "check-leaks: no process left by a test"
