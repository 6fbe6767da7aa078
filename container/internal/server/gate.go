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

// Acquire admits one request and returns the depth including it, or returns
// ok false and the depth that refused it. Every admitted request must Release.
func (g *Gate) Acquire() (depth int, ok bool) {
	for {
		cur := g.depth.Load()
		if g.max > 0 && cur >= g.max {
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

// Release frees an admitted request's place.
func (g *Gate) Release() { g.depth.Add(-1) }

// Depth returns the number of admitted requests now.
func (g *Gate) Depth() int { return int(g.depth.Load()) }

// TakePeak returns the highest depth since the last call and resets it to the
// current depth.
func (g *Gate) TakePeak() int { return int(g.peak.Swap(g.depth.Load())) }

// TakeRejected returns the rejections since the last call and resets the count.
func (g *Gate) TakeRejected() int { return int(g.rejected.Swap(0)) }
