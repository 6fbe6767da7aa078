package bench

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestArrivalTimesSchedule: arrivals are 1/r apart within a segment (k6's constant-arrival-rate), a zero-rate
// segment sends nothing, and a fractional count carries over a boundary instead of rounding per segment.
func TestArrivalTimesSchedule(t *testing.T) {
	segs := []Segment{{2 * time.Second, 2}, {time.Second, 0}, {4 * time.Second, 0.5}, {time.Second, 3}}
	var got []time.Duration
	var idx []int64
	for k, off := range ArrivalTimes(segs) {
		idx = append(idx, k)
		got = append(got, off)
	}
	ms := time.Millisecond
	// Λ: 0..4 over [0,2); 4 over [2,3); 4..6 over [3,7); 6..9 over [7,8).
	want := []time.Duration{0, 500 * ms, 1000 * ms, 1500 * ms, 3000 * ms, 5000 * ms, 7000 * ms, 7333 * ms, 7666 * ms}
	if len(got) != len(want) {
		t.Fatalf("arrivals %v, want %v", got, want)
	}
	for i := range want {
		if d := got[i] - want[i]; d < -ms || d > ms || idx[i] != int64(i) {
			t.Errorf("arrival %d: #%d at %v, want #%d at %v", i, idx[i], got[i], i, want[i])
		}
	}
	// Half a request per 1-s segment for 10 segments is 5 requests, 2 s apart: not one per segment.
	var half []Segment
	for range 10 {
		half = append(half, Segment{time.Second, 0.5})
	}
	n := 0
	for _, off := range ArrivalTimes(half) {
		if want := time.Duration(n) * 2 * time.Second; off < want-ms || off > want+ms {
			t.Errorf("0.5 rps arrival %d at %v, want %v", n, off, want)
		}
		n++
	}
	if n != 5 {
		t.Errorf("0.5 rps over 10 s: %d arrivals, want 5", n)
	}
}

// TestShardArrivalsCoverEveryArrivalOnce: for random traces and shard counts, the shards together yield every
// arrival of the unsharded trace exactly once, at the same time.
func TestShardArrivalsCoverEveryArrivalOnce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 50 {
		var segs []Segment
		for range 1 + rng.IntN(6) {
			segs = append(segs, Segment{time.Duration(1+rng.IntN(5000)) * time.Millisecond, float64(rng.IntN(400)) / 7})
		}
		all := map[int64]time.Duration{}
		for k, off := range ArrivalTimes(segs) {
			all[k] = off
		}
		n := 1 + rng.IntN(7)
		seen := map[int64]int{}
		for i := range n {
			for k, off := range ShardArrivals(ArrivalTimes(segs), i, n) {
				if int(k%int64(n)) != i {
					t.Fatalf("trial %d: arrival %d went to shard %d of %d, want %d", trial, k, i, n, k%int64(n))
				}
				if seen[k]++; seen[k] > 1 {
					t.Fatalf("trial %d: arrival %d sent by two shards", trial, k)
				}
				if all[k] != off {
					t.Fatalf("trial %d: arrival %d at %v on shard %d, %v unsharded", trial, k, off, i, all[k])
				}
			}
		}
		if len(seen) != len(all) {
			t.Fatalf("trial %d: the %d shards sent %d arrivals, the trace has %d", trial, n, len(seen), len(all))
		}
	}
}

// slowServer answers every request with a short WAV after delay and tracks the most requests it ever held at
// once.
func slowServer(t *testing.T, delay time.Duration) (srv *httptest.Server, served, peak *atomic.Int64) {
	served, peak = new(atomic.Int64), new(atomic.Int64)
	var cur atomic.Int64
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served.Add(1)
		n := cur.Add(1)
		defer cur.Add(-1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(delay)
		w.Header().Set("X-Sample-Rate", "24000")
		w.Write(append(wavHeader(24000), make([]byte, 4800)...))
	}))
	t.Cleanup(srv.Close)
	return srv, served, peak
}

func openConfig(tr Transport, segs []Segment, workers int) OpenLoopConfig {
	return OpenLoopConfig{Segments: segs, MaxWorkers: workers, RequestTimeout: 2 * time.Second, Transport: tr,
		Corpus: DefaultCorpus(), RunID: "open-test", Trace: "sha256:test"}
}

