package capacity

import (
	"context"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/models"
)

var testDigest = DigestBytes([]byte("test container"))

// testQMax is a valid qmax artifact for m: constant 2 s responses, Q_max 40, lowest failing step 50, and the
// rate staircase of testRateSteps (see there for the instance model it gives).
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
	q.HighestThroughputRPS = 25 // the c = 50 step's 25 rps
	q.RateQueueMaxDepth = m.QueueMaxDepth
	q.RateSteps = testRateSteps(m, q.HighestThroughputRPS)
	return q
}

// testRate is one row of the test rate staircase: arrivals and completions per second, time-averaged and
// 10-s peak in flight, p95 TTFAB.
type testRate struct{ fraction, arrival, achieved, inFlight, max10s, p95 float64 }

// testRates is an instance that saturates (M/M/1-like): in flight stays below 3 up to 70% of the highest
// throughput, then climbs; at 100% and 110% it no longer keeps up (achieved < 95% of arrivals) and the
// queue grows. CloudWatch was not read, so the metric is the client's 10-s peak × the CloudWatch ratio (1).
//
// The instance model it gives (QueueDepth 50, the kokoro catalog's): points at the completion rates 7.5, 12.5,
// 17.4 and 21 rps with metrics 2, 4, 8, 14 and p95 TTFAB 800, 1100, 1600, 2200 ms, and the 100% step that fell
// behind as an unsteady point at the 22 rps it completed (TTFAB 5000 ms, in flight 30); capacity 22.5 rps (the
// most the open-loop steps completed, since two fell behind; the closed-loop c = 50 step completed 25). TTFAB
// crosses the 3000 ms SLO between 21 and 22 rps, at 21.29; the estimate stops at the highest steady point that
// met the SLO, 21 rps (SafeEstimate), and the safe rate is that point's 95% lower bound: 2520 completions in its
// 120-s window bound the rate at 20.317 rps (SafeRPS).
var testRates = []testRate{
	{0.3, 7.5, 7.5, 0.5, 2, 800},
	{0.5, 12.5, 12.5, 1, 4, 1100},
	{0.7, 17.5, 17.4, 2.5, 8, 1600},
	{0.85, 21.25, 21, 6, 14, 2200},
	{1.0, 25, 22, 30, 45, 5000},
	{1.1, 27.5, 22.5, 45, 50, 9000},
}

// testSafeRPS is the SafeRPS of the test staircase (see testRates): the 95% lower confidence bound of the
// completion rate of its highest step that met the SLO (21 rps: 2520 completions in 120 s).
const testSafeRPS = 20.31668

func testRateSteps(m models.Model, highest float64) []RateStep {
	var out []RateStep
	for _, r := range testRates {
		ok := int(r.achieved * 120)
		out = append(out, RateStep{
			Fraction: r.fraction, OfferedRPS: r.fraction * highest, ArrivalRPS: r.arrival, AchievedRPS: r.achieved,
			InFlightMean: r.inFlight, InFlightMax10s: r.max10s, TTFABP50Ms: r.p95 * 0.7, TTFABP95Ms: r.p95, TTFABP99Ms: r.p95 * 1.2,
			StallP95Ms: 30, OKCount: ok, MeetsSLO: r.p95 <= float64(m.SLO.TTFABMs), Usable: true,
		})
	}
	return out
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
		Probe: testProbe(m),
	}
}

// testProbe is a probe that was past the SLO before in_service (the fleet past its Q_max).
func testProbe(m models.Model) *TTotalProbe {
	slo := float64(m.SLO.TTFABMs)
	return &TTotalProbe{Concurrency: 50, ConcurrencyBasis: "test", SLOTTFABMs: m.SLO.TTFABMs, P95BeforeScaleOutMs: 1.5 * slo, SamplesBeforeScaleOut: 100,
		PeakP95BeforeInServiceMs: 1.6 * slo, ExceededSLOBeforeInService: true, QMaxP95BeforeMs: 1.5 * slo, QMaxP95AfterMs: 0.5 * slo, Slowdown: 1,
		Tolerance: 1.25, RecoveryThresholdMs: 0.625 * slo, WindowS: 30, MinSamples: 20, RecoveryWindows: 10, InstancesBeforeScaleOut: []string{"a"}}
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

// envelopeOf simulates the envelope of in and d to the end.
func envelopeOf(t *testing.T, in Inputs, d Derived) Envelope {
	t.Helper()
	e, err := simulateEnvelope(context.Background(), in, d)
	if err != nil {
		t.Fatal(err)
	}
	return e
}
