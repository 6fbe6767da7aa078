package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

// Tolerances of the instance model against a measurement on the emulator. The twin's one slot makes the rates
// stable on a loaded machine. The metric is the 10th percentile of the peaks in flight of a Poisson stream over
// 10-s windows sliding by 1 s inside the 31-s measure window (22 windows, overlapping), scaled to CloudWatch;
// one 10-s peak alone scatters by ±40% (a clean-clone CI run with 15-s windows measured 10 at 10.7 rps and 6 at
// 11.8 rps), hence also the absolute floors.
const (
	// metric: within 40% or 3 requests: the 10th-percentile peak is a whole number of requests, about 5 here, so
	// one request either way is 20% (a run under load predicted 7.10 where 5.00 was measured)
	validationMetricRel, validationMetricAbs = 0.4, 3.0
	validationTTFABRel, validationTTFABAbs   = 0.5, 40.0 // p95 TTFAB: within 50% or 40 ms
	// validationScaleOutSlackS bounds how much later the replayed first scale-out may come than the simulated
	// (deterministic) one: three evaluation periods and the 1-s DescribeEndpoint poll. The scattered simulation's
	// spread is asked for one period on either side (validationPeriodS), for the reason below. The simulator
	// evaluates a period's datapoint one tick after it closes (simulate.EvaluationLag, the worst case of the
	// emulator's own 10-s ticker phase); before it did, the replay came 13-27 s after the simulation (the last
	// such run: 60 s simulated, 73.3 s replayed); with it, a clean-clone CI run measured 70 s simulated and
	// 94.3 s replayed: the scatter of real 10-s peaks around a model that used their mean. Since the model's
	// metric is the 10th-percentile peak (bench.AlarmQuantile) and the replay sends Poisson arrivals, the
	// simulator is on the late side: 52.1 s replayed, 70 s simulated on this machine; 19.1, 21.2 and 19.5 s
	// replayed in clean-clone CI runs (the deterministic run also takes the latest phase of the period grid
	// and of the evaluation ticker; the scattered runs draw them). The 10-s peak barely tells 0.8 of the
	// scale-out rate from the rate itself (mean peaks 7.5 and 8 here): a target at the rate's 10th percentile is crossed three times in a row somewhere between
	// them, at random. A deterministic simulator cannot place that moment within a period; it can be late, the
	// safe error for a feasibility verdict. The scattered simulation (loadmodel.Scatter) draws the datapoints
	// and gives the spread one replay falls in. The gaps are logged on every run.
	validationScaleOutSlackS = 3*10.0 + 1.0
	// validationSpreadRuns is how many seeded runs of the scattered simulation give the spread of scale-out
	// times; validationPeriodS is one evaluation period, the slack on either side of its p2.5 to p97.5 range
	// (plus the 1-s DescribeEndpoint poll).
	validationSpreadRuns = 400
	validationPeriodS    = 10.0 + 1.0
)

