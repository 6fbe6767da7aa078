package cloud_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/cloudtest"
	"github.com/speech-infra/speech-infra/models"
)

// fixtureDigest is the container digest testdata/plans was generated with (testdata/plans/README.md): with it,
// kokoro-82m on ml.g5.xlarge passes the real gate with the valid fixture plan.
const fixtureDigest = "sha256:6ac968ec7e59a12ad96ac4fa210aa2319f20ab8b604192f8dbb3ca20d71ca4a1"

const (
	testImage = "123456789012.dkr.ecr.us-east-1.amazonaws.com/speech-container:test"
	testRole  = "arn:aws:iam::123456789012:role/speech-test"
	testDir   = "/opt/ml/model"
)

// fast polls the doubles without real waiting.
var fast = cloud.WaitOptions{Timeout: 5 * time.Second, MinDelay: time.Millisecond, MaxDelay: 2 * time.Millisecond}

func kokoro(t *testing.T) models.Model {
	t.Helper()
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func fixturePlan(name string) string {
	return filepath.Join("..", "testdata", "plans", name, capacity.PlanFile)
}

// options deploy kokoro-82m on its catalog instance type with the fixtures' container digest.
func options(t *testing.T, plan string) cloud.DeployOptions {
	m := kokoro(t)
	return cloud.DeployOptions{
		Model: m, InstanceType: m.InstanceType, Image: testImage, RoleARN: testRole, ContainerDigest: fixtureDigest,
		PlanPath: plan, ModelDir: testDir, Wait: fast,
	}
}

// specWithDepth is the endpoint spec DeployModel builds for kokoro-82m with the given queue shield depth.
func specWithDepth(t *testing.T, depth int) cloud.EndpointSpec {
	m := kokoro(t)
	return cloud.EndpointSpec{
		Name: m.EndpointName(), Variant: models.VariantName, Image: testImage, Environment: m.ContainerEnvironment(testDir, depth),
		InstanceType: m.InstanceType, InstanceCount: int32(m.InitialInstanceCount),
		StartupHealthCheckTimeoutS: int32(m.Container.StartupHealthCheckTimeoutS), RoleARN: testRole,
	}
}

func notFound(what string) error {
	return &smithy.GenericAPIError{Code: "ValidationException", Message: "Could not find " + what + "."}
}

// sageMaker scripts a SageMaker double around one endpoint. versions holds the model and endpoint config
// versions that exist (by name); running is the endpoint config the endpoint runs ("" for no endpoint).
// Every call is logged as "Method name".
type sageMaker struct {
	cloudtest.SageMaker
	calls    []string
	versions map[string]cloud.EndpointSpec
	running  string
	// statuses are answered by DescribeEndpoint in turn once the endpoint exists, the last one repeating.
	statuses []smtypes.EndpointStatus
	failure  string
	// onUpdate decides what an UpdateEndpoint to a version does: the default moves the endpoint to it.
	onUpdate func(version string)
}

func (s *sageMaker) log(method, name string) { s.calls = append(s.calls, method+" "+name) }

// newSageMaker is a double whose endpoint runs cur (nil: no endpoint yet), InService.
func newSageMaker(cur *cloud.EndpointSpec) *sageMaker {
	s := &sageMaker{versions: map[string]cloud.EndpointSpec{}, statuses: []smtypes.EndpointStatus{smtypes.EndpointStatusInService}}
	if cur != nil {
		s.running = cur.VersionName()
		s.versions[s.running] = *cur
	}
	s.onUpdate = func(version string) { s.running = version }
	s.DescribeEndpointFn = func(_ context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
		name := aws.ToString(in.EndpointName)
		s.log("DescribeEndpoint", name)
		if s.running == "" {
			return nil, notFound("endpoint " + name)
		}
		status := s.statuses[0]
		if len(s.statuses) > 1 {
			s.statuses = s.statuses[1:]
		}
		return &sagemaker.DescribeEndpointOutput{
			EndpointName: aws.String(name), EndpointConfigName: aws.String(s.running), EndpointStatus: status,
			FailureReason:      aws.String(s.failure),
			ProductionVariants: []smtypes.ProductionVariantSummary{{VariantName: aws.String(models.VariantName), CurrentInstanceCount: aws.Int32(1)}},
		}, nil
	}
	s.DescribeEndpointConfigFn = func(_ context.Context, in *sagemaker.DescribeEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error) {
		name := aws.ToString(in.EndpointConfigName)
		s.log("DescribeEndpointConfig", name)
		v, ok := s.versions[name]
		if !ok {
			return nil, notFound("endpoint configuration " + name)
		}
		return &sagemaker.DescribeEndpointConfigOutput{EndpointConfigName: aws.String(name), ProductionVariants: []smtypes.ProductionVariant{{
			VariantName: aws.String(v.Variant), ModelName: aws.String(name), InitialInstanceCount: aws.Int32(v.InstanceCount),
			InstanceType: smtypes.ProductionVariantInstanceType(v.InstanceType), ContainerStartupHealthCheckTimeoutInSeconds: aws.Int32(v.StartupHealthCheckTimeoutS),
		}}}, nil
	}
	s.DescribeModelFn = func(_ context.Context, in *sagemaker.DescribeModelInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error) {
		name := aws.ToString(in.ModelName)
		s.log("DescribeModel", name)
		v, ok := s.versions[name]
		if !ok {
			return nil, notFound("model " + name)
		}
		return &sagemaker.DescribeModelOutput{ModelName: aws.String(name), ExecutionRoleArn: aws.String(v.RoleARN),
			PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String(v.Image), Environment: v.Environment}}, nil
	}
	s.CreateModelFn = func(_ context.Context, in *sagemaker.CreateModelInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error) {
		s.log("CreateModel", aws.ToString(in.ModelName))
		return &sagemaker.CreateModelOutput{}, nil
	}
	s.CreateEndpointConfigFn = func(_ context.Context, in *sagemaker.CreateEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error) {
		s.log("CreateEndpointConfig", aws.ToString(in.EndpointConfigName))
		return &sagemaker.CreateEndpointConfigOutput{}, nil
	}
	s.CreateEndpointFn = func(_ context.Context, in *sagemaker.CreateEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error) {
		s.log("CreateEndpoint", aws.ToString(in.EndpointName))
		s.running = aws.ToString(in.EndpointConfigName)
		return &sagemaker.CreateEndpointOutput{}, nil
	}
	s.UpdateEndpointFn = func(_ context.Context, in *sagemaker.UpdateEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointOutput, error) {
		s.log("UpdateEndpoint", aws.ToString(in.EndpointConfigName))
		s.onUpdate(aws.ToString(in.EndpointConfigName))
		return &sagemaker.UpdateEndpointOutput{}, nil
	}
	s.DeleteEndpointConfigFn = func(_ context.Context, in *sagemaker.DeleteEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error) {
		s.log("DeleteEndpointConfig", aws.ToString(in.EndpointConfigName))
		return &sagemaker.DeleteEndpointConfigOutput{}, nil
	}
	s.DeleteModelFn = func(_ context.Context, in *sagemaker.DeleteModelInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteModelOutput, error) {
		s.log("DeleteModel", aws.ToString(in.ModelName))
		return &sagemaker.DeleteModelOutput{}, nil
	}
	return s
}

