package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// Open loop, after k6's constant-arrival-rate executor (lib/executor/constant_arrival_rate.go): requests
// arrive on a schedule that does not depend on how fast the server answers, so a slowing server shows as
// growing latency, sheds and dropped arrivals instead of hiding behind a falling request rate (which a closed
// loop would do). RunOpenLoop drives a trace of constant-rate segments this way with a pre-allocated pool of
// workers; an arrival that finds no free worker is dropped and recorded (ClassDropped), never queued on the
// client.

// ClassDropped is an open-loop arrival that found no free worker at its scheduled time: it was never sent.
// The client's pool (OpenLoopConfig.MaxWorkers) was too small for the server's response time at that rate.
const ClassDropped = "dropped"

// Arrival identifies the scheduled arrival an open-loop record answers.
type Arrival struct {
	// Index is the arrival's number in the whole trace, from 0 (ArrivalTimes), the same on every shard.
	Index int64 `json:"index"`
	// Scheduled is when the schedule wanted it sent (wall-clock UTC); the record's Sent is when it was.
	Scheduled time.Time `json:"scheduled"`
	// Shard and Shards are the shard that sent it, from 0, and how many shards drive the trace (1 unsharded).
	Shard  int `json:"shard"`
	Shards int `json:"shards"`
	// Trace identifies the trace (its digest), so that records of different traces are not merged.
	Trace string `json:"trace"`
}

// Segment is a span of a trace at a constant arrival rate.
type Segment struct {
	// Duration is the segment's length; RPS its arrival rate in requests per second (0 sends nothing).
	Duration time.Duration
	RPS      float64
}

// MaxOpenLoopRPS bounds a segment's rate; MaxOpenLoopDuration a trace's length.
const (
	MaxOpenLoopRPS      = 1_000_000
	MaxOpenLoopDuration = 31 * 24 * time.Hour
)

// TraceDuration is the total length of the segments.
func TraceDuration(segs []Segment) time.Duration {
	var d time.Duration
	for _, s := range segs {
		d += s.Duration
	}
	return d
}

// ArrivalTimes yields every arrival of the trace, in order, as (index, offset from the trace's start).
//
// Arrival k (from 0) is at the first moment the trace's cumulative rate Λ(t) = ∫₀ᵗ rps reaches k: within a
// segment of rate r the arrivals are 1/r apart, as k6's constant-arrival-rate sends them, and a fractional
// count carries over a segment boundary instead of being rounded per segment (0.5 rps over 1-s segments sends
// one request every 2 s, not one per segment). Shards split this one sequence (ShardArrivals), so n machines
// together send exactly what one would.
func ArrivalTimes(segs []Segment) iter.Seq2[int64, time.Duration] {
	return func(yield func(int64, time.Duration) bool) {
		var start time.Duration
		cum := 0.0 // Λ at the segment's start
		var k int64
		for _, s := range segs {
			end := cum + s.RPS*s.Duration.Seconds()
			if s.RPS > 0 {
				for ; float64(k) < end; k++ {
					off := start + time.Duration((float64(k)-cum)/s.RPS*float64(time.Second))
					if off < start { // k < cum only through rounding at the boundary
						off = start
					}
					if !yield(k, off) {
						return
					}
				}
			}
			start += s.Duration
			cum = end
		}
	}
}

// ShardArrivals yields the arrivals of shard i of n of one arrival sequence (TraceArrivals): arrival k goes
// to shard k mod n. Every arrival belongs to exactly one shard, and each shard's arrivals are spread over the
// whole trace at 1/n of its rate.
func ShardArrivals(all iter.Seq2[int64, time.Duration], i, n int) iter.Seq2[int64, time.Duration] {
	return func(yield func(int64, time.Duration) bool) {
		for k, off := range all {
			if n > 1 && k%int64(n) != int64(i) {
				continue
			}
			if !yield(k, off) {
				return
			}
		}
	}
}

