package capacity

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/speech-infra/speech-infra/bench"
)

// QMax is the artifact of tts-bench qmax: a closed-loop concurrency staircase on one pinned instance and the
// highest concurrency whose TTFAB percentile still meets the SLO.
type QMax struct {
	// SchemaVersion is SchemaVersion.
	SchemaVersion int `json:"schema_version"`
	// Model is the catalog id of the model measured.
	Model string `json:"model"`
	// Endpoint is the endpoint measured, e.g. speech-kokoro-82m.
	Endpoint string `json:"endpoint"`
	// InstanceType is the instance type measured (ml.g5.xlarge, or "local" on the emulator).
	InstanceType string `json:"instance_type"`
	// Emulator is true when the endpoint measured ran on the local emulator (tts-bench --local): its instance
	// type is then a profile of assumptions, not that type (docs/design.md, "The gate"). Absent on AWS.
	Emulator bool `json:"emulator,omitempty"`
	// CloudWatchCompression is the CloudWatch compression of the emulator measured, as it published it
	// (emulator.Info; docs/design.md, "Compressed CloudWatch time"). Absent on AWS and at 1.
	CloudWatchCompression int `json:"cloudwatch_compression,omitempty"`
	// ModelRevision is the pinned weights revision ("none" for engines without weights).
	ModelRevision string `json:"model_revision"`
	// ContainerDigest is the SourceDigest of the container that served the measurement.
	ContainerDigest string `json:"container_digest"`
	// Transport is how requests were sent (see Transports).
	Transport string `json:"transport"`
	// SLOTTFABMs is the TTFAB bound each step was judged against, in milliseconds.
	SLOTTFABMs int `json:"slo_ttfab_ms"`
	// SLOPercentile is the percentile the bound applies to (95 for p95).
	SLOPercentile int `json:"slo_percentile"`
	// RunID identifies the run; raw records carry it too.
	RunID string `json:"run_id"`
	// StartedAt is when the run started, UTC.
	StartedAt time.Time `json:"started_at"`
	// EndedAt is when the run ended, UTC.
	EndedAt time.Time `json:"ended_at"`
	// DryRun is true when the run changed nothing and its numbers must not drive a deployment.
	DryRun bool `json:"dry_run"`
	// Steps are the staircase steps, one per concurrency.
	Steps []QMaxStep `json:"steps"`
	// QMax is the highest passing concurrency below the lowest failing one, a step passing when its TTFAB
	// percentile met the SLO and its p95 stall the stall budget (+ jitter): the Q_max the plan uses.
	QMax int `json:"q_max"`
	// BracketHighestPass is the concurrency of the highest passing step below the lowest failing one (= QMax).
	BracketHighestPass int `json:"bracket_highest_pass"`
	// BracketLowestFail is the lowest failing concurrency; 0 when no step failed (QMax is then a lower bound).
	BracketLowestFail int `json:"bracket_lowest_fail"`
	// QMaxTTFABOnly is Q_max by TTFAB alone, the definition of the original proof of value (docs/design.md, "The
	// original"): the highest concurrency below the lowest failing one when a step passes on its TTFAB percentile
	// (and errors) and its stall is not judged (QMaxStep.MeetsTTFABSLO). It is at least QMax, shown beside it for
	// comparison; the plan does not use it. The staircase stops at the first step failing TTFAB and stall, so
	// unless a step failed by TTFAB alone (BracketTTFABOnlyLowestFail 0) it is a lower bound. Both are absent
	// (not recorded, which does not mean "the same as q_max") in artifacts measured before the steps recorded
	// their TTFAB verdict.
	QMaxTTFABOnly *int `json:"q_max_ttfab_only,omitempty"`
	// BracketTTFABOnlyLowestFail is the lowest concurrency failing by TTFAB alone; 0 when none did.
	BracketTTFABOnlyLowestFail *int `json:"bracket_ttfab_only_lowest_fail,omitempty"`
	// ServiceTimeMeanMs is the mean full-response time at concurrency 1 (uncontended).
	ServiceTimeMeanMs float64 `json:"service_time_mean_ms"`
	// ServiceTimeP95Ms is the p95 full-response time at concurrency 1.
	ServiceTimeP95Ms float64 `json:"service_time_p95_ms"`
	// RecordsFile is the file name (beside the artifact) of the raw per-request records, JSON lines.
	RecordsFile string `json:"records_file"`
	// RecordsSHA256 is the digest of RecordsFile, "sha256:<hex>".
	RecordsSHA256 string `json:"records_sha256"`
	// Complete is false in the partial artifact an interrupted run writes (SIGINT, SIGTERM, a lost connection):
	// its steps are the finished ones, tts-bench qmax --resume finishes it, and nothing may plan from it (Verify
	// refuses it; VerifyPartial checks the rest). A run that ended writes true; absent means complete (artifacts
	// from before the field).
	Complete *bool `json:"complete,omitempty"`
	// Settings are what the run measured with: --resume continues a partial artifact only with the same.
	// Absent in artifacts from before the field.
	Settings *QMaxSettings `json:"settings,omitempty"`
	// RetryPolicy is how the measuring client retried a failed request: RetryPolicyNone, one attempt per request
	// (the SDK retryer off over sagemaker-stream; http never retries), so a throttled or 5xx answer is an error
	// record, never a slower success. Empty in artifacts measured before it was recorded.
	RetryPolicy string `json:"retry_policy,omitempty"`
	// HighestThroughputRPS is the highest completed-request rate of the closed-loop staircase's usable steps:
	// the rate staircase's fractions are of it. Zero when the artifact has no rate staircase.
	HighestThroughputRPS float64 `json:"highest_throughput_rps,omitempty"`
	// RateSteps are the open-loop steps that follow the closed-loop staircase, in increasing rate; their raw
	// records are in RecordsFile too. Empty in artifacts measured without the rate staircase: a plan then
	// falls back to the documented queueing approximation, marked NOT MEASURED.
	RateSteps []RateStep `json:"rate_steps,omitempty"`
	// RateQueueMaxDepth is the queue shield the rate staircase's requests were admitted within (the custom
	// attribute queue-max-depth each carried, container/README.md): the catalog's shield depth, so that the
	// rate steps' shed is the deployed shield's, measured. 0 when the requests carried none (the endpoint's
	// own QUEUE_MAX_DEPTH, 0 in the measurement configuration: no shed was measured).
	RateQueueMaxDepth int `json:"rate_queue_max_depth,omitempty"`
}

