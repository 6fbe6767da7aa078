package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/plantest"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/cloudtest"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

// Redeploying applies what changed: without a plan the endpoint runs the measurement configuration; with a
// gate-passing plan the same command moves it blue/green to a model with the plan's queue shield and creates
// the plan's scaling and alarms; the same deploy again changes nothing; a deploy without the plan (--plan left
// out, its default path holding none) brings the measurement configuration back and removes the scaling.
func TestRedeployAppliesPlan(t *testing.T) {
	dir := t.TempDir()
	bin := emulatortest.ContainerBinary(t)
	containerDir := filepath.Join("..", "..", "container")
	digest, err := capacity.SourceDigest(containerDir)
	if err != nil {
		t.Fatalf("container digest: %v", err)
	}
	planDir := filepath.Join(dir, "artifacts")
	if err := os.MkdirAll(planDir, 0o755); err != nil {
		t.Fatal(err)
	}
	// Without --plan the deploy reads the default path, which holds no plan here: a --plan that does not exist
	// is a usage error.
	noPlan := capacity.DefaultPlanPath("espeak-ng")
	if _, err := os.Stat(noPlan); !os.IsNotExist(err) {
		t.Fatalf("%s exists in the test's directory (%v): the deploys without a plan need it absent", noPlan, err)
	}
	planPath := filepath.Join(planDir, capacity.PlanFile)
	port := freePort(t)
	t.Setenv("SPEECH_INFRA_STATE_DIR", filepath.Join(dir, "state"))
	t.Setenv("SPEECH_INFRA_PORT", port)
	t.Setenv("SPEECH_CONTAINER_BIN", bin)
	t.Cleanup(func() { invoke(t, "local", "stop") })
	deploy := func(plan string) string {
		t.Helper()
		args := []string{"deploy", "espeak-ng", "--local", "--container-dir", containerDir}
		if plan != noPlan {
			args = append(args, "--plan", plan)
		}
		out, stderr, code := invoke(t, args...)
		if code != 0 {
			t.Fatalf("deploy --plan %s: exit %d\n%s%s", plan, code, out, stderr)
		}
		t.Logf("deploy --plan %s:\n%s%s", plan, out, stderr)
		// Data on stdout (the export lines alone, for eval), the report on stderr.
		if !onlyExports(out) {
			t.Errorf("deploy --plan %s: stdout is not only export lines:\n%s", plan, out)
		}
		return stderr
	}

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	// The clients sign with the key the emulator generates at its first start (the first deploy below).
	var (
		sm  *sagemaker.Client
		aas *applicationautoscaling.Client
		cw  *cloudwatch.Client
	)
	const name = "speech-espeak-ng"
	// deployed returns the endpoint's status, model name and container environment, read back through the SDK.
	deployed := func() (string, string, map[string]string) {
		t.Helper()
		d, err := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeEndpoint: %v", err)
		}
		c, err := sm.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: d.EndpointConfigName})
		if err != nil {
			t.Fatalf("DescribeEndpointConfig: %v", err)
		}
		model := aws.ToString(c.ProductionVariants[0].ModelName)
		mo, err := sm.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(model)})
		if err != nil {
			t.Fatalf("DescribeModel: %v", err)
		}
		return string(d.EndpointStatus), model, mo.PrimaryContainer.Environment
	}
	target := func() []aastypes.ScalableTarget {
		t.Helper()
		out, err := aas.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{
			ServiceNamespace: capacity.ServiceNamespace, ResourceIds: []string{capacity.ResourceID(name, models.VariantName)},
		})
		if err != nil {
			t.Fatalf("DescribeScalableTargets: %v", err)
		}
		return out.ScalableTargets
	}
	alarms := func() map[string]int {
		t.Helper()
		out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNamePrefix: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeAlarms: %v", err)
		}
		idx := map[string]int{}
		for i, a := range out.MetricAlarms {
			idx[aws.ToString(a.AlarmName)] = i
		}
		return idx
	}

	// 1. No plan: the measurement configuration, no scaling.
	out := deploy(noPlan)
	creds, err := emulator.ReadCredentials(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := cloud.LocalConfig("http://127.0.0.1:"+port, cloud.LocalCredentials(creds))
	sm, aas, cw = sagemaker.NewFromConfig(cfg), applicationautoscaling.NewFromConfig(cfg), cloudwatch.NewFromConfig(cfg)
	if !strings.Contains(out, "created    endpoint "+name) || !strings.Contains(out, "QUEUE_MAX_DEPTH=0 (unbounded) until a plan passes the gate") || !strings.Contains(out, "scaling    off") {
		t.Errorf("first deploy output:\n%s", out)
	}
	status, oldModel, env := deployed()
	if status != "InService" || env["QUEUE_MAX_DEPTH"] != "0" {
		t.Fatalf("after the first deploy: %s, environment %v; want InService with QUEUE_MAX_DEPTH=0", status, env)
	}
	if len(target()) != 0 || len(alarms()) != 0 {
		t.Fatalf("scaling exists without a plan")
	}

	// 2. A gate-passing plan: blue/green to the plan's queue shield, scaling and all four alarms.
	plan := plantest.WriteEspeakPlan(t, planDir, digest)
	depth := strconv.Itoa(plan.Derived.QueueMaxDepth)
	out = deploy(planPath)
	for _, want := range []string{
		"updated    endpoint " + name,
		"changed  environment QUEUE_MAX_DEPTH: 0 → " + depth,
		"queue      shield " + depth + " applied from plan " + planPath,
		"scaling    applied from plan " + planPath,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("redeploy output lacks %q:\n%s", want, out)
		}
	}
	status, newModel, env := deployed()
	if status != "InService" || env["QUEUE_MAX_DEPTH"] != depth || newModel == oldModel {
		t.Fatalf("after the redeploy: %s, model %s (was %s), environment %v; want InService on a new model with QUEUE_MAX_DEPTH=%s", status, newModel, oldModel, env, depth)
	}
	if _, err := sm.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(oldModel)}); !cloud.IsNotFound(err) {
		t.Errorf("the replaced model %s still exists (err %v)", oldModel, err)
	}
	spec := capacity.ScalingSpecFor(name, models.VariantName, plan)
	if ts := target(); len(ts) != 1 || aws.ToInt32(ts[0].MinCapacity) != int32(spec.MinInstances) || aws.ToInt32(ts[0].MaxCapacity) != int32(spec.MaxInstances) {
		t.Errorf("scalable target %+v, want %d-%d", ts, spec.MinInstances, spec.MaxInstances)
	}
	ps, err := aas.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: capacity.ServiceNamespace, ResourceId: aws.String(capacity.ResourceID(name, models.VariantName))})
	if err != nil {
		t.Fatal(err)
	}
	policyARN := map[string]string{}
	for _, p := range ps.ScalingPolicies {
		policyARN[aws.ToString(p.PolicyName)] = aws.ToString(p.PolicyARN)
		if c := p.TargetTrackingScalingPolicyConfiguration; c != nil && aws.ToFloat64(c.TargetValue) != spec.ScaleOut.TargetValue {
			t.Errorf("target tracking target %g, want %g", aws.ToFloat64(c.TargetValue), spec.ScaleOut.TargetValue)
		}
	}
	if policyARN[spec.ScaleOut.PolicyName] == "" || policyARN[spec.ScaleIn.PolicyName] == "" {
		t.Errorf("policies %v, want %s and %s", policyARN, spec.ScaleOut.PolicyName, spec.ScaleIn.PolicyName)
	}
	got, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: capacity.AlarmNames(name)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got.MetricAlarms) != 4 || len(spec.Alarms) != 4 {
		t.Fatalf("DescribeAlarms returned %d alarms, the spec has %d; want 4", len(got.MetricAlarms), len(spec.Alarms))
	}
	byName := alarms()
	for _, want := range spec.Alarms {
		i, ok := byName[want.Name]
		if !ok {
			t.Errorf("alarm %s missing", want.Name)
			continue
		}
		a := got.MetricAlarms[i]
		checks := []struct {
			what      string
			got, want any
		}{
			{"metric", aws.ToString(a.MetricName), want.Metric},
			{"namespace", aws.ToString(a.Namespace), capacity.MetricNamespace},
			{"statistic", string(a.Statistic), want.Statistic},
			{"extended statistic", aws.ToString(a.ExtendedStatistic), want.ExtendedStatistic},
			{"period", aws.ToInt32(a.Period), int32(want.PeriodS)},
			{"evaluation periods", aws.ToInt32(a.EvaluationPeriods), int32(want.EvaluationPeriods)},
			{"datapoints to alarm", aws.ToInt32(a.DatapointsToAlarm), int32(want.DatapointsToAlarm)},
			{"threshold", aws.ToFloat64(a.Threshold), want.Threshold},
			{"comparison", string(a.ComparisonOperator), want.Comparison},
			{"missing data", aws.ToString(a.TreatMissingData), want.TreatMissingData},
			{"description", aws.ToString(a.AlarmDescription), want.Description},
		}
		for _, c := range checks {
			if c.got != c.want {
				t.Errorf("alarm %s %s = %v, want %v", want.Name, c.what, c.got, c.want)
			}
		}
		wantActions := 0
		if want.TriggersScaleIn {
			wantActions = 1
			if len(a.AlarmActions) != 1 || a.AlarmActions[0] != policyARN[spec.ScaleIn.PolicyName] {
				t.Errorf("alarm %s actions %v, want the scale-in policy %s", want.Name, a.AlarmActions, policyARN[spec.ScaleIn.PolicyName])
			}
		}
		if len(a.AlarmActions) != wantActions {
			t.Errorf("alarm %s has %d actions, want %d", want.Name, len(a.AlarmActions), wantActions)
		}
	}
	if a := got.MetricAlarms[byName[name+"-latency-above-slo"]]; aws.ToString(a.ExtendedStatistic) != "p95" || aws.ToFloat64(a.Threshold) != 1e6 {
		t.Errorf("latency alarm: %s at %g, want p95 above 1e6 µs (the 1000 ms SLO)", aws.ToString(a.ExtendedStatistic), aws.ToFloat64(a.Threshold))
	}
	audio := streamSpeech(ctx, t, sagemakerruntime.NewFromConfig(cfg), name)
	if len(audio) < 1000 || string(audio[:4]) != "RIFF" {
		t.Errorf("after the redeploy the endpoint streamed %d bytes, want a WAV", len(audio))
	}

	// 3. The same deploy again: nothing changes.
	out = deploy(planPath)
	if !strings.Contains(out, "unchanged  endpoint "+name) || !strings.Contains(out, "scaling    unchanged") {
		t.Errorf("repeated deploy output:\n%s", out)
	}
	if _, model, _ := deployed(); model != newModel {
		t.Errorf("a repeated deploy replaced the model %s with %s", newModel, model)
	}

	// 3b. The same result as JSON on stdout (--format json): nothing changes, and the report says so.
	out, stderr, code := invoke(t, "deploy", "espeak-ng", "--local", "--plan", planPath, "--container-dir", containerDir, "--format", "json")
	var rep deployReport
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("deploy --format json: exit %d, %v\nstdout:\n%s\nstderr:\n%s", code, err, out, stderr)
	}
	if rep.Endpoint != name || rep.Action != "unchanged" || rep.Status != "InService" || rep.ModelName != newModel || !rep.Gate.Enabled ||
		len(rep.Gate.Reasons) != 0 || rep.Scaling != "unchanged" || len(rep.ScalingDiffs) != 0 || rep.QueueShield.Now != depth || rep.QueueShield.Changed ||
		rep.MinInstances != spec.MinInstances || rep.MaxInstances != spec.MaxInstances || rep.TargetValue != spec.ScaleOut.TargetValue ||
		len(rep.Env) != 5 || rep.Env[0] != (envVar{"AWS_ENDPOINT_URL", "http://127.0.0.1:" + port}) {
		t.Errorf("deploy --format json reported %+v", rep)
	}

	// 4. Deployed without the plan: back to the measurement configuration, scaling removed.
	out = deploy(noPlan)
	if !strings.Contains(out, "queue      shield removed (was depth "+depth+")") || !strings.Contains(out, "scaling    removed") {
		t.Errorf("deploy without the plan, output:\n%s", out)
	}
	if status, _, env := deployed(); status != "InService" || env["QUEUE_MAX_DEPTH"] != "0" {
		t.Errorf("after removing the plan: %s, environment %v; want InService with QUEUE_MAX_DEPTH=0", status, env)
	}
	if len(target()) != 0 || len(alarms()) != 0 {
		t.Errorf("scaling remains after the plan was removed: targets %v, alarms %v", target(), alarms())
	}
	if audio := streamSpeech(ctx, t, sagemakerruntime.NewFromConfig(cfg), name); len(audio) < 1000 {
		t.Errorf("after returning to the measurement configuration the endpoint streamed %d bytes", len(audio))
	}

	// 5. Autoscaling asked for explicitly (as -c autoscaling=true does for the stack) without a plan: the gate's
	// refusal is a failed check, exit 1, after the endpoint was deployed as without scaling (here: unchanged).
	out, stderr, code = invoke(t, "deploy", "espeak-ng", "--local", "--container-dir", containerDir, "--autoscaling")
	if code != 1 || !strings.Contains(stderr, "autoscaling off: no plan at "+noPlan) ||
		!strings.Contains(stderr, "autoscaling was asked for but the gate refused the plan for "+name) ||
		!strings.Contains(stderr, "unchanged  endpoint "+name) || !strings.Contains(stderr, "scaling    off") || !onlyExports(out) {
		t.Errorf("deploy --autoscaling without a plan: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, out, stderr)
	}
	if len(target()) != 0 || len(alarms()) != 0 {
		t.Errorf("a refused explicit deploy left scaling behind: targets %v, alarms %v", target(), alarms())
	}
}