// scaling doubles Application Auto Scaling and CloudWatch with nothing deployed (hasScaling false) or with
// scaling from an earlier plan (true), logging every call.
type scaling struct {
	aas   cloudtest.AutoScaling
	cw    cloudtest.CloudWatch
	calls []string
}

func newScaling(hasScaling bool) *scaling {
	s := &scaling{}
	s.aas.DescribeScalableTargetsFn = func(_ context.Context, in *applicationautoscaling.DescribeScalableTargetsInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error) {
		s.calls = append(s.calls, "DescribeScalableTargets "+strings.Join(in.ResourceIds, ","))
		return &applicationautoscaling.DescribeScalableTargetsOutput{}, nil
	}
	s.aas.DescribeScalingPoliciesFn = func(_ context.Context, in *applicationautoscaling.DescribeScalingPoliciesInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalingPoliciesOutput, error) {
		s.calls = append(s.calls, "DescribeScalingPolicies "+aws.ToString(in.ResourceId))
		return &applicationautoscaling.DescribeScalingPoliciesOutput{}, nil
	}
	s.aas.RegisterScalableTargetFn = func(_ context.Context, in *applicationautoscaling.RegisterScalableTargetInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error) {
		s.calls = append(s.calls, "RegisterScalableTarget "+aws.ToString(in.ResourceId))
		return &applicationautoscaling.RegisterScalableTargetOutput{}, nil
	}
	s.aas.PutScalingPolicyFn = func(_ context.Context, in *applicationautoscaling.PutScalingPolicyInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScalingPolicyOutput, error) {
		s.calls = append(s.calls, "PutScalingPolicy "+aws.ToString(in.PolicyName))
		return &applicationautoscaling.PutScalingPolicyOutput{PolicyARN: aws.String("arn:policy/" + aws.ToString(in.PolicyName))}, nil
	}
	s.aas.DeregisterScalableTargetFn = func(_ context.Context, in *applicationautoscaling.DeregisterScalableTargetInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeregisterScalableTargetOutput, error) {
		s.calls = append(s.calls, "DeregisterScalableTarget "+aws.ToString(in.ResourceId))
		if !hasScaling {
			return nil, &aastypes.ObjectNotFoundException{Message: aws.String("No scalable target registered")}
		}
		return &applicationautoscaling.DeregisterScalableTargetOutput{}, nil
	}
	s.cw.DescribeAlarmsFn = func(_ context.Context, in *cloudwatch.DescribeAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
		s.calls = append(s.calls, "DescribeAlarms "+strings.Join(in.AlarmNames, ","))
		out := &cloudwatch.DescribeAlarmsOutput{}
		if hasScaling {
			for _, n := range in.AlarmNames {
				out.MetricAlarms = append(out.MetricAlarms, cwtypes.MetricAlarm{AlarmName: aws.String(n)})
			}
		}
		return out, nil
	}
	s.cw.PutMetricAlarmFn = func(_ context.Context, in *cloudwatch.PutMetricAlarmInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error) {
		s.calls = append(s.calls, "PutMetricAlarm "+aws.ToString(in.AlarmName))
		return &cloudwatch.PutMetricAlarmOutput{}, nil
	}
	s.cw.DeleteAlarmsFn = func(_ context.Context, in *cloudwatch.DeleteAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error) {
		// As CloudWatch does: names that do not exist are ignored, the call succeeds.
		s.calls = append(s.calls, "DeleteAlarms "+strings.Join(in.AlarmNames, ","))
		return &cloudwatch.DeleteAlarmsOutput{}, nil
	}
	return s
}

