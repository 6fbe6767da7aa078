package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/loadmodel"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

func kokoro(t *testing.T) models.Model {
	t.Helper()
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// linear is a throughput curve with a constant response time: rps = c ÷ respS.
func linear(respS float64, cs ...float64) []ThroughputPoint {
	var pts []ThroughputPoint
	for _, c := range cs {
		pts = append(pts, ThroughputPoint{Concurrency: c, RPS: c / respS})
	}
	return pts
}

// testInstance is the instance model of the test rate staircase (testRates) with the kokoro catalog's shield
// of 50 (as QMax.InstanceModel builds it, see TestInstanceModelFromRateSteps): the highest point that meets the
// 3000 ms SLO bounds the safe rate at testSafeRPS, its rate's 95% lower bound.
func testInstance() loadmodel.Model {
	m := loadmodel.Model{CapacityRPS: 22.5, QueueDepth: 50, CloudWatchRatio: 1, Measured: true, Basis: "measured: test staircase",
		SLO: loadmodel.SLO{TTFABMs: 3000, Percentile: 95, StallMs: 50}}
	for _, r := range testRates[:4] {
		m.Points = append(m.Points, loadmodel.Point{RPS: r.achieved, RPSLow: loadmodel.RateLowerBound(int(r.achieved*120), 120, 0.95),
			Metric: r.max10s, InFlight: r.inFlight, TTFABMs: r.p95, StallMs: 30})
	}
	return m
}

func inputs(q int, s, tTotal, buffer float64) Inputs {
	return Inputs{
		QMax: q, TTotalS: tTotal, SurgeRatio: s, DetectionBufferS: buffer,
		Throughput: linear(1, 1, float64(q), float64(2*q)), CloudWatchRatio: 1, Instance: testInstance(), ScaleInMargin: DefaultScaleInMargin, HoverAmplitude: DefaultHoverAmplitude,
		MetricPeriodS: 10, EvaluationPeriods: 3, PeakRPS: 100, TroughRPS: 10,
		MinInstances: 1, MaxInstances: 100, QueueMaxDepth: q, InvocationTimeoutS: 60,
	}
}

func TestDeriveThresholdsAndCooldowns(t *testing.T) {
	tests := []struct {
		name              string
		q                 int
		s, tTotal, buffer float64
		cMax, cMin, tPlan float64
		out, in, evals    int
	}{
		{"design example", 50, 1.25, 240, 60, 37.5, 25, 300, 30, 900, 30},
		{"kokoro fixture", 40, 1.25, 280.8, 60, 30, 20, 340.8, 30, 1023, 35},
		{"no headroom", 40, 1, 100, 60, 40, 40, 160, 30, 480, 16},
		{"small headroom", 50, 1.1, 100, 0, 45, 40, 100, 30, 300, 10},
		{"short T_plan floors the scale-out cooldown and the scale-in window", 10, 1.2, 5, 0, 8, 6, 5, 10, 300, 3},
		{"mid T_plan halves", 10, 1.2, 30, 0, 8, 6, 30, 15, 300, 3},
		{"fractional cooldown rounds up", 10, 1.2, 20.5, 2, 8, 6, 22.5, 12, 300, 3},
		{"largest headroom", 10, 1.49, 100, 60, 5.1, 0.2, 160, 30, 480, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := derive(inputs(tt.q, tt.s, tt.tTotal, tt.buffer))
			// The original's thresholds, kept for comparison only.
			approx(t, "c_scale_max", d.CScaleMax, tt.cMax)
			approx(t, "c_scale_min", d.CScaleMin, tt.cMin)
			approx(t, "t_plan_s", d.TPlanS, tt.tPlan)
			if d.ScaleOutCooldownS != tt.out || d.ScaleInCooldownS != tt.in {
				t.Errorf("cooldowns = %d/%d s, want %d/%d", d.ScaleOutCooldownS, d.ScaleInCooldownS, tt.out, tt.in)
			}
			// The scale-in alarm's window (10-s periods) is at least T_plan and at least 3 periods.
			if d.ScaleInPeriodS != 10 || d.ScaleInEvaluationPeriods != tt.evals {
				t.Errorf("scale-in window = %d × %d s, want %d × 10 s", d.ScaleInEvaluationPeriods, d.ScaleInPeriodS, tt.evals)
			}
			// The rates do not depend on Q_max or T_plan: safe rate ÷ s.
			approxTol(t, "safe_rps", d.SafeRPS, testSafeRPS, 1e-4)
			approxTol(t, "scale_out_rps", d.ScaleOutRPS, testSafeRPS/tt.s, 1e-4)
		})
	}
}

func approx(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func approxTol(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v (± %g)", name, got, want, tol)
	}
}

