package loadmodel

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// model is an instance measured at 4, 8 and 12 rps that completes at most 16 rps, with a shield of 20:
//
//	rps  metric  in flight  TTFAB  stall
//	  4       2          1    400     10
//	  8       5          3    800     20
//	 12      10          6   1600     30
//	 16      20         20   1600 + 1000 × (20 − 6) / 16 = 2475, stall 30 (saturated)
func model() Model {
	return Model{
		Points: []Point{
			{RPS: 4, Metric: 2, InFlight: 1, TTFABMs: 400, StallMs: 10},
			{RPS: 8, Metric: 5, InFlight: 3, TTFABMs: 800, StallMs: 20},
			{RPS: 12, Metric: 10, InFlight: 6, TTFABMs: 1600, StallMs: 30},
		},
		CapacityRPS: 16, QueueDepth: 20, CloudWatchRatio: 1, Measured: true, Basis: "test",
		SLO: SLO{TTFABMs: 2000, Percentile: 95, StallMs: 50},
	}
}

func near(t *testing.T, name string, got, want, tol float64) {
	t.Helper()
	if math.Abs(got-want) > tol {
		t.Errorf("%s = %v, want %v (± %g)", name, got, want, tol)
	}
}

func TestAtInterpolates(t *testing.T) {
	m := model()
	if err := m.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		rps                                  float64
		metric, inFlight, ttfab, stall, shed float64
	}{
		// Below the first step: metric and in flight fall linearly to 0, TTFAB and stall stay the first step's.
		{0, 0, 0, 400, 10, 0},
		{2, 1, 0.5, 400, 10, 0},
		// On a step and between steps, linear in the rate.
		{4, 2, 1, 400, 10, 0},
		{6, 3.5, 2, 600, 15, 0},
		{10, 7.5, 4.5, 1200, 25, 0},
		{12, 10, 6, 1600, 30, 0},
		// Between the last step and capacity, towards the saturated state.
		{14, 15, 13, 2037.5, 30, 0},
		// At and above capacity: the shield is full, the excess is shed.
		{16, 20, 20, 2475, 30, 0},
		{20, 20, 20, 2475, 30, 0.2},
		{32, 20, 20, 2475, 30, 0.5},
	} {
		p := m.At(tt.rps)
		const tol = 1e-9
		near(t, "metric", p.Metric, tt.metric, tol)
		near(t, "in flight", p.InFlight, tt.inFlight, tol)
		near(t, "TTFAB", p.TTFABMs, tt.ttfab, tol)
		near(t, "stall", p.StallMs, tt.stall, tol)
		near(t, "shed", p.Shed, tt.shed, tol)
		if t.Failed() {
			t.Fatalf("At(%g) = %+v", tt.rps, p)
		}
	}
	// The metric reads at least the shield × the CloudWatch ratio when saturated.
	m.CloudWatchRatio = 1.5
	near(t, "saturated metric × ratio", m.At(20).Metric, 30, 1e-9)
}

func TestAtIsMonotoneInRate(t *testing.T) {
	m := model()
	prev := m.At(0)
	for r := 0.05; r < 40; r += 0.05 {
		p := m.At(r)
		if p.Metric < prev.Metric-1e-9 || p.InFlight < prev.InFlight-1e-9 || p.TTFABMs < prev.TTFABMs-1e-9 || p.Shed < prev.Shed-1e-9 {
			t.Fatalf("At(%g) = %+v falls below At(%g) = %+v", r, p, r-0.05, prev)
		}
		prev = p
	}
}

