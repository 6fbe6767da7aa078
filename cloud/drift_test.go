package cloud_test

import (
	"context"
	"os"
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

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/cloudtest"
)

// deployed is what the drift doubles answer: an endpoint (nil: none), a target, policies and alarms.
type deployed struct {
	endpoint *sagemaker.DescribeEndpointOutput
	target   *aastypes.ScalableTarget
	policies []aastypes.ScalingPolicy
	alarms   []cwtypes.MetricAlarm
	// marker is the endpoint's measurement marker tag ("" none; read only when the endpoint has an ARN).
	marker string
}

func (d *deployed) clients() cloud.DriftClients {
	sm := &cloudtest.SageMaker{DescribeEndpointFn: func(context.Context, *sagemaker.DescribeEndpointInput, ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
		if d.endpoint == nil {
			return nil, notFound("endpoint " + worldEndpoint)
		}
		return d.endpoint, nil
	}}
	sm.ListTagsFn = func(context.Context, *sagemaker.ListTagsInput, ...func(*sagemaker.Options)) (*sagemaker.ListTagsOutput, error) {
		out := &sagemaker.ListTagsOutput{}
		if d.marker != "" {
			out.Tags = []smtypes.Tag{{Key: aws.String(cloud.MarkerTagKey), Value: aws.String(d.marker)}}
		}
		return out, nil
	}
	aas := &cloudtest.AutoScaling{
		DescribeScalableTargetsFn: func(context.Context, *applicationautoscaling.DescribeScalableTargetsInput, ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalableTargetsOutput, error) {
			if d.target == nil {
				return &applicationautoscaling.DescribeScalableTargetsOutput{}, nil
			}
			return &applicationautoscaling.DescribeScalableTargetsOutput{ScalableTargets: []aastypes.ScalableTarget{*d.target}}, nil
		},
		DescribeScalingPoliciesFn: func(_ context.Context, in *applicationautoscaling.DescribeScalingPoliciesInput, _ ...func(*applicationautoscaling.Options)) (*applicationautoscaling.DescribeScalingPoliciesOutput, error) {
			var ps []aastypes.ScalingPolicy
			for _, p := range d.policies {
				if len(in.PolicyNames) == 0 || slices.Contains(in.PolicyNames, aws.ToString(p.PolicyName)) {
					ps = append(ps, p)
				}
			}
			return &applicationautoscaling.DescribeScalingPoliciesOutput{ScalingPolicies: ps}, nil
		},
	}
	cw := &cloudtest.CloudWatch{DescribeAlarmsFn: func(_ context.Context, in *cloudwatch.DescribeAlarmsInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.DescribeAlarmsOutput, error) {
		var as []cwtypes.MetricAlarm
		for _, a := range d.alarms {
			if slices.Contains(in.AlarmNames, aws.ToString(a.AlarmName)) {
				as = append(as, a)
			}
		}
		return &cloudwatch.DescribeAlarmsOutput{MetricAlarms: as}, nil
	}}
	return cloud.DriftClients{SageMaker: sm, AutoScaling: aas, CloudWatch: cw}
}

func endpointIn(status smtypes.EndpointStatus, desired int32) *sagemaker.DescribeEndpointOutput {
	return &sagemaker.DescribeEndpointOutput{EndpointName: aws.String(worldEndpoint), EndpointStatus: status,
		ProductionVariants: []smtypes.ProductionVariantSummary{{VariantName: aws.String(worldVariant), DesiredInstanceCount: aws.Int32(desired)}}}
}

