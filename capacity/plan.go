package capacity

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/speech-infra/speech-infra/autoscale"
	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/loadmodel"
	"github.com/speech-infra/speech-infra/models"
)

// Verdicts of a plan.
const (
	// VerdictFeasible means no finding failed.
	VerdictFeasible = "feasible"
	// VerdictInfeasible means at least one finding failed.
	VerdictInfeasible = "infeasible"
)

// Planning defaults that the catalog does not hold.
const (
	// DefaultMetricPeriodS is the period of the high-resolution ConcurrentRequestsPerModel metric on AWS; a
	// plan measured on a compressed emulator divides it by the compression (Inputs.MetricPeriodS).
	DefaultMetricPeriodS = int(autoscale.MetricPeriod / time.Second)
	// DefaultEvaluationPeriods is how many breaching datapoints the target-tracking alarm waits for.
	DefaultEvaluationPeriods = 3
)

// Compression is the CloudWatch compression factor the plan was measured at (docs/design.md, "Compressed
// CloudWatch time"): 1 on AWS and in a what-if plan.
func (fp Fingerprint) Compression() int { return max(1, fp.CloudWatchCompression) }

// Compression is the CloudWatch compression factor of the inputs: AWS's metric period over theirs (1, 2, 5 or
// 10; verifyInputs refuses any other period).
func (in Inputs) Compression() int {
	if in.MetricPeriodS < 1 || DefaultMetricPeriodS%in.MetricPeriodS != 0 {
		return 1
	}
	return DefaultMetricPeriodS / in.MetricPeriodS
}

// awsS is an AWS duration of s seconds as the plan's clock runs it: divided by the inputs' compression. Every
// AWS-facing constant of the derivation goes through it.
func (in Inputs) awsS(s float64) float64 { return autoscale.CompressS(s, in.Compression()) }

// ScaleOutAlarmMemory is how long after a load ends the scale-out alarm's datapoints may still hold it: the
// period the load ended in, the DefaultEvaluationPeriods datapoints, and the evaluation tick (one period, the
// simulator's evaluation lag: simulate.EvaluationLag on AWS's periods). A replay that must start from a quiet
// alarm, as the simulation does, waits this long after the load before it.
func (p *Plan) ScaleOutAlarmMemory() time.Duration {
	period := time.Duration(p.Inputs.MetricPeriodS) * time.Second
	return time.Duration(DefaultEvaluationPeriods+2) * period
}

// Plan is the artifact of tts-bench plan: thresholds, cooldowns and fleet bounds derived from measurement,
// the findings that judge them and the verdict. The endpoint stack reads Derived (and Fingerprint.SLO*)
// after Gate accepted the plan.
type Plan struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Measured is false for what-if plans built from assumed numbers; Gate refuses those.
	Measured bool `json:"measured"`
	// Fingerprint is what the deployment must match.
	Fingerprint Fingerprint `json:"fingerprint"`
	// Inputs are everything the derived values and the load-model findings are computed from.
	Inputs Inputs `json:"inputs"`
	// Derived are the values the endpoint stack deploys.
	Derived Derived `json:"derived"`
	// Envelope is the simulation that decides feasibility: the plan's scaling and the instance model on every
	// trace of the envelope (docs/design.md, "Feasible means simulated and met").
	Envelope Envelope `json:"envelope"`
	// Findings judge the plan; any fail makes it infeasible.
	Findings []Finding `json:"findings"`
	// Verdict is VerdictFeasible or VerdictInfeasible.
	Verdict string `json:"verdict"`
}

// Fingerprint identifies what was measured; a deployment must match it for Gate to accept the plan.
type Fingerprint struct {
	// Model is the catalog id.
	Model string `json:"model"`
	// ModelRevision is the pinned weights revision measured ("none" for engines without weights).
	ModelRevision string `json:"model_revision"`
	// InstanceType is the instance type measured.
	InstanceType string `json:"instance_type"`
	// Emulator is true when the plan was measured on the local emulator (QMax.Emulator): the gate accepts it
	// for a deployment on the emulator only.
	Emulator bool `json:"emulator,omitempty"`
	// CloudWatchCompression is the CloudWatch compression of the emulator measured (QMax.CloudWatchCompression;
	// absent: 1, as on AWS): the plan's AWS-derived timings are divided by it, and the gate accepts the plan
	// only for a deployment with the same factor (docs/design.md, "Compressed CloudWatch time").
	CloudWatchCompression int `json:"cloudwatch_compression,omitempty"`
	// ContainerDigest is the SourceDigest of the container measured; empty only in what-if plans.
	ContainerDigest string `json:"container_digest"`
	// SLOTTFABMs is the TTFAB bound of the SLO in milliseconds.
	SLOTTFABMs int `json:"slo_ttfab_ms"`
	// SLOPercentile is the percentile of the SLO (95 for p95).
	SLOPercentile int `json:"slo_percentile"`
	// Transport is the transport measured over.
	Transport string `json:"transport"`
}

