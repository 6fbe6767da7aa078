// Command fixturegen writes the capacity fixtures under testdata/plans: a valid measured, feasible plan for
// kokoro-82m with its qmax and ttotal artifacts, and one variant per way the deploy gate refuses a plan. The
// fixtures are generated, not hand-written, so that their digests and derived numbers always agree with the
// capacity package; the test beside this file fails when the committed fixtures are stale.
//
// Usage, from the repository root:
//
//	go run ./capacity/internal/fixturegen [-out testdata/plans]
//
// With -container-dir the fixtures are "measured" against that directory's real source digest instead of the
// fixed fake one, so that a real synthesis (npx cdk synth -c plan=...) accepts the valid case; `make
// fixture-plans` writes such a set to .cache/fixture-plans for the README's demonstration and the linters.
package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"text/template"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/capacitytest"
	"github.com/speech-infra/speech-infra/models"
)

// ContainerDigest is the container digest every fixture except fingerprint-mismatch was "measured" with; a
// deployment built for the fixtures passes it as its container digest.
var ContainerDigest = fakeDigest("speech-infra fixture container v1")

// OtherContainerDigest is the digest the fingerprint-mismatch fixture was measured with: an older container.
var OtherContainerDigest = fakeDigest("speech-infra fixture container v0")

func fakeDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Cases lists the fixture directories and what each is for.
var Cases = []struct{ Name, Purpose string }{
	{"valid", "measured (with qmax's rate staircase), live, feasible on its whole envelope; fingerprint matches kokoro-82m on ml.g5.xlarge with ContainerDigest: the gate accepts it"},
	{"dry-run", "feasible, but both artifacts are dry runs: the gate refuses it (dry run)"},
	{"infeasible", "measured and live, but peak 200 rps needs more than the catalog's 9 instances: the gate refuses it (infeasible)"},
	{"what-if", "built with --what-if (measured: false): the gate refuses it (what-if)"},
	{"tampered", "the valid plan, but qmax.json was edited after planning: the gate refuses it (digest mismatch)"},
	{"fingerprint-mismatch", "measured with an older container (OtherContainerDigest): the gate refuses it (fingerprint)"},
}

func main() {
	out := flag.String("out", filepath.Join("testdata", "plans"), "directory to write the fixtures into")
	containerDir := flag.String("container-dir", "", "measure the fixtures against this container source directory's digest instead of the fixed fake digest")
	flag.Parse()
	if *containerDir != "" {
		d, err := capacity.SourceDigest(*containerDir)
		if err != nil {
			fmt.Fprintln(os.Stderr, "fixturegen: -container-dir:", err)
			os.Exit(2)
		}
		ContainerDigest = d
	}
	if err := Generate(*out); err != nil {
		fmt.Fprintln(os.Stderr, "fixturegen:", err)
		os.Exit(1)
	}
}

// Generate writes every fixture and the README under dir.
func Generate(dir string) error {
	cat, err := models.Default()
	if err != nil {
		return err
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		return err
	}
	opts := capacity.DefaultOptions(m)
	opts.PeakRPS, opts.TroughRPS = 80, 10
	start := time.Date(2025, 6, 2, 9, 0, 0, 0, time.UTC)

	var valid *capacity.Plan
	for _, c := range Cases {
		caseDir := filepath.Join(dir, c.Name)
		digest, runID := ContainerDigest, "qmax-20250602T090000Z"
		switch c.Name {
		case "dry-run":
			runID = "qmax-20250602T090000Z-dry"
		case "fingerprint-mismatch":
			digest = OtherContainerDigest
		}
		q, records, err := kokoroQMax(m, start, digest, runID)
		if err != nil {
			return fmt.Errorf("fixture %s: %w", c.Name, err)
		}
		t := kokoroTTotal(m, start.Add(2*time.Hour))
		o := opts
		switch c.Name {
		case "dry-run":
			q.DryRun, t.DryRun = true, true
			t.RunID = "ttotal-20250602T110000Z-dry"
		case "infeasible":
			o.PeakRPS = 200
		}
		if err := capacity.WriteFileAtomic(filepath.Join(caseDir, q.RecordsFile), records); err != nil {
			return err
		}
		p, err := writeCase(caseDir, m, q, t, o)
		if err != nil {
			return fmt.Errorf("fixture %s: %w", c.Name, err)
		}
		switch c.Name {
		case "valid":
			valid = p
		case "what-if":
			w := capacity.WhatIf{QMax: 40, TTotalS: 280.8, ThroughputRPS: 13.64, ContainerDigest: ContainerDigest}
			wp, err := capacity.FromWhatIf(m, w, opts)
			if err != nil {
				return fmt.Errorf("fixture what-if: %w", err)
			}
			if err := capacity.WriteJSON(filepath.Join(caseDir, capacity.PlanFile), wp); err != nil {
				return err
			}
		case "tampered":
			path := filepath.Join(caseDir, capacity.QMaxFile)
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			edited := bytes.Replace(data, []byte(`"ttfab_p50_ms": 1450`), []byte(`"ttfab_p50_ms": 1350`), 1)
			if bytes.Equal(edited, data) {
				return fmt.Errorf("fixture tampered: the edit did not apply")
			}
			if err := capacity.WriteFileAtomic(path, edited); err != nil {
				return err
			}
		}
	}
	return writeReadme(filepath.Join(dir, "README.md"), valid)
}