// OpenLoopConfig is an open-loop run of a trace. Validate reports every problem at once.
type OpenLoopConfig struct {
	// Segments is the trace, in order from its start.
	Segments []Segment
	// Shard and Shards select this run's part of the arrivals (ShardArrivals); Shards 0 or 1 is the whole trace.
	Shard, Shards int
	// Process spaces the trace's arrivals (TraceArrivals, seeded with Seed): "" or ArrivalsUniform evenly,
	// ArrivalsPoisson as a Poisson process.
	Process ArrivalProcess
	// Arrivals, when set, replaces the evenly spaced arrivals of Segments (ArrivalTimes): it yields (index,
	// offset from the start) in increasing offset, e.g. PoissonArrivals. Segments still give the run's length:
	// an arrival at or past it is not sent. Shards must then be 0 or 1.
	Arrivals iter.Seq2[int64, time.Duration]
	// MaxWorkers is the pool of workers, each with its own Sender, started before the first arrival. An
	// arrival with no free worker is dropped (ClassDropped).
	MaxWorkers int
	// RequestTimeout bounds one request, from send to the end of its stream; the run ends at most that long
	// after the trace does.
	RequestTimeout time.Duration
	// Start is when the trace's time 0 is (several machines agree on one); zero starts now. A start in the
	// past is refused by Validate when more than a second ago.
	Start time.Time
	// Transport sends the requests, Corpus gives their texts. Arrival k's text is picked with a generator
	// seeded from Seed and k, so a sharded run sends the texts an unsharded one would.
	Transport Transport
	Corpus    *Corpus
	Seed      uint64
	// RunID and Trace (the trace's digest) are written into every record.
	RunID string
	Trace string
	// Records receives every record as a JSON line (RecordWriter) as it ends; nil writes none.
	Records io.Writer
	// OnRecord, when set, is called with every record from one goroutine, in the order they are written.
	OnRecord func(Record)
	// Observer, when set, is called from one goroutine about twice a second and once at the end. It must
	// return quickly.
	Observer func(OpenLoopProgress)
}

// Validate returns every problem of the configuration, each naming the field and the fix.
func (c OpenLoopConfig) Validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Segments) == 0 {
		add("segments: the trace is empty: give at least one segment")
	}
	for i, s := range c.Segments {
		if s.Duration <= 0 {
			add("segments[%d]: duration %v: want a positive duration", i, s.Duration)
		}
		if !(s.RPS >= 0 && s.RPS <= MaxOpenLoopRPS) {
			add("segments[%d]: rate %g rps: want 0 to %d", i, s.RPS, MaxOpenLoopRPS)
		}
	}
	if d := TraceDuration(c.Segments); d > MaxOpenLoopDuration {
		add("segments: the trace lasts %v: at most %v", d, MaxOpenLoopDuration)
	}
	shards := max(c.Shards, 1)
	if c.Shards < 0 || c.Shards > MaxConcurrency {
		add("shards: is %d: want 1 to %d", c.Shards, MaxConcurrency)
	} else if c.Shard < 0 || c.Shard >= shards {
		add("shard: is %d of %d: want 0 to %d", c.Shard, shards, shards-1)
	}
	if c.Process != "" {
		if _, err := ParseArrivalProcess(string(c.Process)); err != nil {
			add("process: %v", err)
		}
	}
	if c.Arrivals != nil && shards > 1 {
		add("shards: is %d with arrivals of its own: an arrival sequence is not sharded: use 1", c.Shards)
	}
	if c.MaxWorkers < 1 || c.MaxWorkers > MaxConcurrency {
		add("max workers: is %d: want 1 to %d", c.MaxWorkers, MaxConcurrency)
	}
	if c.RequestTimeout <= 0 {
		add("request timeout: is %v: want a positive duration", c.RequestTimeout)
	}
	if !c.Start.IsZero() && time.Until(c.Start) < -time.Second {
		add("start: %s is in the past: give a start time ahead of now (or none to start at once)", c.Start.UTC().Format(time.RFC3339))
	}
	if c.Transport == nil {
		add("transport: is not set: use NewHTTP or SageMakerStream")
	}
	if c.Corpus == nil || c.Corpus.Len() == 0 {
		add("corpus: is empty: use DefaultCorpus or LoadCorpus")
	}
	return errs
}

// OpenLoopProgress is a live view of an open-loop run.
type OpenLoopProgress struct {
	// Elapsed is the time since the trace started (negative while waiting for Start); Duration its length.
	Elapsed, Duration time.Duration
	// Scheduled counts this shard's arrivals due so far; Sent those handed to a worker, Dropped those that
	// found none. Completed, OK, Shed and Failed count the ended requests; InFlight is how many are running.
	Scheduled, Sent, Dropped    int64
	Completed, OK, Shed, Failed int64
	InFlight                    int64
	Done                        bool
}

// OpenLoopResult is what an open-loop run did, counted over its records.
type OpenLoopResult struct {
	// Start and End are the trace's time 0 and its end (wall-clock UTC).
	Start, End time.Time
	// Scheduled counts this shard's arrivals, Sent those sent, Dropped those that found no free worker.
	Scheduled, Sent, Dropped int64
	// OK, Shed and Errors split the sent requests by outcome (timeouts, broken streams, canceled and others
	// are Errors).
	OK, Shed, Errors int64
	// MaxLag is the largest time by which a send came after its scheduled time (the client's own lag).
	MaxLag time.Duration
}