// Inputs are the measured numbers and the planning assumptions of a plan.
type Inputs struct {
	// QMaxFile is the file name of the qmax artifact beside the plan; empty in what-if plans.
	QMaxFile string `json:"qmax_file,omitempty"`
	// QMaxSHA256 is the qmax artifact's digest; empty in what-if plans.
	QMaxSHA256 string `json:"qmax_sha256,omitempty"`
	// TTotalFile is the file name of the ttotal artifact beside the plan; empty in what-if plans.
	TTotalFile string `json:"ttotal_file,omitempty"`
	// TTotalSHA256 is the ttotal artifact's digest; empty in what-if plans.
	TTotalSHA256 string `json:"ttotal_sha256,omitempty"`
	// DryRun is true when either artifact came from a dry run.
	DryRun bool `json:"dry_run"`
	// QMax is Q_max, concurrent requests per instance, by TTFAB and stall (QMax.QMax): the Q_max planned with.
	QMax int `json:"q_max"`
	// QMaxTTFABOnly is the qmax artifact's Q_max by TTFAB alone (QMax.QMaxTTFABOnly, the original's definition:
	// docs/design.md, "The original"), recorded beside QMax for comparison only: nothing is planned with it.
	// QMaxTTFABOnlyLowerBound is true when no step failed by TTFAB alone. Absent when the artifact did not record
	// it (not "the same as q_max"), and in what-if plans.
	QMaxTTFABOnly           *int `json:"q_max_ttfab_only,omitempty"`
	QMaxTTFABOnlyLowerBound bool `json:"q_max_ttfab_only_lower_bound,omitempty"`
	// TTotalS is T_total in seconds.
	TTotalS float64 `json:"t_total_s"`
	// Throughput is the per-instance throughput curve from the staircase (closed loop), by concurrency.
	Throughput []ThroughputPoint `json:"throughput"`
	// CloudWatchRatio is ConcurrentRequestsPerModel ÷ client concurrency near C_scale_max (1 when unmeasured).
	CloudWatchRatio float64 `json:"cloudwatch_ratio"`
	// Instance is the model of one instance under load the plan is derived from (package loadmodel): the rate
	// staircase of the qmax artifact, or for a what-if plan a queueing approximation marked NOT MEASURED.
	Instance loadmodel.Model `json:"instance"`
	// ScaleInMargin is the hysteresis below the scale-in boundary (0.1: scale in at 90% of the rate at which
	// the survivors would reach the scale-out rate).
	ScaleInMargin float64 `json:"scale_in_margin"`
	// HoverAmplitude is the swing of the envelope's hover and sawtooth traces around each scale-in boundary
	// (0.15: ±15%): an input, never derived from ScaleInMargin, so that a margin too small for it shows as a flap.
	HoverAmplitude float64 `json:"hover_amplitude"`
	// Traces are the user's traces (--trace FILE, and the planned-on part of each --traffic FILE) the envelope
	// includes besides the derived ones.
	Traces []TraceInput `json:"traces,omitempty"`
	// Holdout are the held-out parts of the user's traffic (tts-bench plan --traffic, --holdout): nothing of the
	// plan is derived from them, and the envelope validates the plan on them (kind holdout), so a plan that
	// fails them is infeasible and the gate, which re-runs the envelope, refuses it.
	Holdout []TraceInput `json:"holdout,omitempty"`
	// SurgeRatio is s: load may grow by this factor within one T_plan.
	SurgeRatio float64 `json:"surge_ratio"`
	// SurgeSource says where SurgeRatio came from when the traffic gave it (a quantile of its surge ratio at
	// T_plan, tts-bench plan --traffic); empty for the catalog's or --surge.
	SurgeSource string `json:"surge_source,omitempty"`
	// DetectionBufferS is the time from a surge until a scale-out is asked for, in AWS's seconds: T_plan adds it
	// divided by the compression (Compression).
	DetectionBufferS float64 `json:"detection_buffer_s"`
	// MetricPeriodS is the scaling metric's period, in seconds: AWS's 10 s divided by the compression of the
	// emulator measured (1 s on an emulator at time scale 10 or more).
	MetricPeriodS int `json:"metric_period_s"`
	// EvaluationPeriods is the number of breaching datapoints before a scale-out.
	EvaluationPeriods int `json:"evaluation_periods"`
	// PeakRPS is the peak load the fleet must carry, requests per second.
	PeakRPS float64 `json:"peak_rps"`
	// TroughRPS is the load a surge starts from, requests per second.
	TroughRPS float64 `json:"trough_rps"`
	// MinInstances is the fleet minimum.
	MinInstances int `json:"min_instances"`
	// MaxInstances is the largest fleet allowed (catalog or override); peak_coverage checks against it.
	MaxInstances int `json:"max_instances"`
	// QueueMaxDepth is the catalog's shield depth.
	QueueMaxDepth int `json:"queue_max_depth"`
	// InvocationTimeoutS is the container's invocation time limit.
	InvocationTimeoutS int `json:"invocation_timeout_s"`
}