// QMaxSettings are the settings of a qmax run that its numbers depend on (tts-bench qmax's flags).
type QMaxSettings struct {
	// Ladder is the staircase given, MaxConcurrency its extension's bound, Refine whether it bisects.
	Ladder         []int `json:"ladder"`
	MaxConcurrency int   `json:"max_concurrency"`
	Refine         bool  `json:"refine"`
	// SettleS, HoldS, MeasureWindowS and RequestTimeoutS are a closed-loop step's windows, in seconds.
	SettleS         float64 `json:"settle_s"`
	HoldS           float64 `json:"hold_s"`
	MeasureWindowS  float64 `json:"measure_window_s"`
	RequestTimeoutS float64 `json:"request_timeout_s"`
	// StallBudgetMs is the stall budget the steps were judged against; MinRequests the fewest requests of a
	// usable step.
	StallBudgetMs float64 `json:"stall_budget_ms"`
	MinRequests   int     `json:"min_requests"`
	// RateFractions, RateSettleS, RateHoldS and RateMeasureWindowS are the rate staircase's.
	RateFractions      []float64 `json:"rate_fractions,omitempty"`
	RateSettleS        float64   `json:"rate_settle_s"`
	RateHoldS          float64   `json:"rate_hold_s"`
	RateMeasureWindowS float64   `json:"rate_measure_window_s"`
	// RateRefineSteps is the most refinement steps after RateFractions (tts-bench qmax --rate-refine).
	RateRefineSteps int `json:"rate_refine_steps,omitempty"`
	// Seed seeds the request texts and the Poisson arrivals; Corpus is the digest of the request texts.
	Seed   uint64 `json:"seed"`
	Corpus string `json:"corpus"`
}

// IsComplete reports whether the artifact is of a run that ended (Complete absent or true).
func (q *QMax) IsComplete() bool { return q.Complete == nil || *q.Complete }

// RetryPolicyNone is the retry policy of a qmax measured with one attempt per request (QMax.RetryPolicy).
const RetryPolicyNone = "none"

