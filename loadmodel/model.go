// Package loadmodel is the one model of an instance under load (docs/design.md, "One instance model"): for an
// offered request rate per instance it gives the scaling metric's value as the alarm sees it, the time-averaged
// requests in flight, p95 TTFAB, p95 stall and the share of requests shed. The plan's thresholds, every plan
// finding, the fleet simulator (package simulate) and the deploy gate all ask this package; nothing else models
// an instance.
//
// A measured model is built from qmax's rate staircase: open-loop Poisson steps at fixed fractions of the
// highest measured throughput. Between steps it interpolates linearly in the offered rate; below the first step
// the metric and in-flight fall linearly to 0 while TTFAB and stall keep the first step's values; at and above
// the instance's capacity (the most it was measured to complete) the queue shield is full: in flight and the
// metric sit at the shield depth, the excess (1 − capacity ÷ rate) is shed with 503, and TTFAB is the last
// stable step's plus the wait for the requests ahead.
//
// A what-if model (no rate staircase) uses a documented queueing approximation (Approximate), is marked NOT
// MEASURED in everything that prints it, and is never called safe above 0.9 of its capacity (SafeRPS).
package loadmodel

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/gonum/mathext"
)

// MetricWindowS is the period of the datapoints the scaling alarms evaluate: the 10-s high-resolution
// ConcurrentRequestsPerModel, statistic Maximum.
const MetricWindowS = 10

// Point is the steady state of one instance at one offered rate.
type Point struct {
	// RPS is the offered request rate per instance; for a measured point, the rate the step completed (at
	// most what was offered), so that no state credits an instance with more than it was seen to carry.
	RPS float64 `json:"rps"`
	// RPSLow is the one-sided lower confidence bound of RPS (RateLowerBound: the count of completions its window
	// measured it from, as a Poisson count): how low the rate the instance carried could truly have been. 0 when
	// unknown (an approximation's points, or a point measured without its count).
	RPSLow float64 `json:"rps_low,omitempty"`
	// Metric is the scaling metric as the alarm sees it: a 10-s Maximum datapoint of ConcurrentRequestsPerModel
	// (CloudWatch's, or the client's peak in flight times the CloudWatch/client ratio when CloudWatch was not read).
	Metric float64 `json:"metric"`
	// InFlight is the time-averaged number of requests in the instance (waiting and running).
	InFlight float64 `json:"in_flight"`
	// TTFABMs is the TTFAB at the SLO's percentile, in milliseconds.
	TTFABMs float64 `json:"ttfab_ms"`
	// TTFABP50Ms and TTFABP99Ms are the median and the 99th percentile TTFAB, in milliseconds (0 when not
	// known). With TTFABMs they are the knots of the TTFAB distribution SLO.ViolatingShare reads the share of
	// requests over the SLO from.
	TTFABP50Ms float64 `json:"ttfab_p50_ms,omitempty"`
	TTFABP99Ms float64 `json:"ttfab_p99_ms,omitempty"`
	// StallMs is the p95 playback stall, in milliseconds.
	StallMs float64 `json:"stall_ms"`
	// Shed is the share of requests answered 503 (or failed): 0 to 1.
	Shed float64 `json:"shed"`
	// Unsteady marks a measured point whose step did not keep up: it completed less than it was offered, or
	// shed more than the SLO allows. Its state is what the instance was measured in at that rate (a queue that
	// grows), never a rate the SLO is met at: the safe rate stops below it whatever its numbers, and a backlog
	// drains toward the last steady point (Advance).
	Unsteady bool `json:"unsteady,omitempty"`
}

// SLO is what a state is judged against.
type SLO struct {
	// TTFABMs bounds TTFAB at Percentile.
	TTFABMs float64 `json:"ttfab_ms"`
	// Percentile is the SLO's percentile (95 for p95).
	Percentile int `json:"percentile"`
	// StallMs bounds the p95 stall: the stall budget plus the jitter allowance.
	StallMs float64 `json:"stall_ms"`
}

// AllowedShed is the share of requests that may fail and still meet the percentile: 1 − percentile/100.
func (s SLO) AllowedShed() float64 { return 1 - float64(s.Percentile)/100 }

