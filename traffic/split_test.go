package traffic

import (
	"strings"
	"testing"
	"time"
)

// series is a Series of the given rates per second.
func series(rates ...float64) Series {
	return Series{Name: "t.csv", Kind: KindRate, Step: time.Second, PerSecond: rates}
}

// Split leaves the held-out share at the end, in whole seconds, never an empty planned-on part, and an empty
// held-out part only at 0.
func TestSplitKeepsTheHeldOutShareAtTheEnd(t *testing.T) {
	s := series(1, 2, 3, 4, 5, 6, 7, 8)
	s.Start = time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	plan, held, err := s.Split(0.25)
	if err != nil {
		t.Fatal(err)
	}
	if len(plan.PerSecond) != 6 || len(held.PerSecond) != 2 || held.PerSecond[0] != 7 {
		t.Fatalf("25%% of 8 s: planned on %v, held out %v", plan.PerSecond, held.PerSecond)
	}
	if !held.Start.Equal(s.Start.Add(6*time.Second)) || !strings.Contains(held.Name, "held out: 6s to 8s") || !strings.Contains(plan.Name, "planned on: 0s to 6s") {
		t.Fatalf("names %q, %q; held-out start %s", plan.Name, held.Name, held.Start)
	}
	// Appending to the planned-on part never writes into the held-out one.
	plan.PerSecond = append(plan.PerSecond, 99)
	if held.PerSecond[0] != 7 {
		t.Fatal("the parts share their backing array")
	}
	if plan, held, err := s.Split(0); err != nil || len(plan.PerSecond) != 8 || len(held.PerSecond) != 0 {
		t.Fatalf("0: %v %v %v", plan.PerSecond, held.PerSecond, err)
	}
	if _, held, err := series(1, 2).Split(0.01); err != nil || len(held.PerSecond) != 1 {
		t.Fatalf("a share that rounds to nothing still holds out a second: %v %v", held.PerSecond, err)
	}
	for _, bad := range []float64{-0.1, 0.95} {
		if _, _, err := s.Split(bad); err == nil {
			t.Errorf("holdout %g accepted", bad)
		}
	}
	if _, _, err := series(1).Split(0.5); err == nil {
		t.Error("a one-second trace split in two")
	}
}

// RateTrace keeps every second while it fits, else the mean over the shortest step that fits, with a point
// only where the rate changes: the requests it offers are the series'.
func TestRateTraceResamplesToTheShortestStepThatFits(t *testing.T) {
	rates := make([]float64, 100)
	for i := range rates {
		rates[i] = float64(i % 4)
	}
	s := series(rates...)
	tr, step, err := s.RateTrace(100)
	if err != nil || step != time.Second || len(tr.Points) != 100 || tr.Duration != 100*time.Second {
		t.Fatalf("100 points fit: step %s, %d points, %v", step, len(tr.Points), err)
	}
	tr, step, err = s.RateTrace(30)
	if err != nil || step != 5*time.Second {
		t.Fatalf("30 points: step %s (want 5s: 4 s steps are not offered, 2 s makes 50), %v", step, err)
	}
	// Means over 5 s of 0,1,2,3,0 / 1,2,3,0,1 / ...: 1.2, 1.4, 1.6, 1.2, ... and no two equal in a row.
	if tr.Points[0].RPS != 1.2 || tr.Points[1].RPS != 1.4 {
		t.Fatalf("first means %v", tr.Points[:2])
	}
	if got, want := tr.Requests(0, tr.Duration), 150.0; got < want-1e-9 || got > want+1e-9 {
		t.Fatalf("the resampled trace offers %g requests, the series %g", got, want)
	}
	flat, _, err := series(5, 5, 5, 5).RateTrace(10)
	if err != nil || len(flat.Points) != 1 || flat.Duration != 4*time.Second {
		t.Fatalf("a constant series is one point lasting its length: %+v %v", flat, err)
	}
	if _, _, err := series().RateTrace(10); err == nil {
		t.Error("an empty series made a trace")
	}
}

// SurgeQuantile is Describe's surge ratio at the asked quantile, never below 1.
func TestSurgeQuantileIsDescribesRatio(t *testing.T) {
	s, err := Read("burst", strings.NewReader(burstTrace(t)))
	if err != nil {
		t.Fatal(err)
	}
	d, err := Describe(s, DefaultTPlan)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range SurgeQuantiles {
		r, n, err := SurgeQuantile(s, DefaultTPlan, q)
		if err != nil || n != d.Surge.StartMinutes || r != max(1, d.Surge.Quantiles[quantileName(q)]) {
			t.Fatalf("%s: %g over %d start minutes (%v); describe says %g over %d", quantileName(q), r, n, err, d.Surge.Quantiles[quantileName(q)], d.Surge.StartMinutes)
		}
	}
	if r, _, _ := SurgeQuantile(s, DefaultTPlan, 1); r != d.Surge.Max {
		t.Fatalf("max: %g, describe %g", r, d.Surge.Max)
	}
	// A falling trace's ratios are below 1; a plan's surge ratio is never below 1.
	falling := make([]float64, 600)
	for i := range falling {
		falling[i] = float64(600 - i)
	}
	if r, _, err := SurgeQuantile(series(falling...), DefaultTPlan, 0.99); err != nil || r != 1 {
		t.Fatalf("falling trace: %g, %v", r, err)
	}
	if _, _, err := SurgeQuantile(series(1, 2, 3), DefaultTPlan, 0.99); err == nil || !strings.Contains(err.Error(), "a surge ratio needs a minute before the start") {
		t.Fatalf("a 3-s trace: %v", err)
	}
	if p, ok := PeakOver(s, time.Minute); !ok || !near(p, (50*10+10*40)/60.0) {
		t.Fatalf("1-minute peak %g, %v", p, ok)
	}
}
