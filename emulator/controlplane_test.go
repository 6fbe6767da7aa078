package emulator

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"encoding/json"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	lgtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go"
)

// createEndpoint creates model, endpoint config and endpoint for the espeak engine.
func createEndpoint(t *testing.T, c clients, name string, count int32) {
	t.Helper()
	ctx := ctxFor(t, 10*time.Second)
	if _, err := c.sm.CreateModel(ctx, &sagemaker.CreateModelInput{
		ModelName: aws.String(name),
		PrimaryContainer: &smtypes.ContainerDefinition{
			Image:       aws.String("local/speech-container"),
			Environment: map[string]string{"ENGINE": "espeak", "QUEUE_MAX_DEPTH": "0"},
		},
		ExecutionRoleArn: aws.String("arn:aws:iam::000000000000:role/local"),
	}); err != nil {
		t.Fatalf("CreateModel: %v", err)
	}
	if _, err := c.sm.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{
		EndpointConfigName: aws.String(name),
		ProductionVariants: []smtypes.ProductionVariant{{
			VariantName: aws.String("AllTraffic"), ModelName: aws.String(name),
			InitialInstanceCount: aws.Int32(count), InstanceType: smtypes.ProductionVariantInstanceType("local"),
			ContainerStartupHealthCheckTimeoutInSeconds: aws.Int32(60),
		}},
	}); err != nil {
		t.Fatalf("CreateEndpointConfig: %v", err)
	}
	if _, err := c.sm.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String(name)}); err != nil {
		t.Fatalf("CreateEndpoint: %v", err)
	}
}

func apiCode(err error) string {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	return ""
}

