// Package capacitytest synthesizes the raw records behind a qmax artifact for fixtures and tests:
// the gate folds the records file beside a qmax artifact again and refuses an artifact its records do not
// give, so a hand-made artifact needs records too. Records gives them for an artifact written by hand.
package capacitytest

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
)

// The records are synthesized, not measured: regular arrivals and completions laid out so that the figures a
// plan stands on come out exactly as given (a closed-loop step's achieved rate; a rate step's arrival and
// achieved rates, time-averaged requests in flight, p95 TTFAB and p95 stall), while every other figure of the
// artifact is what bench.Summarize and bench.SummarizeRateSteps fold from them, through capacity.StepOf and
// capacity.RateStepOf, as tts-bench qmax writes it.

// recordGap is the client's turnaround between a worker's requests in a closed-loop step.
const recordGap = 200 * time.Microsecond

// floorDiv is a/b rounded down (b > 0).
func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && (a < 0) {
		q--
	}
	return q
}

// grid is the i-th of count points spread evenly over a window of length w, at the middle of their slots:
// points 0 … count-1 lie inside [0, w), the others outside it.
func grid(i, count int64, w time.Duration) time.Duration {
	return time.Duration(floorDiv((2*i+1)*int64(w), 2*count))
}

// orderStats returns n values (shuffled with seed) whose nearest-rank percentiles 50, 95 and 99
// (bench.Percentile) are exactly p50, p95 and p99, spread linearly between them, from 0.6 × p50 up to 1.03 × p99.
func orderStats(n int, p50, p95, p99 float64, seed uint64) []float64 {
	ranks := make([]float64, n)
	for i := range ranks {
		ranks[i] = float64(i + 1)
	}
	rank := func(p float64) int { return int(bench.Percentile(ranks, p)) }
	knots := []struct {
		rank int
		v    float64
	}{{0, 0.6 * p50}, {rank(50), p50}, {rank(95), p95}, {rank(99), p99}, {n + 1, 1.03 * p99}}
	vals := make([]float64, n)
	for i := range vals {
		r := i + 1
		for k := 1; k < len(knots); k++ {
			a, b := knots[k-1], knots[k]
			if r > b.rank {
				continue
			}
			if r == b.rank {
				vals[i] = b.v
			} else {
				vals[i] = math.Round((a.v+(b.v-a.v)*float64(r-a.rank)/float64(b.rank-a.rank))*10) / 10
			}
			break
		}
	}
	rng := rand.New(rand.NewPCG(seed, 27))
	rng.Shuffle(n, func(i, j int) { vals[i], vals[j] = vals[j], vals[i] })
	return vals
}

// record is one successful request of the fixtures.
func record(run string, step int, sent, end, ws time.Time, window time.Duration, ttfab, stall float64) bench.Record {
	resp := float64(end.Sub(sent)) / float64(time.Millisecond)
	first := sent.Add(time.Duration(math.Round(math.Min(ttfab, resp) * float64(time.Millisecond))))
	audio := end.Sub(first).Seconds() * 2 // a synthesized voice speaks about twice as long as it takes to stream
	return bench.Record{
		RunID: run, Transport: "sagemaker-stream", Step: step, Chars: 120,
		Sent: sent, FirstAudio: first, End: end, WindowStart: ws, WindowEnd: ws.Add(window),
		Measured: !sent.Before(ws) && sent.Before(ws.Add(window)),
		TTFABMs:  ttfab, ResponseMs: resp, Bytes: 44 + int64(audio*48000), AudioBytes: int64(audio * 48000),
		AudioSeconds: float64(int64(audio*48000)) / 48000, SampleRate: 24000, StallMs: stall, Status: 200, Class: bench.ClassOK,
	}
}

