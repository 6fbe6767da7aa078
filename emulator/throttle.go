package emulator

import (
	"fmt"
	"math"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Control-plane throttling. AWS limits how often each control-plane operation may be called per account and
// region and answers an excess call with a throttling error the SDKs retry with back-off. The emulator keeps
// one token bucket per operation: a call takes a token; the bucket refills at Rate per second up to Burst; a
// call that finds it empty is answered ThrottlingException (CloudWatch: Throttling), HTTP 400, "Rate exceeded".
// The runtime (InvokeEndpoint, InvokeEndpointWithResponseStream) is not throttled here.

// Rate is one operation's bucket: PerSecond tokens a second, at most Burst at once.
type Rate struct {
	PerSecond float64
	Burst     int
}

// DefaultRates are the buckets the emulator starts with. CloudWatch Logs documents DescribeLogStreams ("This
// operation has a limit of 25 transactions per second, after which transactions are throttled."); AWS publishes
// no per-operation rate for the other operations, so they get conservative ones, below what AWS serves in
// practice, so that a tool that works here keeps working under AWS's throttling: 5 reads a second (burst 10),
// 1 change a second (burst 5), 10 metric reads a second (burst 20).
var DefaultRates = map[string]Rate{
	// SageMaker.
	"DescribeEndpoint": {5, 10}, "DescribeEndpointConfig": {5, 10}, "DescribeModel": {5, 10}, "ListEndpoints": {5, 10},
	"CreateModel": {1, 5}, "DeleteModel": {1, 5}, "CreateEndpointConfig": {1, 5}, "DeleteEndpointConfig": {1, 5},
	"CreateEndpoint": {1, 5}, "DeleteEndpoint": {1, 5}, "UpdateEndpoint": {1, 5}, "UpdateEndpointWeightsAndCapacities": {1, 5},
	"ListTags": {5, 10}, "AddTags": {1, 5}, "DeleteTags": {1, 5},
	// Application Auto Scaling.
	"DescribeScalableTargets": {5, 10}, "DescribeScalingPolicies": {5, 10}, "DescribeScalingActivities": {5, 10},
	"RegisterScalableTarget": {1, 5}, "DeregisterScalableTarget": {1, 5}, "PutScalingPolicy": {1, 5}, "DeleteScalingPolicy": {1, 5},
	"DescribeScheduledActions": {5, 10}, "PutScheduledAction": {1, 5}, "DeleteScheduledAction": {1, 5},
	// CloudWatch.
	"DescribeAlarms": {5, 10}, "GetMetricData": {10, 20}, "GetMetricStatistics": {10, 20}, "PutMetricAlarm": {1, 5}, "DeleteAlarms": {1, 5},
	// CloudWatch Logs.
	"DescribeLogStreams": {25, 25}, "DescribeLogGroups": {5, 10}, "GetLogEvents": {5, 10}, "FilterLogEvents": {5, 10},
}

// EnvThrottle configures throttling when Options.Throttle is nil: "off", or comma-separated
// `Operation=rate[/burst]` overrides of DefaultRates, where Operation "*" sets every operation not named
// (SPEECH_EMULATOR_THROTTLE=DescribeEndpoint=1/2 or SPEECH_EMULATOR_THROTTLE='*=2/2').
const EnvThrottle = "SPEECH_EMULATOR_THROTTLE"

// Throttle is the emulator's throttling configuration.
type Throttle struct {
	// Off turns throttling off.
	Off bool
	// Rates are the buckets by operation name; an operation not in it is not throttled. ParseThrottle starts
	// from DefaultRates.
	Rates map[string]Rate
}

// ParseThrottle reads a throttling setting (EnvThrottle's syntax); "" is DefaultRates.
func ParseThrottle(s string) (*Throttle, error) {
	t := &Throttle{Rates: map[string]Rate{}}
	for op, r := range DefaultRates {
		t.Rates[op] = r
	}
	s = strings.TrimSpace(s)
	switch s {
	case "":
		return t, nil
	case "off", "none", "0":
		return &Throttle{Off: true}, nil
	}
	var all *Rate
	named := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		op, spec, ok := strings.Cut(strings.TrimSpace(item), "=")
		if !ok || op == "" {
			return nil, fmt.Errorf("throttle %q: want Operation=rate[/burst]", item)
		}
		rateS, burstS, hasBurst := strings.Cut(spec, "/")
		rate, err := strconv.ParseFloat(rateS, 64)
		if err != nil || !(rate > 0) || math.IsInf(rate, 0) {
			return nil, fmt.Errorf("throttle %q: the rate %q is not a number above 0", item, rateS)
		}
		burst := max(int(math.Ceil(rate)), 1)
		if hasBurst {
			if burst, err = strconv.Atoi(burstS); err != nil || burst < 1 {
				return nil, fmt.Errorf("throttle %q: the burst %q is not a whole number of at least 1", item, burstS)
			}
		}
		r := Rate{rate, burst}
		if op == "*" {
			all = &r
			continue
		}
		if _, known := DefaultRates[op]; !known {
			ops := make([]string, 0, len(DefaultRates))
			for k := range DefaultRates {
				ops = append(ops, k)
			}
			sort.Strings(ops)
			return nil, fmt.Errorf("throttle %q: unknown operation %q, want one of %s or *", item, op, strings.Join(ops, ", "))
		}
		t.Rates[op], named[op] = r, true
	}
	if all != nil {
		for op := range t.Rates {
			if !named[op] {
				t.Rates[op] = *all
			}
		}
	}
	return t, nil
}

