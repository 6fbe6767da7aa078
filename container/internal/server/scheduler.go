package server

import (
	"container/heap"
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
	// FIFO runs whole requests in arrival order: the behaviour of the
	// original's server (docs/design.md, "The original"), kept as the
	// baseline.
	FIFO = "fifo"
	// Deadline runs the pending segment whose audio is due first: a new
	// request's first segment is due FirstAudioTarget after admission, a
	// continuation when a real-time player started at the request's first
	// audio byte would reach it, less one segment's measured compute time.
	Deadline = "deadline"
)

// Policies lists the SCHEDULER values, for messages.
const Policies = FirstChunk + ", " + FIFO + " or " + Deadline

// DefaultFirstAudioTarget is the deadline scheduler's first-audio target
// when FIRST_AUDIO_TARGET_MS is unset: a third of a 1 s TTFAB SLO (the
// smallest in the model catalog). The endpoint stack passes a third of the
// model's own SLO.
const DefaultFirstAudioTarget = 333 * time.Millisecond

// marginWindow is how many recent segment compute times the deadline
// scheduler's safety margin is the maximum of.
const marginWindow = 16

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
	// st takes the job's audio as it is synthesized; pushing never waits
	// for the reader (see streamBuffers).
	st *stream
	// started is when the first segment began; written by the worker before
	// it sends the first chunk, read by the handler after receiving one.
	started time.Time
	// admitted is when the gate admitted the request (set before submit).
	admitted time.Time
	// firstSent is when the handler wrote the first audio, as nanoseconds
	// after admitted (0: not yet); firstOut is when the worker handed the
	// first audio to the stream, the fallback while the handler has not
	// written it yet.
	firstSent atomic.Int64
	firstOut  time.Time
	// synthDone is closed (through finishSynthesis) once the last segment
	// has been synthesized: from then on the request only drains to its
	// client and gives its place in the queue gate back.
	synthDone chan struct{}
	synthOnce sync.Once
	// audio counts the samples of the segments synthesized so far; written
	// by the worker of the job's current segment only (a job has one segment
	// in flight at a time).
	audio int64
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
	// limit is the engine time a segment may take; 0 is no limit.
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

	// The deadline policy's state, under mu.
	firstTarget time.Duration
	now         func() time.Time
	due         dueHeap
	seq         uint64
	compute     [marginWindow]time.Duration
	computeN    int
}

// NewScheduler starts workers goroutines running eng under policy. A segment
// whose engine time passes limit (0: no limit) fails its request; see
// runSegment.
func NewScheduler(eng engine.Engine, policy string, workers int, limit, firstTarget time.Duration) (*Scheduler, error) {
	if policy != FirstChunk && policy != FIFO && policy != Deadline {
		return nil, fmt.Errorf("SCHEDULER=%q: use %s", policy, Policies)
	}
	if firstTarget < 0 {
		return nil, fmt.Errorf("FIRST_AUDIO_TARGET_MS=%d: use 0 or more milliseconds", firstTarget.Milliseconds())
	}
	if workers < 1 {
		return nil, fmt.Errorf("ENGINE_WORKERS=%d: use at least 1", workers)
	}
	if limit < 0 {
		return nil, fmt.Errorf("SEGMENT_TIMEOUT=%s: use a positive duration", limit)
	}
	s := &Scheduler{eng: eng, policy: policy, workers: workers, limit: limit, firstTarget: firstTarget, now: time.Now}
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
	if s.policy == Deadline {
		if j.admitted.IsZero() {
			j.admitted = s.now()
		}
		s.pushDue(task{j: j}, s.firstDeadline(j))
	} else {
		s.first = append(s.first, task{j: j})
	}
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
		if t, ok := s.popDue(); ok {
			return t, true
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
		if s.runSegment(t) {
			s.enqueueCont(t)
		}
	}
}

// enqueueCont queues the segment after t's.
func (s *Scheduler) enqueueCont(t task) {
	s.mu.Lock()
	next := task{j: t.j, index: t.index + 1}
	if s.policy == Deadline {
		s.pushDue(next, s.contDeadline(t.j))
	} else {
		s.cont = append(s.cont, next)
	}
	s.mu.Unlock()
	s.wake.Signal()
}