// RowViolates is the verdict of a row of requests (a simulated minute, a replay's slice): more of them
// violated the SLO than its percentile allows (AllowedShed). It is the one rule of a violation minute: the
// simulator, its oracle, tts-bench replay's slices and the demo's check of them all judge by it.
func (s SLO) RowViolates(requests, violating float64) bool {
	return requests > 0 && violating > s.AllowedShed()*requests+1e-9
}

// Meets reports whether a state meets the SLO: no more of its requests violate (ViolatingShare) than the
// percentile allows. It is the one judgement of a state: the safe rate, every second the simulator counts and
// the oracle all ask it or ViolatingShare.
func (s SLO) Meets(p Point) bool { return s.ViolatingShare(p) <= s.AllowedShed()+1e-12 }

// ViolatingShare is the share of a state's requests that miss the SLO (docs/design.md, "One instance model"):
// all of them when its p95 stall is over the stall bound (a stall is known only at the p95), else the shed ones
// and, of the others, the share whose TTFAB is over the SLO's bound, read off the state's TTFAB distribution
// (OverShare). A state whose TTFAB at the SLO's percentile is under the bound still has requests over it: a
// second at p95 just under the bound has nearly 5% of them, and a minute of such seconds with a few seconds
// over the bound violates, where counting each second all or nothing would pass it.
func (s SLO) ViolatingShare(p Point) float64 {
	if p.StallMs > s.StallMs {
		return 1
	}
	shed := math.Min(1, math.Max(0, p.Shed))
	return shed + (1-shed)*p.OverShare(s.TTFABMs, s.Percentile)
}

// OverShare is the share of a state's successful requests whose TTFAB exceeds boundMs, given that TTFABMs is
// the state's TTFAB at percentile pct. Its survival function S(x) (the share over x) passes through the known
// quantiles, the knots (p50, 0.5), (TTFABMs, 1 − pct/100) and (p99, 0.01), and starts at (0 ms, 1); between two
// knots S falls exponentially (it is linear in log S, so an exponential distribution, a queue's sojourn time,
// is reproduced exactly), and past the last knot it keeps falling at the rate of the last segment. A state with
// only TTFABMs known is taken as exponential through it.
func (p Point) OverShare(boundMs float64, pct int) float64 {
	if !(boundMs > 0) {
		return 1
	}
	type knot struct{ ms, over float64 }
	ks := []knot{{0, 1}}
	add := func(ms, over float64) {
		if ms > 0 && over > 0 && over < 1 {
			ks = append(ks, knot{ms, over})
		}
	}
	add(p.TTFABMs, 1-float64(pct)/100)
	if pct != 50 && p.TTFABP50Ms > 0 {
		add(p.TTFABP50Ms, 0.5)
	}
	if pct != 99 && p.TTFABP99Ms > 0 {
		add(p.TTFABP99Ms, 0.01)
	}
	// By falling share over; a knot out of order (a higher percentile at a lower TTFAB, which Validate
	// refuses in a model) is dropped rather than let S rise.
	sort.SliceStable(ks, func(i, j int) bool { return ks[i].over > ks[j].over })
	kept := ks[:1]
	for _, k := range ks[1:] {
		if k.over < kept[len(kept)-1].over && k.ms >= kept[len(kept)-1].ms {
			kept = append(kept, k)
		}
	}
	rate := 0.0 // the decay rate of the last segment of positive length, per ms
	for i := 1; i < len(kept); i++ {
		a, b := kept[i-1], kept[i]
		if b.ms == a.ms {
			continue
		}
		rate = math.Log(a.over/b.over) / (b.ms - a.ms)
		if boundMs < b.ms {
			return a.over * math.Exp(-rate*(boundMs-a.ms))
		}
	}
	last := kept[len(kept)-1]
	if boundMs == last.ms {
		return last.over
	}
	return last.over * math.Exp(-rate*(boundMs-last.ms))
}

