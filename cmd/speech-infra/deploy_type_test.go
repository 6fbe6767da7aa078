package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/plantest"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

// A plan measured on another instance type, on the emulator: a plan measured on ml.g6.xlarge (an espeak-ng set
// rewritten for that type, as tts-bench compare keeps it) deploys with --local --instance-type ml.g6.xlarge:
// the endpoint config runs that type and the plan's scaling is applied. The same plan without --instance-type
// deploys the emulator's own "local" type (blue/green back) and the gate refuses it, naming both types and
// --instance-type.
func TestDeployLocalInstanceType(t *testing.T) {
	dir := t.TempDir()
	bin := emulatortest.ContainerBinary(t)
	containerDir := filepath.Join("..", "..", "container")
	digest, err := capacity.SourceDigest(containerDir)
	if err != nil {
		t.Fatalf("container digest: %v", err)
	}
	local := filepath.Join(dir, "local")
	if err := os.MkdirAll(local, 0o755); err != nil {
		t.Fatal(err)
	}
	plantest.WriteEspeakPlan(t, local, digest)
	art := filepath.Join(dir, "artifacts", "espeak-ng", "ml.g6.xlarge")
	plantest.WriteTypeSet(t, local, art, "ml.g6.xlarge")
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	ms, err := capacity.LoadMeasurement(filepath.Join(art, capacity.QMaxFile), filepath.Join(art, capacity.TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	o := capacity.DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 300, 20
	p, err := capacity.FromArtifacts(m, ms, o)
	if err != nil || !p.Feasible() || p.Fingerprint.InstanceType != "ml.g6.xlarge" {
		t.Fatalf("the ml.g6.xlarge plan: %v, %+v", err, p.Findings)
	}
	planPath := filepath.Join(art, capacity.PlanFile)
	if err := capacity.WriteJSON(planPath, p); err != nil {
		t.Fatal(err)
	}

	port := freePort(t)
	t.Setenv("SPEECH_INFRA_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("SPEECH_INFRA_PORT", port)
	t.Setenv("SPEECH_CONTAINER_BIN", bin)
	t.Cleanup(func() { invoke(t, "local", "stop") })

	out, stderr, code := invoke(t, "deploy", "espeak-ng", "--local", "--instance-type", "ml.g6.xlarge", "--autoscaling", "--plan", planPath, "--container-dir", containerDir)
	if code != 0 {
		t.Fatalf("deploy --instance-type ml.g6.xlarge: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(stderr, "scaling    applied from plan "+planPath) {
		t.Errorf("the plan's scaling was not applied:\n%s", stderr)
	}
	creds, err := emulator.ReadCredentials(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := cloud.LocalConfig("http://127.0.0.1:"+port, cloud.LocalCredentials(creds))
	sm, aas := sagemaker.NewFromConfig(cfg), applicationautoscaling.NewFromConfig(cfg)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	deployedType := func() string {
		t.Helper()
		d, err := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(m.EndpointName())})
		if err != nil {
			t.Fatalf("DescribeEndpoint: %v", err)
		}
		c, err := sm.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: d.EndpointConfigName})
		if err != nil {
			t.Fatalf("DescribeEndpointConfig: %v", err)
		}
		return string(c.ProductionVariants[0].InstanceType)
	}
	if got := deployedType(); got != "ml.g6.xlarge" {
		t.Errorf("endpoint config runs %s, want ml.g6.xlarge", got)
	}
	ts, err := aas.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{
		ServiceNamespace: capacity.ServiceNamespace, ResourceIds: []string{capacity.ResourceID(m.EndpointName(), models.VariantName)},
	})
	if err != nil || len(ts.ScalableTargets) != 1 {
		t.Errorf("scalable targets %+v (%v), want the plan's", ts, err)
	}

	// Without --instance-type: the emulator's own type, and the plan refused for it.
	out, stderr, code = invoke(t, "deploy", "espeak-ng", "--local", "--autoscaling", "--plan", planPath, "--container-dir", containerDir)
	if code != exitcode.CodeCheckFailed {
		t.Fatalf("deploy without --instance-type: exit %d, want %d\n%s%s", code, exitcode.CodeCheckFailed, out, stderr)
	}
	for _, w := range []string{"measured for instance type ml.g6.xlarge but the deployment has local", "--instance-type ml.g6.xlarge", "scaling    removed"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr lacks %q:\n%s", w, stderr)
		}
	}
	if got := deployedType(); got != models.LocalInstanceType {
		t.Errorf("endpoint config runs %s, want %s", got, models.LocalInstanceType)
	}

	// A type the service model does not know is a usage error naming the flag; nothing is deployed.
	_, stderr, code = invoke(t, "deploy", "espeak-ng", "--local", "--instance-type", "ml.g9.huge", "--plan", planPath, "--container-dir", containerDir)
	if code != exitcode.CodeUsage || !strings.Contains(stderr, `--instance-type "ml.g9.huge" is not a SageMaker endpoint instance type`) || !strings.Contains(stderr, `leave --instance-type out to deploy local`) {
		t.Errorf("--instance-type ml.g9.huge: exit %d\n%s", code, stderr)
	}
}