// planned is what ApplyScaling of the valid fixture plan deploys, as the doubles would answer it.
func planned(t *testing.T) (capacity.ScalingSpec, *deployed) {
	plan, err := capacity.LoadPlan(fixturePlan("valid"))
	if err != nil {
		t.Fatal(err)
	}
	s := capacity.ScalingSpecFor(worldEndpoint, worldVariant, plan)
	d := &deployed{endpoint: endpointIn(smtypes.EndpointStatusInService, int32(s.MinInstances)), target: target(int32(s.MinInstances), int32(s.MaxInstances), cloud.Suspension{})}
	arn := "arn:aws:autoscaling:us-east-1:000000000000:scalingPolicy:x:resource/sagemaker/" + s.ScaleIn.PolicyName
	d.policies = []aastypes.ScalingPolicy{
		{PolicyName: aws.String(s.ScaleOut.PolicyName), PolicyType: aastypes.PolicyTypeTargetTrackingScaling,
			TargetTrackingScalingPolicyConfiguration: &aastypes.TargetTrackingScalingPolicyConfiguration{
				TargetValue: aws.Float64(s.ScaleOut.TargetValue), DisableScaleIn: aws.Bool(true), ScaleOutCooldown: aws.Int32(int32(s.ScaleOut.ScaleOutCooldownS)),
				PredefinedMetricSpecification: &aastypes.PredefinedMetricSpecification{PredefinedMetricType: aastypes.MetricType(s.ScaleOut.PredefinedMetric)}}},
		{PolicyName: aws.String(s.ScaleIn.PolicyName), PolicyType: aastypes.PolicyTypeStepScaling, PolicyARN: aws.String(arn),
			StepScalingPolicyConfiguration: &aastypes.StepScalingPolicyConfiguration{
				AdjustmentType: aastypes.AdjustmentTypeChangeInCapacity, Cooldown: aws.Int32(int32(s.ScaleIn.CooldownS)), MetricAggregationType: aastypes.MetricAggregationTypeMaximum,
				StepAdjustments: []aastypes.StepAdjustment{{MetricIntervalUpperBound: aws.Float64(0), ScalingAdjustment: aws.Int32(int32(s.ScaleIn.Adjustment))}}}},
	}
	for _, a := range s.Alarms {
		m := cwtypes.MetricAlarm{AlarmName: aws.String(a.Name), AlarmDescription: aws.String(a.Description), Namespace: aws.String(capacity.MetricNamespace),
			MetricName: aws.String(a.Metric), Period: aws.Int32(int32(a.PeriodS)), EvaluationPeriods: aws.Int32(int32(a.EvaluationPeriods)),
			DatapointsToAlarm: aws.Int32(int32(a.DatapointsToAlarm)), Threshold: aws.Float64(a.Threshold), ComparisonOperator: cwtypes.ComparisonOperator(a.Comparison),
			TreatMissingData: aws.String(a.TreatMissingData), StateValue: cwtypes.StateValueOk,
			Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(worldEndpoint)}, {Name: aws.String("VariantName"), Value: aws.String(worldVariant)}}}
		if a.ExtendedStatistic != "" {
			m.ExtendedStatistic = aws.String(a.ExtendedStatistic)
		} else {
			m.Statistic = cwtypes.Statistic(a.Statistic)
		}
		if a.TriggersScaleIn {
			m.AlarmActions = []string{arn}
		}
		d.alarms = append(d.alarms, m)
	}
	return s, d
}

func codes(r cloud.DriftReport) string {
	var out []string
	for _, f := range r.Findings {
		out = append(out, string(f.Severity)+":"+f.Code)
	}
	return strings.Join(out, " ")
}