func TestSafeRPS(t *testing.T) {
	// Interpolated toward the saturated 16 rps (2475 ms, a full shield never measured), TTFAB would cross
	// 2000 ms at 12 + 4 × 400/875 = 13.83 rps; a measured model stops at its highest point that met the SLO.
	m := model()
	near(t, "safe rps", m.SafeRPS(), 12, 16e-6)
	if !m.SLO.Meets(m.At(12 + 4*400.0/875 - 1e-3)) {
		t.Fatal("the interpolation meets the SLO past the highest point: the case this test is for")
	}
	// The same states from the queueing approximation (not measured) are judged by the interpolation, up to
	// UnmeasuredMaxUtilization of the capacity.
	m.Measured = false
	near(t, "safe rps (not measured)", m.SafeRPS(), 12+4*400.0/875, 16e-6)
	if safe := m.SafeRPS(); !m.SLO.Meets(m.At(safe)) || m.SLO.Meets(m.At(safe+2e-5)) {
		t.Errorf("SafeRPS %v is not the boundary: meets %v at it, %v just above", safe, m.SLO.Meets(m.At(safe)), m.SLO.Meets(m.At(safe+2e-5)))
	}
	// A stall bound the third step misses: the crossing lies between 8 rps (stall 20) and 12 (stall 30), at 10
	// by interpolation, but 8 is the highest rate measured to meet it.
	m = model()
	m.SLO.StallMs = 25
	near(t, "safe rps (stall)", m.SafeRPS(), 8, 16e-6)
	// A shield whose full queue still meets the TTFAB bound: the highest measured point still decides. The
	// percentile would tolerate 5% shed (16 ÷ 0.95 rps), but a plan never runs an instance past what it was
	// measured to complete within the SLO.
	m = model()
	m.SLO.TTFABMs = 5000
	near(t, "safe rps (capacity)", m.SafeRPS(), 12, 16e-6)
	if st := m.At(16 / 0.95); m.SLO.ViolatingShare(st) <= m.SLO.AllowedShed() {
		t.Errorf("5%% shed at %v rps, with the full queue's p95 TTFAB %v ms under the bound, violates only %v: the shed and the requests over the bound together must pass 5%%", 16/0.95, st.TTFABMs, m.SLO.ViolatingShare(st))
	}
	// Only the first point meets the SLO: the safe rate is its rate.
	m = model()
	m.SLO.TTFABMs = 350
	m.Points[0].TTFABMs = 300
	m.Points[1].TTFABMs = 400
	near(t, "safe rps (first point only)", m.SafeRPS(), 4, 16e-6)
	// Not even the lowest rate meets it.
	m = model()
	m.SLO.TTFABMs = 300
	if got := m.SafeRPS(); got != 0 {
		t.Errorf("SafeRPS with TTFAB above the SLO everywhere = %v, want 0", got)
	}
}

func TestRateForMetricInvertsTheMetric(t *testing.T) {
	m := model()
	for _, r := range []float64{1, 4, 6, 11, 14} {
		near(t, "rate for metric", m.RateForMetric(m.At(r).Metric), r, 16e-6)
	}
	if got := m.RateForMetric(25); got != 16 {
		t.Errorf("RateForMetric above the saturated metric = %v, want the capacity 16", got)
	}
}

func TestSLOMeetsAndWhy(t *testing.T) {
	s := SLO{TTFABMs: 1000, Percentile: 95, StallMs: 50}
	near(t, "allowed shed", s.AllowedShed(), 0.05, 1e-12)
	for _, ok := range []Point{
		{TTFABMs: 1000, StallMs: 50},                                     // p95 on the bound: 5% over it
		{TTFABMs: 200, TTFABP50Ms: 100, TTFABP99Ms: 300, Shed: 0.049},    // 4.9% shed and a tail far below
		{TTFABMs: 900, TTFABP50Ms: 400, TTFABP99Ms: 1000, StallMs: 50},   // p99 on the bound: 1% over it
		{TTFABMs: 1000, TTFABP50Ms: 1000, TTFABP99Ms: 1000, StallMs: 50}, // every request at the bound
	} {
		if !s.Meets(ok) || s.Why(ok) != "" {
			t.Errorf("%+v must meet (violating share %v): %q", ok, s.ViolatingShare(ok), s.Why(ok))
		}
	}
	bad := Point{TTFABMs: 1200, StallMs: 80, Shed: 0.1}
	why := s.Why(bad)
	if s.Meets(bad) || !strings.Contains(why, "p95 TTFAB 1200 ms > 1000 ms") || !strings.Contains(why, "p95 stall 80 ms > 50 ms") || !strings.Contains(why, "10% shed > 5%") {
		t.Errorf("Why = %q", why)
	}
	// On every bound at once the shed and the requests over the TTFAB bound add up: 5% + 95% × 5%.
	both := Point{TTFABMs: 1000, StallMs: 50, Shed: 0.05}
	near(t, "violating share on both bounds", s.ViolatingShare(both), 0.0975, 1e-9)
	if s.Meets(both) || s.Why(both) != "9.75% of requests over 1000 ms or shed > 5%" {
		t.Errorf("p95 on the bound with 5%% shed must fail, saying why: meets %v, %q", s.Meets(both), s.Why(both))
	}
}

