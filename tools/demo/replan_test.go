package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
)

// The demo follows tts-bench plan's own recommendation: the flags it reads back are the candidate's, from the
// text plan prints (capacity.Candidate.Recommendation), and nothing is read when the search found nothing.
func TestCheapestPassingReadsThePlansRecommendation(t *testing.T) {
	c := capacity.Candidate{Options: capacity.Options{SurgeRatio: 1.45, MinInstances: 2, MaxInstances: 4, ScaleInMargin: 0.2}, InstanceHours: 67.17}
	out := "VERDICT  infeasible\n" + c.Recommendation(90)
	flags, ok := cheapestPassing(out)
	if !ok {
		t.Fatalf("no recommendation read from %q", out)
	}
	if want := strings.Fields(c.Flags()); !slices.Equal(flags, want) {
		t.Errorf("flags read %q, want %q", flags, want)
	}
	for _, bad := range []string{
		"VERDICT  infeasible\n",
		"\n" + capacity.CheapestPassingHeading + "none of 90 configurations (surge 1.05 to 1.45, ...) passes: raise the allowed maximum\n",
		"\n" + capacity.CheapestPassingHeading + "--surge 1.45  (1 instance-hours)\n  rm -rf /\n",
		"\n" + capacity.CheapestPassingHeading + "--surge 1.45  (1 instance-hours)\n  tts-bench plan --surge\n",
		"\n" + capacity.CheapestPassingHeading + "--surge 1.45  (1 instance-hours)\n  tts-bench plan surge 1.45\n",
		"\n" + capacity.CheapestPassingHeading + "--surge 1.45  (1 instance-hours)",
	} {
		if flags, ok := cheapestPassing(bad); ok {
			t.Errorf("read flags %q from %q: want none", flags, bad)
		}
	}
}