// Without a container binary the endpoint cannot start: it goes Creating → Failed with the reason, while every
// control-plane resource still round-trips through the SDK.
func TestControlPlane(t *testing.T) {
	dir := t.TempDir()
	r := start(t, dir, "")
	c := newClients(r.emu.URL())
	ctx := ctxFor(t, 60*time.Second)
	const name = "speech-cp"
	createEndpoint(t, c, name, 1)

	d, err := c.sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeEndpoint: %v", err)
	}
	if d.EndpointStatus != smtypes.EndpointStatusCreating && d.EndpointStatus != smtypes.EndpointStatusFailed {
		t.Fatalf("new endpoint status = %s, want Creating (or already Failed)", d.EndpointStatus)
	}
	eventually(t, 10*time.Second, "endpoint Failed", func() bool {
		d, err = c.sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		return err == nil && d.EndpointStatus == smtypes.EndpointStatusFailed
	})
	if !strings.Contains(aws.ToString(d.FailureReason), "container binary") {
		t.Errorf("FailureReason = %q, want it to name the missing container binary", aws.ToString(d.FailureReason))
	}
	m, err := c.sm.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(name)})
	if err != nil || m.PrimaryContainer.Environment["ENGINE"] != "espeak" || m.CreationTime == nil {
		t.Fatalf("DescribeModel = %+v, %v", m, err)
	}
	ec, err := c.sm.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String(name)})
	if err != nil || len(ec.ProductionVariants) != 1 || aws.ToInt32(ec.ProductionVariants[0].InitialInstanceCount) != 1 || ec.ProductionVariants[0].InstanceType != "local" {
		t.Fatalf("DescribeEndpointConfig = %+v, %v", ec, err)
	}
	list, err := c.sm.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{NameContains: aws.String("cp")})
	if err != nil || len(list.Endpoints) != 1 || aws.ToString(list.Endpoints[0].EndpointName) != name {
		t.Fatalf("ListEndpoints = %+v, %v", list, err)
	}

	// Scalable target: register, merge SuspendedState as AWS does, describe.
	resource := "endpoint/" + name + "/variant/AllTraffic"
	reg := func(in *applicationautoscaling.RegisterScalableTargetInput) {
		t.Helper()
		in.ServiceNamespace = aastypes.ServiceNamespaceSagemaker
		in.ResourceId = aws.String(resource)
		in.ScalableDimension = aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount
		if _, err := c.aas.RegisterScalableTarget(ctx, in); err != nil {
			t.Fatalf("RegisterScalableTarget: %v", err)
		}
	}
	reg(&applicationautoscaling.RegisterScalableTargetInput{MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(3)})
	reg(&applicationautoscaling.RegisterScalableTargetInput{SuspendedState: &aastypes.SuspendedState{DynamicScalingInSuspended: aws.Bool(true)}})
	reg(&applicationautoscaling.RegisterScalableTargetInput{SuspendedState: &aastypes.SuspendedState{DynamicScalingOutSuspended: aws.Bool(true)}})
	targets, err := c.aas.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceIds: []string{resource}})
	if err != nil || len(targets.ScalableTargets) != 1 {
		t.Fatalf("DescribeScalableTargets = %+v, %v", targets, err)
	}
	tg := targets.ScalableTargets[0]
	if aws.ToInt32(tg.MinCapacity) != 1 || aws.ToInt32(tg.MaxCapacity) != 3 {
		t.Errorf("capacity = [%d, %d], want [1, 3] kept from the first registration", aws.ToInt32(tg.MinCapacity), aws.ToInt32(tg.MaxCapacity))
	}
	if s := tg.SuspendedState; s == nil || !aws.ToBool(s.DynamicScalingInSuspended) || !aws.ToBool(s.DynamicScalingOutSuspended) || aws.ToBool(s.ScheduledScalingSuspended) {
		t.Errorf("SuspendedState = %+v, want in and out suspended (merged), scheduled not", s)
	}

	// Policies: target tracking creates its alarm in CloudWatch; a step policy is triggered by our own alarm.
	tt, err := c.aas.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName: aws.String(name + "-scale-out"), ServiceNamespace: aastypes.ServiceNamespaceSagemaker,
		ResourceId: aws.String(resource), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount,
		PolicyType: aastypes.PolicyTypeTargetTrackingScaling,
		TargetTrackingScalingPolicyConfiguration: &aastypes.TargetTrackingScalingPolicyConfiguration{
			TargetValue:                   aws.Float64(4),
			PredefinedMetricSpecification: &aastypes.PredefinedMetricSpecification{PredefinedMetricType: "SageMakerVariantConcurrentRequestsPerModelHighResolution"},
			DisableScaleIn:                aws.Bool(true), ScaleOutCooldown: aws.Int32(30),
		},
	})
	if err != nil || len(tt.Alarms) != 1 {
		t.Fatalf("PutScalingPolicy (target tracking) = %+v, %v; want one alarm (scale-in disabled)", tt, err)
	}
	step, err := c.aas.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName: aws.String(name + "-scale-in"), ServiceNamespace: aastypes.ServiceNamespaceSagemaker,
		ResourceId: aws.String(resource), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount,
		PolicyType: aastypes.PolicyTypeStepScaling,
		StepScalingPolicyConfiguration: &aastypes.StepScalingPolicyConfiguration{
			AdjustmentType: aastypes.AdjustmentTypeChangeInCapacity, Cooldown: aws.Int32(300),
			MetricAggregationType: aastypes.MetricAggregationTypeMaximum,
			StepAdjustments:       []aastypes.StepAdjustment{{MetricIntervalUpperBound: aws.Float64(0), ScalingAdjustment: aws.Int32(-1)}},
		},
	})
	if err != nil {
		t.Fatalf("PutScalingPolicy (step): %v", err)
	}
	if _, err := c.cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
		AlarmName: aws.String(name + "-scale-in"), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ConcurrentRequestsPerModel"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(name)}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}},
		Statistic:  cwtypes.StatisticMaximum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(5), DatapointsToAlarm: aws.Int32(5),
		Threshold: aws.Float64(2.5), ComparisonOperator: cwtypes.ComparisonOperatorLessThanThreshold,
		TreatMissingData: aws.String("missing"), AlarmActions: []string{aws.ToString(step.PolicyARN)},
	}); err != nil {
		t.Fatalf("PutMetricAlarm: %v", err)
	}
	pols, err := c.aas.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource)})
	if err != nil || len(pols.ScalingPolicies) != 2 {
		t.Fatalf("DescribeScalingPolicies = %+v, %v", pols, err)
	}
	for _, p := range pols.ScalingPolicies {
		if len(p.Alarms) != 1 {
			t.Errorf("policy %s has alarms %+v, want exactly one", aws.ToString(p.PolicyName), p.Alarms)
		}
		if p.PolicyType == aastypes.PolicyTypeTargetTrackingScaling && aws.ToFloat64(p.TargetTrackingScalingPolicyConfiguration.TargetValue) != 4 {
			t.Errorf("target value = %v, want 4", p.TargetTrackingScalingPolicyConfiguration.TargetValue)
		}
	}
	alarms, err := c.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	if err != nil || len(alarms.MetricAlarms) != 2 {
		t.Fatalf("DescribeAlarms = %+v, %v; want the target tracking alarm and ours", alarms, err)
	}
	for _, a := range alarms.MetricAlarms {
		if a.StateValue != cwtypes.StateValueInsufficientData || a.AlarmArn == nil || a.StateUpdatedTimestamp == nil {
			t.Errorf("alarm %s = state %s, arn %v, updated %v; want a new alarm in INSUFFICIENT_DATA", aws.ToString(a.AlarmName), a.StateValue, a.AlarmArn, a.StateUpdatedTimestamp)
		}
	}

	// Metrics: nothing was published for a failed endpoint, and the SDK decodes the empty CBOR answers.
	now := time.Now()
	md, err := c.cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now),
		MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("c"), MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ConcurrentRequestsPerModel"),
				Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(name)}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}},
			Period: aws.Int32(10), Stat: aws.String("Maximum")}}},
	})
	if err != nil || len(md.MetricDataResults) != 1 || aws.ToString(md.MetricDataResults[0].Id) != "c" || len(md.MetricDataResults[0].Values) != 0 {
		t.Fatalf("GetMetricData = %+v, %v", md, err)
	}

	// Errors in the AWS shapes, typed where the SDK models them.
	if _, err := c.sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-nope")}); apiCode(err) != "ValidationException" {
		t.Errorf("DescribeEndpoint(unknown) error = %v, want ValidationException", err)
	}
	var notFound *aastypes.ObjectNotFoundException
	if _, err := c.aas.DeleteScalingPolicy(ctx, &applicationautoscaling.DeleteScalingPolicyInput{PolicyName: aws.String("nope"), ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount}); !errors.As(err, &notFound) {
		t.Errorf("DeleteScalingPolicy(unknown) error = %v, want ObjectNotFoundException", err)
	}
	var aasValidation *aastypes.ValidationException
	if _, err := c.aas.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String("endpoint/speech-nope/variant/AllTraffic"), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount, MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(2)}); !errors.As(err, &aasValidation) {
		t.Errorf("RegisterScalableTarget(unknown endpoint) error = %v, want ValidationException", err)
	}
	var cwNotFound *cwtypes.ResourceNotFound
	if _, err := c.cw.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"nope"}}); !errors.As(err, &cwNotFound) {
		t.Errorf("DeleteAlarms(unknown) error = %v, want ResourceNotFound", err)
	}
	var lgNotFound *lgtypes.ResourceNotFoundException
	if _, err := c.lg.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String("/aws/sagemaker/Endpoints/speech-nope")}); !errors.As(err, &lgNotFound) {
		t.Errorf("DescribeLogStreams(unknown group) error = %v, want ResourceNotFoundException", err)
	}
	var rtValidation *rttypes.ValidationError
	if _, err := c.rt.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String("speech-nope"), Body: []byte(`{"text":"hi"}`), ContentType: aws.String("application/json")}); !errors.As(err, &rtValidation) {
		t.Errorf("InvokeEndpoint(unknown endpoint) error = %v, want ValidationError", err)
	}
	if _, err := c.rt.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{EndpointName: aws.String("speech-nope"), Body: []byte(`{"text":"hi"}`), ContentType: aws.String("application/json")}); !errors.As(err, &rtValidation) {
		t.Errorf("InvokeEndpointWithResponseStream(unknown endpoint) error = %v, want ValidationError", err)
	}
	if _, err := c.cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("bad"), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations"), Statistic: cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: "Sideways"}); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("PutMetricAlarm(bad operator) error = %v, want InvalidParameterValue", err)
	}

	// Malformed JSON gets the awsJson error shape.
	req, _ := http.NewRequest(http.MethodPost, r.emu.URL()+"/", strings.NewReader("{not json"))
	req.Header.Set("X-Amz-Target", "SageMaker.DescribeEndpoint")
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("Authorization", sigV4Header(keyFor(r.emu.URL()).AccessKeyID, "sagemaker"))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	json.NewDecoder(resp.Body).Decode(&shape)
	resp.Body.Close()
	if resp.StatusCode != 400 || resp.Header.Get("X-Amzn-ErrorType") != "SerializationException" || shape.Type != "SerializationException" || shape.Message == "" {
		t.Errorf("malformed JSON: status %d, X-Amzn-ErrorType %q, body %+v; want 400 SerializationException", resp.StatusCode, resp.Header.Get("X-Amzn-ErrorType"), shape)
	}

	// One emulator per state directory; a clear error when the port is taken.
	if _, err := Open(Options{StateDir: dir, Addr: "127.0.0.1:0"}); !errors.Is(err, ErrLocked) {
		t.Errorf("second Open on the same state dir = %v, want ErrLocked", err)
	}
	taken := strings.TrimPrefix(r.emu.URL(), "http://")
	if _, err := Open(Options{StateDir: t.TempDir(), Addr: taken}); err == nil || !strings.Contains(err.Error(), "port is taken") {
		t.Errorf("Open on a taken port = %v, want an error saying the port is taken", err)
	}

	// Restart: the state comes back unchanged.
	r.stop()
	r2 := start(t, dir, "")
	c2 := newClients(r2.emu.URL())
	targets2, err := c2.aas.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	if err != nil || len(targets2.ScalableTargets) != 1 || !aws.ToBool(targets2.ScalableTargets[0].SuspendedState.DynamicScalingOutSuspended) {
		t.Fatalf("after restart DescribeScalableTargets = %+v, %v", targets2, err)
	}
	alarms2, err := c2.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	if err != nil || len(alarms2.MetricAlarms) != 2 {
		t.Fatalf("after restart DescribeAlarms = %+v, %v", alarms2, err)
	}

	// Deregistering removes the policies and the alarm target tracking created, but not ours.
	if _, err := c2.aas.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount}); err != nil {
		t.Fatalf("DeregisterScalableTarget: %v", err)
	}
	pols2, err := c2.aas.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	if err != nil || len(pols2.ScalingPolicies) != 0 {
		t.Errorf("policies after deregister = %+v, %v; want none", pols2, err)
	}
	alarms3, err := c2.cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	if err != nil || len(alarms3.MetricAlarms) != 1 || aws.ToString(alarms3.MetricAlarms[0].AlarmName) != name+"-scale-in" {
		t.Errorf("alarms after deregister = %+v, %v; want only %s-scale-in", alarms3, err, name)
	}
	for _, del := range []func() error{
		func() error {
			_, err := c2.cw.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{name + "-scale-in"}})
			return err
		},
		func() error {
			_, err := c2.sm.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)})
			return err
		},
		func() error {
			_, err := c2.sm.DeleteEndpointConfig(ctx, &sagemaker.DeleteEndpointConfigInput{EndpointConfigName: aws.String(name)})
			return err
		},
		func() error {
			_, err := c2.sm.DeleteModel(ctx, &sagemaker.DeleteModelInput{ModelName: aws.String(name)})
			return err
		},
	} {
		if err := del(); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if _, err := c2.sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)}); apiCode(err) != "ValidationException" {
		t.Errorf("DescribeEndpoint after delete error = %v, want ValidationException", err)
	}
}
