package loadmodel

import (
	"fmt"
	"math"
	"sort"
)

// Scatter is how the scaling alarm's 10-s datapoints scatter around the model's metric at each rate
// (docs/design.md, "One instance model", the scatter). The model's Metric is a low quantile of a rate's 10-s
// peaks (Quantile: the datapoint the alarm can count on, what the plan's thresholds and the feasibility verdict
// use); the datapoints themselves are random: at one rate a Poisson stream's 10-s peaks spread over several
// requests. Scatter takes them as normal, with the measured mean and that quantile: the mean 10-s peak at the
// rate and the model's Metric fix its centre and its spread. A simulation drawing each tick's datapoint from
// it (simulate.Fleet.Scatter) places the first scale-out where one random run of the alarm may place it;
// many seeds give the spread a single replay falls in, which the deterministic simulator cannot give.
//
// Scatter is not part of a plan: the plan's verdict is the deterministic simulation's.
type Scatter struct {
	// Quantile is the quantile of the datapoints the model's Metric stands for (bench.AlarmQuantile), in (0, 0.5).
	Quantile float64
	// RPS and Mean are, by increasing rate, the mean 10-s datapoint measured at each rate, on the model's scale.
	RPS, Mean []float64
}

// Validate reports the first problem of the scatter.
func (s Scatter) Validate() error {
	if !(s.Quantile > 0 && s.Quantile < 0.5) {
		return fmt.Errorf("scatter quantile: is %g: want the low quantile the model's metric is, in (0, 0.5)", s.Quantile)
	}
	if len(s.RPS) == 0 || len(s.RPS) != len(s.Mean) {
		return fmt.Errorf("scatter: %d rates and %d means: want one mean per rate, at least one", len(s.RPS), len(s.Mean))
	}
	for i := range s.RPS {
		if !(s.RPS[i] > 0) || (i > 0 && !(s.RPS[i] > s.RPS[i-1])) || !(s.Mean[i] >= 0) || math.IsInf(s.Mean[i], 0) {
			return fmt.Errorf("scatter point %d: rate %g, mean %g: want increasing positive rates and finite means ≥ 0", i, s.RPS[i], s.Mean[i])
		}
	}
	return nil
}

// meanAt interpolates the mean datapoint linearly in the rate, flat beyond the ends.
func (s Scatter) meanAt(rps float64) float64 {
	n := len(s.RPS)
	switch {
	case rps <= s.RPS[0]:
		return s.Mean[0] * math.Max(0, rps) / s.RPS[0]
	case rps >= s.RPS[n-1]:
		return s.Mean[n-1]
	}
	i := sort.SearchFloat64s(s.RPS, rps)
	f := (rps - s.RPS[i-1]) / (s.RPS[i] - s.RPS[i-1])
	return s.Mean[i-1] + f*(s.Mean[i]-s.Mean[i-1])
}

// Draw is one 10-s datapoint of an instance whose deterministic state is p (Model.At or Model.Advance, at the
// offered rate p.RPS per instance), at the standard normal deviate z: the state's metric moved to the rate's
// mean and spread as the measured quantile says, never below 0 nor above a full shield's metric. At and above
// the capacity (a full shield) it does not scatter.
func (s Scatter) Draw(m Model, p Point, z float64) float64 {
	steady := m.At(p.RPS).Metric
	offset := math.Max(0, s.meanAt(p.RPS)-steady) // mean − the quantile, at the rate
	// The quantile sits zq standard deviations below the mean: zq = √2·erf⁻¹(1 − 2q).
	zq := math.Sqrt2 * math.Erfinv(1-2*s.Quantile)
	sigma := offset / zq
	v := p.Metric + offset + sigma*z
	return math.Min(m.saturated().Metric, math.Max(0, v))
}
