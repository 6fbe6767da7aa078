package capacity

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/models"
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

func inputs(q int, s, tTotal, buffer float64) Inputs {
	return Inputs{
		QMax: q, TTotalS: tTotal, SurgeRatio: s, DetectionBufferS: buffer,
		Throughput: linear(1, 1, float64(q), float64(2*q)), CloudWatchRatio: 1,
		MetricPeriodS: 10, EvaluationPeriods: 3, PeakRPS: 100, TroughRPS: 10,
		MinInstances: 1, MaxInstances: 100, QueueMaxDepth: q, InvocationTimeoutS: 60,
	}
}

func TestDeriveThresholdsAndCooldowns(t *testing.T) {
	tests := []struct {
		name                  string
		q                     int
		s, tTotal, buffer     float64
		cMax, cMin, tPlan     float64
		out, in, smallestSafe int
	}{
		{"design example", 50, 1.25, 240, 60, 37.5, 25, 300, 30, 900, 3},
		{"kokoro fixture", 40, 1.25, 280.8, 60, 30, 20, 340.8, 30, 1023, 3},
		{"no headroom", 40, 1, 100, 60, 40, 40, 160, 30, 480, 0},
		{"small headroom", 50, 1.1, 100, 0, 45, 40, 100, 30, 300, 9},
		{"short T_plan floors the scale-out cooldown", 10, 1.2, 5, 0, 8, 6, 5, 10, 300, 4},
		{"mid T_plan halves", 10, 1.2, 30, 0, 8, 6, 30, 15, 300, 4},
		{"fractional cooldown rounds up", 10, 1.2, 20.5, 2, 8, 6, 22.5, 12, 300, 4},
		{"largest headroom", 10, 1.49, 100, 60, 5.1, 0.2, 160, 30, 480, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := derive(inputs(tt.q, tt.s, tt.tTotal, tt.buffer))
			approx(t, "c_scale_max", d.CScaleMax, tt.cMax)
			approx(t, "c_scale_min", d.CScaleMin, tt.cMin)
			approx(t, "t_plan_s", d.TPlanS, tt.tPlan)
			if d.ScaleOutCooldownS != tt.out || d.ScaleInCooldownS != tt.in {
				t.Errorf("cooldowns = %d/%d s, want %d/%d", d.ScaleOutCooldownS, d.ScaleInCooldownS, tt.out, tt.in)
			}
			if d.SmallestSafeMinInstances != tt.smallestSafe {
				t.Errorf("smallest safe minimum = %d, want %d", d.SmallestSafeMinInstances, tt.smallestSafe)
			}
			approx(t, "target_value", d.TargetValue, tt.cMax)
		})
	}
}

func approx(t *testing.T, name string, got, want float64) {
	t.Helper()
	if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
		t.Errorf("%s = %v, want %v", name, got, want)
	}
}

func TestTargetValueScalesWithCloudWatchRatio(t *testing.T) {
	in := inputs(50, 1.25, 240, 60)
	in.CloudWatchRatio = 0.9
	d := derive(in)
	approx(t, "target_value", d.TargetValue, 37.5*0.9)
	approx(t, "scale_in_threshold", d.ScaleInThreshold, 25*0.9)
}

// A server that handles one request at a time: 0.1 s of service, 10 rps however many requests wait. Q_max
// is 30 (TTFAB ≈ C × 0.1 s under a 3 s SLO). Sizing from C_scale_max ÷ service time would claim 225 rps per
// instance and one instance for 100 rps; the measured throughput says ten.
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
	approx(t, "throughput_rps", p.Derived.ThroughputRPS, 10)
	naive := int(math.Ceil(100 / (p.Derived.CScaleMax / (q.ServiceTimeMeanMs / 1000))))
	if p.Derived.MaxInstances != 10 || naive != 1 {
		t.Fatalf("max_instances = %d (naive C÷service-time sizing %d), want 10", p.Derived.MaxInstances, naive)
	}
	// With the catalog's 9 instances the peak is not covered, and the finding names the fleet needed.
	o.MaxInstances = 9
	p, err = FromArtifacts(m, testMeasurement(q, testTTotal(m)), o)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := p.Finding(FindingPeakCoverage)
	if f.Status != StatusFail || !strings.Contains(f.Recommendation, "10") || p.Feasible() {
		t.Fatalf("peak_coverage = %+v, verdict %s; want a fail naming 10 instances and an infeasible plan", f, p.Verdict)
	}
}

func TestThroughputFallsBackToLittlesLaw(t *testing.T) {
	s := QMaxStep{Concurrency: 20, ResponseMeanMs: 2500}
	approx(t, "throughput", s.Throughput(), 8)
	s.AchievedRPS = 7.5
	approx(t, "throughput", s.Throughput(), 7.5)
}