// Why says in words why a state does not meet the SLO ("" when it does).
func (s SLO) Why(p Point) string {
	if s.Meets(p) {
		return ""
	}
	var out []string
	if p.TTFABMs > s.TTFABMs {
		out = append(out, fmt.Sprintf("p%d TTFAB %s ms > %s ms", s.Percentile, Format(p.TTFABMs), Format(s.TTFABMs)))
	}
	if p.StallMs > s.StallMs {
		out = append(out, fmt.Sprintf("p95 stall %s ms > %s ms", Format(p.StallMs), Format(s.StallMs)))
	}
	if p.Shed > s.AllowedShed()+1e-12 {
		out = append(out, fmt.Sprintf("%s%% shed > %s%%", Format(100*p.Shed), Format(100*s.AllowedShed())))
	}
	if len(out) == 0 {
		out = append(out, fmt.Sprintf("%s%% of requests over %s ms or shed > %s%%", Format(100*s.ViolatingShare(p)), Format(s.TTFABMs), Format(100*s.AllowedShed())))
	}
	return joinAnd(out)
}

func joinAnd(parts []string) string {
	s := parts[0]
	for i := 1; i < len(parts); i++ {
		s += ", " + parts[i]
	}
	return s
}

// Model is one instance under open-loop load.
type Model struct {
	// Points are the measured states by increasing rate, all below CapacityRPS: the steady states of the steps
	// that kept up, and the Unsteady states of the steps that fell behind, at what they completed.
	Points []Point `json:"points"`
	// CapacityRPS is the most requests per second the instance was measured (or assumed) to complete.
	CapacityRPS float64 `json:"capacity_rps"`
	// QueueDepth is the container's queue shield (QUEUE_MAX_DEPTH once a plan is deployed).
	QueueDepth int `json:"queue_depth"`
	// CloudWatchRatio converts the instance's in-flight count into the metric's units at saturation.
	CloudWatchRatio float64 `json:"cloudwatch_ratio"`
	// SLO is the objective the model's states are judged against.
	SLO SLO `json:"slo"`
	// Measured is false for the queueing approximation of a what-if plan.
	Measured bool `json:"measured"`
	// Basis says in one line what the model was built from; it starts with "NOT MEASURED" when Measured is false.
	Basis string `json:"basis"`
}

// Validate reports every problem of the model.
func (m Model) Validate() error {
	var errs []error
	add := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(m.Points) == 0 {
		add("points: is empty: the model needs at least one steady state below capacity")
	}
	for i, p := range m.Points {
		for _, v := range []struct {
			name string
			x    float64
		}{{"rps", p.RPS}, {"rps_low", p.RPSLow}, {"metric", p.Metric}, {"in_flight", p.InFlight}, {"ttfab_ms", p.TTFABMs}, {"ttfab_p50_ms", p.TTFABP50Ms}, {"ttfab_p99_ms", p.TTFABP99Ms}, {"stall_ms", p.StallMs}, {"shed", p.Shed}} {
			if math.IsNaN(v.x) || math.IsInf(v.x, 0) || v.x < 0 {
				add("points[%d].%s: is %g: want a finite number ≥ 0", i, v.name, v.x)
			}
		}
		if p.RPSLow > p.RPS {
			add("points[%d].rps_low: is %g: want a lower bound at most the point's rate %g", i, p.RPSLow, p.RPS)
		}
		if !(p.RPS > 0) || (i > 0 && !(p.RPS > m.Points[i-1].RPS)) {
			add("points[%d].rps: is %g: want increasing rates above 0", i, p.RPS)
		}
		if p.Shed > 1 {
			add("points[%d].shed: is %g: want a share from 0 to 1", i, p.Shed)
		}
		if (p.TTFABP50Ms > 0 && p.TTFABP50Ms > p.TTFABMs && m.SLO.Percentile > 50) || (p.TTFABP99Ms > 0 && p.TTFABP99Ms < p.TTFABMs && m.SLO.Percentile < 99) {
			add("points[%d]: TTFAB p50 %g, p%d %g, p99 %g ms: want them in the order of their percentiles", i, p.TTFABP50Ms, m.SLO.Percentile, p.TTFABMs, p.TTFABP99Ms)
		}
	}
	if !(m.CapacityRPS > 0) || math.IsInf(m.CapacityRPS, 0) {
		add("capacity_rps: is %g: want a positive rate", m.CapacityRPS)
	} else if n := len(m.Points); n > 0 && !(m.Points[n-1].RPS < m.CapacityRPS) {
		add("capacity_rps: is %g: want it above the highest point's rate %g", m.CapacityRPS, m.Points[n-1].RPS)
	}
	if m.QueueDepth < 1 {
		add("queue_depth: is %d: want at least 1 (the deployed shield)", m.QueueDepth)
	}
	if !(m.CloudWatchRatio > 0) || math.IsInf(m.CloudWatchRatio, 0) {
		add("cloudwatch_ratio: is %g: want a positive ratio", m.CloudWatchRatio)
	}
	if !(m.SLO.TTFABMs > 0) || m.SLO.Percentile < 50 || m.SLO.Percentile > 99 || m.SLO.StallMs < 0 || math.IsNaN(m.SLO.StallMs) {
		add("slo: ttfab %g ms, p%d, stall %g ms: want a positive TTFAB, a percentile from 50 to 99 and a stall bound ≥ 0", m.SLO.TTFABMs, m.SLO.Percentile, m.SLO.StallMs)
	}
	return errors.Join(errs...)
}