// TestInstanceModelAgreesWithEmulator checks the instance model (docs/design.md, "One instance model") against a
// measurement: the Kokoro twin (one slot, 20 ms a segment, saturating) is measured by tts-bench qmax with its rate
// staircase; the instance model built from that artifact predicts, at three other open-loop rates measured
// independently by a second qmax run, each at the same fraction of its run's highest closed-loop throughput as
// the model's point it is compared with, since the instance's speed follows this machine's load (inside the measured range: beyond the last step that kept up the model
// assumes a full shield, which overstates TTFAB for the deadline scheduler), the scaling metric (the 10-s peak in
// flight) and p95 TTFAB within the stated tolerances. Then the plan's
// scaling is applied to the endpoint and a growth trace (×s per T_plan from below the scale-out rate) is both
// replayed against it and simulated with the same plan: the replayed first scale-out lies within one evaluation
// period of the scattered simulation's spread (p2.5 to p97.5 over validationSpreadRuns seeds), and no later than
// three evaluation periods after the plan's deterministic simulation (validationScaleOutSlackS says why).
func TestInstanceModelAgreesWithEmulator(t *testing.T) {
	if testing.Short() {
		t.Skip("the instance model validation measures the emulator for about four minutes")
	}
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m-twin")
	if err != nil {
		t.Fatal(err)
	}
	name := m.EndpointName()
	e := emulatortest.Start(t, emulatortest.Container(t))
	env := m.ContainerEnvironment("", 0)
	emulatortest.Endpoint(t, e, name, emulatortest.InService(), emulatortest.Env(env))
	dir := t.TempDir()
	qmax := func(out string, fractions string) *capacity.QMax {
		t.Helper()
		stdout, stderr, code := runCLI(t, "qmax", "--model", m.ID, "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"),
			"--ladder", "1,16", "--max-concurrency", "16", "--settle", "1s", "--hold", "9s", "--measure-window", "8s", "--request-timeout", "20s",
			"--rate-fractions", fractions, "--rate-refine", "0", "--rate-settle", "2s", "--rate-hold", "32s", "--rate-measure-window", "31s",
			// Under the race detector the measuring process itself is slow: its own CPU and lag bounds would mark
			// the steps client-bound. The twin's compute is a wait on the emulator, not this process's CPU.
			"--max-client-cpu", "0", "--max-client-lag", "0",
			"--container-dir", containerDir, "--output", out)
		if code != 0 {
			t.Fatalf("qmax: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
		}
		q, err := capacity.LoadQMax(out)
		if err != nil {
			t.Fatal(err)
		}
		return q
	}

	// 1. The model, from one measurement.
	q := qmax(filepath.Join(dir, "qmax.json"), "0.45,0.6,0.75,0.9,1.05")
	model, err := q.InstanceModel(m.QueueMaxDepth, float64(m.SLO.StallBudgetMs)+50, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("model: %s", model.Basis)

	// 2. Three other rates, measured independently, against the model's prediction.
	check := qmax(filepath.Join(dir, "check.json"), "0.5,0.6,0.7")
	// The two runs are compared at the same fraction of each run's own highest closed-loop throughput, not at the
	// same rate: the twin's compute is a wait, but its container and the emulator share this machine's two cores
	// with the other test processes, so the instance measured is slower when the machine is busier (a run under
	// load measured 15.5 rps, its check run minutes later 17.5, and at the check's 8.81 rps the model, 0.57 of its
	// own capacity, predicted 105 ms where 63 ms were measured at 0.5 of the check's). The model describes the
	// instance it measured; a check step at fraction f of its run's throughput is the model's point at f of its.
	if !(q.HighestThroughputRPS > 0 && check.HighestThroughputRPS > 0) {
		t.Fatalf("highest closed-loop throughput %.2f (model's run) and %.2f (check run): both must be measured", q.HighestThroughputRPS, check.HighestThroughputRPS)
	}
	speed := q.HighestThroughputRPS / check.HighestThroughputRPS
	t.Logf("highest closed-loop throughput: %.2f rps (model's run), %.2f rps (check run): check rates are scaled by %.3f", q.HighestThroughputRPS, check.HighestThroughputRPS, speed)
	compared := 0
	for _, s := range check.RateSteps {
		at := s.ArrivalRPS * speed
		// Only between the model's own measured points: below the first the model extrapolates linearly to 0,
		// beyond the last it assumes a full shield.
		lo, hi := model.Points[0].RPS, model.Points[len(model.Points)-1].RPS
		if !s.Usable || at < lo || at > hi {
			t.Logf("rate %.2f rps (%.2f on the model's scale): not compared (usable %v %s; the model's measured range %.2f to %.2f rps)", s.ArrivalRPS, at, s.Usable, s.UnusableReason, lo, hi)
			continue
		}
		if !(s.CloudWatchMax10s > 0) {
			// A 31-s window always holds a whole 10-s period on the grid: CloudWatch must have been read.
			t.Errorf("rate %.2f rps: no CloudWatch reading of ConcurrentRequestsPerModel in the step's window", s.ArrivalRPS)
			continue
		}
		compared++
		p := model.At(at)
		// The model's metric is the 10-s peak the alarm can count on (the 10th percentile of sliding 10-s peaks)
		// on CloudWatch's scale: it is compared with the same measured independently, the check step's 10th
		// percentile × that step's own CloudWatch ÷ client ratio.
		measured := s.InFlightMax10sLow * s.CloudWatchMax10s / s.InFlightMax10s
		t.Logf("rate %.2f rps: metric predicted %.2f, measured %.2f (10th-percentile client peak %.0f × CloudWatch %.2f ÷ client mean peak %.2f); p95 TTFAB predicted %.0f ms, measured %.0f ms",
			s.ArrivalRPS, p.Metric, measured, s.InFlightMax10sLow, s.CloudWatchMax10s, s.InFlightMax10s, p.TTFABMs, s.TTFABP95Ms)
		if !(s.InFlightMax10sLow > 0) {
			t.Errorf("rate %.2f rps: the step recorded no 10th-percentile 10-s peak", s.ArrivalRPS)
		} else if d := math.Abs(p.Metric - measured); d > math.Max(validationMetricAbs, validationMetricRel*measured) {
			t.Errorf("at %.2f rps the model predicts a metric of %.2f, the emulator measured %.2f: want within %.0f%% or %.0f", s.ArrivalRPS, p.Metric, measured, 100*validationMetricRel, validationMetricAbs)
		}
		if d := math.Abs(p.TTFABMs - s.TTFABP95Ms); d > math.Max(validationTTFABAbs, validationTTFABRel*s.TTFABP95Ms) {
			t.Errorf("at %.2f rps the model predicts p95 TTFAB %.0f ms, the emulator measured %.0f ms: want within %.0f%% or %.0f ms", s.ArrivalRPS, p.TTFABMs, s.TTFABP95Ms, 100*validationTTFABRel, validationTTFABAbs)
		}
	}
	if compared < 3 {
		t.Fatalf("%d of 3 check rates were usable and inside the model's measured range: the comparison needs three", compared)
	}

	// 3. The plan from this model, its scaling on the endpoint, and a growth trace replayed and simulated.
	tTotal := 2.0 // the emulator's instances start in about a second without a timing profile
	p := planFrom(t, m, q, tTotal)
	spec := capacity.ScalingSpecFor(name, models.VariantName, p)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cl := e.NewClients()
	if err := cloud.ApplyScaling(ctx, cl.AutoScaling, cl.CloudWatch, spec); err != nil {
		t.Fatal(err)
	}
	// The check run's last rate step (0.7 of the capacity, above the scale-out rate) may still be in the scale-out
	// alarm's datapoints, where the simulation starts from a quiet alarm: wait until the alarm's window holds none
	// of it, as the demo does before its surge. (It was suspected of the replays that scaled out 19-21 s in; a CI
	// run after this wait still scaled out 19.5 s in: see the comparison below.)
	if wait := time.Until(check.EndedAt.Add(p.ScaleOutAlarmMemory())); wait > 0 {
		t.Logf("waiting %s for the check run's load to leave the scale-out alarm's window", wait.Round(time.Second))
		time.Sleep(wait)
	}
	d := p.Derived
	tPlan := time.Duration(d.TPlanS * float64(time.Second))
	trace := simulate.Growth(0.8*d.ScaleOutRPS, 1.6*d.ScaleOutRPS, p.Inputs.SurgeRatio, tPlan, 20*time.Second, time.Second)
	trace.Duration = min(trace.Duration, 100*time.Second)
	csv := filepath.Join(dir, "growth.csv")
	body := "timestamp,rps\n"
	for _, pt := range trace.Points {
		if pt.At < trace.Duration {
			body += fmt.Sprintf("%g,%g\n", pt.At.Seconds(), pt.RPS)
		}
	}
	body += fmt.Sprintf("%g,%g\n", trace.Duration.Seconds(), trace.RateAt(trace.Duration-time.Second))
	if err := os.WriteFile(csv, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	tr, err := simulate.ReadFile(csv)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "replay.jsonl.gz")
	stdout, stderr, code := runCLI(t, "replay", "--local", "--state-dir", e.StateDir, "--model", m.ID, "--trace", csv, "--max-workers", "256",
		"--request-timeout", "20s", "--poll", "1s", "--bucket", "10s", "--output", out)
	if code != 0 && code != 1 {
		t.Fatalf("replay: exit %d\n%s\n%s", code, stdout, stderr)
	}
	recs, err := measure.ReadRecordsFile(out)
	if err != nil || len(recs) == 0 {
		t.Fatalf("replay records: %v", err)
	}
	var log measure.InstanceLog
	data, err := os.ReadFile(measure.InstancesPath(out))
	if err != nil || json.Unmarshal(data, &log) != nil {
		t.Fatalf("instance samples: %v", err)
	}
	start := recs[0].WindowStart
	replayedOut := -1.0
	for _, s := range log.Samples {
		if s.Desired > 1 {
			replayedOut = s.At.Sub(start).Seconds()
			break
		}
	}
	fleet := capacity.PlanFleet("plan", p.Inputs, d, p.Fingerprint)
	fleet.InitialInstances = 1
	simOut := simulate.FirstScaleOut(simulate.Run(tr, fleet))
	// The scattered simulation: each 10-s datapoint drawn from the measured mean and 10th-percentile peak at its
	// rate (loadmodel.Scatter), once per seed: where one run of the alarm may place the first scale-out.
	sc, err := capacity.PlanScatter(p, q)
	if err != nil || sc == nil {
		t.Fatalf("the plan's scatter: %v (nil %v): the twin's rate steps must record their 10th-percentile peaks", err, sc == nil)
	}
	spread, _ := simulate.ScaleOutSpread(tr, fleet, *sc, validationSpreadRuns, nil)
	lo, med, hi := spread.Quantile(0.025), spread.Quantile(0.5), spread.Quantile(0.975)
	t.Logf("growth ×%g per T_plan %s from %.2f rps: first scale-out replayed at %.1f s; simulated at %.1f s (the plan's deterministic run), scattered over %d seeds %.0f / %.0f / %.0f s (p2.5 / median / p97.5, %d without one)",
		p.Inputs.SurgeRatio, tPlan, 0.8*d.ScaleOutRPS, replayedOut, simOut, spread.Runs, lo, med, hi, spread.Missing)
	if replayedOut < 0 || simOut < 0 {
		t.Fatalf("no scale-out (replayed %.1f s, simulated %.1f s): the growth trace must cross the scale-out rate", replayedOut, simOut)
	}
	// The replay is one random run of the alarm, so it is compared with the spread of random runs, which draw
	// what one run leaves to chance (simulate.Fleet.Scatter): each datapoint, the trace's phase on the 10-s
	// period grid (a partial first period) and the evaluation ticker's phase. Outside the spread by more than
	// one evaluation period on either side fails: later, the model would be optimistic; earlier, the
	// simulator would not know where a real run can scale out (before the phases were drawn, clean-clone CI
	// runs replayed 19-21 s against a spread from 40 s).
	switch {
	case replayedOut > hi+validationPeriodS:
		t.Errorf("the first scale-out was replayed at %.1f s, later than the scattered simulation's p97.5 %.0f s by more than one evaluation period (%.0f s): the model is optimistic",
			replayedOut, hi, validationPeriodS)
	case replayedOut < lo-validationPeriodS:
		t.Errorf("the first scale-out was replayed at %.1f s, earlier than the scattered simulation's p2.5 %.0f s by more than one evaluation period (%.0f s): the simulator does not know where one run of the alarm can scale out",
			replayedOut, lo, validationPeriodS)
	}
	// One-sided (validationScaleOutSlackS says why): the simulator must not scale out earlier than the endpoint
	// does, or its feasibility verdict would count on instances that come later; an endpoint that scales out
	// earlier than simulated costs more than planned but holds the SLO, and the gap is logged above.
	if late := replayedOut - simOut; late > validationScaleOutSlackS {
		t.Errorf("the first scale-out came at %.1f s replayed and %.1f s simulated: the simulation is %.1f s early, want at most %.0f s", replayedOut, simOut, late, validationScaleOutSlackS)
	}
}

// planFrom builds the plan tts-bench plan builds for the twin from q and a T_total of tTotal seconds (the
// emulator without a timing profile starts an instance in about a second; no ttotal run is needed to compare
// scale-out times), with fleet 1 to 2 and a 30-s detection buffer.
func planFrom(t *testing.T, m models.Model, q *capacity.QMax, tTotal float64) *capacity.Plan {
	t.Helper()
	data, err := capacity.MarshalArtifact(q)
	if err != nil {
		t.Fatal(err)
	}
	t0 := q.EndedAt
	tt := &capacity.TTotal{
		SchemaVersion: capacity.SchemaVersion, Model: m.ID, Endpoint: q.Endpoint, InstanceType: q.InstanceType,
		Transport: q.Transport, QMaxSHA256: capacity.DigestBytes(data), RunID: "validation", FromInstances: 1, ToInstances: 2,
		Timeline:   []capacity.Stage{{Stage: "desired_count_set", At: t0, Source: "control-plane"}, {Stage: "first_success", At: t0.Add(time.Duration(tTotal * float64(time.Second))), Source: "client"}},
		Durations:  []capacity.StageDuration{{From: "desired_count_set", To: "first_success", DurationS: tTotal}},
		ClockStart: "desired_count_set", TTotalS: tTotal, DominantStage: "first_success", MissingStages: []string{},
		PlatformS: tTotal, PlatformShare: 1,
	}
	ttData, err := capacity.MarshalArtifact(tt)
	if err != nil {
		t.Fatal(err)
	}
	ms := capacity.Measurement{QMax: q, QMaxFile: capacity.QMaxFile, QMaxSHA256: capacity.DigestBytes(data),
		TTotal: tt, TTotalFile: capacity.TTotalFile, TTotalSHA256: capacity.DigestBytes(ttData)}
	o := capacity.DefaultOptions(m)
	o.MaxInstances, o.DetectionBufferS = 2, 30
	model, err := q.InstanceModel(m.QueueMaxDepth, float64(m.SLO.StallBudgetMs)+50, 1)
	if err != nil {
		t.Fatal(err)
	}
	o.PeakRPS = 1.5 * model.SafeRPS() / o.SurgeRatio
	p, err := capacity.FromArtifacts(m, ms, o)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
