// Package cloudtest has hand-written test doubles for the interfaces package cloud declares, in the style
// of copilot-cli's cloudformationtest.Double: one function field per method, set by each test to what that
// test needs. A method whose field is nil fails the call with an error wrapping ErrUnexpectedCall (never a
// panic), so an unexpected call surfaces as the error of the operation under test.
package cloudtest

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/cloud"
)

// ErrUnexpectedCall is wrapped by the error of a double's method whose function field is nil.
var ErrUnexpectedCall = fmt.Errorf("cloudtest: unexpected call")

func unexpected(method string) error {
	return fmt.Errorf("%w to %s: set its function field", ErrUnexpectedCall, method)
}

// SageMaker is a double of the SageMaker client: cloud.EndpointAPI.
type SageMaker struct {
	// CreateModelFn answers CreateModel.
	CreateModelFn func(ctx context.Context, in *sagemaker.CreateModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error)
	// DescribeModelFn answers DescribeModel.
	DescribeModelFn func(ctx context.Context, in *sagemaker.DescribeModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error)
	// CreateEndpointConfigFn answers CreateEndpointConfig.
	CreateEndpointConfigFn func(ctx context.Context, in *sagemaker.CreateEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error)
	// DescribeEndpointConfigFn answers DescribeEndpointConfig.
	DescribeEndpointConfigFn func(ctx context.Context, in *sagemaker.DescribeEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error)
	// CreateEndpointFn answers CreateEndpoint.
	CreateEndpointFn func(ctx context.Context, in *sagemaker.CreateEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error)
	// UpdateEndpointFn answers UpdateEndpoint.
	UpdateEndpointFn func(ctx context.Context, in *sagemaker.UpdateEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointOutput, error)
	// DescribeEndpointFn answers DescribeEndpoint.
	DescribeEndpointFn func(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
	// DeleteEndpointFn answers DeleteEndpoint.
	DeleteEndpointFn func(ctx context.Context, in *sagemaker.DeleteEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointOutput, error)
	// DeleteEndpointConfigFn answers DeleteEndpointConfig.
	DeleteEndpointConfigFn func(ctx context.Context, in *sagemaker.DeleteEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error)
	// DeleteModelFn answers DeleteModel.
	DeleteModelFn func(ctx context.Context, in *sagemaker.DeleteModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteModelOutput, error)
	// ListEndpointsFn answers ListEndpoints (ListEndpoints is in preflight.go).
	ListEndpointsFn func(ctx context.Context, in *sagemaker.ListEndpointsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.ListEndpointsOutput, error)
	// UpdateEndpointWeightsAndCapacitiesFn answers UpdateEndpointWeightsAndCapacities.
	UpdateEndpointWeightsAndCapacitiesFn func(ctx context.Context, in *sagemaker.UpdateEndpointWeightsAndCapacitiesInput, optFns ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointWeightsAndCapacitiesOutput, error)
	// ListTagsFn answers ListTags.
	ListTagsFn func(ctx context.Context, in *sagemaker.ListTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error)
	// AddTagsFn answers AddTags.
	AddTagsFn func(ctx context.Context, in *sagemaker.AddTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error)
	// DeleteTagsFn answers DeleteTags.
	DeleteTagsFn func(ctx context.Context, in *sagemaker.DeleteTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error)
}

// ListTags calls ListTagsFn.
func (d *SageMaker) ListTags(ctx context.Context, in *sagemaker.ListTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error) {
	if d.ListTagsFn == nil {
		return nil, unexpected("SageMaker.ListTags")
	}
	return d.ListTagsFn(ctx, in, optFns...)
}

// AddTags calls AddTagsFn.
func (d *SageMaker) AddTags(ctx context.Context, in *sagemaker.AddTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.AddTagsOutput, error) {
	if d.AddTagsFn == nil {
		return nil, unexpected("SageMaker.AddTags")
	}
	return d.AddTagsFn(ctx, in, optFns...)
}

// DeleteTags calls DeleteTagsFn.
func (d *SageMaker) DeleteTags(ctx context.Context, in *sagemaker.DeleteTagsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteTagsOutput, error) {
	if d.DeleteTagsFn == nil {
		return nil, unexpected("SageMaker.DeleteTags")
	}
	return d.DeleteTagsFn(ctx, in, optFns...)
}

var (
	_ cloud.EndpointAPI       = (*SageMaker)(nil)
	_ cloud.FreezeEndpointAPI = (*SageMaker)(nil)
	_ cloud.MarkerAPI         = (*SageMaker)(nil)
)

// UpdateEndpointWeightsAndCapacities calls UpdateEndpointWeightsAndCapacitiesFn.
func (d *SageMaker) UpdateEndpointWeightsAndCapacities(ctx context.Context, in *sagemaker.UpdateEndpointWeightsAndCapacitiesInput, optFns ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointWeightsAndCapacitiesOutput, error) {
	if d.UpdateEndpointWeightsAndCapacitiesFn == nil {
		return nil, unexpected("SageMaker.UpdateEndpointWeightsAndCapacities")
	}
	return d.UpdateEndpointWeightsAndCapacitiesFn(ctx, in, optFns...)
}

// CreateModel calls CreateModelFn.
func (d *SageMaker) CreateModel(ctx context.Context, in *sagemaker.CreateModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error) {
	if d.CreateModelFn == nil {
		return nil, unexpected("SageMaker.CreateModel")
	}
	return d.CreateModelFn(ctx, in, optFns...)
}

// DescribeModel calls DescribeModelFn.
func (d *SageMaker) DescribeModel(ctx context.Context, in *sagemaker.DescribeModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error) {
	if d.DescribeModelFn == nil {
		return nil, unexpected("SageMaker.DescribeModel")
	}
	return d.DescribeModelFn(ctx, in, optFns...)
}

// CreateEndpointConfig calls CreateEndpointConfigFn.
func (d *SageMaker) CreateEndpointConfig(ctx context.Context, in *sagemaker.CreateEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error) {
	if d.CreateEndpointConfigFn == nil {
		return nil, unexpected("SageMaker.CreateEndpointConfig")
	}
	return d.CreateEndpointConfigFn(ctx, in, optFns...)
}

// DescribeEndpointConfig calls DescribeEndpointConfigFn.
func (d *SageMaker) DescribeEndpointConfig(ctx context.Context, in *sagemaker.DescribeEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error) {
	if d.DescribeEndpointConfigFn == nil {
		return nil, unexpected("SageMaker.DescribeEndpointConfig")
	}
	return d.DescribeEndpointConfigFn(ctx, in, optFns...)
}

// CreateEndpoint calls CreateEndpointFn.
func (d *SageMaker) CreateEndpoint(ctx context.Context, in *sagemaker.CreateEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error) {
	if d.CreateEndpointFn == nil {
		return nil, unexpected("SageMaker.CreateEndpoint")
	}
	return d.CreateEndpointFn(ctx, in, optFns...)
}

// UpdateEndpoint calls UpdateEndpointFn.
func (d *SageMaker) UpdateEndpoint(ctx context.Context, in *sagemaker.UpdateEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointOutput, error) {
	if d.UpdateEndpointFn == nil {
		return nil, unexpected("SageMaker.UpdateEndpoint")
	}
	return d.UpdateEndpointFn(ctx, in, optFns...)
}

// DescribeEndpoint calls DescribeEndpointFn.
func (d *SageMaker) DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
	if d.DescribeEndpointFn == nil {
		return nil, unexpected("SageMaker.DescribeEndpoint")
	}
	return d.DescribeEndpointFn(ctx, in, optFns...)
}

