package cloud

import (
	"errors"
	"testing"
	"time"

	"github.com/aws/smithy-go"
)

// TestBackoff: a throttled read waits the back-off (1 s, doubling, at most the cap, never less than the
// interval), recorded; a read that is not throttled resets it and waits the interval; Succeeded reports what
// preceded a successful read.
func TestBackoff(t *testing.T) {
	throttle := &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}
	other := errors.New("connection refused")
	b := &Backoff{Base: time.Second, Max: 4 * time.Second}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	if !IsThrottled(throttle) || IsThrottled(other) || IsThrottled(nil) || !IsThrottled(&smithy.GenericAPIError{Code: "Throttling"}) {
		t.Fatal("IsThrottled does not tell throttling errors")
	}
	var got []time.Duration
	for _, err := range []error{throttle, throttle, throttle, throttle, nil, other, throttle} {
		got = append(got, b.Next("DescribeEndpoint", err, 500*time.Millisecond, now))
	}
	want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second, 4 * time.Second, 500 * time.Millisecond, 500 * time.Millisecond, time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("waits %v, want %v", got, want)
		}
	}
	if ev := b.Events(); len(ev) != 5 || ev[0].Operation != "DescribeEndpoint" || ev[2].WaitS != 4 {
		t.Errorf("events %+v", ev)
	}
	if n, d := b.Succeeded(); n != 5 || d != 12*time.Second {
		t.Errorf("Succeeded = %d, %s; want the 5 throttled reads and 12 s", n, d)
	}
	if n, _ := b.Succeeded(); n != 0 {
		t.Errorf("a second Succeeded reports %d", n)
	}
	if s := b.Summary(); s == "" {
		t.Errorf("no summary")
	}
	// An interval longer than the back-off is kept: a poller never polls faster because it was throttled.
	if w := (&Backoff{}).Next("GetLogEvents", throttle, 10*time.Second, now); w != 10*time.Second {
		t.Errorf("wait %s, want the 10 s interval", w)
	}
}

// TestRetryer: a throttled call is retried up to RetryMaxAttempts; any other retryable error stops after
// RetryOtherAttempts attempts, with that error.
func TestRetryer(t *testing.T) {
	r := NewRetryer()
	throttle := &smithy.GenericAPIError{Code: "ThrottlingException"}
	other := &smithy.GenericAPIError{Code: "InternalFailure"}
	if r.MaxAttempts() != RetryMaxAttempts || !r.IsErrorRetryable(throttle) {
		t.Fatalf("max attempts %d", r.MaxAttempts())
	}
	for attempt := 1; attempt < RetryMaxAttempts; attempt++ {
		if d, err := r.RetryDelay(attempt, throttle); err != nil || d > RetryMaxBackoff {
			t.Fatalf("throttled attempt %d: %s, %v", attempt, d, err)
		}
	}
	if _, err := r.RetryDelay(RetryOtherAttempts-1, other); err != nil {
		t.Errorf("attempt %d of another error: %v", RetryOtherAttempts-1, err)
	}
	if _, err := r.RetryDelay(RetryOtherAttempts, other); err != other {
		t.Errorf("attempt %d of another error: %v, want the error itself", RetryOtherAttempts, err)
	}
}
