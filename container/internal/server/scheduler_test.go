package server

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/engine"
)

// fakeClock is a settable clock for the deadline policy's decisions.
type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time          { return c.t }
func (c *fakeClock) Advance(d time.Duration) { c.t = c.t.Add(d) }

// idleScheduler is a Scheduler with no worker goroutines, on clock: tests
// drive submit, enqueueCont and next themselves, so every decision is taken
// by the real code on a fake clock.
func idleScheduler(policy string, clock *fakeClock, target time.Duration) *Scheduler {
	s := &Scheduler{eng: &engine.Calibration{}, policy: policy, workers: 1, firstTarget: target, now: clock.Now}
	s.wake = sync.NewCond(&s.mu)
	return s
}

const rate = engine.CalibrationSampleRate

// samples is d of audio at the calibration engine's rate.
func samples(d time.Duration) int64 { return int64(d.Seconds() * rate) }

// streaming is a job whose first audio went out firstSent after admitted
// and that has synthesized played of audio so far.
func streaming(name string, admitted time.Time, firstSent, played time.Duration) *job {
	j := &job{ctx: context.Background(), segs: []string{name + "0", name + "1", name + "2"}, admitted: admitted}
	j.firstSent.Store(int64(firstSent))
	j.audio = samples(played)
	return j
}

func fresh(name string, admitted time.Time) *job {
	return &job{ctx: context.Background(), segs: []string{name + "0", name + "1"}, admitted: admitted}
}

// drain pops everything pending and names each task by its segment text.
func drain(s *Scheduler) []string {
	var got []string
	for len(s.due)+len(s.first)+len(s.cont) > 0 {
		t, ok := s.next()
		if !ok {
			break
		}
		got = append(got, t.j.segs[t.index])
	}
	return got
}

// TestDeadlineOrderMixesNewAndContinuing: new requests are due
// FirstAudioTarget after admission, continuations when their audio runs out
// less the margin (the longest recent compute time); the earliest goes
// first, overdue ones before all, ties in queueing order.
func TestDeadlineOrderMixesNewAndContinuing(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	t0 := clock.t
	s := idleScheduler(Deadline, clock, 300*time.Millisecond)
	s.recordCompute(60 * time.Millisecond)
	s.recordCompute(100 * time.Millisecond) // margin: the max, 100 ms
	s.recordCompute(80 * time.Millisecond)
	if m := s.margin(); m != 100*time.Millisecond {
		t.Fatalf("margin %v, want the longest recent compute time 100ms", m)
	}

	s.submit(fresh("A", t0)) // due t0+300ms
	// C1 started playing at t0-1.8s with 2 s synthesized: runs out at
	// t0+200ms, due at t0+100ms.
	s.enqueueCont(task{j: streaming("C1", t0.Add(-2*time.Second), 200*time.Millisecond, 2*time.Second), index: 0})
	clock.Advance(100 * time.Millisecond)
	s.submit(fresh("B", clock.Now())) // due t0+400ms
	// C2: playing since t0-0.9s, 1.5 s synthesized: due t0+500ms.
	s.enqueueCont(task{j: streaming("C2", t0.Add(-time.Second), 100*time.Millisecond, 1500*time.Millisecond), index: 0})
	// C3: its audio ran out a second ago (playing since t0-4.9s, 4 s
	// synthesized): due t0-1s, overdue.
	s.enqueueCont(task{j: streaming("C3", t0.Add(-5*time.Second), 100*time.Millisecond, 4*time.Second), index: 1})
	clock.Advance(100 * time.Millisecond)
	s.submit(fresh("D", clock.Now())) // due t0+500ms, a tie with C2, queued after it
	// C4 has not been written by the handler yet: its base is when the
	// worker handed out the first audio.
	c4 := &job{ctx: context.Background(), segs: []string{"C40", "C41"}, admitted: t0, firstOut: t0.Add(50 * time.Millisecond), audio: samples(400 * time.Millisecond)}
	s.enqueueCont(task{j: c4, index: 0}) // due t0+50+400-100 = t0+350ms

	got := drain(s)
	want := []string{"C32", "C11", "A0", "C41", "B0", "C21", "D0"}
	if !slices.Equal(got, want) {
		t.Errorf("order %v, want %v", got, want)
	}
}

