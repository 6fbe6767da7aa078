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
	eng    engine.Engine
	policy string

	mu     sync.Mutex
	wake   *sync.Cond
	first  []task // first segments (fifo: whole jobs) in arrival order
	cont   []task // continuation segments, in the order they became ready
	closed bool
	wg     sync.WaitGroup
	// submitted counts the jobs ever submitted. Admission (the gate) and submission are two steps, so tests
	// that line requests up in a known arrival order wait on this count, not on the gate's depth.
	submitted atomic.Int64
}

// NewScheduler starts workers goroutines running eng under policy.
func NewScheduler(eng engine.Engine, policy string, workers int) (*Scheduler, error) {
	if policy != FirstChunk && policy != FIFO {
		return nil, fmt.Errorf("SCHEDULER=%q: use %s or %s", policy, FirstChunk, FIFO)
	}
	if workers < 1 {
		return nil, fmt.Errorf("ENGINE_WORKERS=%d: use at least 1", workers)
	}
	s := &Scheduler{eng: eng, policy: policy}
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
		if s.runSegment(t) && t.index+1 < len(t.j.segs) {
			s.mu.Lock()
			s.cont = append(s.cont, task{j: t.j, index: t.index + 1})
			s.mu.Unlock()
			s.wake.Signal()
		}
	}
}

// runSegment synthesizes one segment into its job's stream and reports
// whether the job should go on. A job whose client has gone is dropped
// without synthesizing anything more.
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
	err := s.synthesize(j.ctx, seg, func(samples []int16) error {
		if len(samples) == 0 {
			return nil
		}
		return send(chunk{samples: samples})
	})
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
