package server

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/engine"
)

// Scheduling policies for SCHEDULER.
const (
	// FirstChunk runs the first segment of every waiting request before the
	// continuation segments of requests already streaming, so a new request's
	// first audio does not wait behind other requests' long tails.
	FirstChunk = "first-chunk"
	// FIFO runs whole requests in arrival order: the original server's
	// behaviour, kept as the baseline.
	FIFO = "fifo"
)

// chunk is what a job's stream carries: audio, or the end (err nil) or a
// failure.
type chunk struct {
	samples []int16
	end     bool
	err     error
	// timeout marks err as the segment time limit (SEGMENT_TIMEOUT).
	timeout bool
}

// job is one admitted request's synthesis work.
type job struct {
	ctx   context.Context
	segs  []string
	voice string
	speed float64
	out   chan chunk
	// started is when the first segment began; written by the worker before
	// it sends the first chunk, read by the handler after receiving one.
	started time.Time
}

// task is one segment of a job.
type task struct {
	j     *job
	index int
}

// Scheduler runs segments on a fixed number of worker goroutines, each a
// synthesis slot.
type Scheduler struct {
	eng     engine.Engine
	policy  string
	workers int
	// limit is the engine time a segment may take (time spent handing audio
	// to a slow client does not count); 0 is no limit.
	limit time.Duration
	// stuck counts slots whose engine call ran past limit and has not
	// returned yet.
	stuck atomic.Int64

	mu     sync.Mutex
	wake   *sync.Cond
	first  []task // first segments (fifo: whole jobs) in arrival order
	cont   []task // continuation segments, in the order they became ready
	closed bool
	wg     sync.WaitGroup
	// submitted counts the jobs ever submitted. Admission (the gate) and submission are two steps, so tests
	// that line requests up in a known arrival order wait on this count, not on the gate's depth.
	submitted atomic.Int64
	// handing counts the goroutines handing a segment's held audio to a
	// reader that was not ready for it (see runSegmentReleasing).
	handing atomic.Int64
}

// NewScheduler starts workers goroutines running eng under policy. A segment
// whose engine time passes limit (0: no limit) fails its request; see
// runSegment.
func NewScheduler(eng engine.Engine, policy string, workers int, limit time.Duration) (*Scheduler, error) {
	if policy != FirstChunk && policy != FIFO {
		return nil, fmt.Errorf("SCHEDULER=%q: use %s or %s", policy, FirstChunk, FIFO)
	}
	if workers < 1 {
		return nil, fmt.Errorf("ENGINE_WORKERS=%d: use at least 1", workers)
	}
	if limit < 0 {
		return nil, fmt.Errorf("SEGMENT_TIMEOUT=%s: use a positive duration", limit)
	}
	s := &Scheduler{eng: eng, policy: policy, workers: workers, limit: limit}
	s.wake = sync.NewCond(&s.mu)
	for range workers {
		s.wg.Add(1)
		go s.work()
	}
	return s, nil
}

// submit queues j's first segment (fifo: the whole job).
func (s *Scheduler) submit(j *job) {
	s.mu.Lock()
	s.first = append(s.first, task{j: j})
	s.mu.Unlock()
	s.submitted.Add(1)
	s.wake.Signal()
}

// next blocks for the next task: first segments before continuations.
func (s *Scheduler) next() (task, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.closed {
			return task{}, false
		}
		for _, q := range []*[]task{&s.first, &s.cont} {
			if len(*q) > 0 {
				t := (*q)[0]
				(*q)[0] = task{} // let a finished job be collected
				*q = (*q)[1:]
				return t, true
			}
		}
		s.wake.Wait()
	}
}

func (s *Scheduler) work() {
	defer s.wg.Done()
	for {
		t, ok := s.next()
		if !ok {
			return
		}
		if s.policy == FIFO {
			for i := range t.j.segs {
				if !s.runSegment(task{j: t.j, index: i}) {
					break
				}
			}
			continue
		}
		s.runSegmentReleasing(t)
	}
}