// Every finding, each from the smallest change to a clean deployment, with its severity.
func TestDriftFindings(t *testing.T) {
	spec, _ := planned(t)
	writeJournal := func(dir string) {
		w := newWorld(2, nil)
		if _, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir)); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		plan   bool
		change func(t *testing.T, d *deployed, journals string)
		want   string
	}{
		{"clean with plan", true, func(*testing.T, *deployed, string) {}, ""},
		{"clean without plan", false, func(_ *testing.T, d *deployed, _ string) { d.target, d.policies, d.alarms = nil, nil, nil }, "info:no_plan"},
		{"no endpoint", true, func(_ *testing.T, d *deployed, _ string) { d.endpoint = nil }, "error:endpoint_missing"},
		{"updating", true, func(_ *testing.T, d *deployed, _ string) { d.endpoint.EndpointStatus = smtypes.EndpointStatusUpdating }, "error:endpoint_not_in_service"},
		{"suspended", true, func(_ *testing.T, d *deployed, _ string) {
			d.target.SuspendedState.DynamicScalingInSuspended = aws.Bool(true)
		}, "error:scaling_suspended"},
		{"journal", true, func(_ *testing.T, _ *deployed, dir string) { writeJournal(dir) }, "error:journal_present"},
		// Another run's measurement marker, live or expired: a run holds the endpoint.
		{"measurement marker", true, func(_ *testing.T, d *deployed, _ string) {
			d.endpoint.EndpointArn = aws.String(worldArn)
			d.marker = cloud.Marker{RunID: "qmax-other", Owner: "bob@elsewhere", PID: 7, Started: time.Now().Add(-time.Minute), Expires: time.Now().Add(time.Hour)}.Value()
		}, "error:measurement_marker"},
		{"expired measurement marker", true, func(_ *testing.T, d *deployed, _ string) {
			d.endpoint.EndpointArn = aws.String(worldArn)
			d.marker = cloud.Marker{RunID: "qmax-other", Owner: "bob@elsewhere", PID: 7, Started: time.Now().Add(-2 * time.Hour), Expires: time.Now().Add(-time.Hour)}.Value()
		}, "error:measurement_marker"},
		{"unreadable journal", true, func(t *testing.T, _ *deployed, dir string) {
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, worldEndpoint+".json"), []byte("{"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "error:journal_unreadable"},
		{"target missing", true, func(_ *testing.T, d *deployed, _ string) { d.target, d.policies = nil, nil }, "error:target_missing"},
		{"target orphaned", false, func(_ *testing.T, d *deployed, _ string) { d.policies, d.alarms = nil, nil }, "error:target_orphaned info:no_plan"},
		{"policy orphaned without plan", false, func(_ *testing.T, d *deployed, _ string) { d.alarms = nil; d.policies = d.policies[:1] },
			"error:target_orphaned error:policy_orphaned info:no_plan"},
		{"extra policy", true, func(_ *testing.T, d *deployed, _ string) {
			d.policies = append(d.policies, aastypes.ScalingPolicy{PolicyName: aws.String("hand-made"), PolicyType: aastypes.PolicyTypeStepScaling})
		}, "error:policy_orphaned"},
		{"alarms orphaned", false, func(_ *testing.T, d *deployed, _ string) { d.target, d.policies = nil, nil; d.alarms = d.alarms[1:2] },
			"warn:alarm_orphaned info:no_plan"},
		{"bounds", true, func(_ *testing.T, d *deployed, _ string) { d.target.MaxCapacity = aws.Int32(2) }, "error:capacity_mismatch"},
		{"count outside bounds", true, func(_ *testing.T, d *deployed, _ string) {
			d.endpoint.ProductionVariants[0].DesiredInstanceCount = aws.Int32(int32(spec.MaxInstances + 1))
		}, "error:count_outside_bounds"},
		{"count differs from catalog", false, func(_ *testing.T, d *deployed, _ string) {
			d.target, d.policies, d.alarms = nil, nil, nil
			d.endpoint.ProductionVariants[0].DesiredInstanceCount = aws.Int32(2)
		}, "warn:capacity_mismatch info:no_plan"},
		{"target value", true, func(_ *testing.T, d *deployed, _ string) {
			d.policies[0].TargetTrackingScalingPolicyConfiguration.TargetValue = aws.Float64(99)
		}, "error:policy_mismatch"},
		{"alarm threshold", true, func(_ *testing.T, d *deployed, _ string) { d.alarms[2].Threshold = aws.Float64(1) }, "error:alarm_mismatch"},
		{"alarm missing", true, func(_ *testing.T, d *deployed, _ string) { d.alarms = d.alarms[:3] }, "error:alarm_missing"},
		{"alarm firing", true, func(_ *testing.T, d *deployed, _ string) { d.alarms[1].StateValue = cwtypes.StateValueAlarm }, "error:alarm_in_alarm"},
		{"scale-in alarm firing", true, func(_ *testing.T, d *deployed, _ string) { d.alarms[0].StateValue = cwtypes.StateValueAlarm }, "info:alarm_in_alarm"},
		{"insufficient data", true, func(_ *testing.T, d *deployed, _ string) { d.alarms[3].StateValue = cwtypes.StateValueInsufficientData }, "warn:alarm_insufficient_data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, d := planned(t)
			dir := filepath.Join(t.TempDir(), "journals")
			tc.change(t, d, dir)
			o := cloud.DriftOptions{Model: "espeak-ng", Endpoint: worldEndpoint, Variant: worldVariant, JournalDir: dir, CatalogInstances: int32(spec.MinInstances)}
			if tc.plan {
				o.Spec, o.PlanSource = &spec, "plan.json"
			} else {
				o.NoPlanReasons = []string{"no plan at plan.json"}
			}
			rep, err := cloud.Drift(context.Background(), d.clients(), o)
			if err != nil {
				t.Fatal(err)
			}
			if got := codes(rep); got != tc.want {
				t.Fatalf("findings = %q, want %q\n%+v", got, tc.want, rep.Findings)
			}
			if rep.Clean() != !strings.Contains(tc.want, "error:") {
				t.Fatalf("Clean() = %v for %q", rep.Clean(), tc.want)
			}
			for _, f := range rep.Findings {
				if f.Severity != cloud.SeverityInfo && f.Remediation == "" {
					t.Errorf("finding %s has no remediation", f.Code)
				}
			}
		})
	}
}