// writeCase writes the two artifacts, builds the plan from the written files (so the recorded digests are
// the files' digests) and writes it.
func writeCase(dir string, m models.Model, q *capacity.QMax, t *capacity.TTotal, o capacity.Options) (*capacity.Plan, error) {
	qPath, tPath := filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile)
	if err := capacity.WriteJSON(qPath, q); err != nil {
		return nil, err
	}
	qDigest, err := capacity.FileDigest(qPath)
	if err != nil {
		return nil, err
	}
	t.QMaxSHA256 = qDigest
	if err := capacity.WriteJSON(tPath, t); err != nil {
		return nil, err
	}
	ms, err := capacity.LoadMeasurement(qPath, tPath)
	if err != nil {
		return nil, err
	}
	p, err := capacity.FromArtifacts(m, ms, o)
	if err != nil {
		return nil, err
	}
	return p, capacity.WriteJSON(filepath.Join(dir, capacity.PlanFile), p)
}

// fixtureWindow is every step's measure window: 100 s makes every two-decimal rate a whole number of requests.
const fixtureWindow = 100 * time.Second

// kokoroQMax is a plausible staircase for Kokoro-82M on one A10G, with its raw records (gzip-compressed JSON
// lines, the file the artifact names): batching keeps the full-response time nearly flat up to 40 concurrent
// requests, then the GPU saturates and TTFAB p95 passes the 3 s SLO. The records are synthesized to give the
// rows below (capacitytest.Records), and the steps are folded from them as tts-bench qmax folds them.
func kokoroQMax(m models.Model, start time.Time, digest, runID string) (*capacity.QMax, []byte, error) {
	type row struct {
		c                  int
		p50, p95, p99, rms float64
	}
	rows := []row{
		{1, 390, 420, 450, 2000},
		{5, 430, 520, 560, 2020},
		{10, 560, 700, 760, 2050},
		{20, 870, 1150, 1240, 2120},
		{30, 1450, 1800, 1950, 2200},
		{40, 2100, 2750, 2980, 2260},
		{50, 3350, 4600, 5200, 3300},
	}
	fractions := []float64{0.3, 0.5, 0.7, 0.85, 1.0, 1.1}
	q := &capacity.QMax{
		SchemaVersion: capacity.SchemaVersion, Model: m.ID, Endpoint: m.EndpointName(), InstanceType: m.InstanceType,
		ModelRevision: m.Revision(), ContainerDigest: digest, Transport: capacity.TransportSageMakerStream,
		SLOTTFABMs: m.SLO.TTFABMs, SLOPercentile: m.SLO.Percentile,
		RunID: runID, StartedAt: start, EndedAt: start.Add(58*time.Minute + 12*time.Second),
		RecordsFile: "qmax.records.jsonl.gz", RetryPolicy: capacity.RetryPolicyNone,
		Settings: &capacity.QMaxSettings{
			Ladder: []int{1, 5, 10, 20, 30, 40, 50}, MaxConcurrency: 50,
			SettleS: 30, HoldS: fixtureWindow.Seconds(), MeasureWindowS: fixtureWindow.Seconds(), RequestTimeoutS: 60,
			StallBudgetMs: float64(m.SLO.StallBudgetMs), MinRequests: 40,
			RateFractions: fractions, RateSettleS: 30, RateHoldS: fixtureWindow.Seconds(), RateMeasureWindowS: fixtureWindow.Seconds(),
			Seed: 1, Corpus: fakeDigest("speech-infra fixture corpus"),
		},
	}
	for _, r := range rows {
		q.Steps = append(q.Steps, capacity.QMaxStep{
			Concurrency: r.c, AchievedRPS: math.Round(float64(r.c)/(r.rms/1000)*100) / 100,
			TTFABP50Ms: r.p50, TTFABP95Ms: r.p95, TTFABP99Ms: r.p99, StallP95Ms: math.Round(r.p95/60*10) / 10,
			StallBudgetMs: float64(m.SLO.StallBudgetMs), StallJitterMs: float64(bench.DefaultStallJitter / time.Millisecond),
			CloudWatchConcurrencyMax: float64(r.c), CloudWatchRatio: 1, Usable: true,
		})
	}
	q.RateSteps, q.RateQueueMaxDepth = kokoroRateSteps(fractions), m.QueueMaxDepth
	records, err := capacitytest.Records(q, fixtureWindow)
	if err != nil {
		return nil, nil, err
	}
	return q, records, nil
}

