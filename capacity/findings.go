package capacity

import (
	"fmt"
	"math"
)

// modelFindings are the findings computed from the inputs alone; Verify recomputes them.
func modelFindings(in Inputs, d Derived) []Finding {
	return []Finding{
		peakCoverage(in, d),
		scaleInSafety(in, d),
		surgeSurvival(in, d),
		queueDepth(in, d),
		invocationTimeout(in, d),
	}
}

func peakCoverage(in Inputs, d Derived) Finding {
	f := Finding{Name: FindingPeakCoverage}
	need := instancesFor(in.PeakRPS, d.ThroughputRPS)
	f.Detail = fmt.Sprintf("peak %s rps needs %d instance(s) at C_scale_max %s, where one instance delivers %s rps (measured, not C ÷ service time); the fleet may grow to %d",
		FormatNumber(in.PeakRPS), need, FormatNumber(d.CScaleMax), FormatNumber(d.ThroughputRPS), in.MaxInstances)
	if need > in.MaxInstances {
		f.Status = StatusFail
		f.Recommendation = fmt.Sprintf("raise scaling.max_instances to %d in the model catalog (or pass --max-instances %d), or plan for a lower --peak-rps", need, need)
		return f
	}
	f.Status = StatusPass
	return f
}

func scaleInSafety(in Inputs, d Derived) Finding {
	f := Finding{Name: FindingScaleInSafety}
	// The alarm is deployed with the threshold as ScalingSpecFor renders it; concurrency is never below 0.
	if rendered := round3(d.ScaleInThreshold); !(rendered > 0) {
		f.Status = StatusFail
		f.Detail = fmt.Sprintf("the scale-in alarm fires below C_scale_min × cloudwatch_ratio = %s, which the alarm renders (three decimals) as %s: concurrency is never below 0, so the fleet never scales in (surge ratio %s leaves C_scale_min = (1 − 2h)·Q_max = %s)",
			FormatNumber(d.ScaleInThreshold), FormatNumber(rendered), exact(in.SurgeRatio), FormatNumber(d.CScaleMin))
		f.Recommendation = "plan with a lower --surge, so that C_scale_min stays well above 0 (e.g. --surge 1.25 gives half of Q_max)"
		return f
	}
	m := in.MinInstances
	after := float64(m+1) / float64(m) * d.CScaleMin
	q := float64(in.QMax)
	safe := "no minimum is safe because C_scale_min equals C_scale_max"
	if d.SmallestSafeMinInstances > 0 {
		safe = fmt.Sprintf("the smallest safe minimum is %d", d.SmallestSafeMinInstances)
	}
	f.Detail = fmt.Sprintf("scaling in from %d to %d instances at C_scale_min %s leaves %s concurrent requests on each remaining instance (C_scale_max %s, Q_max %d); %s",
		m+1, m, FormatNumber(d.CScaleMin), FormatNumber(after), FormatNumber(d.CScaleMax), in.QMax, safe)
	switch {
	case after > q+1e-9:
		f.Status = StatusFail
		f.Detail += "; the last scale-in would break the SLO"
	case after >= d.CScaleMax-1e-9:
		f.Status = StatusWarn
		where := fmt.Sprintf("%s of Q_max", pct(after/q))
		if after >= q-1e-9 {
			where = "back at Q_max"
		}
		f.Detail += fmt.Sprintf("; going from %d to %d puts the remaining instances at or above the scale-out threshold (%s), so the fleet will flap", m+1, m, where)
	default:
		f.Status = StatusPass
		return f
	}
	if d.SmallestSafeMinInstances > 0 {
		f.Recommendation = fmt.Sprintf("set scaling.min_instances to %d (or --min-instances %d), or accept the risk at low load", d.SmallestSafeMinInstances, d.SmallestSafeMinInstances)
	} else {
		f.Recommendation = "use a surge ratio above 1 so the thresholds leave headroom"
	}
	return f
}