func clients(sm *sageMaker, sc *scaling) cloud.DeployClients {
	return cloud.DeployClients{SageMaker: sm, AutoScaling: &sc.aas, CloudWatch: &sc.cw}
}

// without drops the Describe* polls from a call log, leaving what changed something.
func writes(calls []string) []string {
	return slices.DeleteFunc(slices.Clone(calls), func(c string) bool { return strings.HasPrefix(c, "Describe") })
}

func sameCalls(t *testing.T, what string, got, want []string) {
	t.Helper()
	if !slices.Equal(got, want) {
		t.Errorf("%s calls:\n  got  %q\n  want %q", what, got, want)
	}
}

// The gate refuses (no plan): an endpoint that ran an earlier plan's queue shield moves blue/green back to
// the measurement configuration, and that plan's scaling target and alarms are removed.
func TestDeployModelGateRefusedRemovesScaling(t *testing.T) {
	prev := specWithDepth(t, 50)
	sm, sc := newSageMaker(&prev), newScaling(true)
	o := options(t, filepath.Join(t.TempDir(), "no-plan.json"))
	res, err := cloud.DeployModel(context.Background(), clients(sm, sc), o)
	if err != nil {
		t.Fatalf("DeployModel: %v", err)
	}
	if res.Gate.Enabled || len(res.Gate.Reasons) != 1 || !strings.Contains(res.Gate.Reasons[0], "no plan at "+o.PlanPath) {
		t.Errorf("gate %+v, want refused for the missing plan", res.Gate)
	}
	want := specWithDepth(t, 0).VersionName()
	if res.Deployed.Action != cloud.Updated || res.Deployed.ConfigName != want || res.Deployed.OldConfigName != prev.VersionName() {
		t.Errorf("deployed %+v, want updated from %s to %s", res.Deployed, prev.VersionName(), want)
	}
	if res.QueueShield != (cloud.QueueShield{Before: "50", Now: "0", Changed: true}) || res.Environment["QUEUE_MAX_DEPTH"] != "0" {
		t.Errorf("queue shield %+v, environment %v; want 50 → 0", res.QueueShield, res.Environment)
	}
	if res.Scaling != cloud.ScalingRemoved || res.ScalingSpec != nil {
		t.Errorf("scaling %q (spec %v), want removed without a spec", res.Scaling, res.ScalingSpec)
	}
	sameCalls(t, "SageMaker", writes(sm.calls), []string{
		"CreateModel " + want, "CreateEndpointConfig " + want, "UpdateEndpoint " + want,
		"DeleteEndpointConfig " + prev.VersionName(), "DeleteModel " + prev.VersionName(),
	})
	alarms := strings.Join(capacity.AlarmNames("speech-kokoro-82m"), ",")
	sameCalls(t, "scaling", sc.calls, []string{"DeregisterScalableTarget endpoint/speech-kokoro-82m/variant/AllTraffic",
		"DescribeAlarms " + alarms, "DeleteAlarms " + alarms})
}

