package capacity

import (
	"context"
	"slices"
	"strings"
	"testing"
)

// Feasible means simulated and met, on traces that could fail it (docs/design.md): each trace of the envelope
// is shown failing, with its own reason, for a plan built to fail it, starting from the valid fixture (which
// holds every trace). failing runs the envelope of in and d and returns the traces that did not hold.
func failing(t *testing.T, in Inputs, d Derived) []EnvelopeTrace {
	t.Helper()
	env, err := simulateEnvelope(context.Background(), in, d)
	if err != nil {
		t.Fatal(err)
	}
	var out []EnvelopeTrace
	for _, tr := range env.Traces {
		if !tr.Holds {
			out = append(out, tr)
		}
	}
	return out
}

// kinds names the failing traces, "kind: name" each, for messages.
func kinds(trs []EnvelopeTrace) []string {
	var out []string
	for _, tr := range trs {
		out = append(out, tr.Kind+": "+tr.Name)
	}
	return out
}

func TestValidFixtureHoldsEveryTrace(t *testing.T) {
	p := loadValid(t)
	if f := failing(t, p.Inputs, p.Derived); len(f) > 0 {
		t.Fatalf("the valid fixture fails %q", kinds(f))
	}
}

// With no scale-in margin the survivors of a scale-in from 2 to 1 carry 1.15 × the scale-out rate at the top
// of a ±15% swing: the slow hover and the sawtooth at that boundary scale in during their low part and out
// again within T_plan. The fast hover's dip (2 min) is shorter than the scale-in window (350 s): it holds.
func TestHoverSlowAndSawtoothCanFail(t *testing.T) {
	p := loadValid(t)
	in := p.Inputs
	in.ScaleInMargin = 0
	f := failing(t, in, derive(in))
	got := kinds(f)
	want := []string{
		"hover: hover slow ±15% around 11.47 rps, where 2 instances scale in, period 14m12s",
		"sawtooth: sawtooth ±15% across 11.47 rps, where 2 instances scale in, up at once, down over 14m12s",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("failing traces %q, want exactly %q", got, want)
	}
	for _, tr := range f {
		if tr.Flaps == 0 || !strings.Contains(tr.Worst, "followed by a scale-out at") || !strings.Contains(tr.Worst, "within T_plan 340.8 s") {
			t.Errorf("%s: %d flap(s), worst %q: want the flap named", tr.Name, tr.Flaps, tr.Worst)
		}
	}
}

// With a scale-in window of 3 × 10 s (shorter than the fast hover's 2-min dip) and a 10% margin (below the
// 15% swing), the fleet scales in at each dip of the fast hover and out at the next crest: only the fast
// hover fails (the slow traces' scale-out comes more than T_plan after their early scale-in).
func TestHoverFastCanFail(t *testing.T) {
	p := loadValid(t)
	in := p.Inputs
	in.ScaleInMargin = 0.1
	d := derive(in)
	d.ScaleInEvaluationPeriods = 3
	f := failing(t, in, d)
	got := kinds(f)
	want := []string{"hover: hover fast ±15% around 10.33 rps, where 2 instances scale in, period 4m0s"}
	if !slices.Equal(got, want) {
		t.Fatalf("failing traces %q, want exactly %q", got, want)
	}
	if f[0].Flaps == 0 || !strings.Contains(f[0].Worst, "followed by a scale-out at") {
		t.Errorf("fast hover: %d flap(s), worst %q", f[0].Flaps, f[0].Worst)
	}
	// The same plan with its derived window (35 × 10 s ≥ T_plan) fails only the slow traces: the window is
	// what the fast hover tests.
	if f := failing(t, in, derive(in)); slices.ContainsFunc(f, func(tr EnvelopeTrace) bool { return strings.Contains(tr.Name, "hover fast") }) {
		t.Errorf("with the derived window the fast hover fails: %q", kinds(f))
	}
}

// A fleet capped at one instance cannot follow the staircase: it violates at its maximum. Every trace that
// needs more than one instance fails with it; on this instance model the staircase is no harder than the
// growth trace (an instant ×1.25 lands below the safe rate), so no plan fails it alone.
func TestStaircaseCanFail(t *testing.T) {
	p := loadValid(t)
	d := p.Derived
	d.MaxInstances = 1
	f := failing(t, p.Inputs, d)
	i := slices.IndexFunc(f, func(tr EnvelopeTrace) bool { return tr.Kind == EnvelopeStaircase })
	if i < 0 {
		t.Fatalf("failing traces %q: want the staircase", kinds(f))
	}
	if tr := f[i]; tr.ViolationMinutes == 0 || !strings.Contains(tr.Worst, "the fleet is at its maximum of 1 instance(s)") {
		t.Errorf("staircase: %d violation minute(s), worst %q", tr.ViolationMinutes, tr.Worst)
	}
}

