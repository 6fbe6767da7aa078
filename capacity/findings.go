package capacity

import (
	"fmt"
	"strings"

	"github.com/speech-infra/speech-infra/bench"
)

// modelFindings are the findings computed from the inputs alone (the instance model and the envelope
// simulation); Verify recomputes them.
func modelFindings(in Inputs, d Derived, e Envelope) []Finding {
	return []Finding{
		instanceModel(in, d),
		peakCoverage(in, d),
		scaleInSafety(in, d, e),
		surgeSurvival(in, d, e),
		envelopeFinding(e),
		queueDepth(in, d),
		invocationTimeout(in, d),
	}
}

// instanceModel says what the instance model rests on: a measured rate staircase, or an approximation.
func instanceModel(in Inputs, d Derived) Finding {
	f := Finding{Name: FindingInstanceModel}
	m := in.Instance
	safe := "safe_rps"
	if top, low, ok := m.SafeCeiling(); ok && low > 0 && d.SafeRPS == low {
		safe = fmt.Sprintf("safe_rps: the %s%% lower confidence bound of %s rps, the highest rate step that met it", FormatNumber(100*bench.CIConfidence), FormatNumber(top))
	}
	f.Detail = fmt.Sprintf("%s: one instance completes at most %s rps; it meets the SLO up to %s rps (%s), where the metric reads %s",
		m.Basis, FormatNumber(m.CapacityRPS), FormatNumber(d.SafeRPS), safe, FormatNumber(m.At(d.SafeRPS).Metric))
	switch {
	case !(d.SafeRPS > 0):
		f.Status = StatusFail
		f.Detail += ": no offered rate meets the SLO on one instance"
		f.Recommendation = "lower the load per instance, relax the SLO or choose a larger instance type"
	case !m.Measured:
		f.Status = StatusWarn
		f.Recommendation = "measure with tts-bench qmax (its rate staircase) so the plan rests on the instance's real behaviour; the deploy gate refuses a plan whose instance model is NOT MEASURED"
	default:
		f.Status = StatusPass
	}
	return f
}

func peakCoverage(in Inputs, d Derived) Finding {
	f := Finding{Name: FindingPeakCoverage}
	need := instancesFor(in.PeakRPS, d.ScaleOutRPS)
	f.Detail = fmt.Sprintf("peak %s rps needs %d instance(s) at the scale-out rate %s rps per instance (measured, not C ÷ service time); fleet %d to %d",
		FormatNumber(in.PeakRPS), need, FormatNumber(d.ScaleOutRPS), d.MinInstances, d.MaxInstances)
	if need > d.MaxInstances {
		f.Status = StatusFail
		f.Detail += fmt.Sprintf(", capped by the allowed maximum %d", in.MaxInstances)
		f.Recommendation = fmt.Sprintf("raise scaling.max_instances to %d in the model catalog (or pass --max-instances %d), or plan for a lower --peak-rps", need, need)
		return f
	}
	f.Status = StatusPass
	return f
}

// scaleInSafety judges scale-in: the rule (survivors below the scale-out rate for every fleet size in range)
// and the hover and sawtooth traces of the envelope, where a flap shows.
func scaleInSafety(in Inputs, d Derived, e Envelope) Finding {
	f := Finding{Name: FindingScaleInSafety}
	var boundary []EnvelopeTrace
	flaps, violations := 0, 0
	for _, t := range e.Traces {
		if t.Kind == EnvelopeHover || t.Kind == EnvelopeSawtooth {
			boundary = append(boundary, t)
			flaps += t.Flaps
			violations += t.ViolationMinutes
		}
	}
	worstAfter := 0.0
	for n := d.MinInstances + 1; n <= d.MaxInstances; n++ {
		worstAfter = max(worstAfter, d.ScaleInRPS*float64(n)/float64(n-1))
	}
	if d.MaxInstances == d.MinInstances {
		f.Status = StatusPass
		f.Detail = fmt.Sprintf("the fleet is fixed at %d instance(s): it never scales in", d.MinInstances)
		return f
	}
	f.Detail = fmt.Sprintf("below %s rps per instance (metric %s over %d × %d s) one instance goes; for every fleet size from %d to %d the survivors carry at most %s rps each, below the scale-out rate %s rps; %d hover and sawtooth trace(s) of ±%s%% around each boundary (the hover amplitude, an input: not the margin): %d flap(s), %d violation minute(s)",
		FormatNumber(d.ScaleInRPS), FormatNumber(d.ScaleInThreshold), d.ScaleInEvaluationPeriods, d.ScaleInPeriodS, d.MinInstances+1, d.MaxInstances,
		FormatNumber(worstAfter), FormatNumber(d.ScaleOutRPS), len(boundary), FormatNumber(100*in.HoverAmplitude), flaps, violations)
	switch {
	case !(round3(d.ScaleInThreshold) > 0):
		f.Status = StatusFail
		f.Detail += fmt.Sprintf("; the scale-in threshold renders (three decimals) as %s: the metric is never below it, so the fleet never scales in", FormatNumber(round3(d.ScaleInThreshold)))
		f.Recommendation = "plan with a lower --surge or a smaller --scale-in-margin, so that the scale-in rate's metric stays above 0"
	case worstAfter > d.ScaleOutRPS*(1+1e-9):
		f.Status = StatusFail
		f.Detail += "; a scale-in would put the survivors above the scale-out rate"
		f.Recommendation = "raise --scale-in-margin"
	case flaps > 0 || violations > 0:
		f.Status = StatusFail
		for _, t := range boundary {
			if !t.Holds {
				f.Detail += fmt.Sprintf("; the %s trace (%s) does not hold: %s", t.Kind, t.Name, t.Worst)
				break
			}
		}
		f.Recommendation = fmt.Sprintf("raise --scale-in-margin (above ±%s%% the survivors of a scale-in carry (1 + amplitude) × (1 − margin) of the scale-out rate at least) or --min-instances; tts-bench plan prints the cheapest configuration that passes",
			FormatNumber(100*in.HoverAmplitude))
	default:
		f.Status = StatusPass
	}
	return f
}

