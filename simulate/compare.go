package simulate

import (
	"errors"
	"fmt"
	"math"

	"github.com/speech-infra/speech-infra/capacity"
)

// SurgeRatios are the surge ratios every simulation compares the plan with.
var SurgeRatios = []float64{1.1, 1.15, 1.2, 1.25, 1.3, 1.35, 1.4, 1.45}

// Config kinds in a comparison.
const (
	KindPlan         = "plan"
	KindFixed        = "fixed-for-peak"
	KindSurge        = "surge"
	KindProofOfValue = "proof-of-value"
)

// Setup is what a simulation needs: the plan, the instance model, the price and how to re-derive the plan
// at another surge ratio.
type Setup struct {
	// Plan is the plan to simulate.
	Plan *capacity.Plan
	// Instance is the instance model (InstanceFromQMax, or InstanceFromPlan for a what-if plan).
	Instance Instance
	// ServiceTimeS is the uncontended mean full-response time (qmax's service_time_mean_ms), for the
	// proof-of-value sizing.
	ServiceTimeS float64
	// PricePerHour is the price of one instance-hour in US dollars.
	PricePerHour float64
	// Rebuild derives the plan again with another surge ratio from the same artifacts (or what-if numbers)
	// and planning inputs.
	Rebuild func(surge float64) (*capacity.Plan, error)
}

// Summary is one configuration's totals in the comparison.
type Summary struct {
	Kind string `json:"kind"`
	Name string `json:"name"`
	// SurgeRatio is the plan's s (0 for the fixed fleet).
	SurgeRatio       float64 `json:"surge_ratio,omitempty"`
	MinInstances     int     `json:"min_instances"`
	MaxInstances     int     `json:"max_instances"`
	ViolationMinutes int     `json:"violation_minutes"`
	Shed             float64 `json:"shed"`
	InstanceHours    float64 `json:"instance_hours"`
	Cost             float64 `json:"cost_usd"`
	MeetsSLO         bool    `json:"meets_slo"`
	// Note says how the configuration was sized.
	Note string `json:"note"`
}

// Report is a whole simulation: the given plan minute by minute, and the comparison.
type Report struct {
	// Trace names the trace.
	Trace string `json:"trace"`
	// DurationS is the trace's length in seconds.
	DurationS float64 `json:"duration_s"`
	// PeakRPS is the trace's peak rate.
	PeakRPS float64 `json:"peak_rps"`
	// Measured is false when any number is assumed (a what-if plan).
	Measured bool `json:"measured"`
	// Model and InstanceType name what is simulated; PricePerHour its price.
	Model        string  `json:"model"`
	InstanceType string  `json:"instance_type"`
	PricePerHour float64 `json:"price_per_hour_usd"`
	// SLOMs and SLOPercentile are the objective.
	SLOMs         int `json:"slo_ttfab_ms"`
	SLOPercentile int `json:"slo_percentile"`
	// Plan is the given plan's simulation, with minutes and scaling events.
	Plan Result `json:"plan"`
	// Comparison lists every configuration's totals, the given plan first.
	Comparison []Summary `json:"comparison"`
	// Cheapest is the index in Comparison of the cheapest configuration that meets the SLO; -1 when none does.
	Cheapest int `json:"cheapest"`
	// Notes are caveats (assumed numbers, capped fleets).
	Notes []string `json:"notes,omitempty"`
}

// FleetFor is the fleet a plan deploys: its scaling spec (exactly what the endpoint stack creates), its
// maximum capped at the allowed maximum (an infeasible plan can ask for more than may be deployed).
func FleetFor(name string, p *capacity.Plan, inst Instance, price float64) Fleet {
	spec := capacity.ScalingSpecFor("speech-"+p.Fingerprint.Model, "AllTraffic", p)
	return Fleet{Name: name, Instance: inst, Scaling: &spec, MaxInstances: min(spec.MaxInstances, p.Inputs.MaxInstances),
		CloudWatchRatio: p.Inputs.CloudWatchRatio, SLOMs: float64(p.Fingerprint.SLOTTFABMs), SLOPercentile: p.Fingerprint.SLOPercentile,
		PricePerHour: price}
}