// The deployed values in rate terms, worked by hand from the test staircase (testRates): the SLO holds up to
// the highest measured point that met it, 21 rps, and the safe rate is that rate's 95% lower bound, testSafeRPS
// = 20.3167 (2520 completions in 120 s); ÷ 1.25 is the scale-out rate 16.2533, whose metric (between 12.5 rps
// → 4 and 17.4 → 8) is 4 + 4 × 3.7533/4.9 = 7.0640; the scale-in rate is 16.2533 × 1/2 × (1 − 0.2) = 6.5013,
// metric (below the first point, 7.5 → 2, through the origin) 2 × 6.5013/7.5 = 1.7337; peak 100 rps needs
// ceil(100 / 16.2533) = 7 instances.
func TestDeriveInRateTerms(t *testing.T) {
	in := inputs(50, 1.25, 240, 60)
	d := derive(in)
	const tol = 1e-3
	out := testSafeRPS / 1.25
	approxTol(t, "safe_rps", d.SafeRPS, testSafeRPS, tol)
	approxTol(t, "scale_out_rps", d.ScaleOutRPS, out, tol)
	approxTol(t, "target_value", d.TargetValue, 4+4*(out-12.5)/4.9, tol)
	approxTol(t, "scale_in_rps", d.ScaleInRPS, out*0.5*0.8, tol)
	approxTol(t, "scale_in_threshold", d.ScaleInThreshold, 2*out*0.5*0.8/7.5, tol)
	if d.MaxInstances != 7 || d.MinInstances != 1 || d.QueueMaxDepth != 50 {
		t.Errorf("fleet %d to %d, queue %d; want 1 to 7, queue 50", d.MinInstances, d.MaxInstances, d.QueueMaxDepth)
	}
	// A larger minimum allows a later scale-in: survivors of n → n−1 carry n/(n−1) ≤ (min+1)/min of it.
	in.MinInstances = 3
	d3 := derive(in)
	approxTol(t, "scale_in_rps (min 3)", d3.ScaleInRPS, out*3/4*0.8, tol)
	// Every deployed value carries one line of reasoning that states it.
	want := []string{"safe_rps", "scale_out_rps", "target_value", "scale_in_rps", "scale_in_threshold", "scale_in_evaluation_periods",
		"max_instances", "t_plan_s", "scale_out_cooldown_s", "scale_in_cooldown_s", "queue_max_depth"}
	got := map[string]Reason{}
	for _, r := range d.Reasoning {
		got[r.Field] = r
	}
	for _, f := range want {
		r, ok := got[f]
		if !ok || r.Value == "" || r.Why == "" {
			t.Errorf("reasoning for %s = %+v, want a value and a why", f, r)
		}
	}
	if r := got["target_value"]; r.Value != FormatNumber(d.TargetValue) || !strings.Contains(r.Why, FormatNumber(d.ScaleOutRPS)) {
		t.Errorf("target_value reasoning %+v does not state the value and the scale-out rate", r)
	}
}

