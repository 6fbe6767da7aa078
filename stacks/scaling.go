package stacks

import (
	"encoding/json"
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapplicationautoscaling"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"github.com/speech-infra/speech-infra/capacity"
)

// addScaling renders a plan's scaling spec as CloudFormation: the scalable target, the target-tracking
// scale-out and step scale-in policies, the alarms (the scale-in alarm's action is the scale-in policy) and
// a dashboard. The target waits for the endpoint, which must exist before it can be registered.
func addScaling(stack awscdk.Stack, endpoint awscdk.CfnResource, s capacity.ScalingSpec) {
	target := awsapplicationautoscaling.NewCfnScalableTarget(stack, jsii.String("ScalableTarget"), &awsapplicationautoscaling.CfnScalableTargetProps{
		ServiceNamespace:  jsii.String(capacity.ServiceNamespace),
		ScalableDimension: jsii.String(capacity.ScalableDimension),
		ResourceId:        jsii.String(capacity.ResourceID(s.Endpoint, s.Variant)),
		MinCapacity:       jsii.Number(float64(s.MinInstances)),
		MaxCapacity:       jsii.Number(float64(s.MaxInstances)),
	})
	target.AddResourceDependency(endpoint, jsii.String("a scalable target can be registered only on an existing endpoint variant"))

	awsapplicationautoscaling.NewCfnScalingPolicy(stack, jsii.String("ScaleOutPolicy"), &awsapplicationautoscaling.CfnScalingPolicyProps{
		PolicyName:      jsii.String(s.ScaleOut.PolicyName),
		PolicyType:      jsii.String("TargetTrackingScaling"),
		ScalingTargetId: target.Ref(),
		TargetTrackingScalingPolicyConfiguration: &awsapplicationautoscaling.CfnScalingPolicy_TargetTrackingScalingPolicyConfigurationProperty{
			TargetValue: jsii.Number(s.ScaleOut.TargetValue),
			PredefinedMetricSpecification: &awsapplicationautoscaling.CfnScalingPolicy_PredefinedMetricSpecificationProperty{
				PredefinedMetricType: jsii.String(s.ScaleOut.PredefinedMetric),
			},
			DisableScaleIn:   jsii.Bool(true),
			ScaleOutCooldown: jsii.Number(float64(s.ScaleOut.ScaleOutCooldownS)),
		},
	})

	scaleIn := awsapplicationautoscaling.NewCfnScalingPolicy(stack, jsii.String("ScaleInPolicy"), &awsapplicationautoscaling.CfnScalingPolicyProps{
		PolicyName:      jsii.String(s.ScaleIn.PolicyName),
		PolicyType:      jsii.String("StepScaling"),
		ScalingTargetId: target.Ref(),
		StepScalingPolicyConfiguration: &awsapplicationautoscaling.CfnScalingPolicy_StepScalingPolicyConfigurationProperty{
			AdjustmentType:        jsii.String("ChangeInCapacity"),
			Cooldown:              jsii.Number(float64(s.ScaleIn.CooldownS)),
			MetricAggregationType: jsii.String("Maximum"),
			StepAdjustments: &[]interface{}{&awsapplicationautoscaling.CfnScalingPolicy_StepAdjustmentProperty{
				MetricIntervalUpperBound: jsii.Number(0),
				ScalingAdjustment:        jsii.Number(float64(s.ScaleIn.Adjustment)),
			}},
		},
	})

	dims := &[]interface{}{
		&awscloudwatch.CfnAlarm_DimensionProperty{Name: jsii.String("EndpointName"), Value: jsii.String(s.Endpoint)},
		&awscloudwatch.CfnAlarm_DimensionProperty{Name: jsii.String("VariantName"), Value: jsii.String(s.Variant)},
	}
	for _, a := range s.Alarms {
		props := &awscloudwatch.CfnAlarmProps{
			AlarmName:          jsii.String(a.Name),
			AlarmDescription:   jsii.String(a.Description),
			Namespace:          jsii.String(capacity.MetricNamespace),
			MetricName:         jsii.String(a.Metric),
			Dimensions:         dims,
			Period:             jsii.Number(float64(a.PeriodS)),
			EvaluationPeriods:  jsii.Number(float64(a.EvaluationPeriods)),
			DatapointsToAlarm:  jsii.Number(float64(a.DatapointsToAlarm)),
			Threshold:          jsii.Number(a.Threshold),
			ComparisonOperator: jsii.String(a.Comparison),
			TreatMissingData:   jsii.String(a.TreatMissingData),
		}
		if a.ExtendedStatistic != "" {
			props.ExtendedStatistic = jsii.String(a.ExtendedStatistic)
		} else {
			props.Statistic = jsii.String(a.Statistic)
		}
		if a.TriggersScaleIn {
			props.AlarmActions = &[]interface{}{scaleIn.Ref()}
		}
		awscloudwatch.NewCfnAlarm(stack, jsii.String(a.ID), props)
	}

	awscloudwatch.NewCfnDashboard(stack, jsii.String("Dashboard"), &awscloudwatch.CfnDashboardProps{
		DashboardName: jsii.String(s.Endpoint),
		DashboardBody: awscdk.Fn_Sub(jsii.String(dashboardBody(s)), nil),
	})
}

// dashboardBody renders the CloudWatch dashboard JSON; ${AWS::Region} is substituted by CloudFormation.
func dashboardBody(s capacity.ScalingSpec) string {
	metric := func(name, stat string) []any {
		return []any{capacity.MetricNamespace, name, "EndpointName", s.Endpoint, "VariantName", s.Variant, map[string]any{"stat": stat}}
	}
	widget := func(x, y int, title string, metrics [][]any, annotations []map[string]any) map[string]any {
		props := map[string]any{"title": title, "region": "${AWS::Region}", "view": "timeSeries", "period": 60, "metrics": metrics}
		if len(annotations) > 0 {
			props["annotations"] = map[string]any{"horizontal": annotations}
		}
		return map[string]any{"type": "metric", "x": x, "y": y, "width": 12, "height": 6, "properties": props}
	}
	var scaleIn float64
	for _, a := range s.Alarms {
		if a.TriggersScaleIn {
			scaleIn = a.Threshold
		}
	}
	pct := fmt.Sprintf("p%d", s.SLOPercentile)
	body := map[string]any{"widgets": []any{
		widget(0, 0, "Concurrent requests per instance", [][]any{metric(capacity.ConcurrencyMetric, "Maximum"), metric(capacity.ConcurrencyMetric, "Average")},
			[]map[string]any{{"label": "scale-out target", "value": s.ScaleOut.TargetValue}, {"label": "scale-in below", "value": scaleIn}}),
		widget(12, 0, "Invocations", [][]any{metric("Invocations", "Sum")}, nil),
		widget(0, 6, "Model latency "+pct+" (microseconds)", [][]any{metric("ModelLatency", pct)},
			[]map[string]any{{"label": "SLO", "value": float64(s.SLOMs) * 1000}}),
		widget(12, 6, "5XX errors (queue shield rejections)", [][]any{metric("Invocation5XXErrors", "Sum")}, nil),
	}}
	b, _ := json.Marshal(body)
	return string(b)
}
