package loadmodel

import (
	"slices"
	"testing"
)

// A noisy 10-s Maximum that falls as the rate rises (10 at 12.6 rps, 8 at 14.9 rps in a real demo run) is
// pooled into a non-decreasing fit; already monotone columns are left alone.
func TestMonotonePoolsViolators(t *testing.T) {
	m := Model{Points: []Point{{RPS: 5, Metric: 3, InFlight: 0.3}, {RPS: 12.6, Metric: 10, InFlight: 2.2}, {RPS: 14.9, Metric: 8, InFlight: 2.7}, {RPS: 15.7, Metric: 11, InFlight: 3.7}}}
	got := m.Monotone()
	var metric, inFlight []float64
	for _, p := range got.Points {
		metric, inFlight = append(metric, p.Metric), append(inFlight, p.InFlight)
	}
	if want := []float64{3, 9, 9, 11}; !slices.Equal(metric, want) {
		t.Errorf("metric = %v, want %v", metric, want)
	}
	if want := []float64{0.3, 2.2, 2.7, 3.7}; !slices.Equal(inFlight, want) {
		t.Errorf("in flight = %v, want %v (already monotone)", inFlight, want)
	}
	if m.Points[2].Metric != 8 {
		t.Error("Monotone changed its receiver")
	}
}
