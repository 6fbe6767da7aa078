package capacity

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/speech-infra/speech-infra/loadmodel"
	"github.com/speech-infra/speech-infra/models"
)

// WhatIfStallJitterMs is the jitter allowance a what-if plan adds to the stall budget (the load engine's
// default, which measured steps record as stall_jitter_ms).
const WhatIfStallJitterMs = 50

// Measurement is what a measured plan is built from: both artifacts, verified, with the file names and
// digests the plan records.
type Measurement struct {
	// QMax is the qmax artifact.
	QMax *QMax
	// QMaxFile is its file name; the gate looks for it beside the plan.
	QMaxFile string
	// QMaxSHA256 is the digest of its file.
	QMaxSHA256 string
	// TTotal is the ttotal artifact.
	TTotal *TTotal
	// TTotalFile is its file name; the gate looks for it beside the plan.
	TTotalFile string
	// TTotalSHA256 is the digest of its file.
	TTotalSHA256 string
}

// LoadMeasurement loads, digests and verifies the two artifacts, reading each file once. Every problem of
// both is returned at once.
func LoadMeasurement(qmaxPath, ttotalPath string) (Measurement, error) {
	ms := Measurement{QMaxFile: baseName(qmaxPath), TTotalFile: baseName(ttotalPath)}
	var errs []error
	var err error
	if ms.QMax, ms.QMaxSHA256, err = load[QMax](qmaxPath); err != nil {
		errs = append(errs, err)
	} else if v := ms.QMax.Verify(); len(v) > 0 {
		errs = append(errs, joinErrors(qmaxPath+" is not a valid qmax artifact (re-run tts-bench qmax)", v))
	}
	if ms.TTotal, ms.TTotalSHA256, err = load[TTotal](ttotalPath); err != nil {
		errs = append(errs, err)
	} else if v := ms.TTotal.Verify(); len(v) > 0 {
		errs = append(errs, joinErrors(ttotalPath+" is not a valid ttotal artifact (re-run tts-bench ttotal)", v))
	}
	if len(errs) > 0 {
		return Measurement{}, errors.Join(errs...)
	}
	return ms, nil
}

