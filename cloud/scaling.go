package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/speech-infra/speech-infra/capacity"
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

// ApplyScaling renders a scaling spec (capacity.ScalingSpecFor, the same derivation the endpoint stack
// renders as CloudFormation) through the SDK: the scalable target; target tracking on the high-resolution
// concurrency metric with scale-in disabled and the scale-out cooldown; the step policy that removes one
// instance with the scale-in cooldown; and every alarm of the spec, the scale-in alarm with the scale-in
// policy as its action. Everything is a put, so applying a changed spec over an older one updates it.
func ApplyScaling(ctx context.Context, aas ScalingAPI, cw AlarmAPI, s capacity.ScalingSpec) error {
	rid := aws.String(capacity.ResourceID(s.Endpoint, s.Variant))
	dim := aastypes.ScalableDimension(capacity.ScalableDimension)
	ns := aastypes.ServiceNamespace(capacity.ServiceNamespace)
	if _, err := aas.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: ns, ResourceId: rid, ScalableDimension: dim,
		MinCapacity: aws.Int32(int32(s.MinInstances)), MaxCapacity: aws.Int32(int32(s.MaxInstances)),
	}); err != nil {
		return fmt.Errorf("register scalable target %s: %w", *rid, err)
	}
	if _, err := aas.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName: aws.String(s.ScaleOut.PolicyName), ServiceNamespace: ns, ResourceId: rid, ScalableDimension: dim,
		PolicyType: aastypes.PolicyTypeTargetTrackingScaling,
		TargetTrackingScalingPolicyConfiguration: &aastypes.TargetTrackingScalingPolicyConfiguration{
			TargetValue:                   aws.Float64(s.ScaleOut.TargetValue),
			PredefinedMetricSpecification: &aastypes.PredefinedMetricSpecification{PredefinedMetricType: aastypes.MetricType(s.ScaleOut.PredefinedMetric)},
			DisableScaleIn:                aws.Bool(true),
			ScaleOutCooldown:              aws.Int32(int32(s.ScaleOut.ScaleOutCooldownS)),
		},
	}); err != nil {
		return fmt.Errorf("put scale-out policy %s: %w", s.ScaleOut.PolicyName, err)
	}
	in, err := aas.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName: aws.String(s.ScaleIn.PolicyName), ServiceNamespace: ns, ResourceId: rid, ScalableDimension: dim,
		PolicyType: aastypes.PolicyTypeStepScaling,
		StepScalingPolicyConfiguration: &aastypes.StepScalingPolicyConfiguration{
			AdjustmentType: aastypes.AdjustmentTypeChangeInCapacity, Cooldown: aws.Int32(int32(s.ScaleIn.CooldownS)),
			MetricAggregationType: aastypes.MetricAggregationTypeMaximum,
			StepAdjustments: []aastypes.StepAdjustment{{
				MetricIntervalUpperBound: aws.Float64(0), ScalingAdjustment: aws.Int32(int32(s.ScaleIn.Adjustment)),
			}},
		},
	})
	if err != nil {
		return fmt.Errorf("put scale-in policy %s: %w", s.ScaleIn.PolicyName, err)
	}
	dims := []cwtypes.Dimension{
		{Name: aws.String("EndpointName"), Value: aws.String(s.Endpoint)},
		{Name: aws.String("VariantName"), Value: aws.String(s.Variant)},
	}
	for _, a := range s.Alarms {
		put := &cloudwatch.PutMetricAlarmInput{
			AlarmName: aws.String(a.Name), AlarmDescription: aws.String(a.Description),
			Namespace: aws.String(capacity.MetricNamespace), MetricName: aws.String(a.Metric), Dimensions: dims,
			Period: aws.Int32(int32(a.PeriodS)), EvaluationPeriods: aws.Int32(int32(a.EvaluationPeriods)),
			DatapointsToAlarm: aws.Int32(int32(a.DatapointsToAlarm)), Threshold: aws.Float64(a.Threshold),
			ComparisonOperator: cwtypes.ComparisonOperator(a.Comparison), TreatMissingData: aws.String(a.TreatMissingData),
		}
		if a.ExtendedStatistic != "" {
			put.ExtendedStatistic = aws.String(a.ExtendedStatistic)
		} else {
			put.Statistic = cwtypes.Statistic(a.Statistic)
		}
		if a.TriggersScaleIn {
			put.AlarmActions = []string{aws.ToString(in.PolicyARN)}
		}
		if _, err := cw.PutMetricAlarm(ctx, put); err != nil {
			return fmt.Errorf("put alarm %s: %w", a.Name, err)
		}
	}
	return nil
}