func streamSpeech(ctx context.Context, t *testing.T, rt *sagemakerruntime.Client, name string) []byte {
	t.Helper()
	res, err := bench.InvokeStream(ctx, rt, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: []byte(`{"text":"Redeployed.","format":"wav"}`),
	}, bench.StreamOptions{Keep: true})
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	return res.Payload
}

// deployDoubles are SDK doubles for one deploy of espeak-ng that creates the endpoint (InService at once),
// with no scaling to remove; calls counts the calls that change something.
func deployDoubles(calls *[]string) cloud.DeployClients {
	created := false
	sm := &cloudtest.SageMaker{
		DescribeEndpointFn: func(_ context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
			if !created {
				return nil, &smithy.GenericAPIError{Code: "ValidationException", Message: "Could not find endpoint " + aws.ToString(in.EndpointName) + "."}
			}
			return &sagemaker.DescribeEndpointOutput{EndpointName: in.EndpointName, EndpointStatus: smtypes.EndpointStatusInService,
				ProductionVariants: []smtypes.ProductionVariantSummary{{CurrentInstanceCount: aws.Int32(1)}}}, nil
		},
		CreateModelFn: func(_ context.Context, in *sagemaker.CreateModelInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error) {
			*calls = append(*calls, "CreateModel "+aws.ToString(in.ModelName))
			return &sagemaker.CreateModelOutput{}, nil
		},
		CreateEndpointConfigFn: func(_ context.Context, in *sagemaker.CreateEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error) {
			*calls = append(*calls, "CreateEndpointConfig "+aws.ToString(in.EndpointConfigName))
			return &sagemaker.CreateEndpointConfigOutput{}, nil
		},
		CreateEndpointFn: func(_ context.Context, in *sagemaker.CreateEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error) {
			*calls = append(*calls, "CreateEndpoint "+aws.ToString(in.EndpointName))
			created = true
			return &sagemaker.CreateEndpointOutput{}, nil
		},
	}
	aas := &cloudtest.AutoScaling{
		DeregisterScalableTargetFn: func(context.Context, *applicationautoscaling.DeregisterScalableTargetInput, ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeregisterScalableTargetOutput, error) {
			return nil, &aastypes.ObjectNotFoundException{Message: aws.String("No scalable target registered")}
		},
	}
	// No alarm exists, so none is deleted (DeleteAlarmsFn stays unset: a call would fail the test).
	cw := &cloudtest.CloudWatch{
		DescribeAlarmsFn: func(context.Context, *cloudwatch.DescribeAlarmsInput, ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
			return &cloudwatch.DescribeAlarmsOutput{}, nil
		},
	}
	return cloud.DeployClients{SageMaker: sm, AutoScaling: aas, CloudWatch: cw}
}

