package capacity

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/internal/strictjson"
)

// The raw records behind a qmax artifact: the artifact's step figures are what bench.Summarize and
// bench.SummarizeRateSteps fold from the records file tts-bench qmax wrote beside it (StepOf and RateStepOf
// turn those folds into the artifact's steps, at measurement time and here). CheckRecords opens that file,
// checks its digest and folds it again with the same functions: a figure edited in the artifact, a records
// file that is missing, truncated, of another run or of other steps, is refused with the step and the figure
// named.
//
// What this proves: the artifact is what its records give, so a plan (and the gate) stands on per-request
// measurements, not on typed-in summaries. What it cannot prove: that the records came from a real endpoint.
// Whoever writes a records file can write the artifact that agrees with it.

// Bounds of a records file the check reads.
const (
	// MaxRecordsBytes bounds the records file as stored (gzip-compressed JSON lines).
	MaxRecordsBytes = 1 << 30
	// MaxRecordsRawBytes bounds the records once decompressed: a gzip bomb stops here (with bench.MaxRecords,
	// the bound on records held in memory). A 36-minute ladder's records are about 40 MB.
	MaxRecordsRawBytes = 1 << 30
)

// RecordsTolerance is the relative difference between a figure the artifact records and the one its records
// give that the check absorbs: JSON carries float64 exactly (Go writes the shortest form that reads back as
// the same number), so a figure recomputed by the same function matches bit for bit on one platform; the
// tolerance only absorbs floating-point differences between platforms (fused multiply-add), far below any edit.
const RecordsTolerance = 1e-9

// StepOf is the artifact's closed-loop step of a step folded from its records (bench.Summarize): tts-bench
// qmax writes it, CheckRecords compares with it. The fields the records do not hold (CloudWatch, the
// measuring process's CPU and lag, Little's law, the re-measure flags) are left for the caller to set.
func StepOf(s bench.StepResult) QMaxStep {
	st := QMaxStep{
		Concurrency: s.Concurrency, OKCount: s.OK, ErrorCount: s.Errors, RejectedCount: s.Shed,
		TTFABP50Ms: s.TTFABP50Ms, TTFABP95Ms: s.TTFABP95Ms, TTFABP99Ms: s.TTFABP99Ms,
		StallP95Ms: s.StallP95Ms, StallBudgetMs: s.StallBudgetMs, StallJitterMs: s.StallJitterMs,
		ResponseMeanMs: s.ResponseMeanMs, AchievedRPS: s.AchievedRPS,
		ClientConcurrencyMean: s.InFlightMean, ClientConcurrencyPeak: s.InFlightPeak,
		MeetsSLO: s.MeetsSLO, Usable: s.Usable, UnusableReason: s.UnusableReason,
	}
	ttfabOnly := s.MeetsTTFABSLO // the step's verdict by TTFAB alone: Q_max both ways
	st.MeetsTTFABSLO = &ttfabOnly
	if s.TTFABCIOK {
		st.TTFABCILowMs, st.TTFABCIHighMs = s.TTFABCILowMs, s.TTFABCIHighMs
	}
	return st
}

// RateStepOf is the artifact's rate step of a rate step folded from its records (bench.SummarizeRateSteps),
// with cloudWatchMax10s the mean of the 10-s Maximum datapoints read for it (0 when unread).
func RateStepOf(s bench.RateStepResult, cloudWatchMax10s float64) RateStep {
	return RateStep{
		Fraction: s.ID.Fraction, OfferedRPS: s.ID.OfferedRPS, ArrivalRPS: s.ArrivalRPS, AchievedRPS: s.AchievedRPS,
		InFlightMean: s.InFlightMean, InFlightMax10s: s.InFlightMax10s, InFlightMax10sLow: s.InFlightMax10sLow, CloudWatchMax10s: cloudWatchMax10s,
		TTFABP50Ms: s.TTFABP50Ms, TTFABP95Ms: s.TTFABP95Ms, TTFABP99Ms: s.TTFABP99Ms, StallP95Ms: s.StallP95Ms,
		OKCount: s.OK, ErrorCount: s.Errors, RejectedCount: s.Shed, ShedFraction: s.ShedFraction,
		MeetsSLO: s.MeetsSLO, Usable: s.Usable, UnusableReason: s.UnusableReason,
	}
}

