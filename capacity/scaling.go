package capacity

import (
	"fmt"
	"math"

	"github.com/speech-infra/speech-infra/autoscale"
)

// The names and units shared by everything that deploys scaling from a plan: the endpoint stack renders a
// ScalingSpec as CloudFormation, the local deploy as API calls, and validate compares against it.
const (
	// ServiceNamespace is the Application Auto Scaling namespace of SageMaker variants.
	ServiceNamespace = "sagemaker"
	// ScalableDimension is the variant's instance count.
	ScalableDimension = "sagemaker:variant:DesiredInstanceCount"
	// MetricNamespace is where SageMaker publishes endpoint metrics.
	MetricNamespace = "AWS/SageMaker"
	// ConcurrencyMetric is the per-instance concurrency SageMaker publishes (in flight including queued).
	ConcurrencyMetric = "ConcurrentRequestsPerModel"
	// TargetTrackingMetric is the predefined high-resolution metric the scale-out policy tracks.
	TargetTrackingMetric = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
	// AlarmPeriodS is the period of the operator alarms on AWS, in seconds (divided by a plan's CloudWatch
	// compression, as every AWS duration of a plan).
	AlarmPeriodS = 60
	// LatencyEvaluationPeriods is how many periods latency must exceed the SLO before the latency alarm fires.
	LatencyEvaluationPeriods = 3
)

// ScalingSpec is everything a plan that passed the gate turns into on an endpoint: the scalable target, the
// two policies, the alarms and the queue shield. It is derived once, here, so that the CDK stack and the
// local deploy cannot drift apart.
type ScalingSpec struct {
	// Endpoint and Variant name the scaled variant.
	Endpoint, Variant string
	// MinInstances and MaxInstances bound the fleet.
	MinInstances, MaxInstances int
	// ScaleOut is the target-tracking policy.
	ScaleOut TargetTrackingSpec
	// ScaleIn is the step policy that removes one instance, triggered by the alarm with TriggersScaleIn.
	ScaleIn StepScaleInSpec
	// Alarms are the scale-in alarm and the operator alarms, in a stable order.
	Alarms []AlarmSpec
	// QueueMaxDepth is the container's queue shield once the plan is deployed.
	QueueMaxDepth int
	// SLOMs and SLOPercentile are the latency objective.
	SLOMs, SLOPercentile int
	// TPlanS is the plan's T_plan.
	TPlanS float64
	// MetricPeriodS is the period of the high-resolution metric the target tracking alarms evaluate: 10 s on
	// AWS, 10 s ÷ the CloudWatch compression on an emulator (Inputs.MetricPeriodS). Nothing deploys it: the
	// platform sets it; the simulator runs its alarms on it.
	MetricPeriodS int
}

// TargetTrackingSpec is the scale-out policy: target tracking with scale-in disabled. Scale-in by target
// tracking would remove instances as soon as concurrency dips below the target, which after a removal puts the
// survivors right back at C_scale_max; the step policy scales in only below C_scale_min.
type TargetTrackingSpec struct {
	// PolicyName is the policy's name.
	PolicyName string
	// PredefinedMetric is TargetTrackingMetric.
	PredefinedMetric string
	// TargetValue is C_scale_max × the measured CloudWatch/client concurrency ratio.
	TargetValue float64
	// ScaleOutCooldownS is the plan's scale-out cooldown.
	ScaleOutCooldownS int
}

// StepScaleInSpec is the scale-in policy: change capacity by Adjustment when its alarm breaches.
type StepScaleInSpec struct {
	// PolicyName is the policy's name.
	PolicyName string
	// CooldownS is the plan's scale-in cooldown.
	CooldownS int
	// Adjustment is the capacity change (−1).
	Adjustment int
}

// AlarmSpec is one CloudWatch alarm on an endpoint metric (dimensions EndpointName and VariantName).
type AlarmSpec struct {
	// ID is a stable identifier (the CDK construct id).
	ID string
	// Name and Description are the alarm's.
	Name, Description string
	// Metric is the metric name in MetricNamespace.
	Metric string
	// Statistic is Maximum, Average or Sum; empty when ExtendedStatistic is set.
	Statistic string
	// ExtendedStatistic is a percentile such as p95.
	ExtendedStatistic string
	// PeriodS, EvaluationPeriods and DatapointsToAlarm shape the evaluation.
	PeriodS, EvaluationPeriods, DatapointsToAlarm int
	// Threshold and Comparison (GreaterThanThreshold, LessThanThreshold) decide a breach.
	Threshold  float64
	Comparison string
	// TreatMissingData is missing, notBreaching, breaching or ignore.
	TreatMissingData string
	// TriggersScaleIn marks the alarm whose action is the scale-in policy.
	TriggersScaleIn bool
}

// ResourceID is the Application Auto Scaling resource id of an endpoint variant.
func ResourceID(endpoint, variant string) string {
	return fmt.Sprintf("endpoint/%s/variant/%s", endpoint, variant)
}

// Policy names, derived from the endpoint name. AlarmNames has the alarm names.
func scaleOutPolicyName(endpoint string) string { return endpoint + "-scale-out" }
func scaleInPolicyName(endpoint string) string  { return endpoint + "-scale-in" }