// The CloudWatch/client ratio reaches the thresholds through the instance model: a staircase whose metric
// was not read from CloudWatch is the client's 10-s peak × the ratio, so the rates stay and the metric values
// scale; a metric read from CloudWatch is taken as it is.
func TestTargetValueScalesWithCloudWatchRatio(t *testing.T) {
	m := kokoro(t)
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 50, 10
	build := func(edit func(q *QMax)) *Plan {
		t.Helper()
		q := testQMax(m)
		edit(q)
		if errs := q.Verify(); len(errs) > 0 {
			t.Fatalf("test artifact does not verify: %v", errs)
		}
		p, err := FromArtifacts(m, testMeasurement(q, testTTotal(m)), o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	base := build(func(*QMax) {})
	ratio := func(r float64) func(q *QMax) {
		return func(q *QMax) {
			for i := range q.Steps {
				q.Steps[i].CloudWatchRatio = r
				q.Steps[i].CloudWatchConcurrencyMax = r * float64(q.Steps[i].Concurrency)
			}
		}
	}
	scaled := build(ratio(0.9))
	approx(t, "cloudwatch_ratio", scaled.Inputs.CloudWatchRatio, 0.9)
	approx(t, "scale_out_rps", scaled.Derived.ScaleOutRPS, base.Derived.ScaleOutRPS)
	approx(t, "target_value", scaled.Derived.TargetValue, 0.9*base.Derived.TargetValue)
	approx(t, "scale_in_threshold", scaled.Derived.ScaleInThreshold, 0.9*base.Derived.ScaleInThreshold)
	approxTol(t, "target_value", base.Derived.TargetValue, 4+4*(testSafeRPS/1.25-12.5)/4.9, 1e-3)

	read := build(func(q *QMax) {
		ratio(0.9)(q)
		for i := range q.RateSteps {
			q.RateSteps[i].CloudWatchMax10s = 2 * q.RateSteps[i].InFlightMax10s
		}
	})
	approx(t, "target_value from CloudWatch", read.Derived.TargetValue, 2*base.Derived.TargetValue)
}

// A server that handles one request at a time: 0.1 s of service, 10 rps however many requests wait. Q_max
// is 30 (TTFAB ≈ C × 0.1 s under a 3 s SLO). Sizing from C_scale_max ÷ service time would claim 225 rps per
// instance and one instance for 100 rps. Its rate staircase (M/M/1 at μ = 10: in flight 0.43, 1, 2.33, 5.67
// at 30–85%; at 100% it completes 9.3 of 10 and falls behind, so its capacity is the open loop's 9.4 rps) puts
// the estimate at the highest step that met the SLO, 8.5 rps (TTFAB 700 ms; interpolated toward a full shield,
// never measured, it would cross 3 s later), and the safe rate at that step's 95% lower bound, 1000 completions
// in 117.6 s: 8.0628 rps; ÷ 1.25 = 6.45 rps per instance, so 100 rps needs ceil(15.5) = 16.
func TestSaturatingServerIsSizedFromMeasuredThroughput(t *testing.T) {
	m := kokoro(t)
	q := testQMax(m)
	q.Steps = nil
	for _, c := range []int{1, 5, 10, 20, 30, 40} {
		ttfab := float64(c) * 100
		q.Steps = append(q.Steps, QMaxStep{
			Concurrency: c, OKCount: 600, TTFABP50Ms: ttfab * 0.9, TTFABP95Ms: ttfab, TTFABP99Ms: ttfab * 1.05,
			ResponseMeanMs: float64(c) * 100, AchievedRPS: 10, ClientConcurrencyMean: float64(c), ClientConcurrencyPeak: c,
			MeetsSLO: ttfab <= 3000, Usable: true,
		})
	}
	q.QMax, q.BracketHighestPass, q.BracketLowestFail, q.ServiceTimeMeanMs = 30, 30, 40, 100
	q.HighestThroughputRPS = 10
	q.RateSteps = nil
	for _, r := range []testRate{
		{0.3, 3, 3, 3.0 / 7, 2, 150},
		{0.5, 5, 5, 1, 3, 200},
		{0.7, 7, 7, 7.0 / 3, 6, 350},
		{0.85, 8.5, 8.5, 17.0 / 3, 12, 700},
		{1.0, 10, 9.3, 25, 40, 4000},
		{1.1, 11, 9.4, 45, 50, 8000},
	} {
		q.RateSteps = append(q.RateSteps, RateStep{Fraction: r.fraction, OfferedRPS: r.fraction * 10, ArrivalRPS: r.arrival, AchievedRPS: r.achieved,
			InFlightMean: r.inFlight, InFlightMax10s: r.max10s, TTFABP50Ms: r.p95 / 2, TTFABP95Ms: r.p95, TTFABP99Ms: r.p95 * 1.1,
			OKCount: 1000, MeetsSLO: r.p95 <= 3000, Usable: true})
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("test artifact does not verify: %v", errs)
	}
	o := DefaultOptions(m)
	o.PeakRPS, o.MaxInstances = 100, 20
	p, err := FromArtifacts(m, testMeasurement(q, testTTotal(m)), o)
	if err != nil {
		t.Fatal(err)
	}
	approx(t, "c_scale_max", p.Derived.CScaleMax, 22.5)
	approx(t, "capacity", p.Inputs.Instance.CapacityRPS, 9.4)
	approxTol(t, "safe_rps", p.Derived.SafeRPS, 8.0628, 1e-4)
	naive := int(math.Ceil(100 / (p.Derived.CScaleMax / (q.ServiceTimeMeanMs / 1000))))
	if p.Derived.MaxInstances != 16 || naive != 1 {
		t.Fatalf("max_instances = %d (naive C÷service-time sizing %d), want 16", p.Derived.MaxInstances, naive)
	}
	// With the catalog's 9 instances the peak is not covered, and the finding names the fleet needed.
	o.MaxInstances = 9
	p, err = FromArtifacts(m, testMeasurement(q, testTTotal(m)), o)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := p.Finding(FindingPeakCoverage)
	if f.Status != StatusFail || !strings.Contains(f.Recommendation, "16") || p.Feasible() {
		t.Fatalf("peak_coverage = %+v, verdict %s; want a fail naming 16 instances and an infeasible plan", f, p.Verdict)
	}
}

func TestThroughputFallsBackToLittlesLaw(t *testing.T) {
	s := QMaxStep{Concurrency: 20, ResponseMeanMs: 2500}
	approx(t, "throughput", s.Throughput(), 8)
	s.AchievedRPS = 7.5
	approx(t, "throughput", s.Throughput(), 7.5)
}

func TestThroughputInterpolation(t *testing.T) {
	pts := []ThroughputPoint{{10, 10}, {20, 15}, {30, 15}}
	for _, tt := range []struct{ c, x float64 }{{0, 0}, {5, 5}, {10, 10}, {15, 12.5}, {25, 15}, {60, 15}} {
		approx(t, "throughputAt", throughputAt(pts, tt.c), tt.x)
	}
}

func TestScaleInSafety(t *testing.T) {
	hover := func(flaps int) Envelope {
		e := Envelope{SimulatorVersion: "test", Traces: []EnvelopeTrace{{Kind: EnvelopeDiurnal, Name: "day", Holds: true}}}
		tr := EnvelopeTrace{Kind: EnvelopeHover, Name: "hover around 16.53 rps", Flaps: flaps, Holds: flaps == 0}
		if flaps > 0 {
			tr.Worst = "scale-in at 400 s followed by a scale-out at 450 s, within T_plan 300 s"
		}
		return Envelope{SimulatorVersion: e.SimulatorVersion, Traces: append(e.Traces, tr)}
	}
	tests := []struct {
		name   string
		edit   func(in *Inputs, d *Derived)
		env    Envelope
		status Status
		detail string
	}{
		{"survivors below the scale-out rate, no flap", func(*Inputs, *Derived) {}, hover(0), StatusPass, "0 flap(s)"},
		{"a hover trace flaps", func(*Inputs, *Derived) {}, hover(1), StatusFail, "does not hold: scale-in at 400 s"},
		{"scale-in rate too close to the scale-out rate", func(_ *Inputs, d *Derived) { d.ScaleInRPS = 0.9 * d.ScaleOutRPS }, hover(0), StatusFail,
			"a scale-in would put the survivors above the scale-out rate"},
		{"threshold renders as 0", func(_ *Inputs, d *Derived) { d.ScaleInThreshold = 0.0004 }, hover(0), StatusFail, "renders (three decimals) as 0"},
		{"a fixed fleet never scales in", func(_ *Inputs, d *Derived) { d.MaxInstances = d.MinInstances }, hover(1), StatusPass, "never scales in"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inputs(50, 1.25, 240, 60)
			d := derive(in)
			tt.edit(&in, &d)
			f := scaleInSafety(in, d, tt.env)
			if f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) {
				t.Fatalf("got %s: %s; want %s containing %q", f.Status, f.Detail, tt.status, tt.detail)
			}
			if f.Status != StatusPass && f.Recommendation == "" {
				t.Fatal("a warn or fail must recommend something")
			}
		})
	}
}