func TestThroughputInterpolationAndInverse(t *testing.T) {
	pts := []ThroughputPoint{{10, 10}, {20, 15}, {30, 15}}
	for _, tt := range []struct{ c, x float64 }{{0, 0}, {5, 5}, {10, 10}, {15, 12.5}, {25, 15}, {60, 15}} {
		approx(t, "throughputAt", throughputAt(pts, tt.c), tt.x)
	}
	for _, tt := range []struct{ x, c float64 }{{0, 0}, {5, 5}, {12.5, 15}, {15, 20}} {
		approx(t, "concurrencyFor", concurrencyFor(pts, tt.x), tt.c)
	}
	if c := concurrencyFor(pts, 15.01); !math.IsInf(c, 1) {
		t.Fatalf("concurrencyFor above the saturated rate = %v, want +Inf", c)
	}
}

func TestScaleInSafety(t *testing.T) {
	tests := []struct {
		name   string
		s      float64
		min    int
		status Status
		detail string
	}{
		{"minimum 1 goes back to Q_max", 1.25, 1, StatusWarn, "back at Q_max"},
		{"minimum 2 lands on the threshold", 1.25, 2, StatusWarn, "smallest safe minimum is 3"},
		{"smallest safe minimum", 1.25, 3, StatusPass, "smallest safe minimum is 3"},
		{"small headroom breaks the SLO", 1.1, 1, StatusFail, "break the SLO"},
		{"no headroom", 1, 5, StatusFail, "no minimum is safe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inputs(50, tt.s, 240, 60)
			in.MinInstances = tt.min
			f := scaleInSafety(in, derive(in))
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
	for _, tt := range []struct {
		depth  int
		status Status
	}{{20, StatusFail}, {37, StatusFail}, {38, StatusWarn}, {49, StatusWarn}, {50, StatusPass}, {100, StatusPass}, {101, StatusWarn}} {
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
		// Constant response time: concurrency is proportional to load, and the headroom h = s − 1 absorbs
		// growth by s within T_plan.
		{"constant response time survives", func(in *Inputs) {}, StatusPass, "peaks at"},
		// Throughput flat above C_scale_max: any growth past the threshold queues without bound before the
		// new instance serves.
		{"saturated instance fails", func(in *Inputs) {
			in.Throughput = []ThroughputPoint{{10, 10}, {37.5, 37.5}, {100, 37.6}}
		}, StatusFail, "above Q_max"},
		// A detection buffer shorter than the alarm's own 3 × 10 s lets load outgrow the headroom.
		{"detection buffer too short fails", func(in *Inputs) { in.TTotalS = 30; in.DetectionBufferS = 0 }, StatusFail, "above Q_max"},
		{"slow start-up with the same surge per T_plan survives", func(in *Inputs) { in.TTotalS = 900 }, StatusPass, "peaks at"},
		{"capped fleet fails at its maximum", func(in *Inputs) { in.MaxInstances = 2 }, StatusFail, "above Q_max"},
		{"no growth stays put", func(in *Inputs) { in.SurgeRatio = 1 }, StatusPass, "after 0 scale-out(s)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := inputs(50, 1.25, 240, 60)
			in.Throughput = linear(1, 1, 50, 100)
			in.PeakRPS, in.TroughRPS = 400, 20
			tt.mutate(&in)
			d := derive(in)
			f := surgeSurvival(in, d)
			if f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) {
				t.Fatalf("got %s: %s; want %s containing %q", f.Status, f.Detail, tt.status, tt.detail)
			}
			if again := surgeSurvival(in, d); again != f {
				t.Fatal("the simulation is not deterministic")
			}
		})
	}
}

