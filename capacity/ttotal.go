package capacity

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/speech-infra/speech-infra/autoscale"
)

// TTotalSumTolerance is how far the stage durations may sum from t_total_s, in seconds.
const TTotalSumTolerance = 0.05

// TTotal is the artifact of tts-bench ttotal: the time from asking for one more instance until it serves
// healthy traffic, as an ordered timeline of stages whose consecutive differences, from the stage where the
// clock starts (ClockStart) to the last, sum to TTotalS. Stages before ClockStart (load_applied) are context:
// they are on the timeline but not in T_total.
type TTotal struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Model is the catalog id of the model measured.
	Model string `json:"model"`
	// Endpoint is the endpoint measured.
	Endpoint string `json:"endpoint"`
	// InstanceType is the instance type measured.
	InstanceType string `json:"instance_type"`
	// Emulator is true when the endpoint measured ran on the local emulator (as QMax.Emulator).
	Emulator bool `json:"emulator,omitempty"`
	// CloudWatchCompression is the emulator's CloudWatch compression (as QMax.CloudWatchCompression).
	CloudWatchCompression int `json:"cloudwatch_compression,omitempty"`
	// Transport is how the first successful response was observed; it must equal the qmax artifact's.
	Transport string `json:"transport"`
	// QMaxSHA256 is the digest of the qmax artifact this measurement was made against.
	QMaxSHA256 string `json:"qmax_sha256"`
	// RunID identifies the run.
	RunID string `json:"run_id"`
	// FromInstances is the instance count before the scale-out.
	FromInstances int `json:"from_instances"`
	// ToInstances is the instance count asked for.
	ToInstances int `json:"to_instances"`
	// Timeline is the ordered list of stages, first to last.
	Timeline []Stage `json:"timeline"`
	// ClockStart names the timeline stage where T_total starts (desired_set: the instance count was raised).
	ClockStart string `json:"clock_start"`
	// Durations are the differences of consecutive timeline entries from ClockStart on; they sum to TTotalS.
	Durations []StageDuration `json:"durations"`
	// TTotalS is the time from ClockStart to the last stage, in seconds.
	TTotalS float64 `json:"t_total_s"`
	// DominantStage is the To stage of the longest duration.
	DominantStage string `json:"dominant_stage"`
	// PlatformS is the platform's part of TTotalS: from ClockStart to container_started (to the last stage
	// when the container was never seen starting), in seconds.
	PlatformS float64 `json:"platform_s"`
	// ContainerS is the rest of TTotalS: from container_started to the last stage, in seconds.
	ContainerS float64 `json:"container_s"`
	// PlatformShare and ContainerShare are PlatformS and ContainerS as shares of TTotalS (they sum to 1).
	PlatformShare  float64 `json:"platform_share"`
	ContainerShare float64 `json:"container_share"`
	// MissingStages lists expected stages that were not observed (empty when complete).
	MissingStages []string `json:"missing_stages"`
	// DryRun is true when the run changed nothing and its numbers must not drive a deployment.
	DryRun bool `json:"dry_run"`
	// TTotalUncertaintyS is how far TTotalS may be off because the stamp it ends on depends on a poll: the
	// gap between the DescribeEndpoint read that saw in_service and the read before it (traffic_recovered is
	// judged on requests sent after in_service was seen), back-offs included. Absent in artifacts written
	// before it was recorded, which does not mean exact.
	TTotalUncertaintyS *float64 `json:"t_total_uncertainty_s,omitempty"`
	// Probe is the probe load and what it saw around the scale-out; absent in artifacts written before it was
	// recorded: the plan's measurement_validity then cannot tell whether traffic_recovered marks a
	// recovery, and warns.
	Probe *TTotalProbe `json:"probe,omitempty"`
	// Polling is how the control plane was read: the intervals and every throttling back-off.
	Polling *TTotalPolling `json:"polling,omitempty"`
	// IncompleteReason says why the run ended without a stage it waited for (empty when complete).
	IncompleteReason string `json:"incomplete_reason,omitempty"`
}

