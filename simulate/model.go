package simulate

import (
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/speech-infra/speech-infra/capacity"
)

// CurvePoint is one measured closed-loop step of one instance: at Concurrency requests in flight it completed
// RPS requests per second with mean full-response time ResponseS and TTFAB percentile TTFABMs.
type CurvePoint struct {
	Concurrency float64 `json:"concurrency"`
	RPS         float64 `json:"rps"`
	ResponseS   float64 `json:"response_s"`
	TTFABMs     float64 `json:"ttfab_ms"`
}

// Instance is the behaviour of one instance, from measurement: the closed-loop curve, the queue shield and
// the delay before an added instance serves.
type Instance struct {
	// Curve is sorted by concurrency; at least one point.
	Curve []CurvePoint
	// QueueMaxDepth is the container's shield: at most this many requests waiting and running, more are 503.
	QueueMaxDepth int
	// TTotalS is the delay from asking for one more instance until it serves (ttotal's t_total_s).
	TTotalS float64
	// TTFABMeasured is false when the TTFAB column is assumed (a what-if plan has no staircase): then
	// TTFABMs rises linearly to the SLO at Q_max.
	TTFABMeasured bool
	// satC and satRPS are the concurrency (≤ QueueMaxDepth) of the highest throughput and that throughput.
	satC, satRPS float64
}

// InstanceFromQMax builds the instance model from a qmax artifact's usable steps (throughput, mean response
// time and TTFAB at the SLO's percentile) with the shield depth and T_total of a plan.
func InstanceFromQMax(q *capacity.QMax, queueMaxDepth int, tTotalS float64) (Instance, error) {
	var pts []CurvePoint
	for _, s := range q.Steps {
		if !s.Usable || s.OKCount == 0 {
			continue
		}
		x := s.Throughput()
		ttfab := s.TTFABP95Ms
		switch q.SLOPercentile {
		case 50:
			ttfab = s.TTFABP50Ms
		case 99:
			ttfab = s.TTFABP99Ms
		}
		if !(x > 0) {
			continue
		}
		r := float64(s.Concurrency) / x
		if s.ResponseMeanMs > 0 {
			r = s.ResponseMeanMs / 1000
		}
		pts = append(pts, CurvePoint{Concurrency: float64(s.Concurrency), RPS: x, ResponseS: r, TTFABMs: ttfab})
	}
	if len(pts) == 0 {
		return Instance{}, fmt.Errorf("the qmax artifact of %s has no usable step that completed requests: re-run tts-bench qmax", q.Model)
	}
	return newInstance(pts, queueMaxDepth, tTotalS, true)
}

// InstanceFromPlan builds the instance model from a plan alone (a what-if plan): the plan's throughput curve,
// response time by Little's law (C ÷ throughput), and an assumed TTFAB that rises linearly with concurrency to
// the SLO at Q_max (what Q_max means at most) and by the queue wait beyond.
func InstanceFromPlan(p *capacity.Plan) (Instance, error) {
	in := p.Inputs
	var pts []CurvePoint
	slo, q := float64(p.Fingerprint.SLOTTFABMs), float64(in.QMax)
	for _, t := range in.Throughput {
		pts = append(pts, CurvePoint{Concurrency: t.Concurrency, RPS: t.RPS, ResponseS: t.Concurrency / t.RPS, TTFABMs: slo * t.Concurrency / q})
	}
	if len(pts) == 0 {
		return Instance{}, errors.New("the plan has no throughput curve")
	}
	return newInstance(pts, in.QueueMaxDepth, in.TTotalS, false)
}

func newInstance(pts []CurvePoint, depth int, tTotalS float64, measured bool) (Instance, error) {
	sort.Slice(pts, func(i, j int) bool { return pts[i].Concurrency < pts[j].Concurrency })
	for i, p := range pts {
		if !(p.Concurrency > 0) || !(p.RPS > 0) || !(p.ResponseS > 0) || math.IsInf(p.RPS, 0) || math.IsNaN(p.TTFABMs) {
			return Instance{}, fmt.Errorf("curve point %d (concurrency %g, %g rps, response %g s): want positive finite numbers", i, p.Concurrency, p.RPS, p.ResponseS)
		}
		if i > 0 && p.Concurrency == pts[i-1].Concurrency {
			return Instance{}, fmt.Errorf("curve has concurrency %g twice", p.Concurrency)
		}
	}
	if depth < 1 {
		return Instance{}, fmt.Errorf("queue_max_depth %d: want at least 1", depth)
	}
	if !(tTotalS > 0) {
		return Instance{}, fmt.Errorf("t_total_s %g: want a positive number of seconds", tTotalS)
	}
	m := Instance{Curve: pts, QueueMaxDepth: depth, TTotalS: tTotalS, TTFABMeasured: measured}
	// X(C) = C ÷ R(C) is monotone on each linear piece of R, so its maximum on (0, depth] lies at a measured
	// point or at the depth.
	d := float64(depth)
	for _, c := range append(m.concurrencies(), d) {
		if c > d {
			continue
		}
		if x := m.Throughput(c); x > m.satRPS+1e-12 {
			m.satC, m.satRPS = c, x
		}
	}
	return m, nil
}

