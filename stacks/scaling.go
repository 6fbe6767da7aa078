package stacks

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// ConcurrencyMetric is the per-instance concurrency metric SageMaker publishes (in flight including queued).
const ConcurrencyMetric = "ConcurrentRequestsPerModel"

// TargetTrackingMetric is the predefined high-resolution metric the scale-out policy tracks.
const TargetTrackingMetric = "SageMakerVariantConcurrentRequestsPerModelHighResolution"

// AlarmPeriodS is the period of the scale-in and fleet alarms, in seconds.
const AlarmPeriodS = 60

// ScaleInEvaluationPeriods is how many consecutive periods concurrency must stay below C_scale_min before one
// instance is removed.
const ScaleInEvaluationPeriods = 5

// ScalingPlan is what the endpoint stack needs from a plan that passed the gate. Values in CloudWatch units:
// thresholds are already multiplied by the measured CloudWatch/client concurrency ratio.
type ScalingPlan struct {
	// MinInstances and MaxInstances bound the fleet.
	MinInstances, MaxInstances int
	// TargetConcurrency is the target-tracking target: C_scale_max × ratio.
	TargetConcurrency float64
	// ScaleInConcurrency is the scale-in alarm threshold: C_scale_min × ratio.
	ScaleInConcurrency float64
	// ScaleOutCooldownS and ScaleInCooldownS are the plan's cooldowns.
	ScaleOutCooldownS, ScaleInCooldownS float64
	// TPlanS is T_total plus the detection buffer: how long a scale-out takes to relieve the fleet.
	TPlanS float64
	// QueueMaxDepth is the container's shield depth once the plan is deployed.
	QueueMaxDepth int
	// SLOMs and SLOPercentile are the latency objective.
	SLOMs, SLOPercentile int
	// PlanDigest identifies the plan the constructs came from.
	PlanDigest string
}

// scalingPlanFrom takes what the stack needs from a plan that passed the gate.
func scalingPlanFrom(p *capacity.Plan, digest string) *ScalingPlan {
	d := p.Derived
	return &ScalingPlan{
		MinInstances:       d.MinInstances,
		MaxInstances:       d.MaxInstances,
		TargetConcurrency:  d.TargetValue,
		ScaleInConcurrency: d.ScaleInThreshold,
		ScaleOutCooldownS:  float64(d.ScaleOutCooldownS),
		ScaleInCooldownS:   float64(d.ScaleInCooldownS),
		TPlanS:             d.TPlanS,
		QueueMaxDepth:      d.QueueMaxDepth,
		SLOMs:              p.Fingerprint.SLOTTFABMs,
		SLOPercentile:      p.Fingerprint.SLOPercentile,
		PlanDigest:         digest,
	}
}

// scalingResources are the constructs created from a plan.
type scalingResources struct {
	target       awsapplicationautoscaling.CfnScalableTarget
	scaleOut     awsapplicationautoscaling.CfnScalingPolicy
	scaleIn      awsapplicationautoscaling.CfnScalingPolicy
	scaleInAlarm awscloudwatch.CfnAlarm
}

