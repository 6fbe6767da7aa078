package capacity

import (
	"fmt"
	"math"
)

// RateStep is one open-loop step of qmax's rate staircase (docs/design.md, "Open loop, too"): Poisson arrivals
// at OfferedRPS (a fixed fraction of the highest closed-loop throughput) against the one pinned instance, with
// settle, hold and measure windows like a closed-loop step. The instance model (package loadmodel) is built
// from these steps: they relate an offered rate to what the scaling alarm sees and to the SLO, which a
// closed-loop curve cannot do for an instance that saturates.
type RateStep struct {
	// Fraction is OfferedRPS ÷ the artifact's HighestThroughputRPS (e.g. 0.3 … 1.1).
	Fraction float64 `json:"fraction"`
	// Refined marks a step of the refinement (tts-bench qmax --rate-refine): offered midway between the highest
	// step that met the SLO and the lowest that missed it, after the fixed fractions. The steps are listed by
	// fraction either way.
	Refined bool `json:"refined,omitempty"`
	// OfferedRPS is the Poisson arrival rate asked for, requests per second.
	OfferedRPS float64 `json:"offered_rps"`
	// ArrivalRPS is the requests sent in the measure window ÷ the window: the rate actually offered.
	ArrivalRPS float64 `json:"arrival_rps"`
	// AchievedRPS is the requests completed successfully in the window ÷ the window.
	AchievedRPS float64 `json:"achieved_rps"`
	// InFlightMean is the time-averaged number of requests in flight over the window, as the client counted.
	InFlightMean float64 `json:"in_flight_mean"`
	// InFlightMax10s is the mean, over the window's 10-s slices, of each slice's peak number of requests in
	// flight (client side): what a 10-s Maximum datapoint of ConcurrentRequestsPerModel shows on average.
	InFlightMax10s float64 `json:"in_flight_max_10s"`
	// InFlightMax10sLow is the 10th percentile (bench.AlarmQuantile) of the client's peak in flight over the
	// window's sliding 10-s windows: the 10-s Maximum the scaling alarm can count on at this rate, nine
	// datapoints in ten at least this high. The instance model's metric is this, on CloudWatch's scale. Absent
	// in artifacts written before it was recorded (the model then falls back to the mean and says so).
	InFlightMax10sLow float64 `json:"in_flight_max_10s_low,omitempty"`
	// CloudWatchMax10s is the mean of the 10-s Maximum datapoints of ConcurrentRequestsPerModel in the window,
	// as CloudWatch (or the emulator) published them; absent when unread.
	CloudWatchMax10s float64 `json:"cloudwatch_max_10s,omitempty"`
	// TTFABP50Ms, TTFABP95Ms and TTFABP99Ms are exact percentiles of the successful requests' TTFAB.
	TTFABP50Ms float64 `json:"ttfab_p50_ms"`
	TTFABP95Ms float64 `json:"ttfab_p95_ms"`
	TTFABP99Ms float64 `json:"ttfab_p99_ms"`
	// StallP95Ms is the exact 95th percentile playback stall of the successful requests.
	StallP95Ms float64 `json:"stall_p95_ms"`
	// OKCount, ErrorCount and RejectedCount count the window's requests: successful, failed or timed out, and
	// shed by the queue shield (503 queue_saturated).
	OKCount       int `json:"ok_count"`
	ErrorCount    int `json:"error_count"`
	RejectedCount int `json:"rejected_count"`
	// ShedFraction is (ErrorCount + RejectedCount) ÷ all requests of the window: the share that got no audio.
	ShedFraction float64 `json:"shed_fraction"`
	// MeetsSLO is true when the TTFAB percentile met the SLO, the p95 stall stayed within the stall budget
	// plus jitter, and no more than (100 − percentile)% of the requests were shed.
	MeetsSLO bool `json:"meets_slo"`
	// Usable is false when the step cannot be trusted (too few samples, the client fell behind its schedule).
	Usable bool `json:"usable"`
	// UnusableReason says why Usable is false.
	UnusableReason string `json:"unusable_reason,omitempty"`
}

// MaxRateSteps bounds the rate staircase of a qmax artifact.
const MaxRateSteps = 64

// ttfabAtSLO is the step's TTFAB at the SLO's percentile (p50, p95 or p99), its p95 for another percentile.
func (s RateStep) ttfabAtSLO(percentile int) float64 {
	if v, ok := (QMaxStep{TTFABP50Ms: s.TTFABP50Ms, TTFABP95Ms: s.TTFABP95Ms, TTFABP99Ms: s.TTFABP99Ms}).ttfabAt(percentile); ok {
		return v
	}
	return s.TTFABP95Ms
}

// Met says whether a rate step met the SLO as the SLO's boundary is bracketed: usable, its verdict met (TTFAB,
// stall and shed), and it kept up with its arrivals (completed at least keepingUp of them: a step that fell
// behind measured a queue that was still growing). The rate staircase's refinement (measure) and the instance
// model's basis both bracket by it (RateBracket).
func (s RateStep) Met() bool {
	return s.Usable && s.MeetsSLO && !s.fellBehind()
}

// fellBehind says whether a rate step completed less than keepingUp of its arrivals: its queue was growing.
// The one rule of keeping up, for Met and the instance model's steps.
func (s RateStep) fellBehind() bool { return s.AchievedRPS < keepingUp*s.ArrivalRPS }