func TestQueueDepth(t *testing.T) {
	// The scale-out target is 7.51 (TestDeriveInRateTerms): a shield shallower than that keeps the metric
	// from ever reaching it.
	for _, tt := range []struct {
		depth  int
		status Status
	}{{5, StatusFail}, {7, StatusFail}, {8, StatusWarn}, {49, StatusWarn}, {50, StatusPass}, {100, StatusPass}, {101, StatusWarn}} {
		in := inputs(50, 1.25, 240, 60)
		in.QueueMaxDepth = tt.depth
		if f := queueDepth(in, derive(in)); f.Status != tt.status {
			t.Errorf("queue depth %d vs Q_max 50: %s (%s), want %s", tt.depth, f.Status, f.Detail, tt.status)
		}
	}
}

func TestInvocationTimeout(t *testing.T) {
	for _, tt := range []struct {
		respS  float64
		status Status
	}{{2, StatusPass}, {40, StatusWarn}, {60, StatusFail}, {90, StatusFail}} {
		in := inputs(50, 1.25, 240, 60)
		in.Throughput = linear(tt.respS, 1, 50)
		if f := invocationTimeout(in, derive(in)); f.Status != tt.status {
			t.Errorf("response %v s vs 60 s limit: %s, want %s", tt.respS, f.Status, tt.status)
		}
	}
}

