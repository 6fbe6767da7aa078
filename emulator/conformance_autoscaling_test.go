package emulator_test

import (
	"encoding/json"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// Application Auto Scaling conformance: each case cites the AWS document it
// checks. The API reference fields are quoted from botocore's application-autoscaling model (the same text as
// the Application Auto Scaling API Reference).

const (
	smNS  = aastypes.ServiceNamespaceSagemaker
	smDim = aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount
)

// TestConformanceAutoScalingControlPlane: validation, shapes and pages, on endpoints that never start (no
// container binary): none of it needs an instance.
func TestConformanceAutoScalingControlPlane(t *testing.T) {
	r := emulatortest.Start(t)
	c := r.Clients
	ctx := ctxFor(t, 60*time.Second)
	names := []string{"speech-conf-a", "speech-conf-b"}
	for _, n := range names {
		emulatortest.Endpoint(t, r, n)
	}
	res := emulator.ResourceIDOf(names[0], "AllTraffic")
	for _, n := range names {
		if _, err := c.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
			ServiceNamespace: smNS, ResourceId: aws.String(emulator.ResourceIDOf(n, "AllTraffic")), ScalableDimension: smDim,
			MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(4),
		}); err != nil {
			t.Fatalf("RegisterScalableTarget %s: %v", n, err)
		}
	}
	step := func(adj aastypes.AdjustmentType, agg aastypes.MetricAggregationType) *aastypes.StepScalingPolicyConfiguration {
		return &aastypes.StepScalingPolicyConfiguration{AdjustmentType: adj, MetricAggregationType: agg,
			StepAdjustments: []aastypes.StepAdjustment{{MetricIntervalLowerBound: aws.Float64(0), ScalingAdjustment: aws.Int32(1)}}}
	}
	tt := func(metric aastypes.MetricType, stat aastypes.MetricStatistic) *aastypes.TargetTrackingScalingPolicyConfiguration {
		c := &aastypes.TargetTrackingScalingPolicyConfiguration{TargetValue: aws.Float64(5)}
		if metric != "" {
			c.PredefinedMetricSpecification = &aastypes.PredefinedMetricSpecification{PredefinedMetricType: metric}
		} else {
			c.CustomizedMetricSpecification = &aastypes.CustomizedMetricSpecification{MetricName: aws.String("ConcurrentRequestsPerModel"),
				Namespace: aws.String("AWS/SageMaker"), Statistic: stat}
		}
		return c
	}

	// Item 11: enum validation. The enums are the model's; "ValidationException: An exception was thrown for
	// a validation issue. Review the available parameters for the API request."
	for _, tc := range []struct {
		name string
		in   applicationautoscaling.PutScalingPolicyInput
	}{
		// MetricType enum: SageMakerVariantConcurrentRequestsPerModel is not one of its values; the variant's
		// concurrency metric is "SageMakerVariantConcurrentRequestsPerModelHighResolution".
		{"PredefinedMetricType without HighResolution", applicationautoscaling.PutScalingPolicyInput{PolicyType: aastypes.PolicyTypeTargetTrackingScaling,
			TargetTrackingScalingPolicyConfiguration: tt("SageMakerVariantConcurrentRequestsPerModel", "")}},
		// ServiceNamespace: "The namespace of the Amazon Web Services service that provides the resource."
		// (enum ecs, elasticmapreduce, ec2, ..., sagemaker, ...).
		{"ServiceNamespace", applicationautoscaling.PutScalingPolicyInput{ServiceNamespace: "sagemakerx", PolicyType: aastypes.PolicyTypeStepScaling,
			StepScalingPolicyConfiguration: step(aastypes.AdjustmentTypeChangeInCapacity, "")}},
		// ScalableDimension: "The scalable dimension. This string consists of the service namespace, resource
		// type, and scaling property." (enum, e.g. sagemaker:variant:DesiredInstanceCount).
		{"ScalableDimension", applicationautoscaling.PutScalingPolicyInput{ScalableDimension: "sagemaker:variant:InstanceCount", PolicyType: aastypes.PolicyTypeStepScaling,
			StepScalingPolicyConfiguration: step(aastypes.AdjustmentTypeChangeInCapacity, "")}},
		// PolicyType enum: StepScaling, TargetTrackingScaling, PredictiveScaling.
		{"PolicyType", applicationautoscaling.PutScalingPolicyInput{PolicyType: "SimpleScaling",
			StepScalingPolicyConfiguration: step(aastypes.AdjustmentTypeChangeInCapacity, "")}},
		// AdjustmentType: "The valid values are ChangeInCapacity, ExactCapacity, and PercentChangeInCapacity."
		{"AdjustmentType", applicationautoscaling.PutScalingPolicyInput{PolicyType: aastypes.PolicyTypeStepScaling,
			StepScalingPolicyConfiguration: step("ChangeInCount", "")}},
		// MetricAggregationType: "Valid values are Minimum, Maximum, and Average."
		{"MetricAggregationType", applicationautoscaling.PutScalingPolicyInput{PolicyType: aastypes.PolicyTypeStepScaling,
			StepScalingPolicyConfiguration: step(aastypes.AdjustmentTypeChangeInCapacity, "Sum")}},
		// CustomizedMetricSpecification.Statistic: MetricStatistic enum Average, Minimum, Maximum,
		// SampleCount, Sum (no percentiles).
		{"Statistic", applicationautoscaling.PutScalingPolicyInput{PolicyType: aastypes.PolicyTypeTargetTrackingScaling,
			TargetTrackingScalingPolicyConfiguration: tt("", "p99")}},
	} {
		t.Run("enum "+tc.name, func(t *testing.T) {
			in := tc.in
			in.PolicyName = aws.String("enum-check")
			in.ResourceId = aws.String(res)
			if in.ServiceNamespace == "" {
				in.ServiceNamespace = smNS
			}
			if in.ScalableDimension == "" {
				in.ScalableDimension = smDim
			}
			_, err := c.AutoScaling.PutScalingPolicy(ctx, &in)
			if apiCode(err) != "ValidationException" {
				t.Fatalf("PutScalingPolicy with a bad %s: %v, want ValidationException", tc.name, err)
			}
		})
	}

	// Item 13: "The ARN of an IAM role" (RoleARN); IAM is global, so its ARNs have an empty region:
	// arn:aws:iam::<account>:role/... (Amazon Resource Names, IAM identifiers).
	t.Run("RoleARN has no region", func(t *testing.T) {
		out, err := c.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: smNS, ResourceIds: []string{res}})
		if err != nil || len(out.ScalableTargets) != 1 {
			t.Fatalf("DescribeScalableTargets: %+v, %v", out, err)
		}
		if role := aws.ToString(out.ScalableTargets[0].RoleARN); !strings.HasPrefix(role, "arn:aws:iam::") {
			t.Errorf("RoleARN = %s, want arn:aws:iam::<account>:role/... (no region)", role)
		}
	})

	// Item 2: the target tracking alarms. "Target tracking will evaluate metrics aggregated at a one-minute
	// granularity for all predefined metrics and custom metrics" and, for the high-resolution SageMaker
	// metrics, "as the traffic to your models decreases, your policy scales in at the same speed as it would
	// for standard metrics": the low alarm's datapoints are standard ones (6 high-resolution periods), 15 of
	// them, while the high alarm keeps the high resolution.
	t.Run("target tracking alarms", func(t *testing.T) {
		out, err := c.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
			PolicyName: aws.String("tt"), ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim,
			PolicyType: aastypes.PolicyTypeTargetTrackingScaling, TargetTrackingScalingPolicyConfiguration: tt(aastypes.MetricTypeSageMakerVariantConcurrentRequestsPerModelHighResolution, ""),
		})
		if err != nil {
			t.Fatalf("PutScalingPolicy: %v", err)
		}
		var high, low *cwtypes.MetricAlarm
		for _, a := range out.Alarms {
			d, err := c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{aws.ToString(a.AlarmName)}})
			if err != nil || len(d.MetricAlarms) != 1 {
				t.Fatalf("DescribeAlarms: %+v, %v", d, err)
			}
			m := d.MetricAlarms[0]
			if strings.Contains(aws.ToString(m.AlarmName), "AlarmHigh") {
				high = &m
			} else {
				low = &m
			}
		}
		if high == nil || low == nil {
			t.Fatalf("alarms %+v: want AlarmHigh and AlarmLow", out.Alarms)
		}
		if aws.ToInt32(low.Period) != 6*aws.ToInt32(high.Period) || aws.ToInt32(low.EvaluationPeriods) != 15 || aws.ToInt32(low.DatapointsToAlarm) != 15 {
			t.Errorf("low alarm: period %d, %d of %d datapoints; high alarm period %d: want 15 of 15 datapoints of 6× the high period",
				aws.ToInt32(low.Period), aws.ToInt32(low.DatapointsToAlarm), aws.ToInt32(low.EvaluationPeriods), aws.ToInt32(high.Period))
		}
	})

	// Item 5: pages. DescribeScalingPolicies MaxResults: "This value can be between 1 and 10. The default
	// value is 10. ... If this parameter is not used, the operation returns up to 10 results and a NextToken
	// value, if applicable."
	t.Run("DescribeScalingPolicies pages", func(t *testing.T) {
		for i := range 11 {
			if _, err := c.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
				PolicyName: aws.String("page-" + string(rune('a'+i))), ServiceNamespace: smNS, ResourceId: aws.String(emulator.ResourceIDOf(names[1], "AllTraffic")),
				ScalableDimension: smDim, PolicyType: aastypes.PolicyTypeStepScaling, StepScalingPolicyConfiguration: step(aastypes.AdjustmentTypeChangeInCapacity, ""),
			}); err != nil {
				t.Fatalf("PutScalingPolicy: %v", err)
			}
		}
		in := &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: smNS, ResourceId: aws.String(emulator.ResourceIDOf(names[1], "AllTraffic"))}
		first, err := c.AutoScaling.DescribeScalingPolicies(ctx, in)
		if err != nil || len(first.ScalingPolicies) != 10 || first.NextToken == nil {
			t.Fatalf("first page: %d policies, token %v, %v; want 10 and a NextToken", len(first.ScalingPolicies), first.NextToken, err)
		}
		in.NextToken = first.NextToken
		second, err := c.AutoScaling.DescribeScalingPolicies(ctx, in)
		if err != nil || len(second.ScalingPolicies) != 1 || second.NextToken != nil {
			t.Fatalf("second page: %d policies, token %v, %v; want 1 and no NextToken", len(second.ScalingPolicies), second.NextToken, err)
		}
		if a, b := aws.ToString(first.ScalingPolicies[9].PolicyName), aws.ToString(second.ScalingPolicies[0].PolicyName); a >= b {
			t.Errorf("pages overlap or go backwards: %s then %s", a, b)
		}
		// "If this parameter is used, the operation returns up to MaxResults results at a time, along with a
		// NextToken value."
		in.NextToken, in.MaxResults = nil, aws.Int32(3)
		if p, err := c.AutoScaling.DescribeScalingPolicies(ctx, in); err != nil || len(p.ScalingPolicies) != 3 || p.NextToken == nil {
			t.Fatalf("MaxResults 3: %d policies, token %v, %v", len(p.ScalingPolicies), p.NextToken, err)
		}
		// "This value can be between 1 and 10."
		in.MaxResults = aws.Int32(11)
		if _, err := c.AutoScaling.DescribeScalingPolicies(ctx, in); apiCode(err) != "ValidationException" {
			t.Errorf("MaxResults 11: %v, want ValidationException", err)
		}
		// InvalidNextTokenException: "The next token supplied was invalid."
		in.MaxResults, in.NextToken = nil, aws.String("bogus")
		if _, err := c.AutoScaling.DescribeScalingPolicies(ctx, in); apiCode(err) != "InvalidNextTokenException" {
			t.Errorf("a bad NextToken: %v, want InvalidNextTokenException", err)
		}
	})

	// DescribeScalableTargets MaxResults: "This value can be between 1 and 50. The default value is 50."
	t.Run("DescribeScalableTargets pages", func(t *testing.T) {
		in := &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: smNS, MaxResults: aws.Int32(1)}
		first, err := c.AutoScaling.DescribeScalableTargets(ctx, in)
		if err != nil || len(first.ScalableTargets) != 1 || first.NextToken == nil {
			t.Fatalf("MaxResults 1: %d targets, token %v, %v; want 1 and a NextToken", len(first.ScalableTargets), first.NextToken, err)
		}
		in.NextToken = first.NextToken
		second, err := c.AutoScaling.DescribeScalableTargets(ctx, in)
		if err != nil || len(second.ScalableTargets) != 1 || second.NextToken != nil ||
			aws.ToString(second.ScalableTargets[0].ResourceId) == aws.ToString(first.ScalableTargets[0].ResourceId) {
			t.Fatalf("second page: %+v, %v; want the other target and no NextToken", second, err)
		}
		in.NextToken = aws.String("bogus")
		if _, err := c.AutoScaling.DescribeScalableTargets(ctx, in); apiCode(err) != "InvalidNextTokenException" {
			t.Errorf("a bad NextToken: %v, want InvalidNextTokenException", err)
		}
	})
}