func TestOverShareReadsTheDistribution(t *testing.T) {
	p := Point{TTFABP50Ms: 100, TTFABMs: 400, TTFABP99Ms: 700}
	for _, c := range []struct{ bound, want float64 }{
		{0, 1}, {100, 0.5}, {400, 0.05}, {700, 0.01},
		// Exponential between knots: halfway from p50 to p95 in time is the geometric mean of their shares.
		{250, math.Sqrt(0.5 * 0.05)},
		// Past p99 it keeps the last segment's rate: 300 ms more divides the share by 5 again.
		{1000, 0.002},
	} {
		near(t, fmt.Sprintf("share over %v ms", c.bound), p.OverShare(c.bound, 95), c.want, 1e-12)
	}
	// A state known only at its percentile is exponential through it, and an exponential distribution is
	// reproduced exactly: M/M/1's sojourn quantiles give back the share e^(−(μ−λ)x).
	mu, lam := 16.3, 12.0
	q := Point{TTFABMs: sojournQuantileMs(lam, mu, 95), TTFABP50Ms: sojournQuantileMs(lam, mu, 50), TTFABP99Ms: sojournQuantileMs(lam, mu, 99)}
	only := Point{TTFABMs: q.TTFABMs}
	for _, x := range []float64{50, 300, 697, 1500} {
		want := math.Exp(-(mu - lam) * x / 1000)
		near(t, fmt.Sprintf("M/M/1 share over %v ms", x), q.OverShare(x, 95), want, 1e-12)
		near(t, fmt.Sprintf("exponential through p95 alone, share over %v ms", x), only.OverShare(x, 95), want, 1e-12)
	}
}

// A minute whose seconds each sit just under the bound at their p95, with a few seconds over it, has more
// than 5% of its requests over the bound: counting each second all or nothing passed it.
func TestAMinuteJustUnderTheBoundCountsItsTail(t *testing.T) {
	s := SLO{TTFABMs: 1000, Percentile: 95, StallMs: 50}
	under := Point{TTFABP50Ms: 400, TTFABMs: 995, TTFABP99Ms: 1400}
	over := Point{TTFABP50Ms: 600, TTFABMs: 1300, TTFABP99Ms: 1800}
	violating := 57*s.ViolatingShare(under) + 3*s.ViolatingShare(over)
	if !s.Meets(under) || s.Meets(over) {
		t.Fatalf("the seconds are built wrong: under meets %v, over meets %v", s.Meets(under), s.Meets(over))
	}
	if share := violating / 60; share <= s.AllowedShed() {
		t.Errorf("57 s at p95 995 ms and 3 s at p95 1300 ms: %v of the minute's requests over 1000 ms, want more than 5%%", share)
	}
}

func TestValidateNamesEveryProblem(t *testing.T) {
	m := model()
	m.Points[1].RPS = 3
	m.Points[2].TTFABMs = math.NaN()
	m.CapacityRPS = 12
	m.QueueDepth = 0
	m.CloudWatchRatio = 0
	err := m.Validate()
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{"points[1].rps: is 3", "points[2].ttfab_ms: is NaN", "capacity_rps: is 12: want it above the highest point's rate 12",
		"queue_depth: is 0", "cloudwatch_ratio: is 0"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%v lacks %q", err, want)
		}
	}
	if err := (Model{}).Validate(); err == nil || !strings.Contains(err.Error(), "points: is empty") {
		t.Errorf("empty model: %v", err)
	}
}