// job is one arrival handed to a worker.
type job struct {
	a  Arrival
	at time.Time // monotonic scheduled time
}

// RunOpenLoop drives this shard's arrivals of the trace (OpenLoopConfig) and returns their counts. Every
// arrival becomes one record: sent ones when they end, dropped ones at once. When ctx ends no arrival is
// started any more, the requests in flight are canceled (class canceled) and the partial result comes back
// with ctx's error. The run lasts at most the wait for Start, the trace and one RequestTimeout.
func RunOpenLoop(ctx context.Context, cfg OpenLoopConfig) (OpenLoopResult, error) {
	if errs := cfg.Validate(); len(errs) > 0 {
		return OpenLoopResult{}, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	shards := max(cfg.Shards, 1)
	senders := make([]Sender, cfg.MaxWorkers)
	for i := range senders {
		s, err := cfg.Transport.Worker(i)
		if err != nil {
			return OpenLoopResult{}, fmt.Errorf("start worker %d of %d: %w", i, cfg.MaxWorkers, err)
		}
		senders[i] = s
	}
	start := time.Now()
	if !cfg.Start.IsZero() {
		start = start.Add(time.Until(cfg.Start)) // keeps the monotonic reading
	}
	total := TraceDuration(cfg.Segments)
	// The records' times come from the wall-clock start, so that shards given one Start agree to the
	// nanosecond on every arrival's scheduled time; waits use the monotonic reading.
	wallStart := wall(start)
	if !cfg.Start.IsZero() {
		wallStart = wall(cfg.Start)
	}
	res := OpenLoopResult{Start: wallStart, End: wallStart.Add(total)}
	wallEnd := res.End

	// Subtleness ahead: free holds one token per worker that is not running a request. The dispatcher takes
	// one without blocking (select with default) before it hands an arrival over: an arrival with no free
	// worker is dropped at its scheduled time, so nothing queues behind a slow server and the schedule never
	// slips. A worker gives its token back once its request has ended and its record is handed on. Counting
	// tokens, not workers waiting in a receive, keeps the decision independent of when the Go scheduler runs
	// a goroutine: a worker not yet scheduled at its first arrival is still free, and the job waits in work
	// (room for every worker) until it runs.
	free := make(chan struct{}, cfg.MaxWorkers)
	for range cfg.MaxWorkers {
		free <- struct{}{}
	}
	work := make(chan job, cfg.MaxWorkers)
	results := make(chan Record, cfg.MaxWorkers+256)
	var inFlight, sent, dropped, scheduled atomic.Int64
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range work {
				rng := rand.New(rand.NewPCG(cfg.Seed, uint64(j.a.Index)))
				text := cfg.Corpus.Pick(rng)
				reqCtx, cancel := context.WithTimeout(ctx, cfg.RequestTimeout)
				r, err := s.Send(reqCtx, text)
				cancel()
				inFlight.Add(-1)
				results <- openRecord(ctx, cfg, i, j, text, r, err, wallStart, wallEnd)
				free <- struct{}{}
			}
		}()
	}
	dispatchDone := make(chan struct{})
	go func() {
		defer close(dispatchDone)
		defer close(work)
		timer := time.NewTimer(0)
		<-timer.C
		defer timer.Stop()
		arrivals := ShardArrivals(TraceArrivals(cfg.Segments, cfg.Process, cfg.Seed), cfg.Shard, shards)
		if cfg.Arrivals != nil {
			arrivals = cfg.Arrivals
		}
		for k, off := range arrivals {
			if cfg.Arrivals != nil && off >= total {
				return
			}
			at := start.Add(off)
			if d := time.Until(at); d > 0 {
				timer.Reset(d)
				select {
				case <-timer.C:
				case <-ctx.Done():
					return
				}
			} else if ctx.Err() != nil {
				return
			}
			scheduled.Add(1)
			j := job{a: Arrival{Index: k, Scheduled: wallStart.Add(off), Shard: cfg.Shard, Shards: shards, Trace: cfg.Trace}, at: at}
			select {
			case <-free:
				inFlight.Add(1)
				sent.Add(1)
				work <- j // never blocks: a token stands for a room in work
			default:
				dropped.Add(1)
				results <- Record{
					RunID: cfg.RunID, Transport: cfg.Transport.Name(), Step: cfg.MaxWorkers, Worker: -1, Seq: int(k),
					Sent: j.a.Scheduled, End: j.a.Scheduled, WindowStart: wallStart, WindowEnd: wallEnd, Measured: true,
					Class: ClassDropped, Error: fmt.Sprintf("no free worker among %d at the scheduled time: the arrival was dropped, not queued", cfg.MaxWorkers),
					Arrival: &j.a,
				}
			}
		}
	}()
	go func() { <-dispatchDone; wg.Wait(); close(results) }()

	var w *RecordWriter
	if cfg.Records != nil {
		w = NewRecordWriter(cfg.Records)
	}
	var werr error
	var completed, ok, shed, failed int64
	emit := func(done bool) {
		if cfg.Observer == nil {
			return
		}
		cfg.Observer(OpenLoopProgress{
			Elapsed: time.Since(start), Duration: total, Scheduled: scheduled.Load(), Sent: sent.Load(), Dropped: dropped.Load(),
			Completed: completed, OK: ok, Shed: shed, Failed: failed, InFlight: inFlight.Load(), Done: done,
		})
	}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case r, more := <-results:
			if !more {
				done = true
				break
			}
			res.Scheduled++
			switch r.Class {
			case ClassDropped:
				res.Dropped++
			default:
				res.Sent++
				completed++
				switch r.Class {
				case ClassOK:
					res.OK++
					ok++
				case ClassShed:
					res.Shed++
					shed++
				default:
					res.Errors++
					failed++
				}
				if lag := r.Sent.Sub(r.Arrival.Scheduled); lag > res.MaxLag {
					res.MaxLag = lag
				}
			}
			if w != nil && werr == nil {
				werr = w.Write(r) // a failed writer stops writing; the run still ends in order
			}
			if cfg.OnRecord != nil {
				cfg.OnRecord(r)
			}
		case <-tick.C:
			emit(false)
		}
	}
	emit(true)
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("open-loop run: %w", err)
	}
	if werr != nil {
		return res, fmt.Errorf("open-loop run: %w: check the records file's disk", werr)
	}
	return res, nil
}