// ThroughputPoint is the measured per-instance throughput at one concurrency.
type ThroughputPoint struct {
	// Concurrency is the closed-loop concurrency.
	Concurrency float64 `json:"concurrency"`
	// RPS is the completed requests per second at that concurrency.
	RPS float64 `json:"rps"`
}

// Derived are the values computed from Inputs; the endpoint stack deploys them. Reasoning holds the one line
// behind each.
type Derived struct {
	// Headroom is h = s − 1.
	Headroom float64 `json:"headroom"`
	// CScaleMax is the original's (1 − h)·Q_max, shown for comparison only: concurrency thresholds read off a
	// closed-loop curve sit in the queueing tail of an instance that saturates; nothing deploys it.
	CScaleMax float64 `json:"c_scale_max"`
	// CScaleMin is the original's (1 − 2h)·Q_max, shown for comparison only.
	CScaleMin float64 `json:"c_scale_min"`
	// TPlanS is T_total + detection buffer, in seconds.
	TPlanS float64 `json:"t_plan_s"`
	// ScaleOutCooldownS is clamp(T_plan/2, 10, 30) rounded up to whole seconds.
	ScaleOutCooldownS int `json:"scale_out_cooldown_s"`
	// ScaleInCooldownS is max(300, 3·T_plan) rounded up to whole seconds.
	ScaleInCooldownS int `json:"scale_in_cooldown_s"`
	// SafeRPS is the highest offered rate per instance that meets the SLO (the instance model).
	SafeRPS float64 `json:"safe_rps"`
	// ScaleOutRPS is SafeRPS ÷ s: the highest rate per instance that still meets the SLO after growing by s
	// within T_plan. The fleet scales out above it.
	ScaleOutRPS float64 `json:"scale_out_rps"`
	// ScaleInRPS is ScaleOutRPS × min ÷ (min + 1) × (1 − scale_in_margin): below it one instance may go, and
	// the rest stay below ScaleOutRPS for every fleet size in range.
	ScaleInRPS float64 `json:"scale_in_rps"`
	// ThroughputAtQMaxRPS is the per-instance closed-loop throughput at Q_max (for the invocation time limit).
	ThroughputAtQMaxRPS float64 `json:"throughput_at_q_max_rps"`
	// MinInstances is the scalable target's minimum capacity.
	MinInstances int `json:"min_instances"`
	// MaxInstances is ceil(peak_rps ÷ ScaleOutRPS), at least MinInstances and at most the allowed maximum:
	// the scalable target's maximum.
	MaxInstances int `json:"max_instances"`
	// TargetValue is the instance model's metric at ScaleOutRPS: the target-tracking target on
	// SageMakerVariantConcurrentRequestsPerModelHighResolution (10-s Maximum, CloudWatch units).
	TargetValue float64 `json:"target_value"`
	// ScaleInThreshold is the instance model's metric at ScaleInRPS: the scale-in alarm's threshold.
	ScaleInThreshold float64 `json:"scale_in_threshold"`
	// ScaleInPeriodS is the scale-in alarm's period (the metric's 10 s).
	ScaleInPeriodS int `json:"scale_in_period_s"`
	// ScaleInEvaluationPeriods is ceil(T_plan ÷ period), at least 3: the scale-in alarm's window is at least
	// T_plan, so it cannot fire during a surge's scale-out.
	ScaleInEvaluationPeriods int `json:"scale_in_evaluation_periods"`
	// QueueMaxDepth is the container's QUEUE_MAX_DEPTH once the plan is deployed.
	QueueMaxDepth int `json:"queue_max_depth"`
	// Reasoning is one line per deployed value: how it follows from the inputs.
	Reasoning []Reason `json:"reasoning"`
}

// Reason is the one line of reasoning behind a derived value.
type Reason struct {
	// Field is the derived field's JSON name.
	Field string `json:"field"`
	// Value is the value as printed.
	Value string `json:"value"`
	// Why says how it follows from the inputs.
	Why string `json:"why"`
}

// Status is a finding's outcome.
type Status string

// Finding outcomes.
const (
	StatusPass Status = "pass"
	StatusWarn Status = "warn"
	StatusFail Status = "fail"
)