// addScaling creates the scalable target, the two policies, the alarms and the dashboard for an endpoint.
func addScaling(stack awscdk.Stack, m models.Model, endpoint awscdkEndpoint, p ScalingPlan) scalingResources {
	endpointName := m.EndpointName()
	resourceID := fmt.Sprintf("endpoint/%s/variant/%s", endpointName, models.VariantName)
	target := awsapplicationautoscaling.NewCfnScalableTarget(stack, jsii.String("ScalableTarget"), &awsapplicationautoscaling.CfnScalableTargetProps{
		ServiceNamespace:  jsii.String("sagemaker"),
		ScalableDimension: jsii.String("sagemaker:variant:DesiredInstanceCount"),
		ResourceId:        jsii.String(resourceID),
		MinCapacity:       jsii.Number(float64(p.MinInstances)),
		MaxCapacity:       jsii.Number(float64(p.MaxInstances)),
	})
	target.AddDependency(endpoint)

	// Scale out by target tracking on the high-resolution concurrency metric. Scale-in is disabled here: target
	// tracking would remove instances as soon as concurrency dips below the target, which after a removal puts
	// the survivors right back at C_scale_max. The step policy below scales in only below C_scale_min.
	scaleOut := awsapplicationautoscaling.NewCfnScalingPolicy(stack, jsii.String("ScaleOutPolicy"), &awsapplicationautoscaling.CfnScalingPolicyProps{
		PolicyName:      jsii.String(endpointName + "-scale-out"),
		PolicyType:      jsii.String("TargetTrackingScaling"),
		ScalingTargetId: target.Ref(),
		TargetTrackingScalingPolicyConfiguration: &awsapplicationautoscaling.CfnScalingPolicy_TargetTrackingScalingPolicyConfigurationProperty{
			TargetValue: jsii.Number(round3(p.TargetConcurrency)),
			PredefinedMetricSpecification: &awsapplicationautoscaling.CfnScalingPolicy_PredefinedMetricSpecificationProperty{
				PredefinedMetricType: jsii.String(TargetTrackingMetric),
			},
			DisableScaleIn:   jsii.Bool(true),
			ScaleOutCooldown: jsii.Number(p.ScaleOutCooldownS),
		},
	})

	scaleIn := awsapplicationautoscaling.NewCfnScalingPolicy(stack, jsii.String("ScaleInPolicy"), &awsapplicationautoscaling.CfnScalingPolicyProps{
		PolicyName:      jsii.String(endpointName + "-scale-in"),
		PolicyType:      jsii.String("StepScaling"),
		ScalingTargetId: target.Ref(),
		StepScalingPolicyConfiguration: &awsapplicationautoscaling.CfnScalingPolicy_StepScalingPolicyConfigurationProperty{
			AdjustmentType:        jsii.String("ChangeInCapacity"),
			Cooldown:              jsii.Number(p.ScaleInCooldownS),
			MetricAggregationType: jsii.String("Maximum"),
			StepAdjustments: &[]interface{}{&awsapplicationautoscaling.CfnScalingPolicy_StepAdjustmentProperty{
				MetricIntervalUpperBound: jsii.Number(0),
				ScalingAdjustment:        jsii.Number(-1),
			}},
		},
	})

	dims := &[]interface{}{
		&awscloudwatch.CfnAlarm_DimensionProperty{Name: jsii.String("EndpointName"), Value: jsii.String(endpointName)},
		&awscloudwatch.CfnAlarm_DimensionProperty{Name: jsii.String("VariantName"), Value: jsii.String(models.VariantName)},
	}
	scaleInAlarm := awscloudwatch.NewCfnAlarm(stack, jsii.String("ScaleInAlarm"), &awscloudwatch.CfnAlarmProps{
		AlarmName:          jsii.String(endpointName + "-scale-in"),
		AlarmDescription:   jsii.String(fmt.Sprintf("Per-instance concurrency below C_scale_min (%g) for %d minutes: remove one instance (plan %s)", round3(p.ScaleInConcurrency), ScaleInEvaluationPeriods, p.PlanDigest)),
		Namespace:          jsii.String("AWS/SageMaker"),
		MetricName:         jsii.String(ConcurrencyMetric),
		Dimensions:         dims,
		Statistic:          jsii.String("Maximum"),
		Period:             jsii.Number(AlarmPeriodS),
		EvaluationPeriods:  jsii.Number(ScaleInEvaluationPeriods),
		DatapointsToAlarm:  jsii.Number(ScaleInEvaluationPeriods),
		Threshold:          jsii.Number(round3(p.ScaleInConcurrency)),
		ComparisonOperator: jsii.String("LessThanThreshold"),
		TreatMissingData:   jsii.String("missing"),
		AlarmActions:       &[]interface{}{scaleIn.Ref()},
	})

	awscloudwatch.NewCfnAlarm(stack, jsii.String("QueueSaturationAlarm"), &awscloudwatch.CfnAlarmProps{
		AlarmName:          jsii.String(endpointName + "-queue-saturated"),
		AlarmDescription:   jsii.String(fmt.Sprintf("The container's queue shield (depth %d) is rejecting requests with 503: the fleet is not keeping up", p.QueueMaxDepth)),
		Namespace:          jsii.String("AWS/SageMaker"),
		MetricName:         jsii.String("Invocation5XXErrors"),
		Dimensions:         dims,
		Statistic:          jsii.String("Sum"),
		Period:             jsii.Number(AlarmPeriodS),
		EvaluationPeriods:  jsii.Number(1),
		Threshold:          jsii.Number(0),
		ComparisonOperator: jsii.String("GreaterThanThreshold"),
		TreatMissingData:   jsii.String("notBreaching"),
	})

	// ModelLatency is reported in microseconds.
	awscloudwatch.NewCfnAlarm(stack, jsii.String("LatencyAlarm"), &awscloudwatch.CfnAlarmProps{
		AlarmName:          jsii.String(endpointName + "-latency-above-slo"),
		AlarmDescription:   jsii.String(fmt.Sprintf("p%d model latency above the %d ms SLO for 3 minutes", p.SLOPercentile, p.SLOMs)),
		Namespace:          jsii.String("AWS/SageMaker"),
		MetricName:         jsii.String("ModelLatency"),
		Dimensions:         dims,
		ExtendedStatistic:  jsii.String(fmt.Sprintf("p%d", p.SLOPercentile)),
		Period:             jsii.Number(AlarmPeriodS),
		EvaluationPeriods:  jsii.Number(3),
		Threshold:          jsii.Number(float64(p.SLOMs) * 1000),
		ComparisonOperator: jsii.String("GreaterThanThreshold"),
		TreatMissingData:   jsii.String("notBreaching"),
	})

	// SageMaker publishes no instance-count metric. A fleet that can still grow brings concurrency back under
	// the target within T_plan plus one scale-out cooldown; concurrency above the target for longer than that
	// means the fleet is stuck at its maximum (or scaling is suspended).
	stuckPeriods := int(math.Ceil((p.TPlanS+p.ScaleOutCooldownS)/AlarmPeriodS)) + 1
	awscloudwatch.NewCfnAlarm(stack, jsii.String("FleetAtMaximumAlarm"), &awscloudwatch.CfnAlarmProps{
		AlarmName:          jsii.String(endpointName + "-fleet-at-maximum"),
		AlarmDescription:   jsii.String(fmt.Sprintf("Concurrency above the scale-out target (%g) for %d minutes, longer than a scale-out takes (T_plan %gs): the fleet is at its maximum of %d or scaling is suspended", round3(p.TargetConcurrency), stuckPeriods, p.TPlanS, p.MaxInstances)),
		Namespace:          jsii.String("AWS/SageMaker"),
		MetricName:         jsii.String(ConcurrencyMetric),
		Dimensions:         dims,
		Statistic:          jsii.String("Average"),
		Period:             jsii.Number(AlarmPeriodS),
		EvaluationPeriods:  jsii.Number(float64(stuckPeriods)),
		Threshold:          jsii.Number(round3(p.TargetConcurrency)),
		ComparisonOperator: jsii.String("GreaterThanThreshold"),
		TreatMissingData:   jsii.String("notBreaching"),
	})

	awscloudwatch.NewCfnDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.CfnDashboardProps{
		DashboardName: jsii.String(endpointName),
		DashboardBody: awscdk.Fn_Sub(jsii.String(dashboardBody(endpointName, p)), nil),
	})

	return scalingResources{target: target, scaleOut: scaleOut, scaleIn: scaleIn, scaleInAlarm: scaleInAlarm}
}

