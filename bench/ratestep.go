package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// The rate staircase (docs/design.md, "Open loop, too"): after the closed-loop staircase, qmax offers the one
// pinned instance Poisson arrivals at fixed fractions of its highest closed-loop throughput, one open-loop step
// per fraction, each with the closed-loop step's windows:
//
//	start ── Settle ──┬──────────── Hold ─────────────┬── drain (≤ RequestTimeout) ──┐
//	                  │             ├─── Measure ─────┤                              │
//	                  │        window start     stop arriving                     all ended
//
// A rate step is RunOpenLoop with PoissonArrivals over Settle+Hold and a pool of workers large enough that an
// arrival never waits for one (RateStepWorkers). Its records go to the same records file as the closed-loop
// steps; each carries RateStep (which rate step) and Arrival (its scheduled time), and the step's measure
// window. Summarize (closed loop) skips them; SummarizeRateSteps folds them.

// RateStepID marks a record of the rate staircase: which open-loop step it belongs to.
type RateStepID struct {
	// Index is the step's position in the rate staircase, from 0.
	Index int `json:"index"`
	// Fraction is the step's offered rate as a fraction of the highest closed-loop throughput.
	Fraction float64 `json:"fraction"`
	// OfferedRPS is the step's Poisson arrival rate, requests per second.
	OfferedRPS float64 `json:"offered_rps"`
}

// Defaults of a rate step.
const (
	// DefaultMaxRateLag bounds the p95 of a rate step's send lag (sent − scheduled) over its window: above it
	// the client fell behind its arrival schedule and the step is not usable.
	DefaultMaxRateLag = 50 * time.Millisecond
	// RateSlice is the length of the slices InFlightMax10s takes the peak of: the period of the 10-s Maximum
	// of ConcurrentRequestsPerModel the scaling alarm reads.
	RateSlice = 10 * time.Second
)

// RateStepConfig is one open-loop step of the rate staircase. Validate reports every problem at once.
type RateStepConfig struct {
	// ID names the step; every record carries it.
	ID RateStepID
	// Settle, Hold and Measure are the step's windows (above), as in Config.
	Settle, Hold, Measure time.Duration
	// RequestTimeout bounds one request, from send to the end of its stream; the step drains at most that long
	// after its hold.
	RequestTimeout time.Duration
	// MaxWorkers is the pool of workers; 0 takes RateStepWorkers(ID.OfferedRPS, RequestTimeout).
	MaxWorkers int
	// MaxLag bounds the p95 send lag of a usable step; 0 takes DefaultMaxRateLag.
	MaxLag time.Duration
	// Judge judges the step (SLO, stall budget, MinRequests); its MaxErrorRate and MinConcurrencyRatio are not
	// used: a rate step meets the SLO with at most (100 − SLOPercentile)% shed.
	Judge Judge
	// Transport sends the requests, Corpus gives their texts. Seed seeds the arrival gaps (with ID.Index) and
	// the texts (with the arrival's index), so the same seed offers the same arrivals.
	Transport Transport
	Corpus    *Corpus
	Seed      uint64
	// RunID is written into every record.
	RunID string
	// Records receives every record as a JSON line as it ends; nil writes none.
	Records io.Writer
	// Observer, when set, is called from one goroutine about twice a second and once at the end (Progress's
	// Concurrency is the pool size, InFlight the requests running). It must return quickly.
	Observer func(Progress)
}