// ClosedStep returns the records of a closed-loop step of run at concurrency c whose measure window [ws,
// ws+window) sees exactly rps × window successful completions (rounded to a whole number): completions evenly spaced, taken by the c workers in turn, each worker
// sending its next request recordGap after its previous one ended (until the window ends). The requests sent
// in the window have TTFABs with exactly the percentiles p50, p95, p99, and the p95 stall is stall.
func ClosedStep(run string, c int, rps float64, ws time.Time, window time.Duration, p50, p95, p99, stall float64) []bench.Record {
	k := max(int64(math.Round(rps*window.Seconds())), 1)
	end := func(j int64) time.Time { return ws.Add(grid(j, k, window)) }
	cycle := end(int64(c)).Sub(end(0))
	we := ws.Add(window)
	jmin := -2 * int64(c)
	var recs []bench.Record
	for j := jmin; ; j++ {
		sent := end(j).Add(-cycle + recordGap)
		if j-int64(c) >= jmin {
			sent = end(j - int64(c)).Add(recordGap)
		}
		if !sent.Before(we) {
			break // a worker sends nothing once the window has ended
		}
		r := record(run, c, sent, end(j), ws, window, p50, stall)
		r.Worker, r.Seq = int((j-jmin)%int64(c)), int((j-jmin)/int64(c))
		recs = append(recs, r)
	}
	setTTFABs(recs, p50, p95, p99, uint64(c))
	return recs
}

// setTTFABs gives the measured records TTFABs with exactly the percentiles p50, p95 and p99.
func setTTFABs(recs []bench.Record, p50, p95, p99 float64, seed uint64) {
	n := 0
	for _, r := range recs {
		if r.Measured {
			n++
		}
	}
	vals := orderStats(n, p50, p95, p99, seed)
	for i := range recs {
		if recs[i].Measured {
			recs[i].TTFABMs, vals = vals[0], vals[1:]
			resp := recs[i].ResponseMs
			recs[i].FirstAudio = recs[i].Sent.Add(time.Duration(math.Round(math.Min(recs[i].TTFABMs, resp) * float64(time.Millisecond))))
		}
	}
}

// RateStep returns the records of an open-loop rate step of run whose measure window [ws, ws+window) sees exactly arrival × window requests sent
// (evenly spaced, each on its schedule) and achieved × window successful completions (evenly spaced, first
// in first out, behind the sends by c0). When the step keeps up (achieved ≥ 95% of arrivals), c0 is chosen so
// that the requests in flight average exactly inFlight over the window; a saturated step's queue grows from
// a 2.2-s response. TTFAB percentiles and the p95 stall are as given.
func RateStep(run string, id bench.RateStepID, arrival, achieved, inFlight float64, ws time.Time, window time.Duration, p50, p95, p99, stall float64) ([]bench.Record, error) {
	n := max(int64(math.Round(arrival*window.Seconds())), 1)
	k := max(int64(math.Round(achieved*window.Seconds())), 1)
	we := ws.Add(window)
	workers := bench.RateStepWorkers(id.OfferedRPS, 60*time.Second)
	build := func(c0 time.Duration) []bench.Record {
		pre := int64(c0/(window/time.Duration(k))) + 2 // every request that ends in the window
		var recs []bench.Record
		for i := -pre; i < n; i++ {
			sent := ws.Add(grid(i, n, window))
			r := record(run, workers, sent, ws.Add(c0+grid(i, k, window)), ws, window, p50, stall)
			r.Worker, r.Seq = int((i+pre)%int64(workers)), int(i+pre)
			r.Arrival = &bench.Arrival{Index: i + pre, Scheduled: sent, Shards: 1, Trace: fmt.Sprintf("qmax-rate-step-%d", id.Index)}
			idc := id
			r.RateStep = &idc
			recs = append(recs, r)
		}
		return recs
	}
	area := func(recs []bench.Record) int64 {
		var a time.Duration
		for _, r := range recs {
			if s, e, ok := r.InWindow(ws, we); ok {
				a += e.Sub(s)
			}
		}
		return int64(a)
	}
	c0 := 2200 * time.Millisecond
	var recs []bench.Record
	if float64(k) >= 0.95*float64(n) {
		target := int64(math.Round(inFlight * float64(window)))
		lo, hi := time.Duration(0), 60*time.Second
		for hi-lo > 1 {
			mid := lo + (hi-lo)/2
			if area(build(mid)) < target {
				lo = mid
			} else {
				hi = mid
			}
		}
		c0 = lo
		recs = build(c0)
		// The last few nanoseconds: one request in the middle of the window lasts longer by what is missing.
		mid := len(recs) - int(n)/2
		recs[mid].End = recs[mid].End.Add(time.Duration(target - area(recs)))
		recs[mid].ResponseMs = float64(recs[mid].End.Sub(recs[mid].Sent)) / float64(time.Millisecond)
		if got := area(recs); got != target {
			return nil, fmt.Errorf("rate step %d: requests in flight integrate to %d ns, want %d", id.Index, got, target)
		}
	} else {
		recs = build(c0)
	}
	for _, r := range recs {
		if !r.End.After(r.Sent) {
			return nil, fmt.Errorf("rate step %d: a request ends before it is sent", id.Index)
		}
	}
	setTTFABs(recs, p50, p95, p99, uint64(100+id.Index))
	return recs, nil
}

