package capacity

import (
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
)

// NewQMax folds the steps, sets Q_max both ways, takes the service time from the lowest step that succeeded
// and notes what its checks find, in step order.
func TestNewQMaxFoldsARun(t *testing.T) {
	step := func(c int, ok bool, rps, respMs, inFlight float64) bench.StepResult {
		return bench.StepResult{Concurrency: c, OK: 500, AchievedRPS: rps, ResponseMeanMs: respMs, ResponseP95Ms: respMs * 1.2,
			InFlightMean: inFlight, InFlightPeak: c, MeetsSLO: ok, MeetsTTFABSLO: ok, Usable: true}
	}
	cw := 9.0
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	q, notes := NewQMax(QMaxRun{
		Model: "espeak-ng", Endpoint: "speech-espeak-ng", InstanceType: "local", Transport: TransportSageMakerStream,
		SLOTTFABMs: 300, SLOPercentile: 95, RunID: "qmax-x", StartedAt: start, EndedAt: start.Add(time.Hour),
		CloudWatchPeriod: 10 * time.Second,
		Steps: []MeasuredStep{
			{Step: step(2, true, 40, 50, 2), Client: &ClientUse{CPUCores: 0.1, LagP99Ms: 1, LagMaxMs: 2}},
			{Step: step(4, true, 40, 50, 4)}, // λ·W = 2, half of the 4 in flight: misses Little's law
			{Step: step(8, false, 80, 100, 8), CloudWatchMax: &cw, Remeasured: true},
		},
	})
	if q.QMax != 4 || q.BracketHighestPass != 4 || q.BracketLowestFail != 8 || q.QMaxTTFABOnly == nil || *q.QMaxTTFABOnly != 4 {
		t.Errorf("Q_max %d, bracket %d..%d, by TTFAB alone %v: want 4, 4..8, 4", q.QMax, q.BracketHighestPass, q.BracketLowestFail, q.QMaxTTFABOnly)
	}
	if q.ServiceTimeMeanMs != 50 || q.ServiceTimeP95Ms != 60 {
		t.Errorf("service time %g / %g ms, want the lowest step's 50 / 60", q.ServiceTimeMeanMs, q.ServiceTimeP95Ms)
	}
	if s := q.Steps[0]; s.ClientCPUCores != 0.1 || s.LittlesLawMiss || s.LittlesLawRatio != 1 {
		t.Errorf("step 2 = %+v", s)
	}
	if s := q.Steps[1]; !s.LittlesLawMiss || s.LittlesLawRatio != 0.5 {
		t.Errorf("step 4: Little's law ratio %g, miss %v; want 0.5, true", s.LittlesLawRatio, s.LittlesLawMiss)
	}
	if s := q.Steps[2]; !s.Remeasured || s.CloudWatchConcurrencyMax != 9 || s.CloudWatchRatio != 9.0/8 {
		t.Errorf("step 8 = %+v", s)
	}
	var got []string
	for _, n := range notes {
		got = append(got, n.Check)
	}
	// Step 8's ratio 1.125 is within the tolerance: no CloudWatch note; the lowest step is 2, not 1.
	if strings.Join(got, ",") != NoteLittlesLaw+","+NoteServiceTime || notes[0].Step != 4 ||
		!strings.Contains(notes[1].Text, "taken at concurrency 2") {
		t.Errorf("notes = %+v", notes)
	}
	if q.SchemaVersion != SchemaVersion || q.RetryPolicy != RetryPolicyNone || q.Model != "espeak-ng" || !q.EndedAt.Equal(start.Add(time.Hour)) {
		t.Errorf("run fields: %+v", q)
	}
}
