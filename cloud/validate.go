package cloud

import (
	"context"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/speech-infra/speech-infra/capacity"
)

// Check is one comparison of a deployed value with the plan's.
type Check struct {
	// Name says what was compared, e.g. "scale-out policy target value".
	Name string `json:"name"`
	// Subject is the resource (target, policy or alarm name).
	Subject string `json:"subject"`
	// Planned and Deployed are the values, as text ("absent" for a missing resource).
	Planned  string `json:"planned"`
	Deployed string `json:"deployed"`
	// Pass is true when they agree.
	Pass bool `json:"pass"`
}

// ValidateClients are the read-only clients ValidateScaling works through.
type ValidateClients struct {
	// AutoScaling reads the target and its policies.
	AutoScaling ScalingReadAPI
	// CloudWatch reads the alarms.
	CloudWatch AlarmReadAPI
}

// absent is the deployed value of a resource that does not exist.
const absent = "absent"

// ValidateScaling checks the scaling deployed on the spec's variant against the spec (capacity.ScalingSpecFor of
// the plan): the target's bounds; the target-tracking policy's type, metric, target value, disabled scale-in
// and scale-out cooldown; the step policy's type, cooldown, adjustment and step; every alarm's metric,
// statistic, threshold, comparison, period, evaluation periods and datapoints, and the scale-in alarm's action.
// A missing resource is one failed check (its values are not compared). It only reads.
func ValidateScaling(ctx context.Context, cl ValidateClients, s capacity.ScalingSpec) ([]Check, error) {
	var checks []Check
	check := func(subject, name string, planned, deployed any) {
		p, d := fmt.Sprint(planned), fmt.Sprint(deployed)
		checks = append(checks, Check{Name: name, Subject: subject, Planned: p, Deployed: d, Pass: p == d})
	}
	rid := capacity.ResourceID(s.Endpoint, s.Variant)
	target, err := describeTarget(ctx, cl.AutoScaling, s.Endpoint, s.Variant)
	if err != nil {
		return nil, err
	}
	if target == nil {
		check(rid, "scalable target", "registered", absent)
	} else {
		check(rid, "minimum instances", s.MinInstances, aws.ToInt32(target.MinCapacity))
		check(rid, "maximum instances", s.MaxInstances, aws.ToInt32(target.MaxCapacity))
	}

	var policies []aastypes.ScalingPolicy
	if target != nil {
		out, err := cl.AutoScaling.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{
			ServiceNamespace: aastypes.ServiceNamespace(capacity.ServiceNamespace), ResourceId: aws.String(rid),
			ScalableDimension: aastypes.ScalableDimension(capacity.ScalableDimension),
			PolicyNames:       []string{s.ScaleOut.PolicyName, s.ScaleIn.PolicyName},
		})
		if err != nil {
			return nil, fmt.Errorf("describe scaling policies of %s: %w", rid, err)
		}
		policies = out.ScalingPolicies
	}
	find := func(name string) *aastypes.ScalingPolicy {
		i := slices.IndexFunc(policies, func(p aastypes.ScalingPolicy) bool { return aws.ToString(p.PolicyName) == name })
		if i < 0 {
			return nil
		}
		return &policies[i]
	}

	out := s.ScaleOut.PolicyName
	if p := find(out); p == nil {
		check(out, "scale-out policy", "target tracking", absent)
	} else if c := p.TargetTrackingScalingPolicyConfiguration; p.PolicyType != aastypes.PolicyTypeTargetTrackingScaling || c == nil {
		check(out, "scale-out policy type", aastypes.PolicyTypeTargetTrackingScaling, p.PolicyType)
	} else {
		metric := "custom metric"
		if c.PredefinedMetricSpecification != nil {
			metric = string(c.PredefinedMetricSpecification.PredefinedMetricType)
		}
		check(out, "tracked metric", s.ScaleOut.PredefinedMetric, metric)
		check(out, "target value (concurrent requests per instance)", s.ScaleOut.TargetValue, aws.ToFloat64(c.TargetValue))
		check(out, "scale-in disabled", true, aws.ToBool(c.DisableScaleIn))
		check(out, "scale-out cooldown (s)", s.ScaleOut.ScaleOutCooldownS, aws.ToInt32(c.ScaleOutCooldown))
	}

	in := s.ScaleIn.PolicyName
	scaleInARN := ""
	if p := find(in); p == nil {
		check(in, "scale-in policy", "step scaling", absent)
	} else if c := p.StepScalingPolicyConfiguration; p.PolicyType != aastypes.PolicyTypeStepScaling || c == nil {
		check(in, "scale-in policy type", aastypes.PolicyTypeStepScaling, p.PolicyType)
	} else {
		scaleInARN = aws.ToString(p.PolicyARN)
		check(in, "scale-in cooldown (s)", s.ScaleIn.CooldownS, aws.ToInt32(c.Cooldown))
		check(in, "adjustment type", aastypes.AdjustmentTypeChangeInCapacity, c.AdjustmentType)
		step := "none"
		if len(c.StepAdjustments) == 1 {
			st := c.StepAdjustments[0]
			step = fmt.Sprintf("%s: %+d", interval(st.MetricIntervalLowerBound, st.MetricIntervalUpperBound), aws.ToInt32(st.ScalingAdjustment))
		} else if len(c.StepAdjustments) > 1 {
			step = fmt.Sprintf("%d steps", len(c.StepAdjustments))
		}
		check(in, "step", fmt.Sprintf("(-inf, 0]: %+d", s.ScaleIn.Adjustment), step)
	}

	names := make([]string, 0, len(s.Alarms))
	for _, a := range s.Alarms {
		names = append(names, a.Name)
	}
	as, err := cl.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: names, MaxRecords: aws.Int32(100)})
	if err != nil {
		return nil, fmt.Errorf("describe alarms of %s: %w", s.Endpoint, err)
	}
	for _, want := range s.Alarms {
		i := slices.IndexFunc(as.MetricAlarms, func(a cwtypes.MetricAlarm) bool { return aws.ToString(a.AlarmName) == want.Name })
		if i < 0 {
			check(want.Name, "alarm", "present", absent)
			continue
		}
		got := as.MetricAlarms[i]
		stat, wantStat := string(got.Statistic), want.Statistic
		if want.ExtendedStatistic != "" || got.ExtendedStatistic != nil {
			stat, wantStat = aws.ToString(got.ExtendedStatistic), want.ExtendedStatistic
		}
		check(want.Name, "metric", capacity.MetricNamespace+" "+want.Metric, aws.ToString(got.Namespace)+" "+aws.ToString(got.MetricName))
		check(want.Name, "statistic", wantStat, stat)
		check(want.Name, "threshold", thresholdText(want.Metric, string(want.Comparison), want.Threshold), thresholdText(want.Metric, string(got.ComparisonOperator), aws.ToFloat64(got.Threshold)))
		check(want.Name, "period (s)", want.PeriodS, aws.ToInt32(got.Period))
		check(want.Name, "evaluation periods / datapoints to alarm", fmt.Sprintf("%d/%d", want.EvaluationPeriods, want.DatapointsToAlarm),
			fmt.Sprintf("%d/%d", aws.ToInt32(got.EvaluationPeriods), aws.ToInt32(got.DatapointsToAlarm)))
		if want.TriggersScaleIn {
			wantAction := "the scale-in policy " + in
			gotAction := fmt.Sprint(got.AlarmActions)
			if scaleInARN != "" && len(got.AlarmActions) == 1 && got.AlarmActions[0] == scaleInARN {
				gotAction = wantAction
			}
			check(want.Name, "action", wantAction, gotAction)
		}
	}
	return checks, nil
}

// interval renders a step's metric interval, e.g. "(-inf, 0]".
func interval(lo, hi *float64) string {
	l, h := "-inf", "+inf"
	if lo != nil {
		l = fmt.Sprintf("%g", *lo)
	}
	if hi != nil {
		h = fmt.Sprintf("%g", *hi)
	}
	return fmt.Sprintf("(%s, %s]", l, h)
}

// Failed counts the checks that did not pass.
func Failed(checks []Check) int {
	n := 0
	for _, c := range checks {
		if !c.Pass {
			n++
		}
	}
	return n
}

// thresholdText is an alarm threshold with its unit: ModelLatency is in microseconds (shown with its
// milliseconds beside it, the SLO's unit), the concurrency metrics in requests, the error counts in requests.
func thresholdText(metric, comparison string, v float64) string {
	if metric == "ModelLatency" {
		return fmt.Sprintf("%s %s µs (%s ms)", comparison, capacity.FormatNumber(v), capacity.FormatNumber(v/1000))
	}
	return fmt.Sprintf("%s %s requests", comparison, capacity.FormatNumber(v))
}
