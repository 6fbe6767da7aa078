package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

// Validation of the simulator against reality. The emulator runs compressed by F: a metric period
// of 1 s instead of SageMaker's 10 s (alarms, datapoints and the autoscaler's evaluation all 10× faster) and
// the kokoro-g5 start-up profile at time scale validationTimeScale; the scale-out cooldown given to it is
// divided by F. The simulator runs the same trace stretched by F (same rates, F× longer) with the plan's own
// numbers, so simulated times ÷ F compare with replayed wall-clock times.
const (
	validationF         = 10
	validationTimeScale = 50
	validationPeriod    = time.Second // the emulator's metric period: one evaluation period, compressed
)

// TestSimulatorAgreesWithReplay: one espeak-ng instance (calibration engine, see below) is measured on the emulator (a short closed-loop
// staircase, as qmax does), a plan is derived from those numbers (what-if, Q_max 4, surge 1.25: target 3), its
// scaling is applied to the endpoint (fleet 1 to 2), and one trace — a quiet start, then an overload of 1.3×
// the measured single-instance throughput — is both replayed open-loop against the endpoint and simulated.
// The first scale-out must happen within 3 evaluation periods in both, the second instance must serve within
// 3 periods + the start-up profile's jitter, and the shed counts must agree within 60% (or 25 requests): the
// measured throughput this derives from moves about ±20% between runs on a shared 2-core machine, which the shed
// count amplifies; the README states the figures of a quiet run.
func TestSimulatorAgreesWithReplay(t *testing.T) {
	if testing.Short() {
		t.Skip("the simulator validation runs a minute of load against the emulator")
	}
	profile, err := emulator.BuiltinProfile(emulator.ProfileKokoroG5)
	if err != nil {
		t.Fatal(err)
	}
	startup := (profile.Total(emulator.PhaseLaunch) + profile.Total(emulator.PhaseHealth) + profile.Total(emulator.PhaseTraffic)) / validationTimeScale
	e := emulatortest.Start(t, emulatortest.Container(t), func(o *emulator.Options) {
		o.Profile, o.TimeScale, o.MetricPeriod = profile, validationTimeScale, validationPeriod
	})
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	name := m.EndpointName()
	emulatortest.Endpoint(t, e, name, emulatortest.InService(), emulatortest.StartupTimeout(2*time.Minute),
		// The espeak-ng endpoint with the calibration engine behind it (compute is a wait, not a busy loop): on a
		// 2-core machine an espeak overload saturates the CPU, and the second instance's start-up then competes
		// with the overload it should relieve (replayed 42 s against 20 s simulated in one run). Shed and
		// scale-out dynamics, which this test compares, do not depend on which engine fills the slot.
		emulatortest.Env(map[string]string{"QUEUE_MAX_DEPTH": strconv.Itoa(m.QueueMaxDepth), "ENGINE": "calibration",
			"CALIBRATION_SEGMENT_MS": "40", "ENGINE_WORKERS": "2"}))
	cl := e.NewClients()
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()

	// 1. Measure one instance: closed loop at 1, 2, 4 and 8.
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure, cfg.RequestTimeout, cfg.Grace = 500*time.Millisecond, 2500*time.Millisecond, 2*time.Second, 10*time.Second, 10*time.Second
	cfg.SLO, cfg.MinRequests, cfg.RunID = time.Duration(m.SLO.TTFABMs)*time.Millisecond, 1, "validation-qmax"
	cfg.Corpus = bench.DefaultCorpus()
	cfg.Transport = &bench.SageMakerStream{Endpoint: name, NewClient: func() bench.StreamInvoker { return e.NewClients().Runtime }}
	q := &capacity.QMax{Model: m.ID, SLOPercentile: 95}
	for _, c := range []int{1, 2, 4, 8} {
		s, err := bench.RunStep(ctx, cfg, c)
		if err != nil || s.OK == 0 {
			t.Fatalf("measure concurrency %d: %v (%d ok)", c, err, s.OK)
		}
		q.Steps = append(q.Steps, capacity.QMaxStep{Concurrency: c, OKCount: s.OK, TTFABP50Ms: s.TTFABP50Ms, TTFABP95Ms: s.TTFABP95Ms,
			TTFABP99Ms: s.TTFABP99Ms, ResponseMeanMs: s.ResponseMeanMs, AchievedRPS: s.AchievedRPS, Usable: true})
		t.Logf("measured C=%d: %.1f rps, mean response %.1f ms, p95 TTFAB %.1f ms", c, s.AchievedRPS, s.ResponseMeanMs, s.TTFABP95Ms)
	}

	// The staircase's concurrency stays in the last metric periods' datapoints: wait until they are past
	// the scale-out alarm's 3 periods, or the alarm created below would fire on the measurement.
	time.Sleep(6 * validationPeriod)

	// 2. The plan and the instance model, from those numbers; T_total is the start-up profile, in plan time.
	// The closed-loop curve gives the capacity (the highest rate measured) for the what-if plan's instance
	// model, the queueing approximation (no rate staircase was measured here).
	tTotalS := startup.Seconds() * validationF
	maxRPS, rateAtOne := 0.0, 0.0
	for _, s := range q.Steps {
		maxRPS = max(maxRPS, s.AchievedRPS)
		if s.Concurrency == 1 {
			rateAtOne = s.AchievedRPS
		}
	}
	opts := capacity.DefaultOptions(m)
	opts.SurgeRatio, opts.MinInstances, opts.MaxInstances = 1.25, 1, 2
	opts.PeakRPS, opts.TroughRPS = 1.2*maxRPS, 0.3*rateAtOne
	plan, err := capacity.FromWhatIf(m, capacity.WhatIf{QMax: 4, TTotalS: tTotalS, ThroughputRPS: maxRPS, ThroughputAtQMaxRPS: maxRPS}, opts)
	if err != nil {
		t.Fatal(err)
	}
	spec := capacity.ScalingSpecFor(name, models.VariantName, plan)
	spec.MinInstances, spec.MaxInstances = 1, 2
	fleet := capacity.PlanFleet("plan", plan.Inputs, plan.Derived, plan.Fingerprint)
	simScaling := spec.SimulatedScaling()
	fleet.Scaling = &simScaling
	emuSpec := spec
	emuSpec.ScaleOut.ScaleOutCooldownS = max(1, spec.ScaleOut.ScaleOutCooldownS/validationF)
	if err := cloud.ApplyScaling(ctx, cl.AutoScaling, cl.CloudWatch, emuSpec); err != nil {
		t.Fatal(err)
	}
	t.Logf("plan: target %.3g per instance, scale-out cooldown %d s (emulator %d s), T_total %.1f s (emulator %.1f s), queue depth %d",
		spec.ScaleOut.TargetValue, spec.ScaleOut.ScaleOutCooldownS, emuSpec.ScaleOut.ScaleOutCooldownS, tTotalS, startup.Seconds(), m.QueueMaxDepth)

	// 3. The trace: quiet, then overload. Replayed as is; simulated stretched by F.
	lo, hi := opts.TroughRPS, opts.PeakRPS
	quiet, loud := 12*time.Second, 48*time.Second
	dir := t.TempDir()
	csv := filepath.Join(dir, "trace.csv")
	if err := os.WriteFile(csv, fmt.Appendf(nil, "timestamp,rps\n0,%g\n%g,%g\n%g,%g\n", lo, quiet.Seconds(), hi, (quiet+loud/2).Seconds(), hi), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "replay.jsonl.gz")
	stdout, stderr, code := runCLI(t, "replay", "--local", "--state-dir", e.StateDir, "--model", m.ID, "--trace", csv, "--max-workers", "512",
		"--request-timeout", "20s", "--poll", "1s", "--bucket", "6s", "--output", out)
	if code != 0 && code != 1 {
		t.Fatalf("replay: exit %d\n%s\n%s", code, stdout, stderr)
	}
	t.Logf("replay:\n%s", stdout)
	recs, err := measure.ReadRecordsFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var log measure.InstanceLog
	data, err := os.ReadFile(measure.InstancesPath(out))
	if err != nil || json.Unmarshal(data, &log) != nil {
		t.Fatalf("instance samples: %v", err)
	}
	start := recs[0].WindowStart
	replayedOut, replayedServing := -1.0, -1.0
	for _, s := range log.Samples {
		at := s.At.Sub(start).Seconds()
		if s.Desired > 1 && replayedOut < 0 {
			replayedOut = at
		}
		if s.Current > 1 && replayedServing < 0 {
			replayedServing = at
		}
	}
	rs, err := bench.SummarizeOpenLoop(recs, 6*time.Second, 0)
	if err != nil {
		t.Fatal(err)
	}

	stretched := simulate.Trace{Name: "validation ×F", Duration: (quiet + loud) * validationF,
		Points: []simulate.Point{{At: 0, RPS: lo}, {At: quiet * validationF, RPS: hi}}}
	sim := simulate.Run(stretched, fleet)
	simOut, simServing := -1.0, -1.0
	for _, ev := range sim.Events {
		if ev.To > ev.From {
			simOut, simServing = ev.AtS/validationF, ev.ServingAtS/validationF
			break
		}
	}
	period := validationPeriod.Seconds()
	t.Logf("scale-out: replayed %.1f s, simulated %.1f s; second instance serving: replayed %.1f s, simulated %.1f s; %d arrivals replayed (dropped %d)",
		replayedOut, simOut, replayedServing, simServing, rs.Scheduled, rs.Dropped)
	if replayedOut < quiet.Seconds() || simOut < quiet.Seconds() {
		t.Fatalf("scale-out before the load rose (replayed %.1f s, simulated %.1f s) or never: the quiet rate must stay below the target", replayedOut, simOut)
	}
	// The replayed time is read from DescribeEndpoint polled every second (--poll 1s): it is known to within one
	// poll. The emulator evaluates a period at its own next tick, up to one period after the period ends (the
	// tick's phase is arbitrary); the simulator one whole period after (simulate.EvaluationLag, the worst case).
	if d := math.Abs(replayedOut - simOut); d > 4*period+1 {
		t.Errorf("scale-out times differ by %.1f s, more than 3 evaluation periods, the emulator's evaluation phase (one period) and the 1-s poll (%.0f s)", d, 4*period+1)
	}
	if d := math.Abs(replayedServing - simServing); replayedServing < 0 || d > 3*period+0.5*startup.Seconds() {
		t.Errorf("the second instance served at %.1f s replayed, %.1f s simulated: want within 3 periods + half the start-up (%.1f s)", replayedServing, simServing, 3*period+0.5*startup.Seconds())
	}
	// Shed while one instance carries the overload: the first loud slice (12 s to 18 s), before the second
	// instance serves in either. The simulator counts requests in stretched time: ÷ F.
	loudSlice := int(quiet / (6 * time.Second))
	if len(rs.Buckets) <= loudSlice || len(sim.Minutes) <= loudSlice {
		t.Fatalf("%d replayed slices, %d simulated minutes: want more than %d", len(rs.Buckets), len(sim.Minutes), loudSlice)
	}
	replayedShed, simShed := float64(rs.Buckets[loudSlice].Shed), sim.Minutes[loudSlice].Shed/validationF
	t.Logf("shed in the first loud slice (one instance): replayed %.0f, simulated %.0f; whole trace: replayed %d, simulated %.0f",
		replayedShed, simShed, rs.Shed, sim.Shed/validationF)
	if d := math.Abs(replayedShed - simShed); d > math.Max(25, 0.60*math.Max(replayedShed, simShed)) {
		t.Errorf("shed in the first loud slice: %.0f replayed, %.0f simulated: want within 60%% (or 25 requests)", replayedShed, simShed)
	}
	if rs.Dropped > 0 {
		t.Errorf("%d arrivals dropped: the client's pool was too small, the comparison is not of the endpoint", rs.Dropped)
	}
}