// kokoroRateSteps is the open-loop rate staircase that follows the closed-loop one, at qmax's default fractions
// of the highest closed-loop throughput (c = 40: 17.7 rps), with the CloudWatch 10-s maxima read for each step.
// A batching GPU holds each request about 2 s, so the requests in flight are the arrival rate × the response
// time (Little's law); TTFAB follows the closed-loop step at the same concurrency. At 100% and 110% of the
// highest throughput the instance no longer keeps up (it completes less than 95% of the arrivals) and the
// unbounded measurement queue grows: those steps fail the SLO and the instance model leaves them out. The
// model (queue shield 50) meets the 3 s SLO up to about 17.1 rps per instance.
func kokoroRateSteps(fractions []float64) []capacity.RateStep {
	type row struct {
		arrival, achieved, inFlight, max10s float64
		p50, p95, p99, stall                float64
	}
	rows := []row{
		{5.29, 5.29, 10.7, 17, 560, 700, 760, 12},
		{8.87, 8.86, 18.3, 27, 850, 1130, 1220, 19},
		{12.41, 12.38, 26.4, 36, 1380, 1750, 1900, 29},
		{15.02, 14.97, 33.2, 43, 1700, 2250, 2480, 38},
		{17.68, 16.1, 71.5, 96, 4800, 7900, 9100, 130},
		{19.49, 16.3, 160, 210, 11800, 17500, 19400, 260},
	}
	var out []capacity.RateStep
	for i, r := range rows {
		out = append(out, capacity.RateStep{
			Fraction: fractions[i], ArrivalRPS: r.arrival, AchievedRPS: r.achieved, InFlightMean: r.inFlight, CloudWatchMax10s: r.max10s,
			TTFABP50Ms: r.p50, TTFABP95Ms: r.p95, TTFABP99Ms: r.p99, StallP95Ms: r.stall, Usable: true,
		})
	}
	return out
}

// kokoroTTotal is a plausible scale-out from one to two ml.g5.xlarge instances.
func kokoroTTotal(m models.Model, t0 time.Time) *capacity.TTotal {
	stages := []struct {
		name, source string
		afterS       float64
	}{
		{capacity.StageDesiredSet, capacity.SourceClient, 0},
		{capacity.StageContainerStarted, capacity.SourceContainer, 142.6},
		{capacity.StageWeightsVerified, capacity.SourceContainer, 58.3},
		{capacity.StageEngineLoaded, capacity.SourceContainer, 21.4},
		{capacity.StageReady, capacity.SourceContainer, 6.1},
		{capacity.StageInService, capacity.SourceClient, 48.9},
		{capacity.StageFirstServedByNewInstance, capacity.SourceClient, 1.2},
		{capacity.StageTrafficRecovered, capacity.SourceClient, 2.3},
	}
	t := &capacity.TTotal{
		SchemaVersion: capacity.SchemaVersion, Model: m.ID, Endpoint: m.EndpointName(), InstanceType: m.InstanceType,
		Transport: capacity.TransportSageMakerStream, RunID: "ttotal-20250602T110000Z",
		FromInstances: 1, ToInstances: 2, MissingStages: []string{},
	}
	at := t0
	longest := -1.0
	for i, s := range stages {
		at = at.Add(time.Duration(math.Round(s.afterS*1000)) * time.Millisecond)
		t.Timeline = append(t.Timeline, capacity.Stage{Stage: s.name, At: at, Source: s.source})
		if i == 0 {
			continue
		}
		t.Durations = append(t.Durations, capacity.StageDuration{From: stages[i-1].name, To: s.name, DurationS: s.afterS})
		t.TTotalS += s.afterS
		if s.afterS > longest {
			longest, t.DominantStage = s.afterS, s.name
		}
	}
	t.TTotalS = math.Round(t.TTotalS*1000) / 1000
	t.ClockStart = capacity.StageDesiredSet
	t.PlatformS = stages[1].afterS
	t.ContainerS = math.Round((t.TTotalS-t.PlatformS)*1000) / 1000
	t.PlatformShare, t.ContainerShare = t.PlatformS/t.TTotalS, t.ContainerS/t.TTotalS
	// The default probe: the qmax step past Q_max (50 in flight, p95 4600 ms) on the one instance; after the
	// scale-out the busiest instance holds 25 (the curve's 1475 ms), scaled by this run's slowdown 4810 ÷ 4600.
	slowdown := 4810.0 / 4600
	t.Probe = &capacity.TTotalProbe{
		Concurrency: 50, ConcurrencyBasis: "qmax: the first step past Q_max 40 whose p95 TTFAB (4600 ms) exceeds 1.2 × the SLO (3000 ms), concurrency 50, × 1 instance(s)",
		SLOTTFABMs: 3000, P95BeforeScaleOutMs: 4810, SamplesBeforeScaleOut: 412, PeakP95BeforeInServiceMs: 4980, ExceededSLOBeforeInService: true,
		QMaxP95BeforeMs: 4600, QMaxP95AfterMs: 1475, Slowdown: slowdown, Tolerance: 1.25,
		RecoveryThresholdMs: math.Min(3000, 1475*slowdown*1.25), WindowS: 30, MinSamples: 20, RecoveryWindows: 10,
		InstancesBeforeScaleOut: []string{"ip-10-0-1-17"}, NewInstance: "ip-10-0-2-44", P95LastWindowMs: 1610, SamplesLastWindow: 212,
	}
	gap := 2.0
	t.TTotalUncertaintyS = &gap
	t.Polling = &capacity.TTotalPolling{IntervalS: 10, FineIntervalS: 2, FineFrom: capacity.StageReady, InServiceGapS: gap, Throttled: []capacity.ThrottleEvent{}}
	return t
}