// On AWS, --instance-type reaches the CDK app as -c instance_type and the preflight checks the quota of that
// type, not the catalog's (the doubles' account has no ml.g6.xlarge quota: the check fails and names it).
func TestDeployAWSInstanceType(t *testing.T) {
	run := newRecorder(true)
	o, out, errOut, _ := awsDeploy(t, run, goodAccount(), "us-east-1", "espeak-ng")
	o.dryRun, o.instanceType = true, "ml.g6.xlarge"
	code := runDeploy(t, o)
	if code != exitcode.CodeCheckFailed {
		t.Fatalf("exit %d, want %d (no ml.g6.xlarge quota)\n%s%s", code, exitcode.CodeCheckFailed, out, errOut)
	}
	for _, w := range []string{"deploy espeak-ng (ml.g6.xlarge, 1 free instance(s) needed)", "ml.g6.xlarge",
		"deploy SpeechFoundationStack SpeechEndpointStack-espeak-ng -c model=espeak-ng -c plan=artifacts/espeak-ng/plan.json -c instance_type=ml.g6.xlarge"} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("dry run lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out.String(), "ml.c5.large") {
		t.Errorf("the dry run still checks the catalog's type:\n%s", out)
	}

	run = newRecorder(true)
	o, out, errOut, _ = awsDeploy(t, run, goodAccount(), "us-east-1", "espeak-ng")
	o.skipPreflight, o.instanceType = true, "ml.g6.xlarge"
	if code := runDeploy(t, o); code != 0 || len(run.streamed) != 1 {
		t.Fatalf("exit %d, streamed %v\n%s%s", code, run.streamed, out, errOut)
	}
	if a := strings.Join(run.streamed[0].Args, " "); !strings.Contains(a, " -c instance_type=ml.g6.xlarge") {
		t.Errorf("cdk deploy args %q lack -c instance_type", a)
	}
	if !strings.Contains(errOut.String(), "runs on ml.g6.xlarge") {
		t.Errorf("stderr does not name the type deployed:\n%s", errOut)
	}

	// Without --instance-type, no context: the app deploys the catalog's type.
	if a := strings.Join(deployCommandFor(cdkTarget{appDir: "."}, o.model, "p.json", "", nil, false).Args, " "); strings.Contains(a, "instance_type") {
		t.Errorf("args %q pass an instance type nobody asked for", a)
	}
	for _, bad := range []string{"local", "ml.g9.huge", "g6.xlarge"} {
		o, _, _, _ = awsDeploy(t, newRecorder(true), goodAccount(), "", "espeak-ng")
		o.instanceType = bad
		if err := o.Validate(); exitcode.Code(err) != exitcode.CodeUsage || !strings.Contains(err.Error(), `--instance-type "`+bad+`" is not a SageMaker endpoint instance type`) ||
			!strings.Contains(err.Error(), "leave --instance-type out to deploy ml.c5.large") {
			t.Errorf("--instance-type %s: Validate = %v", bad, err)
		}
	}
}