// QMaxStep is one closed-loop step: exactly Concurrency requests in flight during the measurement window.
type QMaxStep struct {
	// Concurrency is the number of requests held in flight (closed loop).
	Concurrency int `json:"concurrency"`
	// OKCount is the number of successful requests in the window.
	OKCount int `json:"ok_count"`
	// ErrorCount is the number of failed or timed-out requests in the window; they count against the step.
	ErrorCount int `json:"error_count"`
	// RejectedCount is the number of 503 queue_saturated answers in the window; they count against the step.
	RejectedCount int `json:"rejected_count"`
	// TTFABP50Ms is the exact median time to first audio byte.
	TTFABP50Ms float64 `json:"ttfab_p50_ms"`
	// TTFABP95Ms is the exact 95th percentile time to first audio byte.
	TTFABP95Ms float64 `json:"ttfab_p95_ms"`
	// TTFABP99Ms is the exact 99th percentile time to first audio byte.
	TTFABP99Ms float64 `json:"ttfab_p99_ms"`
	// StallP95Ms is the exact 95th percentile playback stall of the step's successful requests: the longest
	// time by which audio arrived after a real-time player started at the first audio byte needed it.
	StallP95Ms float64 `json:"stall_p95_ms"`
	// StallBudgetMs is the catalog's stall budget the step was judged against (slo.stall_budget_ms).
	StallBudgetMs float64 `json:"stall_budget_ms"`
	// StallJitterMs is the jitter allowance added to the budget (the load engine's, 50 ms by default).
	StallJitterMs float64 `json:"stall_jitter_ms"`
	// ResponseMeanMs is the mean full-response time (request written to last byte).
	ResponseMeanMs float64 `json:"response_mean_ms"`
	// AchievedRPS is the completed-request rate in the window, per second.
	AchievedRPS float64 `json:"achieved_rps"`
	// ClientConcurrencyMean is the mean number of requests in flight as the client counted them.
	ClientConcurrencyMean float64 `json:"client_concurrency_mean"`
	// ClientConcurrencyPeak is the peak number of requests in flight as the client counted them.
	ClientConcurrencyPeak int `json:"client_concurrency_peak"`
	// CloudWatchConcurrencyMax is the Maximum of ConcurrentRequestsPerModel over the window; absent when unread.
	CloudWatchConcurrencyMax float64 `json:"cloudwatch_concurrency_max,omitempty"`
	// CloudWatchRatio is CloudWatchConcurrencyMax ÷ ClientConcurrencyPeak; absent when unread.
	CloudWatchRatio float64 `json:"cloudwatch_ratio,omitempty"`
	// TTFABCILowMs and TTFABCIHighMs bound the distribution-free 95% confidence interval of the step's TTFAB at
	// the SLO percentile, from order statistics of its successful requests; absent when too few succeeded for
	// one.
	TTFABCILowMs  float64 `json:"ttfab_ci_low_ms,omitempty"`
	TTFABCIHighMs float64 `json:"ttfab_ci_high_ms,omitempty"`
	// ClientCPUCores is the measuring process's CPU time (rusage, user + system) over the step ÷ the step's wall
	// time: 1 is one core busy throughout. Absent when not measured.
	ClientCPUCores float64 `json:"client_cpu_cores,omitempty"`
	// ClientLagP99Ms and ClientLagMaxMs are the measuring process's scheduling lag during the step: how late a
	// probe goroutine woke from 10-ms sleeps. A client over its CPU or lag bound makes the step unusable.
	ClientLagP99Ms float64 `json:"client_lag_p99_ms,omitempty"`
	ClientLagMaxMs float64 `json:"client_lag_max_ms,omitempty"`
	// LittlesLawRatio is achieved_rps × response_mean_ms ÷ client_concurrency_mean (1 when Little's law holds);
	// LittlesLawMiss flags a step more than 10% off: its rate, response time and concurrency disagree.
	LittlesLawRatio float64 `json:"littles_law_ratio,omitempty"`
	LittlesLawMiss  bool    `json:"littles_law_miss,omitempty"`
	// Remeasured is true when the step's first measurement was inconclusive (its interval held the SLO) and it
	// was measured again with a measure window twice as long; the step's numbers are the second measurement's.
	Remeasured bool `json:"remeasured,omitempty"`
	// Inconclusive is true when the interval still held the SLO after the re-measure: the step is judged as
	// measured, and flagged.
	Inconclusive bool `json:"inconclusive,omitempty"`
	// MeetsSLO is true when the TTFAB percentile met the SLO and the p95 stall stayed within the stall budget
	// plus the jitter allowance, with errors and rejections counted against it.
	MeetsSLO bool `json:"meets_slo"`
	// MeetsTTFABSLO is the step's verdict by TTFAB alone (the original's definition): MeetsSLO without the
	// stall bound. It differs from MeetsSLO only on a step the stall alone failed. Absent (not recorded) in
	// artifacts measured before it was.
	MeetsTTFABSLO *bool `json:"meets_ttfab_slo,omitempty"`
	// Usable is false when the step cannot be trusted (too few samples, metric deviation, ...).
	Usable bool `json:"usable"`
	// UnusableReason says why Usable is false.
	UnusableReason string `json:"unusable_reason,omitempty"`
}

// Throughput is the step's per-instance request rate: the achieved rate, or by Little's law concurrency ÷
// mean full-response time when no rate was recorded. It is 0 when neither is known.
func (s QMaxStep) Throughput() float64 {
	if s.AchievedRPS > 0 {
		return s.AchievedRPS
	}
	if s.ResponseMeanMs > 0 {
		return float64(s.Concurrency) / (s.ResponseMeanMs / 1000)
	}
	return 0
}

// ttfabAt returns the recorded TTFAB at percentile p when the step records that percentile.
func (s QMaxStep) ttfabAt(p int) (float64, bool) {
	switch p {
	case 50:
		return s.TTFABP50Ms, true
	case 95:
		return s.TTFABP95Ms, true
	case 99:
		return s.TTFABP99Ms, true
	}
	return 0, false
}

// LoadQMax reads and strictly decodes a qmax artifact. It does not Verify it.
func LoadQMax(path string) (*QMax, error) {
	v, _, err := load[QMax](path)
	return v, err
}

// ParseQMax strictly decodes a qmax artifact; source names it in errors.
func ParseQMax(source string, data []byte) (*QMax, error) { return parse[QMax](source, data) }

// Verify returns every semantic problem of the artifact, each naming the field and, where it helps, the fix. A
// partial artifact (Complete false) is refused: nothing may plan from an interrupted measurement.
func (q *QMax) Verify() []error {
	errs := q.verify(false)
	if !q.IsComplete() {
		errs = append(errs, fmt.Errorf("complete: is false: this is the partial artifact of an interrupted qmax run (%d finished step(s)): finish it with tts-bench qmax --resume before planning from it", len(q.Steps)))
	}
	return errs
}