// The gate refuses and there is nothing to remove: scaling is "off", the endpoint is created as is.
func TestDeployModelGateRefusedNothingToRemove(t *testing.T) {
	sm, sc := newSageMaker(nil), newScaling(false)
	sm.statuses = []smtypes.EndpointStatus{smtypes.EndpointStatusCreating, smtypes.EndpointStatusCreating, smtypes.EndpointStatusInService}
	res, err := cloud.DeployModel(context.Background(), clients(sm, sc), options(t, fixturePlan("infeasible")))
	if err != nil {
		t.Fatalf("DeployModel: %v", err)
	}
	if res.Gate.Enabled || len(res.Gate.Reasons) != 1 || !strings.Contains(res.Gate.Reasons[0], "is infeasible") {
		t.Errorf("gate %+v, want refused as infeasible", res.Gate)
	}
	version := specWithDepth(t, 0).VersionName()
	if res.Deployed.Action != cloud.Created || res.Deployed.ConfigName != version || res.Deployed.Endpoint.EndpointStatus != smtypes.EndpointStatusInService {
		t.Errorf("deployed %+v, want created %s and InService", res.Deployed, version)
	}
	if res.Scaling != cloud.ScalingOff || res.QueueShield != (cloud.QueueShield{Now: "0"}) {
		t.Errorf("scaling %q, queue shield %+v; want off and 0 unchanged", res.Scaling, res.QueueShield)
	}
	// Nothing existed, so nothing is deleted: CloudWatch's DeleteAlarms would succeed for missing names and
	// "removed" would be a lie.
	for _, c := range sc.calls {
		if strings.HasPrefix(c, "DeleteAlarms") {
			t.Errorf("scaling calls %q delete alarms that do not exist", sc.calls)
		}
	}
	// Created, then polled until InService: three DescribeEndpoint calls after the create.
	sameCalls(t, "SageMaker", sm.calls, []string{
		"DescribeEndpoint speech-kokoro-82m", "CreateModel " + version, "CreateEndpointConfig " + version, "CreateEndpoint speech-kokoro-82m",
		"DescribeEndpoint speech-kokoro-82m", "DescribeEndpoint speech-kokoro-82m", "DescribeEndpoint speech-kokoro-82m",
	})
}