// TTotalProbe is the closed-loop probe load of a ttotal run and what it saw around the scale-out.
type TTotalProbe struct {
	// Concurrency is the probe's requests in flight; ConcurrencyBasis says where it came from (by default the
	// qmax artifact: a step past Q_max, times the instances before the scale-out).
	Concurrency      int    `json:"concurrency"`
	ConcurrencyBasis string `json:"concurrency_basis"`
	// SLOTTFABMs is the qmax artifact's TTFAB SLO the probe is judged against, in milliseconds.
	SLOTTFABMs int `json:"slo_ttfab_ms"`
	// P95BeforeScaleOutMs is the probe's p95 TTFAB over the window that ended at desired_set, over
	// SamplesBeforeScaleOut requests (a failed request counts as the request timeout here), in milliseconds.
	P95BeforeScaleOutMs   float64 `json:"p95_before_scale_out_ms"`
	SamplesBeforeScaleOut int     `json:"samples_before_scale_out"`
	// PeakP95BeforeInServiceMs is the highest window p95 TTFAB (windows of at least MinSamples requests) seen
	// from desired_set until in_service (until the end without in_service), in milliseconds.
	PeakP95BeforeInServiceMs float64 `json:"peak_p95_before_in_service_ms"`
	// ExceededSLOBeforeInService is PeakP95BeforeInServiceMs > SLOTTFABMs: the fleet was past its Q_max, so
	// that traffic_recovered can mark a recovery. False makes the plan's measurement_validity fail.
	ExceededSLOBeforeInService bool `json:"exceeded_slo_before_in_service"`
	// QMaxP95BeforeMs and QMaxP95AfterMs are the qmax curve's p95 TTFAB at the per-instance concurrency before
	// the scale-out (Concurrency ÷ from_instances) and after it (the busiest instance's, ⌈Concurrency ÷
	// to_instances⌉), in milliseconds.
	QMaxP95BeforeMs float64 `json:"qmax_p95_before_ms"`
	QMaxP95AfterMs  float64 `json:"qmax_p95_after_ms"`
	// Slowdown is P95BeforeScaleOutMs ÷ QMaxP95BeforeMs, at least 1: how much slower this run serves than the
	// qmax artifact says at the same load (a busier machine); 1 when nothing was measured before.
	Slowdown float64 `json:"slowdown"`
	// Tolerance is the factor on QMaxP95AfterMs × Slowdown.
	Tolerance float64 `json:"tolerance"`
	// RecoveryThresholdMs is min(SLOTTFABMs, QMaxP95AfterMs × Slowdown × Tolerance): traffic_recovered when
	// the window p95 of requests sent after in_service is at or under it, once the new instance has served.
	RecoveryThresholdMs float64 `json:"recovery_threshold_ms"`
	// WindowS is the sliding window in seconds, MinSamples the requests it must hold, RecoveryWindows how
	// many windows ttotal waits for the recovery once the new instance has served and the endpoint is
	// InService.
	WindowS         float64 `json:"window_s"`
	MinSamples      int     `json:"min_samples"`
	RecoveryWindows int     `json:"recovery_windows"`
	// InstancesBeforeScaleOut are the instance ids the probe's responses named before the scale-out;
	// NewInstance the one first_served_by_new_instance names (empty when none served).
	InstancesBeforeScaleOut []string `json:"instances_before_scale_out"`
	NewInstance             string   `json:"new_instance,omitempty"`
	// P95LastWindowMs is the window p95 TTFAB of the requests sent after in_service when the run ended, over
	// SamplesLastWindow requests (failed requests count as the request timeout); 0 and 0 when none.
	P95LastWindowMs   float64 `json:"p95_last_window_ms"`
	SamplesLastWindow int     `json:"samples_last_window"`
}

// TTotalPolling is how ttotal read the control plane.
type TTotalPolling struct {
	// IntervalS is DescribeEndpoint's poll interval, FineIntervalS the shorter one once in_service is near
	// (from FineFrom on: the container's ready line or ActivatingTraffic, whichever came first), in seconds.
	IntervalS     float64 `json:"interval_s"`
	FineIntervalS float64 `json:"fine_interval_s"`
	FineFrom      string  `json:"fine_from,omitempty"`
	// InServiceGapS is the time between the read that saw in_service and the successful read before it, in
	// seconds (0 without in_service).
	InServiceGapS float64 `json:"in_service_gap_s"`
	// Throttled are the reads answered ThrottlingException and the back-off that followed each.
	Throttled []ThrottleEvent `json:"throttled"`
}