// runSegment synthesizes one segment into its job's stream and reports
// whether the job should go on. The slot never waits for the job's reader:
// the audio goes to the stream's buffer at once (streamBuffers bounds it),
// so a client that reads slowly or not at all holds a slot only for the
// engine time of its segments, and its request is synthesized to the end
// at the engine's pace. A job whose client has gone (or whose stream was
// cut) is dropped without synthesizing anything more. A segment that runs
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
	seg := engine.Segment{Text: j.segs[t.index], Voice: j.voice, Speed: j.speed}
	wd := s.watch(j, t.index)
	began := time.Now()
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
		j.audio += int64(len(samples))
		if j.firstOut.IsZero() {
			j.firstOut = time.Now()
		}
		return j.st.push(chunk{samples: samples})
	})
	if wd.finish() {
		return false
	}
	if s.policy == Deadline && err == nil {
		// The emit callback never waits, so the call's wall time is the
		// segment's compute time.
		s.recordCompute(time.Since(began))
	}
	if err != nil {
		if j.ctx.Err() == nil {
			j.st.push(chunk{err: err})
		}
		return false
	}
	if t.index+1 == len(j.segs) {
		j.finishSynthesis()
		j.st.push(chunk{end: true})
		return false
	}
	return true
}

// finishSynthesis marks the job's synthesis complete (at most once).
func (j *job) finishSynthesis() {
	if j.synthDone != nil {
		j.synthOnce.Do(func() { close(j.synthDone) })
	}
}

// dueTask is a pending segment of the deadline policy: due is when its
// audio is needed, seq the order it was queued in (ties go to the earlier).
type dueTask struct {
	t   task
	due time.Time
	seq uint64
}

// dueHeap is a min-heap of pending segments by (due, seq), for
// container/heap: every push and pop is O(log n).
type dueHeap []dueTask

func (h dueHeap) Len() int { return len(h) }
func (h dueHeap) Less(a, b int) bool {
	if !h[a].due.Equal(h[b].due) {
		return h[a].due.Before(h[b].due)
	}
	return h[a].seq < h[b].seq
}
func (h dueHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }

// Push implements heap.Interface.
func (h *dueHeap) Push(x any) { *h = append(*h, x.(dueTask)) }

// Pop implements heap.Interface.
func (h *dueHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = dueTask{} // let a finished job be collected
	*h = old[:len(old)-1]
	return x
}

// pushDue queues t due at due. Callers hold mu.
func (s *Scheduler) pushDue(t task, due time.Time) {
	s.seq++
	heap.Push(&s.due, dueTask{t: t, due: due, seq: s.seq})
}

// popDue takes the pending segment due first, if any. Callers hold mu.
//
// Why this cannot starve anything: a new request's first segment is due
// FirstAudioTarget after its admission, so once the clock passes
// d - FirstAudioTarget every new arrival is due after d; what is due before
// d is then a finite set (segments of requests already admitted), each
// taken before d's, so d's segment is taken after finitely many others.
// Overdue segments follow the same order: the most overdue first.
func (s *Scheduler) popDue() (task, bool) {
	if len(s.due) == 0 {
		return task{}, false
	}
	return heap.Pop(&s.due).(dueTask).t, true
}

// firstDeadline is when j's first audio is due: admission plus the
// first-audio target.
func (s *Scheduler) firstDeadline(j *job) time.Time { return j.admitted.Add(s.firstTarget) }

// contDeadline is when the segment after those j has synthesized is due: a
// real-time player started at j's first audio byte reaches it after the
// audio of every earlier segment; it is due one segment's compute time
// (the margin) before that, so that it is ready in time. Callers hold mu.
func (s *Scheduler) contDeadline(j *job) time.Time {
	base := j.firstOut
	if off := j.firstSent.Load(); off > 0 {
		base = j.admitted.Add(time.Duration(off))
	}
	played := time.Duration(float64(j.audio) / float64(s.eng.SampleRate()) * float64(time.Second))
	return base.Add(played - s.margin())
}

// recordCompute adds one segment's compute time to the margin's window.
func (s *Scheduler) recordCompute(d time.Duration) {
	s.mu.Lock()
	s.compute[s.computeN%marginWindow] = d
	s.computeN++
	s.mu.Unlock()
}

// margin is the deadline policy's safety margin: the longest of the last
// marginWindow segment compute times (0 before any). The maximum rather
// than a mean, so that one slow segment in the window still leaves time.
// Callers hold mu.
func (s *Scheduler) margin() time.Duration {
	var m time.Duration
	for _, d := range s.compute[:min(s.computeN, marginWindow)] {
		m = max(m, d)
	}
	return m
}

// Stuck returns how many slots are in an engine call that ran past the
// segment time limit.
func (s *Scheduler) Stuck() int { return int(s.stuck.Load()) }

// Workers returns the number of synthesis slots.
func (s *Scheduler) Workers() int { return s.workers }

// watchdog bounds one segment's engine time. Its clock runs while the engine
// computes and stops while the engine's audio is handed to the job's stream
// (which never waits for the client: a slow reader is the stream buffer's
// and the write deadlines' business, not the engine's).
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
	w.j.st.push(chunk{err: err, timeout: true})
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