func TestSurgeSurvival(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Inputs)
		status Status
		detail string
	}{
		// Growth by s per T_plan from 10 to 80 rps: the fleet scales out at safe ÷ s and each new instance
		// serves within T_plan, before the load has grown past the safe rate.
		{"growth by s per T_plan survives", func(in *Inputs) {}, StatusPass, "0 violation minute(s)"},
		{"slow start-up with the same surge per T_plan survives", func(in *Inputs) { in.TTotalS = 900 }, StatusPass, "0 violation minute(s)"},
		// Without a detection buffer T_plan is T_total alone, but the alarm needs 3 × 10 s of breaching
		// datapoints first: with T_total 30 s the staircase's jump outgrows the fleet while the new instance
		// still starts.
		{"detection buffer too short fails", func(in *Inputs) { in.TTotalS = 30; in.DetectionBufferS = 0 }, StatusFail, "instance(s) still starting"},
		{"capped fleet fails at its maximum", func(in *Inputs) { in.MaxInstances = 2 }, StatusFail, "the fleet is at its maximum of 2 instance(s)"},
		// A large fleet growing 25% per T_plan: while instances start the endpoint is Updating and nothing
		// more is added, and target tracking adds ceil(n × metric ÷ target) − n, one instance when the metric
		// is just above the target: from 30 instances that is 3% while the load grows 20% over T_total.
		{"a large fleet falls behind while instances start", func(in *Inputs) { in.PeakRPS, in.TroughRPS = 800, 20 }, StatusFail, "instance(s) still starting"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inputs(50, 1.25, 240, 60)
			in.PeakRPS, in.TroughRPS = 80, 10
			tt.mutate(&in)
			d := derive(in)
			e := envelopeOf(t, in, d)
			f := surgeSurvival(in, d, e)
			if f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) {
				t.Fatalf("got %s: %s; want %s containing %q", f.Status, f.Detail, tt.status, tt.detail)
			}
			if f.Status == StatusFail && (f.Recommendation == "" || envelopeFinding(e).Status != StatusFail) {
				t.Fatalf("a failed growth trace must recommend something and fail the envelope: %+v", f)
			}
			if again := surgeSurvival(in, d, envelopeOf(t, in, d)); again != f {
				t.Fatal("the simulation is not deterministic")
			}
		})
	}
}

// The growth trace from 10 to 80 rps: the fleet starts where target tracking leaves 10 rps (one instance
// reads metric 3 there, below the target 9.38), scales out to carry the peak within the safe rate, and every
// added instance serves T_total after the decision.
func TestSurgeSimulationScalesOutToThePeak(t *testing.T) {
	in := inputs(50, 1.25, 240, 60)
	in.PeakRPS, in.TroughRPS = 80, 10
	d := derive(in)
	if d.MaxInstances != 5 {
		t.Fatalf("max_instances = %d, want ceil(80 / 18.36) = 5", d.MaxInstances)
	}
	traces, err := envelopeTraces(in, d)
	if err != nil {
		t.Fatal(err)
	}
	var growth envelopeTrace
	for _, tr := range traces {
		if tr.kind == EnvelopeGrowth {
			growth = tr
		}
	}
	r := simulate.Run(growth.trace, PlanFleet("plan", in, d, Fingerprint{Model: "test"}))
	if !r.Holds() {
		t.Fatalf("growth: %d violation minute(s), %d flap(s); worst %+v", r.ViolationMinutes, len(r.Flaps), r.Worst)
	}
	if r.Minutes[0].Serving != 1 {
		t.Fatalf("starts on %d instances, want 1", r.Minutes[0].Serving)
	}
	// At the peak each instance carries at most the safe rate: at least ceil(80 / 22.95) = 4 instances.
	if r.PeakInstances < 4 || r.PeakInstances > 5 {
		t.Fatalf("peak %d instances, want 4 or 5", r.PeakInstances)
	}
	outs := 0
	for _, ev := range r.Events {
		if ev.To > ev.From {
			outs++
			approx(t, "serve delay", ev.ServingAtS-ev.AtS, in.TTotalS)
		}
	}
	if outs == 0 || outs != r.ScaleOuts || r.ScaleIns == 0 {
		t.Fatalf("%d scale-out events, %d counted, %d scale-ins: want scale-outs up and scale-ins back down", outs, r.ScaleOuts, r.ScaleIns)
	}
}