func TestSurgeSimulationScalesOutToThePeak(t *testing.T) {
	in := inputs(50, 1.25, 240, 60)
	in.Throughput = linear(1, 1, 50, 100)
	in.PeakRPS, in.TroughRPS = 400, 20
	d := derive(in)
	r := simulateSurge(in, d)
	if r.BreachAtS >= 0 {
		t.Fatalf("breach at %v s", r.BreachAtS)
	}
	// 400 rps at 37.5 rps per instance needs 11 instances; the trough needs 1.
	if r.StartInstances != 1 || r.FinalInstances != 11 || d.MaxInstances != 11 {
		t.Fatalf("fleet %d → %d (max %d), want 1 → 11", r.StartInstances, r.FinalInstances, d.MaxInstances)
	}
	if r.PeakConcurrency <= d.CScaleMax || r.PeakConcurrency > 50 {
		t.Fatalf("peak concurrency %v: want above C_scale_max %v (the fleet lags the surge) and at most Q_max", r.PeakConcurrency, d.CScaleMax)
	}
	approx(t, "serve delay", r.ServeDelayS, d.TPlanS-30)
}

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
	approx(t, "c_scale_max", p.Derived.CScaleMax, 37.5)
	approx(t, "throughput at Q_max", p.Derived.ThroughputAtQMaxRPS, 50) // constant response time by default
	// Default trough: the minimum fleet (1) at C_scale_min 25 delivers 25 rps.
	approx(t, "trough", p.Inputs.TroughRPS, 25)
	if p.Derived.MaxInstances != 3 {
		t.Fatalf("max_instances = %d, want ceil(100/37.5) = 3", p.Derived.MaxInstances)
	}
	if errs := p.Verify(); len(errs) > 0 {
		t.Fatalf("what-if plan does not verify: %v", errs)
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
// scale in. Issue 8: --surge 1.4999999999 gave a threshold of 0 and a feasible plan.
func TestScaleInThresholdThatRoundsToZeroFails(t *testing.T) {
	m := kokoro(t)
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS, o.SurgeRatio = 80, 10, 1.4999999999
	p, err := FromWhatIf(m, WhatIf{QMax: 40, TTotalS: 280, ThroughputRPS: 13.6}, o)
	if err != nil {
		t.Fatal(err)
	}
	f, _ := p.Finding(FindingScaleInSafety)
	if p.Feasible() || f.Status != StatusFail || !strings.Contains(f.Detail, "renders (three decimals) as 0") ||
		!strings.Contains(f.Detail, "surge ratio 1.4999999999") {
		t.Fatalf("verdict %s, scale_in_safety %+v", p.Verdict, f)
	}
	if got := ScalingSpecFor("e", "v", p).Alarms[0].Threshold; got != 0 {
		t.Fatalf("the rendered threshold is %g, the test's premise is 0", got)
	}
	if errs := p.Verify(); len(errs) > 0 {
		t.Fatalf("the infeasible plan must still verify: %v", errs)
	}
	o.SurgeRatio = 1.4994 // C_scale_min 0.024: renders as 0.024, fires only on an idle instance but fires
	if p, err = FromWhatIf(m, WhatIf{QMax: 40, TTotalS: 280, ThroughputRPS: 13.6}, o); err != nil {
		t.Fatal(err)
	}
	if f, _ := p.Finding(FindingScaleInSafety); f.Status == StatusFail && strings.Contains(f.Detail, "renders") {
		t.Fatalf("a threshold that renders above 0 was failed for rounding: %+v", f)
	}
}

func TestPlanInputBoundsStateTheLimit(t *testing.T) {
	base := Inputs{QMax: 40, TTotalS: 280, SurgeRatio: 1.25, DetectionBufferS: 60, MetricPeriodS: 10, EvaluationPeriods: 3,
		PeakRPS: 80, TroughRPS: 10, MinInstances: 1, MaxInstances: 9, QueueMaxDepth: 50, InvocationTimeoutS: 60, CloudWatchRatio: 1,
		Throughput: []ThroughputPoint{{30, 13.6}, {40, 18}}}
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
		{"surge at the limit", func(in *Inputs) { in.SurgeRatio = 1.5 }, "surge_ratio: is 1.5: want a ratio in [1, 1.5)"},
		{"surge NaN", func(in *Inputs) { in.SurgeRatio = math.NaN() }, "surge_ratio: is NaN"},
		{"t_total Inf", func(in *Inputs) { in.TTotalS = math.Inf(1) }, "t_total_s: is +Inf: want a number of seconds in (0, 86400]"},
		{"queue depth huge", func(in *Inputs) { in.QueueMaxDepth = 1 << 40 }, "queue_max_depth: is 1099511627776: want 1 to 100000"},
		{"invocation timeout above SageMaker's", func(in *Inputs) { in.InvocationTimeoutS = 3601 }, "invocation_timeout_s: is 3601: want 1 to 3600 seconds"},
		{"min instances huge", func(in *Inputs) { in.MinInstances, in.MaxInstances = 1<<40, 1<<40 }, "min_instances: is 1099511627776: want 1 to 100000"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			in.Throughput = append([]ThroughputPoint(nil), base.Throughput...)
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
	o.SurgeRatio = 1.5
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
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := build(tt.mutate)
			f, ok := p.Finding(tt.finding)
			if !ok || f.Status != tt.status || !strings.Contains(f.Detail, tt.detail) {
				t.Fatalf("%s = %+v, want %s containing %q", tt.finding, f, tt.status, tt.detail)
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