// ThrottleEvent is one throttled read and the back-off that followed it.
type ThrottleEvent struct {
	At        time.Time `json:"at"`
	Operation string    `json:"operation"`
	WaitS     float64   `json:"wait_s"`
}

// Stage is one point on the T_total timeline.
type Stage struct {
	// Stage names the stage, e.g. desired_set, Updating, container_started, traffic_recovered.
	Stage string `json:"stage"`
	// At is when the stage was reached, UTC.
	At time.Time `json:"at"`
	// Source says who observed it: container (a STAGE line's own time), log (a CloudWatch Logs event's
	// time), control-plane or client (the measuring process's clock).
	Source string `json:"source"`
	// Flags say what assembling the timeline did to the stage, e.g. that its observed time was earlier than
	// its predecessor's and was clamped (FlagClamped), or that it was seen more than once (FlagDuplicate).
	Flags []string `json:"flags,omitempty"`
}

// StageDuration is the time between two consecutive stages.
type StageDuration struct {
	// From is the earlier stage.
	From string `json:"from"`
	// To is the later stage; the duration is attributed to reaching it.
	To string `json:"to"`
	// DurationS is To's time minus From's time, in seconds.
	DurationS float64 `json:"duration_s"`
}

// LoadTTotal reads and strictly decodes a ttotal artifact. It does not Verify it.
func LoadTTotal(path string) (*TTotal, error) {
	v, _, err := load[TTotal](path)
	return v, err
}

// ParseTTotal strictly decodes a ttotal artifact; source names it in errors.
func ParseTTotal(source string, data []byte) (*TTotal, error) { return parse[TTotal](source, data) }

