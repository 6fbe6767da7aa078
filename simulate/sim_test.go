package simulate

import (
	"math"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// saturating is a curve whose response time is flat up to 10 and grows beyond: throughput 1, 10, 12.5 rps.
func saturating(t *testing.T, depth int, tTotal float64) Instance {
	t.Helper()
	m, err := newInstance([]CurvePoint{
		{Concurrency: 1, RPS: 1, ResponseS: 1, TTFABMs: 100},
		{Concurrency: 10, RPS: 10, ResponseS: 1, TTFABMs: 200},
		{Concurrency: 20, RPS: 12.5, ResponseS: 1.6, TTFABMs: 900},
	}, depth, tTotal, true)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestLittlesLawFixedPoint(t *testing.T) {
	m := saturating(t, 30, 60)
	for _, tc := range []struct{ rps, want float64 }{{0.5, 0.5}, {5, 5}, {10, 10}, {11, 4.4 / 0.34}} {
		c, ok := m.Concurrency(tc.rps)
		if !ok || math.Abs(c-tc.want) > 1e-9 {
			t.Errorf("Concurrency(%g) = %g, %v; want %g", tc.rps, c, ok, tc.want)
		}
		// The fixed point: c = λ·R(c).
		if math.Abs(c-tc.rps*m.ResponseS(c)) > 1e-9 {
			t.Errorf("c %g is not λ·R(c) = %g", c, tc.rps*m.ResponseS(c))
		}
	}
	if c, ok := m.Concurrency(13); ok {
		t.Errorf("Concurrency(13) above the highest throughput 12.5 = %g, ok; want no fixed point", c)
	}
	if x, c := m.MaxThroughput(); x != 12.5 || c != 20 {
		t.Errorf("MaxThroughput = %g at %g, want 12.5 at 20", x, c)
	}
	if got := m.TTFABMs(15); got != 550 {
		t.Errorf("TTFABMs(15) = %g, want 550 (interpolated)", got)
	}
	if got := m.TTFABMs(25); got != 900+1000*5/12.5 {
		t.Errorf("TTFABMs(25) = %g, want the last step's plus the wait for 5 more at 12.5 rps", got)
	}
}

func constant(rps float64, d time.Duration) Trace {
	return Trace{Name: "constant", Points: []Point{{0, rps}}, Duration: d}
}

func TestQueueGrowsAndShedsAboveMaxThroughput(t *testing.T) {
	m := saturating(t, 30, 60)
	r := Run(constant(15, 2*time.Minute), Fleet{Name: "one", Instance: m, Fixed: 1, SLOMs: 1000, SLOPercentile: 95})
	// 15 rps offered, at most 12.5 completed: the queue fills to the depth 30 within seconds, then 2.5 rps shed.
	if r.Minutes[0].Concurrency != 30 {
		t.Errorf("concurrency %g, want the queue depth 30", r.Minutes[0].Concurrency)
	}
	if got := r.Minutes[1].Shed; math.Abs(got-2.5*60) > 1e-6 {
		t.Errorf("second minute shed %g, want 150 (2.5 rps over 60 s)", got)
	}
	if got := r.Minutes[0].Shed; got < 100 || got > 150 {
		t.Errorf("first minute shed %g, want a bit less than 150 (the queue fills first)", got)
	}
	if !r.Minutes[1].Violates || r.ViolationMinutes != 2 {
		t.Errorf("violations %d, minute 2 %+v: want both minutes violating", r.ViolationMinutes, r.Minutes[1])
	}
	// Below the highest throughput nothing is shed and the instance sits at the fixed point.
	r = Run(constant(11, time.Minute), Fleet{Name: "one", Instance: m, Fixed: 1, SLOMs: 1000, SLOPercentile: 95})
	if r.Shed != 0 || math.Abs(r.Minutes[0].Concurrency-4.4/0.34) > 1e-9 {
		t.Errorf("at 11 rps: shed %g, concurrency %g", r.Shed, r.Minutes[0].Concurrency)
	}
}

// planFleet is a what-if espeak-ng plan's fleet: Q_max 20 (C_scale_max 15, C_scale_min 10 at s 1.25).
func planFleet(t *testing.T, m Instance) (Fleet, *capacity.Plan) {
	t.Helper()
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	model, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	o := capacity.DefaultOptions(model)
	o.PeakRPS, o.TroughRPS, o.MaxInstances = 40, 2, 10
	p, err := capacity.FromWhatIf(model, capacity.WhatIf{QMax: 20, TTotalS: m.TTotalS, ThroughputRPS: 11}, o)
	if err != nil {
		t.Fatal(err)
	}
	return FleetFor("plan", p, m, 1), p
}

func TestAutoscalerScalesOutAfterTTotalAndInAfterLowAlarm(t *testing.T) {
	m := saturating(t, 30, 120)
	f, p := planFleet(t, m)
	target := p.Derived.TargetValue
	// 5 rps for 10 min (one instance at concurrency 5), then 30 rps for 20 min, then 2 rps.
	tr := Trace{Name: "steps", Points: []Point{{0, 5}, {10 * time.Minute, 30}, {30 * time.Minute, 2}}, Duration: 60 * time.Minute}
	r := Run(tr, f)
	if r.Minutes[0].Serving != 1 {
		t.Fatalf("starts on %d instances, want 1", r.Minutes[0].Serving)
	}
	if len(r.Events) == 0 {
		t.Fatal("no scaling event")
	}
	out := r.Events[0]
	// 30 rps on one instance is above the target at once (the queue fills); the high alarm needs 3 breaching
	// 10-s datapoints: the decision comes within one evaluation period (30 s) of the crossing at 600 s.
	if out.To <= out.From || out.AtS < 600 || out.AtS > 600+30 {
		t.Errorf("first event %+v: want a scale-out within 30 s after 600 s (target %g)", out, target)
	}
	// The added instances serve T_total (120 s) after the decision, not before.
	if out.ServingAtS != out.AtS+120 {
		t.Errorf("serving at %g, want %g", out.ServingAtS, out.AtS+120)
	}
	before := int(out.AtS+119) / 60
	if mi := r.Minutes[before]; mi.Starting == 0 && int(out.AtS+119)%60 != 59 {
		t.Errorf("minute %d: %+v: want instances still starting", before, mi)
	}
	after := int(out.ServingAtS)/60 + 1
	if mi := r.Minutes[after]; mi.Serving+mi.Starting < out.To {
		t.Errorf("minute %d: %+v: want %d serving", after, mi, out.To)
	}
	// Scale-in: after the load drops at 1800 s, the low alarm (concurrency Maximum below C_scale_min for 5 × 60 s)
	// fires at the end of the fifth low minute; each scale-in then waits for the scale-in cooldown.
	var ins []Event
	for _, e := range r.Events {
		if e.To < e.From && e.AtS > 1800 {
			ins = append(ins, e)
		}
	}
	if len(ins) == 0 {
		t.Fatalf("no scale-in: %+v", r.Events)
	}
	if ins[0].AtS != 1800+300 {
		t.Errorf("first scale-in after the drop at %g s, want 2100 (5 low minutes after 1800): %+v", ins[0].AtS, r.Events)
	}
	if len(ins) > 1 && ins[1].AtS-ins[0].AtS < float64(p.Derived.ScaleInCooldownS) {
		t.Errorf("second scale-in %g s after the first, inside the %d s cooldown", ins[1].AtS-ins[0].AtS, p.Derived.ScaleInCooldownS)
	}
	for _, e := range r.Events {
		if e.To > f.MaxInstances || e.To < 1 {
			t.Errorf("event %+v outside the bounds 1..%d", e, f.MaxInstances)
		}
	}
}