// Validate returns every problem of the configuration, each naming the field and the fix.
func (c RateStepConfig) Validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !(c.ID.OfferedRPS > 0 && c.ID.OfferedRPS <= MaxOpenLoopRPS) {
		add("offered rate: is %g rps: want a rate in (0, %d]", c.ID.OfferedRPS, MaxOpenLoopRPS)
	}
	if c.ID.Index < 0 {
		add("index: is %d: want 0 or more", c.ID.Index)
	}
	if c.Settle < 0 {
		add("settle: is %v: want 0 or more", c.Settle)
	}
	if c.Hold <= 0 {
		add("hold: is %v: want a positive duration", c.Hold)
	}
	if c.Measure <= 0 || c.Measure > c.Hold {
		add("measure: is %v: want a positive duration no longer than hold (%v): it is the last part of the hold", c.Measure, c.Hold)
	}
	if c.RequestTimeout <= 0 {
		add("request timeout: is %v: want a positive duration", c.RequestTimeout)
	}
	if c.MaxWorkers < 0 || c.MaxWorkers > MaxConcurrency {
		add("max workers: is %d: want 0 (derived) to %d", c.MaxWorkers, MaxConcurrency)
	}
	if c.MaxLag < 0 {
		add("max lag: is %v: want 0 (the default %v) or more", c.MaxLag, DefaultMaxRateLag)
	}
	if c.Judge.SLO <= 0 || c.Judge.SLOPercentile < 50 || c.Judge.SLOPercentile > 99 || c.Judge.MinRequests < 1 {
		add("judge: SLO %v at p%d with at least %d requests: want a positive SLO, a percentile from 50 to 99 and at least 1 request", c.Judge.SLO, c.Judge.SLOPercentile, c.Judge.MinRequests)
	}
	if c.Transport == nil {
		add("transport: is not set: use NewHTTP or SageMakerStream")
	}
	if c.Corpus == nil || c.Corpus.Len() == 0 {
		add("corpus: is empty: use DefaultCorpus or LoadCorpus")
	}
	return errs
}

// RateStepWorkers is the worker pool of a rate step at rps with requests bounded by timeout: every request
// ends within timeout, so the requests in flight are the arrivals of the last timeout, rps × timeout on
// average; the pool holds that with a margin of five standard deviations of a Poisson count (and 16), so an
// arrival finds a free worker unless the client itself falls behind. At most MaxConcurrency.
func RateStepWorkers(rps float64, timeout time.Duration) int {
	mean := rps * timeout.Seconds()
	n := int(math.Ceil(mean+5*math.Sqrt(mean))) + 16
	return min(max(n, 1), MaxConcurrency)
}

// PoissonArrivals yields the arrivals of a Poisson process at rps over [0, d): exponential gaps of mean 1/rps
// drawn from a generator seeded with (seed, stream), as (index from 0, offset from the start).
func PoissonArrivals(rps float64, d time.Duration, seed, stream uint64) iter.Seq2[int64, time.Duration] {
	return func(yield func(int64, time.Duration) bool) {
		if !(rps > 0) {
			return
		}
		rng := rand.New(rand.NewPCG(seed, stream))
		t := 0.0
		for k := int64(0); ; k++ {
			t += rng.ExpFloat64() / rps
			off := time.Duration(t * float64(time.Second))
			if off >= d {
				return
			}
			if !yield(k, off) {
				return
			}
		}
	}
}

// RateStepResult is one rate step folded from its records (SummarizeRateSteps): the requests sent in its
// measure window, with exact percentiles.
type RateStepResult struct {
	// ID is the step.
	ID RateStepID `json:"id"`
	// WindowStart and WindowEnd bound the measure window.
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	// Workers is the step's pool of workers.
	Workers int `json:"workers"`
	// Requests counts the requests sent in the window; OK, Errors (timeouts and broken streams among them) and
	// Shed (503s) split them. Dropped counts the window's arrivals that found no free worker (never sent);
	// NoAnswer the Errors that got no answer at all (refused, reset, unreachable).
	Requests, OK, Errors, Shed, Timeouts, Dropped, NoAnswer int
	// ArrivalRPS is Requests ÷ the window; AchievedRPS the successful requests that ended in the window ÷ the
	// window.
	ArrivalRPS  float64 `json:"arrival_rps"`
	AchievedRPS float64 `json:"achieved_rps"`
	// InFlightMean is the time-averaged number of requests in flight over the window and InFlightPeak its
	// largest value; InFlightMax10s is the mean of the peaks of the window's RateSlice slices (InFlightMax).
	InFlightMean   float64 `json:"in_flight_mean"`
	InFlightPeak   int     `json:"in_flight_peak"`
	InFlightMax10s float64 `json:"in_flight_max_10s"`
	// InFlightMax10sLow is the AlarmQuantile of the window's sliding RateSlice peaks (InFlightMaxLow): the
	// 10-s peak the scaling alarm can count on at this rate.
	InFlightMax10sLow float64 `json:"in_flight_max_10s_low"`
	// Exact TTFAB percentiles of the successful requests sent in the window, and at the SLO's percentile.
	TTFABP50Ms float64 `json:"ttfab_p50_ms"`
	TTFABP95Ms float64 `json:"ttfab_p95_ms"`
	TTFABP99Ms float64 `json:"ttfab_p99_ms"`
	TTFABSLOMs float64 `json:"ttfab_slo_percentile_ms"`
	// StallP95Ms is the p95 stall of the same requests; ResponseMeanMs their mean full-response time.
	StallP95Ms     float64 `json:"stall_p95_ms"`
	ResponseMeanMs float64 `json:"response_mean_ms"`
	// LagP95Ms and LagMaxMs are the client's send lag (sent − scheduled) over the window's sent requests.
	LagP95Ms float64 `json:"lag_p95_ms"`
	LagMaxMs float64 `json:"lag_max_ms"`
	// ShedFraction is (Errors + Shed) ÷ Requests: the share that got no audio.
	ShedFraction float64 `json:"shed_fraction"`
	// MeetsSLO is true when some request succeeded, the SLO-percentile TTFAB ≤ SLO, the p95 stall ≤ budget +
	// jitter and ShedFraction ≤ 1 − SLOPercentile/100. FailReasons says what failed.
	MeetsSLO    bool     `json:"meets_slo"`
	FailReasons []string `json:"fail_reasons,omitempty"`
	// Usable is false when the step cannot be trusted (too few samples, the client fell behind its schedule).
	Usable         bool   `json:"usable"`
	UnusableReason string `json:"unusable_reason,omitempty"`
}