func queueDepth(in Inputs, d Derived) Finding {
	f := Finding{Name: FindingQueueDepth}
	depth, q := float64(in.QueueMaxDepth), float64(in.QMax)
	f.Detail = fmt.Sprintf("queue_max_depth %d per instance against Q_max %d and C_scale_max %s", in.QueueMaxDepth, in.QMax, FormatNumber(d.CScaleMax))
	switch {
	case depth < d.CScaleMax:
		f.Status = StatusFail
		f.Detail += ": the shield rejects load below the scale-out threshold, so the scaling metric can never reach its target"
		f.Recommendation = fmt.Sprintf("raise queue_max_depth in the model catalog to at least Q_max (%d)", in.QMax)
	case depth < q:
		f.Status = StatusWarn
		f.Detail += ": the shield rejects requests an instance could still serve within the SLO"
		f.Recommendation = fmt.Sprintf("raise queue_max_depth to Q_max (%d)", in.QMax)
	case depth > 2*q:
		f.Status = StatusWarn
		f.Detail += ": the shield admits more than twice Q_max, so admitted requests can wait far beyond the SLO"
		f.Recommendation = fmt.Sprintf("lower queue_max_depth towards Q_max (%d to %d)", in.QMax, 2*in.QMax)
	default:
		f.Status = StatusPass
		f.Detail += ": the shield admits everything an instance serves within the SLO and little more"
	}
	return f
}

func invocationTimeout(in Inputs, d Derived) Finding {
	f := Finding{Name: FindingInvocationTimeout}
	// Little's law on the closed-loop staircase: mean full-response time = concurrency ÷ throughput.
	resp := float64(in.QMax) / d.ThroughputAtQMaxRPS
	limit := float64(in.InvocationTimeoutS)
	f.Detail = fmt.Sprintf("mean full-response time at Q_max is %s s against the invocation limit of %d s", FormatNumber(resp), in.InvocationTimeoutS)
	switch {
	case !(resp < limit):
		f.Status = StatusFail
		f.Recommendation = "raise container.invocation_timeout_s in the model catalog, or shorten requests"
	case resp > limit/2:
		f.Status = StatusWarn
		f.Recommendation = "raise container.invocation_timeout_s: slow requests near Q_max will be cut off"
	default:
		f.Status = StatusPass
	}
	return f
}

func surgeSurvival(in Inputs, d Derived) Finding {
	f := Finding{Name: FindingSurgeSurvival}
	r := simulateSurge(in, d)
	f.Detail = fmt.Sprintf("load growing ×%s per T_plan %s s from %s to %s rps, starting on %d instance(s), scale-out after %d×%d s breaching datapoints, cooldown %d s, new instances serving %s s after each scale-out: ",
		exact(in.SurgeRatio), FormatNumber(d.TPlanS), FormatNumber(in.TroughRPS), FormatNumber(in.PeakRPS), r.StartInstances,
		in.EvaluationPeriods, in.MetricPeriodS, d.ScaleOutCooldownS, FormatNumber(r.ServeDelayS))
	if r.BreachAtS >= 0 {
		f.Status = StatusFail
		c := "grows without bound (the instances are saturated)"
		if !math.IsInf(r.BreachConcurrency, 1) {
			c = "reaches " + FormatNumber(r.BreachConcurrency)
		}
		f.Detail += fmt.Sprintf("at t=%s s, %s rps on %d serving instance(s) (%d more starting), per-instance concurrency %s, above Q_max %d",
			FormatNumber(r.BreachAtS), FormatNumber(r.BreachLoadRPS), r.BreachServing, r.BreachPending, c, in.QMax)
		if r.BreachServing+r.BreachPending >= r.FleetCap {
			f.Recommendation = fmt.Sprintf("the fleet is at its maximum of %d instance(s): raise the fleet maximum (see peak_coverage) or plan for a lower --peak-rps", r.BreachServing+r.BreachPending)
		} else {
			f.Recommendation = "plan with a higher --surge (a lower scale-out threshold), shorten T_total (faster start-up), raise --min-instances, or plan for a slower surge"
		}
		return f
	}
	f.Detail += fmt.Sprintf("per-instance concurrency peaks at %s (Q_max %d) after %d scale-out(s), ending on %d instance(s)",
		FormatNumber(r.PeakConcurrency), in.QMax, r.ScaleOuts, r.FinalInstances)
	if r.Truncated {
		f.Status = StatusWarn
		f.Detail += fmt.Sprintf("; the simulation stopped after %s s before load reached the peak", FormatNumber(r.SimulatedS))
		f.Recommendation = "plan from a higher --trough-rps or a larger --surge so the surge reaches its peak within the simulation"
		return f
	}
	f.Status = StatusPass
	return f
}

// maxSimulatedS bounds the surge simulation (one step per second).
const maxSimulatedS = 1_000_000