// openRecord turns one sent arrival's outcome into its Record.
func openRecord(runCtx context.Context, cfg OpenLoopConfig, worker int, j job, text string, res StreamResult, err error, ws, we time.Time) Record {
	r := record(runCtx, Config{RunID: cfg.RunID, Transport: cfg.Transport}, cfg.MaxWorkers, worker, int(j.a.Index), text, res, err, time.Time{}, time.Time{}, ws, we)
	r.Measured = true // every arrival of an open-loop run counts
	a := j.a
	r.Arrival = &a
	return r
}

// OpenLoopBucket is one time slice (a minute by default) of an open-loop run, by scheduled arrival time.
type OpenLoopBucket struct {
	// Offset is the slice's start from the trace's time 0.
	Offset time.Duration `json:"offset"`
	// Scheduled counts the arrivals due in the slice; OfferedRPS is their rate. Sent, Dropped, OK, Shed and
	// Errors split them by outcome.
	Scheduled  int     `json:"scheduled"`
	OfferedRPS float64 `json:"offered_rps"`
	Sent       int     `json:"sent"`
	Dropped    int     `json:"dropped"`
	OK         int     `json:"ok"`
	Shed       int     `json:"shed"`
	Errors     int     `json:"errors"`
	// TTFABP95Ms is the exact p95 TTFAB of the successful requests; ShedRate is Shed over Sent.
	TTFABP95Ms float64 `json:"ttfab_p95_ms"`
	ShedRate   float64 `json:"shed_rate"`
	// OverSLO counts the successful requests whose TTFAB exceeded the SLO (only when SummarizeOpenLoop was
	// given an SLO).
	OverSLO int `json:"over_slo"`
	// Violates is SliceViolates's verdict on the slice (only when SummarizeOpenLoop was given an SLO).
	Violates bool `json:"violates"`
}

// SLOPercentile is the percentile an open-loop run's slices are judged at: p95 TTFAB, as their tables say.
const SLOPercentile = 95

// SliceViolates is the SLO verdict of one open-loop slice of scheduled arrivals, over of which completed with
// their TTFAB above the SLO and failed of which were shed, dropped or failed: more than the percentile allows
// (5% at p95) missed it, loadmodel.SLO.RowViolates, the rule the simulator counts its minutes by
// (docs/design.md, "Feasible means simulated and met"). SummarizeOpenLoop judges every slice by it, tts-bench
// replay and report print it in each row of their table, and the demo's check (tools/demo) re-derives each
// printed row's verdict with it.
func SliceViolates(scheduled, over, failed int) bool {
	return loadmodel.SLO{Percentile: SLOPercentile}.RowViolates(float64(scheduled), float64(over+failed))
}