// The step past the peak: 96 rps on a fleet capped at 6 instances is 16 rps each, above the 14.97 rps the
// instance was measured to carry within the SLO and close to its 16.3-rps capacity: only the step fails (every
// other trace stays at or below the 80-rps peak, 13.3 rps each on 6), and its reason is that it never recovered.
func TestStepCanFailByNotRecovering(t *testing.T) {
	p := loadValid(t)
	d := p.Derived
	d.MaxInstances = 6
	f := failing(t, p.Inputs, d)
	if got := kinds(f); len(got) != 1 || f[0].Kind != EnvelopeStep {
		t.Fatalf("failing traces %q, want exactly the step", got)
	}
	if tr := f[0]; tr.RecoveryS != nil || !strings.HasPrefix(tr.Worst, "not recovered: the last minute, 23m0s after the step, still violates (limit 2 × T_plan = 681.6 s)") {
		t.Errorf("step: recovery %v, worst %q", tr.RecoveryS, tr.Worst)
	}
}

// A plan whose scale-out target is the metric at 15 rps (above the safe rate) sits on 6 instances at the
// peak, and the step to 96 rps puts 16 rps on each, near one instance's 16.3-rps capacity, until a seventh
// serves: with the measured T_total it
// violates for 6 minutes and recovers 360 s after the step, within 2 × T_plan (681.6 s), so the step holds
// (its minutes during the recovery do not fail it). With a T_total of 1000 s, far too long for T_plan 340.8 s,
// it recovers 1080 s after the step: the step fails on that.
func TestStepRecoveryWithinTwiceTPlan(t *testing.T) {
	p := loadValid(t)
	in, d := p.Inputs, p.Derived
	d.TargetValue = in.Instance.At(15).Metric
	d.MaxInstances = 9
	env, err := simulateEnvelope(context.Background(), in, d)
	if err != nil {
		t.Fatal(err)
	}
	step := env.Traces[3]
	if step.Kind != EnvelopeStep || !step.Holds || step.ViolationMinutes == 0 || step.RecoveryS == nil || *step.RecoveryS != 360 {
		t.Fatalf("step %+v (recovery %v): want it to hold after violating, recovered in 360 s", step, deref(step.RecoveryS))
	}
	in.TTotalS = 1000
	f := failing(t, in, d)
	i := slices.IndexFunc(f, func(tr EnvelopeTrace) bool { return tr.Kind == EnvelopeStep })
	if i < 0 {
		t.Fatalf("failing traces %q: want the step", kinds(f))
	}
	if tr := f[i]; tr.RecoveryS == nil || *tr.RecoveryS != 1080 || !strings.HasPrefix(tr.Worst, "recovered 1080 s after the step, later than 2 × T_plan = 681.6 s") {
		t.Errorf("step: recovery %v, worst %q", tr.RecoveryS, tr.Worst)
	}
	// The envelope finding names it.
	e := Envelope{Traces: []EnvelopeTrace{f[i]}}
	if fe := envelopeFinding(e); fe.Status != StatusFail || !strings.Contains(fe.Detail, "step: 1.2 × peak, recovered in 1080 s (limit 2 × T_plan)") ||
		!strings.Contains(fe.Detail, "step trace (") {
		t.Errorf("envelope finding %q", fe.Detail)
	}
}

// The search does not vary the hover amplitude: a candidate's flags carry the one the user planned with (and
// leave out the default), so that the printed command line plans on the same envelope.
func TestCandidateFlagsCarryTheHoverAmplitude(t *testing.T) {
	c := Candidate{Options: Options{SurgeRatio: 1.25, MinInstances: 1, MaxInstances: 7, ScaleInMargin: 0.2, HoverAmplitude: DefaultHoverAmplitude}}
	if got := c.Flags(); got != "--surge 1.25 --min-instances 1 --max-instances 7 --scale-in-margin 0.2" {
		t.Errorf("default amplitude: flags %q", got)
	}
	c.Options.HoverAmplitude = 0.25
	if got := c.Flags(); !strings.HasSuffix(got, " --scale-in-margin 0.2 --hover-amplitude 0.25") {
		t.Errorf("amplitude 0.25: flags %q", got)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}
