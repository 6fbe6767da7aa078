package cloud

import (
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
)

// Pollers under throttling. AWS (and the emulator, by default) throttles each control-plane operation; a
// poller that reads an endpoint or a log stream every few seconds must slow down when told to, and must not
// let the slowdown pass unnoticed into what it measures. A poller makes each read a single attempt (PollOnce*:
// the SDK's own retries would wait inside the call and hide when the answer was actually read), and when a read
// is throttled it waits Backoff.Next instead of its interval, doubling up to a cap, recording every back-off.
// The measurement records the back-offs, and marks what was observed right after them.

// RetryMaxAttempts and RetryMaxBackoff are the retries of a throttled control-plane call the tools make through
// LocalConfig or LoadConfig: up to 10 attempts with the SDK's exponential jittered back-off, at most 20 s
// apart, instead of the SDK's default 3, which a burst of throttling (AWS's, or the emulator's default
// buckets) exhausts. Any other retryable error keeps the SDK's 3 attempts (RetryOtherAttempts), so a dead
// endpoint is still reported in seconds. The SDK's client-side retry quota is off: it would stop retrying
// exactly when throttling lasts. Pollers make single attempts and back off themselves (Backoff).
const (
	RetryMaxAttempts   = 10
	RetryOtherAttempts = 3
	RetryMaxBackoff    = 20 * time.Second
)

// NewRetryer is the retryer of RetryMaxAttempts, RetryOtherAttempts and RetryMaxBackoff (aws.Config.Retryer).
func NewRetryer() aws.Retryer {
	return throttleRetryer{retry.NewStandard(func(o *retry.StandardOptions) {
		o.MaxAttempts, o.MaxBackoff, o.RateLimiter = RetryMaxAttempts, RetryMaxBackoff, ratelimit.None
	})}
}

// throttleRetryer stops retrying an error that is not a throttling error after RetryOtherAttempts attempts.
type throttleRetryer struct{ *retry.Standard }

// RetryDelay is the wait before the attempt after attempt; returning err ends the call with it.
func (r throttleRetryer) RetryDelay(attempt int, err error) (time.Duration, error) {
	if attempt >= RetryOtherAttempts && !IsThrottled(err) {
		return 0, err
	}
	return r.Standard.RetryDelay(attempt, err)
}

// IsThrottled reports whether err is an AWS throttling error, by the SDK's own list of throttling codes
// (ThrottlingException, Throttling, TooManyRequestsException, RequestLimitExceeded, ...).
func IsThrottled(err error) bool {
	return err != nil && retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) == aws.TrueTernary
}

// PollOnceSageMaker and PollOnceLogs make one call a single attempt, for a poller that retries (and backs
// off) itself: pass it as the call's option.
func PollOnceSageMaker(o *sagemaker.Options) { o.Retryer = aws.NopRetryer{} }
func PollOnceLogs(o *cloudwatchlogs.Options) { o.Retryer = aws.NopRetryer{} }

// Back-off defaults: the first wait after a throttled read, and the cap of the doubling.
const (
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = 30 * time.Second
)

// BackoffEvent is one back-off: when the throttled answer came, for which operation, and how long the poller
// waited before its next read.
type BackoffEvent struct {
	At        time.Time `json:"at"`
	Operation string    `json:"operation"`
	WaitS     float64   `json:"wait_s"`
}

// Backoff is one poller's back-off state and record. The zero value uses DefaultBackoffBase and
// DefaultBackoffMax. It is safe for concurrent use.
type Backoff struct {
	Base, Max time.Duration

	mu      sync.Mutex
	next    time.Duration
	events  []BackoffEvent
	pending int // throttled reads since the last successful one
	since   time.Duration
}

// Next returns how long the poller waits before its next read of op, given the error of the read that ended
// at now: interval after a read that was not throttled (the back-off resets), else the current back-off (Base,
// doubling per throttled read in a row, at most Max, never less than interval), recorded as a BackoffEvent.
func (b *Backoff) Next(op string, err error, interval time.Duration, now time.Time) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !IsThrottled(err) {
		b.next = 0
		return interval
	}
	base, ceiling := b.Base, b.Max
	if base <= 0 {
		base = DefaultBackoffBase
	}
	if ceiling <= 0 {
		ceiling = DefaultBackoffMax
	}
	if b.next == 0 {
		b.next = base
	} else {
		b.next = min(2*b.next, ceiling)
	}
	wait := max(b.next, interval)
	b.events = append(b.events, BackoffEvent{At: now.UTC(), Operation: op, WaitS: wait.Seconds()})
	b.pending++
	b.since += wait
	return wait
}

// Succeeded marks a successful read and returns how many throttled reads (and how much back-off) preceded it
// since the previous successful one: what an observation made by this read may be late by, at most.
func (b *Backoff) Succeeded() (throttled int, waited time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	throttled, waited = b.pending, b.since
	b.pending, b.since = 0, 0
	return throttled, waited
}

// Events returns the back-offs so far, oldest first.
func (b *Backoff) Events() []BackoffEvent {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]BackoffEvent(nil), b.events...)
}

// Summary says in words how often and how long the poller backed off, or "" when it never did.
func (b *Backoff) Summary() string {
	ev := b.Events()
	if len(ev) == 0 {
		return ""
	}
	total := 0.0
	for _, e := range ev {
		total += e.WaitS
	}
	return fmt.Sprintf("%d throttled read(s), %.1f s of back-off in all", len(ev), total)
}
