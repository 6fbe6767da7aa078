package capacity

import (
	"context"
	"math"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

func loadValid(t *testing.T) *Plan {
	t.Helper()
	p, err := LoadPlan(fixturePlan("valid"))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// The envelope derived from the valid fixture's inputs: a diurnal day, the growth trace, the staircase, the
// step past the peak, then for each fleet size that can scale in (2 to 7) a fast and a slow hover and a
// sawtooth around n × scale_in_rps, ±15% (the hover amplitude input, not the 20% margin), starting on n.
func TestEnvelopeTraces(t *testing.T) {
	p := loadValid(t)
	in, d := p.Inputs, p.Derived
	if in.HoverAmplitude != DefaultHoverAmplitude || in.ScaleInMargin != DefaultScaleInMargin || d.MinInstances != 1 || d.MaxInstances != 7 {
		t.Fatalf("fixture: hover amplitude %g, margin %g, fleet %d to %d", in.HoverAmplitude, in.ScaleInMargin, d.MinInstances, d.MaxInstances)
	}
	traces, err := envelopeTraces(in, d)
	if err != nil {
		t.Fatal(err)
	}
	boundaries := d.MaxInstances - d.MinInstances
	if len(traces) != 4+3*boundaries {
		t.Fatalf("%d traces, want 4 + 3 × %d", len(traces), boundaries)
	}
	if traces[0].kind != EnvelopeDiurnal || traces[0].trace.Duration != 24*time.Hour || traces[0].trace.Peak() < in.PeakRPS*0.9999 || traces[0].trace.Peak() > in.PeakRPS {
		t.Errorf("first trace %s %s peak %g: want a diurnal day to the peak", traces[0].kind, traces[0].trace.Duration, traces[0].trace.Peak())
	}
	g := traces[1]
	if g.kind != EnvelopeGrowth || g.trace.RateAt(0) < in.TroughRPS || g.trace.Peak() != in.PeakRPS {
		t.Errorf("second trace %s from %g to %g", g.kind, g.trace.RateAt(0), g.trace.Peak())
	}
	// The staircase: 10 rps for T_plan 340.8 s, then ×1.25 at once every T_plan (12.5, 15.625, …) up to the
	// peak 80 (10 × 1.25^9 = 74.5, then 80), held 2 T_plan.
	st, tPlan := traces[2], seconds(d.TPlanS)
	if st.kind != EnvelopeStaircase || len(st.trace.Points) != 11 || st.trace.Duration != 12*tPlan {
		t.Fatalf("third trace %s: %d points over %s, want the staircase: 11 over %s", st.kind, len(st.trace.Points), st.trace.Duration, 12*tPlan)
	}
	for i, pt := range st.trace.Points {
		want := min(in.PeakRPS, in.TroughRPS*math.Pow(in.SurgeRatio, float64(i)))
		if pt.At != time.Duration(i)*tPlan || math.Abs(pt.RPS-want) > 1e-9 {
			t.Errorf("staircase point %d: %g rps at %s, want %g at %s", i, pt.RPS, pt.At, want, time.Duration(i)*tPlan)
		}
	}
	// The step: the peak until 6 min (T_plan rounded up to whole minutes), then 96 rps for 23 min (4 T_plan).
	sp := traces[3]
	if sp.kind != EnvelopeStep || sp.stepAt != 6*time.Minute || sp.trace.RateAt(sp.stepAt-time.Second) != 80 || sp.trace.RateAt(sp.stepAt) != 96 ||
		sp.trace.Duration != 29*time.Minute {
		t.Errorf("fourth trace %s: step at %s from %g to %g, %s long", sp.kind, sp.stepAt, sp.trace.RateAt(0), sp.trace.RateAt(sp.stepAt), sp.trace.Duration)
	}
	slow := time.Duration(HoverSlowPeriodTPlan * float64(tPlan)).Round(time.Second)
	for i, tr := range traces[4:] {
		n := d.MinInstances + 1 + i/3
		center := float64(n) * d.ScaleInRPS
		wantKind, period, dur := EnvelopeHover, HoverFastPeriod, HoverFastPeriods*HoverFastPeriod
		switch i % 3 {
		case 1:
			period, dur = slow, HoverSlowPeriods*slow
		case 2:
			wantKind, period, dur = EnvelopeSawtooth, slow, HoverSlowPeriods*slow
		}
		if tr.kind != wantKind || tr.start != n || tr.trace.Duration < dur || tr.trace.Duration > dur+time.Minute {
			t.Errorf("trace %d: %s starting on %d, %s long; want %s on %d, %s", i+4, tr.kind, tr.start, tr.trace.Duration, wantKind, n, dur)
		}
		// Over whole periods each averages its center and stays within ±15% of it, reaching both ends.
		mean := tr.trace.Requests(0, dur) / dur.Seconds()
		lo := math.Inf(1)
		for _, pt := range tr.trace.Points {
			lo = min(lo, pt.RPS)
		}
		if diff := mean/center - 1; math.Abs(diff) > 0.01 || tr.trace.Peak() > 1.15*center+1e-9 || tr.trace.Peak() < 1.13*center || lo < 0.85*center-1e-9 || lo > 0.87*center {
			t.Errorf("%s %d (period %s): mean %g, from %g to %g: want ±15%% around %g", tr.kind, n, period, mean, lo, tr.trace.Peak(), center)
		}
	}
	// The recorded envelope is this one, simulated: every trace held, the step with no minute to recover.
	if len(p.Envelope.Traces) != len(traces) || !p.Envelope.Holds() || p.Envelope.SimulatorVersion != simulate.Version {
		t.Errorf("recorded envelope %+v", p.Envelope)
	}
	if r := p.Envelope.Traces[3].RecoveryS; r == nil || *r != 0 {
		t.Errorf("step trace recovery %v, want 0", r)
	}
}

// A plan whose thresholds are edited upward no longer verifies (its derived values do not follow from its
// inputs), and the gate says what the edited plan would do: it names the worst minute of the envelope as
// written.
func TestEditedThresholdFailsVerifyAndTheGateNamesTheWorstMinute(t *testing.T) {
	plan := validSet(t)
	editPlan(t, plan, func(p *Plan) {
		// Scale out only at a metric of 49.5, near the full shield's 50: the fleet reacts once the instances
		// are saturated, too late for the SLO.
		p.Derived.TargetValue = 49.5
	})
	p, err := LoadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	errs := p.Verify()
	if len(errs) == 0 || !strings.Contains(errsText(errs), "derived.target_value is 49.5 but the inputs give 32.4257") {
		t.Fatalf("Verify() = %v, want the edited target named", errs)
	}
	env, err := SimulateAsWritten(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if env.Holds() {
		t.Fatal("the edited plan holds its envelope: the test's premise is that a late scale-out violates")
	}
	dec := Gate(fixtureDeployment(t), plan)
	if dec.Enabled || len(dec.Reasons) != 2 {
		t.Fatalf("reasons = %q, want two", dec.Reasons)
	}
	if !strings.Contains(dec.Reasons[0], "does not verify") || !strings.Contains(dec.Reasons[0], "derived.target_value is 49.5") {
		t.Errorf("first reason %q", dec.Reasons[0])
	}
	for _, want := range []string{"as written, does not hold the SLO on its envelope", "violation minute(s), worst minute ", "p95 TTFAB", "(SLO 3000 ms)"} {
		if !strings.Contains(dec.Reasons[1], want) {
			t.Errorf("second reason lacks %q:\n%s", want, dec.Reasons[1])
		}
	}
	// The unedited plan, simulated as written, holds: the gate's extra reason comes from the edit alone.
	if env, err := SimulateAsWritten(context.Background(), loadValid(t)); err != nil || !env.Holds() {
		t.Fatalf("the valid plan as written: %v, holds %v", err, env.Holds())
	}
}

func errsText(errs []error) string {
	var s []string
	for _, e := range errs {
		s = append(s, e.Error())
	}
	return strings.Join(s, "\n")
}

// A plan whose scale-in threshold is edited up to the metric at 90% of the scale-out rate (its scale-in rate
// and window as derived) flaps on the hover traces: the alarm fires well above the scale-in rate, instance after
// instance goes, and the survivors saturate and scale out again within T_plan. That fails scale_in_safety (on
// its flaps: the survivors-below-the-scale-out-rate rule, stated on the scale-in rate, still holds) and the
// envelope, and the verdict is infeasible.
func TestHoverFlapFailsScaleInSafetyAndTheVerdict(t *testing.T) {
	p := loadValid(t)
	d := p.Derived
	d.ScaleInThreshold = p.Inputs.Instance.At(0.9 * d.ScaleOutRPS).Metric
	p.Derived = d
	env, err := SimulateAsWritten(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	flaps := 0
	for _, tr := range env.Traces {
		if tr.Kind == EnvelopeHover || tr.Kind == EnvelopeSawtooth {
			flaps += tr.Flaps
			// The worst is the worst minute when the trace also violated, else the flap.
			if tr.Flaps > 0 && (tr.Holds || tr.Worst == "" || tr.ViolationMinutes == 0 && !strings.Contains(tr.Worst, "followed by a scale-out")) {
				t.Errorf("hover trace %q with %d flap(s): holds %v, worst %q", tr.Name, tr.Flaps, tr.Holds, tr.Worst)
			}
		}
	}
	if flaps == 0 {
		t.Fatalf("no hover trace flapped: %+v", env.Traces)
	}
	fs := modelFindings(p.Inputs, d, env)
	byName := map[string]Finding{}
	for _, f := range fs {
		byName[f.Name] = f
	}
	if f := byName[FindingScaleInSafety]; f.Status != StatusFail || !strings.Contains(f.Detail, strconv.Itoa(flaps)+" flap(s)") || !strings.Contains(f.Detail, " does not hold: ") {
		t.Errorf("scale_in_safety = %+v, want a fail counting %d flap(s)", f, flaps)
	}
	if f := byName[FindingEnvelope]; f.Status != StatusFail || !strings.Contains(f.Detail, "flap") {
		t.Errorf("envelope = %+v, want a fail naming the flap", f)
	}
	if v := verdict(append(p.Findings[:3:3], fs...)); v != VerdictInfeasible {
		t.Errorf("verdict %s with a flapping hover trace", v)
	}
}

// flapping is a user trace that makes a two-instance fleet scale in and straight out again: 20 rps (two
// instances), 9 rps for 400 s (4.5 rps each, below the scale-in rate 4.79 for the whole T_plan window: one
// goes), then 20 rps again (the survivor saturates and the fleet scales out within T_plan).
func flapping() TraceInput {
	return TraceInput{Name: "flapping.csv", DurationS: 2400, Points: [][2]float64{{0, 20}, {600, 9}, {1000, 20}}}
}

var flapCount = regexp.MustCompile(`(\d+) flap\(s\)`)

// checkVerdictFollowsEnvelope fails when a plan is feasible beside an envelope trace that did not hold, or
// beside any finding that counts a flap or a violation minute.
func checkVerdictFollowsEnvelope(t *testing.T, name string, p *Plan) {
	t.Helper()
	if p.Envelope.Holds() != (failedNamed(p, FindingEnvelope) == false) {
		t.Errorf("%s: envelope holds %v but the envelope finding failed %v", name, p.Envelope.Holds(), failedNamed(p, FindingEnvelope))
	}
	if !p.Feasible() {
		return
	}
	if !p.Envelope.Holds() {
		t.Errorf("%s: feasible, but the envelope does not hold", name)
	}
	for _, tr := range p.Envelope.Traces {
		// The step trace's minutes during its recovery do not count (EnvelopeTrace.Holds).
		if tr.Flaps != 0 || tr.ViolationMinutes != 0 && tr.Kind != EnvelopeStep || !tr.Holds {
			t.Errorf("%s: feasible beside trace %q with %d flap(s), %d violation minute(s)", name, tr.Name, tr.Flaps, tr.ViolationMinutes)
		}
	}
	for _, f := range p.Findings {
		for _, m := range flapCount.FindAllStringSubmatch(f.Detail, -1) {
			if m[1] != "0" {
				t.Errorf("%s: feasible beside finding %s that says %q", name, f.Name, m[0])
			}
		}
	}
}

func failedNamed(p *Plan, name string) bool {
	f, _ := p.Finding(name)
	return f.Status == StatusFail
}

// The verdict is feasible only when every trace of the envelope holds: checked on the fixtures, on plans built
// from the fixture's artifacts with several options, and on one whose user trace flaps.
func TestFeasibleOnlyWhenEveryEnvelopeTraceHolds(t *testing.T) {
	for _, c := range []string{"valid", "dry-run", "infeasible", "what-if", "fingerprint-mismatch"} {
		p, err := LoadPlan(fixturePlan(c))
		if err != nil {
			t.Fatal(err)
		}
		checkVerdictFollowsEnvelope(t, c, p)
	}
	dir := filepath.Join("..", "testdata", "plans", "valid")
	ms, err := LoadMeasurement(filepath.Join(dir, QMaxFile), filepath.Join(dir, TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	m := kokoro(t)
	build := func(edit func(*Options)) *Plan {
		t.Helper()
		o := DefaultOptions(m)
		o.PeakRPS, o.TroughRPS = 80, 10
		edit(&o)
		p, err := FromArtifacts(m, ms, o)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	flappy := build(func(o *Options) { o.Traces = []TraceInput{flapping()} })
	user := flappy.Envelope.Traces[len(flappy.Envelope.Traces)-1]
	if user.Kind != EnvelopeUser || user.Flaps == 0 || user.Holds {
		t.Fatalf("user trace %+v: want a flap", user)
	}
	if flappy.Feasible() || !failedNamed(flappy, FindingEnvelope) {
		t.Fatalf("a plan whose user trace flaps is %s; envelope finding failed %v", flappy.Verdict, failedNamed(flappy, FindingEnvelope))
	}
	// The survivor also saturates before its new instance serves: the trace violates as well as flaps.
	if f, _ := flappy.Finding(FindingEnvelope); !strings.Contains(f.Detail, "user: "+strconv.Itoa(user.ViolationMinutes)+" violation min, "+strconv.Itoa(user.Flaps)+" flap(s)") ||
		!strings.Contains(f.Detail, "user trace (flapping.csv): ") {
		t.Errorf("envelope finding %q does not name the flap", f.Detail)
	}
	for name, p := range map[string]*Plan{
		"flapping user trace": flappy,
		"peak 200":            build(func(o *Options) { o.PeakRPS = 200 }),
		"minimum 2":           build(func(o *Options) { o.MinInstances = 2 }),
		"no margin":           build(func(o *Options) { o.ScaleInMargin = 0 }),
		"surge 1.05":          build(func(o *Options) { o.SurgeRatio = 1.05 }),
	} {
		checkVerdictFollowsEnvelope(t, name, p)
	}
	// The check itself can fail: a plan that says feasible beside a flapping trace is caught.
	forged := *flappy
	forged.Verdict = VerdictFeasible
	var sub testing.T
	checkVerdictFollowsEnvelope(&sub, "forged", &forged)
	if !sub.Failed() {
		t.Error("a feasible verdict beside a flapping trace passed the check")
	}
	// And Verify refuses a plan whose envelope was edited to hide the flap.
	hidden := *flappy
	hidden.Envelope.Traces = append([]EnvelopeTrace(nil), flappy.Envelope.Traces...)
	last := len(hidden.Envelope.Traces) - 1
	hidden.Envelope.Traces[last].Flaps, hidden.Envelope.Traces[last].Holds = 0, true
	if errs := hidden.Verify(); !strings.Contains(errsText(errs), "envelope.traces["+strconv.Itoa(last)+"].flaps is 0") {
		t.Errorf("Verify() = %v, want the hidden flap named", errs)
	}
}

// searchOnValid is the search's starting point on the valid fixture's measurement (MeasuredBuilder): the
// catalog's options for 10 to 80 rps with the user trace tr, and the search space narrowed to surges and margins
// for the test.
func searchOnValid(t *testing.T, tr TraceInput, surges, margins []float64) (Options, Builder) {
	t.Helper()
	dir := filepath.Join("..", "testdata", "plans", "valid")
	m := kokoro(t)
	_, build, err := MeasuredBuilder(m, filepath.Join(dir, QMaxFile), filepath.Join(dir, TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	o := DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 80, 10
	o.Traces = []TraceInput{tr}
	oldSurges, oldMargins := searchSurges, searchMargins
	searchSurges, searchMargins = surges, margins
	t.Cleanup(func() { searchSurges, searchMargins = oldSurges, oldMargins })
	return o, build
}

// Search finds the cheapest configuration that passes for a plan that does not: the flapping user trace is
// survived by a minimum fleet of two (which never scales in below the load's two instances).
func TestSearchFindsAPassingConfiguration(t *testing.T) {
	// A narrower search space than tts-bench plan's (each try simulates a day): the same loops, a dozen tries.
	o, build := searchOnValid(t, flapping(), []float64{1.2, 1.25}, []float64{0.1, 0.2})
	p, err := build(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Feasible() {
		t.Fatal("the starting configuration is feasible: the test's premise is that it flaps")
	}
	c, tried, ok, err := Search(context.Background(), o, build)
	if err != nil || !ok {
		t.Fatalf("nothing passed in %d configurations (%v)", tried, err)
	}
	t.Logf("found %s after %d tries: %g instance-hours on the diurnal day", c.Flags(), tried, c.InstanceHours)
	if !c.Plan.Feasible() || tried < 2 {
		t.Fatalf("candidate %s: verdict %s after %d tries", c.Flags(), c.Plan.Verdict, tried)
	}
	checkVerdictFollowsEnvelope(t, "search candidate", c.Plan)
	if c.Options.MinInstances < 2 {
		t.Errorf("candidate %s keeps a minimum of %d: the flapping trace needs 2", c.Flags(), c.Options.MinInstances)
	}
	if !strings.Contains(c.Flags(), "--min-instances "+strconv.Itoa(c.Options.MinInstances)) || !strings.Contains(c.Flags(), "--surge ") {
		t.Errorf("flags %q", c.Flags())
	}
	diurnal := -1.0
	for _, tr := range c.Plan.Envelope.Traces {
		if tr.Kind == EnvelopeDiurnal {
			diurnal = tr.InstanceHours
		}
	}
	if diurnal != c.InstanceHours {
		t.Errorf("candidate cost %g, its diurnal trace %g instance-hours", c.InstanceHours, diurnal)
	}
	// The user's trace goes with the candidate: it passes on the same envelope.
	if len(c.Options.Traces) != 1 || c.Plan.Envelope.Traces[len(c.Plan.Envelope.Traces)-1].Kind != EnvelopeUser {
		t.Errorf("candidate options %+v dropped the user's trace", c.Options)
	}
}

// capacity.Compare runs the plan beside the oracle, the original's thresholds, target tracking on
// invocations and a fixed fleet, all on the plan's instance model.
func TestCompare(t *testing.T) {
	p := loadValid(t)
	tr, err := simulate.Generate(simulate.ShapeParams{Shape: simulate.ShapeDiurnal, PeakRPS: 80, TroughRPS: 10, Duration: 24 * time.Hour,
		Step: time.Minute, Period: 24 * time.Hour, PeakAt: 14 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Compare(tr, Setup{Plan: p, PricePerHour: 1.408, AllowedMaxInstances: 9})
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range rep.Comparison {
		kinds = append(kinds, c.Kind)
	}
	if got := strings.Join(kinds, ","); got != "plan,oracle,original-thresholds,target-tracking-invocations,fixed-for-peak" {
		t.Fatalf("kinds %s", got)
	}
	plan, oracle, fixed := rep.Comparison[0], rep.Comparison[1], rep.Comparison[4]
	if !plan.MeetsSLO || plan.ViolationMinutes != 0 || !rep.Measured {
		t.Errorf("plan %+v on the diurnal day its envelope holds", plan)
	}
	// The oracle is the limit: no fleet uses fewer instance-hours at zero violation minutes.
	if !(rep.OracleRatio > 0 && rep.OracleRatio <= 1) || oracle.InstanceHours > plan.InstanceHours {
		t.Errorf("oracle ratio %g (oracle %g, plan %g instance-hours)", rep.OracleRatio, oracle.InstanceHours, plan.InstanceHours)
	}
	// The fixed fleet: ceil(80 / 14.97) = 6 instances all day.
	if fixed.MinInstances != 6 || fixed.InstanceHours != 144 {
		t.Errorf("fixed fleet %+v, want 6 instances for 24 h", fixed)
	}
	approx(t, "plan cost", plan.Cost, plan.InstanceHours*1.408)
	if rep.Cheapest < 0 || rep.Comparison[rep.Cheapest].Kind == KindOracle || !rep.Comparison[rep.Cheapest].MeetsSLO {
		t.Errorf("cheapest %d", rep.Cheapest)
	}
	if _, err := Compare(tr, Setup{}); err == nil {
		t.Error("Compare without a plan must fail")
	}
}

// bursty is 10 rps with a 40-s burst to 75 rps every 5 minutes, for an hour: faster than any fleet scales
// (T_total is minutes), so only a fleet already standing at the bursts' size holds it.
func bursty() TraceInput {
	tr := TraceInput{Name: "bursty.csv", DurationS: 3600}
	for at := 0.0; at < 3600; at += 300 {
		tr.Points = append(tr.Points, [2]float64{at, 10}, [2]float64{at + 200, 75}, [2]float64{at + 240, 10})
	}
	return tr
}

// When no autoscaling configuration passes, the search names the cheapest fixed fleet that does, with the
// flags that plan it: its plan is feasible, and one instance fewer is not.
func TestSearchNamesTheCheapestFixedFleetWhenNoScalingPasses(t *testing.T) {
	// A narrower search space than tts-bench plan's (each try simulates a day): the same loops, six tries.
	o, build := searchOnValid(t, bursty(), []float64{1.25}, []float64{0.2})
	var progress strings.Builder
	out, err := SearchCheapest(context.Background(), o, build, &progress)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%s%s", progress.String(), out)
	re := regexp.MustCompile(`none of 6 autoscaling configurations \(.*\) passes; a fixed fleet does, the smallest of (\d+) tried:\n` +
		CheapestPassingHeading + `--surge 1.25 --min-instances (\d+) --max-instances (\d+) --scale-in-margin 0.2  \(.* instance-hours on the diurnal day; \d+ configurations tried\)\n  tts-bench plan --surge 1.25 --min-instances (\d+) --max-instances (\d+) --scale-in-margin 0.2\n$`)
	g := re.FindStringSubmatch(out)
	if g == nil {
		t.Fatalf("the search's advice does not name a fixed fleet with its flags:\n%s", out)
	}
	n, _ := strconv.Atoi(g[2])
	if g[3] != g[2] || g[4] != g[2] || g[5] != g[2] || n <= o.MinInstances+searchExtraMin-1 {
		t.Fatalf("fixed fleet %v: want one size, above the minimums the search tried", g[2:])
	}
	fixed := func(n int) *Plan {
		c := o
		c.MinInstances, c.MaxInstances = n, n
		p, err := build(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	if p := fixed(n); !p.Feasible() {
		t.Errorf("the named fixed fleet of %d is %s", n, p.Verdict)
	} else {
		checkVerdictFollowsEnvelope(t, "fixed fleet", p)
	}
	if p := fixed(n - 1); p.Feasible() {
		t.Errorf("a fixed fleet of %d is feasible too: %d is not the cheapest", n-1, n)
	}
}
