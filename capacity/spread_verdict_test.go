package capacity

import (
	"testing"

	"github.com/speech-infra/speech-infra/simulate"
)

// A simulation with scattered runs holds only when its own run holds and at least ScatterHoldShare of the
// scattered runs do: 190 of 200 is 95%, 189 is not; a violation minute in the run itself fails whatever the
// scattered runs did; without scattered runs the run alone decides.
func TestPlanHoldsCountsTheScatteredRuns(t *testing.T) {
	held := simulate.Result{}
	violated := simulate.Result{ViolationMinutes: 1}
	for _, c := range []struct {
		name   string
		rep    Report
		holds  bool
		spread bool
	}{
		{"no scattered runs, the run held", Report{Plan: held}, true, true},
		{"no scattered runs, the run violated", Report{Plan: violated}, false, true},
		{"190 of 200 held", Report{Plan: held, Spread: &SpreadSummary{Runs: 200, HeldRuns: 190}}, true, true},
		{"189 of 200 held", Report{Plan: held, Spread: &SpreadSummary{Runs: 200, HeldRuns: 189}}, false, false},
		{"all scattered runs held, the run violated", Report{Plan: violated, Spread: &SpreadSummary{Runs: 200, HeldRuns: 200}}, false, true},
	} {
		if got := c.rep.PlanHolds(); got != c.holds {
			t.Errorf("%s: PlanHolds %v, want %v", c.name, got, c.holds)
		}
		if got := c.rep.Spread.Holds(); got != c.spread {
			t.Errorf("%s: the spread holds %v, want %v", c.name, got, c.spread)
		}
	}
}