// VerifyPartial returns every semantic problem of a partial artifact (Complete false): what Verify checks,
// except that no step need have met the SLO yet.
func (q *QMax) VerifyPartial() []error {
	errs := q.verify(true)
	if q.IsComplete() {
		errs = append(errs, fmt.Errorf("complete: is not false: a partial artifact says so"))
	}
	return errs
}

func (q *QMax) verify(partial bool) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if q.SchemaVersion != SchemaVersion {
		add("schema_version: is %d, this tts-bench reads %d: re-run tts-bench qmax with this version", q.SchemaVersion, SchemaVersion)
	}
	errs = append(errs, emptyFields([]field{
		{"model", q.Model}, {"endpoint", q.Endpoint}, {"instance_type", q.InstanceType},
		{"model_revision", q.ModelRevision}, {"run_id", q.RunID},
	})...)
	if !ValidDigest(q.ContainerDigest) {
		add("container_digest: %q is not a digest: want sha256:<64 hex digits>", q.ContainerDigest)
	}
	if !knownTransport(q.Transport) {
		add("transport: unknown transport %q: want one of %v", q.Transport, Transports)
	}
	if err := verifyCompression(q.CloudWatchCompression, q.Emulator); err != nil {
		errs = append(errs, err)
	}
	if q.SLOTTFABMs <= 0 {
		add("slo_ttfab_ms: is %d: must be positive", q.SLOTTFABMs)
	}
	if q.SLOPercentile < 50 || q.SLOPercentile > 99 {
		add("slo_percentile: is %d: want 50 to 99", q.SLOPercentile)
	}
	errs = append(errs, verifyRunTimes(q.StartedAt, q.EndedAt)...)
	if q.RetryPolicy != "" && q.RetryPolicy != RetryPolicyNone {
		add("retry_policy: is %q: want %q (one attempt per request: a retry inside the TTFAB clock would hide a failure as a slower success)", q.RetryPolicy, RetryPolicyNone)
	}
	if !validFileName(q.RecordsFile) {
		add("records_file: %q is not a file name beside the artifact", q.RecordsFile)
	}
	if !ValidDigest(q.RecordsSHA256) {
		add("records_sha256: %q is not a digest: want sha256:<64 hex digits>", q.RecordsSHA256)
	}
	if !positiveUpTo(q.ServiceTimeMeanMs, MaxLatencyMs) {
		add("service_time_mean_ms: is %g: the uncontended service time must be in (0, %d] ms", q.ServiceTimeMeanMs, MaxLatencyMs)
	}
	if !positiveUpTo(q.ServiceTimeP95Ms, MaxLatencyMs) {
		add("service_time_p95_ms: is %g: want (0, %d] ms", q.ServiceTimeP95Ms, MaxLatencyMs)
	}
	if q.SLOTTFABMs > MaxLatencyMs {
		add("slo_ttfab_ms: is %d: want at most %d ms", q.SLOTTFABMs, MaxLatencyMs)
	}
	if len(q.Steps) == 0 {
		add("steps: is empty: a qmax artifact needs the staircase it was measured with")
		return errs
	}
	if len(q.Steps) > MaxQMaxSteps {
		add("steps: has %d steps: at most %d", len(q.Steps), MaxQMaxSteps)
		return errs
	}
	seen := map[int]bool{}
	for i, s := range q.Steps {
		p := fmt.Sprintf("steps[%d]", i)
		if s.Concurrency < 1 || s.Concurrency > MaxConcurrency {
			add("%s.concurrency: is %d: want 1 to %d", p, s.Concurrency, MaxConcurrency)
		}
		if seen[s.Concurrency] {
			add("%s.concurrency: %d appears twice: each concurrency is measured once", p, s.Concurrency)
		}
		seen[s.Concurrency] = true
		for _, c := range []struct {
			name string
			n    int
		}{{"ok_count", s.OKCount}, {"error_count", s.ErrorCount}, {"rejected_count", s.RejectedCount}} {
			if c.n < 0 || c.n > MaxCount {
				add("%s.%s: is %d: want 0 to %d", p, c.name, c.n, MaxCount)
			}
		}
		for _, v := range []struct {
			name  string
			x, hi float64
		}{{"ttfab_p50_ms", s.TTFABP50Ms, MaxLatencyMs}, {"ttfab_p95_ms", s.TTFABP95Ms, MaxLatencyMs}, {"ttfab_p99_ms", s.TTFABP99Ms, MaxLatencyMs},
			{"stall_p95_ms", s.StallP95Ms, MaxLatencyMs}, {"stall_budget_ms", s.StallBudgetMs, MaxLatencyMs}, {"stall_jitter_ms", s.StallJitterMs, MaxLatencyMs},
			{"response_mean_ms", s.ResponseMeanMs, MaxLatencyMs}, {"achieved_rps", s.AchievedRPS, MaxInstanceRPS},
			{"client_concurrency_mean", s.ClientConcurrencyMean, MaxConcurrency},
			{"cloudwatch_concurrency_max", s.CloudWatchConcurrencyMax, MaxConcurrency * MaxCloudWatchRatio},
			{"cloudwatch_ratio", s.CloudWatchRatio, 100 * MaxCloudWatchRatio}} {
			if !inRange(v.x, 0, v.hi) {
				add("%s.%s: is %g: want a number in [0, %g]", p, v.name, v.x, v.hi)
			}
		}
		if s.ClientConcurrencyPeak < 0 || s.ClientConcurrencyPeak > MaxConcurrency {
			add("%s.client_concurrency_peak: is %d: want 0 to %d", p, s.ClientConcurrencyPeak, MaxConcurrency)
		}
		if s.TTFABP50Ms > s.TTFABP95Ms || s.TTFABP95Ms > s.TTFABP99Ms {
			add("%s: percentiles out of order (p50 %g, p95 %g, p99 %g ms)", p, s.TTFABP50Ms, s.TTFABP95Ms, s.TTFABP99Ms)
		}
		if v, ok := s.ttfabAt(q.SLOPercentile); ok && s.MeetsSLO && v > float64(q.SLOTTFABMs) {
			add("%s.meets_slo: is true but the p%d TTFAB %g ms exceeds the SLO %d ms", p, q.SLOPercentile, v, q.SLOTTFABMs)
		}
		if lim := s.StallBudgetMs + s.StallJitterMs; s.MeetsSLO && s.StallP95Ms > lim {
			add("%s.meets_slo: is true but the p95 stall %g ms exceeds the stall budget %g ms + jitter %g ms", p, s.StallP95Ms, s.StallBudgetMs, s.StallJitterMs)
		}
		if s.MeetsSLO && s.OKCount == 0 {
			add("%s.meets_slo: is true but no request succeeded", p)
		}
		if m := s.MeetsTTFABSLO; m != nil {
			v, _ := s.ttfabAt(q.SLOPercentile)
			switch {
			case s.MeetsSLO && !*m:
				add("%s.meets_ttfab_slo: is false but meets_slo is true: a step that meets TTFAB and stall meets TTFAB", p)
			case *m && s.OKCount == 0:
				add("%s.meets_ttfab_slo: is true but no request succeeded", p)
			case *m && v > float64(q.SLOTTFABMs):
				add("%s.meets_ttfab_slo: is true but the p%d TTFAB %g ms exceeds the SLO %d ms", p, q.SLOPercentile, v, q.SLOTTFABMs)
			case *m && !s.MeetsSLO && s.StallP95Ms <= s.StallBudgetMs+s.StallJitterMs:
				add("%s.meets_ttfab_slo: is true and meets_slo false, but the p95 stall %g ms is within the stall budget %g ms + jitter %g ms: only the stall separates the two verdicts", p, s.StallP95Ms, s.StallBudgetMs, s.StallJitterMs)
			}
		}
		if !s.Usable && s.UnusableReason == "" {
			add("%s.unusable_reason: is empty: say why the step is not usable", p)
		}
		if s.TTFABCILowMs != 0 || s.TTFABCIHighMs != 0 {
			v, ok := s.ttfabAt(q.SLOPercentile)
			if !inRange(s.TTFABCILowMs, 0, MaxLatencyMs) || !inRange(s.TTFABCIHighMs, 0, MaxLatencyMs) || s.TTFABCILowMs > s.TTFABCIHighMs || (ok && (v < s.TTFABCILowMs || v > s.TTFABCIHighMs)) {
				add("%s: the confidence interval [%g, %g] ms is not an interval around the p%d TTFAB %g ms", p, s.TTFABCILowMs, s.TTFABCIHighMs, q.SLOPercentile, v)
			}
		}
		for _, v := range []struct {
			name string
			x    float64
		}{{"client_cpu_cores", s.ClientCPUCores}, {"client_lag_p99_ms", s.ClientLagP99Ms}, {"client_lag_max_ms", s.ClientLagMaxMs}, {"littles_law_ratio", s.LittlesLawRatio}} {
			if !inRange(v.x, 0, MaxLatencyMs) {
				add("%s.%s: is %g: want a number in [0, %d]", p, v.name, v.x, MaxLatencyMs)
			}
		}
		if s.Inconclusive && !s.Remeasured {
			add("%s.inconclusive: is true but the step was not remeasured: an inconclusive step is measured again once before it is judged", p)
		}
	}
	errs = append(errs, q.verifyRateSteps()...)
	// Q_max is the highest passing concurrency below the lowest failing one (docs/design.md, "Closed loop"), by
	// TTFAB and stall, and by TTFAB alone where the steps recorded it.
	highestPass, lowestFail := q.BracketWithStall()
	if q.BracketLowestFail != lowestFail {
		add("bracket_lowest_fail: is %d but the lowest failing step is at concurrency %d (0 = none)", q.BracketLowestFail, lowestFail)
	}
	if q.BracketHighestPass != highestPass {
		add("bracket_highest_pass: is %d but the highest passing step below the lowest failing one is at %d", q.BracketHighestPass, highestPass)
	}
	if q.QMax != highestPass {
		add("q_max: is %d but the staircase gives %d", q.QMax, highestPass)
	}
	errs = append(errs, q.verifyTTFABOnly()...)
	if q.QMax < 1 && highestPass < 1 && !partial {
		add("q_max: is %d: no step met the SLO, so no concurrency is safe on this instance type: lower the load per instance, relax the SLO or choose a larger instance", q.QMax)
	}
	return errs
}

