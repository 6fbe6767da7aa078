package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/capacitytest"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/emulatortest"
	"github.com/speech-infra/speech-infra/models"
)

// This file's writeEspeakPlan is a copy of the one in cmd/speech-infra/redeploy_test.go (test helpers of two
// main packages cannot be shared without a new package).

// writeEspeakPlan measures nothing: it writes qmax and ttotal artifacts shaped like a live espeak-ng run on
// the local emulator with the given container digest, derives the plan from them with the capacity package
// (as tts-bench plan does) and writes all three into dir. The plan passes the gate for a local deploy of
// that container.
func writeEspeakPlan(t *testing.T, dir, digest string) *capacity.Plan {
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
	q.HighestThroughputRPS = q.Steps[3].AchievedRPS
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
	// The raw records beside the artifact, which the gate folds again (issue 27): synthesized to give the
	// figures above, the artifact's other figures then what they give.
	if err := capacitytest.WriteRecords(qPath, q, 0); err != nil {
		t.Fatal(err)
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

// The drift / thaw / validate story against the emulator with real instances: a fresh deploy of espeak-ng
// with a gate-passing plan is clean and validates; scaling suspended by hand is an error that thaw fixes; a
// journal left behind as kill -9 leaves it is reported with the suspension, thaw restores exactly the
// journaled state and a second thaw changes nothing; a policy changed by hand fails validate with exit 1.
func TestDriftThawValidateEmulator(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	containerDir := filepath.Join("..", "..", "container")
	digest, err := capacity.SourceDigest(containerDir)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plan := writeEspeakPlan(t, dir, digest)
	planPath := filepath.Join(dir, capacity.PlanFile)
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := cloud.DeployModel(ctx, cloud.DeployClients{SageMaker: e.SageMaker, AutoScaling: e.AutoScaling, CloudWatch: e.CloudWatch}, cloud.DeployOptions{
		Model: m, InstanceType: models.LocalInstanceType, Image: "speech-infra/speech-container:local", RoleARN: "arn:aws:iam::000000000000:role/local",
		ContainerDigest: digest, PlanPath: planPath, Wait: cloud.WaitOptions{Timeout: 90 * time.Second},
	})
	if err != nil || res.Scaling != cloud.ScalingApplied {
		t.Fatalf("deploy = %v, scaling %s, gate %v", err, res.Scaling, res.Gate.Reasons)
	}
	t.Cleanup(func() {
		if !e.Stopped() {
			c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cloud.RemoveScaling(c, e.AutoScaling, e.CloudWatch, m.EndpointName(), models.VariantName)
			cloud.DestroyEndpoint(c, e.SageMaker, m.EndpointName())
		}
	})
	// Scaling applied may move the count into the plan's bounds: wait for it before comparing.
	if _, err := cloud.WaitInService(ctx, e.SageMaker, m.EndpointName(), cloud.WaitOptions{Timeout: 90 * time.Second}); err != nil {
		t.Fatal(err)
	}
	jdir := filepath.Join(t.TempDir(), "journals")
	common := []string{"--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--plan", planPath}
	target := []string{"--container-dir", containerDir, "--journal-dir", jdir}
	drift := func(extra ...string) (string, string, int) {
		return runCLI(t, append(append(append([]string{"drift"}, common...), target...), extra...)...)
	}
	thaw := func(extra ...string) (string, string, int) {
		return runCLI(t, append(append(append([]string{"thaw"}, common...), target...), extra...)...)
	}
	validate := func() (string, string, int) { return runCLI(t, append([]string{"validate"}, common...)...) }
	mustClean := func(when string) {
		t.Helper()
		out, errOut, code := drift("--format", "json")
		var rep struct {
			Clean    bool            `json:"clean"`
			Findings []cloud.Finding `json:"findings"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 || !rep.Clean {
			t.Fatalf("drift %s: exit %d, %v\n%s%s", when, code, err, out, errOut)
		}
	}

	mustClean("after a fresh deploy")
	if out, errOut, code := validate(); code != 0 || !strings.Contains(out, "checks passed") {
		t.Fatalf("validate after deploy: exit %d\n%s%s", code, out, errOut)
	}

	// Suspended by hand.
	rid := capacity.ResourceID(m.EndpointName(), models.VariantName)
	if _, err := e.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: "sagemaker", ResourceId: aws.String(rid), ScalableDimension: "sagemaker:variant:DesiredInstanceCount",
		SuspendedState: &aastypes.SuspendedState{DynamicScalingInSuspended: aws.Bool(true), DynamicScalingOutSuspended: aws.Bool(true)},
	}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := drift()
	if code != 1 || !strings.Contains(out, "scaling_suspended") || !strings.Contains(out, "fix: tts-bench thaw --endpoint speech-espeak-ng") {
		t.Fatalf("drift after a hand suspension: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := thaw(); code != 0 || !strings.Contains(out, "no journal") || !strings.Contains(out, "changed: suspended dynamic scale-in, dynamic scale-out → nothing") {
		t.Fatalf("thaw: exit %d\n%s%s", code, out, errOut)
	}
	mustClean("after thaw")

	// A journal left behind: Freeze and no restore, as after kill -9.
	before, err := e.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(m.EndpointName())})
	if err != nil {
		t.Fatal(err)
	}
	wantCount := aws.ToInt32(before.ProductionVariants[0].DesiredInstanceCount)
	if _, err := cloud.Freeze(ctx, cloud.FreezeClients{SageMaker: e.SageMaker, AutoScaling: e.AutoScaling}, cloud.FreezeOptions{
		JournalDir: jdir, Endpoint: m.EndpointName(), Variant: models.VariantName, Instances: 1, RunID: "killed", Command: "tts-bench qmax",
		Wait: cloud.WaitOptions{Timeout: 90 * time.Second},
	}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = drift()
	if code != 1 || !strings.Contains(out, "journal_present") || !strings.Contains(out, "scaling_suspended") {
		t.Fatalf("drift with a journal: exit %d\n%s%s", code, out, errOut)
	}
	out, errOut, code = thaw()
	if code != 0 || !strings.Contains(out, "restoring from the journal") || !strings.Contains(out, "removed the journal") {
		t.Fatalf("thaw with a journal: exit %d\n%s%s", code, out, errOut)
	}
	after, err := e.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(m.EndpointName())})
	if err != nil {
		t.Fatal(err)
	}
	tg, err := e.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: "sagemaker", ResourceIds: []string{rid}})
	if err != nil || len(tg.ScalableTargets) != 1 {
		t.Fatalf("target: %v %v", tg, err)
	}
	st := tg.ScalableTargets[0]
	if got := aws.ToInt32(after.ProductionVariants[0].DesiredInstanceCount); got != wantCount ||
		aws.ToInt32(st.MinCapacity) != int32(plan.Derived.MinInstances) || aws.ToInt32(st.MaxCapacity) != int32(plan.Derived.MaxInstances) ||
		aws.ToBool(st.SuspendedState.DynamicScalingInSuspended) || aws.ToBool(st.SuspendedState.DynamicScalingOutSuspended) || aws.ToBool(st.SuspendedState.ScheduledScalingSuspended) {
		t.Fatalf("after thaw: count %d (want %d), target %d–%d %+v", got, wantCount, aws.ToInt32(st.MinCapacity), aws.ToInt32(st.MaxCapacity), st.SuspendedState)
	}
	if out, errOut, code := thaw(); code != 0 || !strings.Contains(out, "nothing changed") {
		t.Fatalf("second thaw: exit %d\n%s%s", code, out, errOut)
	}
	mustClean("after thaw from the journal")

	// A policy changed by hand.
	spec := capacity.ScalingSpecFor(m.EndpointName(), models.VariantName, plan)
	if _, err := e.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName: aws.String(spec.ScaleOut.PolicyName), ServiceNamespace: "sagemaker", ResourceId: aws.String(rid), ScalableDimension: "sagemaker:variant:DesiredInstanceCount",
		PolicyType: aastypes.PolicyTypeTargetTrackingScaling,
		TargetTrackingScalingPolicyConfiguration: &aastypes.TargetTrackingScalingPolicyConfiguration{
			TargetValue: aws.Float64(spec.ScaleOut.TargetValue + 5), DisableScaleIn: aws.Bool(false),
			PredefinedMetricSpecification: &aastypes.PredefinedMetricSpecification{PredefinedMetricType: aastypes.MetricType(spec.ScaleOut.PredefinedMetric)},
			ScaleOutCooldown:              aws.Int32(int32(spec.ScaleOut.ScaleOutCooldownS)),
		},
	}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code = validate()
	if code != 1 || strings.Count(out, "FAIL") != 2 || !strings.Contains(out, "scale-in disabled") {
		t.Fatalf("validate after a hand change: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := drift(); code != 1 || !strings.Contains(out, "policy_mismatch") {
		t.Fatalf("drift after a hand change: exit %d\n%s%s", code, out, errOut)
	}
}