// RecordsJudge is what the artifact's steps were judged by, as far as the artifact records it: its SLO, the
// steps' stall budget and jitter, the run's --min-requests (settings; 1 when the artifact does not record
// it) and the load engine's error-rate and concurrency bounds (tts-bench qmax does not change them).
func (q *QMax) RecordsJudge() bench.Judge {
	j := bench.Judge{
		SLO: time.Duration(q.SLOTTFABMs) * time.Millisecond, SLOPercentile: q.SLOPercentile, MinRequests: 1,
		MaxErrorRate: bench.DefaultMaxErrorRate, MinConcurrencyRatio: bench.DefaultMinConcurrencyRatio,
	}
	if len(q.Steps) > 0 {
		j.StallBudget, j.StallJitter = msDuration(q.Steps[0].StallBudgetMs), msDuration(q.Steps[0].StallJitterMs)
	}
	if q.Settings != nil && q.Settings.MinRequests > 0 {
		j.MinRequests = q.Settings.MinRequests
	}
	return j
}

func msDuration(ms float64) time.Duration {
	return time.Duration(math.Round(ms * float64(time.Millisecond)))
}

// ReadQMaxRecords reads the records file of q in dir (q.RecordsFile beside the artifact): a regular file of
// at most MaxRecordsBytes whose digest is q.RecordsSHA256, gzip-compressed JSON lines (bench.ReadRecords).
func (q *QMax) ReadQMaxRecords(dir string) ([]bench.Record, error) {
	if !validFileName(q.RecordsFile) {
		return nil, fmt.Errorf("records_file: %q is not a file name beside the artifact", q.RecordsFile)
	}
	path := filepath.Join(dir, q.RecordsFile)
	data, err := strictjson.ReadFile(path, MaxRecordsBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("records_file: %s is missing (the raw per-request records the artifact's figures were folded from)", path)
	}
	if err != nil {
		return nil, fmt.Errorf("records_file: %s cannot be read: %w", path, err)
	}
	if got := DigestBytes(data); got != q.RecordsSHA256 {
		return nil, fmt.Errorf("records_file: %s has digest %s but records_sha256 is %s: the records changed after the measurement (edited, truncated) or are another run's", path, got, q.RecordsSHA256)
	}
	if recs, ok := decodedRecords.get(q.RecordsSHA256); ok {
		return recs, nil
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("records_file: %s is not gzip-compressed records: %w", path, err)
	}
	zerr := &firstError{r: zr}
	lr := &io.LimitedReader{R: zerr, N: MaxRecordsRawBytes + 1}
	recs, err := bench.ReadRecords(lr)
	if lr.N <= 0 {
		return nil, fmt.Errorf("records_file: %s decompresses to more than %d GiB: not a records file tts-bench qmax writes", path, MaxRecordsRawBytes>>30)
	}
	if zerr.err != nil {
		return nil, fmt.Errorf("records_file: %s is cut short or damaged (gzip: %v): not the whole records file tts-bench qmax wrote", path, zerr.err)
	}
	if err != nil {
		return nil, fmt.Errorf("records_file: %s: %w", path, err)
	}
	decodedRecords.put(q.RecordsSHA256, recs)
	return recs, nil
}

// decodedRecords keeps the records of the last records file decoded, by the digest of its bytes, so that a
// process that checks one artifact several times (the gate re-deriving a plan after tts-bench plan did; the
// tests) decodes its JSON lines once: decoding was half of a gate's time. The digest is of the very bytes
// the records were decoded from, so a file edited since is decoded again. Each get is a deep copy: no caller
// can change what the next one reads. Files of more than cachedRecordsMax records are not kept.
var decodedRecords recordsCache

const cachedRecordsMax = 200_000

