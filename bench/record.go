package bench

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"
	"time"
)

// Record is one request of a run, written as one JSON line. Durations are milliseconds measured on the
// monotonic clock while the request ran; times are wall-clock UTC with nanoseconds. Summarize reads only
// these fields, so a records file re-reports with exactly the numbers of the run.
type Record struct {
	// RunID identifies the run.
	RunID string `json:"run_id"`
	// Transport is how the request was sent.
	Transport string `json:"transport"`
	// Step is the step's concurrency (closed loop, concurrency Step).
	Step int `json:"step"`
	// Worker is the worker (0 to Step-1) and Seq its request number within the step, from 0.
	Worker int `json:"worker"`
	Seq    int `json:"seq"`
	// Chars is the length of the request text in characters.
	Chars int `json:"chars"`
	// Sent is when the request was handed to the transport; FirstAudio when its first audio byte arrived
	// (absent when none did); End when it ended.
	Sent       time.Time `json:"sent"`
	FirstAudio time.Time `json:"first_audio,omitzero"`
	End        time.Time `json:"end"`
	// WindowStart and WindowEnd bound the step's measure window; Measured is true when Sent falls in
	// [WindowStart, WindowEnd).
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	Measured    bool      `json:"measured"`
	// TTFABMs is the time to first audio byte (0 when no audio came); ResponseMs the time to the end.
	TTFABMs    float64 `json:"ttfab_ms"`
	ResponseMs float64 `json:"response_ms"`
	// Bytes counts every byte of the answer; AudioBytes those after the WAV header; AudioSeconds their
	// playing time at the stream's sample rate; SampleRate that rate (0 when unknown).
	Bytes        int64   `json:"bytes"`
	AudioBytes   int64   `json:"audio_bytes"`
	AudioSeconds float64 `json:"audio_seconds"`
	SampleRate   int     `json:"sample_rate"`
	// StallMs is the playback stall (Stall).
	StallMs float64 `json:"stall_ms"`
	// Chunks are the audio arrivals: [ms after the first audio byte, audio bytes].
	Chunks [][2]float64 `json:"chunks,omitempty"`
	// Status is the HTTP status of the answer: the container's (200, 503, ...), or, for an error SageMaker
	// answered itself before reaching the model (ThrottlingException, ServiceUnavailable), SageMaker's; 0 when
	// no answer came (refused, reset, unreachable, timed out).
	Status int `json:"status"`
	// Class is the outcome: ClassOK or an error class; Error the error's text.
	Class string `json:"class"`
	Error string `json:"error,omitempty"`
	// Arrival is set on the records of an open-loop run (RunOpenLoop) only: the scheduled arrival the record
	// answers. Closed-loop records do not carry it.
	Arrival *Arrival `json:"arrival,omitempty"`
	// RateStep is set on the records of qmax's rate staircase only (RunRateStep): the open-loop step the
	// record belongs to. Those records also carry Arrival, and Step is the step's pool of workers, not a
	// concurrency: Summarize skips them, SummarizeRateSteps folds them.
	RateStep *RateStepID `json:"rate_step,omitempty"`
}

// OK reports whether the request succeeded.
func (r Record) OK() bool { return r.Class == ClassOK }

// ms converts d to milliseconds, exactly representable in JSON (Go writes the shortest float that reads back
// as the same float64).
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// RecordWriter writes records as JSON lines. It is not safe for concurrent use; the engine writes from one
// goroutine.
type RecordWriter struct {
	enc *json.Encoder
}

// NewRecordWriter returns a writer of JSON lines to w.
func NewRecordWriter(w io.Writer) *RecordWriter { return &RecordWriter{enc: json.NewEncoder(w)} }

// Write writes one record as one line.
func (w *RecordWriter) Write(r Record) error {
	if err := w.enc.Encode(r); err != nil {
		return fmt.Errorf("write a record: %w", err)
	}
	return nil
}

// MaxRecordLine bounds one line of a records file.
const MaxRecordLine = 16 << 20

// ReadRecords reads a records file (JSON lines, as RecordWriter writes them). Unknown fields and blank lines
// are refused with the line named: a file that is not a records file must not re-report as an empty run.
func ReadRecords(r io.Reader) ([]Record, error) { return ReadRecordsMax(r, MaxRecords) }