// Finding names, in the order a plan lists them.
const (
	FindingMeasurementValidity  = "measurement_validity"
	FindingSLOConsistency       = "slo_consistency"
	FindingTransportConsistency = "transport_consistency"
	FindingPeakCoverage         = "peak_coverage"
	FindingScaleInSafety        = "scale_in_safety"
	FindingSurgeSurvival        = "surge_survival"
	FindingEnvelope             = "envelope"
	FindingInstanceModel        = "instance_model"
	FindingQueueDepth           = "queue_depth"
	FindingInvocationTimeout    = "invocation_timeout"
)

// FindingNames lists every finding a plan carries, in order.
var FindingNames = []string{
	FindingMeasurementValidity, FindingSLOConsistency, FindingTransportConsistency, FindingInstanceModel,
	FindingPeakCoverage, FindingScaleInSafety, FindingSurgeSurvival, FindingEnvelope, FindingQueueDepth,
	FindingInvocationTimeout,
}

// Finding is one judgement of the plan.
type Finding struct {
	// Name is one of FindingNames.
	Name string `json:"name"`
	// Status is pass, warn or fail.
	Status Status `json:"status"`
	// Detail states what was found, with the numbers.
	Detail string `json:"detail"`
	// Recommendation says what to do; empty when nothing needs doing.
	Recommendation string `json:"recommendation,omitempty"`
}

// Feasible reports whether the verdict is feasible.
func (p *Plan) Feasible() bool { return p.Verdict == VerdictFeasible }

// Failed returns the findings that failed, in order: the reasons the plan is infeasible.
func (p *Plan) Failed() []Finding { return failed(p.Findings) }

// Finding returns the named finding, or false.
func (p *Plan) Finding(name string) (Finding, bool) {
	for _, f := range p.Findings {
		if f.Name == name {
			return f, true
		}
	}
	return Finding{}, false
}

// LoadPlan reads and strictly decodes a plan. It does not Verify it.
func LoadPlan(path string) (*Plan, error) {
	v, _, err := load[Plan](path)
	return v, err
}