// DeleteEndpoint calls DeleteEndpointFn.
func (d *SageMaker) DeleteEndpoint(ctx context.Context, in *sagemaker.DeleteEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointOutput, error) {
	if d.DeleteEndpointFn == nil {
		return nil, unexpected("SageMaker.DeleteEndpoint")
	}
	return d.DeleteEndpointFn(ctx, in, optFns...)
}

// DeleteEndpointConfig calls DeleteEndpointConfigFn.
func (d *SageMaker) DeleteEndpointConfig(ctx context.Context, in *sagemaker.DeleteEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error) {
	if d.DeleteEndpointConfigFn == nil {
		return nil, unexpected("SageMaker.DeleteEndpointConfig")
	}
	return d.DeleteEndpointConfigFn(ctx, in, optFns...)
}

// DeleteModel calls DeleteModelFn.
func (d *SageMaker) DeleteModel(ctx context.Context, in *sagemaker.DeleteModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteModelOutput, error) {
	if d.DeleteModelFn == nil {
		return nil, unexpected("SageMaker.DeleteModel")
	}
	return d.DeleteModelFn(ctx, in, optFns...)
}

// AutoScaling is a double of the Application Auto Scaling client: cloud.ScalingClient (cloud.ScalingAPI and cloud.ScalingReadAPI).
type AutoScaling struct {
	// RegisterScalableTargetFn answers RegisterScalableTarget.
	RegisterScalableTargetFn func(ctx context.Context, in *applicationautoscaling.RegisterScalableTargetInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error)
	// PutScalingPolicyFn answers PutScalingPolicy.
	PutScalingPolicyFn func(ctx context.Context, in *applicationautoscaling.PutScalingPolicyInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScalingPolicyOutput, error)
	// DeregisterScalableTargetFn answers DeregisterScalableTarget.
	DeregisterScalableTargetFn func(ctx context.Context, in *applicationautoscaling.DeregisterScalableTargetInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeregisterScalableTargetOutput, error)
	// DescribeScalableTargetsFn answers DescribeScalableTargets.
	DescribeScalableTargetsFn func(ctx context.Context, in *applicationautoscaling.DescribeScalableTargetsInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error)
	// DescribeScalingPoliciesFn answers DescribeScalingPolicies.
	DescribeScalingPoliciesFn func(ctx context.Context, in *applicationautoscaling.DescribeScalingPoliciesInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalingPoliciesOutput, error)
}

