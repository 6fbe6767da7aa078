package simulate

import (
	"slices"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// TestScaleOutSpreadBracketsTheDeterministicRun: on a growth trace the scattered runs scale out over a spread
// of times, reproducibly per seed, and the deterministic run (the model's low quantile fed to the alarm: the
// plan's verdict) sits at the spread's late end, never before its median.
func TestScaleOutSpreadBracketsTheDeterministicRun(t *testing.T) {
	inst := saturating()
	// Mean 10-s peaks 2 and 4 above the model's low quantile at its two rates.
	sc := loadmodel.Scatter{Quantile: 0.1, RPS: []float64{1, 10}, Mean: []float64{3.5, 18}}
	f := Fleet{Name: "plan", Instance: inst, TTotalS: 60, Scaling: scaling(30), InitialInstances: 1}
	tr := Growth(6, 12, 1.25, 90*time.Second, 60*time.Second, time.Second)
	det := FirstScaleOut(Run(tr, f))
	if det < 0 {
		t.Fatal("the deterministic run did not scale out")
	}
	s, _ := ScaleOutSpread(tr, f, sc, 200, nil)
	if s.Missing > 0 || len(s.Times) != 200 {
		t.Fatalf("%d of 200 runs did not scale out", s.Missing)
	}
	lo, med, hi := s.Quantile(0.025), s.Quantile(0.5), s.Quantile(0.975)
	t.Logf("first scale-out: deterministic %.0f s; scattered p2.5 %.0f s, median %.0f s, p97.5 %.0f s", det, lo, med, hi)
	if !(hi-lo >= 20) {
		t.Errorf("the spread is %.0f to %.0f s: want the scatter to move the first scale-out by periods", lo, hi)
	}
	if det < med {
		t.Errorf("the deterministic run scaled out at %.0f s, before the scattered median %.0f s: the low quantile should be late", det, med)
	}
	if again, _ := ScaleOutSpread(tr, f, sc, 200, nil); !slices.Equal(again.Times, s.Times) {
		t.Error("the same seeds gave other times")
	}
	if s.PeakInstances[0] < 2 || len(s.PeakInstances) != 200 {
		t.Errorf("peak instances %v: want one per run, each run scaled out", s.PeakInstances[:min(5, len(s.PeakInstances))])
	}
	if _, ok := ScaleOutSpread(tr, f, sc, 200, func() bool { return true }); ok {
		t.Error("a cancel that says stop did not stop the runs")
	}
	if f.Scatter != nil {
		t.Error("ScaleOutSpread changed the caller's fleet")
	}
}
