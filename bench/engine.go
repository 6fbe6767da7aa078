package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sort"
	"sync"
	"time"
)

// Defaults of Config (DefaultConfig). The windows are the original proof-of-value's practice (docs/design.md,
// "The original").
const (
	DefaultSettle              = 30 * time.Second
	DefaultHold                = 240 * time.Second
	DefaultMeasure             = 60 * time.Second
	DefaultRequestTimeout      = 60 * time.Second
	DefaultMinRequests         = 30
	DefaultMaxErrorRate        = 0.01
	DefaultMinConcurrencyRatio = 0.9
	DefaultSLOPercentile       = 95
)

// Config is a closed-loop staircase. DefaultConfig fills every field but the SLO, the transport and the
// corpus; Validate reports every problem at once.
//
// One step at concurrency C (RunStep), after k6's executors (lib/executor/helpers.go, getDurationContexts):
//
//	start ── Settle ──┬──────────── Hold ─────────────┬── Grace ──┐
//	                  │             ├─── Measure ─────┤           │
//	                  │        window start      stop starting  hard stop
//
// C workers start at once; each sends its next request only when its previous one has ended (closed loop).
// Settle lets queues and caches reach their steady state; nothing sent in it is judged. At "stop starting"
// (start + Settle + Hold) no worker sends again and the step waits for the requests in flight, at most Grace
// longer ("hard stop", which cancels them). The measure window is the last Measure of the hold: requests
// sent in it are the step's measured requests (their TTFAB, stall, response time and errors), and the
// successful requests that ended in it give the achieved rate. Grace must be at least RequestTimeout, so
// that the hard stop never cuts a request still within its own timeout: a measured request always ends by
// itself, successfully or with its own timeout.
type Config struct {
	// Settle, Hold, Measure and Grace are the step's windows (above).
	Settle, Hold, Measure, Grace time.Duration
	// RequestTimeout bounds one request, from send to the end of its stream.
	RequestTimeout time.Duration
	// SLO bounds the SLOPercentile TTFAB of a passing step.
	SLO           time.Duration
	SLOPercentile int
	// StallBudget (the catalog's stall_budget_ms) plus StallJitter (DefaultStallJitter) bounds the p95 stall
	// of a passing step.
	StallBudget, StallJitter time.Duration
	// MinRequests, MaxErrorRate and MinConcurrencyRatio decide whether a step is usable (Judge).
	MinRequests         int
	MaxErrorRate        float64
	MinConcurrencyRatio float64
	// Transport sends the requests; Corpus gives their texts; Seed picks from it (the same seed sends the
	// same texts in the same order per worker).
	Transport Transport
	Corpus    *Corpus
	Seed      uint64
	// RunID is written into every record.
	RunID string
	// Records receives every request as a JSON line (RecordWriter) as it ends; nil writes none.
	Records io.Writer
	// Observer, when set, is called from one goroutine about twice a second during a step and once at its
	// end. It must return quickly.
	Observer func(Progress)
}

// DefaultConfig returns a Config with the default windows and bounds. The caller sets SLO, StallBudget,
// Transport, Corpus and RunID.
func DefaultConfig() Config {
	return Config{
		Settle: DefaultSettle, Hold: DefaultHold, Measure: DefaultMeasure, Grace: DefaultRequestTimeout,
		RequestTimeout: DefaultRequestTimeout, SLOPercentile: DefaultSLOPercentile, StallJitter: DefaultStallJitter,
		MinRequests: DefaultMinRequests, MaxErrorRate: DefaultMaxErrorRate, MinConcurrencyRatio: DefaultMinConcurrencyRatio,
	}
}

// MaxConcurrency bounds one step's concurrency (a worker is a goroutine and, on sagemaker-stream, a client).
const MaxConcurrency = 10_000

