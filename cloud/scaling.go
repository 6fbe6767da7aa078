package cloud

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// ScalingAPI is the part of the Application Auto Scaling client that sets up and removes endpoint scaling.
type ScalingAPI interface {
	RegisterScalableTarget(ctx context.Context, in *applicationautoscaling.RegisterScalableTargetInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error)
	PutScalingPolicy(ctx context.Context, in *applicationautoscaling.PutScalingPolicyInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScalingPolicyOutput, error)
	DeregisterScalableTarget(ctx context.Context, in *applicationautoscaling.DeregisterScalableTargetInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeregisterScalableTargetOutput, error)
}

// AlarmAPI is the part of the CloudWatch client that creates and removes alarms.
type AlarmAPI interface {
	PutMetricAlarm(ctx context.Context, in *cloudwatch.PutMetricAlarmInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error)
	DeleteAlarms(ctx context.Context, in *cloudwatch.DeleteAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error)
}

// The names and periods the endpoint stack uses (stacks/scaling.go); the local deploy mirrors them.
const (
	TargetTrackingMetric     = "SageMakerVariantConcurrentRequestsPerModelHighResolution"
	ConcurrencyMetric        = "ConcurrentRequestsPerModel"
	AlarmPeriodS             = 60
	ScaleInEvaluationPeriods = 5
)

// ScalingSpec is the scaling of one endpoint variant, from a plan that passed the gate.
type ScalingSpec struct {
	// Endpoint and Variant name the scalable target.
	Endpoint, Variant string
	// Min and Max bound the fleet.
	Min, Max int32
	// TargetValue is the target tracking target on the high-resolution concurrency metric.
	TargetValue float64
	// ScaleInThreshold is the concurrency below which the scale-in alarm removes one instance.
	ScaleInThreshold float64
	// ScaleOutCooldownS and ScaleInCooldownS are the cooldowns of the two policies.
	ScaleOutCooldownS, ScaleInCooldownS int32
}

// ResourceID is the Application Auto Scaling resource id of an endpoint variant.
func ResourceID(endpoint, variant string) string {
	return fmt.Sprintf("endpoint/%s/variant/%s", endpoint, variant)
}

// ScaleOutPolicyName, ScaleInPolicyName and ScaleInAlarmName are the names the endpoint stack gives them.
func ScaleOutPolicyName(endpoint string) string { return endpoint + "-scale-out" }

// ScaleInPolicyName is the name of the step scale-in policy.
func ScaleInPolicyName(endpoint string) string { return endpoint + "-scale-in" }

// ScaleInAlarmName is the name of the alarm that triggers the scale-in policy.
func ScaleInAlarmName(endpoint string) string { return endpoint + "-scale-in" }

// ApplyScaling creates what the endpoint stack creates from a plan: the scalable target; target tracking on
// the high-resolution concurrency metric with scale-in disabled and the scale-out cooldown; a step policy that
// removes one instance, with the scale-in cooldown, triggered by an alarm on ConcurrentRequestsPerModel below
// the scale-in threshold.
func ApplyScaling(ctx context.Context, aas ScalingAPI, cw AlarmAPI, s ScalingSpec) error {
	rid := aws.String(ResourceID(s.Endpoint, s.Variant))
	dim := aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount
	ns := aastypes.ServiceNamespaceSagemaker
	if _, err := aas.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: ns, ResourceId: rid, ScalableDimension: dim, MinCapacity: aws.Int32(s.Min), MaxCapacity: aws.Int32(s.Max),
	}); err != nil {
		return fmt.Errorf("register scalable target %s: %w", *rid, err)
	}
	if _, err := aas.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName: aws.String(ScaleOutPolicyName(s.Endpoint)), ServiceNamespace: ns, ResourceId: rid, ScalableDimension: dim,
		PolicyType: aastypes.PolicyTypeTargetTrackingScaling,
		TargetTrackingScalingPolicyConfiguration: &aastypes.TargetTrackingScalingPolicyConfiguration{
			TargetValue:                   aws.Float64(s.TargetValue),
			PredefinedMetricSpecification: &aastypes.PredefinedMetricSpecification{PredefinedMetricType: TargetTrackingMetric},
			DisableScaleIn:                aws.Bool(true),
			ScaleOutCooldown:              aws.Int32(s.ScaleOutCooldownS),
		},
	}); err != nil {
		return fmt.Errorf("put scale-out policy: %w", err)
	}
	in, err := aas.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName: aws.String(ScaleInPolicyName(s.Endpoint)), ServiceNamespace: ns, ResourceId: rid, ScalableDimension: dim,
		PolicyType: aastypes.PolicyTypeStepScaling,
		StepScalingPolicyConfiguration: &aastypes.StepScalingPolicyConfiguration{
			AdjustmentType: aastypes.AdjustmentTypeChangeInCapacity, Cooldown: aws.Int32(s.ScaleInCooldownS),
			MetricAggregationType: aastypes.MetricAggregationTypeMaximum,
			StepAdjustments:       []aastypes.StepAdjustment{{MetricIntervalUpperBound: aws.Float64(0), ScalingAdjustment: aws.Int32(-1)}},
		},
	})
	if err != nil {
		return fmt.Errorf("put scale-in policy: %w", err)
	}
	if _, err := cw.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
		AlarmName:        aws.String(ScaleInAlarmName(s.Endpoint)),
		AlarmDescription: aws.String(fmt.Sprintf("Per-instance concurrency below C_scale_min (%g) for %d minutes: remove one instance", s.ScaleInThreshold, ScaleInEvaluationPeriods)),
		Namespace:        aws.String("AWS/SageMaker"), MetricName: aws.String(ConcurrencyMetric),
		Dimensions: []cwtypes.Dimension{
			{Name: aws.String("EndpointName"), Value: aws.String(s.Endpoint)},
			{Name: aws.String("VariantName"), Value: aws.String(s.Variant)},
		},
		Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(AlarmPeriodS),
		EvaluationPeriods: aws.Int32(ScaleInEvaluationPeriods), DatapointsToAlarm: aws.Int32(ScaleInEvaluationPeriods),
		Threshold: aws.Float64(s.ScaleInThreshold), ComparisonOperator: cwtypes.ComparisonOperatorLessThanThreshold,
		TreatMissingData: aws.String("missing"), AlarmActions: []string{aws.ToString(in.PolicyARN)},
	}); err != nil {
		return fmt.Errorf("put scale-in alarm: %w", err)
	}
	return nil
}

// RemoveScaling deregisters the endpoint variant's scalable target (which deletes its policies) and deletes
// the scale-in alarm; what does not exist is skipped.
func RemoveScaling(ctx context.Context, aas ScalingAPI, cw AlarmAPI, endpoint, variant string) error {
	_, err := aas.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{
		ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(ResourceID(endpoint, variant)),
		ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount,
	})
	var nf *aastypes.ObjectNotFoundException
	if err != nil && !errors.As(err, &nf) {
		return fmt.Errorf("deregister scalable target: %w", err)
	}
	_, err = cw.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{ScaleInAlarmName(endpoint)}})
	var rnf *cwtypes.ResourceNotFound
	if err != nil && !errors.As(err, &rnf) {
		return fmt.Errorf("delete scale-in alarm: %w", err)
	}
	return nil
}