// Simulate runs the plan and every comparison on tr.
func Simulate(tr Trace, s Setup) (Report, error) {
	if err := tr.Validate(); err != nil {
		return Report{}, fmt.Errorf("simulate: %w", err)
	}
	p := s.Plan
	if p == nil {
		return Report{}, errors.New("simulate: no plan")
	}
	if !(s.PricePerHour >= 0) || math.IsInf(s.PricePerHour, 0) {
		return Report{}, fmt.Errorf("simulate: price per hour %g: want a finite non-negative number", s.PricePerHour)
	}
	rep := Report{Trace: tr.Name, DurationS: tr.Duration.Seconds(), PeakRPS: tr.Peak(), Measured: p.Measured && s.Instance.TTFABMeasured,
		Model: p.Fingerprint.Model, InstanceType: p.Fingerprint.InstanceType, PricePerHour: s.PricePerHour,
		SLOMs: p.Fingerprint.SLOTTFABMs, SLOPercentile: p.Fingerprint.SLOPercentile, Cheapest: -1}
	if !rep.Measured {
		rep.Notes = append(rep.Notes, "NOT MEASURED: the plan's numbers are what-if assumptions, and TTFAB is assumed to rise linearly to the SLO at Q_max")
	}
	given := FleetFor(fmt.Sprintf("the plan (s %s)", num(p.Inputs.SurgeRatio)), p, s.Instance, s.PricePerHour)
	if given.MaxInstances < p.Derived.MaxInstances {
		rep.Notes = append(rep.Notes, fmt.Sprintf("the plan asks for up to %d instances, but at most %d are allowed (max_instances): simulated with %d",
			p.Derived.MaxInstances, p.Inputs.MaxInstances, given.MaxInstances))
	}
	rep.Plan = Run(tr, given)
	rep.Comparison = append(rep.Comparison, summarize(KindPlan, rep.Plan, p.Inputs.SurgeRatio, "the given plan, as deployed"))

	// A fixed fleet sized for the trace's peak: the fewest instances whose per-instance concurrency at the peak
	// stays at or below Q_max.
	xq := s.Instance.Throughput(float64(p.Inputs.QMax))
	fixed := instances(rep.PeakRPS, xq)
	fixedFleet := Fleet{Name: fmt.Sprintf("fixed fleet of %d", fixed), Instance: s.Instance, Fixed: fixed,
		CloudWatchRatio: p.Inputs.CloudWatchRatio, SLOMs: given.SLOMs, SLOPercentile: given.SLOPercentile, PricePerHour: s.PricePerHour}
	rep.Comparison = append(rep.Comparison, summarize(KindFixed, Run(tr, fixedFleet), 0,
		fmt.Sprintf("ceil(peak %s rps ÷ %s rps per instance at Q_max %d), no autoscaling", capacity.FormatNumber(rep.PeakRPS), capacity.FormatNumber(xq), p.Inputs.QMax)))

	if s.Rebuild != nil {
		for _, ratio := range SurgeRatios {
			sp, err := s.Rebuild(ratio)
			if err != nil {
				return Report{}, fmt.Errorf("simulate: re-derive the plan with surge ratio %s: %w", num(ratio), err)
			}
			f := FleetFor(fmt.Sprintf("plan with s %s", num(ratio)), sp, s.Instance, s.PricePerHour)
			note := fmt.Sprintf("C_scale_max %s, C_scale_min %s, fleet %d to %d", capacity.FormatNumber(sp.Derived.CScaleMax),
				capacity.FormatNumber(sp.Derived.CScaleMin), f.Scaling.MinInstances, f.MaxInstances)
			if !sp.Feasible() {
				note += " (plan infeasible)"
			}
			rep.Comparison = append(rep.Comparison, summarize(KindSurge, Run(tr, f), ratio, note))
		}
	}

	// The original proof-of-value sized the fleet from C_scale_max ÷ the uncontended service time, as if an
	// instance kept its uncontended speed at any concurrency.
	if s.ServiceTimeS > 0 {
		perInstance := p.Derived.CScaleMax / s.ServiceTimeS
		pov := FleetFor("proof-of-value sizing", p, s.Instance, s.PricePerHour)
		pov.MaxInstances = min(max(pov.Scaling.MinInstances, instances(p.Inputs.PeakRPS, perInstance)), capacity.MaxInstances)
		pov.Scaling.MaxInstances = pov.MaxInstances
		rep.Comparison = append(rep.Comparison, summarize(KindProofOfValue, Run(tr, pov), p.Inputs.SurgeRatio,
			fmt.Sprintf("max ceil(plan peak %s rps ÷ (C_scale_max %s ÷ service time %s s) = %s rps), the plan's thresholds",
				capacity.FormatNumber(p.Inputs.PeakRPS), capacity.FormatNumber(p.Derived.CScaleMax), capacity.FormatNumber(s.ServiceTimeS), capacity.FormatNumber(perInstance))))
	}
	for i, c := range rep.Comparison {
		if c.MeetsSLO && (rep.Cheapest < 0 || c.Cost < rep.Comparison[rep.Cheapest].Cost) {
			rep.Cheapest = i
		}
	}
	return rep, nil
}

func summarize(kind string, r Result, surge float64, note string) Summary {
	return Summary{Kind: kind, Name: r.Name, SurgeRatio: surge, MinInstances: r.MinInstances, MaxInstances: r.MaxInstances,
		ViolationMinutes: r.ViolationMinutes, Shed: r.Shed, InstanceHours: r.InstanceHours, Cost: r.Cost, MeetsSLO: r.MeetsSLO(), Note: note}
}

// instances is the fewest instances that carry rps at perInstance each (at least 1, at most capacity's limit).
func instances(rps, perInstance float64) int {
	if !(perInstance > 0) {
		return capacity.MaxInstances
	}
	return min(capacity.MaxInstances, max(1, int(math.Ceil(rps/perInstance-1e-9))))
}
