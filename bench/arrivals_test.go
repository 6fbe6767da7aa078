package bench

import (
	"math"
	"testing"
	"time"
)

// TestPoissonTraceArrivalsFollowTheTrace: the Poisson arrivals of a trace of steps arrive in order, inside the
// trace, at each step's rate (counts within 4 standard deviations of a Poisson count), with exponential gaps
// (the gaps' coefficient of variation near 1, where evenly spaced arrivals have 0), the same for the same seed
// and different for another.
func TestPoissonTraceArrivalsFollowTheTrace(t *testing.T) {
	segs := []Segment{{200 * time.Second, 5}, {100 * time.Second, 0}, {200 * time.Second, 40}}
	bounds := []time.Duration{0, 200 * time.Second, 300 * time.Second, 500 * time.Second}
	counts := make([]int, len(segs))
	var gaps []float64
	prev, n := time.Duration(-1), int64(0)
	for k, off := range PoissonTraceArrivals(segs, 7) {
		if k != n {
			t.Fatalf("arrival index %d, want %d (indices run from 0 without gaps)", k, n)
		}
		n++
		if off < prev || off < 0 || off >= bounds[len(bounds)-1] {
			t.Fatalf("arrival %d at %v: out of order (previous %v) or outside the trace", k, off, prev)
		}
		for i := range segs {
			if off >= bounds[i] && off < bounds[i+1] {
				counts[i]++
				if i == 2 && prev >= bounds[2] {
					gaps = append(gaps, (off - prev).Seconds())
				}
			}
		}
		prev = off
	}
	for i, s := range segs {
		want := s.RPS * s.Duration.Seconds()
		if math.Abs(float64(counts[i])-want) > 4*math.Sqrt(want)+0.5 {
			t.Errorf("segment %d (%g rps for %v): %d arrivals, want %g ± %.0f", i, s.RPS, s.Duration, counts[i], want, 4*math.Sqrt(want))
		}
	}
	var mean, sq float64
	for _, g := range gaps {
		mean += g
	}
	mean /= float64(len(gaps))
	for _, g := range gaps {
		sq += (g - mean) * (g - mean)
	}
	if cv := math.Sqrt(sq/float64(len(gaps))) / mean; cv < 0.9 || cv > 1.1 {
		t.Errorf("gaps at 40 rps: coefficient of variation %.3f, want about 1 (exponential)", cv)
	}
	same, other := 0, 0
	a := collect(PoissonTraceArrivals(segs, 7))
	for i, off := range collect(PoissonTraceArrivals(segs, 7)) {
		if i < len(a) && a[i] == off {
			same++
		}
	}
	b := collect(PoissonTraceArrivals(segs, 8))
	for i := range min(len(a), len(b)) {
		if a[i] == b[i] {
			other++
		}
	}
	if same != len(a) || other > len(a)/100 {
		t.Errorf("seed 7 twice: %d of %d arrivals at the same time (want all); seeds 7 and 8: %d the same (want almost none)", same, len(a), other)
	}
}

// TestShardedPoissonArrivalsCoverEveryArrivalOnce: shards of one Poisson sequence send every arrival once, at
// the unsharded time: n machines replay exactly what one would.
func TestShardedPoissonArrivalsCoverEveryArrivalOnce(t *testing.T) {
	segs := []Segment{{30 * time.Second, 3.3}, {10 * time.Second, 17}}
	all := collect(PoissonTraceArrivals(segs, 3))
	seen := map[int64]int{}
	for i := range 3 {
		for k, off := range ShardArrivals(TraceArrivals(segs, ArrivalsPoisson, 3), i, 3) {
			if seen[k]++; seen[k] > 1 || all[k] != off || int(k%3) != i {
				t.Fatalf("shard %d: arrival %d at %v (unsharded %v, seen %d times)", i, k, off, all[k], seen[k])
			}
		}
	}
	if len(seen) != len(all) {
		t.Fatalf("the shards sent %d arrivals, the trace has %d", len(seen), len(all))
	}
}

func TestParseArrivalProcess(t *testing.T) {
	for _, s := range []string{"poisson", "uniform"} {
		if p, err := ParseArrivalProcess(s); err != nil || string(p) != s {
			t.Errorf("%q: %q, %v", s, p, err)
		}
	}
	if _, err := ParseArrivalProcess("Poisson "); err == nil {
		t.Error(`"Poisson ": accepted`)
	}
}

func collect(seq func(func(int64, time.Duration) bool)) []time.Duration {
	var out []time.Duration
	for _, off := range seq {
		out = append(out, off)
	}
	return out
}

// TestInFlightMaxLow: the quantile of the peaks of 10-s windows sliding by 1 s. Over [0, 30) there are 21
// windows ([0,10) … [20,30)); three requests in flight together at 3–4 s and one alone at 25–26 s: windows
// starting at 0 to 3 hold the peak 3 (4 windows), those starting at 16 to 20 the single request (5 windows), the
// 12 starting at 4 to 15 nothing. So the 10th percentile (rank floor(0.1 × 20) = 2) is 0, the median 0 and the
// 90th percentile (rank 18) 3.
func TestInFlightMaxLow(t *testing.T) {
	at := func(s float64) time.Time { return time.Date(2026, 1, 1, 0, 0, 0, int(s*1e9), time.UTC) }
	recs := []Record{{Sent: at(3), End: at(4)}, {Sent: at(3), End: at(4)}, {Sent: at(3), End: at(4)}, {Sent: at(25), End: at(26)}}
	for _, c := range []struct{ q, want float64 }{{0.1, 0}, {0.5, 0}, {0.8, 1}, {0.9, 3}, {1, 3}} {
		if got := InFlightMaxLow(recs, at(0), at(30), 10*time.Second, c.q); got != c.want {
			t.Errorf("quantile %g: %g, want %g", c.q, got, c.want)
		}
	}
	// Steady load: a request in flight at every moment, two at once for a second every 5 s: every window holds
	// the peak 2, so every quantile is 2.
	var steady []Record
	for s := 0.0; s < 60; s += 5 {
		steady = append(steady, Record{Sent: at(s), End: at(s + 5)}, Record{Sent: at(s + 1), End: at(s + 2)})
	}
	if got := InFlightMaxLow(steady, at(0), at(60), 10*time.Second, AlarmQuantile); got != 2 {
		t.Errorf("steady load: %g, want 2", got)
	}
	if got := InFlightMaxLow(recs, at(0), at(5), 10*time.Second, 0.1); got != 3 {
		t.Errorf("a window shorter than a slice: %g, want its own peak 3", got)
	}
}