// saturated is the state of a full shield at the instance's capacity.
func (m Model) saturated() Point {
	last := m.Points[len(m.Points)-1]
	depth := float64(m.QueueDepth)
	// The requests beyond the last stable point's wait their turn at the capacity rate.
	extra := math.Max(0, depth-last.InFlight)
	wait := 1000 * extra / m.CapacityRPS
	return Point{RPS: m.CapacityRPS, Metric: math.Max(last.Metric, depth*m.CloudWatchRatio), InFlight: math.Max(last.InFlight, depth),
		TTFABMs: last.TTFABMs + wait, TTFABP50Ms: plus(last.TTFABP50Ms, wait), TTFABP99Ms: plus(last.TTFABP99Ms, wait), StallMs: last.StallMs, Shed: last.Shed}
}

// plus adds a wait to a known quantile (0, unknown, stays 0).
func plus(q, wait float64) float64 {
	if q > 0 {
		return q + wait
	}
	return 0
}

// lerpTTFAB sets p's TTFAB quantiles a fraction f of the way from a's to b's.
func lerpTTFAB(p *Point, a, b Point, f float64) {
	lerp := func(x, y float64) float64 { return x + (y-x)*f }
	p.TTFABMs = lerp(a.TTFABMs, b.TTFABMs)
	if a.TTFABP50Ms > 0 && b.TTFABP50Ms > 0 {
		p.TTFABP50Ms = lerp(a.TTFABP50Ms, b.TTFABP50Ms)
	}
	if a.TTFABP99Ms > 0 && b.TTFABP99Ms > 0 {
		p.TTFABP99Ms = lerp(a.TTFABP99Ms, b.TTFABP99Ms)
	}
}

// At is the instance's steady state at an offered rate per instance.
func (m Model) At(rps float64) Point {
	if !(rps > 0) {
		first := m.Points[0]
		return Point{TTFABMs: first.TTFABMs, TTFABP50Ms: first.TTFABP50Ms, TTFABP99Ms: first.TTFABP99Ms, StallMs: first.StallMs}
	}
	first := m.Points[0]
	if rps <= first.RPS {
		f := rps / first.RPS
		return Point{RPS: rps, Metric: f * first.Metric, InFlight: f * first.InFlight, TTFABMs: first.TTFABMs, TTFABP50Ms: first.TTFABP50Ms, TTFABP99Ms: first.TTFABP99Ms,
			StallMs: first.StallMs, Shed: first.Shed}
	}
	sat := m.saturated()
	if rps >= m.CapacityRPS {
		p := sat
		p.RPS = rps
		p.Shed = math.Max(sat.Shed, 1-m.CapacityRPS/rps)
		return p
	}
	i := sort.Search(len(m.Points), func(i int) bool { return m.Points[i].RPS >= rps })
	a, b := m.Points[len(m.Points)-1], sat
	if i < len(m.Points) {
		a, b = m.Points[i-1], m.Points[i]
	}
	f := (rps - a.RPS) / (b.RPS - a.RPS)
	lerp := func(x, y float64) float64 { return x + (y-x)*f }
	p := Point{RPS: rps, Metric: lerp(a.Metric, b.Metric), InFlight: lerp(a.InFlight, b.InFlight), StallMs: lerp(a.StallMs, b.StallMs), Shed: lerp(a.Shed, b.Shed)}
	lerpTTFAB(&p, a, b, f)
	return p
}

