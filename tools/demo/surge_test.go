package main

import (
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
)

// The surge's tail after the scale-in window is two of the plan's metric periods and 5 s: 25 s for a plan on
// AWS's 10-s periods, 7 s for one measured on an emulator that compresses CloudWatch time tenfold; the rest of
// the trace follows T_plan and the window alone.
func TestSurgeTraceFollowsThePlansClock(t *testing.T) {
	for _, c := range []struct {
		periodS int
		tail    time.Duration
	}{{10, 25 * time.Second}, {1, 7 * time.Second}} {
		p := &capacity.Plan{}
		p.Inputs.SurgeRatio, p.Inputs.MetricPeriodS = 1.25, c.periodS
		p.Derived.ScaleOutRPS, p.Derived.ScaleInRPS, p.Derived.TPlanS = 13, 5.2, 33.3
		p.Derived.ScaleInEvaluationPeriods, p.Derived.ScaleInPeriodS = 34/c.periodS+1, c.periodS
		_, at, surgeFor, total, _, _, _ := (&demo{p: p}).surgeTrace()
		window := time.Duration(p.Derived.ScaleInEvaluationPeriods*p.Derived.ScaleInPeriodS) * time.Second
		if at != 10*time.Second || surgeFor != 33*time.Second {
			t.Errorf("period %d s: surge at %s for %s; want 10 s and T_plan", c.periodS, at, surgeFor)
		}
		if got := total - at - surgeFor - window; got != c.tail {
			t.Errorf("period %d s: %s after the scale-in window, want %s", c.periodS, got, c.tail)
		}
	}
}