// Verify returns every semantic problem of the artifact. It is invalid when times go backwards or the
// durations do not sum to t_total_s within TTotalSumTolerance.
func (t *TTotal) Verify() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if t.SchemaVersion != SchemaVersion {
		add("schema_version: is %d, this tts-bench reads %d: re-run tts-bench ttotal with this version", t.SchemaVersion, SchemaVersion)
	}
	errs = append(errs, emptyFields([]field{
		{"model", t.Model}, {"endpoint", t.Endpoint}, {"instance_type", t.InstanceType}, {"run_id", t.RunID},
	})...)
	if !knownTransport(t.Transport) {
		add("transport: unknown transport %q: want one of %v", t.Transport, Transports)
	}
	if err := verifyCompression(t.CloudWatchCompression, t.Emulator); err != nil {
		errs = append(errs, err)
	}
	if !ValidDigest(t.QMaxSHA256) {
		add("qmax_sha256: %q is not a digest: want sha256:<64 hex digits>", t.QMaxSHA256)
	}
	if t.FromInstances < 1 || t.FromInstances >= MaxInstances {
		add("from_instances: is %d: want 1 to %d", t.FromInstances, MaxInstances-1)
	}
	if t.ToInstances <= t.FromInstances || t.ToInstances > MaxInstances {
		add("to_instances: is %d: want above from_instances %d, at most %d", t.ToInstances, t.FromInstances, MaxInstances)
	}
	if !positiveUpTo(t.TTotalS, MaxTTotalS) {
		add("t_total_s: is %g: want a number of seconds in (0, %d]", t.TTotalS, MaxTTotalS)
	}
	if len(t.Timeline) < 2 {
		add("timeline: has %d stages: at least the request and the first success are needed", len(t.Timeline))
		return errs
	}
	if len(t.Timeline) > MaxStages {
		add("timeline: has %d stages: at most %d", len(t.Timeline), MaxStages)
		return errs
	}
	for i, s := range t.Timeline {
		if s.Stage == "" {
			add("timeline[%d].stage: is empty", i)
		}
		if s.Source == "" {
			add("timeline[%d].source: is empty: say who observed the stage", i)
		}
		if s.At.IsZero() {
			add("timeline[%d].at: is not set", i)
		} else if _, off := s.At.Zone(); off != 0 {
			add("timeline[%d].at: %s is not UTC", i, s.At.Format(time.RFC3339Nano))
		}
		if i > 0 && s.At.Before(t.Timeline[i-1].At) {
			add("timeline[%d].at: %s goes backwards from %s (%s): stages must be in time order", i,
				s.At.Format(time.RFC3339Nano), t.Timeline[i-1].Stage, t.Timeline[i-1].At.Format(time.RFC3339Nano))
		}
	}
	start := -1
	for i, s := range t.Timeline {
		if s.Stage == t.ClockStart {
			if start >= 0 {
				add("clock_start: %q appears twice on the timeline: the clock starts at one stage", t.ClockStart)
			}
			if start < 0 {
				start = i
			}
		}
	}
	if start < 0 {
		add("clock_start: %q is not a timeline stage: name the stage where T_total starts (desired_set)", t.ClockStart)
		return errs
	}
	if start == len(t.Timeline)-1 {
		add("clock_start: %q is the last stage: at least one stage must follow it", t.ClockStart)
		return errs
	}
	if len(t.Durations) != len(t.Timeline)-1-start {
		add("durations: has %d entries, want %d (one per consecutive pair of stages from %s on)", len(t.Durations), len(t.Timeline)-1-start, t.ClockStart)
		return errs
	}
	sum, longest := 0.0, -1.0
	dominant := ""
	for i, d := range t.Durations {
		from, to := t.Timeline[start+i], t.Timeline[start+i+1]
		if d.From != from.Stage || d.To != to.Stage {
			add("durations[%d]: is %s→%s, want %s→%s", i, d.From, d.To, from.Stage, to.Stage)
		}
		want := to.At.Sub(from.At).Seconds()
		if math.Abs(d.DurationS-want) > 0.001 || math.IsNaN(d.DurationS) {
			add("durations[%d].duration_s: is %g, but the timeline gives %.3f", i, d.DurationS, want)
		}
		sum += d.DurationS
		if d.DurationS > longest {
			longest, dominant = d.DurationS, d.To
		}
	}
	if math.Abs(sum-t.TTotalS) > TTotalSumTolerance || math.IsNaN(sum) {
		add("t_total_s: is %g but the durations sum to %.3f: the stages must account for all of T_total", t.TTotalS, sum)
	}
	if t.DominantStage != dominant {
		add("dominant_stage: is %q but the longest duration leads to %q", t.DominantStage, dominant)
	}
	errs = append(errs, t.verifyProbe()...)
	platform, container := t.split(start)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"platform_s", t.PlatformS, platform}, {"container_s", t.ContainerS, container}} {
		if math.Abs(c.got-c.want) > 0.001 || math.IsNaN(c.got) {
			add("%s: is %g but the timeline gives %.3f (platform: %s to %s, container: from %s on)", c.name, c.got, c.want, t.ClockStart, StageContainerStarted, StageContainerStarted)
		}
	}
	if total := platform + container; total > 0 {
		for _, c := range []struct {
			name      string
			got, want float64
		}{{"platform_share", t.PlatformShare, platform / total}, {"container_share", t.ContainerShare, container / total}} {
			if math.Abs(c.got-c.want) > 0.001 || math.IsNaN(c.got) {
				add("%s: is %g but the timeline gives %.4f", c.name, c.got, c.want)
			}
		}
	}
	return errs
}

// split divides the time from the clock start (timeline index start) to the last stage at
// container_started: the platform's part before it, the container's after it. Without container_started
// after the clock start, all of it is the platform's.
func (t *TTotal) split(start int) (platform, container float64) {
	first, last := t.Timeline[start].At, t.Timeline[len(t.Timeline)-1].At
	for _, s := range t.Timeline[start:] {
		if s.Stage == StageContainerStarted {
			return s.At.Sub(first).Seconds(), last.Sub(s.At).Seconds()
		}
	}
	return last.Sub(first).Seconds(), 0
}