// A plan that passes the gate on an endpoint in the measurement configuration: blue/green to the plan's queue
// shield, and the plan's target, both policies and all four alarms put.
func TestDeployModelPlanChangedApplied(t *testing.T) {
	prev := specWithDepth(t, 0)
	sm, sc := newSageMaker(&prev), newScaling(false)
	o := options(t, fixturePlan("valid"))
	res, err := cloud.DeployModel(context.Background(), clients(sm, sc), o)
	if err != nil {
		t.Fatalf("DeployModel: %v", err)
	}
	if !res.Gate.Enabled || res.Gate.Plan == nil {
		t.Fatalf("gate refused the valid fixture plan: %q", res.Gate.Reasons)
	}
	want := specWithDepth(t, 50).VersionName()
	if res.Deployed.Action != cloud.Updated || res.Deployed.ConfigName != want ||
		!slices.Contains(res.Deployed.Changes, "environment QUEUE_MAX_DEPTH: 0 → 50") {
		t.Errorf("deployed %+v, want updated to %s with the queue shield change", res.Deployed, want)
	}
	if res.QueueShield != (cloud.QueueShield{Before: "0", Now: "50", Changed: true}) {
		t.Errorf("queue shield %+v, want 0 → 50", res.QueueShield)
	}
	if res.Scaling != cloud.ScalingApplied || res.ScalingSpec == nil || res.ScalingSpec.MinInstances != 1 || res.ScalingSpec.MaxInstances != 7 ||
		len(res.ScalingDiffs) != 1 || !strings.Contains(res.ScalingDiffs[0], "no scalable target") {
		t.Errorf("scaling %q, spec %+v, diffs %q; want applied 1-7 after no scalable target", res.Scaling, res.ScalingSpec, res.ScalingDiffs)
	}
	spec := res.ScalingSpec
	wantScaling := []string{"RegisterScalableTarget endpoint/speech-kokoro-82m/variant/AllTraffic",
		"PutScalingPolicy " + spec.ScaleOut.PolicyName, "PutScalingPolicy " + spec.ScaleIn.PolicyName}
	for _, a := range capacity.AlarmNames("speech-kokoro-82m") {
		wantScaling = append(wantScaling, "PutMetricAlarm "+a)
	}
	sameCalls(t, "scaling", writes(sc.calls), wantScaling)
}

// Autoscaling asked for explicitly and refused: the endpoint is deployed without scaling, the result is
// complete, and the error wraps ErrAutoscalingRefused (a failed check: the command exits 1).
func TestDeployModelExplicitRefused(t *testing.T) {
	prev := specWithDepth(t, 0)
	sm, sc := newSageMaker(&prev), newScaling(false)
	on := true
	o := options(t, fixturePlan("what-if"))
	o.AutoscalingOverride = &on
	res, err := cloud.DeployModel(context.Background(), clients(sm, sc), o)
	if !errors.Is(err, cloud.ErrAutoscalingRefused) || !strings.Contains(err.Error(), "speech-kokoro-82m") {
		t.Fatalf("DeployModel error %v, want ErrAutoscalingRefused naming the endpoint", err)
	}
	if !res.Gate.Explicit || res.Gate.Enabled || len(res.Gate.Reasons) != 1 || !strings.Contains(res.Gate.Reasons[0], "what-if plan") {
		t.Errorf("gate %+v, want explicit and refused for the what-if plan", res.Gate)
	}
	if res.Deployed.Action != cloud.Unchanged || res.Scaling != cloud.ScalingOff || res.Deployed.Endpoint == nil {
		t.Errorf("deployed %q, scaling %q; want the endpoint unchanged (described) and scaling off", res.Deployed.Action, res.Scaling)
	}
	sameCalls(t, "SageMaker", writes(sm.calls), nil)
}

