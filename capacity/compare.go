package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/speech-infra/speech-infra/loadmodel"
	"github.com/speech-infra/speech-infra/simulate"
)

// Configuration kinds in a comparison (tts-bench simulate, and benchmark row 7).
const (
	KindPlan        = "plan"
	KindOracle      = "oracle"
	KindOriginal    = "original-thresholds"
	KindInvocations = "target-tracking-invocations"
	KindFixed       = "fixed-for-peak"
)

// The comparison's fixed configurations; tts-bench simulate's help formats them in.
const (
	// OriginalScaleInEvaluationPeriods is how many AlarmPeriodS datapoints the original thresholds' scale-in
	// alarm waits for.
	OriginalScaleInEvaluationPeriods = 5
	// InvocationsTargetShare is target tracking on InvocationsPerInstance's target: this share of one
	// instance's measured maximum rate; InvocationsCooldownS are its cooldowns.
	InvocationsTargetShare = 0.7
	InvocationsCooldownS   = 300
)

// Setup is what a comparison needs.
type Setup struct {
	// Plan is the plan to simulate; its inputs hold the instance model.
	Plan *Plan
	// PricePerHour is the price of one instance-hour in US dollars, and PriceSource where it comes from
	// (models.Model.ResolvePrice: the catalog's entry with its source and date, or --price-per-hour).
	PricePerHour float64
	PriceSource  string
	// AllowedMaxInstances is the catalog's fleet maximum, for the configurations that do not come from the plan.
	AllowedMaxInstances int
	// InitialInstances, when above 0, is how many instances serve at the trace's start in the fleets that
	// scale (each within its own bounds); 0 starts each where target tracking would have left it.
	InitialInstances int
	// Scatter and ScatterRuns, when set, add the plan's spread over ScatterRuns runs with the alarm's datapoints
	// drawn from Scatter (simulate.ScaleOutSpread; PlanScatter builds it from the plan's qmax artifact).
	Scatter     *loadmodel.Scatter
	ScatterRuns int
}

// ErrCanceled is the error of a plan build, a verification, a search, a gate rebuild or a comparison that
// stopped because its context was done; the error returned also wraps context.Cause of that context.
var ErrCanceled = errors.New("the simulation was stopped before it finished")

// canceled is the error of work stopped because ctx is done: errors.Is finds both ErrCanceled and the
// context's cause in it (context.Canceled for a signal or a cancel, context.DeadlineExceeded for a timeout).
func canceled(ctx context.Context) error {
	return fmt.Errorf("%w (%w)", ErrCanceled, context.Cause(ctx))
}

// Summary is one configuration's totals in the comparison.
type Summary struct {
	Kind             string  `json:"kind"`
	Name             string  `json:"name"`
	MinInstances     int     `json:"min_instances"`
	MaxInstances     int     `json:"max_instances"`
	ViolationMinutes int     `json:"violation_minutes"`
	Flaps            int     `json:"flaps"`
	Shed             float64 `json:"shed"`
	InstanceHours    float64 `json:"instance_hours"`
	Cost             float64 `json:"cost_usd"`
	MeetsSLO         bool    `json:"meets_slo"`
	// Note says how the configuration was sized.
	Note string `json:"note"`
}

// Report is a whole comparison on one trace: the plan minute by minute, and every configuration's totals.
type Report struct {
	Trace        string  `json:"trace"`
	DurationS    float64 `json:"duration_s"`
	PeakRPS      float64 `json:"peak_rps"`
	Measured     bool    `json:"measured"`
	Model        string  `json:"model"`
	InstanceType string  `json:"instance_type"`
	PricePerHour float64 `json:"price_per_hour_usd"`
	// PriceSource says where PricePerHour comes from.
	PriceSource   string `json:"price_source"`
	SLOMs         int    `json:"slo_ttfab_ms"`
	SLOPercentile int    `json:"slo_percentile"`
	// Instance is the model's basis line.
	Instance string `json:"instance"`
	// Plan is the given plan's simulation, with minutes and scaling events.
	Plan simulate.Result `json:"plan"`
	// Comparison lists every configuration's totals, the plan first.
	Comparison []Summary `json:"comparison"`
	// OracleRatio is oracle instance-hours ÷ plan instance-hours (1 is the physical limit); 0 when the plan did
	// not hold on the trace, where the ratio would compare a failing fleet with the limit.
	OracleRatio float64 `json:"oracle_ratio"`
	// Cheapest is the index in Comparison of the cheapest configuration that meets the SLO (the oracle aside);
	// -1 when none does.
	Cheapest int `json:"cheapest"`
	// Notes are caveats.
	Notes []string `json:"notes,omitempty"`
	// Spread is the plan's scattered runs (Setup.Scatter); nil when none were asked for.
	Spread *SpreadSummary `json:"spread,omitempty"`
}

// ScatterHoldShare is the share of scattered runs that must hold, beside the deterministic run, for a
// simulation with scattered runs to hold (Report.PlanHolds).
const ScatterHoldShare = 0.95