// Advance is the instance over dt seconds at an offered rate per instance, starting with backlog requests
// queued beyond its last stable state, and the backlog after: the transient At's steady states leave out.
//
// Above the capacity the queue does not fill at once: the excess (rps − capacity) joins the backlog until the
// shield is full (QueueDepth in flight), and only then is it shed with 503, as the container's queue gate does.
// Below the capacity the backlog drains at (capacity − rps). While a backlog is queued the state lies on the
// line from the last stable point to the full shield (At at the capacity), at the backlog's share of the room
// between them: in flight the last stable point's plus the backlog, TTFAB its plus the backlog's wait at the
// capacity; below the capacity it is never better than At(rps). With no backlog below the capacity it is At(rps);
// held above the capacity long enough it is At(rps) too. So a rate that crosses the capacity for a second
// (a fleet whose new instance serves a moment after the load rises) is a second of growing queue, not a full
// shield and a 10-s Maximum datapoint at the shield depth (docs/design.md, "One instance model").
func (m Model) Advance(backlog, rps, dt float64) (Point, float64) {
	if !(backlog > 0) || math.IsInf(backlog, 0) {
		backlog = 0
	}
	if !(dt > 0) {
		return m.At(rps), backlog
	}
	last, sat := m.lastSteady(), m.saturated()
	room := sat.InFlight - last.InFlight
	queued := func(b float64) Point {
		f := 1.0
		if room > 0 {
			f = math.Min(1, b/room)
		}
		lerp := func(x, y float64) float64 { return x + (y-x)*f }
		p := Point{RPS: rps, Metric: lerp(last.Metric, sat.Metric), InFlight: lerp(last.InFlight, sat.InFlight), StallMs: last.StallMs, Shed: last.Shed}
		lerpTTFAB(&p, last, sat, f)
		return p
	}
	if rps >= m.CapacityRPS {
		grow := (rps - m.CapacityRPS) * dt
		absorbed := math.Max(0, math.Min(grow, room-backlog))
		backlog += absorbed
		p := queued(backlog)
		p.Shed = math.Max(last.Shed, (grow-absorbed)/(rps*dt))
		return p, backlog
	}
	backlog = math.Max(0, backlog-(m.CapacityRPS-math.Max(0, rps))*dt)
	steady := m.At(rps)
	if backlog == 0 {
		return steady, 0
	}
	q := queued(backlog)
	if q.TTFABMs > steady.TTFABMs {
		// The queued requests' wait sets the TTFAB distribution: take the queued state's quantiles whole, so
		// that they stay in order.
		steady.TTFABMs, steady.TTFABP50Ms, steady.TTFABP99Ms = q.TTFABMs, q.TTFABP50Ms, q.TTFABP99Ms
	}
	steady.Metric, steady.InFlight = math.Max(steady.Metric, q.Metric), math.Max(steady.InFlight, q.InFlight)
	return steady, backlog
}

// SafeRPS is the rate the plan runs an instance up to: SafeEstimate, and for a measured model never above the
// lower confidence bound (Point.RPSLow) of the highest point that met the SLO, the point the estimate stops at.
// The estimate rests on a rate counted over one window; the plan takes the rate that count supports at the
// stated confidence (docs/design.md, "One instance model"). This is the one place the rule lives, so the plan,
// its findings, simulate's oracle and fixed fleet, and the gate's re-run of the plan all get it.
func (m Model) SafeRPS() float64 {
	est := m.SafeEstimate()
	if _, low, ok := m.SafeCeiling(); ok && low > 0 {
		return math.Min(est, low)
	}
	return est
}