// verifyTTFABOnly checks Q_max by TTFAB alone against the steps' TTFAB verdicts: recorded on every step or on
// none, and then q_max_ttfab_only and its bracket present exactly when the steps record them.
func (q *QMax) verifyTTFABOnly() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	recorded := 0
	for _, s := range q.Steps {
		if s.MeetsTTFABSLO != nil {
			recorded++
		}
	}
	if recorded > 0 && recorded < len(q.Steps) {
		add("steps: %d of %d steps record meets_ttfab_slo: a run records it on every step or on none", recorded, len(q.Steps))
		return errs
	}
	hp, lf, ok := q.BracketTTFABOnly()
	switch {
	case !ok && (q.QMaxTTFABOnly != nil || q.BracketTTFABOnlyLowestFail != nil):
		add("q_max_ttfab_only: is set but the steps do not record meets_ttfab_slo, so Q_max by TTFAB alone was not measured")
	case ok && (q.QMaxTTFABOnly == nil || q.BracketTTFABOnlyLowestFail == nil):
		add("q_max_ttfab_only: is absent but the steps record meets_ttfab_slo: want q_max_ttfab_only %d and bracket_ttfab_only_lowest_fail %d", hp, lf)
	case ok:
		if *q.QMaxTTFABOnly != hp {
			add("q_max_ttfab_only: is %d but the staircase by TTFAB alone gives %d", *q.QMaxTTFABOnly, hp)
		}
		if *q.BracketTTFABOnlyLowestFail != lf {
			add("bracket_ttfab_only_lowest_fail: is %d but the lowest step failing by TTFAB alone is at concurrency %d (0 = none)", *q.BracketTTFABOnlyLowestFail, lf)
		}
	}
	return errs
}