// inject publishes v as the endpoint's ConcurrentRequestsPerModel every 100 ms until the returned stop is
// called (the router's own samples of an idle endpoint are 0, and the alarms below read the Maximum).
func inject(r *emulatortest.Emulator, endpoint string, v float64) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			r.AddMetric(emulator.NamespaceSageMaker, "ConcurrentRequestsPerModel", endpoint, "AllTraffic", time.Now(), v)
			select {
			case <-done:
				return
			case <-time.After(100 * time.Millisecond):
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

// TestConformanceAutoScalingScaling drives step scaling on a real endpoint through the SDK: cooldowns (items 1
// and 3), the activity life cycle (item 4) and the activity pages (item 5, with the AWS CLI).
func TestConformanceAutoScalingScaling(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	c := r.Clients
	// Every wait below bounds a hang, not a speed: a clean-clone CI run, with four -race test processes on two
	// cores, once took over 30 s to see the first scale-out that a 1-s alarm makes within about 2 s here.
	ctx := ctxFor(t, 6*time.Minute)
	const name = "speech-conf-scale"
	emulatortest.Endpoint(t, r, name, emulatortest.InService())
	res := emulator.ResourceIDOf(name, "AllTraffic")
	if _, err := c.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim, MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(4),
	}); err != nil {
		t.Fatalf("RegisterScalableTarget: %v", err)
	}
	// A scale-out step policy, +1 for a breach of [0, 10), +3 from 10 up, with a 300-s cooldown, and a scale-in
	// step policy, -1, with no cooldown; each invoked by its own alarm of one 1-s datapoint.
	policy := func(policyName string, cooldown int32, steps ...aastypes.StepAdjustment) string {
		out, err := c.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
			PolicyName: aws.String(policyName), ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim,
			PolicyType: aastypes.PolicyTypeStepScaling, StepScalingPolicyConfiguration: &aastypes.StepScalingPolicyConfiguration{
				AdjustmentType: aastypes.AdjustmentTypeChangeInCapacity, Cooldown: aws.Int32(cooldown), StepAdjustments: steps},
		})
		if err != nil {
			t.Fatalf("PutScalingPolicy %s: %v", policyName, err)
		}
		return aws.ToString(out.PolicyARN)
	}
	outARN := policy("out", 300,
		aastypes.StepAdjustment{MetricIntervalLowerBound: aws.Float64(0), MetricIntervalUpperBound: aws.Float64(10), ScalingAdjustment: aws.Int32(1)},
		aastypes.StepAdjustment{MetricIntervalLowerBound: aws.Float64(10), ScalingAdjustment: aws.Int32(3)})
	inARN := policy("in", 0, aastypes.StepAdjustment{MetricIntervalUpperBound: aws.Float64(0), ScalingAdjustment: aws.Int32(-1)})
	alarm := func(alarmName, arn string, op cwtypes.ComparisonOperator, threshold float64) {
		if _, err := c.CloudWatch.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
			AlarmName: aws.String(alarmName), AlarmActions: []string{arn}, Namespace: aws.String(emulator.NamespaceSageMaker),
			MetricName: aws.String("ConcurrentRequestsPerModel"), Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(name)}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}},
			Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(1), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(threshold), ComparisonOperator: op,
		}); err != nil {
			t.Fatalf("PutMetricAlarm %s: %v", alarmName, err)
		}
	}
	alarm("conf-high", outARN, cwtypes.ComparisonOperatorGreaterThanThreshold, 5)
	desired := func() (int32, smtypes.EndpointStatus) {
		d, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeEndpoint: %v", err)
		}
		return aws.ToInt32(d.ProductionVariants[0].DesiredInstanceCount), d.EndpointStatus
	}
	activities := func(in *applicationautoscaling.DescribeScalingActivitiesInput) []aastypes.ScalingActivity {
		in.ServiceNamespace, in.ResourceId = smNS, aws.String(res)
		out, err := c.AutoScaling.DescribeScalingActivities(ctx, in)
		if err != nil {
			t.Fatalf("DescribeScalingActivities: %v", err)
		}
		return out.ScalingActivities
	}

	// A breach of 3 (metric 8) takes the +1 step: 1 → 2.
	stop := inject(r, name, 8)
	eventually(t, 90*time.Second, "the first scale-out to 2", func() bool { n, _ := desired(); return n == 2 })

	// Item 4: "All scaling activities have a Pending status before the target service responds. After the
	// target responds, the status of the scaling activity changes to InProgress." and "Successful – Scaling
	// was completed successfully": while the endpoint is Updating the activity is not yet Successful; once
	// it is InService again the activity is Successful with an EndTime after its StartTime and a
	// StatusMessage ("StatusMessage contains information about the status of the scaling activity").
	sawInProgress := false
	eventually(t, hangBound, "the first activity Successful", func() bool {
		acts := activities(&applicationautoscaling.DescribeScalingActivitiesInput{})
		_, status := desired()
		if len(acts) == 0 {
			return false
		}
		a := acts[0]
		if a.StatusCode == aastypes.ScalingActivityStatusCodeInProgress {
			sawInProgress = true
		}
		if a.StatusCode == aastypes.ScalingActivityStatusCodeSuccessful && status != smtypes.EndpointStatusInService {
			t.Fatalf("activity Successful while the endpoint is %s", status)
		}
		return a.StatusCode == aastypes.ScalingActivityStatusCodeSuccessful
	})
	first := activities(&applicationautoscaling.DescribeScalingActivitiesInput{})[0]
	if !sawInProgress || first.EndTime == nil || !first.EndTime.After(aws.ToTime(first.StartTime)) || aws.ToString(first.StatusMessage) == "" {
		t.Fatalf("first activity %+v (InProgress seen: %v): want InProgress while Updating, then Successful with EndTime after StartTime and a StatusMessage", first, sawInProgress)
	}

	// Item 1: "If the alarm triggers again during the cooldown period but at a more aggressive step adjustment
	// of 3, the previous increase of 2 is considered part of the current capacity. Therefore, only 1 is added
	// to the capacity." Here: +1 then, within the 300-s cooldown, a +3 breach (metric 20): 1 + 3 = 4, so 2 are
	// added, not 3 (which the cap of 4 would hide) and not none (blocked).
	stop()
	stop = inject(r, name, 20)
	eventually(t, hangBound, "the larger scale-out during the cooldown to 4", func() bool {
		n, status := desired()
		return n == 4 && status == smtypes.EndpointStatusInService
	})
	stop()

	// Item 3: "With the scale-in cooldown period, the intention is to scale in conservatively ..., so scale-in
	// activities are blocked until the scale-in cooldown period has expired": the scale-out policy's cooldown
	// (300 s, still running) does not hold back the scale-in policy (cooldown 0). An idle metric (0) breaches
	// the low alarm: 4 → 3.
	alarm("conf-low", inARN, cwtypes.ComparisonOperatorLessThanThreshold, 1)
	eventually(t, 90*time.Second, "a scale-in during the scale-out cooldown", func() bool { n, _ := desired(); return n <= 3 })
	if _, err := c.CloudWatch.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"conf-low"}}); err != nil {
		t.Fatalf("DeleteAlarms: %v", err)
	}

	// Item 5: DescribeScalingActivities MaxResults: "If this parameter is used, the operation returns up to
	// MaxResults results at a time, along with a NextToken value."
	out, err := c.AutoScaling.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{ServiceNamespace: smNS, MaxResults: aws.Int32(1)})
	if err != nil || len(out.ScalingActivities) != 1 || out.NextToken == nil {
		t.Fatalf("MaxResults 1: %+v, %v; want one activity and a NextToken", out, err)
	}
	next, err := c.AutoScaling.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{ServiceNamespace: smNS, MaxResults: aws.Int32(1), NextToken: out.NextToken})
	if err != nil || len(next.ScalingActivities) != 1 || aws.ToString(next.ScalingActivities[0].ActivityId) == aws.ToString(out.ScalingActivities[0].ActivityId) {
		t.Fatalf("second page: %+v, %v; want the next activity", next, err)
	}
	if _, err := c.AutoScaling.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{ServiceNamespace: smNS, NextToken: aws.String("bogus")}); apiCode(err) != "InvalidNextTokenException" {
		t.Errorf("a bad NextToken: %v, want InvalidNextTokenException", err)
	}

	// Item 4: "AlreadyAtMaxCapacity: Scaling is blocked by the maximum capacity that you specified." A not
	// scaled activity is listed only with IncludeNotScaledActivities: "Specifies whether to include
	// activities that aren't scaled (not scaled activities) in the response."
	if _, err := c.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim, MaxCapacity: aws.Int32(3),
	}); err != nil {
		t.Fatalf("RegisterScalableTarget: %v", err)
	}
	eventually(t, 90*time.Second, "capacity 3, InService", func() bool {
		n, status := desired()
		return n == 3 && status == smtypes.EndpointStatusInService
	})
	stop = inject(r, name, 20)
	eventually(t, 90*time.Second, "a not scaled activity AlreadyAtMaxCapacity", func() bool {
		for _, a := range activities(&applicationautoscaling.DescribeScalingActivitiesInput{IncludeNotScaledActivities: aws.Bool(true)}) {
			for _, nr := range a.NotScaledReasons {
				if aws.ToString(nr.Code) == "AlreadyAtMaxCapacity" && aws.ToInt32(nr.MaxCapacity) == 3 {
					return true
				}
			}
		}
		return false
	})
	stop()
	for _, a := range activities(&applicationautoscaling.DescribeScalingActivitiesInput{}) {
		if len(a.NotScaledReasons) > 0 {
			t.Errorf("without IncludeNotScaledActivities the not scaled activity %s is listed", aws.ToString(a.ActivityId))
		}
	}

	// `aws application-autoscaling describe-scaling-activities --service-namespace
	// sagemaker --max-items 1` returns one activity and a NextToken when there are two (here more); with
	// --page-size 1 the CLI follows the emulator's own NextToken through every page.
	t.Run("awscli", func(t *testing.T) {
		all := len(activities(&applicationautoscaling.DescribeScalingActivitiesInput{}))
		for _, args := range [][]string{{"--max-items", "1"}, {"--page-size", "1"}} {
			stdout, stderr, code := awsCLI(ctx, t, r, append([]string{"application-autoscaling", "describe-scaling-activities", "--service-namespace", "sagemaker", "--output", "json"}, args...)...)
			if code != 0 {
				t.Fatalf("aws %v: exit %d: %s", args, code, stderr)
			}
			var got struct {
				ScalingActivities []json.RawMessage
				NextToken         string
			}
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("aws %v: %v: %s", args, err, stdout)
			}
			want, token := 1, true
			if args[0] == "--page-size" {
				want, token = all, false
			}
			if len(got.ScalingActivities) != want || (got.NextToken != "") != token {
				t.Errorf("aws %v: %d activities, NextToken %q; want %d of %d, NextToken %v", args, len(got.ScalingActivities), got.NextToken, want, all, token)
			}
		}
	})
}