// ValidateScaling passes every check on the planned deployment and fails exactly the changed ones.
func TestValidateScaling(t *testing.T) {
	spec, d := planned(t)
	cl := d.clients()
	vc := cloud.ValidateClients{AutoScaling: cl.AutoScaling, CloudWatch: cl.CloudWatch}
	checks, err := cloud.ValidateScaling(context.Background(), vc, spec)
	if err != nil {
		t.Fatal(err)
	}
	if n := cloud.Failed(checks); n != 0 || len(checks) < 20 {
		t.Fatalf("%d of %d checks failed on the planned deployment: %+v", n, len(checks), checks)
	}
	d.policies[0].TargetTrackingScalingPolicyConfiguration.DisableScaleIn = aws.Bool(false)
	d.policies[1].StepScalingPolicyConfiguration.Cooldown = aws.Int32(1)
	d.alarms[0].Period = aws.Int32(int32(spec.Alarms[0].PeriodS) + 50) // unlike the plan's, whatever it is
	d.alarms[0].AlarmActions = nil
	d.alarms[2].Threshold = aws.Float64(5)
	checks, err = cloud.ValidateScaling(context.Background(), vc, spec)
	if err != nil {
		t.Fatal(err)
	}
	var failed []string
	for _, c := range checks {
		if !c.Pass {
			failed = append(failed, c.Subject+" "+c.Name)
		}
	}
	want := []string{
		spec.ScaleOut.PolicyName + " scale-in disabled", spec.ScaleIn.PolicyName + " scale-in cooldown (s)",
		spec.Alarms[0].Name + " period (s)", spec.Alarms[0].Name + " action", spec.Alarms[2].Name + " threshold",
	}
	if !slices.Equal(failed, want) {
		t.Fatalf("failed checks = %q, want %q", failed, want)
	}
	d.target = nil
	checks, err = cloud.ValidateScaling(context.Background(), vc, spec)
	if err != nil {
		t.Fatal(err)
	}
	if checks[0].Pass || checks[0].Deployed != "absent" {
		t.Fatalf("first check without a target = %+v", checks[0])
	}
}
