package measure

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
)

// An interrupted qmax keeps its work: on SIGINT, SIGTERM or a lost connection the finished
// steps are written as a partial artifact (complete: false, refused by Verify and so by plan) with the
// records so far; tts-bench qmax --resume reads it back and continues from the last finished step when the
// endpoint, the container digest and the settings match, appending to the records.

// settings is what the run measures with, as the artifact records it.
func (o *QMax) settings() *capacity.QMaxSettings {
	rs, rh, rw := o.RateWindows()
	return &capacity.QMaxSettings{
		Ladder: o.Ladder.Steps, MaxConcurrency: o.Ladder.Max, Refine: o.Refine,
		SettleS: o.Settle.Seconds(), HoldS: o.Hold.Seconds(), MeasureWindowS: o.Window.Seconds(), RequestTimeoutS: o.RequestTimeout.Seconds(),
		StallBudgetMs: float64(o.StallBudget.Milliseconds()), MinRequests: o.MinRequests,
		RateFractions: o.RateFractions, RateSettleS: rs.Seconds(), RateHoldS: rh.Seconds(), RateMeasureWindowS: rw.Seconds(),
		RateRefineSteps: o.RateRefineSteps,
		Seed:            o.Seed, Corpus: capacity.DigestBytes([]byte(strings.Join(o.Corpus.Texts(), "\n"))),
	}
}

// settingsDiff names every setting that differs between two runs, as "name: was A, now B".
func settingsDiff(was, now *capacity.QMaxSettings) []string {
	a, _ := json.Marshal(was)
	b, _ := json.Marshal(now)
	var ma, mb map[string]any
	_ = json.Unmarshal(a, &ma)
	_ = json.Unmarshal(b, &mb)
	var out []string
	for k, v := range mb {
		if !reflect.DeepEqual(ma[k], v) {
			out = append(out, fmt.Sprintf("%s: was %v, now %v", k, ma[k], v))
		}
	}
	for k, v := range ma {
		if _, ok := mb[k]; !ok {
			out = append(out, fmt.Sprintf("%s: was %v, now unset", k, v))
		}
	}
	return out
}

// resumeState is what --resume takes over from a partial artifact.
type resumeState struct {
	q       *capacity.QMax
	records []byte // the compressed records file as written
	steps   []bench.StepResult
	rate    []bench.RateStepResult
}