// The deploy command through doubles, without an emulator or a container: the report on stdout, the gate's
// reasons on stderr; --autoscaling without a plan is a failed check (exit 1) after the endpoint was created.
func TestDeployCommandThroughDoubles(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	emu := localEmulator{Info: emulator.Info{URL: "http://127.0.0.1:4599"}, creds: cloud.LocalCredentials{AccessKeyID: "AKIDLOCALTEST", SecretAccessKey: "secret"}}
	for _, explicit := range []bool{false, true} {
		var calls []string
		var stdout, stderr bytes.Buffer
		noPlan := filepath.Join(t.TempDir(), "no-plan.json")
		o := &deployOpts{
			args: []string{"espeak-ng"}, local: true, planPath: noPlan, containerDir: filepath.Join("..", "..", "container"), format: "text",
			emulator: emulatorSettings{stateDir: "state", port: 4599}, catalog: cat, stdout: &stdout, stderr: &stderr,
			connect: func(context.Context, emulatorSettings) (localEmulator, error) { return emu, nil },
			clients: func(aws.Config) cloud.DeployClients { return deployDoubles(&calls) },
		}
		if explicit {
			on := true
			o.autoscaling = &on
		}
		if err := o.Validate(); err != nil {
			t.Fatalf("Validate: %v", err)
		}
		err := o.Execute(context.Background())
		wantCode := 0
		if explicit {
			wantCode = 1
		}
		if exitcode.Code(err) != wantCode || explicit != errors.Is(err, cloud.ErrAutoscalingRefused) {
			t.Errorf("explicit %v: Execute = %v (exit %d), want exit %d", explicit, err, exitcode.Code(err), wantCode)
		}
		for _, want := range []string{
			"created    endpoint speech-espeak-ng (model and endpoint config speech-espeak-ng-",
			"queue      measurement configuration, QUEUE_MAX_DEPTH=0 (unbounded) until a plan passes the gate\n",
			"endpoint   speech-espeak-ng (InService, 1 instance(s), variant AllTraffic)\n",
			"emulator   http://127.0.0.1:4599 (state state, access key id AKIDLOCALTEST)\n",
			"scaling    off\n",
		} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("explicit %v: the report on stderr lacks %q:\n%s", explicit, want, stderr.String())
			}
		}
		if !strings.Contains(stdout.String(), "export AWS_ENDPOINT_URL=http://127.0.0.1:4599\n") || !onlyExports(stdout.String()) {
			t.Errorf("explicit %v: stdout is not the export lines alone:\n%s", explicit, stdout.String())
		}
		if !strings.Contains(stderr.String(), "autoscaling off: no plan at "+noPlan) {
			t.Errorf("explicit %v: stderr lacks the gate's reason:\n%s", explicit, stderr.String())
		}
		if len(calls) != 3 || !strings.HasPrefix(calls[2], "CreateEndpoint speech-espeak-ng") {
			t.Errorf("explicit %v: calls %q, want model, endpoint config and endpoint created", explicit, calls)
		}
	}
}

// Every problem of a deploy command line is reported at once, as a usage error (exit 2).
func TestDeployValidateReportsEverything(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	o := &deployOpts{args: []string{"kokoro-82m"}, local: true, yes: true, format: "yaml", modelDir: filepath.Join(t.TempDir(), "missing"),
		emulator: emulatorSettings{stateDir: "", port: 70000}, catalog: cat}
	err = o.Validate()
	if exitcode.Code(err) != 2 {
		t.Fatalf("Validate = %v (exit %d), want a usage error", err, exitcode.Code(err))
	}
	for _, want := range []string{"--yes is for a deploy to AWS", "--model-dir " + o.modelDir, `--format "yaml" is not a format`, "--state-dir is empty", "--port 70000"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Validate error lacks %q:\n%v", want, err)
		}
	}
}
