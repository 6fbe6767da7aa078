// Package plantest writes, for tests, the artifacts and plan of a run shaped like a live espeak-ng
// measurement on the local emulator: what speech-infra's redeploy test and tts-bench's drift test deploy.
package plantest

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"path/filepath"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/capacitytest"
	"github.com/speech-infra/speech-infra/models"
)

// WriteEspeakPlan measures nothing: it writes qmax and ttotal artifacts shaped like a live espeak-ng run on
// the local emulator with the given container digest, derives the plan from them with the capacity package
// (as tts-bench plan does) and writes all three into dir. The plan passes the gate for a local deploy of
// that container.
func WriteEspeakPlan(t testing.TB, dir, digest string) *capacity.Plan {
	t.Helper()
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	fake := func(s string) string {
		sum := sha256.Sum256([]byte(s))
		return "sha256:" + hex.EncodeToString(sum[:])
	}
	start := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)
	q := &capacity.QMax{
		SchemaVersion: capacity.SchemaVersion, Model: m.ID, Endpoint: m.EndpointName(), InstanceType: models.LocalInstanceType,
		ModelRevision: m.Revision(), ContainerDigest: digest, Transport: capacity.TransportSageMakerStream,
		SLOTTFABMs: m.SLO.TTFABMs, SLOPercentile: m.SLO.Percentile,
		RunID: "qmax-20250602T090000Z", StartedAt: start, EndedAt: start.Add(20 * time.Minute),
		QMax: 12, BracketHighestPass: 12, BracketLowestFail: 16,
		ServiceTimeMeanMs: 50, ServiceTimeP95Ms: 60,
		RecordsFile: "qmax-records.jsonl", RecordsSHA256: fake("espeak records"),
	}
	for _, r := range []struct {
		c                  int
		p50, p95, p99, rms float64
	}{
		{1, 25, 30, 35, 50}, {4, 30, 40, 45, 50}, {8, 40, 60, 70, 50}, {12, 300, 400, 450, 52}, {16, 1200, 1500, 1700, 300},
	} {
		q.Steps = append(q.Steps, capacity.QMaxStep{
			Concurrency: r.c, OKCount: 1000, TTFABP50Ms: r.p50, TTFABP95Ms: r.p95, TTFABP99Ms: r.p99,
			ResponseMeanMs: r.rms, AchievedRPS: math.Round(float64(r.c)/(r.rms/1000)*100) / 100,
			ClientConcurrencyMean: float64(r.c), ClientConcurrencyPeak: r.c,
			CloudWatchConcurrencyMax: float64(r.c), CloudWatchRatio: 1,
			MeetsSLO: r.p95 <= float64(m.SLO.TTFABMs), Usable: true,
		})
	}
	// The open-loop rate staircase at qmax's default fractions of the highest throughput (c = 12, 230.77 rps):
	// about 50 ms a request, so λ × 0.05 s in flight, its 10-s peak a few standard deviations above; at 100% and
	// 110% it falls behind (completes less than 95% of the arrivals).
	q.HighestThroughputRPS, q.RateQueueMaxDepth = q.Steps[3].AchievedRPS, m.QueueMaxDepth
	for _, r := range []struct{ f, arrival, achieved, inFlight, max10s, p95 float64 }{
		{0.3, 69.3, 69.3, 3.5, 7, 40}, {0.5, 115.3, 115.3, 5.8, 11, 50}, {0.7, 161.6, 161.4, 8.1, 14, 70},
		{0.85, 196.1, 195.7, 10.2, 16, 300}, {1.0, 230.9, 205, 60, 80, 1500}, {1.1, 253.7, 210, 150, 190, 3000},
	} {
		q.RateSteps = append(q.RateSteps, capacity.RateStep{Fraction: r.f, OfferedRPS: r.f * q.HighestThroughputRPS, ArrivalRPS: r.arrival,
			AchievedRPS: r.achieved, InFlightMean: r.inFlight, InFlightMax10s: r.max10s, CloudWatchMax10s: r.max10s,
			TTFABP50Ms: r.p95 * 0.7, TTFABP95Ms: r.p95, TTFABP99Ms: r.p95 * 1.2, OKCount: int(r.achieved * 60),
			MeetsSLO: r.p95 <= float64(m.SLO.TTFABMs), Usable: true})
	}
	tt := &capacity.TTotal{
		SchemaVersion: capacity.SchemaVersion, Model: m.ID, Endpoint: m.EndpointName(), InstanceType: models.LocalInstanceType,
		Transport: capacity.TransportSageMakerStream, RunID: "ttotal-20250602T100000Z", FromInstances: 1, ToInstances: 2, MissingStages: []string{},
	}
	at := start.Add(time.Hour)
	prev := ""
	for _, s := range []struct {
		name, source string
		afterS       float64
	}{
		{"desired_count_set", "control-plane", 0}, {"container_started", "container", 0.4}, {"model_loaded", "container", 0.1},
		{"ping_healthy", "container", 0.2}, {"in_service", "control-plane", 0.3}, {"first_success", "client", 0.1},
	} {
		at = at.Add(time.Duration(s.afterS * float64(time.Second)))
		tt.Timeline = append(tt.Timeline, capacity.Stage{Stage: s.name, At: at, Source: s.source})
		if prev != "" {
			tt.Durations = append(tt.Durations, capacity.StageDuration{From: prev, To: s.name, DurationS: s.afterS})
			tt.TTotalS += s.afterS
		}
		prev = s.name
	}
	tt.TTotalS = math.Round(tt.TTotalS*1000) / 1000
	tt.DominantStage = "container_started"
	tt.ClockStart, tt.PlatformS, tt.ContainerS = "desired_count_set", 0.4, 0.7
	tt.PlatformShare, tt.ContainerShare = 0.4/1.1, 0.7/1.1

	qPath, tPath := filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile)
	// The raw records beside the artifact, which the gate folds again: synthesized to give the
	// figures above, the artifact's other figures then what they give.
	if err := capacitytest.WriteRecords(qPath, q, 0); err != nil {
		t.Fatal(err)
	}
	// CloudWatch saw what the synthesized client saw (ratio 1): the instance model scales the 10th-percentile
	// peaks the records give by CloudWatch ÷ client, and figures set apart from the records would skew it.
	for i := range q.RateSteps {
		q.RateSteps[i].CloudWatchMax10s = q.RateSteps[i].InFlightMax10s
	}
	if err := capacity.WriteJSON(qPath, q); err != nil {
		t.Fatal(err)
	}
	if tt.QMaxSHA256, err = capacity.FileDigest(qPath); err != nil {
		t.Fatal(err)
	}
	if err := capacity.WriteJSON(tPath, tt); err != nil {
		t.Fatal(err)
	}
	ms, err := capacity.LoadMeasurement(qPath, tPath)
	if err != nil {
		t.Fatal(err)
	}
	o := capacity.DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 300, 20
	p, err := capacity.FromArtifacts(m, ms, o)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Feasible() {
		t.Fatalf("the espeak-ng test plan is infeasible: %+v", p.Findings)
	}
	if err := capacity.WriteJSON(filepath.Join(dir, capacity.PlanFile), p); err != nil {
		t.Fatal(err)
	}
	return p
}