// Bracket returns the highest passing concurrency below the lowest failing one, and the lowest failing one (0
// when none failed), from steps measured in any order (docs/design.md, "Closed loop"). It is the one rule behind
// Q_max: the qmax command's staircase and artifact, and Verify, all bracket through it.
func Bracket(passed map[int]bool) (highestPass, lowestFail int) {
	cs := make([]int, 0, len(passed))
	for c := range passed {
		cs = append(cs, c)
	}
	sort.Ints(cs)
	for _, c := range cs {
		if !passed[c] {
			return highestPass, c
		}
		highestPass = c
	}
	return highestPass, 0
}

// BracketWithStall is the bracket of the steps by their verdict on TTFAB and stall (MeetsSLO): the Q_max the
// plan uses.
func (q *QMax) BracketWithStall() (highestPass, lowestFail int) {
	passed := map[int]bool{}
	for _, s := range q.Steps {
		passed[s.Concurrency] = s.MeetsSLO
	}
	return Bracket(passed)
}

// BracketTTFABOnly is the bracket of the steps by their verdict on TTFAB alone (MeetsTTFABSLO); ok is false
// when some step does not record that verdict (an artifact from before it was recorded).
func (q *QMax) BracketTTFABOnly() (highestPass, lowestFail int, ok bool) {
	passed := map[int]bool{}
	for _, s := range q.Steps {
		if s.MeetsTTFABSLO == nil {
			return 0, 0, false
		}
		passed[s.Concurrency] = *s.MeetsTTFABSLO
	}
	if len(passed) == 0 {
		return 0, 0, false
	}
	highestPass, lowestFail = Bracket(passed)
	return highestPass, lowestFail, true
}

// SetQMax sets Q_max and its bracket both ways from the steps (BracketWithStall, BracketTTFABOnly): what the
// qmax command writes, and what Verify checks.
func (q *QMax) SetQMax() {
	q.BracketHighestPass, q.BracketLowestFail = q.BracketWithStall()
	q.QMax = q.BracketHighestPass
	q.QMaxTTFABOnly, q.BracketTTFABOnlyLowestFail = nil, nil
	if hp, lf, ok := q.BracketTTFABOnly(); ok {
		q.QMaxTTFABOnly, q.BracketTTFABOnlyLowestFail = &hp, &lf
	}
}

// verifyRunTimes checks that a run's times are set, UTC and in order.
func verifyRunTimes(start, end time.Time) []error {
	var errs []error
	if start.IsZero() {
		errs = append(errs, fmt.Errorf("started_at: is not set"))
	}
	if end.IsZero() {
		errs = append(errs, fmt.Errorf("ended_at: is not set"))
	}
	if _, off := start.Zone(); off != 0 {
		errs = append(errs, fmt.Errorf("started_at: %s is not UTC: write times with a Z suffix", start.Format(time.RFC3339Nano)))
	}
	if _, off := end.Zone(); off != 0 {
		errs = append(errs, fmt.Errorf("ended_at: %s is not UTC: write times with a Z suffix", end.Format(time.RFC3339Nano)))
	}
	if end.Before(start) {
		errs = append(errs, fmt.Errorf("ended_at: %s is before started_at %s", end.Format(time.RFC3339Nano), start.Format(time.RFC3339Nano)))
	}
	return errs
}