// SafeEstimate is the highest offered rate per instance, at most the capacity, whose state meets the SLO, found
// on the interpolated model (to within a millionth of the capacity); 0 when not even the lowest rate meets it. A
// NOT MEASURED model (Measured false) is never called safe above UnmeasuredMaxUtilization of its capacity,
// whatever its approximation predicts there; a measured one never above its highest point that met the SLO,
// whatever the interpolation toward the capacity predicts.
func (m Model) SafeEstimate() float64 {
	meets := func(r float64) bool { return m.SLO.Meets(m.At(r)) }
	// A measured model is never called safe past the highest measured state that met the SLO: between it and
	// the capacity the states are interpolated toward a full shield that was never measured (docs/design.md,
	// "One instance model"). Its points lie below the capacity, so
	// this is never above the capacity either: the percentile tolerates a few shed requests in a bad minute,
	// but a plan that runs an instance past what it completes sheds by design.
	top, _ := m.highestMeasuredSafe()
	ceiling := top.RPS
	if !m.Measured {
		ceiling = UnmeasuredMaxUtilization * m.CapacityRPS
	}
	// Walk the breakpoints: the state is linear between them, so the first failing segment holds the boundary.
	lo := 0.0
	bps := []float64{}
	for _, p := range m.Points {
		if p.RPS < ceiling {
			bps = append(bps, p.RPS)
		}
	}
	bps = append(bps, ceiling)
	for _, r := range bps {
		if !meets(r) {
			return bisect(meets, lo, r, m.CapacityRPS*1e-6)
		}
		lo = r
	}
	return lo
}

// SafeCeiling is the highest point that met the SLO, where SafeEstimate stops: its rate and the lower
// confidence bound of it (0 when unknown); ok is false for a NOT MEASURED model or when no point met the SLO.
func (m Model) SafeCeiling() (rps, low float64, ok bool) {
	p, found := m.highestMeasuredSafe()
	if !found || !m.Measured {
		return 0, 0, false
	}
	return p.RPS, p.RPSLow, true
}

// highestMeasuredSafe is the highest steady point that meets the SLO; ok is false (and the point zero) when
// none does. An unsteady point never does: its step fell behind, whatever its window's numbers.
func (m Model) highestMeasuredSafe() (Point, bool) {
	for i := len(m.Points) - 1; i >= 0; i-- {
		if !m.Points[i].Unsteady && m.SLO.Meets(m.Points[i]) {
			return m.Points[i], true
		}
	}
	return Point{}, false
}

// lastSteady is the highest point that is not Unsteady (the first point when all are).
func (m Model) lastSteady() Point {
	for i := len(m.Points) - 1; i >= 0; i-- {
		if !m.Points[i].Unsteady {
			return m.Points[i]
		}
	}
	return m.Points[0]
}

// RateLowerBound is the one-sided lower confidence bound, at the given confidence (e.g. 0.95), of a rate
// measured as n events in a window of seconds: the exact bound of a Poisson mean, the λ at which n or more
// events have probability 1 − confidence (the 1 − confidence quantile of Gamma(n, 1)), divided by the window.
// 0 when n is 0 or the window is not positive.
func RateLowerBound(n int, window, confidence float64) float64 {
	if n <= 0 || !(window > 0) || !(confidence > 0 && confidence < 1) {
		return 0
	}
	return mathext.GammaIncRegInv(float64(n), 1-confidence) / window
}

