package bench

import (
	"math"
	"time"
)

// CIConfidence is the confidence of PercentileCI's interval.
const CIConfidence = 0.95

// PercentileCI is a distribution-free confidence interval (CIConfidence) for the p-th percentile from sorted
// samples, by order statistics: the number B of samples below the true percentile is Binomial(n, p/100), so
// [X(l), X(u)] covers it with probability P(l ≤ B ≤ u−1); l is the largest and u the smallest rank leaving at
// most (1 − CIConfidence)/2 in each tail. ok is false when n is too small for a bound on either side (e.g.
// fewer than 59 samples have no upper bound for a p95 at 95%).
func PercentileCI(sorted []float64, p float64) (lo, hi float64, ok bool) {
	n := len(sorted)
	if n == 0 || !(p > 0 && p < 100) {
		return 0, 0, false
	}
	q := p / 100
	tail := (1 - CIConfidence) / 2
	// cdf[k] = P(B ≤ k).
	cdf := make([]float64, n+1)
	lgN, _ := math.Lgamma(float64(n + 1))
	sum := 0.0
	for k := 0; k <= n; k++ {
		lk, _ := math.Lgamma(float64(k + 1))
		lnk, _ := math.Lgamma(float64(n - k + 1))
		sum += math.Exp(lgN - lk - lnk + float64(k)*math.Log(q) + float64(n-k)*math.Log1p(-q))
		cdf[k] = math.Min(sum, 1)
	}
	l := 0 // P(B ≤ l−1) ≤ tail, largest
	for r := 1; r <= n; r++ {
		if cdf[r-1] <= tail {
			l = r
		}
	}
	u := n + 1 // P(B ≥ u) = 1 − P(B ≤ u−1) ≤ tail, smallest
	for r := n; r >= 1; r-- {
		if 1-cdf[r-1] <= tail {
			u = r
		} else {
			break
		}
	}
	if l < 1 || u > n {
		return 0, 0, false
	}
	return sorted[l-1], sorted[u-1], true
}

// Straddles reports whether a step's confidence interval for its SLO-percentile TTFAB holds the SLO: the
// step's pass or fail could be chance (such a step is re-measured once with a longer window).
func (s StepResult) Straddles(slo time.Duration) bool {
	if !s.TTFABCIOK {
		return false
	}
	return s.TTFABCILowMs <= ms(slo) && s.TTFABCIHighMs > ms(slo)
}
