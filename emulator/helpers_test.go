package emulator_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Most of the emulator's tests drive it from outside, as its users do, through the real SDK clients and the
// shared harness (emulator/emulatortest), which builds the inference container at most once per test
// process. export_test.go lends them the few internals they inspect.

// sigV4Header is a SigV4 Authorization header naming akid, for raw HTTP requests (the emulator checks the
// access key id, not the signature).
func sigV4Header(akid, service string) string {
	return "AWS4-HMAC-SHA256 Credential=" + akid + "/" + time.Now().UTC().Format("20060102") + "/us-east-1/" + service +
		"/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=" + strings.Repeat("0", 64)
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// hangBound bounds a wait for something that must happen (a state reached, a process gone): only a hang
// reaches it. The tests assert what happens and in which order, never how fast; a loaded machine (the race
// detector beside other test processes on two cores) may take many times longer than an idle one.
const hangBound = 2 * time.Minute

// eventually polls cond every 100 ms until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