// enqueueCont queues the segment after t's.
func (s *Scheduler) enqueueCont(t task) {
	s.mu.Lock()
	s.cont = append(s.cont, task{j: t.j, index: t.index + 1})
	s.mu.Unlock()
	s.wake.Signal()
}

// runSegment synthesizes one segment into its job's stream and reports
// whether the job should go on. It holds the slot while the job's stream is
// full (fifo keeps the original server's behaviour, including this
// backpressure; the write stall timeout bounds it). A job whose client has
// gone is dropped without synthesizing anything more. A segment that runs
// past the time limit fails its job at once (the watchdog sends the error);
// the slot stays counted as stuck until the engine call returns.
func (s *Scheduler) runSegment(t task) bool {
	j := t.j
	if j.ctx.Err() != nil {
		return false
	}
	if t.index == 0 {
		j.started = time.Now()
	}
	send := func(c chunk) error {
		select {
		case j.out <- c:
			return nil
		case <-j.ctx.Done():
			return j.ctx.Err()
		}
	}
	seg := engine.Segment{Text: j.segs[t.index], Voice: j.voice, Speed: j.speed}
	wd := s.watch(j, t.index)
	err := s.synthesize(wd.ctx, seg, func(samples []int16) error {
		if len(samples) == 0 {
			return nil
		}
		if err := wd.pause(); err != nil {
			return err
		}
		defer wd.resume()
		return send(chunk{samples: samples})
	})
	if wd.finish() {
		return false
	}
	if err != nil {
		if j.ctx.Err() == nil {
			send(chunk{err: err})
		}
		return false
	}
	if t.index+1 == len(j.segs) {
		send(chunk{end: true})
		return false
	}
	return true
}

// runSegmentReleasing synthesizes one segment (first-chunk policy) without
// ever holding the slot on the job's reader.
//
// Subtleness ahead: a client that stops reading fills its stream; if the
// engine slot waited for it, two non-reading clients would pin two slots
// and every other request would wait for their write stall timeout. So the
// audio the stream cannot take at once is kept aside (at most one segment's
// worth per job) and handed over by a goroutine of its own after the engine
// call returns; the slot is free at once. The job's next segment is queued
// only once this segment's audio has been taken, so a non-reading job never
// gets another slot, and its held audio is dropped when its request ends
// (the stall timeout cuts it).
func (s *Scheduler) runSegmentReleasing(t task) {
	j := t.j
	if j.ctx.Err() != nil {
		return
	}
	if t.index == 0 {
		j.started = time.Now()
	}
	var held []chunk
	seg := engine.Segment{Text: j.segs[t.index], Voice: j.voice, Speed: j.speed}
	wd := s.watch(j, t.index)
	err := s.synthesize(wd.ctx, seg, func(samples []int16) error {
		if len(samples) == 0 {
			return nil
		}
		if err := wd.pause(); err != nil {
			return err
		}
		defer wd.resume()
		if err := j.ctx.Err(); err != nil {
			return err
		}
		c := chunk{samples: samples}
		if len(held) == 0 {
			select {
			case j.out <- c:
				return nil
			default:
			}
		}
		held = append(held, c)
		return nil
	})
	if wd.finish() {
		return
	}
	last := t.index+1 == len(j.segs)
	switch {
	case err != nil:
		if j.ctx.Err() != nil {
			return
		}
		held = append(held, chunk{err: err})
	case last:
		held = append(held, chunk{end: true})
	}
	then := func() {
		if err == nil && !last {
			s.enqueueCont(t)
		}
	}
	// The common case: the stream takes everything now.
	for len(held) > 0 {
		select {
		case j.out <- held[0]:
			held = held[1:]
			continue
		default:
		}
		break
	}
	if len(held) == 0 {
		then()
		return
	}
	s.handing.Add(1)
	go func() {
		defer s.handing.Add(-1)
		for _, c := range held {
			select {
			case j.out <- c:
			case <-j.ctx.Done():
				return
			}
		}
		then()
	}()
}

