package capacity

import (
	"errors"
	"fmt"
	"math"

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
	// DefaultMetricPeriodS is the period of the high-resolution ConcurrentRequestsPerModel metric.
	DefaultMetricPeriodS = 10
	// DefaultEvaluationPeriods is how many breaching datapoints the target-tracking alarm waits for.
	DefaultEvaluationPeriods = 3
)

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
	// QMax is Q_max, concurrent requests per instance.
	QMax int `json:"q_max"`
	// TTotalS is T_total in seconds.
	TTotalS float64 `json:"t_total_s"`
	// Throughput is the per-instance throughput curve from the staircase (closed loop), by concurrency.
	Throughput []ThroughputPoint `json:"throughput"`
	// CloudWatchRatio is ConcurrentRequestsPerModel ÷ client concurrency near C_scale_max (1 when unmeasured).
	CloudWatchRatio float64 `json:"cloudwatch_ratio"`
	// SurgeRatio is s: load may grow by this factor within one T_plan.
	SurgeRatio float64 `json:"surge_ratio"`
	// DetectionBufferS is the time from a surge until a scale-out is asked for, in seconds.
	DetectionBufferS float64 `json:"detection_buffer_s"`
	// MetricPeriodS is the scaling metric's period, in seconds.
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

// Derived are the values computed from Inputs; the endpoint stack deploys them.
type Derived struct {
	// Headroom is h = s − 1.
	Headroom float64 `json:"headroom"`
	// CScaleMax is (1 − h)·Q_max: scale out above this per-instance concurrency (client units).
	CScaleMax float64 `json:"c_scale_max"`
	// CScaleMin is (1 − 2h)·Q_max: scale in below this per-instance concurrency (client units).
	CScaleMin float64 `json:"c_scale_min"`
	// TPlanS is T_total + detection buffer, in seconds.
	TPlanS float64 `json:"t_plan_s"`
	// ScaleOutCooldownS is clamp(T_plan/2, 10, 30) rounded up to whole seconds.
	ScaleOutCooldownS int `json:"scale_out_cooldown_s"`
	// ScaleInCooldownS is max(300, 3·T_plan) rounded up to whole seconds.
	ScaleInCooldownS int `json:"scale_in_cooldown_s"`
	// ThroughputRPS is the per-instance throughput at C_scale_max, interpolated from the staircase.
	ThroughputRPS float64 `json:"throughput_rps"`
	// ThroughputAtQMaxRPS is the per-instance throughput at Q_max.
	ThroughputAtQMaxRPS float64 `json:"throughput_at_q_max_rps"`
	// MinInstances is the scalable target's minimum capacity.
	MinInstances int `json:"min_instances"`
	// MaxInstances is ceil(peak_rps ÷ ThroughputRPS), at least MinInstances: the scalable target's maximum.
	MaxInstances int `json:"max_instances"`
	// SmallestSafeMinInstances is the smallest minimum from which scale-in keeps the rest below C_scale_max;
	// 0 when none is (no headroom).
	SmallestSafeMinInstances int `json:"smallest_safe_min_instances"`
	// TargetValue is C_scale_max × cloudwatch_ratio: the target-tracking target on
	// SageMakerVariantConcurrentRequestsPerModelHighResolution.
	TargetValue float64 `json:"target_value"`
	// ScaleInThreshold is C_scale_min × cloudwatch_ratio: the scale-in alarm threshold on ConcurrentRequestsPerModel.
	ScaleInThreshold float64 `json:"scale_in_threshold"`
	// QueueMaxDepth is the container's QUEUE_MAX_DEPTH once the plan is deployed.
	QueueMaxDepth int `json:"queue_max_depth"`
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
	FindingQueueDepth           = "queue_depth"
	FindingInvocationTimeout    = "invocation_timeout"
)