// TestRunOpenLoopDropsWithoutQueueing: against a server slower than the arrivals, a pool of 2 workers sends
// at most 2 requests at once, every other arrival is dropped and recorded at its scheduled time, and every
// sent request left at its scheduled time (nothing waited on the client for a worker).
func TestRunOpenLoopDropsWithoutQueueing(t *testing.T) {
	srv, served, peak := slowServer(t, 300*time.Millisecond)
	var out bytes.Buffer
	cfg := openConfig(NewHTTP(srv.URL), []Segment{{time.Second, 20}}, 2)
	cfg.Records = &out
	res, err := RunOpenLoop(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if res.Scheduled != 20 || res.Sent+res.Dropped != 20 {
		t.Fatalf("scheduled %d, sent %d, dropped %d: want 20 arrivals, each sent or dropped", res.Scheduled, res.Sent, res.Dropped)
	}
	// 2 workers, 300 ms each, over 1 s: about 8 sends (a worker frees at 0.3, 0.6, 0.9 s); a client-side queue
	// would have sent all 20.
	if res.Sent > 10 || res.Sent < 4 || res.Dropped < 10 {
		t.Errorf("sent %d, dropped %d: want about 8 sent and 12 dropped", res.Sent, res.Dropped)
	}
	if served.Load() != res.Sent || peak.Load() > 2 {
		t.Errorf("the server saw %d requests, at most %d at once; the client sent %d with 2 workers", served.Load(), peak.Load(), res.Sent)
	}
	if res.OK != res.Sent {
		t.Errorf("%d of %d sent requests succeeded", res.OK, res.Sent)
	}
	recs, err := ReadRecords(&out)
	if err != nil {
		t.Fatal(err)
	}
	var idx []int64
	for _, r := range recs {
		idx = append(idx, r.Arrival.Index)
		if lag := r.Sent.Sub(r.Arrival.Scheduled); lag < 0 || lag > 150*time.Millisecond {
			t.Errorf("arrival %d (%s) left %v after its scheduled time: it waited on the client", r.Arrival.Index, r.Class, lag)
		}
		if r.Class == ClassDropped && (r.Worker != -1 || r.Status != 0) {
			t.Errorf("dropped arrival %d: worker %d, status %d", r.Arrival.Index, r.Worker, r.Status)
		}
	}
	slices.Sort(idx)
	for i, k := range idx {
		if k != int64(i) {
			t.Fatalf("record arrivals %v: want 0..19 once each", idx)
		}
	}
	s, err := SummarizeOpenLoop(recs, 500*time.Millisecond, 250*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if s.Scheduled != 20 || int64(s.Dropped) != res.Dropped || int64(s.OK) != res.OK || len(s.Buckets) != 2 ||
		s.Buckets[0].Scheduled != 10 || s.Buckets[0].OfferedRPS != 20 || s.SLOViolationBuckets != 2 {
		t.Errorf("summary %+v: want 20 arrivals in two 500-ms buckets of 10 at 20 rps, the run's counts, both buckets violating", s)
	}
	if s.TTFABP95Ms < 290 {
		t.Errorf("p95 TTFAB %.1f ms, want at least the server's 300 ms", s.TTFABP95Ms)
	}
}

// TestRunOpenLoopKeepsTheSchedule: every arrival is sent at its time (never before it), whatever the response
// time, and the texts depend on the arrival alone (a shard sends what the unsharded run would).
//
// "Whatever the response time" is built, not timed: the server holds every answer until all of a run's 30
// arrivals have reached it, so a runner that waited on an answer before its next send would never get there
// (the test's hang bound would end it). Each run has a worker for every arrival, so none is dropped however
// slowly the machine runs; how late a send may come is the machine's, not the runner's, and is not asserted.
func TestRunOpenLoopKeepsTheSchedule(t *testing.T) {
	const arrivals = 30 // 10 at 20 rps, then 20 at 40 rps
	var (
		mu      sync.Mutex
		texts   = map[string]int{}
		arrived int
		all     = make(chan struct{})
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var b bytes.Buffer
		b.ReadFrom(r.Body)
		mu.Lock()
		texts[b.String()]++
		if arrived++; arrived == arrivals {
			close(all)
		}
		release := all
		mu.Unlock()
		select {
		case <-release:
		case <-time.After(openLoopHangBound):
		}
		w.Write(append(wavHeader(24000), make([]byte, 480)...))
	}))
	t.Cleanup(srv.Close)
	// reset starts a new run: the server counts its arrivals from zero.
	reset := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		got := texts
		texts, arrived, all = map[string]int{}, 0, make(chan struct{})
		return got
	}
	config := func() OpenLoopConfig {
		cfg := openConfig(NewHTTP(srv.URL), []Segment{{500 * time.Millisecond, 20}, {500 * time.Millisecond, 40}}, arrivals)
		cfg.RequestTimeout = openLoopHangBound
		return cfg
	}
	segs := config().Segments
	start := time.Now().Add(200 * time.Millisecond)
	var recs []Record
	var mr sync.Mutex
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cfg := config()
			cfg.Shard, cfg.Shards, cfg.Start = i, 2, start
			cfg.OnRecord = func(r Record) { mr.Lock(); recs = append(recs, r); mr.Unlock() }
			if res, err := RunOpenLoop(context.Background(), cfg); err != nil || res.Dropped != 0 || res.OK != arrivals/2 {
				t.Errorf("shard %d: %+v, %v: want its %d arrivals sent and answered", i, res, err, arrivals/2)
			}
		}()
	}
	wg.Wait()
	if len(recs) != arrivals {
		t.Fatalf("%d records, want %d (10 at 20 rps, 20 at 40 rps)", len(recs), arrivals)
	}
	for _, r := range recs {
		want := start.Round(0).UTC()
		for k, off := range ArrivalTimes(segs) {
			if k == r.Arrival.Index {
				want = want.Add(off)
			}
		}
		if !r.Arrival.Scheduled.Equal(want) || r.Arrival.Shard != int(r.Arrival.Index%2) || r.Arrival.Shards != 2 || r.Arrival.Trace != "sha256:test" {
			t.Errorf("arrival %d: scheduled %v on shard %d/%d, want %v on %d/2", r.Arrival.Index, r.Arrival.Scheduled, r.Arrival.Shard, r.Arrival.Shards, want, r.Arrival.Index%2)
		}
		if r.Sent.Before(r.Arrival.Scheduled) {
			t.Errorf("arrival %d sent %v before its time", r.Arrival.Index, r.Arrival.Scheduled.Sub(r.Sent))
		}
	}
	// The same texts as one unsharded run with the same seed.
	got := reset()
	if res, err := RunOpenLoop(context.Background(), config()); err != nil || res.Dropped != 0 || res.OK != arrivals {
		t.Fatalf("the unsharded run: %+v, %v: want its %d arrivals sent and answered", res, err, arrivals)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, v := range texts {
		if got[k] != v {
			t.Errorf("text %.30q: %d times unsharded, %d times over the shards", k, v, got[k])
		}
	}
}

// openLoopHangBound bounds a wait that only a hang reaches (an answer held for arrivals that never come).
const openLoopHangBound = time.Minute

// TestRunOpenLoopValidateAndCancel: a bad configuration names every problem; a canceled run stops starting
// arrivals and returns the context's error within the request timeout.
func TestRunOpenLoopValidateAndCancel(t *testing.T) {
	_, err := RunOpenLoop(context.Background(), OpenLoopConfig{Segments: []Segment{{0, -1}}, Shard: 3, Shards: 2, Start: time.Now().Add(-time.Hour)})
	for _, want := range []string{"segments[0]: duration", "segments[0]: rate -1", "shard: is 3 of 2", "max workers", "request timeout", "start:", "transport", "corpus"} {
		if err == nil || !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v: want ErrConfig naming %q", err, want)
		}
	}
	srv, _, _ := slowServer(t, 200*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	begin := time.Now()
	res, err := RunOpenLoop(ctx, openConfig(NewHTTP(srv.URL), []Segment{{time.Minute, 10}}, 4))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(begin) > 2*time.Second || res.Scheduled > 5 {
		t.Errorf("canceled run: %+v, %v after %v: want the context's error within a second, few arrivals", res, err, time.Since(begin))
	}
}