// The what-if approximation is marked NOT MEASURED, is a valid model, and follows M/M/1: mean in flight
// ρ/(1 − ρ) (capped at the shield), the 10-s peak at least that.
func TestApproximateIsMarkedNotMeasured(t *testing.T) {
	m, err := Approximate(Approximation{CapacityRPS: 20, QMax: 10, QueueDepth: 30, SLO: SLO{TTFABMs: 1000, Percentile: 95, StallMs: 50}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Measured || !strings.HasPrefix(m.Basis, "NOT MEASURED") {
		t.Fatalf("measured %v, basis %q: want NOT MEASURED", m.Measured, m.Basis)
	}
	if m.CloudWatchRatio != 1 || m.CapacityRPS != 20 || m.QueueDepth != 30 {
		t.Errorf("ratio %g, capacity %g, depth %d", m.CloudWatchRatio, m.CapacityRPS, m.QueueDepth)
	}
	p := m.At(10)
	near(t, "in flight at ρ 0.5", p.InFlight, 1, 1e-9)
	near(t, "in flight at ρ 0.9", m.At(18).InFlight, 9, 1e-9)
	if p.Metric < p.InFlight {
		t.Errorf("metric %g below the mean in flight %g", p.Metric, p.InFlight)
	}
	// p95 = 1000·ln 20/(μ − λ) ms ≤ 1000 ms holds up to λ = 20 − ln 20 = 17.0 rps (ρ 0.85), below the 0.9 cap.
	if s := m.SafeRPS(); s < 16.9 || s > 17.01 {
		t.Errorf("SafeRPS = %g, want the SLO's crossing, about 17 rps", s)
	}
	if _, err := Approximate(Approximation{CapacityRPS: 0, QMax: 10, QueueDepth: 30}); err == nil {
		t.Error("a zero capacity must be refused")
	}
}

// TTFAB at the SLO's percentile is the M/M/1 sojourn time's: exponential with rate μ − λ, so its p-th percentile
// is −ln(1 − p/100)/(μ − λ) s; p95 = 1000·ln(20)/(μ − λ) ms. Checked at the tabulated utilisations, where At
// returns the table's value, for the published Kokoro-g5 capacity (16.3 rps) and p95 and p99.
func TestApproximateTTFABIsTheSojournQuantile(t *testing.T) {
	const mu = 16.3
	for _, pct := range []int{95, 99} {
		m, err := Approximate(Approximation{CapacityRPS: mu, QMax: 50, QueueDepth: 50, SLO: SLO{TTFABMs: 3000, Percentile: pct, StallMs: 50}})
		if err != nil {
			t.Fatal(err)
		}
		for _, rho := range []float64{0.05, 0.5, 0.8, 0.9, 0.95, 0.99} {
			lam := rho * mu
			want := 1000 * math.Log(1/(1-float64(pct)/100)) / (mu - lam)
			near(t, fmt.Sprintf("p%d TTFAB at ρ %g", pct, rho), m.At(lam).TTFABMs, want, 1e-9*want)
		}
	}
	// The closed form by hand: p95 at ρ 0.5 of 16.3 rps is 1000 × 2.995732 / 8.15 = 367.57 ms.
	m, _ := Approximate(Approximation{CapacityRPS: mu, QMax: 50, QueueDepth: 50, SLO: SLO{TTFABMs: 3000, Percentile: 95, StallMs: 50}})
	near(t, "p95 at ρ 0.5", m.At(8.15).TTFABMs, 367.57, 0.01)
}

// A NOT MEASURED model never calls a utilisation above 0.9 safe, even where its queue would meet the SLO (a
// loose SLO or a fast instance); the rule is the model's, so a measured model is not capped by it.
func TestApproximateNeverSafeAboveNinetyPercent(t *testing.T) {
	for _, tt := range []struct {
		mu, sloMs float64
		depth     int
	}{{16.3, 3000, 50}, {1000, 3000, 50}, {20, 60000, 16}, {5, 1e6, 1}} {
		m, err := Approximate(Approximation{CapacityRPS: tt.mu, QMax: 50, QueueDepth: tt.depth, SLO: SLO{TTFABMs: tt.sloMs, Percentile: 95, StallMs: 50}})
		if err != nil {
			t.Fatal(err)
		}
		safe := m.SafeRPS()
		if safe > 0.9*tt.mu*(1+1e-12) {
			t.Errorf("capacity %g rps, SLO %g ms: SafeRPS %g is above 0.9 × capacity %g", tt.mu, tt.sloMs, safe, 0.9*tt.mu)
		}
		// Each of these queues meets its SLO at 0.9 μ: the cap, not the queue, sets the safe rate.
		near(t, fmt.Sprintf("SafeRPS at capacity %g, SLO %g ms", tt.mu, tt.sloMs), safe, 0.9*tt.mu, 1e-6*tt.mu)
	}
	m, _ := Approximate(Approximation{CapacityRPS: 1000, QMax: 50, QueueDepth: 50, SLO: SLO{TTFABMs: 3000, Percentile: 95, StallMs: 50}})
	m.Measured = true
	if safe := m.SafeRPS(); safe < 0.99*1000 {
		t.Errorf("a measured model's SafeRPS is %g: the 0.9 rule is for NOT MEASURED models only", safe)
	}
}

func TestFormat(t *testing.T) {
	for _, tt := range []struct {
		x    float64
		want string
	}{{0, "0"}, {1.5, "1.5"}, {2.005, "2"}, {13.71, "13.71"}, {0.004, "0.004"}, {-0.001, "-0.001"}, {2e9, "2e+09"}, {math.Inf(1), "∞"}, {math.NaN(), "NaN"}, {-0.0001, "-0.0001"}} {
		if got := Format(tt.x); got != tt.want {
			t.Errorf("Format(%v) = %q, want %q", tt.x, got, tt.want)
		}
	}
}

// RateLowerBound is the exact lower bound of a Poisson mean: at the bound, n or more events have probability
// 1 − confidence. Checked against the Poisson tail summed directly (not through the incomplete gamma function
// the bound uses), and against the figures docs/design.md states.
func TestRateLowerBound(t *testing.T) {
	poissonAtLeast := func(n int, mu float64) float64 {
		// P(X ≥ n) = 1 − Σ_{k<n} e^{−μ} μ^k / k!, summed in logs.
		below := 0.0
		for k := 0; k < n; k++ {
			lk, _ := math.Lgamma(float64(k + 1))
			below += math.Exp(-mu + float64(k)*math.Log(mu) - lk)
		}
		return 1 - below
	}
	for _, c := range []struct {
		n      int
		window float64
	}{{1, 1}, {5, 2}, {30, 10}, {300, 20}, {900, 60}, {5000, 300}} {
		low := RateLowerBound(c.n, c.window, 0.95)
		if !(low > 0 && low < float64(c.n)/c.window) {
			t.Fatalf("n %d over %g s: bound %v, want within (0, the rate %v)", c.n, c.window, low, float64(c.n)/c.window)
		}
		near(t, fmt.Sprintf("P(X ≥ %d) at the bound of n %d", c.n, c.n), poissonAtLeast(c.n, low*c.window), 0.05, 1e-6)
	}
	near(t, "300 in 20 s", RateLowerBound(300, 20, 0.95), 13.6, 0.05)
	near(t, "900 in 60 s", RateLowerBound(900, 60, 0.95), 14.2, 0.05)
	for _, bad := range []struct {
		n         int
		window, c float64
	}{{0, 10, 0.95}, {10, 0, 0.95}, {10, 10, 1}, {10, 10, 0}} {
		if got := RateLowerBound(bad.n, bad.window, bad.c); got != 0 {
			t.Errorf("RateLowerBound(%d, %g, %g) = %v, want 0", bad.n, bad.window, bad.c, got)
		}
	}
}

// The plan's safe rate is the lower confidence bound of the point the estimate stops at, when that bound is
// below the estimate; an estimate the interpolation stops below the bound stands; a point without a bound, or a
// NOT MEASURED model, keeps the estimate.
func TestSafeRPSIsTheLowerBoundOfItsCeiling(t *testing.T) {
	m := model()
	m.Points[2].RPSLow = 11.2
	near(t, "estimate", m.SafeEstimate(), 12, 16e-6)
	near(t, "safe rps", m.SafeRPS(), 11.2, 0)
	if top, low, ok := m.SafeCeiling(); !ok || top != 12 || low != 11.2 {
		t.Errorf("SafeCeiling = %v, %v, %v; want 12, 11.2, true", top, low, ok)
	}
	// A stall bound the third point misses: the estimate stops at 8, the second point, whose bound decides.
	m.SLO.StallMs = 25
	m.Points[1].RPSLow = 7.1
	near(t, "safe rps at the second point", m.SafeRPS(), 7.1, 0)
	// An interpolated boundary below the bound: a middle point that missed (3000 ms at 8 rps) puts the
	// crossing of 2000 ms at 4 + 4 × 1600/2600 rps, below the 12-rps ceiling's bound.
	m = model()
	m.Points[1].TTFABMs, m.Points[2].RPSLow = 3000, 11.5
	near(t, "safe rps below the bound", m.SafeRPS(), 4+4*1600.0/2600, 16e-6)
	// Without a bound, the estimate.
	m = model()
	near(t, "safe rps without a bound", m.SafeRPS(), 12, 16e-6)
	// Not measured: no ceiling, the approximation's estimate.
	m.Points[2].RPSLow = 11.2
	m.Measured = false
	if _, _, ok := m.SafeCeiling(); ok {
		t.Error("a NOT MEASURED model has a measured ceiling")
	}
	near(t, "safe rps (not measured)", m.SafeRPS(), 12+4*400.0/875, 16e-6)
	// A bound above its rate is refused.
	m = model()
	m.Points[1].RPSLow = 9
	if err := m.Validate(); err == nil || !strings.Contains(err.Error(), "points[1].rps_low: is 9") {
		t.Errorf("Validate = %v, want points[1].rps_low named", err)
	}
}

// An unsteady point (a step that fell behind) is never where the SLO is met, even when its window's numbers
// meet it; and a backlog drains toward the last steady point, not toward the unsteady one's queue.
func TestUnsteadyPointIsNeverSafe(t *testing.T) {
	m := model()
	m.Points = append(m.Points, Point{RPS: 14, Metric: 15, InFlight: 10, TTFABMs: 1900, StallMs: 30, Unsteady: true})
	if !m.SLO.Meets(m.Points[3]) {
		t.Fatal("the unsteady point's numbers must meet the SLO: the case this test is for")
	}
	near(t, "safe estimate", m.SafeEstimate(), 12, 16e-6)
	m.Points[3].Unsteady = false
	near(t, "safe estimate with the point steady", m.SafeEstimate(), 14, 16e-6)

	// A small backlog at a low rate: the queued state lies between the last steady point (12 rps, 1600 ms, 6 in
	// flight) and the full shield, not between the unsteady point's 5000 ms and it.
	m = model()
	m.Points = append(m.Points, Point{RPS: 14, Metric: 15, InFlight: 15, TTFABMs: 5000, StallMs: 30, Unsteady: true})
	p, _ := m.Advance(0.5, 4, 1)
	if !(p.TTFABMs < 5000) || !(p.InFlight < 15) {
		t.Errorf("draining state %+v: want it below the unsteady point's 5000 ms and 15 in flight", p)
	}
}