// The new version fails and SageMaker rolls the endpoint back to its previous config: the new model and
// config are deleted, the error names the failure, and scaling is not touched.
func TestDeployModelRollback(t *testing.T) {
	prev := specWithDepth(t, 0)
	sm, sc := newSageMaker(&prev), newScaling(false)
	sm.onUpdate = func(string) { sm.failure = "the instance failed its /ping health check" }
	res, err := cloud.DeployModel(context.Background(), clients(sm, sc), options(t, fixturePlan("valid")))
	if !errors.Is(err, cloud.ErrRolledBack) || !strings.Contains(err.Error(), "the instance failed its /ping health check") {
		t.Fatalf("DeployModel error %v, want ErrRolledBack with the failure reason", err)
	}
	want := specWithDepth(t, 50).VersionName()
	if res.Deployed.Action != cloud.Unchanged || res.Deployed.ConfigName != prev.VersionName() || aws.ToString(res.Deployed.Endpoint.EndpointConfigName) != prev.VersionName() {
		t.Errorf("deployed %+v, want the previous config %s still running", res.Deployed, prev.VersionName())
	}
	sameCalls(t, "SageMaker", writes(sm.calls), []string{
		"CreateModel " + want, "CreateEndpointConfig " + want, "UpdateEndpoint " + want, "DeleteEndpointConfig " + want, "DeleteModel " + want,
	})
	if res.Scaling != "" || len(sc.calls) != 0 {
		t.Errorf("scaling %q, calls %q after a rollback; want none", res.Scaling, sc.calls)
	}
}