// verifyInputs returns every out-of-range input, naming the JSON field and stating the limit.
func verifyInputs(in Inputs) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if in.QMax < 1 || in.QMax > MaxConcurrency {
		add("q_max: is %d: want 1 to %d concurrent requests", in.QMax, MaxConcurrency)
	}
	if v := in.QMaxTTFABOnly; v != nil && (*v < in.QMax || *v > MaxConcurrency) {
		add("q_max_ttfab_only: is %d: want %d (q_max: every step passing TTFAB and stall passes TTFAB) to %d concurrent requests", *v, in.QMax, MaxConcurrency)
	}
	if in.QMaxTTFABOnly == nil && in.QMaxTTFABOnlyLowerBound {
		add("q_max_ttfab_only_lower_bound: is true but q_max_ttfab_only is absent")
	}
	if !positiveUpTo(in.TTotalS, MaxTTotalS) {
		add("t_total_s: is %g: want a number of seconds in (0, %d]", in.TTotalS, MaxTTotalS)
	}
	if !models.ValidSurgeRatio(in.SurgeRatio) {
		add("surge_ratio: is %s: want a ratio in [1, %d] (1.25 = load may grow 25%% within one T_plan)", exact(in.SurgeRatio), models.MaxSurgeRatio)
	}
	if !inRange(in.DetectionBufferS, 0, MaxDetectionBufferS) {
		add("detection_buffer_s: is %g: want 0 to %d seconds", in.DetectionBufferS, MaxDetectionBufferS)
	}
	if in.MetricPeriodS < 1 || DefaultMetricPeriodS%in.MetricPeriodS != 0 || !autoscale.ValidCompression(DefaultMetricPeriodS/in.MetricPeriodS) {
		add("metric_period_s: is %d: want %d s divided by a CloudWatch compression of 1, 2, 5 or 10", in.MetricPeriodS, DefaultMetricPeriodS)
	}
	if in.EvaluationPeriods < 1 || in.EvaluationPeriods > 100 {
		add("evaluation_periods: is %d: want 1 to 100", in.EvaluationPeriods)
	}
	if !positiveUpTo(in.PeakRPS, MaxRPS) {
		add("peak_rps: is %g: want a request rate in (0, %g]", in.PeakRPS, float64(MaxRPS))
	}
	if !positiveUpTo(in.TroughRPS, math.Min(in.PeakRPS, MaxRPS)) {
		add("trough_rps: is %g: want a request rate in (0, peak_rps %g]", in.TroughRPS, in.PeakRPS)
	}
	if in.MinInstances < 1 || in.MinInstances > MaxInstances {
		add("min_instances: is %d: want 1 to %d", in.MinInstances, MaxInstances)
	}
	if in.MaxInstances < max(1, in.MinInstances) || in.MaxInstances > MaxInstances {
		add("max_instances: is %d: want min_instances %d to %d", in.MaxInstances, in.MinInstances, MaxInstances)
	}
	if in.QueueMaxDepth < 1 || in.QueueMaxDepth > MaxQueueDepth {
		add("queue_max_depth: is %d: want 1 to %d", in.QueueMaxDepth, MaxQueueDepth)
	}
	if in.InvocationTimeoutS < 1 || in.InvocationTimeoutS > MaxInvocationTimeoutS {
		add("invocation_timeout_s: is %d: want 1 to %d seconds", in.InvocationTimeoutS, MaxInvocationTimeoutS)
	}
	if !inRange(in.CloudWatchRatio, MinCloudWatchRatio, MaxCloudWatchRatio) {
		add("cloudwatch_ratio: is %g: want a ratio in [%g, %g] (1 when unmeasured)", in.CloudWatchRatio, MinCloudWatchRatio, MaxCloudWatchRatio)
	}
	if !(in.ScaleInMargin >= 0 && in.ScaleInMargin < 0.9) {
		add("scale_in_margin: is %s: want a share in [0, 0.9) (0.1 = scale in at 90%% of the boundary)", exact(in.ScaleInMargin))
	}
	if !(in.HoverAmplitude > 0 && in.HoverAmplitude <= MaxHoverAmplitude) {
		add("hover_amplitude: is %s: want a share in (0, %s] (0.15 = the hover traces swing ±15%% around each scale-in boundary)", exact(in.HoverAmplitude), exact(MaxHoverAmplitude))
	}
	if err := in.Instance.Validate(); err != nil {
		add("instance: %v", err)
	}
	if len(in.Traces) > MaxUserTraces {
		add("traces: has %d traces: at most %d", len(in.Traces), MaxUserTraces)
	}
	for i, t := range in.Traces {
		if _, err := t.trace(); err != nil {
			add("traces[%d]: %v", i, err)
		}
	}
	if len(in.Holdout) > MaxUserTraces {
		add("holdout: has %d traces: at most %d", len(in.Holdout), MaxUserTraces)
	}
	for i, t := range in.Holdout {
		if _, err := t.trace(); err != nil {
			add("holdout[%d]: %v", i, err)
		}
	}
	if len(in.Throughput) == 0 {
		add("throughput: is empty: the plan needs the measured throughput curve")
	}
	if len(in.Throughput) > maxThroughputPoints {
		add("throughput: has %d points: at most %d (one per staircase step)", len(in.Throughput), maxThroughputPoints)
		return errs
	}
	for i, p := range in.Throughput {
		if !positiveUpTo(p.Concurrency, MaxConcurrency) || (i > 0 && !(p.Concurrency > in.Throughput[i-1].Concurrency)) {
			add("throughput[%d].concurrency: is %g: want increasing concurrencies in (0, %d]", i, p.Concurrency, MaxConcurrency)
		}
		if !positiveUpTo(p.RPS, MaxInstanceRPS) {
			add("throughput[%d].rps: is %g: want a per-instance request rate in (0, %g]", i, p.RPS, MaxInstanceRPS)
		}
	}
	return errs
}

// maxThroughputPoints bounds the throughput curve.
const maxThroughputPoints = MaxQMaxSteps

// ceilSeconds rounds a duration in seconds up to whole seconds, ignoring float noise below a microsecond.
func ceilSeconds(x float64) int { return int(math.Ceil(x - 1e-6)) }

// The derivation's fixed numbers (docs/design.md, "Plan"); tts-bench plan's help formats them in.
const (
	// ScaleOutCooldownMinS and ScaleOutCooldownMaxS bound the scale-out cooldown, T_plan ÷ 2.
	ScaleOutCooldownMinS = 10
	ScaleOutCooldownMaxS = 30
	// ScaleInCooldownMinS and ScaleInCooldownTPlan set the scale-in cooldown, max(ScaleInCooldownMinS,
	// ScaleInCooldownTPlan × T_plan): one instance at a time on the way down.
	ScaleInCooldownMinS  = 300
	ScaleInCooldownTPlan = 3
	// MinScaleInEvaluationPeriods is the fewest datapoints the scale-in alarm waits for, however short T_plan.
	MinScaleInEvaluationPeriods = 3
)

// DefaultScaleInMargin is the scale-in hysteresis a plan uses unless told otherwise. The envelope's hover at
// DefaultHoverAmplitude puts (1 + a) × (1 − margin) of the scale-out rate on the survivors of a scale-in from
// min + 1: below a margin of a ÷ (1 + a), 0.13, they reach it and the fleet scales out again; 0.2 is the
// search's next step above that.
const DefaultScaleInMargin = 0.2