// String is the setting in EnvThrottle's syntax.
func (t *Throttle) String() string {
	if t == nil || t.Off {
		return "off"
	}
	ops := make([]string, 0, len(t.Rates))
	for op := range t.Rates {
		ops = append(ops, op)
	}
	sort.Strings(ops)
	var b strings.Builder
	for i, op := range ops {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, "%s=%g/%d", op, t.Rates[op].PerSecond, t.Rates[op].Burst)
	}
	return b.String()
}

// throttleFromEnv fills Options.Throttle from EnvThrottle when it is nil.
func throttleFromEnv(opts *Options) error {
	if opts.Throttle != nil {
		return nil
	}
	t, err := ParseThrottle(os.Getenv(EnvThrottle))
	if err != nil {
		return fmt.Errorf("%s: %w", EnvThrottle, err)
	}
	opts.Throttle = t
	return nil
}

// limiter holds the token buckets.
type limiter struct {
	// refused counts the calls answered with a throttling error (Emulator.Throttled).
	refused atomic.Int64
	mu      sync.Mutex
	cfg     *Throttle
	buckets map[string]*bucket
	now     func() time.Time
}

type bucket struct {
	tokens float64
	last   time.Time
}

func newLimiter(cfg *Throttle) *limiter {
	return &limiter{cfg: cfg, buckets: map[string]*bucket{}, now: time.Now}
}

// allow takes a token for op, or reports false when its bucket is empty.
func (l *limiter) allow(op string) bool {
	if l == nil || l.cfg == nil || l.cfg.Off {
		return true
	}
	r, ok := l.cfg.Rates[op]
	if !ok {
		return true
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	b := l.buckets[op]
	if b == nil {
		b = &bucket{tokens: float64(r.Burst), last: now}
		l.buckets[op] = b
	}
	b.tokens = math.Min(float64(r.Burst), b.tokens+now.Sub(b.last).Seconds()*r.PerSecond)
	b.last = now
	if b.tokens < 1 {
		l.refused.Add(1)
		return false
	}
	b.tokens--
	return true
}

// Throttled is how many control-plane calls the emulator has answered with a throttling error.
func (e *Emulator) Throttled() int64 { return e.limiter.refused.Load() }

// throttled is the answer to a call over its bucket: ThrottlingException, as SageMaker, Application Auto
// Scaling and CloudWatch Logs name it, or Throttling, as CloudWatch's query protocol does; both are throttling
// errors the SDKs retry with back-off.
func throttled(service string) *apiError {
	code := "ThrottlingException"
	if service == "GraniteServiceVersion20100801" {
		code = "Throttling"
	}
	return errorf(code, http.StatusBadRequest, "Rate exceeded")
}
