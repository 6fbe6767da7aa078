package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

// Feasible means simulated and met (docs/design.md): a plan is feasible only when the shared simulator — the
// plan's own scaling (ScalingSpecFor), autoscale.Decide and the instance model — holds the SLO on every trace
// of an envelope derived from its inputs, with no flap.

// Envelope trace kinds.
const (
	EnvelopeDiurnal   = "diurnal"
	EnvelopeGrowth    = "growth"
	EnvelopeStaircase = "staircase"
	EnvelopeStep      = "step"
	EnvelopeHover     = "hover"
	EnvelopeSawtooth  = "sawtooth"
	EnvelopeUser      = "user"
	// EnvelopeHoldout is a held-out part of the user's traffic: the plan is validated on it, not derived from it.
	EnvelopeHoldout = "holdout"
)

// The envelope's shape (docs/design.md, "Feasible means simulated and met"). The help of tts-bench plan and
// the documents quote these values; change them here only.
const (
	// DefaultHoverAmplitude is the hover and sawtooth traces' swing around each scale-in boundary (±15%), an
	// input of the plan (Inputs.HoverAmplitude, --hover-amplitude), never derived from its scale-in margin.
	DefaultHoverAmplitude = 0.15
	// MaxHoverAmplitude bounds it: at ±50% the trough is half the boundary, no longer a hover around it.
	MaxHoverAmplitude = 0.5
	// HoverFastPeriod is the fast hover's period: a dip shorter than the scale-in window must not scale in.
	HoverFastPeriod = 4 * time.Minute
	// HoverFastPeriods is how many fast periods the fast hover lasts.
	HoverFastPeriods = 6
	// HoverSlowPeriodTPlan is the slow hover's and the sawtooth's period in T_plan: its low half (1.25 T_plan)
	// outlasts the scale-in window (T_plan, rounded up to whole periods of the metric), so the fleet scales in
	// and must then carry the high half on one instance fewer without scaling out again.
	HoverSlowPeriodTPlan = 2.5
	// HoverSlowPeriods is how many slow periods the slow hover and the sawtooth last.
	HoverSlowPeriods = 3
	// StaircaseHoldTPlan is how long, in T_plan, the staircase holds the peak after its last jump.
	StaircaseHoldTPlan = 2
	// StepRatio is the step past the peak: from the peak to StepRatio × peak at once.
	StepRatio = 1.2
	// StepRecoveryTPlan is the step's recovery limit in T_plan: from the step, the first minute from which no
	// minute violates starts at most StepRecoveryTPlan × T_plan later.
	StepRecoveryTPlan = 2
	// StepHoldTPlan is how long, in T_plan (rounded up to whole minutes), the step's load is held after it:
	// twice the recovery limit, so that a recovery is seen to last.
	StepHoldTPlan = 4
)

// Limits of the user's traces a plan records.
const (
	// MaxUserTraces is the most --trace files a plan takes.
	MaxUserTraces = 8
	// MaxUserTracePoints bounds one recorded user trace. A plan records its traces point by point, about 65
	// bytes a point: tts-bench plan refuses traces whose plan would be larger than MaxPlanBytes.
	MaxUserTracePoints = 4000
)

// TraceInput is a user's trace recorded in a plan: a step function of the fleet's offered rate.
type TraceInput struct {
	// Name says where it came from (the file name).
	Name string `json:"name"`
	// DurationS is the trace's length in seconds.
	DurationS float64 `json:"duration_s"`
	// Points are [seconds since the start, requests per second] pairs, the first at 0.
	Points [][2]float64 `json:"points"`
}

// TraceInputFrom records a simulate.Trace in a plan.
func TraceInputFrom(tr simulate.Trace) (TraceInput, error) {
	if len(tr.Points) > MaxUserTracePoints {
		return TraceInput{}, fmt.Errorf("trace %s has %d points: a plan records at most %d per trace (resample it to a coarser step)", tr.Name, len(tr.Points), MaxUserTracePoints)
	}
	t := TraceInput{Name: tr.Name, DurationS: tr.Duration.Seconds()}
	for _, p := range tr.Points {
		t.Points = append(t.Points, [2]float64{p.At.Seconds(), p.RPS})
	}
	_, err := t.trace()
	return t, err
}