// MaxRecords bounds the records one ReadRecords holds in memory (a few hundred bytes to a kilobyte each with
// their chunks): a 36-minute qmax ladder is about 17,000, a day's replay at 20 rps 1.7 million. A small gzip
// file can decompress to billions of lines (a 21-MB gzip of one record repeated ran the gate out of memory at
// 4.6 GB); past this bound the reader stops with an error that names it.
const MaxRecords = 2_000_000

// ReadRecordsMax is ReadRecords holding at most max records: one more is an error naming the bound.
func ReadRecordsMax(r io.Reader, max int) ([]Record, error) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), MaxRecordLine)
	var recs []Record
	for line := 1; sc.Scan(); line++ {
		dec := json.NewDecoder(bytes.NewReader(sc.Bytes()))
		dec.DisallowUnknownFields()
		var rec Record
		if err := dec.Decode(&rec); err != nil {
			return nil, fmt.Errorf("records line %d: %w: a records file is one JSON object per line as tts-bench writes it", line, err)
		}
		if dec.More() {
			return nil, fmt.Errorf("records line %d: more than one JSON value: one record per line", line)
		}
		if rec.Step < 1 || rec.Class == "" || rec.Sent.IsZero() || rec.End.IsZero() || rec.WindowEnd.Before(rec.WindowStart) {
			return nil, fmt.Errorf("records line %d: step, class, sent, end and the window are required: the line is not a request record", line)
		}
		if len(recs) == max {
			return nil, fmt.Errorf("records line %d: more than %d records, the most read into memory at once (bench.MaxRecords): not a records file a measurement writes, or split the run into shards", line, max)
		}
		recs = append(recs, rec)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read records: %w", err)
	}
	if len(recs) == 0 {
		return nil, errors.New("read records: the file has no records: give the records file a run wrote")
	}
	return recs, nil
}

// Judge holds what a step is judged by (Config.Judge derives it).
type Judge struct {
	// SLO bounds the SLOPercentile TTFAB.
	SLO           time.Duration
	SLOPercentile int
	// StallBudget plus StallJitter bounds the p95 stall.
	StallBudget time.Duration
	StallJitter time.Duration
	// MinRequests is the fewest measured requests a usable step has, and the fewest successful ones unless the
	// server's errors already fail it.
	MinRequests int
	// MaxErrorRate is the largest share of failed measured requests (errors, timeouts, shed) a step may have.
	MaxErrorRate float64
	// MinConcurrencyRatio is the smallest mean in-flight count, as a share of the concurrency, at which the
	// client counts as having held its concurrency.
	MinConcurrencyRatio float64
}

