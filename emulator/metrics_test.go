package emulator

import (
	"testing"
	"time"
)

// TestMetricStoreSetKeepsAddedValues: the sampler rewrites its interval's datapoint several times a period
// (set); a value another source added in the interval (add) must survive every rewrite, and each rewrite must
// replace only what the previous one wrote. A set that cleared the bucket left an alarm on an added value
// seeing the sampler's 0 whenever the sampler wrote last in the period.
func TestMetricStoreSetKeepsAddedValues(t *testing.T) {
	m := newMetricStore(time.Second)
	dims := endpointDims("e", "AllTraffic")
	at := utc("2026-12-03T10:00:00Z")
	m.set(namespaceSageMaker, metricConcurrent, dims, at, []float64{1})
	m.add(namespaceSageMaker, metricConcurrent, dims, at.Add(300*time.Millisecond), 8)
	m.set(namespaceSageMaker, metricConcurrent, dims, at.Add(600*time.Millisecond), []float64{2, 0})
	m.set(namespaceSageMaker, metricConcurrent, dims, at.Add(900*time.Millisecond), []float64{3, 1})
	pts := m.query(namespaceSageMaker, metricConcurrent, dims, at, at, at.Add(time.Second), time.Second)
	if len(pts) != 1 {
		t.Fatalf("%d datapoints, want 1", len(pts))
	}
	p := pts[0]
	for _, c := range []struct {
		stat string
		want float64
	}{{"Maximum", 8}, {"Minimum", 1}, {"SampleCount", 3}, {"Sum", 12}} {
		if got, _ := p.stat(c.stat); got != c.want {
			t.Errorf("%s = %g, want %g (samples %v: the last set's 3 and 1, and the added 8)", c.stat, got, c.want, p.samples)
		}
	}
}
