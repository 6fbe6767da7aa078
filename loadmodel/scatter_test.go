package loadmodel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestScatterDrawsAroundTheMeasuredMean: at a measured rate the draws' mean is the measured mean peak and the
// share below the model's metric is the quantile it stands for; at a full shield nothing scatters.
func TestScatterDrawsAroundTheMeasuredMean(t *testing.T) {
	m := model()
	sc := Scatter{Quantile: 0.1, RPS: []float64{4, 8, 12}, Mean: []float64{3, 7, 13}}
	if err := sc.Validate(); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	const n = 20000
	p := m.At(8)
	sum, below := 0.0, 0
	for range n {
		v := sc.Draw(m, p, rng.NormFloat64())
		sum += v
		if v < p.Metric {
			below++
		}
	}
	near(t, "mean draw at 8 rps", sum/n, 7, 0.05)
	near(t, "share below the model's metric", float64(below)/n, 0.1, 0.01)
	// Between the measured rates the mean is interpolated: 10 at 10 rps.
	sum = 0
	for range n {
		sum += sc.Draw(m, m.At(10), rng.NormFloat64())
	}
	near(t, "mean draw at 10 rps", sum/n, 10, 0.1)
	sat := m.At(20)
	for _, z := range []float64{-3, 0, 3} {
		if v := sc.Draw(m, sat, z); v != sat.Metric {
			t.Errorf("a full shield drew %v at z %v, want its metric %v", v, z, sat.Metric)
		}
	}
	if v := sc.Draw(m, m.At(4), -50); v != 0 {
		t.Errorf("a draw far below went to %v, want 0 (never negative)", v)
	}
}

func TestScatterValidate(t *testing.T) {
	for _, sc := range []Scatter{
		{Quantile: 0.5, RPS: []float64{1}, Mean: []float64{1}},
		{Quantile: 0.1},
		{Quantile: 0.1, RPS: []float64{2, 1}, Mean: []float64{1, 1}},
		{Quantile: 0.1, RPS: []float64{1}, Mean: []float64{math.Inf(1)}},
	} {
		if sc.Validate() == nil {
			t.Errorf("%+v: valid, want an error", sc)
		}
	}
}