// surgeSurvival is the growth and staircase traces' result: load growing by s per T_plan from trough to peak
// (and back), smoothly and in instant jumps.
func surgeSurvival(in Inputs, d Derived, e Envelope) Finding {
	f := Finding{Name: FindingSurgeSurvival}
	var parts []string
	var failed *EnvelopeTrace
	for i, t := range e.Traces {
		if t.Kind != EnvelopeGrowth && t.Kind != EnvelopeStaircase {
			continue
		}
		parts = append(parts, fmt.Sprintf("%s: %d scale-out(s), %d scale-in(s), peak %d instance(s), %d violation minute(s), %d flap(s)",
			t.Kind, t.ScaleOuts, t.ScaleIns, t.PeakInstances, t.ViolationMinutes, t.Flaps))
		if !t.Holds && failed == nil {
			failed = &e.Traces[i]
		}
	}
	if len(parts) == 0 {
		f.Status = StatusFail
		f.Detail = "the envelope has no growth or staircase trace"
		return f
	}
	f.Detail = fmt.Sprintf("load growing ×%s per T_plan %s s from %s to %s rps (growth: smoothly, and back; staircase: an instant jump each T_plan), scale-out at metric %s (3 × %d-s datapoints), cooldown %d s from each scale-out's end, new instances serving T_total %s s after the decision: %s",
		exact(in.SurgeRatio), FormatNumber(d.TPlanS), FormatNumber(in.TroughRPS), FormatNumber(in.PeakRPS), FormatNumber(d.TargetValue), in.MetricPeriodS, d.ScaleOutCooldownS,
		FormatNumber(in.TTotalS), strings.Join(parts, "; "))
	if failed == nil {
		f.Status = StatusPass
		return f
	}
	f.Status = StatusFail
	f.Detail += fmt.Sprintf("; %s: %s", failed.Kind, failed.Worst)
	f.Recommendation = "plan with a higher --surge (an earlier scale-out), shorten T_total (faster start-up) or raise --min-instances; tts-bench plan prints the cheapest configuration that passes"
	return f
}

// envelopeFinding is the verdict of the whole envelope: every trace with zero violation minutes and no flap.
func envelopeFinding(e Envelope) Finding {
	f := Finding{Name: FindingEnvelope}
	var parts []string
	for _, t := range e.Traces {
		part := fmt.Sprintf("%s: %d violation min, %d flap(s), %s instance-hours", t.Kind, t.ViolationMinutes, t.Flaps, FormatNumber(t.InstanceHours))
		if t.Kind == EnvelopeStep {
			rec := "not recovered"
			if t.RecoveryS != nil {
				rec = "recovered in " + FormatNumber(*t.RecoveryS) + " s"
			}
			part = fmt.Sprintf("%s: %s × peak, %s (limit %s × T_plan), %d violation min, %d flap(s), %s instance-hours", t.Kind, FormatNumber(StepRatio), rec,
				FormatNumber(StepRecoveryTPlan), t.ViolationMinutes, t.Flaps, FormatNumber(t.InstanceHours))
		}
		parts = append(parts, part)
	}
	f.Detail = fmt.Sprintf("%d trace(s) simulated (%s): %s", len(e.Traces), e.SimulatorVersion, strings.Join(parts, "; "))
	if e.Holds() {
		f.Status = StatusPass
		return f
	}
	f.Status = StatusFail
	f.Detail += "; " + worstMinuteText(e)
	f.Recommendation = "tts-bench plan prints the cheapest configuration that passes, with its flags"
	return f
}

func queueDepth(in Inputs, d Derived) Finding {
	f := Finding{Name: FindingQueueDepth}
	depth, q := float64(in.QueueMaxDepth), float64(in.QMax)
	f.Detail = fmt.Sprintf("queue_max_depth %d per instance against Q_max %d and the scale-out target %s", in.QueueMaxDepth, in.QMax, FormatNumber(d.TargetValue))
	switch {
	case depth*in.Instance.CloudWatchRatio < d.TargetValue:
		f.Status = StatusFail
		f.Detail += ": the shield rejects load below the scale-out target, so the scaling metric can never reach it"
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