// Validate returns every problem of the configuration, each naming the field and the fix.
func (c Config) Validate() []error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if c.Settle < 0 {
		add("settle: is %v: want 0 or more", c.Settle)
	}
	if c.Hold <= 0 {
		add("hold: is %v: want a positive duration", c.Hold)
	}
	if c.Measure <= 0 || c.Measure > c.Hold {
		add("measure: is %v: want a positive duration no longer than hold (%v): it is the last part of the hold", c.Measure, c.Hold)
	}
	if c.RequestTimeout <= 0 {
		add("request timeout: is %v: want a positive duration", c.RequestTimeout)
	}
	if c.Grace < c.RequestTimeout {
		add("grace: is %v, below the request timeout %v: the hard stop would cut requests still within their timeout: raise grace to at least the request timeout", c.Grace, c.RequestTimeout)
	}
	if c.SLO <= 0 {
		add("slo: is %v: want a positive duration (the catalog's slo.ttfab_ms)", c.SLO)
	}
	if c.SLOPercentile < 50 || c.SLOPercentile > 99 {
		add("slo percentile: is %d: want 50 to 99", c.SLOPercentile)
	}
	if c.StallBudget < 0 {
		add("stall budget: is %v: want 0 or more (the catalog's stall_budget_ms)", c.StallBudget)
	}
	if c.StallJitter < 0 {
		add("stall jitter: is %v: want 0 or more (DefaultStallJitter is %v)", c.StallJitter, DefaultStallJitter)
	}
	if c.MinRequests < 1 {
		add("min requests: is %d: want at least 1", c.MinRequests)
	}
	if !(c.MaxErrorRate >= 0 && c.MaxErrorRate < 1) {
		add("max error rate: is %g: want a share in [0, 1)", c.MaxErrorRate)
	}
	if !(c.MinConcurrencyRatio > 0 && c.MinConcurrencyRatio <= 1) {
		add("min concurrency ratio: is %g: want a share in (0, 1]", c.MinConcurrencyRatio)
	}
	if c.Transport == nil {
		add("transport: is not set: use NewHTTP or SageMakerStream")
	}
	if c.Corpus == nil || c.Corpus.Len() == 0 {
		add("corpus: is empty: use DefaultCorpus or LoadCorpus")
	}
	return errs
}

// Judge returns what the configuration judges steps by.
func (c Config) Judge() Judge {
	return Judge{SLO: c.SLO, SLOPercentile: c.SLOPercentile, StallBudget: c.StallBudget, StallJitter: c.StallJitter,
		MinRequests: c.MinRequests, MaxErrorRate: c.MaxErrorRate, MinConcurrencyRatio: c.MinConcurrencyRatio}
}

// StepDuration is the longest one step takes: settle, hold and grace.
func (c Config) StepDuration() time.Duration { return c.Settle + c.Hold + c.Grace }

// Phases of a step, as Progress reports them.
const (
	PhaseSettle  = "settle"
	PhaseHold    = "hold"
	PhaseMeasure = "measure"
	PhaseDrain   = "drain"
	PhaseDone    = "done"
)

// Progress is a live view of the running step.
type Progress struct {
	// Concurrency is the step's concurrency; Phase where it is (PhaseSettle ... PhaseDone).
	Concurrency int
	Phase       string
	// Elapsed is the time since the step started; Remaining the time until it stops starting requests.
	Elapsed, Remaining time.Duration
	// Completed and Failed count the requests ended so far in the step; InFlight is how many are running.
	Completed, Failed, InFlight int
	// TTFABP95 and StallP95 are the p95 over the successful requests ended so far: in the measure window
	// once it has begun, before that over the whole step.
	TTFABP95, StallP95 time.Duration
}

// ErrConfig is returned (wrapped) by RunStep for an invalid Config.
var ErrConfig = errors.New("invalid load configuration")