// SpreadSummary is where the plan's first scale-out falls, how large its fleet grows, how many runs hold and
// what they cost, over runs with the alarm's datapoints scattered as measured (simulate.ScaleOutSpread),
// beside the deterministic run (Report.Plan).
type SpreadSummary struct {
	Runs int `json:"runs"`
	// WithoutScaleOut counts the runs that never scaled out.
	WithoutScaleOut int `json:"without_scale_out"`
	// FirstScaleOutS are the first scale-out's p2.5, median and p97.5, in seconds (absent when no run scaled out).
	FirstScaleOutS *[3]float64 `json:"first_scale_out_s,omitempty"`
	// PeakInstancesMin and PeakInstancesMax bound the runs' largest fleets.
	PeakInstancesMin int `json:"peak_instances_min"`
	PeakInstancesMax int `json:"peak_instances_max"`
	// ViolationRuns counts the runs with a minute that violated the SLO.
	ViolationRuns int `json:"violation_runs"`
	// HeldRuns counts the runs that held (no violation minute, no flap).
	HeldRuns int `json:"held_runs"`
	// MeanInstanceHours and MeanCost are the runs' means: what the plan costs on the trace, beside the
	// deterministic run's figure.
	MeanInstanceHours float64 `json:"mean_instance_hours"`
	MeanCost          float64 `json:"mean_cost"`
}

// Holds is true when at least ScatterHoldShare of the runs held; true for no summary (no scattered runs asked
// for).
func (s *SpreadSummary) Holds() bool {
	return s == nil || float64(s.HeldRuns) >= ScatterHoldShare*float64(s.Runs)
}

// PlanHolds is the simulation's verdict on the plan: its deterministic run holds (simulate.Result.Holds) and,
// when scattered runs were asked for, at least ScatterHoldShare of them hold too.
func (r Report) PlanHolds() bool { return r.Plan.Holds() && r.Spread.Holds() }

// Compare simulates the plan on tr beside the oracle, the original's thresholds (docs/design.md, "The
// original"), target tracking on InvocationsPerInstance at 70% of the measured maximum rate, and a fixed fleet
// for the peak — all with the one instance model the plan holds.
func Compare(tr simulate.Trace, s Setup) (Report, error) {
	return CompareContext(context.Background(), tr, s)
}

