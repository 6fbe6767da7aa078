// Package server is the container's HTTP side: the SageMaker contract
// (/ping, /invocations), the queue gate, the segment scheduler, streaming
// audio responses and the request logs and metrics.
package server

import "sync/atomic"

// Gate admits at most Max requests at once (waiting plus running); Max 0
// admits everything. Admission is one compare-and-swap on the depth, so it is
// exact under any concurrency: with depth N and N+k arrivals, exactly k are
// turned away.
type Gate struct {
	max      int64
	depth    atomic.Int64
	peak     atomic.Int64
	rejected atomic.Int64
}

// NewGate returns a gate for max requests (0 = unbounded).
func NewGate(max int) *Gate { return &Gate{max: int64(max)} }

// Max returns the configured depth, 0 meaning unbounded.
func (g *Gate) Max() int { return int(g.max) }

// Acquire admits one request within the configured depth and returns the
// depth including it, or returns ok false and the depth that refused it.
// Every admitted request must Release.
func (g *Gate) Acquire() (depth int, ok bool) { return g.AcquireWithin(0) }

// AcquireWithin is Acquire with a request's own limit: the request is
// admitted only while fewer than limit requests (and fewer than the
// configured depth, when there is one) are admitted. limit 0 is the
// configured depth alone. A request can tighten the shield for itself, never
// widen it: this is how a measurement on an endpoint in measurement
// configuration (depth 0) sheds as the deployed shield would (the request's
// custom attribute queue-max-depth, ShieldAttribute).
func (g *Gate) AcquireWithin(limit int) (depth int, ok bool) {
	max := g.effective(limit)
	for {
		cur := g.depth.Load()
		if max > 0 && cur >= max {
			g.rejected.Add(1)
			return int(cur), false
		}
		if g.depth.CompareAndSwap(cur, cur+1) {
			for {
				p := g.peak.Load()
				if cur+1 <= p || g.peak.CompareAndSwap(p, cur+1) {
					break
				}
			}
			return int(cur + 1), true
		}
	}
}

// Within is the depth a request with limit is admitted within (0: unbounded).
func (g *Gate) Within(limit int) int { return int(g.effective(limit)) }

func (g *Gate) effective(limit int) int64 {
	if limit > 0 && (g.max == 0 || int64(limit) < g.max) {
		return int64(limit)
	}
	return g.max
}

// Release frees an admitted request's place.
func (g *Gate) Release() { g.depth.Add(-1) }

// Depth returns the number of admitted requests now.
func (g *Gate) Depth() int { return int(g.depth.Load()) }

// TakePeak returns the highest depth since the last call and resets it to the
// current depth.
func (g *Gate) TakePeak() int { return int(g.peak.Swap(g.depth.Load())) }

// TakeRejected returns the rejections since the last call and resets the count.
func (g *Gate) TakeRejected() int { return int(g.rejected.Swap(0)) }