type recordsCache struct {
	mu     sync.Mutex
	digest string
	recs   []bench.Record
}

func (c *recordsCache) get(digest string) ([]bench.Record, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recs == nil || c.digest != digest {
		return nil, false
	}
	return cloneRecords(c.recs), true
}

func (c *recordsCache) put(digest string, recs []bench.Record) {
	if len(recs) > cachedRecordsMax {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.digest, c.recs = digest, cloneRecords(recs)
}

// cloneRecords copies the records and everything they point to.
func cloneRecords(recs []bench.Record) []bench.Record {
	out := make([]bench.Record, len(recs))
	for i, r := range recs {
		if r.Chunks != nil {
			r.Chunks = append([][2]float64(nil), r.Chunks...)
		}
		if r.Arrival != nil {
			a := *r.Arrival
			r.Arrival = &a
		}
		if r.RateStep != nil {
			id := *r.RateStep
			r.RateStep = &id
		}
		out[i] = r
	}
	return out
}

// firstError keeps the first error other than io.EOF that r returned: a gzip stream cut short reads as
// io.ErrUnexpectedEOF, which the line reader would otherwise report as a broken last line.
type firstError struct {
	r   io.Reader
	err error
}

func (f *firstError) Read(p []byte) (int, error) {
	n, err := f.r.Read(p)
	if err != nil && err != io.EOF && f.err == nil {
		f.err = err
	}
	return n, err
}

// CheckRecords reads the records file beside the artifact in dir (ReadQMaxRecords) and returns every way the
// artifact differs from what its records give (CheckAgainst). Nil when the artifact is what its records give.
func (q *QMax) CheckRecords(dir string) []error {
	recs, err := q.ReadQMaxRecords(dir)
	if err != nil {
		return []error{err}
	}
	return q.CheckAgainst(recs)
}

// CheckAgainst folds the records with the functions tts-bench qmax measured with (bench.Summarize,
// bench.SummarizeRateSteps, through StepOf and RateStepOf) and compares every figure of every step the records
// hold: the request counts, the TTFAB percentiles and their confidence interval, the p95 stall, the mean
// response time, the achieved (and for rate steps the arrival) rate, the requests in flight, the shed
// fraction and the SLO verdicts (meets_slo, and meets_ttfab_slo where recorded); a step the records give as unusable must not be usable in the artifact (the
// artifact may add reasons the records do not hold, such as the measuring process's CPU). It also checks the
// uncontended service time, the highest throughput the rate staircase took its fractions of, that every
// record is of the artifact's run, and that the records hold exactly the artifact's steps. Numbers compare
// within RecordsTolerance. Each error names the step and the figure.
func (q *QMax) CheckAgainst(recs []bench.Record) []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	for i, r := range recs {
		if r.RunID != q.RunID {
			add("records_file: record %d is of run %q, not the artifact's run %q: the records are another run's", i+1, r.RunID, q.RunID)
			return errs
		}
	}
	for i, s := range q.Steps {
		if s.StallBudgetMs != q.Steps[0].StallBudgetMs || s.StallJitterMs != q.Steps[0].StallJitterMs {
			add("steps[%d].stall_budget_ms: the steps of one run are judged by one stall budget and jitter (steps[0]: %g + %g ms)", i, q.Steps[0].StallBudgetMs, q.Steps[0].StallJitterMs)
			return errs
		}
	}
	j := q.RecordsJudge()

	// Closed loop.
	folded := map[int]bench.StepResult{}
	for _, s := range bench.Summarize(recs, j) {
		folded[s.Concurrency] = s
	}
	listed := map[int]bool{}
	var lowest *bench.StepResult
	for i, a := range q.Steps {
		listed[a.Concurrency] = true
		s, ok := folded[a.Concurrency]
		if !ok {
			add("steps[%d] (concurrency %d): the records file has no records of this step", i, a.Concurrency)
			continue
		}
		if s.OK > 0 && (lowest == nil || s.Concurrency < lowest.Concurrency) {
			lowest = &s
		}
		w := StepOf(s)
		name := fmt.Sprintf("steps[%d] (concurrency %d)", i, a.Concurrency)
		errs = append(errs, compareFigures(name, []figure{
			intFigure("ok_count", a.OKCount, w.OKCount), intFigure("error_count", a.ErrorCount, w.ErrorCount),
			intFigure("rejected_count", a.RejectedCount, w.RejectedCount),
			{"ttfab_p50_ms", a.TTFABP50Ms, w.TTFABP50Ms}, {"ttfab_p95_ms", a.TTFABP95Ms, w.TTFABP95Ms}, {"ttfab_p99_ms", a.TTFABP99Ms, w.TTFABP99Ms},
			{"ttfab_ci_low_ms", a.TTFABCILowMs, w.TTFABCILowMs}, {"ttfab_ci_high_ms", a.TTFABCIHighMs, w.TTFABCIHighMs},
			{"stall_p95_ms", a.StallP95Ms, w.StallP95Ms}, {"response_mean_ms", a.ResponseMeanMs, w.ResponseMeanMs},
			{"achieved_rps", a.AchievedRPS, w.AchievedRPS},
			{"client_concurrency_mean", a.ClientConcurrencyMean, w.ClientConcurrencyMean},
			intFigure("client_concurrency_peak", a.ClientConcurrencyPeak, w.ClientConcurrencyPeak),
		})...)
		errs = append(errs, compareVerdicts(name, a.MeetsSLO, w.MeetsSLO, a.Usable, w.Usable, w.UnusableReason)...)
		if a.MeetsTTFABSLO != nil && *a.MeetsTTFABSLO != *w.MeetsTTFABSLO { // absent in artifacts from before it
			add("%s: meets_ttfab_slo is %v but its records give %v: the artifact was edited after the measurement; run tts-bench qmax again", name, *a.MeetsTTFABSLO, *w.MeetsTTFABSLO)
		}
	}
	for _, c := range sortedInts(folded) {
		if !listed[c] {
			add("steps: the records file holds a closed-loop step at concurrency %d that the artifact does not list: a step was removed from the artifact", c)
		}
	}
	if lowest != nil {
		errs = append(errs, compareFigures(fmt.Sprintf("service time (the step at concurrency %d)", lowest.Concurrency), []figure{
			{"service_time_mean_ms", q.ServiceTimeMeanMs, lowest.ResponseMeanMs}, {"service_time_p95_ms", q.ServiceTimeP95Ms, lowest.ResponseP95Ms},
		})...)
	}

	// The rate staircase: its fractions are of the highest throughput of the usable closed-loop steps (as the
	// artifact judged them usable: the measuring process's own load can make a step unusable).
	if len(q.RateSteps) > 0 {
		best := 0.0
		for _, s := range q.Steps {
			if s.Usable && s.OKCount > 0 {
				best = math.Max(best, s.Throughput())
			}
		}
		errs = append(errs, compareFigures("rate staircase", []figure{{"highest_throughput_rps", q.HighestThroughputRPS, best}})...)
	}
	// The artifact lists the rate steps by fraction; the records number them in the order run (a refinement
	// step, run after the fixed fractions, lies between two of them): a step's records are found by its fraction.
	rate := bench.SummarizeRateSteps(recs, j, 0)
	byFraction := map[float64]bench.RateStepResult{}
	for _, s := range rate {
		byFraction[s.ID.Fraction] = s
	}
	listedRate := map[float64]bool{}
	for i, a := range q.RateSteps {
		listedRate[a.Fraction] = true
		s, ok := byFraction[a.Fraction]
		if !ok {
			add("rate_steps[%d] (fraction %g): the records file has no records of this rate step", i, a.Fraction)
			continue
		}
		w := RateStepOf(s, a.CloudWatchMax10s)
		name := fmt.Sprintf("rate_steps[%d] (fraction %g)", i, a.Fraction)
		errs = append(errs, compareFigures(name, []figure{
			{"fraction", a.Fraction, w.Fraction}, {"offered_rps", a.OfferedRPS, w.OfferedRPS},
			{"arrival_rps", a.ArrivalRPS, w.ArrivalRPS}, {"achieved_rps", a.AchievedRPS, w.AchievedRPS},
			{"in_flight_mean", a.InFlightMean, w.InFlightMean}, {"in_flight_max_10s", a.InFlightMax10s, w.InFlightMax10s},
			{"in_flight_max_10s_low", a.InFlightMax10sLow, w.InFlightMax10sLow},
			{"ttfab_p50_ms", a.TTFABP50Ms, w.TTFABP50Ms}, {"ttfab_p95_ms", a.TTFABP95Ms, w.TTFABP95Ms}, {"ttfab_p99_ms", a.TTFABP99Ms, w.TTFABP99Ms},
			{"stall_p95_ms", a.StallP95Ms, w.StallP95Ms},
			intFigure("ok_count", a.OKCount, w.OKCount), intFigure("error_count", a.ErrorCount, w.ErrorCount),
			intFigure("rejected_count", a.RejectedCount, w.RejectedCount), {"shed_fraction", a.ShedFraction, w.ShedFraction},
		})...)
		errs = append(errs, compareVerdicts(name, a.MeetsSLO, w.MeetsSLO, a.Usable, w.Usable, w.UnusableReason)...)
	}
	for _, s := range rate {
		if !listedRate[s.ID.Fraction] {
			add("rate_steps: the records file holds rate step %d (fraction %g) that the artifact does not list: a step was removed from the artifact", s.ID.Index, s.ID.Fraction)
		}
	}
	return errs
}