// bisect finds the boundary between ok(lo) and !ok(hi).
func bisect(ok func(float64) bool, lo, hi, tol float64) float64 {
	if lo == 0 && !ok(hi*1e-9) {
		return 0
	}
	for hi-lo > tol {
		mid := (lo + hi) / 2
		if ok(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}

// RateForMetric inverts the metric: the highest offered rate per instance whose metric is at most v (the
// metric rises with the rate). It is the capacity when v is at or above the saturated metric.
func (m Model) RateForMetric(v float64) float64 {
	if v >= m.saturated().Metric {
		return m.CapacityRPS
	}
	return bisect(func(r float64) bool { return m.At(r).Metric <= v }, 0, m.CapacityRPS, m.CapacityRPS*1e-6)
}

// Approximation is what a what-if plan knows of one instance.
type Approximation struct {
	// CapacityRPS is the assumed highest throughput of one instance.
	CapacityRPS float64
	// QMax is the assumed closed-loop concurrency at which TTFAB reaches the SLO; the basis names it.
	QMax int
	// QueueDepth is the shield.
	QueueDepth int
	// CloudWatchRatio is the assumed CloudWatch/client ratio (1 when unknown).
	CloudWatchRatio float64
	SLO             SLO
}

// UnmeasuredMaxUtilization is the highest utilisation (offered rate ÷ capacity) a NOT MEASURED model is ever
// called safe at (Model.SafeRPS). Near saturation a queue's tail grows as 1/(1 − ρ), and an assumed capacity is
// not known to 5%: a capacity assumed 5% too high turns ρ 0.9 into 0.945, a p95 1.8 times the prediction, and
// ρ 0.95 into 0.998, a queue that barely drains.
const UnmeasuredMaxUtilization = 0.9

// approxFractions are the rates, as fractions of capacity, at which Approximate tabulates the queue.
var approxFractions = []float64{0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.925, 0.95, 0.97, 0.99}

// sojournQuantileMs is the time a request spends in an M/M/1 queue served at mu requests per second and
// offered lambda, at percentile pct, in milliseconds. The sojourn time (wait and service) of a first-come
// first-served M/M/1 queue is exponential with rate μ − λ, so its p-th percentile is −ln(1 − p/100) ÷ (μ − λ):
// for p95, ln(20) ÷ (μ − λ) s = 1000·ln(20)/(μ − λ) ms, about 3 ÷ (μ − λ) s. It is +Inf at and above μ.
func sojournQuantileMs(lambda, mu float64, pct int) float64 {
	if !(lambda < mu) {
		return math.Inf(1)
	}
	return 1000 * -math.Log(1-float64(pct)/100) / (mu - lambda)
}

// Approximate builds a NOT MEASURED model from assumed numbers: the instance as one M/M/1 queue served at its
// capacity μ (one server, Poisson arrivals, exponential service of mean 1/μ), tabulated at fractions of μ up to
// 0.99 and marked Measured false, so that Model.SafeRPS never calls more than UnmeasuredMaxUtilization (0.9) of
// μ safe, whatever the queue predicts above it. At utilisation ρ = λ/μ:
//
//   - TTFAB at the SLO's percentile is the sojourn time's (sojournQuantileMs): the M/M/1 sojourn time is
//     exponential with rate μ − λ, so p95 = ln(20) ÷ (μ − λ), in ms 1000·ln(20)/(μ − λ): ln(20) ≈ 3 times the
//     mean sojourn (L + 1)/μ, so a TTFAB read off the mean queue length understates it (at ρ 0.9 the mean is
//     10 service times, the p95 30), and it grows without bound as ρ → 1. It bounds TTFAB from above twice
//     over: a request's first audio comes before its last, and the shield (at most QueueDepth in the
//     instance) only shortens the wait.
//   - In flight is the mean number in the instance, L = ρ/(1 − ρ), capped at the shield: exact for M/M/1.
//   - The metric, a 10-s Maximum, is the level n an arrival reaches about once in a window: an arrival finds
//     n or more in the instance with probability ρⁿ (Poisson arrivals see the time average), and about 10·λ
//     arrive in a window, so ρⁿ = 1/(1 + 10·λ); never below L nor above the shield. The arrivals of one window
//     see correlated states, not independent ones, so this runs above the queue's median 10-s peak as ρ
//     grows (simulated at 16.3 rps: 14.5 against a median of 9 at ρ 0.72, 47 against 17 at ρ 0.9), let alone
//     the 10th percentile a measured model gives: a what-if target scales out later than the model says.
//   - The stall is 0 (a queue says nothing of playback), and nothing is shed below μ: with a shield of depth K
//     the queue would turn away (1 − ρ)ρᴷ/(1 − ρᴷ⁺¹) of the requests, at ρ 0.9 0.05% for K 50 and 2.2% for K 16,
//     within the 5% a p95 allows.
//
// Q_max enters the basis only: the queue's tail depends on μ − λ alone.
func Approximate(a Approximation) (Model, error) {
	if !(a.CapacityRPS > 0) || a.QMax < 1 || a.QueueDepth < 1 {
		return Model{}, fmt.Errorf("what-if instance: capacity %g rps, Q_max %d, queue depth %d: want positive numbers", a.CapacityRPS, a.QMax, a.QueueDepth)
	}
	ratio := a.CloudWatchRatio
	if !(ratio > 0) {
		ratio = 1
	}
	m := Model{CapacityRPS: a.CapacityRPS, QueueDepth: a.QueueDepth, CloudWatchRatio: ratio, SLO: a.SLO,
		Basis: fmt.Sprintf("NOT MEASURED: M/M/1 approximation at an assumed capacity of %s rps and Q_max %d, never safe above %s of the capacity",
			Format(a.CapacityRPS), a.QMax, Format(UnmeasuredMaxUtilization))}
	for _, f := range approxFractions {
		lam := f * a.CapacityRPS
		l := math.Min(f/(1-f), float64(a.QueueDepth))
		peak := math.Max(l, math.Log(1+MetricWindowS*lam)/math.Log(1/f))
		peak = math.Min(peak, float64(a.QueueDepth))
		m.Points = append(m.Points, Point{RPS: lam, Metric: peak * ratio, InFlight: l, TTFABMs: sojournQuantileMs(lam, a.CapacityRPS, a.SLO.Percentile),
			TTFABP50Ms: sojournQuantileMs(lam, a.CapacityRPS, 50), TTFABP99Ms: sojournQuantileMs(lam, a.CapacityRPS, 99)})
	}
	return m, m.Validate()
}

// Format formats a number for humans, as the plan, its findings and the simulator print it, so that a number
// reads the same everywhere (capacity.FormatNumber is this): up to two decimals and no trailing zeros; three
// significant digits in exponent form below 0.01 or from 1e9 (so 8e-09 does not print as 0); +Inf as "∞",
// -Inf as "-∞", NaN as "NaN"; negative zero as "0".
func Format(x float64) string {
	switch {
	case math.IsInf(x, 1):
		return "∞"
	case math.IsInf(x, -1):
		return "-∞"
	case math.IsNaN(x):
		return "NaN"
	}
	if a := math.Abs(x); a != 0 && (a < 0.01 || a >= 1e9) {
		return strconv.FormatFloat(x, 'g', 3, 64)
	}
	s := strconv.FormatFloat(x, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// Monotone returns the model with Metric and InFlight made non-decreasing in the rate by pool-adjacent-
// violators (the least-squares non-decreasing fit): a 10-s Maximum measured over a few windows is noisy, and a
// metric that falls as the rate rises would put the scale-out target below the metric of lower rates, so the
// fleet would scale out from a rate it just scaled in at (a flap). TTFAB, stall and shed are left as measured.
func (m Model) Monotone() Model {
	out := m
	out.Points = append([]Point(nil), m.Points...)
	metric := make([]float64, len(out.Points))
	inFlight := make([]float64, len(out.Points))
	for i, p := range out.Points {
		metric[i], inFlight[i] = p.Metric, p.InFlight
	}
	metric, inFlight = pav(metric), pav(inFlight)
	for i := range out.Points {
		out.Points[i].Metric, out.Points[i].InFlight = metric[i], inFlight[i]
	}
	return out
}

// pav is the pool-adjacent-violators fit of xs (equal weights): the closest non-decreasing sequence.
func pav(xs []float64) []float64 {
	type block struct {
		sum float64
		n   int
	}
	var bs []block
	for _, x := range xs {
		bs = append(bs, block{x, 1})
		for len(bs) > 1 {
			a, b := bs[len(bs)-2], bs[len(bs)-1]
			if a.sum/float64(a.n) <= b.sum/float64(b.n) {
				break
			}
			bs = append(bs[:len(bs)-2], block{a.sum + b.sum, a.n + b.n})
		}
	}
	out := make([]float64, 0, len(xs))
	for _, b := range bs {
		for range b.n {
			out = append(out, b.sum/float64(b.n))
		}
	}
	return out
}