// RunRateStep runs one open-loop step of the rate staircase (RateStepConfig), writes its records to
// cfg.Records as they end, and returns the step folded from them. When ctx ends no arrival is sent any more,
// the requests in flight are canceled and the partial step comes back with ctx's error.
func RunRateStep(ctx context.Context, cfg RateStepConfig) (RateStepResult, error) {
	if errs := cfg.Validate(); len(errs) > 0 {
		return RateStepResult{}, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	workers := cfg.MaxWorkers
	if workers == 0 {
		workers = RateStepWorkers(cfg.ID.OfferedRPS, cfg.RequestTimeout)
	}
	maxLag := cfg.MaxLag
	if maxLag == 0 {
		maxLag = DefaultMaxRateLag
	}
	length := cfg.Settle + cfg.Hold
	// Start a little ahead, so that the pool's workers exist before the first arrival (RunOpenLoop creates
	// them before waiting for Start); the monotonic reading stays with start.
	start := time.Now().Add(50 * time.Millisecond)
	stopStart := start.Add(length)
	windowStart := stopStart.Add(-cfg.Measure)
	wallWS, wallWE := wall(windowStart), wall(stopStart)
	id := cfg.ID

	var w *RecordWriter
	if cfg.Records != nil {
		w = NewRecordWriter(cfg.Records)
	}
	var werr error
	var recs []Record
	live := liveView{cfg: Config{Settle: cfg.Settle, Observer: cfg.Observer}, c: workers, start: start, stopStart: stopStart, windowStart: windowStart, open: true}
	ol := OpenLoopConfig{
		Segments:   []Segment{{Duration: length, RPS: cfg.ID.OfferedRPS}},
		Arrivals:   PoissonArrivals(cfg.ID.OfferedRPS, length, cfg.Seed, uint64(cfg.ID.Index)),
		MaxWorkers: workers, RequestTimeout: cfg.RequestTimeout, Start: start,
		Transport: cfg.Transport, Corpus: cfg.Corpus, Seed: cfg.Seed, RunID: cfg.RunID,
		Trace: fmt.Sprintf("qmax-rate-step-%d", cfg.ID.Index),
		OnRecord: func(r Record) {
			markRateRecord(&r, id, wallWS, wallWE)
			recs = append(recs, r)
			live.add(r)
			if w != nil && werr == nil {
				werr = w.Write(r)
			}
		},
		Observer: func(p OpenLoopProgress) {
			live.inFlight = int(p.InFlight)
			if !p.Done {
				live.emit(false)
			}
		},
	}
	_, err := RunOpenLoop(ctx, ol)
	live.finish()
	res := summarizeRateStep(id, workers, recs, cfg.Judge, maxLag)
	if err != nil {
		return res, fmt.Errorf("rate step %d (%.4g rps): %w", id.Index, id.OfferedRPS, err)
	}
	if werr != nil {
		return res, fmt.Errorf("rate step %d (%.4g rps): %w: check the records file's disk", id.Index, id.OfferedRPS, werr)
	}
	return res, nil
}

// markRateRecord makes an open-loop record a rate step's: its step, its measure window and whether it was
// sent in it (Measured), from the wall-clock times the record stores, so the file re-reports the same step.
func markRateRecord(r *Record, id RateStepID, ws, we time.Time) {
	r.RateStep = &id
	r.WindowStart, r.WindowEnd = ws, we
	r.Measured = !r.Sent.Before(ws) && r.Sent.Before(we)
}

// SummarizeRateSteps folds the records of the rate staircase (those with RateStep; others are ignored) into
// one RateStepResult per step, in increasing index: the numbers RunRateStep reported, read back from a
// records file. maxLag 0 takes DefaultMaxRateLag.
func SummarizeRateSteps(records []Record, j Judge, maxLag time.Duration) []RateStepResult {
	if maxLag == 0 {
		maxLag = DefaultMaxRateLag
	}
	by := map[int][]Record{}
	for _, r := range records {
		if r.RateStep == nil {
			continue
		}
		by[r.RateStep.Index] = append(by[r.RateStep.Index], r)
	}
	idx := make([]int, 0, len(by))
	for i := range by {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	out := make([]RateStepResult, 0, len(idx))
	for _, i := range idx {
		rs := latestAttempt(by[i]) // a rate step measured again (a resumed run's) is its later window
		out = append(out, summarizeRateStep(*rs[0].RateStep, rs[0].Step, rs, j, maxLag))
	}
	return out
}

func summarizeRateStep(id RateStepID, workers int, recs []Record, j Judge, maxLag time.Duration) RateStepResult {
	s := RateStepResult{ID: id, Workers: workers}
	if len(recs) > 0 {
		s.WindowStart, s.WindowEnd = recs[0].WindowStart, recs[0].WindowEnd
	}
	window := s.WindowEnd.Sub(s.WindowStart)
	var ttfab, stall, lags []float64
	var respSum float64
	achieved := 0
	for _, r := range recs {
		if r.OK() && !r.End.Before(s.WindowStart) && r.End.Before(s.WindowEnd) {
			achieved++
		}
		if !r.Measured {
			continue
		}
		if r.Class == ClassDropped {
			s.Dropped++
			continue
		}
		s.Requests++
		if r.Arrival != nil {
			lags = append(lags, ms(r.Sent.Sub(r.Arrival.Scheduled)))
		}
		switch r.Class {
		case ClassOK:
			s.OK++
			ttfab = append(ttfab, r.TTFABMs)
			stall = append(stall, r.StallMs)
			respSum += r.ResponseMs
		case ClassShed:
			s.Shed++
		default:
			s.Errors++
			if r.Class == ClassTimeout {
				s.Timeouts++
			}
			if r.Class == ClassOther && r.Status == 0 {
				s.NoAnswer++
			}
		}
	}
	if window > 0 {
		s.ArrivalRPS = float64(s.Requests) / window.Seconds()
		s.AchievedRPS = float64(achieved) / window.Seconds()
	}
	sort.Float64s(ttfab)
	sort.Float64s(stall)
	sort.Float64s(lags)
	s.TTFABP50Ms, s.TTFABP95Ms, s.TTFABP99Ms = Percentile(ttfab, 50), Percentile(ttfab, 95), Percentile(ttfab, 99)
	s.TTFABSLOMs = Percentile(ttfab, float64(j.SLOPercentile))
	s.StallP95Ms = Percentile(stall, 95)
	if s.OK > 0 {
		s.ResponseMeanMs = respSum / float64(s.OK)
	}
	if len(lags) > 0 {
		s.LagP95Ms, s.LagMaxMs = Percentile(lags, 95), lags[len(lags)-1]
	}
	if s.Requests > 0 {
		s.ShedFraction = float64(s.Errors+s.Shed) / float64(s.Requests)
	}
	s.InFlightMean, s.InFlightPeak = inFlight(recs, s.WindowStart, s.WindowEnd)
	s.InFlightMax10s = InFlightMax(recs, s.WindowStart, s.WindowEnd, RateSlice)
	s.InFlightMax10sLow = InFlightMaxLow(recs, s.WindowStart, s.WindowEnd, RateSlice, AlarmQuantile)

	var fail, unusable []string
	if s.OK == 0 {
		fail = append(fail, "no request succeeded in the measure window")
	} else if s.TTFABSLOMs > ms(j.SLO) {
		fail = append(fail, fmt.Sprintf("p%d TTFAB %.1f ms is above the SLO %.0f ms", j.SLOPercentile, s.TTFABSLOMs, ms(j.SLO)))
	}
	if lim := ms(j.StallBudget + j.StallJitter); s.OK > 0 && s.StallP95Ms > lim {
		fail = append(fail, fmt.Sprintf("p95 stall %.1f ms is above the stall budget %.0f ms + jitter %.0f ms", s.StallP95Ms, ms(j.StallBudget), ms(j.StallJitter)))
	}
	if allowed := 1 - float64(j.SLOPercentile)/100; s.ShedFraction > allowed+1e-12 {
		fail = append(fail, fmt.Sprintf("%d of %d requests got no audio (%d shed, %d timeouts, %d other errors): %.1f%%, above the %.0f%% a p%d SLO allows",
			s.Errors+s.Shed, s.Requests, s.Shed, s.Timeouts, s.Errors-s.Timeouts, 100*s.ShedFraction, 100*allowed, j.SLOPercentile))
	}
	s.MeetsSLO, s.FailReasons = len(fail) == 0, fail
	// As in a closed-loop step (judge): the server's errors fail the step; no answer at all, too few samples
	// or a client behind its schedule make it unusable.
	if s.LostConnection(j) {
		unusable = append(unusable, fmt.Sprintf("no answer: %d of %d requests got no answer at all (refused, reset, unreachable): the measurement lost its connection to the endpoint", s.NoAnswer, s.Requests))
	}
	switch {
	case s.Requests < j.MinRequests:
		unusable = append(unusable, fmt.Sprintf("too few requests: %d sent in the measure window, want at least %d: lengthen the measure window", s.Requests, j.MinRequests))
	case s.OK < j.MinRequests && s.MeetsSLO:
		unusable = append(unusable, fmt.Sprintf("too few requests: %d succeeded in the measure window, want at least %d: lengthen the measure window", s.OK, j.MinRequests))
	}
	if s.Dropped > 0 {
		unusable = append(unusable, fmt.Sprintf("client-bound: %d arrivals in the window found none of the %d workers free and were not sent", s.Dropped, workers))
	}
	if s.LagP95Ms > ms(maxLag) {
		unusable = append(unusable, fmt.Sprintf("client-bound: the client fell behind its arrival schedule: p95 send lag %.1f ms (max %.1f ms), above %.0f ms: run the client on a less loaded machine", s.LagP95Ms, s.LagMaxMs, ms(maxLag)))
	}
	s.Usable = len(unusable) == 0
	if !s.Usable {
		s.UnusableReason = strings.Join(unusable, "; ")
	}
	return s
}

// InFlightMax is the mean, over the slices of length slice in [ws, we), of each slice's peak number of
// requests in flight: what the slice-long Maximum datapoints of a concurrency metric show on average. The
// slices are those of the wall-clock grid of slice (where CloudWatch puts its datapoints) that lie wholly in
// the window; a window that holds none is one slice.
func InFlightMax(recs []Record, ws, we time.Time, slice time.Duration) float64 {
	if !we.After(ws) || slice <= 0 {
		return 0
	}
	first := ws.Truncate(slice)
	if first.Before(ws) {
		first = first.Add(slice)
	}
	var sum float64
	n := 0
	for a := first; !a.Add(slice).After(we); a = a.Add(slice) {
		_, peak := inFlight(recs, a, a.Add(slice))
		sum += float64(peak)
		n++
	}
	if n == 0 {
		_, peak := inFlight(recs, ws, we)
		return float64(peak)
	}
	return sum / float64(n)
}

// LostConnection reports whether more of the step's requests got no answer at all than its SLO allows to
// fail: the measurement lost its connection to the endpoint.
func (s RateStepResult) LostConnection(j Judge) bool {
	return s.Requests > 0 && float64(s.NoAnswer)/float64(s.Requests) > 1-float64(j.SLOPercentile)/100
}