// RunStep runs one closed-loop step at concurrency c (Config describes the windows), writes its records to
// cfg.Records as they end, and returns the step folded from them (SummarizeStep). When
// ctx ends the requests in flight are canceled (class canceled) and the partial step comes back with ctx's
// error.
func RunStep(ctx context.Context, cfg Config, c int) (StepResult, error) {
	if errs := cfg.Validate(); len(errs) > 0 {
		return StepResult{}, fmt.Errorf("%w: %w", ErrConfig, errors.Join(errs...))
	}
	if c < 1 || c > MaxConcurrency {
		return StepResult{}, fmt.Errorf("%w: concurrency %d: want 1 to %d", ErrConfig, c, MaxConcurrency)
	}
	senders := make([]Sender, c)
	for i := range senders {
		s, err := cfg.Transport.Worker(i)
		if err != nil {
			return StepResult{}, fmt.Errorf("start worker %d of %d: %w", i, c, err)
		}
		senders[i] = s
	}

	start := time.Now()
	stopStart := start.Add(cfg.Settle + cfg.Hold)
	windowStart := stopStart.Add(-cfg.Measure)
	hardCtx, cancel := context.WithDeadline(ctx, stopStart.Add(cfg.Grace))
	defer cancel()
	wallWS, wallWE := wall(windowStart), wall(stopStart)

	results := make(chan Record, c)
	var wg sync.WaitGroup
	for i, s := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Subtleness ahead: the deadline check uses the monotonic clock of start, so a wall-clock step
			// cannot shorten or stretch the step.
			rng := rand.New(rand.NewPCG(cfg.Seed, uint64(c)<<32|uint64(i)))
			for seq := 0; time.Now().Before(stopStart) && hardCtx.Err() == nil; seq++ {
				text := cfg.Corpus.Pick(rng)
				reqCtx, reqCancel := context.WithTimeout(hardCtx, cfg.RequestTimeout)
				res, err := s.Send(reqCtx, text)
				reqCancel()
				r := record(ctx, cfg, c, i, seq, text, res, err, windowStart, stopStart, wallWS, wallWE)
				results <- r
				if NoAnswer(r.Class, r.Status, err) {
					// No answer at all (refused, reset, unreachable): pause before the next send, or a dead
					// server makes every worker a tight loop of records (150,000 in 8 s on loopback).
					pauseUntil(hardCtx, stopStart, NoAnswerPause)
				}
			}
		}()
	}
	go func() { wg.Wait(); close(results) }()

	var w *RecordWriter
	if cfg.Records != nil {
		w = NewRecordWriter(cfg.Records)
	}
	var recs []Record
	var werr error
	live := liveView{cfg: cfg, c: c, start: start, stopStart: stopStart, windowStart: windowStart}
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case r, ok := <-results:
			if !ok {
				done = true
				break
			}
			recs = append(recs, r)
			live.add(r)
			if w != nil && werr == nil {
				werr = w.Write(r) // a failed writer stops writing; the step still ends in order
			}
		case <-tick.C:
			live.emit(false)
		}
	}
	live.finish()
	res := SummarizeStep(c, recs, cfg.Judge())
	if err := ctx.Err(); err != nil {
		return res, fmt.Errorf("step at concurrency %d: %w", c, err)
	}
	if werr != nil {
		return res, fmt.Errorf("step at concurrency %d: %w: check the records file's disk", c, werr)
	}
	return res, nil
}

// NoAnswerPause is how long a closed-loop worker waits, before it sends again, after a request that failed
// with no status from the model (class other, status 0): the connection refused, reset or unreachable, or an
// error the SDK raised before any answer (throttling among them). Answers, error statuses included, are
// followed at once, as a closed loop does; a failure with no answer would otherwise repeat as fast as the
// kernel refuses it, filling the step's records (kept in memory until the step ends) with nothing.
const NoAnswerPause = 100 * time.Millisecond

