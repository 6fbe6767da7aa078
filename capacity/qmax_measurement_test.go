package capacity

import (
	"strings"
	"testing"
)

// The fields issue 23 adds to the qmax artifact verify.
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
}