// Gzip writes records as tts-bench qmax does: JSON lines, gzip-compressed (no name, no time in the
// header, so the bytes depend on the records alone).
func Gzip(recs []bench.Record) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	w := bench.NewRecordWriter(zw)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// windows are the measure windows Records tries for a step, shortest first, when not given one.
var windows = []time.Duration{10 * time.Second, 20 * time.Second, 25 * time.Second, 50 * time.Second, 100 * time.Second, 200 * time.Second, 1000 * time.Second}

// wholeWindow returns window, or (window 0) the shortest of windows in which every rate of rates is a whole
// number of requests exactly (count ÷ window reads back as the rate) and at least min requests.
func wholeWindow(window time.Duration, min int, rates ...float64) (time.Duration, error) {
	try := windows
	if window > 0 {
		try = []time.Duration{window}
	}
	for _, w := range try {
		ok := true
		for _, r := range rates {
			n := math.Round(r * w.Seconds())
			if n/w.Seconds() != r || n < float64(min) {
				ok = false
			}
		}
		if ok {
			return w, nil
		}
	}
	return 0, fmt.Errorf("no measure window of %v makes the rates %v whole numbers of at least %d requests", try, rates, min)
}

// Records rewrites the hand-made qmax artifact q as tts-bench qmax would have written it from records that give
// its figures, and returns those records as the file to write beside the artifact under q.RecordsFile
// (gzip-compressed JSON lines); q.RecordsSHA256 is set to the file's digest.
//
// From q it takes, per closed-loop step, the concurrency, achieved_rps, the TTFAB p50, p95 and p99 and the p95
// stall; per rate step, the fraction, the arrival and achieved rates, in_flight_mean (for a step that kept up:
// achieved ≥ 95% of arrivals), the TTFAB percentiles and the p95 stall: these come out exactly. Every other
// figure (counts, response times, the closed-loop requests in flight, confidence intervals, the verdicts) is what
// the records give; the CloudWatch readings, the measuring process's own load, the re-measure flags and a step
// q marks unusable are kept. Q_max, its brackets, the service time and the highest throughput follow from the
// steps. window is every step's measure window; 0 takes, per step, the shortest of 10 s to 1000 s in which the
// rates are whole numbers of requests.
func Records(q *capacity.QMax, window time.Duration) ([]byte, error) {
	if len(q.Steps) == 0 {
		return nil, fmt.Errorf("the artifact has no steps")
	}
	judge := q.RecordsJudge()
	const gap = 100 * time.Second // settle before, drain after each window
	ws := q.StartedAt.Add(30 * time.Second)
	var recs []bench.Record
	for _, s := range q.Steps {
		w, err := wholeWindow(window, judge.MinRequests, s.AchievedRPS)
		if err != nil {
			return nil, fmt.Errorf("step at concurrency %d: %w", s.Concurrency, err)
		}
		recs = append(recs, ClosedStep(q.RunID, s.Concurrency, s.AchievedRPS, ws, w, s.TTFABP50Ms, s.TTFABP95Ms, s.TTFABP99Ms, s.StallP95Ms)...)
		ws = ws.Add(w + gap)
	}
	folded := map[int]bench.StepResult{}
	for _, s := range bench.Summarize(recs, judge) {
		folded[s.Concurrency] = s
	}
	var lowest *bench.StepResult
	for i, t := range q.Steps {
		s := folded[t.Concurrency]
		st := capacity.StepOf(s)
		st.CloudWatchConcurrencyMax, st.CloudWatchRatio = t.CloudWatchConcurrencyMax, t.CloudWatchRatio
		st.ClientCPUCores, st.ClientLagP99Ms, st.ClientLagMaxMs = t.ClientCPUCores, t.ClientLagP99Ms, t.ClientLagMaxMs
		st.Remeasured, st.Inconclusive = t.Remeasured, t.Inconclusive
		if !t.Usable {
			st.Usable, st.UnusableReason = false, t.UnusableReason
		}
		q.Steps[i] = st
		if s.OK > 0 && (lowest == nil || s.Concurrency < lowest.Concurrency) {
			lowest = &s
		}
	}
	q.SetQMax()
	if lowest != nil {
		q.ServiceTimeMeanMs, q.ServiceTimeP95Ms = lowest.ResponseMeanMs, lowest.ResponseP95Ms
	}
	if len(q.RateSteps) > 0 {
		q.HighestThroughputRPS = 0
		for _, s := range q.Steps {
			if s.Usable && s.OKCount > 0 {
				q.HighestThroughputRPS = math.Max(q.HighestThroughputRPS, s.Throughput())
			}
		}
		n := len(recs)
		for i, t := range q.RateSteps {
			w, err := wholeWindow(window, judge.MinRequests, t.ArrivalRPS, t.AchievedRPS)
			if err != nil {
				return nil, fmt.Errorf("rate step %d: %w", i, err)
			}
			id := bench.RateStepID{Index: i, Fraction: t.Fraction, OfferedRPS: t.Fraction * q.HighestThroughputRPS}
			rs, err := RateStep(q.RunID, id, t.ArrivalRPS, t.AchievedRPS, t.InFlightMean, ws, w, t.TTFABP50Ms, t.TTFABP95Ms, t.TTFABP99Ms, t.StallP95Ms)
			if err != nil {
				return nil, err
			}
			recs = append(recs, rs...)
			ws = ws.Add(w + gap)
		}
		for i, s := range bench.SummarizeRateSteps(recs[n:], judge, 0) {
			t := q.RateSteps[i]
			q.RateSteps[i] = capacity.RateStepOf(s, t.CloudWatchMax10s)
			if !t.Usable {
				q.RateSteps[i].Usable, q.RateSteps[i].UnusableReason = false, t.UnusableReason
			}
		}
	}
	data, err := Gzip(recs)
	if err != nil {
		return nil, err
	}
	q.RecordsSHA256 = capacity.DigestBytes(data)
	if errs := q.CheckAgainst(recs); len(errs) > 0 {
		return nil, fmt.Errorf("the synthesized records do not give the artifact: %v", errs)
	}
	return data, nil
}

// WriteRecords is Records, writing the records file beside the artifact's path (which it does not write).
func WriteRecords(qmaxPath string, q *capacity.QMax, window time.Duration) error {
	data, err := Records(q, window)
	if err != nil {
		return err
	}
	return capacity.WriteFileAtomic(filepath.Join(filepath.Dir(qmaxPath), q.RecordsFile), data)
}