func baseName(path string) string {
	if i := strings.LastIndexAny(path, `/\`); i >= 0 {
		return path[i+1:]
	}
	return path
}

// FromArtifacts builds a measured plan for model m. It returns an error (an input problem, not an
// infeasible plan) when the artifacts are for another model or the options are out of range.
func FromArtifacts(m models.Model, ms Measurement, o Options) (*Plan, error) {
	return FromArtifactsContext(context.Background(), m, ms, o)
}

// FromArtifactsContext is FromArtifacts that stops when ctx is done: the envelope's simulations check it every
// simulated minute, and the error is then ErrCanceled (with context.Cause(ctx)), not an input problem.
func FromArtifactsContext(ctx context.Context, m models.Model, ms Measurement, o Options) (*Plan, error) {
	q, t := ms.QMax, ms.TTotal
	if q == nil || t == nil {
		return nil, errors.New("build plan: both the qmax and the ttotal artifact are needed")
	}
	if q.Model != m.ID {
		return nil, fmt.Errorf("build plan: %s is for model %q, not %q: pass the %s artifact or --model %s", ms.QMaxFile, q.Model, m.ID, m.ID, q.Model)
	}
	if t.Model != m.ID {
		return nil, fmt.Errorf("build plan: %s is for model %q, not %q: pass the %s artifact or --model %s", ms.TTotalFile, t.Model, m.ID, m.ID, t.Model)
	}
	if !validFileName(ms.QMaxFile) || !validFileName(ms.TTotalFile) {
		return nil, errors.New("build plan: artifact file names must be plain names: the plan records them relative to its own directory")
	}
	p := &Plan{
		SchemaVersion: SchemaVersion,
		Measured:      true,
		Fingerprint:   Fingerprint{Model: m.ID, SLOTTFABMs: m.SLO.TTFABMs, SLOPercentile: m.SLO.Percentile},
		Inputs:        baseInputs(m, o),
	}
	modelErr := p.recordQMax(q)
	p.recordTTotal(t)
	in := &p.Inputs
	in.QMaxFile, in.QMaxSHA256 = ms.QMaxFile, ms.QMaxSHA256
	in.TTotalFile, in.TTotalSHA256 = ms.TTotalFile, ms.TTotalSHA256
	in.DryRun = q.DryRun || t.DryRun
	defaultTrough(in)
	if modelErr != nil {
		return nil, fmt.Errorf("build plan: the instance model cannot be built from %s: %w", ms.QMaxFile, modelErr)
	}
	if errs := verifyInputs(*in); len(errs) > 0 {
		return nil, joinErrors("build plan", errs)
	}
	if err := finish(ctx, p, []Finding{
		measurementValidity(m, ms),
		sloConsistency(m, q),
		transportConsistency(q, t),
	}); err != nil {
		return nil, err
	}
	return p, nil
}

// recordQMax sets what a measured plan takes from its qmax artifact: the measured half of the fingerprint,
// Q_max, the throughput curve and the CloudWatch ratio near C_scale_max (Inputs.SurgeRatio must be set).
// FromArtifacts builds plans with it and Gate repeats it on the artifact beside a plan, so that "derived
// from this artifact" means the same in both.
//
// It returns why the instance model could not be built (the model is then left empty, and verifyInputs names
// it too).
func (p *Plan) recordQMax(q *QMax) error {
	fp, in := &p.Fingerprint, &p.Inputs
	fp.ModelRevision, fp.InstanceType, fp.ContainerDigest, fp.Transport = q.ModelRevision, q.InstanceType, q.ContainerDigest, q.Transport
	fp.Emulator = q.Emulator
	// The plan runs on the clock of the emulator measured: its metric period, and with it every AWS duration
	// of the derivation, is divided by that emulator's compression (Inputs.Compression).
	fp.CloudWatchCompression = q.CloudWatchCompression
	in.MetricPeriodS = DefaultMetricPeriodS / fp.Compression()
	in.QMax = q.QMax
	in.QMaxTTFABOnly, in.QMaxTTFABOnlyLowerBound = nil, false
	if q.QMaxTTFABOnly != nil && q.BracketTTFABOnlyLowestFail != nil {
		v := *q.QMaxTTFABOnly
		in.QMaxTTFABOnly, in.QMaxTTFABOnlyLowerBound = &v, *q.BracketTTFABOnlyLowestFail == 0
	}
	in.Throughput = q.throughputCurve()
	cMax, _ := thresholds(in.SurgeRatio, q.QMax)
	in.CloudWatchRatio = q.cloudWatchRatio(cMax)
	// An artifact the model cannot be built from leaves the model empty, whatever was there before: the
	// gate compares a plan's recorded model with this one.
	inst, err := q.InstanceModel(in.QueueMaxDepth, q.stallBound(), in.CloudWatchRatio)
	if err != nil {
		in.Instance = loadmodel.Model{}
		return err
	}
	in.Instance = inst
	return nil
}

// PlanScatter is how the alarm's datapoints scatter around the instance model of a plan derived from q
// (QMax.InstanceScatter with the plan's queue depth and CloudWatch ratio, as recordQMax builds the model): for
// simulate.ScaleOutSpread. Nil when q's rate steps have no 10th-percentile peaks.
func PlanScatter(p *Plan, q *QMax) (*loadmodel.Scatter, error) {
	return q.InstanceScatter(p.Inputs.QueueMaxDepth, q.stallBound(), p.Inputs.CloudWatchRatio)
}

// recordTTotal sets what a measured plan takes from its ttotal artifact (see recordQMax).
func (p *Plan) recordTTotal(t *TTotal) { p.Inputs.TTotalS = t.TTotalS }

func measurementValidity(m models.Model, ms Measurement) Finding {
	q, t := ms.QMax, ms.TTotal
	f := Finding{Name: FindingMeasurementValidity, Status: StatusPass}
	var details, recs []string
	worst := func(s Status) {
		if s == StatusFail || (s == StatusWarn && f.Status == StatusPass) {
			f.Status = s
		}
	}
	if t.QMaxSHA256 != ms.QMaxSHA256 {
		worst(StatusFail)
		details = append(details, fmt.Sprintf("%s was measured against a qmax artifact with digest %s, not %s (%s)", ms.TTotalFile, t.QMaxSHA256, ms.QMaxSHA256, ms.QMaxFile))
		recs = append(recs, "re-run tts-bench ttotal against this qmax artifact, or pass the matching --qmax")
	}
	if q.InstanceType != t.InstanceType {
		worst(StatusFail)
		details = append(details, fmt.Sprintf("qmax was measured on %s but ttotal on %s", q.InstanceType, t.InstanceType))
		recs = append(recs, "measure both on the same instance type")
	}
	if q.Emulator != t.Emulator {
		worst(StatusFail)
		details = append(details, fmt.Sprintf("qmax was measured on the emulator %v but ttotal on the emulator %v", q.Emulator, t.Emulator))
		recs = append(recs, "measure both on AWS, or both on the local emulator")
	}
	if max(1, q.CloudWatchCompression) != max(1, t.CloudWatchCompression) {
		worst(StatusFail)
		details = append(details, fmt.Sprintf("qmax was measured on an emulator with CloudWatch compression %d but ttotal with %d", max(1, q.CloudWatchCompression), max(1, t.CloudWatchCompression)))
		recs = append(recs, "measure both on one emulator at one SPEECH_EMULATOR_TIME_SCALE")
	}
	var unusable []string
	for _, s := range q.Steps {
		if s.Usable {
			continue
		}
		if s.Concurrency == q.QMax || s.Concurrency == q.BracketLowestFail {
			worst(StatusFail)
			details = append(details, fmt.Sprintf("the step at concurrency %d that brackets Q_max is not usable (%s)", s.Concurrency, s.UnusableReason))
			recs = append(recs, "re-run tts-bench qmax so that the bracketing steps are usable")
		} else {
			unusable = append(unusable, fmt.Sprintf("%d (%s)", s.Concurrency, s.UnusableReason))
		}
	}
	if len(unusable) > 0 {
		worst(StatusWarn)
		details = append(details, "steps not usable and left out of the throughput curve: "+strings.Join(unusable, ", "))
	}
	if len(q.RateSteps) == 0 {
		worst(StatusFail)
		details = append(details, "the qmax artifact has no rate staircase, so the instance model would be an approximation (NOT MEASURED)")
		recs = append(recs, "re-run tts-bench qmax (it ends with the rate staircase)")
	}
	if len(q.RateSteps) > 0 && q.RateQueueMaxDepth != m.QueueMaxDepth {
		worst(StatusWarn)
		shield := "without a queue shield"
		if q.RateQueueMaxDepth > 0 {
			shield = fmt.Sprintf("within a queue shield of %d", q.RateQueueMaxDepth)
		}
		details = append(details, fmt.Sprintf("the rate staircase ran %s, not the %d the plan deploys (the catalog's queue_max_depth): its shed is not the deployed shield's", shield, m.QueueMaxDepth))
		recs = append(recs, fmt.Sprintf("re-run tts-bench qmax: its rate staircase sends every request with the custom attribute queue-max-depth=%d", m.QueueMaxDepth))
	}
	if q.BracketLowestFail == 0 {
		worst(StatusWarn)
		details = append(details, fmt.Sprintf("no step failed the SLO, so Q_max %d is only a lower bound", q.QMax))
		recs = append(recs, "extend the staircase past the first failing step (tts-bench qmax --max-concurrency)")
	}
	for _, s := range q.Steps {
		if s.Usable && s.CloudWatchRatio > 0 && math.Abs(s.CloudWatchRatio-1) > 0.1 {
			worst(StatusWarn)
			details = append(details, fmt.Sprintf("at concurrency %d CloudWatch saw %s× the client's concurrency", s.Concurrency, FormatNumber(s.CloudWatchRatio)))
			break
		}
	}
	if len(t.MissingStages) > 0 {
		worst(StatusWarn)
		details = append(details, "ttotal missed stages: "+strings.Join(t.MissingStages, ", "))
	}
	if s, detail, rec := t.ProbeValidity(q.SLOTTFABMs); s != StatusPass {
		worst(s)
		details, recs = append(details, detail), append(recs, rec)
	}
	if q.DryRun || t.DryRun {
		worst(StatusWarn)
		details = append(details, "derived from a dry run: the numbers are for rehearsal and the deploy gate refuses this plan")
		recs = append(recs, "run tts-bench qmax and ttotal without --dry-run, then tts-bench plan again")
	}
	if q.ModelRevision != m.Revision() {
		worst(StatusWarn)
		details = append(details, fmt.Sprintf("measured model revision %s but the catalog pins %s: the deploy gate will refuse this plan", q.ModelRevision, m.Revision()))
		recs = append(recs, "re-measure the pinned revision")
	}
	if q.InstanceType != m.InstanceType && q.InstanceType != models.LocalInstanceType {
		worst(StatusWarn)
		details = append(details, fmt.Sprintf("measured on %s but the catalog deploys %s: the deploy gate will refuse this plan on %s", q.InstanceType, m.InstanceType, m.InstanceType))
		recs = append(recs, fmt.Sprintf("deploy it on %s with -c instance_type=%s (speech-infra deploy --instance-type %s), or re-measure on the catalog's instance type", q.InstanceType, q.InstanceType, q.InstanceType))
	}
	if f.Status == StatusPass {
		details = append(details, fmt.Sprintf("%s and %s verify and are live; all %d staircase steps are usable", ms.QMaxFile, ms.TTotalFile, len(q.Steps)))
	}
	f.Detail = strings.Join(details, "; ")
	f.Recommendation = strings.Join(recs, "; ")
	return f
}

func sloConsistency(m models.Model, q *QMax) Finding {
	f := Finding{Name: FindingSLOConsistency}
	if q.SLOTTFABMs == m.SLO.TTFABMs && q.SLOPercentile == m.SLO.Percentile {
		f.Status = StatusPass
		f.Detail = fmt.Sprintf("qmax was judged against the catalog SLO, p%d TTFAB ≤ %d ms", m.SLO.Percentile, m.SLO.TTFABMs)
		return f
	}
	f.Status = StatusFail
	f.Detail = fmt.Sprintf("qmax was judged against p%d TTFAB ≤ %d ms but the catalog SLO is p%d ≤ %d ms, so Q_max does not answer the question",
		q.SLOPercentile, q.SLOTTFABMs, m.SLO.Percentile, m.SLO.TTFABMs)
	f.Recommendation = "re-run tts-bench qmax with the catalog's SLO"
	return f
}

func transportConsistency(q *QMax, t *TTotal) Finding {
	f := Finding{Name: FindingTransportConsistency}
	if q.Transport == t.Transport {
		f.Status = StatusPass
		f.Detail = fmt.Sprintf("both artifacts were measured over %s", q.Transport)
		return f
	}
	f.Status = StatusFail
	f.Detail = fmt.Sprintf("qmax was measured over %s but ttotal over %s", q.Transport, t.Transport)
	f.Recommendation = "re-run tts-bench ttotal with --transport " + q.Transport
	return f
}

// WhatIf holds assumed measurements for a plan without artifacts (tts-bench plan --what-if).
type WhatIf struct {
	// QMax is the assumed Q_max (key q_max, required).
	QMax int
	// TTotalS is the assumed T_total in seconds (key t_total_s, required).
	TTotalS float64
	// ThroughputRPS is the assumed per-instance throughput at C_scale_max (key throughput_rps, required).
	ThroughputRPS float64
	// ThroughputAtQMaxRPS is the throughput at Q_max (key throughput_at_q_max_rps), the capacity of the
	// instance model's M/M/1 queue; 0 takes ThroughputRPS: one server completes as much at Q_max as at
	// C_scale_max, so the plan never runs an instance above the throughput it was given.
	ThroughputAtQMaxRPS float64
	// CloudWatchRatio is the CloudWatch/client concurrency ratio (key cloudwatch_ratio); 0 means 1.
	CloudWatchRatio float64
	// Transport is the transport assumed (key transport); empty means sagemaker-stream.
	Transport string
	// ContainerDigest is recorded in the fingerprint when given (key container_digest).
	ContainerDigest string
}

// WhatIfKeys lists the keys ParseWhatIf accepts; the first three are required.
var WhatIfKeys = []string{"q_max", "t_total_s", "throughput_rps", "throughput_at_q_max_rps", "cloudwatch_ratio", "transport", "container_digest"}

// ParseWhatIf parses "key=value,key=value" (see WhatIfKeys) and reports every problem at once.
func ParseWhatIf(s string) (WhatIf, error) {
	var w WhatIf
	var errs []error
	seen := map[string]bool{}
	for _, part := range strings.Split(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		k, v, ok := strings.Cut(part, "=")
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not key=value", part))
			continue
		}
		if seen[k] {
			errs = append(errs, fmt.Errorf("%s is given twice", k))
		}
		seen[k] = true
		float := func(dst *float64, lo, hi float64, loOpen bool, what string) {
			x, err := strconv.ParseFloat(v, 64)
			ok := err == nil && x <= hi && (x > lo || (!loOpen && x == lo))
			if !ok {
				open := "["
				if loOpen {
					open = "("
				}
				errs = append(errs, fmt.Errorf("%s=%s: want %s in %s%g, %g]", k, v, what, open, lo, hi))
				return
			}
			*dst = x
		}
		switch k {
		case "q_max":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxConcurrency {
				errs = append(errs, fmt.Errorf("q_max=%s: want a whole number of concurrent requests, 1 to %d", v, MaxConcurrency))
			}
			w.QMax = n
		case "t_total_s":
			float(&w.TTotalS, 0, MaxTTotalS, true, "a number of seconds")
		case "throughput_rps":
			float(&w.ThroughputRPS, 0, MaxInstanceRPS, true, "a per-instance request rate")
		case "throughput_at_q_max_rps":
			float(&w.ThroughputAtQMaxRPS, 0, MaxInstanceRPS, true, "a per-instance request rate")
		case "cloudwatch_ratio":
			float(&w.CloudWatchRatio, MinCloudWatchRatio, MaxCloudWatchRatio, false, "a ratio")
		case "transport":
			if !knownTransport(v) {
				errs = append(errs, fmt.Errorf("transport=%s: want one of %s", v, strings.Join(Transports, ", ")))
			}
			w.Transport = v
		case "container_digest":
			if !ValidDigest(v) {
				errs = append(errs, fmt.Errorf("container_digest=%s: want sha256:<64 hex digits>", v))
			}
			w.ContainerDigest = v
		default:
			errs = append(errs, fmt.Errorf("unknown key %q: use %s", k, strings.Join(WhatIfKeys, ", ")))
		}
	}
	var missing []string
	for _, k := range WhatIfKeys[:3] {
		if !seen[k] {
			missing = append(missing, k)
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing %s: a what-if needs q_max, t_total_s and throughput_rps (per instance at C_scale_max)", strings.Join(missing, ", ")))
	}
	if len(errs) > 0 {
		return WhatIf{}, errors.Join(errs...)
	}
	return w, nil
}

// FromWhatIf builds an unmeasured plan (Measured false) from assumed numbers, for exploration. Gate never
// accepts it.
func FromWhatIf(m models.Model, w WhatIf, o Options) (*Plan, error) {
	return FromWhatIfContext(context.Background(), m, w, o)
}

// FromWhatIfContext is FromWhatIf that stops when ctx is done, as FromArtifactsContext does.
func FromWhatIfContext(ctx context.Context, m models.Model, w WhatIf, o Options) (*Plan, error) {
	transport := w.Transport
	if transport == "" {
		transport = TransportSageMakerStream
	}
	p := &Plan{
		SchemaVersion: SchemaVersion,
		Measured:      false,
		Fingerprint: Fingerprint{
			Model: m.ID, ModelRevision: m.Revision(), InstanceType: m.InstanceType, ContainerDigest: w.ContainerDigest,
			SLOTTFABMs: m.SLO.TTFABMs, SLOPercentile: m.SLO.Percentile, Transport: transport,
		},
		Inputs: baseInputs(m, o),
	}
	in := &p.Inputs
	in.QMax, in.TTotalS = w.QMax, w.TTotalS
	in.CloudWatchRatio = w.CloudWatchRatio
	if in.CloudWatchRatio == 0 {
		in.CloudWatchRatio = 1
	}
	cmax, _ := thresholds(in.SurgeRatio, w.QMax)
	// The instance model is one M/M/1 server, whose throughput does not grow with the concurrency: without a
	// throughput at Q_max, the one given at C_scale_max is the capacity. Its safe rate is at most 0.9 of the
	// capacity (loadmodel.Model.SafeRPS), so the fleet is never smaller than peak ÷ capacity.
	atQ := w.ThroughputAtQMaxRPS
	if atQ == 0 {
		atQ = w.ThroughputRPS
	}
	if cmax > 0 && cmax < float64(w.QMax) {
		in.Throughput = []ThroughputPoint{{Concurrency: cmax, RPS: w.ThroughputRPS}, {Concurrency: float64(w.QMax), RPS: atQ}}
	} else {
		in.Throughput = []ThroughputPoint{{Concurrency: float64(w.QMax), RPS: w.ThroughputRPS}}
	}
	in.Instance, _ = loadmodel.Approximate(loadmodel.Approximation{CapacityRPS: atQ, QMax: w.QMax, QueueDepth: in.QueueMaxDepth, CloudWatchRatio: in.CloudWatchRatio,
		SLO: loadmodel.SLO{TTFABMs: float64(m.SLO.TTFABMs), Percentile: m.SLO.Percentile, StallMs: float64(m.SLO.StallBudgetMs) + WhatIfStallJitterMs}})
	defaultTrough(in)
	if errs := verifyInputs(*in); len(errs) > 0 {
		return nil, joinErrors("build what-if plan", errs)
	}
	if err := finish(ctx, p, []Finding{
		{Name: FindingMeasurementValidity, Status: StatusWarn,
			Detail:         "what-if plan: the numbers are assumptions, not measurements (measured: false); the deploy gate refuses it",
			Recommendation: "measure with tts-bench qmax and tts-bench ttotal, then run tts-bench plan without --what-if"},
		{Name: FindingSLOConsistency, Status: StatusPass,
			Detail: fmt.Sprintf("what-if: Q_max is assumed to be judged against the catalog SLO, p%d TTFAB ≤ %d ms", m.SLO.Percentile, m.SLO.TTFABMs)},
		{Name: FindingTransportConsistency, Status: StatusPass,
			Detail: "what-if: both measurements are assumed over " + transport},
	}); err != nil {
		return nil, err
	}
	return p, nil
}