// StepResult is the summary of one step, folded from its records.
type StepResult struct {
	// Concurrency is the step's concurrency (closed loop).
	Concurrency int `json:"concurrency"`
	// WindowStart and WindowEnd bound the measure window.
	WindowStart time.Time `json:"window_start"`
	WindowEnd   time.Time `json:"window_end"`
	// Requests counts the measured requests (sent in the window); OK those that succeeded; Errors the
	// failures other than Shed (503s); Timeouts and StreamBroken are among Errors.
	Requests     int `json:"requests"`
	OK           int `json:"ok"`
	Errors       int `json:"errors"`
	Shed         int `json:"shed"`
	Timeouts     int `json:"timeouts"`
	StreamBroken int `json:"stream_broken"`
	// NoAnswer counts the Errors that got no answer at all (class other, status 0: refused, reset,
	// unreachable): they say the measurement lost its connection, not how the instance serves.
	NoAnswer int `json:"no_answer"`
	// Exact TTFAB percentiles (nearest rank) over the successful measured requests, and at the SLO's
	// percentile.
	TTFABP50Ms float64 `json:"ttfab_p50_ms"`
	TTFABP95Ms float64 `json:"ttfab_p95_ms"`
	TTFABP99Ms float64 `json:"ttfab_p99_ms"`
	TTFABSLOMs float64 `json:"ttfab_slo_percentile_ms"`
	// TTFABCILowMs and TTFABCIHighMs bound the CIConfidence interval of TTFABSLOMs (PercentileCI), when
	// TTFABCIOK: too few successful requests give none.
	TTFABCILowMs  float64 `json:"ttfab_ci_low_ms"`
	TTFABCIHighMs float64 `json:"ttfab_ci_high_ms"`
	TTFABCIOK     bool    `json:"ttfab_ci_ok"`
	// StallP95Ms and StallMaxMs are the p95 and largest stall of the successful measured requests.
	StallP95Ms float64 `json:"stall_p95_ms"`
	StallMaxMs float64 `json:"stall_max_ms"`
	// StallBudgetMs and StallJitterMs are what the p95 stall was judged against (their sum).
	StallBudgetMs float64 `json:"stall_budget_ms"`
	StallJitterMs float64 `json:"stall_jitter_ms"`
	// ResponseMeanMs and ResponseP95Ms are the full-response times (sent to end) of the successful
	// measured requests.
	ResponseMeanMs float64 `json:"response_mean_ms"`
	ResponseP95Ms  float64 `json:"response_p95_ms"`
	// AchievedRPS is the rate of successful requests that ended inside the window.
	AchievedRPS float64 `json:"achieved_rps"`
	// InFlightMean is the time-averaged number of requests in flight over the window, and InFlightPeak its
	// largest value, both counted from the records' send and end times.
	InFlightMean float64 `json:"in_flight_mean"`
	InFlightPeak int     `json:"in_flight_peak"`
	// LagMeanMs, LagP95Ms and LagMaxMs are the client's own scheduling lag: the time from the end of a
	// worker's request to that worker's next send, over sends in the window.
	LagMeanMs float64 `json:"lag_mean_ms"`
	LagP95Ms  float64 `json:"lag_p95_ms"`
	LagMaxMs  float64 `json:"lag_max_ms"`
	// MeetsSLO is true when the SLO-percentile TTFAB ≤ SLO, the p95 stall ≤ budget + jitter and the error
	// rate (errors, timeouts and shed over measured requests) ≤ MaxErrorRate. FailReasons says what failed.
	MeetsSLO    bool     `json:"meets_slo"`
	FailReasons []string `json:"fail_reasons,omitempty"`
	// MeetsTTFABSLO is the step's verdict by TTFAB alone (the original proof of value's definition of Q_max,
	// docs/design.md "The original"): MeetsSLO without the stall bound, errors still counted against the step. It
	// differs from MeetsSLO only when the p95 stall alone failed the step.
	MeetsTTFABSLO bool `json:"meets_ttfab_slo"`
	// Usable is false when the step cannot be trusted; UnusableReason says why.
	Usable         bool   `json:"usable"`
	UnusableReason string `json:"unusable_reason,omitempty"`
}

// Summarize folds records into one StepResult per step, in increasing concurrency. It is what the engine
// reports at the end of each step, so a records file read back with ReadRecords gives the same numbers. A step
// measured twice (an inconclusive step re-measured with a longer window) has records of two measure
// windows: the later one is the step's.
// Records of the rate staircase (RateStep set) are not closed-loop steps and are skipped (SummarizeRateSteps).
func Summarize(records []Record, j Judge) []StepResult {
	by := map[int][]Record{}
	for _, r := range records {
		if r.RateStep != nil {
			continue
		}
		by[r.Step] = append(by[r.Step], r)
	}
	steps := make([]int, 0, len(by))
	for c := range by {
		steps = append(steps, c)
	}
	sort.Ints(steps)
	out := make([]StepResult, 0, len(steps))
	for _, c := range steps {
		out = append(out, summarizeStep(c, latestAttempt(by[c]), j))
	}
	return out
}

// latestAttempt keeps the records of the latest measure window among a step's records.
func latestAttempt(recs []Record) []Record {
	var last time.Time
	for _, r := range recs {
		if r.WindowStart.After(last) {
			last = r.WindowStart
		}
	}
	out := recs[:0:0]
	for _, r := range recs {
		if r.WindowStart.Equal(last) {
			out = append(out, r)
		}
	}
	return out
}

// SummarizeStep folds the records of one step (records of other steps are ignored).
func SummarizeStep(c int, records []Record, j Judge) StepResult {
	var mine []Record
	for _, r := range records {
		if r.Step == c && r.RateStep == nil {
			mine = append(mine, r)
		}
	}
	return summarizeStep(c, latestAttempt(mine), j)
}