// TestDeadlineNoStarvation: one slot, 100 ms per segment, and a new
// one-segment request every 100 ms for 30 s: new arrivals alone keep the
// slot busy. Under first-chunk a long request's continuations never run
// while they keep coming; under deadline the long request's segments become
// the earliest in turn and it finishes while the stream goes on, and every
// new request is still served, in arrival order, with a bounded wait.
func TestDeadlineNoStarvation(t *testing.T) {
	const (
		compute  = 100 * time.Millisecond
		every    = 100 * time.Millisecond
		arriving = 30 * time.Second
		longSegs = 10
		segAudio = time.Second
	)
	type result struct {
		longDone  time.Duration // when the long request's last segment ran; 0: not during arrivals
		firstWait time.Duration // the longest wait of a new request's segment, admission to start
		order     []int         // new requests in the order they were served
	}
	simulate := func(policy string) result {
		clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		t0 := clock.t
		s := idleScheduler(policy, clock, 300*time.Millisecond)
		long := &job{ctx: context.Background(), segs: make([]string, longSegs), admitted: t0}
		for i := range long.segs {
			long.segs[i] = "long"
		}
		s.submit(long)
		var r result
		next := t0
		n := 0
		for clock.Now().Sub(t0) < arriving {
			for !next.After(clock.Now()) {
				j := &job{ctx: context.Background(), segs: []string{fmt.Sprint(n)}, admitted: next}
				s.submit(j)
				n++
				next = next.Add(every)
			}
			tk, _ := s.next()
			start := clock.Now()
			clock.Advance(compute)
			s.recordCompute(compute)
			if tk.j == long {
				if tk.index == 0 {
					long.firstOut = clock.Now()
					long.firstSent.Store(int64(clock.Now().Sub(long.admitted)))
				}
				long.audio += samples(segAudio)
				if tk.index+1 < longSegs {
					s.enqueueCont(tk)
				} else if r.longDone == 0 {
					r.longDone = clock.Now().Sub(t0)
				}
				continue
			}
			var id int
			fmt.Sscan(tk.j.segs[0], &id)
			r.order = append(r.order, id)
			r.firstWait = max(r.firstWait, start.Sub(tk.j.admitted))
		}
		return r
	}
	fc := simulate(FirstChunk)
	dl := simulate(Deadline)
	t.Logf("first-chunk: long request done at %v; deadline: long request done at %v, new requests' longest wait %v",
		fc.longDone, dl.longDone, dl.firstWait)
	if fc.longDone != 0 {
		t.Errorf("first-chunk finished the long request at %v: the arrival stream does not saturate the slot, the test proves nothing", fc.longDone)
	}
	// The long request's audio is 10 s from its first byte; with one
	// segment's margin it needs no more than that plus the slack the
	// arrivals' own deadlines take.
	if dl.longDone == 0 || dl.longDone > 12*time.Second {
		t.Errorf("deadline: the long request finished at %v, want within 12 s while new requests keep arriving", dl.longDone)
	}
	if !slices.IsSorted(dl.order) {
		t.Errorf("deadline: new requests served out of arrival order: %v", dl.order)
	}
	if len(dl.order) < int(arriving/every)*8/10 {
		t.Errorf("deadline: only %d new requests served in %v", len(dl.order), arriving)
	}
	// One slot shared by arrivals at its full rate plus the long request:
	// the backlog grows by its 10 segments at most, so no wait passes
	// (10 + target/compute + 1) segment times.
	if dl.firstWait > 1500*time.Millisecond {
		t.Errorf("deadline: a new request waited %v, want at most 1.5 s", dl.firstWait)
	}
}

// TestDueHeapProperty: under random pushes (with many equal deadlines) and
// pops, the heap invariant holds after every operation and every pop
// returns the least (due, seq) pending, checked against a sorted model.
func TestDueHeapProperty(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 17))
		clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		s := idleScheduler(Deadline, clock, 0)
		type key struct {
			due time.Time
			seq uint64
		}
		var model []key
		byKey := func(a, b key) int {
			if c := a.due.Compare(b.due); c != 0 {
				return c
			}
			return int(a.seq) - int(b.seq)
		}
		for op := range 400 {
			if len(model) > 0 && rng.IntN(5) < 2 {
				want := slices.MinFunc(model, byKey)
				got, ok := s.popDue()
				if !ok {
					t.Fatalf("seed %d op %d: pop found nothing, %d pending", seed, op, len(model))
				}
				if got.index != int(want.seq) {
					t.Fatalf("seed %d op %d: popped seq %d, want the least (due, seq) %d", seed, op, got.index, want.seq)
				}
				model = slices.DeleteFunc(model, func(k key) bool { return k == want })
			} else {
				due := clock.t.Add(time.Duration(rng.IntN(20)-5) * time.Millisecond)
				// index carries the sequence number the heap assigns, so a
				// pop can be matched with the model.
				s.pushDue(task{index: int(s.seq + 1)}, due)
				model = append(model, key{due, s.seq})
			}
			for i := 1; i < len(s.due); i++ {
				if s.due.Less(i, (i-1)/2) {
					t.Fatalf("seed %d op %d: heap invariant broken at %d: %v before its parent %v", seed, op, i, s.due[i].due, s.due[(i-1)/2].due)
				}
			}
			if len(s.due) != len(model) {
				t.Fatalf("seed %d op %d: %d pending, model %d", seed, op, len(s.due), len(model))
			}
		}
	}
}

// TestStallMeter follows bench.Stall's definition: lateness against a
// real-time player started at the first audio, the largest one, never
// negative.
func TestStallMeter(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	m := stallMeter{rate: 1000}
	steps := []struct {
		at   time.Duration
		n    int
		want time.Duration
	}{
		{0, 500, 0},                      // first audio: the player starts
		{100 * time.Millisecond, 500, 0}, // needed at 500 ms, early
		{1300 * time.Millisecond, 1000, 300 * time.Millisecond}, // needed at 1 s
		{1500 * time.Millisecond, 100, 300 * time.Millisecond},  // needed at 2 s: early, the worst stays
		{2600 * time.Millisecond, 100, 500 * time.Millisecond},  // needed at 2.1 s
	}
	for i, st := range steps {
		if got := m.add(t0.Add(st.at), st.n); got != st.want {
			t.Errorf("step %d: stall %v, want %v", i, got, st.want)
		}
	}
}

// TestNewSchedulerRefusesBadPolicyAndTarget names the variable and the
// values it takes.
func TestNewSchedulerRefusesBadPolicyAndTarget(t *testing.T) {
	if _, err := NewScheduler(&engine.Calibration{}, "edf", 1, 0, time.Second); err == nil || !containsAll(err.Error(), "SCHEDULER", Deadline, FirstChunk, FIFO) {
		t.Errorf("unknown policy: %v", err)
	}
	if _, err := NewScheduler(&engine.Calibration{}, Deadline, 1, 0, -time.Millisecond); err == nil || !containsAll(err.Error(), "FIRST_AUDIO_TARGET_MS") {
		t.Errorf("negative target: %v", err)
	}
}

func containsAll(s string, subs ...string) bool {
	for _, sub := range subs {
		if !strings.Contains(s, sub) {
			return false
		}
	}
	return true
}
