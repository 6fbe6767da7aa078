package bench

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
	"time"
)

// TestPercentileCI: the order-statistic interval of a p95 from 100 samples runs from the 90th to the 100th;
// 50 samples give no upper bound; over many samples of a known distribution the interval covers the true p95
// at least about 95% of the time.
func TestPercentileCI(t *testing.T) {
	xs := make([]float64, 100)
	for i := range xs {
		xs[i] = float64(i + 1)
	}
	if lo, hi, ok := PercentileCI(xs, 95); !ok || lo != 90 || hi != 100 {
		t.Errorf("p95 of 1..100: [%g, %g] %v, want [90, 100]", lo, hi, ok)
	}
	if _, _, ok := PercentileCI(xs[:50], 95); ok {
		t.Errorf("p95 of 50 samples has an interval, want none (no upper order statistic is enough)")
	}
	if lo, hi, ok := PercentileCI(xs, 50); !ok || lo >= 50 || hi <= 50 {
		t.Errorf("median of 1..100: [%g, %g] %v", lo, hi, ok)
	}
	truth := -math.Log(0.05) // the p95 of Exp(1)
	rng := rand.New(rand.NewPCG(1, 2))
	covered, trials := 0, 2000
	for range trials {
		s := make([]float64, 200)
		for i := range s {
			s[i] = rng.ExpFloat64()
		}
		sort.Float64s(s)
		lo, hi, ok := PercentileCI(s, 95)
		if ok && lo <= truth && truth <= hi {
			covered++
		}
	}
	if c := float64(covered) / float64(trials); c < 0.93 || c > 0.995 {
		t.Errorf("coverage %.3f over %d trials, want about 0.95 or a little more", c, trials)
	}
	s := StepResult{TTFABCILowMs: 90, TTFABCIHighMs: 110, TTFABCIOK: true}
	if !s.Straddles(100*time.Millisecond) || s.Straddles(80*time.Millisecond) || s.Straddles(110*time.Millisecond) {
		t.Errorf("straddles: [90, 110] holds 100 ms, not 80 ms, and 110 ms is a pass at the interval's top")
	}
}

// A step measured twice (re-measured with a longer window) re-reports as its later measurement.
func TestSummarizeKeepsTheLaterAttempt(t *testing.T) {
	first := stepRecords(50, func(int) (string, int) { return ClassShed, 503 })
	second := stepRecords(60, func(int) (string, int) { return ClassOK, 200 })
	for i := range second {
		second[i].WindowStart = second[i].WindowStart.Add(time.Minute)
		second[i].WindowEnd = second[i].WindowEnd.Add(time.Minute)
		second[i].Sent = second[i].Sent.Add(time.Minute)
		second[i].End = second[i].End.Add(time.Minute)
	}
	j := Judge{SLO: time.Second, SLOPercentile: 95, MinRequests: 1, MaxErrorRate: 0.01, MinConcurrencyRatio: 0.1}
	all := append(first, second...)
	if s := Summarize(all, j); len(s) != 1 || s[0].Requests != 60 || s[0].OK != 60 {
		t.Errorf("Summarize: %+v, want the later window's 60 successes", s)
	}
	if s := SummarizeStep(4, all, j); s.Requests != 60 {
		t.Errorf("SummarizeStep: %d requests, want 60", s.Requests)
	}
}
