// Package flakeplant holds a test that is flaky on purpose, built only with the flakeplant tag: `make
// flake-hunt-selftest` runs scripts/flake-hunt.sh on it under busy loops and passes only when the hunt reports
// its failure. It is the pattern the project's tests must not have: a test that fails when a goroutine is slow.
package flakeplant
