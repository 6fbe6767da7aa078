package bench

import (
	"fmt"
	"iter"
	"math/rand/v2"
	"time"
)

// ArrivalProcess is how an open-loop trace's arrivals are spaced in time.
type ArrivalProcess string

// The arrival processes.
const (
	// ArrivalsPoisson sends the arrivals of a Poisson process whose rate follows the trace (independent users):
	// the process the instance model was measured under (qmax's rate staircase) and the one the plan assumes
	// (docs/design.md, "One instance model"). The default of tts-bench replay.
	ArrivalsPoisson ArrivalProcess = "poisson"
	// ArrivalsUniform sends arrivals evenly spaced, 1/r apart (k6's constant-arrival-rate executor): a
	// smoother load than real traffic, so an instance's queue and the scaling metric stay lower than the plan
	// assumes at the same rate.
	ArrivalsUniform ArrivalProcess = "uniform"
)

// ParseArrivalProcess reads "poisson" or "uniform".
func ParseArrivalProcess(s string) (ArrivalProcess, error) {
	switch p := ArrivalProcess(s); p {
	case ArrivalsPoisson, ArrivalsUniform:
		return p, nil
	}
	return "", fmt.Errorf("arrival process %q: want poisson (independent arrivals, what the plan assumes) or uniform (evenly spaced)", s)
}

// poissonStream is the generator stream of the Poisson arrivals; a record's text uses the stream of its arrival
// index (0 up), so the two never share draws.
const poissonStream = 1<<63 + 0x706f6973

// PoissonTraceArrivals yields the arrivals of a Poisson process whose rate follows the segments (a
// non-homogeneous Poisson process), as (index from 0, offset from the start), in order.
//
// It inverts the cumulative rate Λ(t) = ∫₀ᵗ rps, as ArrivalTimes does, at the points of a unit-rate Poisson
// process (sums of exponential draws of mean 1 from a generator seeded with seed) instead of at the integers:
// arrival k is at Λ⁻¹(E₁ + … + E_{k+1}). The sequence depends on the segments and the seed only, so shards that
// share them split one sequence (ShardArrivals) and together send exactly what one run would.
func PoissonTraceArrivals(segs []Segment, seed uint64) iter.Seq2[int64, time.Duration] {
	return func(yield func(int64, time.Duration) bool) {
		rng := rand.New(rand.NewPCG(seed, poissonStream))
		next := rng.ExpFloat64() // Λ of the next arrival
		var start time.Duration
		cum := 0.0 // Λ at the segment's start
		var k int64
		for _, s := range segs {
			end := cum + s.RPS*s.Duration.Seconds()
			if s.RPS > 0 {
				for ; next < end; k++ {
					off := start + time.Duration((next-cum)/s.RPS*float64(time.Second))
					off = min(max(off, start), start+s.Duration-1)
					if !yield(k, off) {
						return
					}
					next += rng.ExpFloat64()
				}
			}
			start += s.Duration
			cum = end
		}
	}
}

// TraceArrivals yields the arrivals of the segments under process p (seeded with seed when it is random).
func TraceArrivals(segs []Segment, p ArrivalProcess, seed uint64) iter.Seq2[int64, time.Duration] {
	if p == ArrivalsPoisson {
		return PoissonTraceArrivals(segs, seed)
	}
	return ArrivalTimes(segs)
}