// OpenLoopSummary is an open-loop run folded from its records (SummarizeOpenLoop).
type OpenLoopSummary struct {
	// Start and End are the trace's time 0 and end, from the records' window.
	Start time.Time `json:"start"`
	End   time.Time `json:"end"`
	// Buckets are the slices of Bucket length from Start, one per slice up to End.
	Bucket  time.Duration    `json:"bucket"`
	Buckets []OpenLoopBucket `json:"buckets"`
	// Totals over every record.
	Scheduled, Sent, Dropped, OK, Shed, Errors, Timeouts int
	// Exact TTFAB percentiles (nearest rank) over the successful requests.
	TTFABP50Ms, TTFABP95Ms, TTFABP99Ms float64
	// SLOViolationBuckets counts the slices SliceViolates judges violating.
	SLOViolationBuckets int
}

// SummarizeOpenLoop folds open-loop records (each with its Arrival) into slices of bucket length from the
// trace's start, with exact percentiles. Records of one run read back from their file, or of every shard of
// a run merged, give the numbers the run itself would report. slo judges the slices (0: none is judged).
func SummarizeOpenLoop(recs []Record, bucket, slo time.Duration) (OpenLoopSummary, error) {
	if bucket <= 0 {
		return OpenLoopSummary{}, fmt.Errorf("bucket %v: want a positive duration", bucket)
	}
	if len(recs) == 0 {
		return OpenLoopSummary{}, errors.New("no records to summarize")
	}
	s := OpenLoopSummary{Start: recs[0].WindowStart, End: recs[0].WindowEnd, Bucket: bucket}
	for i, r := range recs {
		if r.Arrival == nil {
			return OpenLoopSummary{}, fmt.Errorf("record %d (run %s, step %d, seq %d) has no arrival: it is from a closed-loop run (qmax), not an open-loop one (replay)", i, r.RunID, r.Step, r.Seq)
		}
		if !r.WindowStart.Equal(s.Start) || !r.WindowEnd.Equal(s.End) {
			return OpenLoopSummary{}, fmt.Errorf("record %d (arrival %d) has the trace window %s–%s, the first record %s–%s: the records are from runs that did not share one start",
				i, r.Arrival.Index, r.WindowStart.Format(time.RFC3339Nano), r.WindowEnd.Format(time.RFC3339Nano), s.Start.Format(time.RFC3339Nano), s.End.Format(time.RFC3339Nano))
		}
	}
	n := int(math.Ceil(float64(s.End.Sub(s.Start)) / float64(bucket)))
	n = max(n, 1)
	s.Buckets = make([]OpenLoopBucket, n)
	ttfabs := make([][]float64, n)
	var all []float64
	for _, r := range recs {
		i := int(r.Arrival.Scheduled.Sub(s.Start) / bucket)
		i = min(max(i, 0), n-1)
		b := &s.Buckets[i]
		b.Scheduled++
		s.Scheduled++
		switch r.Class {
		case ClassDropped:
			b.Dropped++
			s.Dropped++
			continue
		case ClassOK:
			b.OK++
			s.OK++
			if slo > 0 && r.TTFABMs > ms(slo) {
				b.OverSLO++
			}
			ttfabs[i] = append(ttfabs[i], r.TTFABMs)
			all = append(all, r.TTFABMs)
		case ClassShed:
			b.Shed++
			s.Shed++
		default:
			b.Errors++
			s.Errors++
			if r.Class == ClassTimeout {
				s.Timeouts++
			}
		}
		b.Sent++
		s.Sent++
	}
	for i := range s.Buckets {
		b := &s.Buckets[i]
		b.Offset = time.Duration(i) * bucket
		length := min(bucket, s.End.Sub(s.Start)-b.Offset)
		if length > 0 {
			b.OfferedRPS = float64(b.Scheduled) / length.Seconds()
		}
		sort.Float64s(ttfabs[i])
		b.TTFABP95Ms = Percentile(ttfabs[i], 95)
		if b.Sent > 0 {
			b.ShedRate = float64(b.Shed) / float64(b.Sent)
		}
		if slo > 0 && SliceViolates(b.Scheduled, b.OverSLO, b.Shed+b.Errors+b.Dropped) {
			b.Violates = true
			s.SLOViolationBuckets++
		}
	}
	sort.Float64s(all)
	s.TTFABP50Ms, s.TTFABP95Ms, s.TTFABP99Ms = Percentile(all, 50), Percentile(all, 95), Percentile(all, 99)
	return s, nil
}
