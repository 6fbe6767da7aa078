package capacity

import (
	"testing"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// A measured instance that met the SLO at no rate (a loaded machine, an SLO below its uncontended TTFAB) has a
// safe rate of 0: the default trough is then peak ÷ s, a valid input, so the plan is built and reports itself
// infeasible, instead of refusing its own default trough of 0 as bad input.
func TestDefaultTroughOfAnInstanceNeverSafe(t *testing.T) {
	m := loadmodel.Model{Measured: true, CapacityRPS: 10, QueueDepth: 8, CloudWatchRatio: 1,
		SLO:    loadmodel.SLO{TTFABMs: 100, Percentile: 95, StallMs: 1000},
		Points: []loadmodel.Point{{RPS: 2, Metric: 1, InFlight: 1, TTFABMs: 500}, {RPS: 8, Metric: 6, InFlight: 6, TTFABMs: 900}}}
	if err := m.Validate(); err != nil {
		t.Fatalf("the model: %v", err)
	}
	if s := m.SafeRPS(); s != 0 {
		t.Fatalf("SafeRPS = %g, want 0: the case this test is about", s)
	}
	in := Inputs{Instance: m, SurgeRatio: 1.25, PeakRPS: 10, MinInstances: 1, ScaleInMargin: 0.1}
	defaultTrough(&in)
	if !(in.TroughRPS > 0 && in.TroughRPS <= in.PeakRPS) {
		t.Errorf("default trough %g, want a rate in (0, peak %g]", in.TroughRPS, in.PeakRPS)
	}
}