// Reconcile derives, from Timeline and clockStart, every field Verify checks against the timeline:
// ClockStart, Durations (consecutive differences from clockStart on), TTotalS (their sum: the last stage's
// time minus clockStart's), DominantStage, PlatformS, ContainerS and the shares. The timeline must already be
// in time order (AssembleTimeline) and hold clockStart once, with a stage after it.
func (t *TTotal) Reconcile(clockStart string) error {
	start := -1
	for i, s := range t.Timeline {
		if s.Stage == clockStart {
			if start >= 0 {
				return fmt.Errorf("reconcile the ttotal timeline: %q appears twice", clockStart)
			}
			start = i
		}
		if i > 0 && s.At.Before(t.Timeline[i-1].At) {
			return fmt.Errorf("reconcile the ttotal timeline: %s at %s is before %s: assemble the timeline first", s.Stage, s.At.Format(time.RFC3339Nano), t.Timeline[i-1].Stage)
		}
	}
	if start < 0 || start == len(t.Timeline)-1 {
		return fmt.Errorf("reconcile the ttotal timeline: the clock start %q is missing or the last stage: a T_total needs a stage after it", clockStart)
	}
	t.ClockStart, t.Durations, t.TTotalS, t.DominantStage = clockStart, nil, 0, ""
	longest := -1.0
	for i := start + 1; i < len(t.Timeline); i++ {
		d := t.Timeline[i].At.Sub(t.Timeline[i-1].At).Seconds()
		t.Durations = append(t.Durations, StageDuration{From: t.Timeline[i-1].Stage, To: t.Timeline[i].Stage, DurationS: d})
		t.TTotalS += d
		if d > longest {
			longest, t.DominantStage = d, t.Timeline[i].Stage
		}
	}
	t.PlatformS, t.ContainerS = t.split(start)
	t.PlatformShare, t.ContainerShare = 0, 0
	if total := t.PlatformS + t.ContainerS; total > 0 {
		t.PlatformShare, t.ContainerShare = t.PlatformS/total, t.ContainerS/total
	}
	return nil
}

// verifyProbe checks the probe, polling and uncertainty records, when present.
func (t *TTotal) verifyProbe() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	nonNeg := func(name string, v float64) {
		if !(v >= 0) || math.IsInf(v, 0) {
			add("%s: is %g: want a finite number, not negative", name, v)
		}
	}
	if u := t.TTotalUncertaintyS; u != nil {
		nonNeg("t_total_uncertainty_s", *u)
	}
	if pl := t.Polling; pl != nil {
		nonNeg("polling.interval_s", pl.IntervalS)
		nonNeg("polling.fine_interval_s", pl.FineIntervalS)
		nonNeg("polling.in_service_gap_s", pl.InServiceGapS)
		for i, e := range pl.Throttled {
			nonNeg(fmt.Sprintf("polling.throttled[%d].wait_s", i), e.WaitS)
			if e.Operation == "" {
				add("polling.throttled[%d].operation: is empty", i)
			}
		}
	}
	p := t.Probe
	if p == nil {
		return errs
	}
	if p.Concurrency < 1 || p.Concurrency > MaxConcurrency {
		add("probe.concurrency: is %d: want 1 to %d", p.Concurrency, MaxConcurrency)
	}
	if p.ConcurrencyBasis == "" {
		add("probe.concurrency_basis: is empty: say where the probe concurrency came from")
	}
	if p.SLOTTFABMs < 1 {
		add("probe.slo_ttfab_ms: is %d: want the qmax artifact's SLO in milliseconds", p.SLOTTFABMs)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"probe.p95_before_scale_out_ms", p.P95BeforeScaleOutMs}, {"probe.peak_p95_before_in_service_ms", p.PeakP95BeforeInServiceMs},
		{"probe.qmax_p95_before_ms", p.QMaxP95BeforeMs}, {"probe.qmax_p95_after_ms", p.QMaxP95AfterMs},
		{"probe.recovery_threshold_ms", p.RecoveryThresholdMs}, {"probe.window_s", p.WindowS}, {"probe.p95_last_window_ms", p.P95LastWindowMs}} {
		nonNeg(f.name, f.v)
	}
	if !(p.Slowdown >= 1) || math.IsInf(p.Slowdown, 0) {
		add("probe.slowdown: is %g: want a finite factor of at least 1", p.Slowdown)
	}
	if !(p.Tolerance >= 1 && p.Tolerance <= 10) {
		add("probe.tolerance: is %g: want 1 to 10", p.Tolerance)
	}
	if p.SLOTTFABMs > 0 && p.RecoveryThresholdMs > float64(p.SLOTTFABMs)+1e-9 {
		add("probe.recovery_threshold_ms: is %g, above the SLO %d ms: a recovery must be back within the SLO", p.RecoveryThresholdMs, p.SLOTTFABMs)
	}
	if p.ExceededSLOBeforeInService != (p.PeakP95BeforeInServiceMs > float64(p.SLOTTFABMs)) {
		add("probe.exceeded_slo_before_in_service: is %t but the peak p95 %g ms against the SLO %d ms says otherwise", p.ExceededSLOBeforeInService, p.PeakP95BeforeInServiceMs, p.SLOTTFABMs)
	}
	if p.SamplesBeforeScaleOut < 0 || p.SamplesLastWindow < 0 || p.MinSamples < 1 || p.RecoveryWindows < 1 {
		add("probe: sample counts must not be negative, min_samples and recovery_windows at least 1 (are %d, %d, %d, %d)", p.SamplesBeforeScaleOut, p.SamplesLastWindow, p.MinSamples, p.RecoveryWindows)
	}
	served := false
	for _, s := range t.Timeline {
		served = served || s.Stage == StageFirstServedByNewInstance
	}
	if served && p.NewInstance == "" {
		add("probe.new_instance: is empty but the timeline has %s: name the instance", StageFirstServedByNewInstance)
	}
	if p.NewInstance != "" && slices.Contains(p.InstancesBeforeScaleOut, p.NewInstance) {
		add("probe.new_instance: %s served before the scale-out (instances_before_scale_out): it is not new", p.NewInstance)
	}
	return errs
}