var readme = template.Must(template.New("readme").Parse(`# Plan fixtures

Generated by ` + "`go run ./capacity/internal/fixturegen`" + ` from the repository root; do not edit by hand
(` + "`go test ./capacity/internal/fixturegen`" + ` fails when these files are stale). Each directory holds
` + "`plan.json`" + ` with the ` + "`qmax.json`" + ` and ` + "`ttotal.json`" + ` it was derived from, beside it, as the gate expects.

## Deployment that matches the fixtures

| field | value |
|---|---|
| model | kokoro-82m (revision {{.Revision}}) |
| instance type | {{.InstanceType}} |
| container digest | ` + "`{{.Digest}}`" + ` |
| SLO | p{{.Percentile}} TTFAB ≤ {{.SLO}} ms |
| transport | {{.Transport}} |

The fingerprint-mismatch case was measured with ` + "`{{.OtherDigest}}`" + ` instead.

## Cases

| directory | what the gate says |
|---|---|
{{range .Cases}}| ` + "`{{.Name}}/`" + ` | {{.Purpose}} |
{{end}}
## Numbers of the valid plan (what the endpoint stack must synthesize)

| plan field | value |
|---|---|
| derived.min_instances | {{.P.Derived.MinInstances}} |
| derived.max_instances | {{.P.Derived.MaxInstances}} |
| derived.c_scale_max (comparison only) | {{.P.Derived.CScaleMax}} |
| derived.c_scale_min (comparison only) | {{.P.Derived.CScaleMin}} |
| inputs.cloudwatch_ratio | {{.P.Inputs.CloudWatchRatio}} |
| derived.safe_rps | {{.P.Derived.SafeRPS}} |
| derived.scale_out_rps | {{.P.Derived.ScaleOutRPS}} |
| derived.scale_in_rps | {{.P.Derived.ScaleInRPS}} |
| derived.target_value | {{.P.Derived.TargetValue}} |
| derived.scale_in_threshold | {{.P.Derived.ScaleInThreshold}} |
| derived.scale_in_period_s × scale_in_evaluation_periods | {{.P.Derived.ScaleInPeriodS}} × {{.P.Derived.ScaleInEvaluationPeriods}} |
| derived.scale_out_cooldown_s | {{.P.Derived.ScaleOutCooldownS}} |
| derived.scale_in_cooldown_s | {{.P.Derived.ScaleInCooldownS}} |
| derived.queue_max_depth | {{.P.Derived.QueueMaxDepth}} |
| derived.t_plan_s | {{.P.Derived.TPlanS}} |
| inputs.t_total_s | {{.P.Inputs.TTotalS}} |
| fingerprint.slo_ttfab_ms | {{.P.Fingerprint.SLOTTFABMs}} |
| verdict | {{.P.Verdict}} |
`))

func writeReadme(path string, p *capacity.Plan) error {
	var buf strings.Builder
	err := readme.Execute(&buf, map[string]any{
		"Revision": p.Fingerprint.ModelRevision, "InstanceType": p.Fingerprint.InstanceType,
		"Digest": ContainerDigest, "OtherDigest": OtherContainerDigest, "SLO": p.Fingerprint.SLOTTFABMs,
		"Percentile": p.Fingerprint.SLOPercentile, "Transport": p.Fingerprint.Transport, "Cases": Cases, "P": p,
	})
	if err != nil {
		return err
	}
	return capacity.WriteFileAtomic(path, []byte(buf.String()))
}