// loadResume reads the partial artifact at --output and its records and checks that this run may continue
// it: the same model, endpoint, transport, container digest and settings. Every mismatch is named (exit 2).
func (o *QMax) loadResume(judge bench.Judge) (*resumeState, error) {
	q, err := capacity.LoadQMax(o.Output)
	if err != nil {
		return nil, fmt.Errorf("--resume: %w: --resume continues the partial artifact an interrupted run wrote at --output", err)
	}
	if q.IsComplete() {
		return nil, fmt.Errorf("--resume: %s is a complete artifact (run %s): there is nothing to resume: run without --resume to measure again", o.Output, q.RunID)
	}
	if errs := q.VerifyPartial(); len(errs) > 0 {
		return nil, fmt.Errorf("--resume: %s does not verify: %w", o.Output, errors.Join(errs...))
	}
	var why []string
	for _, c := range []struct{ name, was, now string }{
		{"model", q.Model, o.Model.ID}, {"endpoint", q.Endpoint, o.Endpoint()}, {"transport", q.Transport, o.Transport},
		{"container_digest", q.ContainerDigest, o.ContainerDigest},
	} {
		if c.was != c.now {
			why = append(why, fmt.Sprintf("%s: was %s, now %s", c.name, c.was, c.now))
		}
	}
	if q.SLOTTFABMs != int(o.SLO.Milliseconds()) || q.SLOPercentile != o.Model.SLO.Percentile {
		why = append(why, fmt.Sprintf("slo: was p%d ≤ %d ms, now p%d ≤ %d ms", q.SLOPercentile, q.SLOTTFABMs, o.Model.SLO.Percentile, o.SLO.Milliseconds()))
	}
	if len(q.RateSteps) > 0 && q.RateQueueMaxDepth != o.rateShield() {
		why = append(why, fmt.Sprintf("rate_queue_max_depth: was %d, now %d", q.RateQueueMaxDepth, o.rateShield()))
	}
	if q.Settings == nil {
		why = append(why, "settings: the partial artifact does not record them")
	} else {
		why = append(why, settingsDiff(q.Settings, o.settings())...)
	}
	if len(why) > 0 {
		return nil, fmt.Errorf("--resume: %s was measured otherwise, so its steps and this run's would not be one staircase: %s: run with the first run's flags, or without --resume to start over",
			o.Output, strings.Join(why, "; "))
	}
	data, err := os.ReadFile(o.RecordsPath)
	if err != nil {
		return nil, fmt.Errorf("--resume: the records of the partial run: %w", err)
	}
	if capacity.DigestBytes(data) != q.RecordsSHA256 {
		return nil, fmt.Errorf("--resume: %s does not have the digest the partial artifact records (%s): it changed since", o.RecordsPath, q.RecordsSHA256)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("--resume: %s: %w", o.RecordsPath, err)
	}
	recs, err := bench.ReadRecords(zr)
	if err != nil && len(q.Steps) > 0 {
		return nil, fmt.Errorf("--resume: %s: %w", o.RecordsPath, err)
	}
	st := &resumeState{q: q, records: data}
	// The finished steps, re-reported from their records (the interrupted step's records, if any, are left
	// out; its re-run is a later window, which Summarize prefers).
	byC := map[int]bench.StepResult{}
	for _, s := range bench.Summarize(recs, judge) {
		byC[s.Concurrency] = s
	}
	for _, a := range q.Steps {
		s, ok := byC[a.Concurrency]
		if !ok {
			return nil, fmt.Errorf("--resume: %s has no records of the finished step at concurrency %d", o.RecordsPath, a.Concurrency)
		}
		st.steps = append(st.steps, s)
	}
	byI := map[float64]bench.RateStepResult{}
	for _, s := range bench.SummarizeRateSteps(recs, judge, 0) {
		byI[s.ID.Fraction] = s
	}
	for _, a := range q.RateSteps {
		s, ok := byI[a.Fraction]
		if !ok {
			return nil, fmt.Errorf("--resume: %s has no records of the finished rate step at %g × the highest throughput", o.RecordsPath, a.Fraction)
		}
		st.rate = append(st.rate, s)
	}
	return st, nil
}

// takeOver continues the partial run st: its run id, start, steps and CloudWatch readings; the records file
// begins with the partial run's records (a gzip member of their own: readers read the members in turn).
func (r *qmaxRun) takeOver(st *resumeState, w io.Writer) error {
	q := st.q
	r.runID, r.started = q.RunID, q.StartedAt
	r.cfg.RunID = q.RunID
	r.steps, r.rateSteps, r.highestRPS = st.steps, st.rate, q.HighestThroughputRPS
	for i, s := range q.Steps {
		// Judgements the records do not hold (the client's own use) come from the artifact.
		r.steps[i].Usable, r.steps[i].UnusableReason = s.Usable, s.UnusableReason
	}
	for i, s := range q.RateSteps {
		r.rateSteps[i].Usable, r.rateSteps[i].UnusableReason = s.Usable, s.UnusableReason
	}
	for _, s := range q.Steps {
		if s.CloudWatchConcurrencyMax > 0 {
			r.cwMax[s.Concurrency] = s.CloudWatchConcurrencyMax
		}
		r.remeasured[s.Concurrency], r.inconclusive[s.Concurrency] = s.Remeasured, s.Inconclusive
		if s.ClientCPUCores > 0 || s.ClientLagMaxMs > 0 {
			r.client[s.Concurrency] = clientUse{CPUCores: s.ClientCPUCores, LagP99Ms: s.ClientLagP99Ms, LagMaxMs: s.ClientLagMaxMs}
		}
	}
	for i, s := range q.RateSteps {
		// Keyed by the step's index in the records (the order run), not its place in the artifact (by fraction).
		if s.CloudWatchMax10s > 0 {
			r.cwRate[r.rateSteps[i].ID.Index] = s.CloudWatchMax10s
		}
	}
	_, err := w.Write(st.records)
	return err
}

// measured returns the finished step at concurrency c, when there is one (a resumed run's).
func (r *qmaxRun) measured(c int) (bench.StepResult, bool) {
	for _, s := range r.steps {
		if s.Concurrency == c {
			return s, true
		}
	}
	return bench.StepResult{}, false
}