// sortedSteps returns a copy of the steps in increasing concurrency.
func (q *QMax) sortedSteps() []QMaxStep {
	steps := append([]QMaxStep(nil), q.Steps...)
	sort.Slice(steps, func(i, j int) bool { return steps[i].Concurrency < steps[j].Concurrency })
	return steps
}

// throughputCurve returns the staircase as (concurrency, rps) points from usable steps that completed
// requests, sorted by concurrency.
func (q *QMax) throughputCurve() []ThroughputPoint {
	var pts []ThroughputPoint
	for _, s := range q.sortedSteps() {
		if !s.Usable || s.OKCount == 0 {
			continue
		}
		if x := s.Throughput(); x > 0 {
			pts = append(pts, ThroughputPoint{Concurrency: float64(s.Concurrency), RPS: x})
		}
	}
	return pts
}

// cloudWatchRatio returns the CloudWatch/client concurrency ratio recorded on the usable step nearest to c
// (the lower one on a tie), or 1 when no step recorded one.
func (q *QMax) cloudWatchRatio(c float64) float64 {
	best, bestDist := 1.0, math.Inf(1)
	for _, s := range q.sortedSteps() {
		if !s.Usable || !(s.CloudWatchRatio > 0) {
			continue
		}
		if d := math.Abs(float64(s.Concurrency) - c); d < bestDist {
			best, bestDist = s.CloudWatchRatio, d
		}
	}
	return best
}

// Bounds of the checks NewQMax makes on each closed-loop step.
const (
	// LittlesLawTolerance is how far a step's λ·W may be from its mean requests in flight, relatively.
	LittlesLawTolerance = 0.10
	// CloudWatchRatioTolerance is how far the CloudWatch ÷ client concurrency ratio may be from 1 before the
	// step gets a note.
	CloudWatchRatioTolerance = 0.25
)

// LittlesLaw returns λ·W ÷ L of a closed-loop step: the achieved rate times the mean response time over the
// time-averaged requests in flight (1 when Little's law holds), and whether it is within
// LittlesLawTolerance. A step with nothing in flight or no response time is not checked (ratio 0, ok).
func (s QMaxStep) LittlesLaw() (float64, bool) {
	if !(s.ClientConcurrencyMean > 0) || !(s.ResponseMeanMs > 0) || !(s.AchievedRPS > 0) {
		return 0, true
	}
	r := s.AchievedRPS * s.ResponseMeanMs / 1000 / s.ClientConcurrencyMean
	return r, math.Abs(r-1) <= LittlesLawTolerance
}

// QMaxRun is what a qmax run measured, the input of NewQMax: the run's identity and SLO, its closed-loop
// steps with what the command observed around each, and its rate staircase.
type QMaxRun struct {
	// Model, Endpoint, InstanceType, ModelRevision, ContainerDigest, Transport and RunID identify the run
	// (the QMax fields of the same names).
	Model, Endpoint, InstanceType, ModelRevision, ContainerDigest, Transport, RunID string
	// Emulator is true when the endpoint ran on the local emulator (QMax.Emulator).
	Emulator bool
	// CloudWatchCompression is the emulator's CloudWatch compression (QMax.CloudWatchCompression).
	CloudWatchCompression int
	// SLOTTFABMs and SLOPercentile are the SLO the steps were judged against.
	SLOTTFABMs, SLOPercentile int
	// StartedAt and EndedAt bound the run (UTC).
	StartedAt, EndedAt time.Time
	// Steps are the closed-loop steps in the order measured.
	Steps []MeasuredStep
	// HighestThroughputRPS, RateSteps and RateQueueMaxDepth are the rate staircase's (none: RateSteps empty).
	HighestThroughputRPS float64
	RateSteps            []RateStep
	RateQueueMaxDepth    int
	// CloudWatchPeriod is the period of the CloudWatch datapoints read for the steps, for the notes.
	CloudWatchPeriod time.Duration
}

// MeasuredStep is one closed-loop step folded from its records, with what the command observed around it.
type MeasuredStep struct {
	// Step is the step folded from its records (bench.SummarizeStep).
	Step bench.StepResult
	// Remeasured and Inconclusive are the re-measure flags of QMaxStep.
	Remeasured, Inconclusive bool
	// Client is the measuring process's own use during the step; nil when not watched (a resumed step).
	Client *ClientUse
	// CloudWatchMax is the highest ConcurrentRequestsPerModel datapoint read for the step; nil when unread.
	// CloudWatchOuter says the datapoints also cover the neighbouring steps (a window shorter than two
	// periods).
	CloudWatchMax   *float64
	CloudWatchOuter bool
}

// ClientUse is what the measuring process used during a step.
type ClientUse struct {
	// CPUCores is CPU time ÷ wall time: 1 is one core busy for the whole step.
	CPUCores float64
	// LagP99Ms and LagMaxMs are its scheduling lag.
	LagP99Ms, LagMaxMs float64
}