// Stuck returns how many slots are in an engine call that ran past the
// segment time limit.
func (s *Scheduler) Stuck() int { return int(s.stuck.Load()) }

// Workers returns the number of synthesis slots.
func (s *Scheduler) Workers() int { return s.workers }

// watchdog bounds one segment's engine time. Its clock runs while the engine
// computes and stops while the engine's audio is handed to the job (a slow
// client's backpressure is the stall timeout's business, not the engine's).
type watchdog struct {
	s        *Scheduler
	j        *job
	index    int
	ctx      context.Context
	cancel   context.CancelCauseFunc
	exceeded chan struct{}

	mu      sync.Mutex
	left    time.Duration
	resumed time.Time
	gen     int
	paused  bool
	fired   bool
	done    bool
	timer   *time.Timer
}

func (s *Scheduler) watch(j *job, index int) *watchdog {
	w := &watchdog{s: s, j: j, index: index, left: s.limit, exceeded: make(chan struct{})}
	w.ctx, w.cancel = context.WithCancelCause(j.ctx)
	w.ctx = engine.WithLimitSignal(w.ctx, w.exceeded)
	if s.limit > 0 {
		w.arm()
	}
	return w
}

// arm starts the clock for what is left. Callers hold mu (or own w alone).
func (w *watchdog) arm() {
	w.gen++
	gen := w.gen
	w.resumed = time.Now()
	w.timer = time.AfterFunc(max(w.left, 0), func() { w.fire(gen) })
}

func (w *watchdog) fire(gen int) {
	w.mu.Lock()
	if gen != w.gen || w.paused || w.fired || w.done {
		w.mu.Unlock()
		return
	}
	w.fired = true
	w.s.stuck.Add(1)
	w.mu.Unlock()
	close(w.exceeded)
	w.cancel(engine.ErrSegmentTimeout)
	err := fmt.Errorf("engine %s: segment %d of the request ran past the time limit of %s (SEGMENT_TIMEOUT); the request is failed and the engine slot is being recovered",
		w.s.eng.Name(), w.index+1, w.s.limit)
	go func() {
		select {
		case w.j.out <- chunk{err: err, timeout: true}:
		case <-w.j.ctx.Done():
		}
	}()
}

// pause stops the clock while audio is handed over; it fails once the
// limit has fired, so the engine stops producing for a failed request.
func (w *watchdog) pause() error {
	if w.s.limit == 0 {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.fired {
		return engine.ErrSegmentTimeout
	}
	w.paused = true
	w.gen++
	w.timer.Stop()
	w.left -= time.Since(w.resumed)
	return nil
}

func (w *watchdog) resume() {
	if w.s.limit == 0 {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paused = false
	if !w.fired && !w.done {
		w.arm()
	}
}

// finish ends the watch when the engine call returned and reports whether
// the limit had fired (the job has been failed already).
func (w *watchdog) finish() bool {
	w.mu.Lock()
	w.done = true
	w.gen++
	if w.timer != nil {
		w.timer.Stop()
	}
	fired := w.fired
	w.mu.Unlock()
	if fired {
		w.s.stuck.Add(-1)
	}
	w.cancel(nil)
	return fired
}

// synthesize calls the engine, turning a panic into that segment's error so
// one bad request cannot take the process down.
func (s *Scheduler) synthesize(ctx context.Context, seg engine.Segment, emit engine.Emit) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("engine %s panicked: %v", s.eng.Name(), r)
		}
	}()
	return s.eng.Synthesize(ctx, seg, emit)
}

// Close stops the workers after their current segments.
func (s *Scheduler) Close() {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.wake.Broadcast()
	s.wg.Wait()
}
