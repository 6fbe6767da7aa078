package simulate

import (
	"math"
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

// TestScatteredRunsDrawThePhases: a replay starts at any moment of the alarm's 10-s grid and the evaluation
// ticker has a phase of its own, so a scattered run's first scale-out, on a load that breaches every period,
// falls anywhere from 21 s (a 1-s first period breaching, evaluated at once) to 39 s (a full first period,
// evaluated 9 s late), where the deterministic run takes the latest phases: 40 s (three periods closing at
// 10, 20 and 30 s, evaluated a tick late). Without the phases drawn the spread would start at 40 s, where CI
// replays scale out 19-21 s in.
func TestScatteredRunsDrawThePhases(t *testing.T) {
	inst := saturating()
	// 9 rps is far above the target 12's rate (about 8.4): its datapoints, even a 1-s period's, breach.
	sc := loadmodel.Scatter{Quantile: 0.1, RPS: []float64{1, 10}, Mean: []float64{1.6, 14.2}}
	f := Fleet{Name: "plan", Instance: inst, TTotalS: 60, Scaling: scaling(30), InitialInstances: 1}
	tr := constant(9, 3*time.Minute)
	if det := FirstScaleOut(Run(tr, f)); det != 40 {
		t.Fatalf("the deterministic run scaled out at %.0f s, want 40 (three periods and a tick's lag)", det)
	}
	s, _ := ScaleOutSpread(tr, f, sc, 400, nil)
	if s.Missing > 0 {
		t.Fatalf("%d of 400 runs did not scale out", s.Missing)
	}
	if s.Times[0] != 21 || s.Times[len(s.Times)-1] != 39 {
		t.Errorf("first scale-outs from %.0f to %.0f s: want 21 to 39 s", s.Times[0], s.Times[len(s.Times)-1])
	}
	seen := map[float64]bool{}
	for _, at := range s.Times {
		seen[at] = true
	}
	if len(seen) != 19 {
		t.Errorf("%d distinct first scale-out times: want all 19 seconds from 21 to 39", len(seen))
	}
}

// TestPartialDeviate: a period shorter than a tick has fewer samples, so its Maximum's deviate is lower; a
// full period's is unchanged, and the ends are finite.
func TestPartialDeviate(t *testing.T) {
	for _, z := range []float64{-3, 0, 1.5} {
		if got := partialDeviate(z, Tick, Tick); got != z {
			t.Errorf("a full period moved deviate %g to %g", z, got)
		}
		prev := z
		for l := 9; l >= 1; l-- {
			got := partialDeviate(z, time.Duration(l)*time.Second, Tick)
			if !(got < prev) {
				t.Errorf("deviate %g over %d s is %g: want below %g, the longer period's", z, l, got, prev)
			}
			prev = got
		}
	}
	// z = 0 is the median of a full period: the median of 10 samples' Maximum; one sample is below it with
	// probability 0.5^(1/10) = 0.933... so the full period's median is one sample's 0.933 quantile and one
	// sample's median sits at the full period's 0.5^10 quantile, about −3.1 standard deviations.
	if got := partialDeviate(0, time.Second, Tick); math.Abs(got-(-3.097)) > 0.01 {
		t.Errorf("partialDeviate(0, 1 s) = %g, want about −3.097", got)
	}
	if got := partialDeviate(-40, time.Second, Tick); math.IsInf(got, 0) || math.IsNaN(got) {
		t.Errorf("partialDeviate(−40, 1 s) = %g, want finite", got)
	}
}