// ProbeValidity is what the plan's measurement_validity makes of the probe: a recovery means
// something only when the fleet was past its Q_max before in_service, its probe above the SLO. It returns
// StatusPass, StatusWarn when the artifact does not record the probe (written before it was recorded), or
// StatusFail when the probe never exceeded sloMs (the qmax artifact's SLO) before in_service, with the
// detail and the recommendation.
func (t *TTotal) ProbeValidity(sloMs int) (Status, string, string) {
	p := t.Probe
	if p == nil {
		return StatusWarn, "the ttotal artifact does not record its probe load (written before ttotal recorded it): whether traffic_recovered marks a recovery is unknown",
			"re-run tts-bench ttotal (its default probe concurrency, from the qmax artifact, puts the fleet past Q_max before the scale-out)"
	}
	if !(p.PeakP95BeforeInServiceMs > float64(sloMs)) {
		return StatusFail, fmt.Sprintf("the ttotal probe never exceeded the SLO before in_service (p95 TTFAB at most %s ms, %s ms just before the scale-out, SLO %d ms, %d in flight on %d instance(s)): the fleet was not past its Q_max, so traffic_recovered marks no recovery",
				FormatNumber(p.PeakP95BeforeInServiceMs), FormatNumber(p.P95BeforeScaleOutMs), sloMs, p.Concurrency, t.FromInstances),
			"re-run tts-bench ttotal without --probe-concurrency (the default comes from the qmax artifact) or with a probe concurrency past Q_max"
	}
	return StatusPass, "", ""
}

// verifyCompression checks an artifact's cloudwatch_compression: absent, or one of autoscale.Compression's
// factors, and above 1 only on the emulator (AWS runs CloudWatch at its own speed).
func verifyCompression(f int, emulator bool) error {
	switch {
	case f != 0 && !autoscale.ValidCompression(f):
		return fmt.Errorf("cloudwatch_compression: is %d: want 1, 2, 5 or 10 (the emulator's published factor), or leave it out", f)
	case f > 1 && !emulator:
		return fmt.Errorf("cloudwatch_compression: is %d on AWS: only the local emulator compresses CloudWatch time (emulator: true)", f)
	}
	return nil
}