// pauseUntil waits d, at most until stop, or until ctx ends.
func pauseUntil(ctx context.Context, stop time.Time, d time.Duration) {
	if left := time.Until(stop); left < d {
		d = left
	}
	if d <= 0 {
		return
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}

// wall strips t's monotonic reading and makes it UTC: what a record stores and reads back.
func wall(t time.Time) time.Time { return t.Round(0).UTC() }

// record turns one request's outcome into its Record.
func record(runCtx context.Context, cfg Config, c, worker, seq int, text string, res StreamResult, err error, ws, we, wallWS, wallWE time.Time) Record {
	if res.Sent.IsZero() {
		res.Sent = time.Now()
	}
	if res.End.IsZero() {
		res.End = time.Now()
	}
	class, status := Classify(runCtx, err)
	r := Record{
		RunID: cfg.RunID, Transport: cfg.Transport.Name(), Step: c, Worker: worker, Seq: seq, Chars: len([]rune(text)),
		Sent: wall(res.Sent), End: wall(res.End), WindowStart: wallWS, WindowEnd: wallWE,
		// Measured uses the monotonic clock, like the step's deadlines.
		Measured:   !res.Sent.Before(ws) && res.Sent.Before(we),
		ResponseMs: ms(res.End.Sub(res.Sent)), Bytes: res.Bytes, AudioBytes: res.AudioBytes, SampleRate: res.SampleRate,
		StallMs: ms(res.Stall), Status: status, Class: class,
	}
	if !res.FirstAudio.IsZero() {
		r.FirstAudio = wall(res.FirstAudio)
		r.TTFABMs = ms(res.TTFAB())
	}
	if res.SampleRate > 0 && res.Channels > 0 && res.BitsPerSample > 0 {
		r.AudioSeconds = float64(res.Samples) / float64(res.SampleRate)
	}
	for _, ch := range res.Chunks {
		r.Chunks = append(r.Chunks, [2]float64{ms(ch.At), float64(ch.Bytes)})
	}
	if err != nil {
		r.Error = err.Error()
	}
	return r
}

// liveView keeps the running numbers an Observer sees.
type liveView struct {
	cfg                           Config
	c                             int
	start, stopStart, windowStart time.Time
	completed, failed             int
	ttfab, stall                  []float64 // of the phase shown: the whole step until the window begins
	inWindow                      bool
	// open is true for an open-loop step (RunRateStep): InFlight is then inFlight, set by the caller, not c.
	open     bool
	inFlight int
}

func (l *liveView) add(r Record) {
	l.completed++
	if !r.OK() {
		l.failed++
		return
	}
	if r.Measured && !l.inWindow {
		l.inWindow, l.ttfab, l.stall = true, nil, nil
	}
	if r.Measured || !l.inWindow {
		l.ttfab = append(l.ttfab, r.TTFABMs)
		l.stall = append(l.stall, r.StallMs)
	}
}

func (l *liveView) finish() { l.emit(true) }

func (l *liveView) emit(done bool) {
	if l.cfg.Observer == nil {
		return
	}
	now := time.Now()
	p := Progress{Concurrency: l.c, Elapsed: now.Sub(l.start), Completed: l.completed, Failed: l.failed}
	if r := l.stopStart.Sub(now); r > 0 {
		p.Remaining = r
	}
	switch {
	case done:
		p.Phase = PhaseDone
	case now.Before(l.start.Add(l.cfg.Settle)):
		p.Phase = PhaseSettle
	case now.Before(l.windowStart):
		p.Phase = PhaseHold
	case now.Before(l.stopStart):
		p.Phase = PhaseMeasure
	default:
		p.Phase = PhaseDrain
	}
	if l.open {
		p.InFlight = l.inFlight
	} else if !done && p.Phase != PhaseDrain {
		p.InFlight = l.c
	}
	t := append([]float64(nil), l.ttfab...)
	s := append([]float64(nil), l.stall...)
	sort.Float64s(t)
	sort.Float64s(s)
	p.TTFABP95 = time.Duration(Percentile(t, 95) * float64(time.Millisecond))
	p.StallP95 = time.Duration(Percentile(s, 95) * float64(time.Millisecond))
	l.cfg.Observer(p)
}