// derive computes the derived values from valid inputs (docs/design.md, "Plan"): thresholds in rate terms
// from the instance model, then the metric values the alarms deploy.
func derive(in Inputs) Derived {
	m := in.Instance
	s := in.SurgeRatio
	// The AWS-facing durations (the detection buffer, the cooldowns' bounds, the metric period) run on the
	// plan's clock: divided by its compression (docs/design.md, "Compressed CloudWatch time").
	buffer, outMin, outMax, inMin := in.awsS(in.DetectionBufferS), in.awsS(ScaleOutCooldownMinS), in.awsS(ScaleOutCooldownMaxS), in.awsS(ScaleInCooldownMinS)
	d := Derived{Headroom: s - 1, TPlanS: in.TTotalS + buffer}
	d.CScaleMax, d.CScaleMin = thresholds(s, in.QMax)
	d.ScaleOutCooldownS = ceilSeconds(math.Min(math.Max(d.TPlanS/2, outMin), outMax))
	d.ScaleInCooldownS = ceilSeconds(math.Max(inMin, ScaleInCooldownTPlan*d.TPlanS))
	d.SafeRPS = m.SafeRPS()
	d.ScaleOutRPS = d.SafeRPS / s
	minN := float64(in.MinInstances)
	d.ScaleInRPS = d.ScaleOutRPS * minN / (minN + 1) * (1 - in.ScaleInMargin)
	d.ThroughputAtQMaxRPS = throughputAt(in.Throughput, float64(in.QMax))
	d.MinInstances = in.MinInstances
	need := instancesFor(in.PeakRPS, d.ScaleOutRPS)
	d.MaxInstances = min(in.MaxInstances, max(in.MinInstances, need))
	d.TargetValue = m.At(d.ScaleOutRPS).Metric
	d.ScaleInThreshold = m.At(d.ScaleInRPS).Metric
	d.ScaleInPeriodS = in.MetricPeriodS
	d.ScaleInEvaluationPeriods = max(MinScaleInEvaluationPeriods, ceilSeconds(d.TPlanS/float64(d.ScaleInPeriodS)))
	d.QueueMaxDepth = in.QueueMaxDepth
	f := FormatNumber
	model := "the instance model (" + m.Basis + ")"
	d.Reasoning = []Reason{
		{"safe_rps", f(d.SafeRPS), fmt.Sprintf("the highest offered rate per instance at which %s meets the SLO: at most %s%% of requests over %s ms TTFAB or shed, p95 stall ≤ %s ms%s",
			model, f(100*m.SLO.AllowedShed()), f(m.SLO.TTFABMs), f(m.SLO.StallMs), safeBound(m))},
		{"scale_out_rps", f(d.ScaleOutRPS), fmt.Sprintf("safe_rps %s ÷ surge %s%s: load may grow by that factor within T_plan and still meet the SLO", f(d.SafeRPS), exact(s), surgeSourceNote(in))},
		{"target_value", f(d.TargetValue), fmt.Sprintf("the metric (10-s Maximum of ConcurrentRequestsPerModel) the instance model gives at scale_out_rps %s rps", f(d.ScaleOutRPS))},
		{"scale_in_rps", f(d.ScaleInRPS), fmt.Sprintf("scale_out_rps × min/(min+1) = %s × %d/%d, less the %s%% margin: scaling in from n to n−1 raises each survivor's rate by n/(n−1) ≤ (min+1)/min, so for every n from %d to %d the survivors stay below scale_out_rps",
			f(d.ScaleOutRPS), in.MinInstances, in.MinInstances+1, f(100*in.ScaleInMargin), in.MinInstances+1, max(in.MinInstances+1, d.MaxInstances))},
		{"scale_in_threshold", f(d.ScaleInThreshold), fmt.Sprintf("the metric the instance model gives at scale_in_rps %s rps", f(d.ScaleInRPS))},
		{"scale_in_evaluation_periods", fmt.Sprint(d.ScaleInEvaluationPeriods), fmt.Sprintf("%d × %d s ≥ T_plan %s s (at least 3): the scale-in alarm cannot fire inside a surge's scale-out", d.ScaleInEvaluationPeriods, d.ScaleInPeriodS, f(d.TPlanS))},
		{"max_instances", fmt.Sprint(d.MaxInstances), fmt.Sprintf("ceil(peak %s rps ÷ scale_out_rps %s) = %d, at least min %d, at most the allowed %d", f(in.PeakRPS), f(d.ScaleOutRPS), need, in.MinInstances, in.MaxInstances)},
		{"t_plan_s", f(d.TPlanS), fmt.Sprintf("T_total %s s + detection buffer %s s%s", f(in.TTotalS), f(buffer), compressedNote(in, in.DetectionBufferS))},
		{"scale_out_cooldown_s", fmt.Sprint(d.ScaleOutCooldownS), fmt.Sprintf("T_plan ÷ 2 within [%s, %s] s%s, counted from the end of the previous scale-out", f(outMin), f(outMax), compressedNote(in, 0))},
		{"scale_in_cooldown_s", fmt.Sprint(d.ScaleInCooldownS), fmt.Sprintf("max(%s s%s, 3 × T_plan): one instance at a time on the way down", f(inMin), compressedNote(in, ScaleInCooldownMinS))},
		{"queue_max_depth", fmt.Sprint(d.QueueMaxDepth), "the catalog's queue shield"},
	}
	return d
}

