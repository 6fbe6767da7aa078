package bench

import (
	"testing"
	"time"
)

// TestQMaxTTFABOnlyVerdict: a step's verdict by TTFAB alone is its verdict without the
// stall bound: a step the stall alone failed meets it; a step that also failed TTFAB, or its errors, does not.
func TestQMaxTTFABOnlyVerdict(t *testing.T) {
	j := Judge{SLO: time.Second, SLOPercentile: 95, StallBudget: 250 * time.Millisecond, StallJitter: DefaultStallJitter, MinRequests: 30, MaxErrorRate: 0.01, MinConcurrencyRatio: 0.1}
	ok := func(int) (string, int) { return ClassOK, 200 }
	for _, tt := range []struct {
		name              string
		ttfab, stall      float64
		class             func(int) (string, int)
		meets, meetsTTFAB bool
	}{
		{"passes both", 20, 100, ok, true, true},
		{"stall alone fails", 20, 400, ok, false, true},
		{"TTFAB fails", 1500, 100, ok, false, false},
		{"TTFAB and stall fail", 1500, 400, ok, false, false},
		{"stall and errors fail", 20, 400, func(i int) (string, int) {
			if i%10 == 0 {
				return ClassOther, 500
			}
			return ClassOK, 200
		}, false, false},
	} {
		recs := stepRecords(200, tt.class)
		for i := range recs {
			if recs[i].Class == ClassOK {
				recs[i].TTFABMs, recs[i].StallMs = tt.ttfab, tt.stall
			}
		}
		s := SummarizeStep(4, recs, j)
		if s.MeetsSLO != tt.meets || s.MeetsTTFABSLO != tt.meetsTTFAB {
			t.Errorf("%s: meets_slo %v, meets_ttfab_slo %v (%q); want %v, %v", tt.name, s.MeetsSLO, s.MeetsTTFABSLO, s.FailReasons, tt.meets, tt.meetsTTFAB)
		}
	}
}
