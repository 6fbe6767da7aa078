package emulator_test

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

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

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
	r := emulatortest.Start(t, emulatortest.StateDir(dir))
	c := r.Clients
	ctx := ctxFor(t, 60*time.Second)
	const name = "speech-cp"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1))

	d, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeEndpoint: %v", err)
	}
	if d.EndpointStatus != smtypes.EndpointStatusCreating && d.EndpointStatus != smtypes.EndpointStatusFailed {
		t.Fatalf("new endpoint status = %s, want Creating (or already Failed)", d.EndpointStatus)
	}
	eventually(t, hangBound, "endpoint Failed", func() bool {
		d, err = c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		return err == nil && d.EndpointStatus == smtypes.EndpointStatusFailed
	})
	if !strings.Contains(aws.ToString(d.FailureReason), "container binary") {
		t.Errorf("FailureReason = %q, want it to name the missing container binary", aws.ToString(d.FailureReason))
	}
	m, err := c.SageMaker.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(name)})
	if err != nil || m.PrimaryContainer.Environment["ENGINE"] != "espeak" || m.CreationTime == nil {
		t.Fatalf("DescribeModel = %+v, %v", m, err)
	}
	ec, err := c.SageMaker.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String(name)})
	if err != nil || len(ec.ProductionVariants) != 1 || aws.ToInt32(ec.ProductionVariants[0].InitialInstanceCount) != 1 || ec.ProductionVariants[0].InstanceType != "local" {
		t.Fatalf("DescribeEndpointConfig = %+v, %v", ec, err)
	}
	list, err := c.SageMaker.ListEndpoints(ctx, &sagemaker.ListEndpointsInput{NameContains: aws.String("cp")})
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
		if _, err := c.AutoScaling.RegisterScalableTarget(ctx, in); err != nil {
			t.Fatalf("RegisterScalableTarget: %v", err)
		}
	}
	reg(&applicationautoscaling.RegisterScalableTargetInput{MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(3)})
	reg(&applicationautoscaling.RegisterScalableTargetInput{SuspendedState: &aastypes.SuspendedState{DynamicScalingInSuspended: aws.Bool(true)}})
	reg(&applicationautoscaling.RegisterScalableTargetInput{SuspendedState: &aastypes.SuspendedState{DynamicScalingOutSuspended: aws.Bool(true)}})
	targets, err := c.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceIds: []string{resource}})
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
	tt, err := c.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
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
	step, err := c.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
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
	if _, err := c.CloudWatch.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
		AlarmName: aws.String(name + "-scale-in"), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ConcurrentRequestsPerModel"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(name)}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}},
		Statistic:  cwtypes.StatisticMaximum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(5), DatapointsToAlarm: aws.Int32(5),
		Threshold: aws.Float64(2.5), ComparisonOperator: cwtypes.ComparisonOperatorLessThanThreshold,
		TreatMissingData: aws.String("missing"), AlarmActions: []string{aws.ToString(step.PolicyARN)},
	}); err != nil {
		t.Fatalf("PutMetricAlarm: %v", err)
	}
	pols, err := c.AutoScaling.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource)})
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
	alarms, err := c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
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
	md, err := c.CloudWatch.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
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
	if _, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-nope")}); apiCode(err) != "ValidationException" {
		t.Errorf("DescribeEndpoint(unknown) error = %v, want ValidationException", err)
	}
	var notFound *aastypes.ObjectNotFoundException
	if _, err := c.AutoScaling.DeleteScalingPolicy(ctx, &applicationautoscaling.DeleteScalingPolicyInput{PolicyName: aws.String("nope"), ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount}); !errors.As(err, &notFound) {
		t.Errorf("DeleteScalingPolicy(unknown) error = %v, want ObjectNotFoundException", err)
	}
	var aasValidation *aastypes.ValidationException
	if _, err := c.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String("endpoint/speech-nope/variant/AllTraffic"), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount, MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(2)}); !errors.As(err, &aasValidation) {
		t.Errorf("RegisterScalableTarget(unknown endpoint) error = %v, want ValidationException", err)
	}
	// DeleteAlarms: "If you specify any incorrect alarm names, the alarms you specify with correct names are
	// still deleted." An unknown name is no error (conformance_cloudwatch_test.go checks the deletion).
	if _, err := c.CloudWatch.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"nope"}}); err != nil {
		t.Errorf("DeleteAlarms(unknown) error = %v, want none", err)
	}
	var lgNotFound *lgtypes.ResourceNotFoundException
	if _, err := c.Logs.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String("/aws/sagemaker/Endpoints/speech-nope")}); !errors.As(err, &lgNotFound) {
		t.Errorf("DescribeLogStreams(unknown group) error = %v, want ResourceNotFoundException", err)
	}
	var rtValidation *rttypes.ValidationError
	if _, err := c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String("speech-nope"), Body: []byte(`{"text":"hi"}`), ContentType: aws.String("application/json")}); !errors.As(err, &rtValidation) {
		t.Errorf("InvokeEndpoint(unknown endpoint) error = %v, want ValidationError", err)
	}
	if _, err := c.Runtime.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{EndpointName: aws.String("speech-nope"), Body: []byte(`{"text":"hi"}`), ContentType: aws.String("application/json")}); !errors.As(err, &rtValidation) {
		t.Errorf("InvokeEndpointWithResponseStream(unknown endpoint) error = %v, want ValidationError", err)
	}
	if _, err := c.CloudWatch.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("bad"), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations"), Statistic: cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: "Sideways"}); apiCode(err) != "ValidationError" {
		// A value outside botocore's ComparisonOperator enum: CloudWatch's "1 validation error detected" ValidationError.
		t.Errorf("PutMetricAlarm(bad operator) error = %v, want ValidationError", err)
	}

	// Malformed JSON gets the awsJson error shape.
	req, _ := http.NewRequest(http.MethodPost, r.URL+"/", strings.NewReader("{not json"))
	req.Header.Set("X-Amz-Target", "SageMaker.DescribeEndpoint")
	req.Header.Set("Content-Type", "application/x-amz-json-1.1")
	req.Header.Set("Authorization", sigV4Header(r.Key.AccessKeyID, "sagemaker"))
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
	if _, err := emulator.Open(emulator.Options{StateDir: dir, Addr: "127.0.0.1:0"}); !errors.Is(err, emulator.ErrLocked) {
		t.Errorf("second emulator.Open on the same state dir = %v, want ErrLocked", err)
	}
	taken := strings.TrimPrefix(r.URL, "http://")
	if _, err := emulator.Open(emulator.Options{StateDir: t.TempDir(), Addr: taken}); err == nil || !strings.Contains(err.Error(), "port is taken") {
		t.Errorf("Open on a taken port = %v, want an error saying the port is taken", err)
	}

	// Restart: the state comes back unchanged.
	r.Stop()
	r2 := emulatortest.Start(t, emulatortest.StateDir(dir))
	c2 := r2.Clients
	targets2, err := c2.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	if err != nil || len(targets2.ScalableTargets) != 1 || !aws.ToBool(targets2.ScalableTargets[0].SuspendedState.DynamicScalingOutSuspended) {
		t.Fatalf("after restart DescribeScalableTargets = %+v, %v", targets2, err)
	}
	alarms2, err := c2.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	if err != nil || len(alarms2.MetricAlarms) != 2 {
		t.Fatalf("after restart DescribeAlarms = %+v, %v", alarms2, err)
	}

	// Deregistering removes the policies and the alarm target tracking created, but not ours.
	if _, err := c2.AutoScaling.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount}); err != nil {
		t.Fatalf("DeregisterScalableTarget: %v", err)
	}
	pols2, err := c2.AutoScaling.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker})
	if err != nil || len(pols2.ScalingPolicies) != 0 {
		t.Errorf("policies after deregister = %+v, %v; want none", pols2, err)
	}
	alarms3, err := c2.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	if err != nil || len(alarms3.MetricAlarms) != 1 || aws.ToString(alarms3.MetricAlarms[0].AlarmName) != name+"-scale-in" {
		t.Errorf("alarms after deregister = %+v, %v; want only %s-scale-in", alarms3, err, name)
	}
	for _, del := range []func() error{
		func() error {
			_, err := c2.CloudWatch.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{name + "-scale-in"}})
			return err
		},
		func() error {
			_, err := c2.SageMaker.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)})
			return err
		},
		func() error {
			_, err := c2.SageMaker.DeleteEndpointConfig(ctx, &sagemaker.DeleteEndpointConfigInput{EndpointConfigName: aws.String(name)})
			return err
		},
		func() error {
			_, err := c2.SageMaker.DeleteModel(ctx, &sagemaker.DeleteModelInput{ModelName: aws.String(name)})
			return err
		},
	} {
		if err := del(); err != nil {
			t.Fatalf("delete: %v", err)
		}
	}
	if _, err := c2.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)}); apiCode(err) != "ValidationException" {
		t.Errorf("DescribeEndpoint after delete error = %v, want ValidationException", err)
	}
}