// RemoveScaling deregisters the endpoint variant's scalable target (which deletes its policies) and deletes
// every alarm capacity.ScalingSpecFor creates for the endpoint (capacity.AlarmNames); what does not exist is
// skipped. It reports whether anything was removed.
func RemoveScaling(ctx context.Context, aas ScalingAPI, cw AlarmRemoveAPI, endpoint, variant string) (bool, error) {
	removed := false
	_, err := aas.DeregisterScalableTarget(ctx, &applicationautoscaling.DeregisterScalableTargetInput{
		ServiceNamespace: aastypes.ServiceNamespace(capacity.ServiceNamespace), ResourceId: aws.String(capacity.ResourceID(endpoint, variant)),
		ScalableDimension: aastypes.ScalableDimension(capacity.ScalableDimension),
	})
	var nf *aastypes.ObjectNotFoundException
	switch {
	case err == nil:
		removed = true
	case !errors.As(err, &nf):
		return removed, fmt.Errorf("deregister scalable target: %w", err)
	}
	// DeleteAlarms succeeds for names that do not exist ("If you specify any incorrect alarm names, the alarms
	// you specify with correct names are still deleted"), so its answer cannot tell whether anything was there:
	// the alarms that exist are read first, and only those are deleted.
	names := capacity.AlarmNames(endpoint)
	out, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: names, MaxRecords: aws.Int32(100)})
	if err != nil {
		return removed, fmt.Errorf("read alarms %s: %w", strings.Join(names, ", "), err)
	}
	var existing []string
	for _, a := range out.MetricAlarms {
		existing = append(existing, aws.ToString(a.AlarmName))
	}
	if len(existing) == 0 {
		return removed, nil
	}
	if _, err := cw.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: existing}); err != nil {
		return removed, fmt.Errorf("delete alarms %s: %w", strings.Join(existing, ", "), err)
	}
	return true, nil
}

// AlarmRemoveAPI is the part of the CloudWatch client that finds and deletes alarms.
type AlarmRemoveAPI interface {
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
	DeleteAlarms(ctx context.Context, in *cloudwatch.DeleteAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DeleteAlarmsOutput, error)
}

// ScalingReadAPI is the part of the Application Auto Scaling client that reads endpoint scaling back.
type ScalingReadAPI interface {
	DescribeScalableTargets(ctx context.Context, in *applicationautoscaling.DescribeScalableTargetsInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error)
	DescribeScalingPolicies(ctx context.Context, in *applicationautoscaling.DescribeScalingPoliciesInput, optFns ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalingPoliciesOutput, error)
}

// AlarmReadAPI is the part of the CloudWatch client that reads alarms back.
type AlarmReadAPI interface {
	DescribeAlarms(ctx context.Context, in *cloudwatch.DescribeAlarmsInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error)
}