// The rollback's cleanup fails: both the rollback and the cleanup error are returned, neither dropped.
func TestDeployEndpointRollbackCleanupErrorReported(t *testing.T) {
	prev := specWithDepth(t, 0)
	sm := newSageMaker(&prev)
	sm.onUpdate = func(string) { sm.failure = "out of capacity" }
	denied := &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized to perform sagemaker:DeleteEndpointConfig"}
	sm.DeleteEndpointConfigFn = func(_ context.Context, in *sagemaker.DeleteEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error) {
		sm.log("DeleteEndpointConfig", aws.ToString(in.EndpointConfigName))
		return nil, denied
	}
	_, err := cloud.DeployEndpoint(context.Background(), sm, specWithDepth(t, 50), fast)
	if !errors.Is(err, cloud.ErrRolledBack) || !errors.Is(err, denied) {
		t.Fatalf("error %v, want both the rollback and the cleanup's AccessDenied", err)
	}
	want := specWithDepth(t, 50).VersionName()
	for _, s := range []string{"out of capacity", "clean up after the rollback", "delete endpoint config " + want, "not authorized"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
}

// Each failing call of DeployEndpoint ends it with an error that names the call and the resource, and
// nothing after the failing call is done.
func TestDeployEndpointErrors(t *testing.T) {
	boom := &smithy.GenericAPIError{Code: "ThrottlingException", Message: "Rate exceeded"}
	prev := specWithDepth(t, 0)
	next := specWithDepth(t, 50)
	v := next.VersionName()
	tests := []struct {
		name      string
		current   *cloud.EndpointSpec
		setup     func(s *sageMaker)
		wait      cloud.WaitOptions
		wantErr   []string
		wantCalls []string // the writes
	}{
		{
			name: "describe fails", current: nil,
			setup: func(s *sageMaker) {
				s.DescribeEndpointFn = func(context.Context, *sagemaker.DescribeEndpointInput, ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
					return nil, boom
				}
			},
			wantErr: []string{"describe endpoint speech-kokoro-82m", "Rate exceeded"},
		},
		{
			name: "describe endpoint config fails", current: &prev,
			setup: func(s *sageMaker) {
				s.DescribeEndpointConfigFn = func(context.Context, *sagemaker.DescribeEndpointConfigInput, ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error) {
					return nil, boom
				}
			},
			wantErr: []string{"describe endpoint config " + prev.VersionName() + " of speech-kokoro-82m", "Rate exceeded"},
		},
		{
			name: "create model fails", current: nil,
			setup: func(s *sageMaker) {
				s.CreateModelFn = func(context.Context, *sagemaker.CreateModelInput, ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error) {
					return nil, boom
				}
			},
			wantErr: []string{"create model " + v, "Rate exceeded"},
		},
		{
			name: "create endpoint config fails", current: nil,
			setup: func(s *sageMaker) {
				s.CreateEndpointConfigFn = func(context.Context, *sagemaker.CreateEndpointConfigInput, ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error) {
					return nil, boom
				}
			},
			wantErr: []string{"create endpoint config " + v, "Rate exceeded"}, wantCalls: []string{"CreateModel " + v},
		},
		{
			name: "update fails", current: &prev,
			setup: func(s *sageMaker) {
				s.UpdateEndpointFn = func(context.Context, *sagemaker.UpdateEndpointInput, ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointOutput, error) {
					return nil, boom
				}
			},
			wantErr: []string{"update endpoint speech-kokoro-82m to " + v, "Rate exceeded"}, wantCalls: []string{"CreateModel " + v, "CreateEndpointConfig " + v},
		},
		{
			name: "new endpoint fails", current: nil,
			setup: func(s *sageMaker) {
				s.statuses = []smtypes.EndpointStatus{smtypes.EndpointStatusCreating, smtypes.EndpointStatusFailed}
				s.failure = "the container exited at start"
			},
			wantErr: []string{"endpoint speech-kokoro-82m failed: the container exited at start"}, wantCalls: []string{"CreateModel " + v, "CreateEndpointConfig " + v, "CreateEndpoint speech-kokoro-82m"},
		},
		{
			name: "wait times out", current: nil,
			setup:   func(s *sageMaker) { s.statuses = []smtypes.EndpointStatus{smtypes.EndpointStatusCreating} },
			wait:    cloud.WaitOptions{Timeout: 200 * time.Millisecond, MinDelay: 5 * time.Millisecond, MaxDelay: 10 * time.Millisecond},
			wantErr: []string{"endpoint speech-kokoro-82m still Creating after 200ms"}, wantCalls: []string{"CreateModel " + v, "CreateEndpointConfig " + v, "CreateEndpoint speech-kokoro-82m"},
		},
		{
			name: "describe fails during the wait after an update", current: &prev,
			setup: func(s *sageMaker) {
				s.onUpdate = func(version string) {
					s.running = version
					s.DescribeEndpointFn = func(context.Context, *sagemaker.DescribeEndpointInput, ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
						// Not a throttling error: a throttled DescribeEndpoint is asked again (TestWaitInServiceUnderThrottling).
						return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "not authorized to perform sagemaker:DescribeEndpoint"}
					}
				}
			},
			wantErr: []string{"describe endpoint speech-kokoro-82m", "not authorized"}, wantCalls: []string{"CreateModel " + v, "CreateEndpointConfig " + v, "UpdateEndpoint " + v},
		},
		{
			name: "an existing endpoint that failed", current: &prev,
			setup: func(s *sageMaker) {
				s.statuses = []smtypes.EndpointStatus{smtypes.EndpointStatusFailed}
				s.failure = "instance terminated"
			},
			wantErr: []string{"endpoint speech-kokoro-82m failed: instance terminated: destroy it (speech-infra destroy) and deploy again"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSageMaker(tt.current)
			tt.setup(s)
			wait := fast
			if tt.wait != (cloud.WaitOptions{}) {
				wait = tt.wait
			}
			start := time.Now()
			_, err := cloud.DeployEndpoint(context.Background(), s, next, wait)
			if err == nil {
				t.Fatal("DeployEndpoint succeeded, want an error")
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q lacks %q", err, want)
				}
			}
			if errors.Is(err, boom) != strings.Contains(strings.Join(tt.wantErr, " "), "Rate exceeded") {
				t.Errorf("error %v: wraps the API error %v, want it wrapped exactly when it caused the failure", err, errors.Is(err, boom))
			}
			sameCalls(t, "SageMaker", writes(s.calls), tt.wantCalls)
			if tt.wait.Timeout > 0 && time.Since(start) > 5*tt.wait.Timeout {
				t.Errorf("the wait took %s with a %s timeout", time.Since(start), tt.wait.Timeout)
			}
		})
	}
}