// AlarmNames returns the names of every alarm ScalingSpecFor creates for an endpoint, so that removal finds
// them without a plan.
func AlarmNames(endpoint string) []string {
	return []string{endpoint + "-scale-in", endpoint + "-queue-saturated", endpoint + "-latency-above-slo", endpoint + "-fleet-at-maximum"}
}

// ScalingSpecFor derives the scaling of an endpoint variant from a plan that passed the gate. The plan's
// envelope simulation runs this same spec (SimulatedScaling), so what is simulated is what is deployed.
func ScalingSpecFor(endpoint, variant string, p *Plan) ScalingSpec {
	return scalingSpec(endpoint, variant, p.Fingerprint, p.Derived)
}

func scalingSpec(endpoint, variant string, fp Fingerprint, d Derived) ScalingSpec {
	names := AlarmNames(endpoint)
	target, scaleIn := round3(d.TargetValue), round3(d.ScaleInThreshold)
	slo, pct := fp.SLOTTFABMs, fp.SLOPercentile
	// SageMaker publishes no instance-count metric. A fleet that can still grow brings concurrency back under
	// the target within T_plan plus one scale-out cooldown; concurrency above the target for longer than that
	// means the fleet is stuck at its maximum (or scaling is suspended).
	f := fp.Compression()
	alarmPeriod := int(autoscale.CompressS(AlarmPeriodS, f))
	stuck := int(math.Ceil((d.TPlanS+float64(d.ScaleOutCooldownS))/float64(alarmPeriod))) + 1
	periods := func(n int) string {
		if f == 1 {
			return fmt.Sprintf("%d minutes", n)
		}
		return fmt.Sprintf("%d x %d s (%d minutes ÷ CloudWatch compression %d)", n, alarmPeriod, n, f)
	}
	return ScalingSpec{
		Endpoint: endpoint, Variant: variant,
		MinInstances: d.MinInstances, MaxInstances: d.MaxInstances,
		ScaleOut: TargetTrackingSpec{
			PolicyName: scaleOutPolicyName(endpoint), PredefinedMetric: TargetTrackingMetric,
			TargetValue: target, ScaleOutCooldownS: d.ScaleOutCooldownS,
		},
		ScaleIn:       StepScaleInSpec{PolicyName: scaleInPolicyName(endpoint), CooldownS: d.ScaleInCooldownS, Adjustment: -1},
		QueueMaxDepth: d.QueueMaxDepth,
		SLOMs:         slo, SLOPercentile: pct, TPlanS: d.TPlanS, MetricPeriodS: d.ScaleInPeriodS,
		Alarms: []AlarmSpec{
			{
				ID: "ScaleInAlarm", Name: names[0], TriggersScaleIn: true,
				Description: fmt.Sprintf("Per-instance concurrency (%d-s Maximum) below %g, the metric at the plan's scale-in rate %g rps, for %d x %d s (at least T_plan %gs): remove one instance", d.ScaleInPeriodS, scaleIn, round3(d.ScaleInRPS), d.ScaleInEvaluationPeriods, d.ScaleInPeriodS, d.TPlanS),
				Metric:      ConcurrencyMetric, Statistic: "Maximum", PeriodS: d.ScaleInPeriodS,
				EvaluationPeriods: d.ScaleInEvaluationPeriods, DatapointsToAlarm: d.ScaleInEvaluationPeriods,
				Threshold: scaleIn, Comparison: "LessThanThreshold", TreatMissingData: "missing",
			},
			{
				ID: "QueueSaturationAlarm", Name: names[1],
				Description: fmt.Sprintf("The container's queue shield (depth %d) is rejecting requests with 503: the fleet is not keeping up", d.QueueMaxDepth),
				Metric:      "Invocation5XXErrors", Statistic: "Sum", PeriodS: alarmPeriod, EvaluationPeriods: 1, DatapointsToAlarm: 1,
				Threshold: 0, Comparison: "GreaterThanThreshold", TreatMissingData: "notBreaching",
			},
			{
				// ModelLatency is reported in microseconds.
				ID: "LatencyAlarm", Name: names[2],
				Description: fmt.Sprintf("p%d model latency above the %d ms SLO for %s", pct, slo, periods(LatencyEvaluationPeriods)),
				Metric:      "ModelLatency", ExtendedStatistic: fmt.Sprintf("p%d", pct), PeriodS: alarmPeriod,
				EvaluationPeriods: LatencyEvaluationPeriods, DatapointsToAlarm: LatencyEvaluationPeriods,
				Threshold: float64(slo) * 1000, Comparison: "GreaterThanThreshold", TreatMissingData: "notBreaching",
			},
			{
				ID: "FleetAtMaximumAlarm", Name: names[3],
				Description: fmt.Sprintf("Concurrency above the scale-out target (%g) for %s, longer than a scale-out takes (T_plan %gs): the fleet is at its maximum of %d or scaling is suspended", target, periods(stuck), d.TPlanS, d.MaxInstances),
				Metric:      ConcurrencyMetric, Statistic: "Average", PeriodS: alarmPeriod, EvaluationPeriods: stuck, DatapointsToAlarm: stuck,
				Threshold: target, Comparison: "GreaterThanThreshold", TreatMissingData: "notBreaching",
			},
		},
	}
}

// round3 rounds to three decimals so thresholds read as the plan printed them.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