// A what-if plan rests on the queueing approximation, marked NOT MEASURED everywhere it shows; its numbers
// follow from the approximation exactly as a measured plan's follow from the staircase.
func TestWhatIfPlan(t *testing.T) {
	m := kokoro(t)
	w, err := ParseWhatIf("q_max=50, t_total_s=240,throughput_rps=37.5")
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions(m)
	o.PeakRPS = 100
	p, err := FromWhatIf(m, w, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Measured || p.Inputs.QMaxSHA256 != "" {
		t.Fatal("a what-if plan must be measured: false and record no artifacts")
	}
	inst := p.Inputs.Instance
	if inst.Measured || !strings.HasPrefix(inst.Basis, "NOT MEASURED") {
		t.Fatalf("instance model measured %v, basis %q: want NOT MEASURED", inst.Measured, inst.Basis)
	}
	if f, _ := p.Finding(FindingInstanceModel); f.Status != StatusWarn || !strings.Contains(f.Detail, "NOT MEASURED") {
		t.Fatalf("instance_model = %+v, want a warning that says NOT MEASURED", f)
	}
	approx(t, "c_scale_max", p.Derived.CScaleMax, 37.5)
	approx(t, "throughput at Q_max", p.Derived.ThroughputAtQMaxRPS, 37.5) // one server: as much at Q_max as at C_scale_max
	approx(t, "capacity", inst.CapacityRPS, 37.5)
	d := p.Derived
	if d.SafeRPS > 0.9*37.5*(1+1e-12) {
		t.Fatalf("safe_rps %g is above 0.9 of the capacity 37.5 rps", d.SafeRPS)
	}
	approx(t, "scale_out_rps", d.ScaleOutRPS, d.SafeRPS/1.25)
	// Default trough: the minimum fleet (1) at the scale-in rate.
	approx(t, "trough", p.Inputs.TroughRPS, d.ScaleInRPS)
	if want := int(math.Ceil(100 / d.ScaleOutRPS)); d.MaxInstances != want {
		t.Fatalf("max_instances = %d, want ceil(100/%g) = %d", d.MaxInstances, d.ScaleOutRPS, want)
	}
	if errs := p.Verify(); len(errs) > 0 {
		t.Fatalf("what-if plan does not verify: %v", errs)
	}
}

// A what-if plan from the published Kokoro-g5 figures (Q_max 50, 16.3 rps: 61.3 ms a request, one at a time)
// never calls more than 0.9 of the throughput it was given safe, and the fleet it names for a peak is never
// smaller than peak ÷ that throughput: for 5000 rps at least 5000 ÷ 16.3 = 307 instances.
func TestWhatIfFleetCoversPeakAtTheGivenThroughput(t *testing.T) {
	m := kokoro(t)
	w, err := ParseWhatIf("q_max=50,t_total_s=260.2,throughput_rps=16.3")
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions(m)
	o.PeakRPS = 80
	p, err := FromWhatIf(m, w, o)
	if err != nil {
		t.Fatal(err)
	}
	d := p.Derived
	if limit := 0.9 * 16.3; d.SafeRPS > limit*(1+1e-12) || !(d.SafeRPS > 0) {
		t.Errorf("safe_rps = %g, want in (0, 0.9 × 16.3 = 14.67]", d.SafeRPS)
	}
	if least := int(math.Ceil(80 / 16.3)); d.MaxInstances < least {
		t.Errorf("peak 80 rps: max_instances %d, want at least ceil(80 ÷ 16.3) = %d", d.MaxInstances, least)
	}
	// 5000 rps: the fleet the plan names (peak_coverage's count; the catalog caps max_instances at 9).
	in := p.Inputs
	in.PeakRPS = 5000
	d = derive(in)
	f := peakCoverage(in, d)
	need := instancesFor(in.PeakRPS, d.ScaleOutRPS)
	if need < 307 || !strings.Contains(f.Detail, fmt.Sprintf("needs %d instance(s)", need)) {
		t.Fatalf("peak 5000 rps needs %d instances (%s), want at least 5000 ÷ 16.3 = 307", need, f.Detail)
	}
}

func TestParseWhatIfErrors(t *testing.T) {
	for _, tt := range []struct{ spec, want string }{
		{"", "missing q_max, t_total_s, throughput_rps"},
		{"q_max=50,t_total_s=240", "missing throughput_rps"},
		{"q_max=5.5,t_total_s=240,throughput_rps=3", "q_max=5.5: want a whole number"},
		{"q_max=50,t_total_s=-1,throughput_rps=3", "t_total_s=-1: want a number of seconds in (0, 86400]"},
		{"q_max=50,t_total_s=240,throughput_rps=1e300", "throughput_rps=1e300: want a per-instance request rate in (0, 1e+06]"},
		{"q_max=50,t_total_s=240,throughput_rps=3,cloudwatch_ratio=1e-300", "cloudwatch_ratio=1e-300: want a ratio in [0.1, 10]"},
		{"q_max=50,t_total_s=240,throughput_rps=3,cloudwatch_ratio=NaN", "cloudwatch_ratio=NaN: want a ratio in [0.1, 10]"},
		{"q_max=50,t_total_s=Inf,throughput_rps=3", "t_total_s=Inf: want a number of seconds in (0, 86400]"},
		{"q_max=1000000,t_total_s=240,throughput_rps=3", "q_max=1000000: want a whole number of concurrent requests, 1 to 100000"},
		{"q_max=50,t_total_s=240,throughput_rps=3,qmax=2", `unknown key "qmax"`},
		{"q_max=50,t_total_s=240,throughput_rps=3,transport=grpc", "transport=grpc"},
		{"q_max=50,q_max=40,t_total_s=240,throughput_rps=3", "q_max is given twice"},
		{"q_max", "not key=value"},
	} {
		_, err := ParseWhatIf(tt.spec)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("ParseWhatIf(%q) = %v, want an error containing %q", tt.spec, err, tt.want)
		}
	}
}