// FindingNames lists every finding a plan carries, in order.
var FindingNames = []string{
	FindingMeasurementValidity, FindingSLOConsistency, FindingTransportConsistency, FindingPeakCoverage,
	FindingScaleInSafety, FindingSurgeSurvival, FindingQueueDepth, FindingInvocationTimeout,
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

// ParsePlan strictly decodes a plan; source names it in errors.
func ParsePlan(source string, data []byte) (*Plan, error) { return parse[Plan](source, data) }

// verifyInputs returns every out-of-range input, naming the JSON field and stating the limit.
func verifyInputs(in Inputs) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if in.QMax < 1 || in.QMax > MaxConcurrency {
		add("q_max: is %d: want 1 to %d concurrent requests", in.QMax, MaxConcurrency)
	}
	if !positiveUpTo(in.TTotalS, MaxTTotalS) {
		add("t_total_s: is %g: want a number of seconds in (0, %d]", in.TTotalS, MaxTTotalS)
	}
	if !(in.SurgeRatio >= 1 && in.SurgeRatio < 1.5) {
		add("surge_ratio: is %s: want a ratio in [1, 1.5) (1.25 = load may grow 25%% within one T_plan)", exact(in.SurgeRatio))
	}
	if !inRange(in.DetectionBufferS, 0, MaxDetectionBufferS) {
		add("detection_buffer_s: is %g: want 0 to %d seconds", in.DetectionBufferS, MaxDetectionBufferS)
	}
	if in.MetricPeriodS < 1 || in.MetricPeriodS > 3600 {
		add("metric_period_s: is %d: want 1 to 3600 seconds", in.MetricPeriodS)
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

// maxThroughputPoints bounds the throughput curve, which the surge simulation walks every simulated second.
const maxThroughputPoints = MaxQMaxSteps

// ceilSeconds rounds a duration in seconds up to whole seconds, ignoring float noise below a microsecond.
func ceilSeconds(x float64) int { return int(math.Ceil(x - 1e-6)) }

// derive computes the derived values from valid inputs (DESIGN.md, "Plan").
func derive(in Inputs) Derived {
	q := float64(in.QMax)
	d := Derived{Headroom: in.SurgeRatio - 1, TPlanS: in.TTotalS + in.DetectionBufferS}
	d.CScaleMax, d.CScaleMin = thresholds(in.SurgeRatio, in.QMax)
	d.ScaleOutCooldownS = ceilSeconds(math.Min(math.Max(d.TPlanS/2, 10), 30))
	d.ScaleInCooldownS = ceilSeconds(math.Max(300, 3*d.TPlanS))
	// Size from measured throughput at the threshold, never from C ÷ uncontended service time: a server that
	// saturates delivers its saturated rate however many requests wait.
	d.ThroughputRPS = throughputAt(in.Throughput, d.CScaleMax)
	d.ThroughputAtQMaxRPS = throughputAt(in.Throughput, q)
	d.MinInstances = in.MinInstances
	d.MaxInstances = max(in.MinInstances, instancesFor(in.PeakRPS, d.ThroughputRPS))
	if gap := d.CScaleMax - d.CScaleMin; gap > 0 {
		// Scale-in from m+1 to m at C_scale_min leaves (m+1)/m·C_scale_min per instance; that stays below
		// C_scale_max exactly when m > C_scale_min ÷ (C_scale_max − C_scale_min).
		d.SmallestSafeMinInstances = int(math.Floor(d.CScaleMin/gap+1e-9)) + 1
	}
	d.TargetValue = d.CScaleMax * in.CloudWatchRatio
	d.ScaleInThreshold = d.CScaleMin * in.CloudWatchRatio
	d.QueueMaxDepth = in.QueueMaxDepth
	return d
}

// thresholds are the scale-out and scale-in concurrencies for surge ratio s: with headroom h = s − 1,
// C_scale_max = (1 − h)·Q_max and C_scale_min = (1 − 2h)·Q_max (DESIGN.md, "Plan").
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

// concurrencyFor inverts the throughput curve: the per-instance concurrency at which an instance completes
// rps requests per second (Little's law on the measured curve). It is +Inf when rps exceeds everything the
// instance was measured to deliver: requests then queue without bound.
func concurrencyFor(pts []ThroughputPoint, rps float64) float64 {
	if rps <= 0 {
		return 0
	}
	c0, x0 := 0.0, 0.0
	for _, p := range pts {
		if p.RPS >= rps && x0 < rps {
			return c0 + (rps-x0)*(p.Concurrency-c0)/(p.RPS-x0)
		}
		c0, x0 = p.Concurrency, p.RPS
	}
	return math.Inf(1)
}

// finish computes derived values and load-model findings, prepends the given measurement findings and sets
// the verdict.
func finish(p *Plan, measurement []Finding) {
	p.Derived = derive(p.Inputs)
	p.Findings = append(measurement, modelFindings(p.Inputs, p.Derived)...)
	p.Verdict = verdict(p.Findings)
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
	// SurgeRatio is s, in [1, 1.5).
	SurgeRatio float64
	// DetectionBufferS is the detection buffer in seconds.
	DetectionBufferS float64
	// PeakRPS is the peak load, requests per second (required).
	PeakRPS float64
	// TroughRPS is the load a surge starts from; 0 means the minimum fleet at C_scale_min.
	TroughRPS float64
	// MinInstances is the fleet minimum.
	MinInstances int
	// MaxInstances is the largest fleet allowed.
	MaxInstances int
}

// DefaultOptions returns the catalog's planning defaults for m.
func DefaultOptions(m models.Model) Options {
	return Options{
		SurgeRatio:       m.Planning.SurgeRatio,
		DetectionBufferS: m.Planning.DetectionBufferS,
		MinInstances:     m.Scaling.MinInstances,
		MaxInstances:     m.Scaling.MaxInstances,
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
		QueueMaxDepth:      m.QueueMaxDepth,
		InvocationTimeoutS: m.Container.InvocationTimeoutS,
	}
}

// defaultTrough sets TroughRPS, when unset, to what the minimum fleet carries at C_scale_min (a quiet fleet
// that has scaled in as far as it will), never above the peak.
func defaultTrough(in *Inputs) {
	if in.TroughRPS != 0 || in.QMax < 1 || len(in.Throughput) == 0 {
		return
	}
	_, cMin := thresholds(in.SurgeRatio, in.QMax)
	in.TroughRPS = math.Min(in.PeakRPS, float64(in.MinInstances)*throughputAt(in.Throughput, cMin))
}

func joinErrors(prefix string, errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %w", prefix, errors.Join(errs...))
}
