package loadmodel

import (
	"math"
	"testing"
)

// TestAdvanceFillsTheShieldOverTime: above the capacity the excess queues (nothing shed) until the shield is
// full, then it is shed; held there the state is At's saturated one; below the capacity the backlog drains at
// the spare capacity and the state is never better than At's steady state; with no backlog below the capacity it
// is At exactly. model(): capacity 16 rps, last stable point 12 rps with 6 in flight, shield 20, so the room is 14.
func TestAdvanceFillsTheShieldOverTime(t *testing.T) {
	m := model()
	// 20 rps: 4 rps of excess. One second queues 4 requests: in flight 6 + 4, metric 10 + (20 − 10)·4/14.
	p, b := m.Advance(0, 20, 1)
	near(t, "backlog after 1 s at 20 rps", b, 4, 1e-9)
	near(t, "in flight after 1 s", p.InFlight, 10, 1e-9)
	near(t, "metric after 1 s", p.Metric, 10+10*4.0/14, 1e-9)
	near(t, "TTFAB after 1 s", p.TTFABMs, 1600+1000*4.0/16, 1e-9)
	near(t, "shed after 1 s", p.Shed, 0, 1e-12)
	// Three more seconds: 16 > room 14; 2 of the last second's 20 requests are shed.
	for range 3 {
		p, b = m.Advance(b, 20, 1)
	}
	near(t, "backlog when full", b, 14, 1e-9)
	near(t, "shed in the second the shield filled", p.Shed, 2.0/20, 1e-9)
	// Held full: the saturated steady state of At.
	p, b = m.Advance(b, 20, 1)
	at := m.At(20)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"metric", p.Metric, at.Metric}, {"in flight", p.InFlight, at.InFlight}, {"TTFAB", p.TTFABMs, at.TTFABMs}, {"shed", p.Shed, at.Shed}} {
		near(t, "held full: "+c.name, c.got, c.want, 1e-9)
	}
	// 8 rps drains 8 a second: after 1 s 6 left, state above At(8); after 1 more s empty and At(8) exactly.
	p, b = m.Advance(b, 8, 1)
	near(t, "backlog after draining 1 s", b, 6, 1e-9)
	if p.InFlight < m.At(8).InFlight || p.Metric < m.At(8).Metric {
		t.Errorf("draining: %+v better than the steady state %+v", p, m.At(8))
	}
	near(t, "in flight while draining", p.InFlight, 12, 1e-9)
	p, b = m.Advance(b, 8, 1)
	if b != 0 || p != m.At(8) {
		t.Errorf("drained: backlog %g, state %+v, want 0 and At(8) %+v", b, p, m.At(8))
	}
	// No backlog below the capacity: At exactly, at every rate.
	for _, r := range []float64{0, 2, 4, 9, 12, 15.9} {
		if p, b := m.Advance(0, r, 1); b != 0 || p != m.At(r) {
			t.Errorf("Advance(0, %g, 1) = %+v, %g; want At = %+v, 0", r, p, b, m.At(r))
		}
	}
	// Bad inputs do not poison the state.
	for _, bad := range []float64{math.NaN(), math.Inf(1), -3} {
		if _, b := m.Advance(bad, 8, 1); b != 0 {
			t.Errorf("Advance(%g, 8, 1): backlog %g, want 0", bad, b)
		}
	}
}