// trace is the recorded trace as a simulate.Trace, validated.
func (t TraceInput) trace() (simulate.Trace, error) {
	if len(t.Points) > MaxUserTracePoints {
		return simulate.Trace{}, fmt.Errorf("points: has %d: at most %d", len(t.Points), MaxUserTracePoints)
	}
	if !(t.DurationS > 0) || t.DurationS > simulate.MaxTraceDuration.Seconds() {
		return simulate.Trace{}, fmt.Errorf("duration_s: is %g: want (0, %g]", t.DurationS, simulate.MaxTraceDuration.Seconds())
	}
	tr := simulate.Trace{Name: t.Name, Duration: seconds(t.DurationS)}
	for _, p := range t.Points {
		tr.Points = append(tr.Points, simulate.Point{At: seconds(p[0]), RPS: p[1]})
	}
	return tr, tr.Validate()
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// Envelope is the simulation a plan's verdict rests on.
type Envelope struct {
	// SimulatorVersion is simulate.Version: the rules these results were computed with.
	SimulatorVersion string `json:"simulator_version"`
	// Traces are the results, one per trace.
	Traces []EnvelopeTrace `json:"traces"`
}

// EnvelopeTrace is the plan's result on one trace of the envelope.
type EnvelopeTrace struct {
	// Kind is one of the Envelope* kinds; Name describes the trace.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// DurationS is the trace's length.
	DurationS float64 `json:"duration_s"`
	// StartInstances is the fleet the trace starts on.
	StartInstances int `json:"start_instances"`
	// ViolationMinutes counts the minutes that violated the SLO.
	ViolationMinutes int `json:"violation_minutes"`
	// Flaps counts scale-ins followed by a scale-out within T_plan.
	Flaps int `json:"flaps"`
	// ScaleOuts, ScaleIns and PeakInstances describe what the fleet did.
	ScaleOuts     int `json:"scale_outs"`
	ScaleIns      int `json:"scale_ins"`
	PeakInstances int `json:"peak_instances"`
	// InstanceHours counts serving and starting instances.
	InstanceHours float64 `json:"instance_hours"`
	// RecoveryS, on the step trace only, is the time to recovery: from the step until the first minute from
	// which no minute to the end of the trace violates (0 when none after the step violates). Absent when the
	// last minute still violates: not recovered.
	RecoveryS *float64 `json:"recovery_s,omitempty"`
	// Holds is true when no minute violated and nothing flapped. On the step trace the minutes from the step
	// until the recovery do not count: it holds when no minute before the step violated, it recovered within
	// StepRecoveryTPlan × T_plan of the step, and nothing flapped.
	Holds bool `json:"holds"`
	// Worst is the worst minute and why ("" when none violated).
	WorstMinute int    `json:"worst_minute"`
	Worst       string `json:"worst,omitempty"`
}

// Holds reports whether every trace held.
func (e Envelope) Holds() bool {
	for _, t := range e.Traces {
		if !t.Holds {
			return false
		}
	}
	return len(e.Traces) > 0
}

// WorstTrace returns the first trace that did not hold, or false.
func (e Envelope) WorstTrace() (EnvelopeTrace, bool) {
	for _, t := range e.Traces {
		if !t.Holds {
			return t, true
		}
	}
	return EnvelopeTrace{}, false
}

// envelopeTrace is one trace of the envelope with the fleet it starts on (0: where target tracking leaves it).
// stepAt is the step trace's step (0 for the others).
type envelopeTrace struct {
	kind   string
	trace  simulate.Trace
	start  int
	stepAt time.Duration
}

// envelopeTraces derives the envelope from the inputs and derived values (docs/design.md, "Feasible means
// simulated and met"): traces that a plan could fail, each for a reason of its own.
//   - diurnal: a day from trough to peak and back (cosine, peak at 14:00, 1-min steps);
//   - growth: from trough up by s per T_plan to the peak, held 3 T_plan, back down at the same pace, held
//     until the scale-in alarm has had its window twice;
//   - staircase: from trough, an instant jump ×s every T_plan up to the peak, held StaircaseHoldTPlan × T_plan:
//     each jump lands on the fleet the last one left, with no ramp for the alarm to see coming;
//   - step: the peak on the fleet for the peak, then at once StepRatio × the peak, held StepHoldTPlan × T_plan:
//     past what the plan promises, so it need not hold the SLO throughout, but must recover within
//     StepRecoveryTPlan × T_plan (EnvelopeTrace.RecoveryS);
//   - for each fleet size n from min+1 to max, around the rate at which n instances scale in
//     (b = n × scale_in_rps), with the amplitude a of Inputs.HoverAmplitude, each starting on n instances:
//     hover fast, b × (1 + a sin) with period HoverFastPeriod (a dip too short for the scale-in window);
//     hover slow, the same with period HoverSlowPeriodTPlan × T_plan (its low half outlasts the window: the
//     fleet scales in, and the high half must not scale it out again within T_plan, a flap);
//     sawtooth, from b × (1 + a) falling linearly to b × (1 − a) over the slow period, then up at once;
//   - the user's traces;
//   - the held-out parts of the user's traffic (validation: nothing above is derived from them).
func envelopeTraces(in Inputs, d Derived) ([]envelopeTrace, error) {
	var out []envelopeTrace
	day, err := simulate.Generate(simulate.ShapeParams{Shape: simulate.ShapeDiurnal, PeakRPS: in.PeakRPS, TroughRPS: in.TroughRPS,
		Duration: 24 * time.Hour, Step: time.Minute, Period: 24 * time.Hour, PeakAt: 14 * time.Hour})
	if err != nil {
		return nil, fmt.Errorf("diurnal trace: %w", err)
	}
	out = append(out, envelopeTrace{kind: EnvelopeDiurnal, trace: day})
	tPlan := seconds(d.TPlanS)
	step := max(time.Second, (tPlan / 60).Round(time.Second))
	out = append(out, envelopeTrace{kind: EnvelopeGrowth, trace: simulate.Growth(in.TroughRPS, in.PeakRPS, in.SurgeRatio, tPlan,
		3*tPlan+2*seconds(float64(d.ScaleInPeriodS*d.ScaleInEvaluationPeriods))+seconds(float64(d.ScaleInCooldownS)), step)})
	out = append(out, envelopeTrace{kind: EnvelopeStaircase, trace: simulate.Staircase(in.TroughRPS, in.PeakRPS, in.SurgeRatio, tPlan, StaircaseHoldTPlan*tPlan)})
	stepAt, after := wholeMinutes(tPlan), wholeMinutes(StepHoldTPlan*tPlan)
	high := StepRatio * in.PeakRPS
	out = append(out, envelopeTrace{kind: EnvelopeStep, stepAt: stepAt, trace: simulate.StepUp(
		fmt.Sprintf("step from the peak %s rps to %s rps (%s × peak) at %s, held %s; recovery within %s × T_plan", FormatNumber(in.PeakRPS), FormatNumber(high),
			FormatNumber(StepRatio), stepAt, after, FormatNumber(StepRecoveryTPlan)), in.PeakRPS, high, stepAt, after)})
	a := in.HoverAmplitude
	slow := time.Duration(HoverSlowPeriodTPlan * float64(tPlan)).Round(time.Second)
	for n := d.MinInstances + 1; n <= d.MaxInstances; n++ {
		center := float64(n) * d.ScaleInRPS
		where := fmt.Sprintf("%s rps, where %d instances scale in", FormatNumber(center), n)
		out = append(out,
			envelopeTrace{kind: EnvelopeHover, start: n, trace: simulate.Hover(fmt.Sprintf("hover fast ±%s%% around %s, period %s", FormatNumber(100*a), where, HoverFastPeriod),
				center, a, HoverFastPeriod, HoverFastPeriods*HoverFastPeriod, hoverFastStep)},
			envelopeTrace{kind: EnvelopeHover, start: n, trace: simulate.Hover(fmt.Sprintf("hover slow ±%s%% around %s, period %s", FormatNumber(100*a), where, slow),
				center, a, slow, HoverSlowPeriods*slow, step)},
			envelopeTrace{kind: EnvelopeSawtooth, start: n, trace: simulate.Sawtooth(fmt.Sprintf("sawtooth ±%s%% across %s, up at once, down over %s", FormatNumber(100*a), where, slow),
				center, a, slow, HoverSlowPeriods*slow, step)})
	}
	for i, t := range in.Traces {
		tr, err := t.trace()
		if err != nil {
			return nil, fmt.Errorf("traces[%d]: %w", i, err)
		}
		out = append(out, envelopeTrace{kind: EnvelopeUser, trace: tr})
	}
	for i, t := range in.Holdout {
		tr, err := t.trace()
		if err != nil {
			return nil, fmt.Errorf("holdout[%d]: %w", i, err)
		}
		out = append(out, envelopeTrace{kind: EnvelopeHoldout, trace: tr})
	}
	return out, nil
}

// hoverFastStep samples the fast hover, 24 samples a period.
const hoverFastStep = HoverFastPeriod / 24

// wholeMinutes rounds d up to whole minutes (the simulator's rows), at least one.
func wholeMinutes(d time.Duration) time.Duration {
	return max(time.Minute, (d+time.Minute-1)/time.Minute*time.Minute)
}

// recovery judges the step trace on the result r: the time from the step (at, on a minute boundary) until
// the first minute from which no minute to the end violates; ok is false when the last minute still violates.
// before counts the violating minutes before the step.
func recovery(r simulate.Result, at time.Duration) (recoveryS float64, ok bool, before int) {
	stepMinute := int(at / time.Minute)
	last := -1
	for _, m := range r.Minutes {
		if !m.Violates {
			continue
		}
		if m.Minute < stepMinute {
			before++
		} else {
			last = m.Minute
		}
	}
	if last < 0 {
		return 0, true, before
	}
	if last == len(r.Minutes)-1 {
		return 0, false, before
	}
	return (time.Duration(last+1)*time.Minute - at).Seconds(), true, before
}

// SimulatedScaling is the scaling a plan deploys (ScalingSpecFor) as the simulator runs it.
func (s ScalingSpec) SimulatedScaling() simulate.Scaling {
	sc := simulate.Scaling{MinInstances: s.MinInstances, MaxInstances: s.MaxInstances, Metric: simulate.MetricConcurrency,
		TargetValue: s.ScaleOut.TargetValue, ScaleOutCooldownS: s.ScaleOut.ScaleOutCooldownS, PeriodS: s.MetricPeriodS}
	for _, a := range s.Alarms {
		if a.TriggersScaleIn {
			sc.StepScaleIn = &simulate.StepScaleIn{Threshold: a.Threshold, PeriodS: a.PeriodS, EvaluationPeriods: a.EvaluationPeriods,
				CooldownS: s.ScaleIn.CooldownS, Adjustment: s.ScaleIn.Adjustment}
		}
	}
	return sc
}

// PlanFleet is the fleet a plan deploys, for the simulator.
func PlanFleet(name string, in Inputs, d Derived, fp Fingerprint) simulate.Fleet {
	spec := scalingSpec("speech-"+fp.Model, "AllTraffic", fp, d)
	sc := spec.SimulatedScaling()
	return simulate.Fleet{Name: name, Instance: in.Instance, TTotalS: in.TTotalS, Scaling: &sc, FlapWindowS: d.TPlanS}
}

// simulateEnvelope runs the plan's scaling on every trace of the envelope. It stops when ctx is done
// (simulate.RunContext checks it every simulated minute) and returns canceled(ctx) then.
func simulateEnvelope(ctx context.Context, in Inputs, d Derived) (Envelope, error) {
	env := Envelope{SimulatorVersion: simulate.Version}
	traces, err := envelopeTraces(in, d)
	if err != nil {
		env.Traces = []EnvelopeTrace{{Kind: EnvelopeUser, Name: "envelope", Worst: err.Error()}}
		return env, nil
	}
	fleet := PlanFleet("plan", in, d, Fingerprint{Model: "plan"})
	for _, t := range traces {
		f := fleet
		f.InitialInstances = t.start
		r, err := simulate.RunContext(ctx, t.trace, f)
		if err != nil {
			return Envelope{}, canceled(ctx)
		}
		et := EnvelopeTrace{Kind: t.kind, Name: t.trace.Name, DurationS: t.trace.Duration.Seconds(), ViolationMinutes: r.ViolationMinutes,
			Flaps: len(r.Flaps), ScaleOuts: r.ScaleOuts, ScaleIns: r.ScaleIns, PeakInstances: r.PeakInstances,
			InstanceHours: round6(r.InstanceHours), Holds: r.Holds()}
		if len(r.Minutes) > 0 {
			et.StartInstances = r.Minutes[0].Serving
		}
		if r.Worst != nil && r.ViolationMinutes > 0 {
			et.WorstMinute, et.Worst = r.Worst.Minute, r.Worst.Why
		}
		if len(r.Flaps) > 0 && et.Worst == "" {
			fl := r.Flaps[0]
			et.Worst = fmt.Sprintf("scale-in at %s s followed by a scale-out at %s s, within T_plan %s s", FormatNumber(fl.ScaleInAtS), FormatNumber(fl.ScaleOutAtS), FormatNumber(d.TPlanS))
		}
		if t.kind == EnvelopeStep {
			judgeStep(&et, r, t.stepAt, d.TPlanS)
		}
		env.Traces = append(env.Traces, et)
	}
	return env, nil
}

// judgeStep sets the step trace's recovery and verdict (EnvelopeTrace.RecoveryS, Holds) from its result.
func judgeStep(et *EnvelopeTrace, r simulate.Result, at time.Duration, tPlanS float64) {
	rec, ok, before := recovery(r, at)
	limit := StepRecoveryTPlan * tPlanS
	why := ""
	if r.Worst != nil && r.ViolationMinutes > 0 {
		why = ": worst minute " + strconv.Itoa(r.Worst.Minute) + ", " + r.Worst.Why
	}
	switch {
	case before > 0:
		et.Holds = false
		et.Worst = fmt.Sprintf("%d minute(s) violated at the peak, before the step%s", before, why)
	case !ok:
		et.Holds = false
		et.Worst = fmt.Sprintf("not recovered: the last minute, %s after the step, still violates (limit %s × T_plan = %s s)%s",
			time.Duration(len(r.Minutes))*time.Minute-at, FormatNumber(StepRecoveryTPlan), FormatNumber(limit), why)
	default:
		et.RecoveryS = &rec
		et.Holds = len(r.Flaps) == 0
		if rec > limit+1e-9 {
			et.Holds = false
			et.Worst = fmt.Sprintf("recovered %s s after the step, later than %s × T_plan = %s s%s", FormatNumber(rec), FormatNumber(StepRecoveryTPlan), FormatNumber(limit), why)
		}
	}
}

func round6(x float64) float64 { return math.Round(x*1e6) / 1e6 }

// SimulateAsWritten runs the envelope with the plan's derived values as written in the file (not recomputed
// from its inputs): what the deployment would do. The gate uses it to name the worst minute of an edited plan.
// When ctx is done it stops and returns an error that is ErrCanceled.
func SimulateAsWritten(ctx context.Context, p *Plan) (Envelope, error) {
	if errs := verifyInputs(p.Inputs); len(errs) > 0 {
		return Envelope{}, errors.Join(errs...)
	}
	d := p.Derived
	if d.MinInstances < 1 || d.MaxInstances < d.MinInstances || d.MaxInstances > MaxInstances || d.ScaleInPeriodS < 1 || d.ScaleInEvaluationPeriods < 1 ||
		d.ScaleInEvaluationPeriods > 8640 || !(d.TPlanS > 0) || d.TPlanS > 2*MaxTTotalS || !(d.TargetValue > 0) || math.IsNaN(d.ScaleInThreshold) || d.ScaleOutCooldownS < 0 || d.ScaleInCooldownS < 0 {
		return Envelope{}, fmt.Errorf("derived: fleet %d to %d, target %g, scale-in %g over %d × %d s: out of range", d.MinInstances, d.MaxInstances, d.TargetValue, d.ScaleInThreshold, d.ScaleInEvaluationPeriods, d.ScaleInPeriodS)
	}
	return simulateEnvelope(ctx, p.Inputs, d)
}

// Candidate is one configuration the search tried.
type Candidate struct {
	Options Options
	Plan    *Plan
	// InstanceHours is the diurnal trace's: the cost the search minimises.
	InstanceHours float64
}

// Flags are the tts-bench plan flags that produce the candidate.
func (c Candidate) Flags() string {
	o := c.Options
	flags := fmt.Sprintf("--surge %s --min-instances %d --max-instances %d --scale-in-margin %s", exact(o.SurgeRatio), o.MinInstances, o.MaxInstances, exact(o.ScaleInMargin))
	if a := o.HoverAmplitude; a != 0 && a != DefaultHoverAmplitude {
		// Not searched: the envelope the user asked for goes with the candidate.
		flags += " --hover-amplitude " + exact(a)
	}
	return flags
}

// CheapestPassingHeading starts the line tts-bench plan prints for the search's result.
const CheapestPassingHeading = "CHEAPEST PASSING  "

// Recommendation is how tts-bench plan prints the candidate the search found after tried configurations: the
// heading with the flags and the diurnal cost, then the command line to plan with it. tools/demo reads it.
func (c Candidate) Recommendation(tried int) string {
	return fmt.Sprintf("\n%s%s  (%s instance-hours on the diurnal day; %d configurations tried)\n  tts-bench plan %s\n",
		CheapestPassingHeading, c.Flags(), FormatNumber(c.InstanceHours), tried, c.Flags())
}

// SearchSpace says what Search varies, for tts-bench plan's messages.
func SearchSpace() string {
	return fmt.Sprintf("surge as asked, then %s to %s above it, up to %d more minimum instances, scale-in margin %s to %s, the maximum the peak needs",
		exact(searchSurges[0]), exact(searchSurges[len(searchSurges)-1]), searchExtraMin-1, exact(searchMargins[0]), exact(searchMargins[len(searchMargins)-1]))
}

// searchSurges, searchMargins and searchExtraMin span the search.
var (
	searchSurges   = []float64{1.05, 1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4, 1.45}
	searchMargins  = []float64{0.1, 0.2, 0.3}
	searchExtraMin = 3
)

// Search looks for the cheapest configuration (fewest instance-hours on the diurnal trace) that makes the plan
// feasible, over surge ratio (never below the one given), minimum fleet, scale-in margin and maximum fleet (the allowed maximum, or what
// the peak needs). build builds a plan from options (FromArtifactsContext or FromWhatIfContext with the same
// inputs) under the context it is given. found is false when nothing in the search space passes; tried counts
// the configurations tried.
//
// Each build simulates the whole envelope, the user's traces included, so a search can take minutes: it stops
// when ctx is done (checked between builds, and by the builds every simulated minute) and returns an error
// that is ErrCanceled, with nothing found.
func Search(ctx context.Context, o Options, build func(context.Context, Options) (*Plan, error)) (best Candidate, tried int, found bool, err error) {
	try := func(c Options) (*Plan, error) { return tryBuild(ctx, build, c) }
	// The ratio asked for, then every larger one of searchSurges: only more headroom than asked for, since a
	// smaller ratio would also make the envelope's growth gentler than the traffic the user said to expect.
	surges := []float64{o.SurgeRatio}
	for _, s := range searchSurges {
		if s > o.SurgeRatio {
			surges = append(surges, s)
		}
	}
	for _, s := range surges {
		for extra := 0; extra < searchExtraMin; extra++ {
			for _, mg := range searchMargins {
				c := o
				c.SurgeRatio, c.MinInstances, c.ScaleInMargin = s, o.MinInstances+extra, mg
				if c.MinInstances > MaxInstances {
					continue
				}
				for _, maxN := range []int{o.MaxInstances, 0} {
					c.MaxInstances = max(maxN, c.MinInstances)
					p, err := try(c)
					tried++
					if err != nil {
						return Candidate{}, tried, false, err
					}
					if p == nil {
						continue
					}
					if maxN == 0 {
						// What the peak needs at this surge ratio.
						c.MaxInstances = max(c.MinInstances, instancesFor(c.PeakRPS, p.Derived.ScaleOutRPS))
						if c.MaxInstances == o.MaxInstances || c.MaxInstances > MaxInstances {
							continue
						}
						if p, err = try(c); err != nil {
							return Candidate{}, tried, false, err
						}
						if p == nil {
							continue
						}
					}
					if !p.Feasible() {
						continue
					}
					hours := p.Envelope.diurnalHours()
					if !found || hours < best.InstanceHours-1e-9 {
						best, found = Candidate{Options: c, Plan: p, InstanceHours: hours}, true
					}
				}
			}
		}
	}
	return best, tried, found, nil
}

// CheapestFixedFleet looks for the smallest fixed fleet (minimum = maximum) whose plan passes the envelope, from
// o's minimum up to its allowed maximum, at o's surge ratio and scale-in margin: what tts-bench plan names when
// no autoscaling configuration passes (a fixed fleet sized for the bursts can hold traffic that changes faster
// than any fleet can scale). A fixed fleet costs in proportion to its size, so the first that passes is the
// cheapest. found is false when none passes; tried counts the plans built. It stops when ctx is done, as Search.
func CheapestFixedFleet(ctx context.Context, o Options, build func(context.Context, Options) (*Plan, error)) (best Candidate, tried int, found bool, err error) {
	for n := o.MinInstances; n <= min(o.MaxInstances, MaxInstances); n++ {
		c := o
		c.MinInstances, c.MaxInstances = n, n
		p, err := tryBuild(ctx, build, c)
		tried++
		if err != nil {
			return Candidate{}, tried, false, err
		}
		if p == nil || !p.Feasible() {
			continue
		}
		return Candidate{Options: c, Plan: p, InstanceHours: p.Envelope.diurnalHours()}, tried, true, nil
	}
	return Candidate{}, tried, false, nil
}

// tryBuild builds the plan of c for the searches: nil and no error when c cannot be built, an error (that is
// ErrCanceled) only when ctx is done, before or during the build.
func tryBuild(ctx context.Context, build func(context.Context, Options) (*Plan, error), c Options) (*Plan, error) {
	if ctx.Err() != nil {
		return nil, canceled(ctx)
	}
	p, err := build(ctx, c)
	if ctx.Err() != nil {
		return nil, canceled(ctx)
	}
	if err != nil {
		return nil, nil
	}
	return p, nil
}

// diurnalHours is the instance-hours of the envelope's diurnal trace: the cost the searches minimise.
func (e Envelope) diurnalHours() float64 {
	for _, t := range e.Traces {
		if t.Kind == EnvelopeDiurnal {
			return t.InstanceHours
		}
	}
	return 0
}

// worstMinuteText names the worst minute of the envelope's first failing trace.
func worstMinuteText(e Envelope) string {
	t, ok := e.WorstTrace()
	if !ok {
		return ""
	}
	if t.Kind == EnvelopeStep {
		return fmt.Sprintf("%s trace (%s): %s", t.Kind, t.Name, t.Worst)
	}
	if t.ViolationMinutes > 0 {
		return fmt.Sprintf("%s trace (%s): %d violation minute(s), worst minute %d: %s", t.Kind, t.Name, t.ViolationMinutes, t.WorstMinute, t.Worst)
	}
	return fmt.Sprintf("%s trace (%s): %d flap(s): %s", t.Kind, t.Name, t.Flaps, t.Worst)
}
