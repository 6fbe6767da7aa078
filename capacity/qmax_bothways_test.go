package capacity

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// bothWays makes testQMax's step at concurrency 30 fail the stall alone (Q_max 20 by TTFAB and stall, 40 by
// TTFAB alone, whose lowest fail is 50) and records every step's TTFAB verdict, then sets Q_max both ways.
func bothWays(q *QMax) {
	for i := range q.Steps {
		s := &q.Steps[i]
		ttfab := s.TTFABP95Ms <= float64(q.SLOTTFABMs)
		s.MeetsTTFABSLO = &ttfab
		if s.Concurrency == 30 {
			s.StallP95Ms, s.MeetsSLO = 400, false
		}
	}
	q.SetQMax()
}

// TestQMaxBothWays: Q_max by TTFAB and stall and by TTFAB alone come from one bracket rule
// (Bracket), are written by SetQMax and checked by Verify; the plan records both and plans with the first.
func TestQMaxBothWays(t *testing.T) {
	m := kokoro(t)
	q := testQMax(m)
	bothWays(q)
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("Verify: %v", errs)
	}
	if q.QMax != 20 || q.BracketHighestPass != 20 || q.BracketLowestFail != 30 {
		t.Errorf("by TTFAB and stall: Q_max %d, bracket %d/%d; want 20, 20/30", q.QMax, q.BracketHighestPass, q.BracketLowestFail)
	}
	if q.QMaxTTFABOnly == nil || *q.QMaxTTFABOnly != 40 || *q.BracketTTFABOnlyLowestFail != 50 {
		t.Fatalf("by TTFAB alone: Q_max %v, lowest fail %v; want 40, 50", q.QMaxTTFABOnly, q.BracketTTFABOnlyLowestFail)
	}
	data, err := MarshalArtifact(q)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"q_max": 20`, `"q_max_ttfab_only": 40`, `"bracket_ttfab_only_lowest_fail": 50`, `"meets_ttfab_slo": true`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the artifact lacks %s", want)
		}
	}
	back, err := ParseQMax("qmax.json", data)
	if err != nil || len(back.Verify()) > 0 || *back.QMaxTTFABOnly != 40 {
		t.Fatalf("round trip: %v %v", err, back.Verify())
	}

	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 50, 10
	p, err := FromArtifacts(m, testMeasurement(q, testTTotal(m)), o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Inputs.QMax != 20 || p.Inputs.QMaxTTFABOnly == nil || *p.Inputs.QMaxTTFABOnly != 40 || p.Inputs.QMaxTTFABOnlyLowerBound {
		t.Errorf("the plan's inputs: q_max %d, q_max_ttfab_only %v (lower bound %v); want 20 planned with, 40 beside it", p.Inputs.QMax, p.Inputs.QMaxTTFABOnly, p.Inputs.QMaxTTFABOnlyLowerBound)
	}
	if want, _ := thresholds(p.Inputs.SurgeRatio, 20); p.Derived.CScaleMax != want {
		t.Errorf("the original's thresholds use Q_max %v, want them from 20", p.Derived.CScaleMax)
	}
	in := p.Inputs
	low := 10
	in.QMaxTTFABOnly = &low
	if msg := errors.Join(verifyInputs(in)...); msg == nil || !strings.Contains(msg.Error(), "q_max_ttfab_only: is 10") {
		t.Errorf("a plan claiming Q_max by TTFAB alone below Q_max: %v", msg)
	}
}

// An artifact from before the steps recorded their TTFAB verdict has no Q_max by TTFAB alone: absent, not
// "the same as q_max", in the artifact and the plan.
func TestQMaxTTFABOnlyNotRecorded(t *testing.T) {
	m := kokoro(t)
	q := testQMax(m)
	q.SetQMax()
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("Verify: %v", errs)
	}
	if q.QMaxTTFABOnly != nil || q.BracketTTFABOnlyLowestFail != nil {
		t.Fatalf("an artifact without step verdicts got Q_max by TTFAB alone %v", *q.QMaxTTFABOnly)
	}
	data, _ := MarshalArtifact(q)
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if _, ok := doc["q_max_ttfab_only"]; ok {
		t.Errorf("q_max_ttfab_only written for an artifact that did not record it")
	}
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 50, 10
	p, err := FromArtifacts(m, testMeasurement(q, testTTotal(m)), o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Inputs.QMaxTTFABOnly != nil {
		t.Errorf("the plan records Q_max by TTFAB alone %d from an artifact that did not", *p.Inputs.QMaxTTFABOnly)
	}
}

func TestQMaxVerifyTTFABOnly(t *testing.T) {
	m := kokoro(t)
	ptr := func(v int) *int { return &v }
	f := false
	for _, tt := range []struct {
		name   string
		mutate func(*QMax)
		want   string
	}{
		{"q_max_ttfab_only edited", func(q *QMax) { q.QMaxTTFABOnly = ptr(50) }, "q_max_ttfab_only: is 50 but the staircase by TTFAB alone gives 40"},
		{"its bracket edited", func(q *QMax) { q.BracketTTFABOnlyLowestFail = ptr(0) }, "bracket_ttfab_only_lowest_fail: is 0"},
		{"removed", func(q *QMax) { q.QMaxTTFABOnly, q.BracketTTFABOnlyLowestFail = nil, nil }, "q_max_ttfab_only: is absent but the steps record meets_ttfab_slo"},
		{"set without step verdicts", func(q *QMax) {
			for i := range q.Steps {
				q.Steps[i].MeetsTTFABSLO = nil
			}
		}, "q_max_ttfab_only: is set but the steps do not record meets_ttfab_slo"},
		{"recorded on some steps", func(q *QMax) { q.Steps[0].MeetsTTFABSLO = nil }, "5 of 6 steps record meets_ttfab_slo"},
		{"fails TTFAB alone but meets both", func(q *QMax) { q.Steps[0].MeetsTTFABSLO = &f }, "steps[0].meets_ttfab_slo: is false but meets_slo is true"},
		{"meets TTFAB above the SLO", func(q *QMax) { tr := true; q.Steps[5].MeetsTTFABSLO = &tr }, "steps[5].meets_ttfab_slo: is true but the p95 TTFAB"},
		{"stall within budget", func(q *QMax) { q.Steps[3].StallP95Ms = 50 }, "steps[3].meets_ttfab_slo: is true and meets_slo false, but the p95 stall 50 ms is within"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			q := testQMax(m)
			bothWays(q)
			tt.mutate(q)
			if msg := errors.Join(q.Verify()...); msg == nil || !strings.Contains(msg.Error(), tt.want) {
				t.Fatalf("Verify() = %v, want a problem containing %q", msg, tt.want)
			}
		})
	}
}
