package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/plantest"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/models"
)

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
	plan := plantest.WriteEspeakPlan(t, dir, digest)
	planPath := filepath.Join(dir, capacity.PlanFile)
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	// A bound on a hang, not a speed check: under -race beside three other test processes on 2 cores (make
	// test-go) the deploys, drift, thaw and validate took more than 3 minutes once.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
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