// A scale-in threshold that the alarm renders as 0 can never be crossed ("below 0"): the fleet would never
// scale in, so such a plan is infeasible (a --surge just under 1.5 rendered it once). The threshold is the
// instance model's metric at the scale-in rate; an instance whose metric is tiny at that rate renders 0 too.
func TestScaleInThresholdThatRoundsToZeroFails(t *testing.T) {
	m := kokoro(t)
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 80, 10
	p, err := FromWhatIf(m, WhatIf{QMax: 40, TTotalS: 280, ThroughputRPS: 13.6}, o)
	if err != nil {
		t.Fatal(err)
	}
	tiny := func(first float64) {
		t.Helper()
		inst := testInstance()
		inst.Points[0].Metric = first // at 7.5 rps; the scale-in rate 8.26 rps reads about first
		inst.Points[1].Metric = first * 1.01
		p.Inputs.Instance = inst
		_ = finish(context.Background(), p, p.Findings[:3])
	}
	tiny(0.0004)
	f, _ := p.Finding(FindingScaleInSafety)
	if p.Feasible() || f.Status != StatusFail || !strings.Contains(f.Detail, "renders (three decimals) as 0") {
		t.Fatalf("verdict %s, scale_in_safety %+v", p.Verdict, f)
	}
	if got := ScalingSpecFor("e", "v", p).Alarms[0].Threshold; got != 0 {
		t.Fatalf("the rendered threshold is %g, the test's premise is 0", got)
	}
	if errs := p.Verify(); len(errs) > 0 {
		t.Fatalf("the infeasible plan must still verify: %v", errs)
	}
	tiny(0.024) // renders as 0.024: fires only on a nearly idle instance, but fires
	if f, _ := p.Finding(FindingScaleInSafety); f.Status == StatusFail && strings.Contains(f.Detail, "renders") {
		t.Fatalf("a threshold that renders above 0 was failed for rounding: %+v", f)
	}
}

func TestPlanInputBoundsStateTheLimit(t *testing.T) {
	base := Inputs{QMax: 40, TTotalS: 280, SurgeRatio: 1.25, DetectionBufferS: 60, MetricPeriodS: 10, EvaluationPeriods: 3,
		PeakRPS: 80, TroughRPS: 10, MinInstances: 1, MaxInstances: 9, QueueMaxDepth: 50, InvocationTimeoutS: 60, CloudWatchRatio: 1,
		Throughput: []ThroughputPoint{{30, 13.6}, {40, 18}}, Instance: testInstance(), HoverAmplitude: DefaultHoverAmplitude}
	if errs := verifyInputs(base); len(errs) > 0 {
		t.Fatalf("base inputs: %v", errs)
	}
	for _, tt := range []struct {
		name string
		edit func(*Inputs)
		want string
	}{
		{"peak 1e300", func(in *Inputs) { in.PeakRPS = 1e300 }, "peak_rps: is 1e+300: want a request rate in (0, 1e+09]"},
		{"cloudwatch ratio 1e-300", func(in *Inputs) { in.CloudWatchRatio = 1e-300 }, "cloudwatch_ratio: is 1e-300: want a ratio in [0.1, 10]"},
		{"throughput 1e300", func(in *Inputs) { in.Throughput[1].RPS = 1e300 }, "throughput[1].rps: is 1e+300: want a per-instance request rate in (0, 1e+06]"},
		{"surge past the limit", func(in *Inputs) { in.SurgeRatio = 10.01 }, "surge_ratio: is 10.01: want a ratio in [1, 10]"},
		{"surge NaN", func(in *Inputs) { in.SurgeRatio = math.NaN() }, "surge_ratio: is NaN"},
		{"t_total Inf", func(in *Inputs) { in.TTotalS = math.Inf(1) }, "t_total_s: is +Inf: want a number of seconds in (0, 86400]"},
		{"queue depth huge", func(in *Inputs) { in.QueueMaxDepth = 1 << 40 }, "queue_max_depth: is 1099511627776: want 1 to 100000"},
		{"invocation timeout above SageMaker's", func(in *Inputs) { in.InvocationTimeoutS = 3601 }, "invocation_timeout_s: is 3601: want 1 to 3600 seconds"},
		{"min instances huge", func(in *Inputs) { in.MinInstances, in.MaxInstances = 1<<40, 1<<40 }, "min_instances: is 1099511627776: want 1 to 100000"},
		{"no instance model", func(in *Inputs) { in.Instance = loadmodel.Model{} }, "instance: points: is empty"},
		{"instance model rates out of order", func(in *Inputs) { in.Instance.Points[1].RPS, in.Instance.Points[1].RPSLow = 1, 0.9 }, "instance: points[1].rps: is 1: want increasing rates above 0"},
		{"scale-in margin at the limit", func(in *Inputs) { in.ScaleInMargin = 0.9 }, "scale_in_margin: is 0.9"},
		{"no hover amplitude", func(in *Inputs) { in.HoverAmplitude = 0 }, "hover_amplitude: is 0: want a share in (0, 0.5]"},
		{"hover amplitude past the limit", func(in *Inputs) { in.HoverAmplitude = 0.6 }, "hover_amplitude: is 0.6"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			in.Throughput = append([]ThroughputPoint(nil), base.Throughput...)
			in.Instance = testInstance()
			tt.edit(&in)
			errs := verifyInputs(in)
			if len(errs) == 0 || !strings.Contains(errors.Join(errs...).Error(), tt.want) {
				t.Fatalf("errs = %v, want one containing %q", errs, tt.want)
			}
		})
	}
}