func summarizeStep(c int, recs []Record, j Judge) StepResult {
	s := StepResult{Concurrency: c, StallBudgetMs: ms(j.StallBudget), StallJitterMs: ms(j.StallJitter)}
	if len(recs) > 0 {
		s.WindowStart, s.WindowEnd = recs[0].WindowStart, recs[0].WindowEnd
	}
	var ttfab, stall, resp []float64
	var respSum float64
	window := s.WindowEnd.Sub(s.WindowStart)
	for _, r := range recs {
		if r.OK() && !r.End.Before(s.WindowStart) && r.End.Before(s.WindowEnd) {
			s.AchievedRPS++ // counted; divided below
		}
		if !r.Measured {
			continue
		}
		s.Requests++
		switch r.Class {
		case ClassOK:
			s.OK++
			ttfab = append(ttfab, r.TTFABMs)
			stall = append(stall, r.StallMs)
			resp = append(resp, r.ResponseMs)
			respSum += r.ResponseMs
		case ClassShed:
			s.Shed++
		default:
			s.Errors++
			switch r.Class {
			case ClassTimeout:
				s.Timeouts++
			case ClassStreamBroken:
				s.StreamBroken++
			case ClassOther:
				if r.Status == 0 {
					s.NoAnswer++
				}
			}
		}
	}
	if window > 0 {
		s.AchievedRPS /= window.Seconds()
	} else {
		s.AchievedRPS = 0
	}
	sort.Float64s(ttfab)
	sort.Float64s(stall)
	sort.Float64s(resp)
	s.TTFABP50Ms, s.TTFABP95Ms, s.TTFABP99Ms = Percentile(ttfab, 50), Percentile(ttfab, 95), Percentile(ttfab, 99)
	s.TTFABSLOMs = Percentile(ttfab, float64(j.SLOPercentile))
	s.TTFABCILowMs, s.TTFABCIHighMs, s.TTFABCIOK = PercentileCI(ttfab, float64(j.SLOPercentile))
	s.StallP95Ms = Percentile(stall, 95)
	if len(stall) > 0 {
		s.StallMaxMs = stall[len(stall)-1]
	}
	if len(resp) > 0 {
		s.ResponseMeanMs = respSum / float64(len(resp))
		s.ResponseP95Ms = Percentile(resp, 95)
	}
	s.InFlightMean, s.InFlightPeak = inFlight(recs, s.WindowStart, s.WindowEnd)
	lags := schedulingLag(recs)
	sort.Float64s(lags)
	if len(lags) > 0 {
		var sum float64
		for _, l := range lags {
			sum += l
		}
		s.LagMeanMs, s.LagP95Ms, s.LagMaxMs = sum/float64(len(lags)), Percentile(lags, 95), lags[len(lags)-1]
	}
	judge(&s, j)
	return s
}