var _ cloud.ScalingClient = (*AutoScaling)(nil)

// RegisterScalableTarget calls RegisterScalableTargetFn.
func (d *AutoScaling) RegisterScalableTarget(ctx context.Context, in *applicationautoscaling.RegisterScalableTargetInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error) {
	if d.RegisterScalableTargetFn == nil {
		return nil, unexpected("AutoScaling.RegisterScalableTarget")
	}
	return d.RegisterScalableTargetFn(ctx, in, optFns...)
}

// PutScalingPolicy calls PutScalingPolicyFn.
func (d *AutoScaling) PutScalingPolicy(ctx context.Context, in *applicationautoscaling.PutScalingPolicyInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.PutScalingPolicyOutput, error) {
	if d.PutScalingPolicyFn == nil {
		return nil, unexpected("AutoScaling.PutScalingPolicy")
	}
	return d.PutScalingPolicyFn(ctx, in, optFns...)
}

// DeregisterScalableTarget calls DeregisterScalableTargetFn.
func (d *AutoScaling) DeregisterScalableTarget(ctx context.Context, in *applicationautoscaling.DeregisterScalableTargetInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DeregisterScalableTargetOutput, error) {
	if d.DeregisterScalableTargetFn == nil {
		return nil, unexpected("AutoScaling.DeregisterScalableTarget")
	}
	return d.DeregisterScalableTargetFn(ctx, in, optFns...)
}

// DescribeScalableTargets calls DescribeScalableTargetsFn.
func (d *AutoScaling) DescribeScalableTargets(ctx context.Context, in *applicationautoscaling.DescribeScalableTargetsInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error) {
	if d.DescribeScalableTargetsFn == nil {
		return nil, unexpected("AutoScaling.DescribeScalableTargets")
	}
	return d.DescribeScalableTargetsFn(ctx, in, optFns...)
}

// DescribeScalingPolicies calls DescribeScalingPoliciesFn.
func (d *AutoScaling) DescribeScalingPolicies(ctx context.Context, in *applicationautoscaling.DescribeScalingPoliciesInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalingPoliciesOutput, error) {
	if d.DescribeScalingPoliciesFn == nil {
		return nil, unexpected("AutoScaling.DescribeScalingPolicies")
	}
	return d.DescribeScalingPoliciesFn(ctx, in, optFns...)
}

// CloudWatch is a double of the CloudWatch client: cloud.AlarmClient (cloud.AlarmAPI and cloud.AlarmReadAPI).
type CloudWatch struct {
	// PutMetricAlarmFn answers PutMetricAlarm.
	PutMetricAlarmFn func(ctx context.Context, in *cloudwatch.PutMetricAlarmInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error)
	// DeleteAlarmsFn answers DeleteAlarms.
	DeleteAlarmsFn func(ctx context.Context, in *cloudwatch.DeleteAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error)
	// DescribeAlarmsFn answers DescribeAlarms.
	DescribeAlarmsFn func(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
	// GetMetricDataFn answers GetMetricData.
	GetMetricDataFn func(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

var _ cloud.AlarmClient = (*CloudWatch)(nil)

// GetMetricData calls GetMetricDataFn.
func (d *CloudWatch) GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	if d.GetMetricDataFn == nil {
		return nil, unexpected("CloudWatch.GetMetricData")
	}
	return d.GetMetricDataFn(ctx, in, optFns...)
}

// PutMetricAlarm calls PutMetricAlarmFn.
func (d *CloudWatch) PutMetricAlarm(ctx context.Context, in *cloudwatch.PutMetricAlarmInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.PutMetricAlarmOutput, error) {
	if d.PutMetricAlarmFn == nil {
		return nil, unexpected("CloudWatch.PutMetricAlarm")
	}
	return d.PutMetricAlarmFn(ctx, in, optFns...)
}

// DeleteAlarms calls DeleteAlarmsFn.
func (d *CloudWatch) DeleteAlarms(ctx context.Context, in *cloudwatch.DeleteAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error) {
	if d.DeleteAlarmsFn == nil {
		return nil, unexpected("CloudWatch.DeleteAlarms")
	}
	return d.DeleteAlarmsFn(ctx, in, optFns...)
}

// DescribeAlarms calls DescribeAlarmsFn.
func (d *CloudWatch) DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
	if d.DescribeAlarmsFn == nil {
		return nil, unexpected("CloudWatch.DescribeAlarms")
	}
	return d.DescribeAlarmsFn(ctx, in, optFns...)
}