func TestFromArtifactsRefusesOtherModelsAndBadOptions(t *testing.T) {
	m := kokoro(t)
	q, tt := testQMax(m), testTTotal(m)
	o := DefaultOptions(m)
	o.PeakRPS = 50
	q.Model = "espeak-ng"
	if _, err := FromArtifacts(m, testMeasurement(q, tt), o); err == nil || !strings.Contains(err.Error(), `for model "espeak-ng"`) {
		t.Fatalf("err = %v, want a model mismatch", err)
	}
	q.Model = m.ID
	o.SurgeRatio = 10.5
	if _, err := FromArtifacts(m, testMeasurement(q, tt), o); err == nil || !strings.Contains(err.Error(), "surge_ratio") {
		t.Fatalf("err = %v, want surge_ratio refused", err)
	}
}

func TestMeasurementFindings(t *testing.T) {
	m := kokoro(t)
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 50, 10
	build := func(mutate func(q *QMax, tt *TTotal, ms *Measurement)) *Plan {
		t.Helper()
		q, tt := testQMax(m), testTTotal(m)
		ms := testMeasurement(q, tt)
		mutate(q, tt, &ms)
		p, err := FromArtifacts(m, ms, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	for _, tt := range []struct {
		name    string
		mutate  func(q *QMax, tt *TTotal, ms *Measurement)
		finding string
		status  Status
		detail  string
	}{
		{"live and complete", func(*QMax, *TTotal, *Measurement) {}, FindingMeasurementValidity, StatusPass, "are live"},
		{"dry run warns", func(q *QMax, _ *TTotal, _ *Measurement) { q.DryRun = true }, FindingMeasurementValidity, StatusWarn, "dry run"},
		{"ttotal against another qmax", func(_ *QMax, tt *TTotal, _ *Measurement) { tt.QMaxSHA256 = DigestBytes([]byte("other")) }, FindingMeasurementValidity, StatusFail, "measured against a qmax artifact"},
		{"unusable bracket step", func(q *QMax, _ *TTotal, _ *Measurement) {
			q.Steps[len(q.Steps)-2].Usable, q.Steps[len(q.Steps)-2].UnusableReason = false, "too few samples"
		}, FindingMeasurementValidity, StatusFail, "brackets Q_max"},
		{"no failing step", func(q *QMax, _ *TTotal, _ *Measurement) {
			q.Steps = q.Steps[:len(q.Steps)-1]
			q.BracketLowestFail = 0
		}, FindingMeasurementValidity, StatusWarn, "lower bound"},
		{"other revision", func(q *QMax, _ *TTotal, _ *Measurement) { q.ModelRevision = strings.Repeat("a", 40) }, FindingMeasurementValidity, StatusWarn, "catalog pins"},
		{"SLO changed", func(q *QMax, _ *TTotal, _ *Measurement) { q.SLOTTFABMs = 2000 }, FindingSLOConsistency, StatusFail, "≤ 2000 ms"},
		{"transport differs", func(_ *QMax, tt *TTotal, _ *Measurement) { tt.Transport = TransportHTTP }, FindingTransportConsistency, StatusFail, "ttotal over http"},
		{"no rate staircase", func(q *QMax, _ *TTotal, _ *Measurement) { q.RateSteps, q.HighestThroughputRPS = nil, 0 }, FindingMeasurementValidity, StatusFail, "no rate staircase"},
		{"measured instance model", func(*QMax, *TTotal, *Measurement) {}, FindingInstanceModel, StatusPass, "4 of 6 open-loop rate steps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := build(tt.mutate)
			f, ok := p.Finding(tt.finding)
			if !ok || f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) {
				t.Fatalf("%s = %+v, want %s containing %q", tt.finding, f, tt.status, tt.detail)
			}
			if tt.name == "no rate staircase" {
				if f, _ := p.Finding(FindingInstanceModel); f.Status != StatusWarn || !strings.Contains(f.Detail, "NOT MEASURED") || p.Inputs.Instance.Measured {
					t.Fatalf("instance_model = %+v: want a warning that the model is NOT MEASURED", f)
				}
			}
			if (tt.status == StatusFail) == p.Feasible() {
				t.Fatalf("verdict %s with %s %s", p.Verdict, tt.finding, f.Status)
			}
			if errs := p.Verify(); len(errs) > 0 {
				t.Fatalf("a built plan must verify: %v", errs)
			}
		})
	}
}