// awscdkEndpoint is the dependency the scalable target waits for.
type awscdkEndpoint = awscdk.CfnResource

// dashboardBody renders the CloudWatch dashboard JSON; ${AWS::Region} is substituted by CloudFormation.
func dashboardBody(endpointName string, p ScalingPlan) string {
	metric := func(name, stat string) []any {
		return []any{"AWS/SageMaker", name, "EndpointName", endpointName, "VariantName", models.VariantName, map[string]any{"stat": stat}}
	}
	widget := func(x, y int, title string, metrics [][]any, annotations []map[string]any) map[string]any {
		props := map[string]any{"title": title, "region": "${AWS::Region}", "view": "timeSeries", "period": 60, "metrics": metrics}
		if len(annotations) > 0 {
			props["annotations"] = map[string]any{"horizontal": annotations}
		}
		return map[string]any{"type": "metric", "x": x, "y": y, "width": 12, "height": 6, "properties": props}
	}
	body := map[string]any{"widgets": []any{
		widget(0, 0, "Concurrent requests per instance", [][]any{metric(ConcurrencyMetric, "Maximum"), metric(ConcurrencyMetric, "Average")},
			[]map[string]any{{"label": "scale-out target", "value": round3(p.TargetConcurrency)}, {"label": "scale-in below", "value": round3(p.ScaleInConcurrency)}}),
		widget(12, 0, "Invocations", [][]any{metric("Invocations", "Sum")}, nil),
		widget(0, 6, fmt.Sprintf("Model latency p%d (µs)", p.SLOPercentile), [][]any{metric("ModelLatency", fmt.Sprintf("p%d", p.SLOPercentile))},
			[]map[string]any{{"label": "SLO", "value": float64(p.SLOMs) * 1000}}),
		widget(12, 6, "5XX errors (queue shield rejections)", [][]any{metric("Invocation5XXErrors", "Sum")}, nil),
	}}
	b, _ := json.Marshal(body)
	return string(b)
}

// round3 rounds to three decimals so thresholds read as the plan printed them.
func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