// An endpoint that already runs the spec is left alone.
func TestDeployEndpointUnchanged(t *testing.T) {
	cur := specWithDepth(t, 50)
	s := newSageMaker(&cur)
	res, err := cloud.DeployEndpoint(context.Background(), s, specWithDepth(t, 50), fast)
	if err != nil || res.Action != cloud.Unchanged || res.ConfigName != cur.VersionName() || res.Previous == nil {
		t.Fatalf("DeployEndpoint = %+v, %v; want unchanged on %s", res, err, cur.VersionName())
	}
	sameCalls(t, "SageMaker", writes(s.calls), nil)
}

// The wait gives up at a cancelled context and says so.
func TestWaitInServiceCancelled(t *testing.T) {
	cur := specWithDepth(t, 0)
	s := newSageMaker(&cur)
	s.statuses = []smtypes.EndpointStatus{smtypes.EndpointStatusUpdating}
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	d, err := cloud.WaitInService(ctx, s, "speech-kokoro-82m", cloud.WaitOptions{Timeout: time.Minute, MinDelay: 10 * time.Millisecond, MaxDelay: 20 * time.Millisecond})
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "wait for endpoint speech-kokoro-82m") || d == nil || d.EndpointStatus != smtypes.EndpointStatusUpdating {
		t.Fatalf("WaitInService = %v, %v; want the context's deadline with the last description", d, err)
	}
}

// Invalid options are refused with every problem at once, before any call.
func TestDeployOptionsValidate(t *testing.T) {
	m := kokoro(t)
	o := cloud.DeployOptions{Model: m, Wait: cloud.WaitOptions{Timeout: -time.Second, MinDelay: 2 * time.Second, MaxDelay: time.Second}}
	sm, sc := newSageMaker(nil), newScaling(false)
	_, err := cloud.DeployModel(context.Background(), clients(sm, sc), o)
	if err == nil {
		t.Fatal("DeployModel accepted options without instance type, image, role, plan and weights")
	}
	for _, want := range []string{
		"instance type: none given", "image: none given", "execution role: none given", "plan path: none given",
		"model directory: kokoro-82m needs its weights", "wait timeout -1s: negative", "wait maximum delay 1s: below the minimum delay 2s",
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	if len(sm.calls) != 0 || len(sc.calls) != 0 {
		t.Errorf("invalid options made calls: %q %q", sm.calls, sc.calls)
	}
	if err := options(t, "plan.json").Validate(); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// A deploy stopped (Ctrl-C, SIGTERM) while the gate re-runs the plan's simulations deploys nothing: not the
// endpoint without its scaling, which is what a refused gate would otherwise lead to.
func TestDeployModelStoppedDuringTheGateDeploysNothing(t *testing.T) {
	sm, sc := newSageMaker(nil), newScaling(false)
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("interrupt signal received"))
	_, err := cloud.DeployModel(ctx, clients(sm, sc), options(t, fixturePlan("valid")))
	if err == nil || !strings.Contains(err.Error(), "stopped before anything was deployed") || !strings.Contains(err.Error(), "interrupt signal received") {
		t.Fatalf("DeployModel on a stopped context: %v, want it stopped before anything was deployed, naming the cause", err)
	}
	if len(sm.calls) != 0 || len(sc.calls) != 0 {
		t.Errorf("a stopped deploy called SageMaker %q and scaling %q, want nothing", sm.calls, sc.calls)
	}
}
