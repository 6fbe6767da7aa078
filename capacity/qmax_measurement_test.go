package capacity

import (
	"strings"
	"testing"
)

// The qmax artifact's measurement fields (retry policy, minimum requests, client bounds) verify.
func TestQMaxMeasurementFields(t *testing.T) {
	m := kokoro(t)
	q := testQMax(m)
	q.RetryPolicy = RetryPolicyNone
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("retry_policy none: %v", errs)
	}
	q.RetryPolicy = "standard"
	if errs := q.Verify(); len(errs) != 1 || !strings.Contains(errs[0].Error(), `retry_policy: is "standard"`) {
		t.Errorf("retry_policy standard: %v, want one error naming retry_policy", errs)
	}

	q = testQMax(m)
	v := q.Steps[1].TTFABP95Ms
	q.Steps[1].TTFABCILowMs, q.Steps[1].TTFABCIHighMs, q.Steps[1].Remeasured, q.Steps[1].Inconclusive = v-10, v+10, true, true
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("a flagged step with its interval: %v", errs)
	}
	q.Steps[1].TTFABCILowMs, q.Steps[1].Remeasured = v+1, false
	errs := q.Verify()
	if len(errs) != 2 || !strings.Contains(errs[0].Error(), "is not an interval around the p95") || !strings.Contains(errs[1].Error(), "steps[1].inconclusive: is true but the step was not remeasured") {
		t.Errorf("an interval beside its p95 and an inconclusive step never remeasured: %v", errs)
	}

	// A partial artifact (complete: false): Verify refuses it, so nothing plans from it; VerifyPartial checks
	// the rest and lets it have no passing step yet.
	q = testQMax(m)
	f, tr := false, true
	q.Complete = &f
	if errs := q.Verify(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "complete: is false") {
		t.Errorf("Verify of a partial artifact: %v, want one error naming complete", errs)
	}
	if errs := q.VerifyPartial(); len(errs) > 0 {
		t.Errorf("VerifyPartial: %v", errs)
	}
	q.Steps = q.Steps[5:] // only the failing step finished
	q.QMax, q.BracketHighestPass, q.BracketLowestFail = 0, 0, 50
	if errs := q.VerifyPartial(); len(errs) > 0 {
		t.Errorf("VerifyPartial with no passing step yet: %v", errs)
	}
	q = testQMax(m)
	q.Complete = &tr
	if errs := q.Verify(); len(errs) > 0 || q.VerifyPartial() == nil {
		t.Errorf("complete: true: Verify %v; VerifyPartial must refuse it", errs)
	}
}