// CompareContext is Compare that stops when ctx is done (every simulation checks it every simulated minute):
// it then returns no report and an error that is ErrCanceled.
func CompareContext(ctx context.Context, tr simulate.Trace, s Setup) (Report, error) {
	p := s.Plan
	if p == nil {
		return Report{}, errors.New("compare: no plan")
	}
	if err := tr.Validate(); err != nil {
		return Report{}, fmt.Errorf("compare: trace: %w", err)
	}
	in, d := p.Inputs, p.Derived
	inst := in.Instance
	allowed := max(s.AllowedMaxInstances, d.MaxInstances)
	rep := Report{Trace: tr.Name, DurationS: tr.Duration.Seconds(), PeakRPS: tr.Peak(), Measured: p.Measured && inst.Measured,
		Model: p.Fingerprint.Model, InstanceType: p.Fingerprint.InstanceType, PricePerHour: s.PricePerHour, PriceSource: s.PriceSource,
		SLOMs: p.Fingerprint.SLOTTFABMs, SLOPercentile: p.Fingerprint.SLOPercentile, Instance: inst.Basis, Cheapest: -1}
	if !inst.Measured {
		rep.Notes = append(rep.Notes, "the instance model is "+inst.Basis) // Basis starts with "NOT MEASURED"
	}
	stopped := false
	run := func(tr simulate.Trace, f simulate.Fleet) simulate.Result {
		if stopped {
			return simulate.Result{}
		}
		r, err := simulate.RunContext(ctx, tr, f)
		stopped = err != nil
		return r
	}
	add := func(kind, note string, r simulate.Result) {
		rep.Comparison = append(rep.Comparison, Summary{Kind: kind, Name: r.Name, MinInstances: r.MinInstances, MaxInstances: r.MaxInstances,
			ViolationMinutes: r.ViolationMinutes, Flaps: len(r.Flaps), Shed: r.Shed, InstanceHours: r.InstanceHours, Cost: r.InstanceHours * s.PricePerHour,
			MeetsSLO: r.Holds(), Note: note})
	}
	planFleet := PlanFleet(fmt.Sprintf("plan (s %s)", exact(in.SurgeRatio)), in, d, p.Fingerprint)
	planFleet.PricePerHour = s.PricePerHour
	planFleet.InitialInstances = s.InitialInstances
	rep.Plan = run(tr, planFleet)
	if s.Scatter != nil && s.ScatterRuns > 0 && !stopped {
		sp, err := simulate.ScaleOutSpreadContext(ctx, tr, planFleet, *s.Scatter, s.ScatterRuns)
		stopped = err != nil
		if err == nil {
			sum := &SpreadSummary{Runs: sp.Runs, WithoutScaleOut: sp.Missing, ViolationRuns: sp.ViolationRuns, HeldRuns: sp.HeldRuns,
				PeakInstancesMin: sp.PeakInstances[0], PeakInstancesMax: sp.PeakInstances[len(sp.PeakInstances)-1],
				MeanInstanceHours: sp.MeanInstanceHours(), MeanCost: sp.MeanInstanceHours() * s.PricePerHour}
			if len(sp.Times) > 0 {
				sum.FirstScaleOutS = &[3]float64{sp.Quantile(0.025), sp.Quantile(0.5), sp.Quantile(0.975)}
			}
			rep.Spread = sum
		}
	}
	add(KindPlan, fmt.Sprintf("scale out at metric %s (%s rps per instance), in below %s (%s rps) over %d × %d s", FormatNumber(d.TargetValue), FormatNumber(d.ScaleOutRPS),
		FormatNumber(d.ScaleInThreshold), FormatNumber(d.ScaleInRPS), d.ScaleInEvaluationPeriods, d.ScaleInPeriodS), rep.Plan)
	rep.Comparison[0].MeetsSLO = rep.PlanHolds()

	if stopped {
		return Report{}, canceled(ctx)
	}
	oracle, err := simulate.Oracle(ctx, tr, inst, d.SafeRPS)
	if err != nil {
		return Report{}, canceled(ctx)
	}
	add(KindOracle, fmt.Sprintf("ceil(rate ÷ safe %s rps) at every second, zero start-up: the limit of any reactive fleet", FormatNumber(d.SafeRPS)), oracle)

	// The comparison runs on the plan's clock too: its AWS durations divided by the plan's compression.
	origPeriodS, invCooldownS := int(in.awsS(AlarmPeriodS)), int(in.awsS(InvocationsCooldownS))
	cMax, cMin := thresholds(in.SurgeRatio, in.QMax)
	orig := simulate.Fleet{Name: fmt.Sprintf("original thresholds %s/%s", FormatNumber(cMax), FormatNumber(cMin)), Instance: inst, TTotalS: in.TTotalS, FlapWindowS: d.TPlanS,
		Scaling: &simulate.Scaling{MinInstances: 1, MaxInstances: allowed, Metric: simulate.MetricConcurrency, TargetValue: cMax * in.CloudWatchRatio, PeriodS: in.MetricPeriodS,
			ScaleOutCooldownS: d.ScaleOutCooldownS, StepScaleIn: &simulate.StepScaleIn{Threshold: cMin * in.CloudWatchRatio, PeriodS: origPeriodS, EvaluationPeriods: OriginalScaleInEvaluationPeriods,
				CooldownS: d.ScaleInCooldownS, Adjustment: -1}}, InitialInstances: s.InitialInstances}
	if cMax > 0 {
		add(KindOriginal, fmt.Sprintf("(1 − h)·Q_max and (1 − 2h)·Q_max concurrency, scale-in over %d × %d s, fleet 1 to %d", OriginalScaleInEvaluationPeriods, origPeriodS, allowed), run(tr, orig))
	}

	// Invocations per instance per (compressed) minute: the Sum over the standard period, six metric periods.
	target := InvocationsTargetShare * inst.CapacityRPS * in.awsS(60)
	inv := simulate.Fleet{Name: "target tracking on InvocationsPerInstance", Instance: inst, TTotalS: in.TTotalS, FlapWindowS: d.TPlanS,
		Scaling: &simulate.Scaling{MinInstances: d.MinInstances, MaxInstances: allowed, Metric: simulate.MetricInvocations, TargetValue: target, PeriodS: in.MetricPeriodS,
			ScaleOutCooldownS: invCooldownS, ScaleInCooldownS: invCooldownS, TargetScaleIn: true}, InitialInstances: s.InitialInstances}
	add(KindInvocations, fmt.Sprintf("target %s invocations per instance per minute%s (%s%% of the measured maximum %s rps), cooldowns %d s", FormatNumber(target), compressedNote(in, 60),
		FormatNumber(100*InvocationsTargetShare), FormatNumber(inst.CapacityRPS), invCooldownS), run(tr, inv))

	n := min(MaxInstances, instancesFor(tr.Peak(), d.SafeRPS))
	add(KindFixed, fmt.Sprintf("ceil(peak %s rps ÷ safe %s rps), no autoscaling", FormatNumber(tr.Peak()), FormatNumber(d.SafeRPS)),
		run(tr, simulate.Fleet{Name: fmt.Sprintf("fixed fleet of %d", n), Instance: inst, TTotalS: in.TTotalS, Fixed: n}))
	if stopped || ctx.Err() != nil {
		return Report{}, canceled(ctx)
	}

	// The ratio means something only at zero violation minutes (docs/design.md, "Cost against the limit").
	if rep.Plan.InstanceHours > 0 && rep.PlanHolds() {
		rep.OracleRatio = oracle.InstanceHours / rep.Plan.InstanceHours
	}
	best := math.Inf(1)
	for i, c := range rep.Comparison {
		if c.Kind != KindOracle && c.MeetsSLO && c.InstanceHours < best {
			best, rep.Cheapest = c.InstanceHours, i
		}
	}
	return rep, nil
}