// surgeSourceNote says, in a line of reasoning, where the surge ratio came from when the traffic gave it.
func surgeSourceNote(in Inputs) string {
	if in.SurgeSource == "" {
		return ""
	}
	return " (" + in.SurgeSource + ")"
}

// compressedNote says, in a line of reasoning, that an AWS duration (awsS seconds of AWS's, 0 for a range) was
// divided by the plan's compression; "" at compression 1.
func compressedNote(in Inputs, awsS float64) string {
	f := in.Compression()
	if f == 1 {
		return ""
	}
	if awsS == 0 {
		return fmt.Sprintf(" (AWS's ÷ CloudWatch compression %d)", f)
	}
	return fmt.Sprintf(" (AWS's %s s ÷ CloudWatch compression %d)", FormatNumber(awsS), f)
}

// thresholds are the original's scale-out and scale-in concurrencies for surge ratio s: with headroom
// h = s − 1, C_scale_max = (1 − h)·Q_max and C_scale_min = (1 − 2h)·Q_max. They are shown for comparison and
// used by the benchmark's "original thresholds" fleet; nothing deploys them.
func thresholds(s float64, qMax int) (cScaleMax, cScaleMin float64) {
	h, q := s-1, float64(qMax)
	return (1 - h) * q, (1 - 2*h) * q
}

// instancesFor is the number of instances that carry rps at perInstance each.
func instancesFor(rps, perInstance float64) int {
	if !(perInstance > 0) {
		return math.MaxInt32
	}
	n := math.Ceil(rps/perInstance - 1e-9)
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return max(1, int(n))
}

// throughputAt interpolates the throughput curve linearly at concurrency c, through the origin below the
// first point and flat beyond the last (a server does not deliver more than it was measured to).
func throughputAt(pts []ThroughputPoint, c float64) float64 {
	if c <= 0 || len(pts) == 0 {
		return 0
	}
	c0, x0 := 0.0, 0.0
	for _, p := range pts {
		if c <= p.Concurrency {
			return x0 + (p.RPS-x0)*(c-c0)/(p.Concurrency-c0)
		}
		c0, x0 = p.Concurrency, p.RPS
	}
	return x0
}

// finish computes the derived values, simulates the envelope, computes the model findings, inserts them after
// the given measurement findings and sets the verdict. When ctx is done it stops and returns an error that is
// ErrCanceled.
func finish(ctx context.Context, p *Plan, measurement []Finding) error {
	p.Derived = derive(p.Inputs)
	env, err := simulateEnvelope(ctx, p.Inputs, p.Derived)
	if err != nil {
		return err
	}
	p.Envelope = env
	p.Findings = append(measurement, modelFindings(p.Inputs, p.Derived, p.Envelope)...)
	p.Verdict = verdict(p.Findings)
	return nil
}

// verdict is infeasible when any finding failed.
func verdict(fs []Finding) string {
	if len(failed(fs)) > 0 {
		return VerdictInfeasible
	}
	return VerdictFeasible
}

// failed returns the findings that failed, in order.
func failed(fs []Finding) []Finding {
	var out []Finding
	for _, f := range fs {
		if f.Status == StatusFail {
			out = append(out, f)
		}
	}
	return out
}

// Options are the planning inputs that do not come from measurement. DefaultOptions fills them from the
// catalog; PeakRPS has no default.
type Options struct {
	// SurgeRatio is s, in [1, models.MaxSurgeRatio].
	SurgeRatio float64
	// DetectionBufferS is the detection buffer in seconds.
	DetectionBufferS float64
	// PeakRPS is the peak load, requests per second (required).
	PeakRPS float64
	// TroughRPS is the load a surge starts from; 0 means what the minimum fleet carries at the scale-in rate
	// (defaultTrough).
	TroughRPS float64
	// MinInstances is the fleet minimum.
	MinInstances int
	// MaxInstances is the largest fleet allowed.
	MaxInstances int
	// ScaleInMargin is the scale-in hysteresis.
	ScaleInMargin float64
	// HoverAmplitude is the envelope's hover amplitude (DefaultHoverAmplitude when 0).
	HoverAmplitude float64
	// Traces are the user's traces to add to the envelope.
	Traces []TraceInput
	// Holdout are held-out traffic the envelope validates the plan on (Inputs.Holdout).
	Holdout []TraceInput
	// SurgeSource says where SurgeRatio came from when the traffic gave it (Inputs.SurgeSource).
	SurgeSource string
}

