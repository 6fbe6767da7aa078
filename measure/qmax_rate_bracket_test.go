package measure

import (
	"testing"

	"github.com/speech-infra/speech-infra/bench"
)

// RateBracket is the conservative bracket of the SLO's boundary among the usable steps: the lowest that missed
// and the highest below it that met; none when either end is missing.
func TestRateBracket(t *testing.T) {
	step := func(f float64, meets, usable bool) bench.RateStepResult {
		s := bench.RateStepResult{ID: bench.RateStepID{Fraction: f}}
		s.MeetsSLO, s.Usable = meets, usable
		return s
	}
	for _, tc := range []struct {
		name        string
		steps       []bench.RateStepResult
		met, missed float64
	}{
		{"bracketed", []bench.RateStepResult{step(0.3, true, true), step(0.85, true, true), step(1, false, true), step(1.1, false, true)}, 0.85, 1},
		{"a refinement step between, listed after", []bench.RateStepResult{step(0.85, true, true), step(1, false, true), step(0.925, true, true)}, 0.925, 1},
		{"every step met", []bench.RateStepResult{step(0.3, true, true), step(0.95, true, true)}, 0, 0},
		{"no step met", []bench.RateStepResult{step(0.3, false, true), step(0.95, false, true)}, 0, 0},
		{"unusable steps ignored", []bench.RateStepResult{step(0.5, true, true), step(0.7, false, false), step(0.8, true, false), step(1, false, true)}, 0.5, 1},
		{"a step that met above one that missed is not the lower end", []bench.RateStepResult{step(0.5, true, true), step(0.7, false, true), step(0.85, true, true), step(1, false, true)}, 0.5, 0.7},
	} {
		met, missed := RateBracket(tc.steps)
		if met != tc.met || missed != tc.missed {
			t.Errorf("%s: bracket %g to %g, want %g to %g", tc.name, met, missed, tc.met, tc.missed)
		}
	}
}