// judge sets MeetsSLO and Usable with their reasons.
func judge(s *StepResult, j Judge) {
	failed := s.Errors + s.Shed
	errRate := 0.0
	if s.Requests > 0 {
		errRate = float64(failed) / float64(s.Requests)
	}
	var fail, unusable []string
	if s.OK == 0 {
		fail = append(fail, "no request succeeded in the measure window")
	} else if s.TTFABSLOMs > ms(j.SLO) {
		fail = append(fail, fmt.Sprintf("p%d TTFAB %.1f ms is above the SLO %.0f ms", j.SLOPercentile, s.TTFABSLOMs, ms(j.SLO)))
	}
	stallFailed := false
	if lim := ms(j.StallBudget + j.StallJitter); s.OK > 0 && s.StallP95Ms > lim {
		stallFailed = true
		fail = append(fail, fmt.Sprintf("p95 stall %.1f ms is above the stall budget %.0f ms + jitter %.0f ms", s.StallP95Ms, ms(j.StallBudget), ms(j.StallJitter)))
	}
	// The server's errors (shed, 5xx, timeouts, broken streams) fail the step: they are how it serves at this
	// concurrency. Only requests that got no answer at all, too few samples or a client that could
	// not hold the concurrency make it unusable.
	if errRate > j.MaxErrorRate {
		fail = append(fail, fmt.Sprintf("%d of %d requests failed (%d shed, %d timeouts, %d broken streams, %d other): %.1f%%, above the %.1f%% bound",
			failed, s.Requests, s.Shed, s.Timeouts, s.StreamBroken, s.Errors-s.Timeouts-s.StreamBroken, 100*errRate, 100*j.MaxErrorRate))
	}
	if s.Requests > 0 && float64(s.NoAnswer)/float64(s.Requests) > j.MaxErrorRate {
		unusable = append(unusable, fmt.Sprintf("no answer: %d of %d requests got no answer at all (refused, reset, unreachable): the measurement lost its connection to the endpoint", s.NoAnswer, s.Requests))
	}
	switch {
	case s.Requests < j.MinRequests:
		unusable = append(unusable, fmt.Sprintf("too few requests: %d sent in the measure window, want at least %d: lengthen the measure window", s.Requests, j.MinRequests))
	case s.OK < j.MinRequests && errRate <= j.MaxErrorRate:
		unusable = append(unusable, fmt.Sprintf("too few requests: %d succeeded in the measure window, want at least %d: lengthen the measure window", s.OK, j.MinRequests))
	}
	// A client that held too few requests in flight is the bottleneck only when it was also slow to send the
	// next one: answers shorter than the client's sub-millisecond turnaround (a server refusing at once) lower
	// the mean in flight without any lag of the client's.
	if want := j.MinConcurrencyRatio * float64(s.Concurrency); s.InFlightMean < want && s.LagMeanMs >= MinClientLagMs {
		unusable = append(unusable, fmt.Sprintf("client-bound: the client held %.2f requests in flight on average, below %.2f (%.0f%% of %d); its scheduling lag was %.1f ms mean, %.1f ms max: run the client on a less loaded machine",
			s.InFlightMean, want, 100*j.MinConcurrencyRatio, s.Concurrency, s.LagMeanMs, s.LagMaxMs))
	}
	s.MeetsSLO, s.FailReasons = len(fail) == 0, fail
	s.MeetsTTFABSLO = len(fail) == 0 || (stallFailed && len(fail) == 1)
	s.Usable = len(unusable) == 0
	if !s.Usable {
		s.UnusableReason = strings.Join(unusable, "; ")
	}
}

// MinClientLagMs is the mean scheduling lag (end of a worker's request to its next send) below which a step
// whose mean in flight fell short of its concurrency is not called client-bound (judge).
const MinClientLagMs = 1.0

// Percentile is the exact p-th percentile (nearest rank) of sorted values: the smallest value with at least
// p% of the values at or below it; 0 for no values.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// InWindow is the part of the request's time in flight (sent to end) inside [ws, we); ok is false when none
// is. The one clipping rule of the in-flight figures (inFlight) and of what synthesizes records for them.
func (r Record) InWindow(ws, we time.Time) (from, to time.Time, ok bool) {
	from, to = r.Sent, r.End
	if from.Before(ws) {
		from = ws
	}
	if to.After(we) {
		to = we
	}
	return from, to, to.After(from)
}

// inFlight integrates the number of requests in flight over [ws, we) from their send and end times.
func inFlight(recs []Record, ws, we time.Time) (mean float64, peak int) {
	if !we.After(ws) {
		return 0, 0
	}
	type ev struct {
		t time.Time
		d int
	}
	evs := make([]ev, 0, 2*len(recs))
	var area time.Duration
	for _, r := range recs {
		a, b, ok := r.InWindow(ws, we)
		if !ok {
			continue
		}
		area += b.Sub(a)
		evs = append(evs, ev{a, 1}, ev{b, -1})
	}
	sort.Slice(evs, func(i, k int) bool {
		if !evs[i].t.Equal(evs[k].t) {
			return evs[i].t.Before(evs[k].t)
		}
		return evs[i].d < evs[k].d // an end before a send at the same instant
	})
	n := 0
	for _, e := range evs {
		n += e.d
		peak = max(peak, n)
	}
	return float64(area) / float64(we.Sub(ws)), peak
}

// schedulingLag returns, per worker, the time from the end of each request to the worker's next send, for
// sends in the window, in milliseconds.
func schedulingLag(recs []Record) []float64 {
	byWorker := map[int][]Record{}
	for _, r := range recs {
		byWorker[r.Worker] = append(byWorker[r.Worker], r)
	}
	var lags []float64
	for _, rs := range byWorker {
		sort.Slice(rs, func(i, k int) bool { return rs[i].Seq < rs[k].Seq })
		for i := 1; i < len(rs); i++ {
			if rs[i].Measured {
				lags = append(lags, ms(rs[i].Sent.Sub(rs[i-1].End)))
			}
		}
	}
	return lags
}