// surgeResult is the outcome of simulateSurge.
type surgeResult struct {
	StartInstances    int
	FleetCap          int // the most instances scale-out may reach: the plan's and the allowed maximum
	FinalInstances    int
	ScaleOuts         int
	ServeDelayS       float64
	PeakConcurrency   float64
	BreachAtS         float64 // -1 when concurrency never exceeded Q_max
	BreachLoadRPS     float64
	BreachConcurrency float64
	BreachServing     int
	BreachPending     int
	SimulatedS        float64
	Truncated         bool
}

// simulateSurge runs the scale-out loop one second at a time against load that grows by the surge ratio per
// T_plan from the trough until the peak, and reports whether per-instance concurrency ever exceeds Q_max.
//
// The model, deliberately simple and deterministic:
//   - load L(t) = min(peak, trough·s^(t/T_plan)), spread evenly over serving instances (least outstanding
//     requests); per-instance concurrency is the inverse of the measured throughput curve at L/n, +Inf past
//     the instance's highest measured throughput;
//   - the metric is the per-instance concurrency averaged over each metric period; target tracking acts after
//     EvaluationPeriods consecutive datapoints above C_scale_max and no sooner than the scale-out cooldown
//     after its previous action, asking for ceil(serving·metric ÷ C_scale_max) instances (capped at the
//     fleet maximum) and counting those still starting;
//   - an added instance serves T_plan − MetricPeriodS·EvaluationPeriods (at least T_total) after the action,
//     so that from the first breaching datapoint to serving takes T_plan: the detection buffer's part not
//     simulated explicitly (cooldown, metric delay) is still paid;
//   - the fleet starts as small as keeps the trough at or below C_scale_max, never below the minimum.
func simulateSurge(in Inputs, d Derived) surgeResult {
	period, evals := in.MetricPeriodS, in.EvaluationPeriods
	r := surgeResult{BreachAtS: -1}
	r.ServeDelayS = math.Max(in.TTotalS, d.TPlanS-float64(period*evals))
	r.FleetCap = min(d.MaxInstances, in.MaxInstances)
	fleetCap := r.FleetCap
	q := float64(in.QMax)
	k := 0.0
	if in.SurgeRatio > 1 {
		k = math.Log(in.SurgeRatio) / d.TPlanS
	}
	load := func(t float64) float64 { return math.Min(in.PeakRPS, in.TroughRPS*math.Exp(k*t)) }
	tPeak := 0.0
	if k > 0 && in.TroughRPS < in.PeakRPS {
		tPeak = math.Log(in.PeakRPS/in.TroughRPS) / k
	}
	horizon := tPeak + 2*d.TPlanS + float64(period*evals+d.ScaleOutCooldownS)
	capped := horizon > maxSimulatedS
	if capped {
		horizon = maxSimulatedS
	}
	serving := min(fleetCap, max(in.MinInstances, instancesFor(in.TroughRPS, d.ThroughputRPS)))
	r.StartInstances = serving
	desired := serving
	var pending []float64 // ready times, in order
	lastOut := math.Inf(-1)
	breaches, samples := 0, 0
	sum := 0.0
	for t := 0; float64(t) <= horizon; t++ {
		now := float64(t)
		for len(pending) > 0 && pending[0] <= now {
			serving++
			pending = pending[1:]
		}
		l := load(now)
		c := concurrencyFor(in.Throughput, l/float64(serving))
		r.PeakConcurrency = math.Max(r.PeakConcurrency, c)
		if c > q+1e-9 {
			r.BreachAtS, r.BreachLoadRPS, r.BreachConcurrency = now, l, c
			r.BreachServing, r.BreachPending = serving, len(pending)
			break
		}
		sum += c
		samples++
		if (t+1)%period != 0 {
			continue
		}
		datapoint := sum / float64(samples)
		sum, samples = 0, 0
		if datapoint > d.CScaleMax {
			breaches++
		} else {
			breaches = 0
		}
		if breaches < evals || now-lastOut < float64(d.ScaleOutCooldownS) {
			continue
		}
		want := min(fleetCap, instancesFor(float64(serving)*datapoint, d.CScaleMax))
		if want > desired {
			for i := desired; i < want; i++ {
				pending = append(pending, now+r.ServeDelayS)
			}
			desired, lastOut = want, now
			r.ScaleOuts++
		}
	}
	r.FinalInstances = serving + len(pending)
	r.SimulatedS = horizon
	r.Truncated = capped && r.BreachAtS < 0
	return r
}

func pct(x float64) string { return fmt.Sprintf("%.0f%%", 100*x) }