// ScalingDiff compares the scaling deployed on the spec's endpoint variant with the spec and names every
// difference (a missing target, policy or alarm, or a value that differs); none means ApplyScaling would
// change nothing.
func ScalingDiff(ctx context.Context, aas ScalingReadAPI, cw AlarmReadAPI, s capacity.ScalingSpec) ([]string, error) {
	var diffs []string
	differ := func(what string, got, want any) {
		if got != want {
			diffs = append(diffs, fmt.Sprintf("%s: %v deployed, %v planned", what, got, want))
		}
	}
	rid := capacity.ResourceID(s.Endpoint, s.Variant)
	ns, dim := aastypes.ServiceNamespace(capacity.ServiceNamespace), aastypes.ScalableDimension(capacity.ScalableDimension)
	ts, err := aas.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: ns, ResourceIds: []string{rid}, ScalableDimension: dim})
	if err != nil {
		return nil, fmt.Errorf("describe scalable target %s: %w", rid, err)
	}
	if len(ts.ScalableTargets) == 0 {
		return []string{"no scalable target " + rid}, nil
	}
	t := ts.ScalableTargets[0]
	differ("minimum instances", aws.ToInt32(t.MinCapacity), int32(s.MinInstances))
	differ("maximum instances", aws.ToInt32(t.MaxCapacity), int32(s.MaxInstances))

	ps, err := aas.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{
		ServiceNamespace: ns, ResourceId: aws.String(rid), ScalableDimension: dim,
		PolicyNames: []string{s.ScaleOut.PolicyName, s.ScaleIn.PolicyName},
	})
	if err != nil {
		return nil, fmt.Errorf("describe scaling policies of %s: %w", rid, err)
	}
	var scaleInARN string
	found := map[string]bool{}
	for _, p := range ps.ScalingPolicies {
		name := aws.ToString(p.PolicyName)
		found[name] = true
		switch name {
		case s.ScaleOut.PolicyName:
			c := p.TargetTrackingScalingPolicyConfiguration
			if p.PolicyType != aastypes.PolicyTypeTargetTrackingScaling || c == nil || c.PredefinedMetricSpecification == nil {
				diffs = append(diffs, fmt.Sprintf("policy %s is not target tracking on a predefined metric", name))
				continue
			}
			differ(name+" target value", aws.ToFloat64(c.TargetValue), s.ScaleOut.TargetValue)
			differ(name+" metric", string(c.PredefinedMetricSpecification.PredefinedMetricType), s.ScaleOut.PredefinedMetric)
			differ(name+" scale-in disabled", aws.ToBool(c.DisableScaleIn), true)
			differ(name+" scale-out cooldown (s)", aws.ToInt32(c.ScaleOutCooldown), int32(s.ScaleOut.ScaleOutCooldownS))
		case s.ScaleIn.PolicyName:
			scaleInARN = aws.ToString(p.PolicyARN)
			c := p.StepScalingPolicyConfiguration
			if p.PolicyType != aastypes.PolicyTypeStepScaling || c == nil || len(c.StepAdjustments) != 1 {
				diffs = append(diffs, fmt.Sprintf("policy %s is not a one-step step scaling policy", name))
				continue
			}
			differ(name+" cooldown (s)", aws.ToInt32(c.Cooldown), int32(s.ScaleIn.CooldownS))
			differ(name+" adjustment type", c.AdjustmentType, aastypes.AdjustmentTypeChangeInCapacity)
			differ(name+" metric aggregation", c.MetricAggregationType, aastypes.MetricAggregationTypeMaximum)
			step := c.StepAdjustments[0]
			differ(name+" adjustment", aws.ToInt32(step.ScalingAdjustment), int32(s.ScaleIn.Adjustment))
			if step.MetricIntervalLowerBound != nil || step.MetricIntervalUpperBound == nil || *step.MetricIntervalUpperBound != 0 {
				diffs = append(diffs, fmt.Sprintf("%s step is not (-inf, 0]", name))
			}
		}
	}
	for _, name := range []string{s.ScaleOut.PolicyName, s.ScaleIn.PolicyName} {
		if !found[name] {
			diffs = append(diffs, "no scaling policy "+name)
		}
	}

	names := make([]string, 0, len(s.Alarms))
	for _, a := range s.Alarms {
		names = append(names, a.Name)
	}
	as, err := cw.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: names})
	if err != nil {
		return nil, fmt.Errorf("describe alarms of %s: %w", s.Endpoint, err)
	}
	byName := map[string]cwtypes.MetricAlarm{}
	for _, a := range as.MetricAlarms {
		byName[aws.ToString(a.AlarmName)] = a
	}
	for _, want := range s.Alarms {
		got, ok := byName[want.Name]
		if !ok {
			diffs = append(diffs, "no alarm "+want.Name)
			continue
		}
		n := "alarm " + want.Name
		differ(n+" description", aws.ToString(got.AlarmDescription), want.Description)
		differ(n+" namespace", aws.ToString(got.Namespace), capacity.MetricNamespace)
		differ(n+" metric", aws.ToString(got.MetricName), want.Metric)
		differ(n+" statistic", string(got.Statistic), want.Statistic)
		differ(n+" extended statistic", aws.ToString(got.ExtendedStatistic), want.ExtendedStatistic)
		differ(n+" period (s)", aws.ToInt32(got.Period), int32(want.PeriodS))
		differ(n+" evaluation periods", aws.ToInt32(got.EvaluationPeriods), int32(want.EvaluationPeriods))
		differ(n+" datapoints to alarm", aws.ToInt32(got.DatapointsToAlarm), int32(want.DatapointsToAlarm))
		differ(n+" threshold", aws.ToFloat64(got.Threshold), want.Threshold)
		differ(n+" comparison", string(got.ComparisonOperator), want.Comparison)
		differ(n+" missing data", aws.ToString(got.TreatMissingData), want.TreatMissingData)
		var dims []string
		for _, d := range got.Dimensions {
			dims = append(dims, aws.ToString(d.Name)+"="+aws.ToString(d.Value))
		}
		differ(n+" dimensions", fmt.Sprint(dims), fmt.Sprint([]string{"EndpointName=" + s.Endpoint, "VariantName=" + s.Variant}))
		wantActions := "[]"
		if want.TriggersScaleIn {
			wantActions = fmt.Sprint([]string{scaleInARN})
		}
		differ(n+" actions", fmt.Sprint(got.AlarmActions), wantActions)
	}
	return diffs, nil
}
