package capacity

import (
	"time"

	"github.com/speech-infra/speech-infra/models"
)

var testDigest = DigestBytes([]byte("test container"))

// testQMax is a valid qmax artifact for m: constant 2 s responses, Q_max 40, lowest failing step 50.
func testQMax(m models.Model) *QMax {
	start := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	q := &QMax{
		SchemaVersion: SchemaVersion, Model: m.ID, Endpoint: m.EndpointName(), InstanceType: m.InstanceType,
		ModelRevision: m.Revision(), ContainerDigest: testDigest, Transport: TransportSageMakerStream,
		SLOTTFABMs: m.SLO.TTFABMs, SLOPercentile: m.SLO.Percentile, RunID: "qmax-test",
		StartedAt: start, EndedAt: start.Add(time.Hour), QMax: 40, BracketHighestPass: 40, BracketLowestFail: 50,
		ServiceTimeMeanMs: 2000, ServiceTimeP95Ms: 2100, RecordsFile: "records.jsonl", RecordsSHA256: DigestBytes([]byte("records")),
	}
	for _, c := range []int{1, 10, 20, 30, 40, 50} {
		p95 := 500 + 60*float64(c)
		q.Steps = append(q.Steps, QMaxStep{
			Concurrency: c, OKCount: 100 * c, TTFABP50Ms: p95 * 0.8, TTFABP95Ms: p95, TTFABP99Ms: p95 * 1.1,
			ResponseMeanMs: 2000, AchievedRPS: float64(c) / 2, ClientConcurrencyMean: float64(c), ClientConcurrencyPeak: c,
			CloudWatchConcurrencyMax: float64(c), CloudWatchRatio: 1, MeetsSLO: p95 <= float64(m.SLO.TTFABMs), Usable: true,
			StallP95Ms: 50, StallBudgetMs: float64(m.SLO.StallBudgetMs), StallJitterMs: 50, // at the bound: still passing
		})
	}
	return q
}

// testTTotal is a valid ttotal artifact for m: 300 s in three stages.
func testTTotal(m models.Model) *TTotal {
	t0 := time.Date(2025, 1, 2, 6, 0, 0, 0, time.UTC)
	return &TTotal{
		SchemaVersion: SchemaVersion, Model: m.ID, Endpoint: m.EndpointName(), InstanceType: m.InstanceType,
		Transport: TransportSageMakerStream, QMaxSHA256: testDigest, RunID: "ttotal-test", FromInstances: 1, ToInstances: 2,
		Timeline: []Stage{
			{"desired_count_set", t0, "control-plane", nil},
			{"container_started", t0.Add(200 * time.Second), "container", nil},
			{"first_success", t0.Add(300 * time.Second), "client", nil},
		},
		Durations: []StageDuration{
			{"desired_count_set", "container_started", 200},
			{"container_started", "first_success", 100},
		},
		ClockStart: "desired_count_set", TTotalS: 300, DominantStage: "container_started", MissingStages: []string{},
		PlatformS: 200, ContainerS: 100, PlatformShare: 2.0 / 3, ContainerShare: 1.0 / 3,
	}
}

// testMeasurement pairs the artifacts as LoadMeasurement would, with tt pointing at q's digest.
func testMeasurement(q *QMax, tt *TTotal) Measurement {
	data, err := MarshalArtifact(q)
	if err != nil {
		panic(err)
	}
	d := DigestBytes(data)
	if tt.QMaxSHA256 == testDigest {
		tt.QMaxSHA256 = d
	}
	td, err := MarshalArtifact(tt)
	if err != nil {
		panic(err)
	}
	return Measurement{QMax: q, QMaxFile: QMaxFile, QMaxSHA256: d, TTotal: tt, TTotalFile: TTotalFile, TTotalSHA256: DigestBytes(td)}
}