// RateBracket is the bracket of the SLO's boundary among the rate steps: missed the usable step of the lowest
// fraction that did not meet the SLO (RateStep.Met), met the step of the highest fraction below it that did;
// both -1 when either is missing. A step that met the SLO above one that missed is not the lower end: the bracket
// is the conservative one. The steps may be in any order.
func RateBracket(steps []RateStep) (met, missed int) {
	met, missed = -1, -1
	for i, s := range steps {
		if s.Usable && !s.Met() && (missed < 0 || s.Fraction < steps[missed].Fraction) {
			missed = i
		}
	}
	for i, s := range steps {
		if s.Met() && (met < 0 || s.Fraction > steps[met].Fraction) && (missed < 0 || s.Fraction < steps[missed].Fraction) {
			met = i
		}
	}
	if met < 0 || missed < 0 {
		return -1, -1
	}
	return met, missed
}

// verifyRateSteps returns every out-of-range field of the rate staircase.
func (q *QMax) verifyRateSteps() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(q.RateSteps) == 0 {
		if q.HighestThroughputRPS != 0 {
			add("highest_throughput_rps: is %g but there are no rate_steps: it is recorded with the rate staircase", q.HighestThroughputRPS)
		}
		return errs
	}
	if !positiveUpTo(q.HighestThroughputRPS, MaxInstanceRPS) {
		add("highest_throughput_rps: is %g: want a per-instance request rate in (0, %g]", q.HighestThroughputRPS, float64(MaxInstanceRPS))
	}
	if len(q.RateSteps) > MaxRateSteps {
		add("rate_steps: has %d steps: at most %d", len(q.RateSteps), MaxRateSteps)
		return errs
	}
	for i, s := range q.RateSteps {
		p := fmt.Sprintf("rate_steps[%d]", i)
		if !positiveUpTo(s.Fraction, 10) || (i > 0 && !(s.Fraction > q.RateSteps[i-1].Fraction)) {
			add("%s.fraction: is %g: want increasing fractions in (0, 10]", p, s.Fraction)
		}
		if !positiveUpTo(s.OfferedRPS, MaxInstanceRPS) {
			add("%s.offered_rps: is %g: want a per-instance request rate in (0, %g]", p, s.OfferedRPS, float64(MaxInstanceRPS))
		} else if q.HighestThroughputRPS > 0 && math.Abs(s.OfferedRPS-s.Fraction*q.HighestThroughputRPS) > 1e-6*math.Max(1, s.OfferedRPS) {
			add("%s.offered_rps: is %g but fraction %g × highest_throughput_rps %g is %g", p, s.OfferedRPS, s.Fraction, q.HighestThroughputRPS, s.Fraction*q.HighestThroughputRPS)
		}
		for _, c := range []struct {
			name string
			n    int
		}{{"ok_count", s.OKCount}, {"error_count", s.ErrorCount}, {"rejected_count", s.RejectedCount}} {
			if c.n < 0 || c.n > MaxCount {
				add("%s.%s: is %d: want 0 to %d", p, c.name, c.n, MaxCount)
			}
		}
		for _, v := range []struct {
			name  string
			x, hi float64
		}{{"arrival_rps", s.ArrivalRPS, MaxInstanceRPS}, {"achieved_rps", s.AchievedRPS, MaxInstanceRPS},
			{"in_flight_mean", s.InFlightMean, MaxConcurrency}, {"in_flight_max_10s", s.InFlightMax10s, MaxConcurrency},
			{"in_flight_max_10s_low", s.InFlightMax10sLow, MaxConcurrency},
			{"cloudwatch_max_10s", s.CloudWatchMax10s, MaxConcurrency * MaxCloudWatchRatio},
			{"ttfab_p50_ms", s.TTFABP50Ms, MaxLatencyMs}, {"ttfab_p95_ms", s.TTFABP95Ms, MaxLatencyMs}, {"ttfab_p99_ms", s.TTFABP99Ms, MaxLatencyMs},
			{"stall_p95_ms", s.StallP95Ms, MaxLatencyMs}, {"shed_fraction", s.ShedFraction, 1}} {
			if !inRange(v.x, 0, v.hi) {
				add("%s.%s: is %g: want a number in [0, %g]", p, v.name, v.x, v.hi)
			}
		}
		if s.TTFABP50Ms > s.TTFABP95Ms || s.TTFABP95Ms > s.TTFABP99Ms {
			add("%s: percentiles out of order (p50 %g, p95 %g, p99 %g ms)", p, s.TTFABP50Ms, s.TTFABP95Ms, s.TTFABP99Ms)
		}
		if v, ok := (QMaxStep{TTFABP50Ms: s.TTFABP50Ms, TTFABP95Ms: s.TTFABP95Ms, TTFABP99Ms: s.TTFABP99Ms}).ttfabAt(q.SLOPercentile); ok && s.MeetsSLO && v > float64(q.SLOTTFABMs) {
			add("%s.meets_slo: is true but the p%d TTFAB %g ms exceeds the SLO %d ms", p, q.SLOPercentile, v, q.SLOTTFABMs)
		}
		if s.MeetsSLO && s.ShedFraction > 1-float64(q.SLOPercentile)/100+1e-12 {
			add("%s.meets_slo: is true but %g of the requests were shed, more than the p%d SLO allows", p, s.ShedFraction, q.SLOPercentile)
		}
		if s.MeetsSLO && s.OKCount == 0 {
			add("%s.meets_slo: is true but no request succeeded", p)
		}
		if !s.Usable && s.UnusableReason == "" {
			add("%s.unusable_reason: is empty: say why the step is not usable", p)
		}
	}
	return errs
}
