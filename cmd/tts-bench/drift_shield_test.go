package main

import (
	"context"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/plantest"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/models"
)

// A `deploy --local --autoscaling=false` killed mid-way can leave the endpoint on QUEUE_MAX_DEPTH=0 with the
// plan's scalable target, policies and alarms in place: scaling without its shield. Here a
// plan is deployed, then the endpoint alone is redeployed with the measurement configuration's environment
// (what that deploy does before it removes the scaling): drift and validate both exit 1 naming the shield.
func TestDriftAndValidateCatchScalingWithoutAShield(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const image, role = "speech-infra/speech-container:local", "arn:aws:iam::000000000000:role/local"
	res, err := cloud.DeployModel(ctx, cloud.DeployClients{SageMaker: e.SageMaker, AutoScaling: e.AutoScaling, CloudWatch: e.CloudWatch}, cloud.DeployOptions{
		Model: m, InstanceType: models.LocalInstanceType, Image: image, RoleARN: role,
		ContainerDigest: digest, PlanPath: planPath, Wait: cloud.WaitOptions{Timeout: 90 * time.Second},
	})
	if err != nil || res.Scaling != cloud.ScalingApplied || res.Environment["QUEUE_MAX_DEPTH"] != strconv.Itoa(plan.Derived.QueueMaxDepth) {
		t.Fatalf("deploy = %v, scaling %s, env %v, gate %v", err, res.Scaling, res.Environment, res.Gate.Reasons)
	}
	t.Cleanup(func() {
		if !e.Stopped() {
			c, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cloud.RemoveScaling(c, e.AutoScaling, e.CloudWatch, m.EndpointName(), models.VariantName)
			cloud.DestroyEndpoint(c, e.SageMaker, m.EndpointName())
		}
	})
	if _, err := cloud.WaitInService(ctx, e.SageMaker, m.EndpointName(), cloud.WaitOptions{Timeout: 90 * time.Second}); err != nil {
		t.Fatal(err)
	}
	jdir := filepath.Join(t.TempDir(), "journals")
	common := []string{"--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--plan", planPath}
	drift := func() (string, string, int) {
		return runCLI(t, append(append([]string{"drift"}, common...), "--container-dir", containerDir, "--journal-dir", jdir)...)
	}
	validate := func() (string, string, int) { return runCLI(t, append([]string{"validate"}, common...)...) }
	if out, errOut, code := drift(); code != 0 || !strings.Contains(out, "clean:") {
		t.Fatalf("drift after the deploy: exit %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := validate(); code != 0 || !hasLine(out, "pass", "container QUEUE_MAX_DEPTH", `"`+strconv.Itoa(plan.Derived.QueueMaxDepth)+`"`) {
		t.Fatalf("validate after the deploy: exit %d\n%s%s", code, out, errOut)
	}

	// The endpoint moves to QUEUE_MAX_DEPTH=0 (blue/green, as the deploy without a plan does); the scaling stays.
	if _, err := cloud.DeployEndpoint(ctx, e.SageMaker, cloud.EndpointSpec{
		Name: m.EndpointName(), Variant: models.VariantName, Image: image, Environment: m.ContainerEnvironment("", 0),
		InstanceType: models.LocalInstanceType, InstanceCount: int32(m.InitialInstanceCount),
		StartupHealthCheckTimeoutS: int32(m.Container.StartupHealthCheckTimeoutS), RoleARN: role,
	}, cloud.WaitOptions{Timeout: 90 * time.Second}); err != nil {
		t.Fatal(err)
	}
	out, errOut, code := drift()
	if code != 1 || !strings.Contains(out, "shield_missing") || !strings.Contains(out, "environment_mismatch") ||
		!strings.Contains(out, `QUEUE_MAX_DEPTH="0", the plan deploys "`+strconv.Itoa(plan.Derived.QueueMaxDepth)+`"`) {
		t.Fatalf("drift with scaling over QUEUE_MAX_DEPTH=0: exit %d, want 1 naming the shield\n%s%s", code, out, errOut)
	}
	out, errOut, code = validate()
	if code != 1 || !hasLine(out, "FAIL", "queue shield under scaling", "none (QUEUE_MAX_DEPTH \"0\")") ||
		!hasLine(out, "FAIL", "container QUEUE_MAX_DEPTH", `"`+strconv.Itoa(plan.Derived.QueueMaxDepth)+`"`, `"0"`) {
		t.Fatalf("validate with scaling over QUEUE_MAX_DEPTH=0: exit %d, want 1 naming the shield\n%s%s", code, out, errOut)
	}
}

// hasLine reports whether one line of out holds every part.
func hasLine(out string, parts ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(l, p)
		}
		if ok {
			return true
		}
	}
	return false
}