// figure is one number of a step: as the artifact records it (got) and as its records give it (want).
type figure struct {
	name      string
	got, want float64
}

func intFigure(name string, got, want int) figure { return figure{name, float64(got), float64(want)} }

// compareFigures returns "<step>: <figure> is <got> but its records give <want>" for each figure that differs
// by more than RecordsTolerance (relative).
func compareFigures(step string, fs []figure) []error {
	var errs []error
	for _, f := range fs {
		if !withinRecordsTolerance(f.got, f.want) {
			errs = append(errs, fmt.Errorf("%s: %s is %v but its records give %v: the artifact was edited after the measurement; run tts-bench qmax again", step, f.name, f.got, f.want))
		}
	}
	return errs
}

func withinRecordsTolerance(a, b float64) bool {
	return a == b || math.Abs(a-b) <= RecordsTolerance*math.Max(math.Abs(a), math.Abs(b))
}

// compareVerdicts checks the step's SLO verdict and that a step its records give as unusable is not usable.
func compareVerdicts(step string, meets, wantMeets, usable, wantUsable bool, why string) []error {
	var errs []error
	if meets != wantMeets {
		errs = append(errs, fmt.Errorf("%s: meets_slo is %v but its records give %v: the artifact was edited after the measurement; run tts-bench qmax again", step, meets, wantMeets))
	}
	if usable && !wantUsable {
		errs = append(errs, fmt.Errorf("%s: usable is true but its records give an unusable step (%s): the artifact was edited after the measurement; run tts-bench qmax again", step, why))
	}
	return errs
}

func sortedInts[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Ints(out)
	return out
}

// RecordsRefusal is the sentence the gate and tts-bench plan refuse a qmax artifact at path with when its
// records do not give it (CheckRecords): at most maxDiffs of the differences, and how many more.
func RecordsRefusal(path string, errs []error) string {
	shown := make([]string, 0, maxDiffs+1)
	for i, e := range errs {
		if i == maxDiffs {
			shown = append(shown, fmt.Sprintf("and %d more", len(errs)-maxDiffs))
			break
		}
		shown = append(shown, e.Error())
	}
	return fmt.Sprintf("qmax artifact %s does not follow from its raw records: %s: a plan stands only on an artifact its records give; restore the artifact and the records file tts-bench qmax wrote beside it, or run tts-bench qmax and tts-bench plan again",
		path, strings.Join(shown, "; "))
}
