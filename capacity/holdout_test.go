package capacity

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// steady is held-out traffic the valid fixture's plan carries: 20 rps for half an hour.
func steady() TraceInput {
	return TraceInput{Name: "steady.csv, held out", DurationS: 1800, Points: [][2]float64{{0, 20}}}
}

// planFromValid builds a plan on the valid fixture's artifacts, in a directory of its own (for the gate), with
// the options edit changes, and writes it there.
func planFromValid(t *testing.T, edit func(*Options)) (string, *Plan) {
	t.Helper()
	path := validSet(t)
	dir := filepath.Dir(path)
	ms, err := LoadMeasurement(filepath.Join(dir, QMaxFile), filepath.Join(dir, TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	m := kokoro(t)
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 80, 10
	edit(&o)
	p, err := FromArtifacts(m, ms, o)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(path, p); err != nil {
		t.Fatal(err)
	}
	return path, p
}

// Held-out traffic is validated, not planned on: the plan records it, its envelope judges it (a plan that fails
// it is infeasible), and the gate re-runs it, so an edited held-out trace is refused. Every option the plan
// records is rebuilt by the gate, the hover amplitude and the surge's source among them.
func TestHeldOutTrafficIsValidatedAndReRunByTheGate(t *testing.T) {
	path, p := planFromValid(t, func(o *Options) {
		o.Holdout, o.HoverAmplitude, o.SurgeSource = []TraceInput{steady()}, 0.2, "the p99 of a test's traffic"
	})
	var held []EnvelopeTrace
	for _, et := range p.Envelope.Traces {
		if et.Kind == EnvelopeHoldout {
			held = append(held, et)
		}
	}
	if len(held) != 1 || !held[0].Holds || !p.Feasible() {
		t.Fatalf("verdict %s, held-out results %+v: want the steady held-out trace held", p.Verdict, held)
	}
	if !strings.Contains(p.Derived.Reasoning[1].Why, "the p99 of a test's traffic") {
		t.Errorf("scale_out_rps's reasoning does not say where the surge ratio came from: %q", p.Derived.Reasoning[1].Why)
	}
	if dec := Gate(fixtureDeployment(t), path); !dec.Enabled {
		t.Fatalf("the gate refused the plan it should rebuild: %q", dec.Reasons)
	}
	// The held-out trace edited after planning (the envelope left as it was): the gate's re-run disagrees.
	editPlan(t, path, func(p *Plan) { p.Inputs.Holdout[0].Points[0][1] = 75 })
	if dec := Gate(fixtureDeployment(t), path); dec.Enabled || len(dec.Reasons) != 1 || !strings.Contains(dec.Reasons[0], "does not verify: envelope.traces[") {
		t.Fatalf("an edited held-out trace: enabled %v, reasons %q", dec.Enabled, dec.Reasons)
	}

	_, failing := planFromValid(t, func(o *Options) { o.Holdout = []TraceInput{bursty()} })
	if failing.Feasible() || !failedNamed(failing, FindingEnvelope) {
		t.Fatalf("a plan that does not hold its held-out traffic is %s", failing.Verdict)
	}
	checkVerdictFollowsEnvelope(t, "held-out bursts", failing)
}

// The search never sees held-out traffic: it names the cheapest configuration for the rest, then says how that
// configuration does on the held-out part. Bursts held out fail the configuration the search found without them.
func TestSearchDoesNotSeeHeldOutTraffic(t *testing.T) {
	o, build := searchOnValid(t, flapping(), []float64{1.25}, []float64{0.2})
	o.Holdout = []TraceInput{bursty()}
	var progress strings.Builder
	out, err := SearchCheapest(context.Background(), o, build, &progress)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out, CheapestPassingHeading+"--surge") || !strings.Contains(out, "validated on the held-out traffic, which the search did not see: it FAILS 1 of 1 part(s) (bursty.csv: ") {
		t.Fatalf("the search's advice:\n%s%s", progress.String(), out)
	}
	o.Holdout = []TraceInput{steady()}
	if out, err = SearchCheapest(context.Background(), o, build, &progress); err != nil || !strings.Contains(out, "it holds on all 1 part(s)") {
		t.Fatalf("steady held-out traffic: %v\n%s", err, out)
	}
}