// QMaxNote is something about a step the operator should know (the command prints it as a warning).
type QMaxNote struct {
	// Step is the step's concurrency, 0 for the run as a whole.
	Step int
	// Check is what found it: NoteLittlesLaw, NoteCloudWatchRatio or NoteServiceTime.
	Check string
	// Text says what was found and what to do.
	Text string
}

// The checks of QMaxNote.
const (
	NoteLittlesLaw      = "littles_law"
	NoteCloudWatchRatio = "cloudwatch_ratio"
	NoteServiceTime     = "service_time"
)

// NewQMax folds a run into its artifact: each step as StepOf with the command's observations, Little's law
// and the CloudWatch ratio checked, the uncontended service time from the lowest step that succeeded, and
// Q_max with its brackets both ways (SetQMax). It is the one constructor of the qmax artifact; tts-bench
// qmax adds the records file, the settings and whether the run completed, then writes it. The notes are
// what the checks found, in step order.
func NewQMax(run QMaxRun) (*QMax, []QMaxNote) {
	q := &QMax{
		SchemaVersion: SchemaVersion, Model: run.Model, Endpoint: run.Endpoint, InstanceType: run.InstanceType, Emulator: run.Emulator, CloudWatchCompression: run.CloudWatchCompression,
		ModelRevision: run.ModelRevision, ContainerDigest: run.ContainerDigest, Transport: run.Transport,
		SLOTTFABMs: run.SLOTTFABMs, SLOPercentile: run.SLOPercentile, RunID: run.RunID,
		StartedAt: run.StartedAt, EndedAt: run.EndedAt, RetryPolicy: RetryPolicyNone,
	}
	var notes []QMaxNote
	note := func(c int, check, format string, args ...any) {
		notes = append(notes, QMaxNote{Step: c, Check: check, Text: fmt.Sprintf(format, args...)})
	}
	var lowest *bench.StepResult
	for i, m := range run.Steps {
		s := m.Step
		st := StepOf(s)
		st.Remeasured, st.Inconclusive = m.Remeasured, m.Inconclusive
		if u := m.Client; u != nil {
			st.ClientCPUCores, st.ClientLagP99Ms, st.ClientLagMaxMs = u.CPUCores, u.LagP99Ms, u.LagMaxMs
		}
		if ratio, ok := st.LittlesLaw(); ratio > 0 {
			st.LittlesLawRatio, st.LittlesLawMiss = ratio, !ok
			if !ok {
				note(s.Concurrency, NoteLittlesLaw, "step at concurrency %d misses Little's law: achieved %.3g rps × mean response %.0f ms = %.3g, against %.3g requests in flight on average (ratio %.2f, more than %.0f%% off): its rate, response time and concurrency disagree (errors, a window too short for the response time, or a client that stalled)",
					s.Concurrency, st.AchievedRPS, st.ResponseMeanMs, st.AchievedRPS*st.ResponseMeanMs/1000, st.ClientConcurrencyMean, ratio, 100*LittlesLawTolerance)
			}
		}
		if m.CloudWatchMax != nil {
			v := *m.CloudWatchMax
			st.CloudWatchConcurrencyMax = v
			if s.InFlightPeak > 0 {
				st.CloudWatchRatio = v / float64(s.InFlightPeak)
				switch {
				case math.Abs(st.CloudWatchRatio-1) > CloudWatchRatioTolerance && m.CloudWatchOuter:
					note(s.Concurrency, NoteCloudWatchRatio, "step at concurrency %d: CloudWatch saw at most %g concurrent requests but the client held up to %d (ratio %.2f): the measure window is shorter than two %s periods, so the datapoints also cover the neighbouring steps: use --measure-window %s or longer for a ratio of this step alone",
						s.Concurrency, v, s.InFlightPeak, st.CloudWatchRatio, run.CloudWatchPeriod, 2*run.CloudWatchPeriod)
				case math.Abs(st.CloudWatchRatio-1) > CloudWatchRatioTolerance:
					note(s.Concurrency, NoteCloudWatchRatio, "step at concurrency %d: CloudWatch saw at most %g concurrent requests but the client held up to %d (ratio %.2f): the instance did not see what the client sent (another client, a second instance, or the metric's definition): check tts-bench drift",
						s.Concurrency, v, s.InFlightPeak, st.CloudWatchRatio)
				}
			}
		}
		q.Steps = append(q.Steps, st)
		if s.OK > 0 && (lowest == nil || s.Concurrency < lowest.Concurrency) {
			lowest = &run.Steps[i].Step
		}
	}
	if lowest != nil {
		q.ServiceTimeMeanMs, q.ServiceTimeP95Ms = lowest.ResponseMeanMs, lowest.ResponseP95Ms
		if lowest.Concurrency != 1 {
			note(0, NoteServiceTime, "the uncontended service time is taken at concurrency %d, the lowest measured: put 1 in the ladder for the real one", lowest.Concurrency)
		}
	}
	q.SetQMax()
	if len(run.RateSteps) > 0 {
		q.HighestThroughputRPS, q.RateQueueMaxDepth = run.HighestThroughputRPS, run.RateQueueMaxDepth
		q.RateSteps = append([]RateStep(nil), run.RateSteps...)
	}
	return q, notes
}