func (m Instance) concurrencies() []float64 {
	out := make([]float64, len(m.Curve))
	for i, p := range m.Curve {
		out[i] = p.Concurrency
	}
	return out
}

// ResponseS is the mean full-response time at concurrency c, interpolated linearly between measured points:
// the first point's below it, and beyond the last the time that keeps the last throughput (a saturated
// server completes no more than it was measured to: R = C ÷ X_last).
func (m Instance) ResponseS(c float64) float64 {
	first, last := m.Curve[0], m.Curve[len(m.Curve)-1]
	switch {
	case c <= first.Concurrency:
		return first.ResponseS
	case c >= last.Concurrency:
		return c / last.RPS
	}
	i := sort.Search(len(m.Curve), func(i int) bool { return m.Curve[i].Concurrency >= c })
	a, b := m.Curve[i-1], m.Curve[i]
	return a.ResponseS + (b.ResponseS-a.ResponseS)*(c-a.Concurrency)/(b.Concurrency-a.Concurrency)
}

// Throughput is the completed-request rate at concurrency c: c ÷ ResponseS(c) (Little's law).
func (m Instance) Throughput(c float64) float64 {
	if c <= 0 {
		return 0
	}
	return c / m.ResponseS(c)
}

// MaxThroughput is the highest rate one instance completes with at most QueueMaxDepth requests in it, and
// the concurrency where it does.
func (m Instance) MaxThroughput() (rps, concurrency float64) { return m.satRPS, m.satC }

// Concurrency solves Little's law at an offered rate per instance: the smallest c with c = rps·R(c) on the
// interpolated curve, within the queue depth. ok is false when no such c exists: the instance cannot keep up
// and its queue grows.
func (m Instance) Concurrency(rps float64) (c float64, ok bool) {
	if rps <= 0 {
		return 0, true
	}
	d := float64(m.QueueMaxDepth)
	first := m.Curve[0]
	// Below the first point R is constant.
	if c := rps * first.ResponseS; c <= first.Concurrency {
		return c, c <= d
	}
	// On each linear piece R(c) = Ra + s·(c − Ca): c = rps·(Ra − s·Ca) ÷ (1 − rps·s).
	for i := 1; i < len(m.Curve); i++ {
		a, b := m.Curve[i-1], m.Curve[i]
		if a.Concurrency > d {
			break
		}
		s := (b.ResponseS - a.ResponseS) / (b.Concurrency - a.Concurrency)
		den := 1 - rps*s
		if den == 0 {
			continue
		}
		c := rps * (a.ResponseS - s*a.Concurrency) / den
		if c >= a.Concurrency-1e-9 && c <= b.Concurrency+1e-9 {
			c = math.Max(a.Concurrency, math.Min(c, b.Concurrency))
			return c, c <= d
		}
	}
	// Beyond the last point the throughput is flat: a fixed point only at exactly that rate.
	return 0, false
}

// TTFABMs is the estimated TTFAB percentile at concurrency c: interpolated between measured points, the
// first point's below it, and beyond the last the last point's plus the wait for the extra requests ahead
// ((c − C_last) ÷ X_last).
func (m Instance) TTFABMs(c float64) float64 {
	first, last := m.Curve[0], m.Curve[len(m.Curve)-1]
	switch {
	case c <= first.Concurrency:
		if !m.TTFABMeasured {
			return first.TTFABMs * math.Max(c, 1) / first.Concurrency
		}
		return first.TTFABMs
	case c >= last.Concurrency:
		return last.TTFABMs + 1000*(c-last.Concurrency)/last.RPS
	}
	i := sort.Search(len(m.Curve), func(i int) bool { return m.Curve[i].Concurrency >= c })
	a, b := m.Curve[i-1], m.Curve[i]
	return a.TTFABMs + (b.TTFABMs-a.TTFABMs)*(c-a.Concurrency)/(b.Concurrency-a.Concurrency)
}