// DefaultOptions returns the catalog's planning defaults for m.
func DefaultOptions(m models.Model) Options {
	return Options{
		SurgeRatio:       m.Planning.SurgeRatio,
		DetectionBufferS: m.Planning.DetectionBufferS,
		MinInstances:     m.Scaling.MinInstances,
		MaxInstances:     m.Scaling.MaxInstances,
		ScaleInMargin:    DefaultScaleInMargin,
		HoverAmplitude:   DefaultHoverAmplitude,
	}
}

// baseInputs fills the inputs that come from options and the catalog.
func baseInputs(m models.Model, o Options) Inputs {
	return Inputs{
		SurgeRatio:         o.SurgeRatio,
		DetectionBufferS:   o.DetectionBufferS,
		MetricPeriodS:      DefaultMetricPeriodS,
		EvaluationPeriods:  DefaultEvaluationPeriods,
		PeakRPS:            o.PeakRPS,
		TroughRPS:          o.TroughRPS,
		MinInstances:       o.MinInstances,
		MaxInstances:       o.MaxInstances,
		ScaleInMargin:      o.ScaleInMargin,
		HoverAmplitude:     cmp.Or(o.HoverAmplitude, DefaultHoverAmplitude),
		Traces:             o.Traces,
		Holdout:            o.Holdout,
		SurgeSource:        o.SurgeSource,
		QueueMaxDepth:      m.QueueMaxDepth,
		InvocationTimeoutS: m.Container.InvocationTimeoutS,
	}
}

// PlanOptions are the options that build these inputs again (baseInputs' inverse): what the gate rebuilds a
// plan with. The trough is the one recorded, which defaultTrough leaves as it is.
func (in Inputs) PlanOptions() Options {
	return Options{
		SurgeRatio: in.SurgeRatio, DetectionBufferS: in.DetectionBufferS, PeakRPS: in.PeakRPS, TroughRPS: in.TroughRPS,
		MinInstances: in.MinInstances, MaxInstances: in.MaxInstances, ScaleInMargin: in.ScaleInMargin, HoverAmplitude: in.HoverAmplitude,
		Traces: in.Traces, Holdout: in.Holdout, SurgeSource: in.SurgeSource,
	}
}

// defaultTrough sets TroughRPS, when unset, to what the minimum fleet carries at the scale-in rate (a quiet
// fleet that has scaled in as far as it will), never above the peak.
func defaultTrough(in *Inputs) {
	if in.TroughRPS != 0 || in.Instance.Validate() != nil || !(in.SurgeRatio >= 1) {
		return
	}
	out := in.Instance.SafeRPS() / in.SurgeRatio
	if !(out > 0) {
		// An instance that met the SLO at no measured rate: no fleet is safe, and the plan's findings say so.
		// The trough is then where a surge of s would reach the peak, so that the envelope stays well-formed
		// and the plan reports infeasible instead of refusing its own default as bad input.
		in.TroughRPS = in.PeakRPS / in.SurgeRatio
		return
	}
	minN := float64(in.MinInstances)
	in.TroughRPS = math.Min(in.PeakRPS, minN*out*minN/(minN+1)*(1-in.ScaleInMargin))
}

func joinErrors(prefix string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", prefix, errors.Join(errs...))
}

// safeBound says where the safe rate's search stops: a measured model at its highest point that met the SLO
// (never past it), a NOT MEASURED one at UnmeasuredMaxUtilization of its capacity (loadmodel.Model.SafeRPS).
func safeBound(m loadmodel.Model) string {
	if m.Measured {
		top, low, ok := m.SafeCeiling()
		switch {
		case !ok:
			return ", never past the highest rate step measured within it (none met it)"
		case low > 0:
			return fmt.Sprintf(", never past the highest rate step measured within it (%s rps) nor past its %s%% lower confidence bound %s rps (its completions counted over its window); the estimate before that bound is %s rps",
				FormatNumber(top), FormatNumber(100*bench.CIConfidence), FormatNumber(low), FormatNumber(m.SafeEstimate()))
		}
		return fmt.Sprintf(", never past the highest rate step measured within it (%s rps)", FormatNumber(top))
	}
	return fmt.Sprintf(", never above %s of its capacity (not measured)", FormatNumber(loadmodel.UnmeasuredMaxUtilization))
}

// OriginalThresholds are the original's concurrency thresholds (1 − h)·Q_max and (1 − 2h)·Q_max for surge
// ratio s, h = s − 1: for comparison only (docs/design.md, "The original").
func OriginalThresholds(s float64, qMax int) (cScaleMax, cScaleMin float64) {
	return thresholds(s, qMax)
}
