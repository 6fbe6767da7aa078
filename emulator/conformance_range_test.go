package emulator_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// Conformance of the ranges of alarm, scaling policy, scalable target and metric read inputs with AWS's
// documentation, through the real SDK clients. A value the Go SDK cannot carry (its members are int32) but
// another client can send (the AWS CLI, boto3, a hand-made request) goes as a raw awsJson request. Each case
// quotes the sentence it checks.

// apiError returns the error code and message of an SDK error ("" for none).
func apiError(err error) (code, msg string) {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode(), ae.ErrorMessage()
	}
	return "", ""
}

// rawJSONCall posts body to the emulator as the awsJson operation target (e.g.
// "GraniteServiceVersion20100801.PutMetricAlarm") with the given content type, signed for service, and returns
// the HTTP status, the error code (the shape name of __type, without its namespace) and the message.
func rawJSONCall(t *testing.T, r *emulatortest.Emulator, target, contentType, service, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctxFor(t, 30*time.Second), http.MethodPost, r.URL+"/", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("X-Amz-Target", target)
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("Authorization", sigV4Header(r.Key.AccessKeyID, service))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var shape struct {
		Type    string `json:"__type"`
		Message string `json:"message"`
	}
	json.NewDecoder(resp.Body).Decode(&shape)
	code := shape.Type
	if i := strings.LastIndex(code, "#"); i >= 0 {
		code = code[i+1:]
	}
	return resp.StatusCode, code, shape.Message
}

// TestConformanceAlarmRanges: PutMetricAlarm's Period and EvaluationPeriods (API reference, Period):
//
//	"Valid values are 10, 20, 30, and any multiple of 60."
//	"An alarm's total current evaluation period can be no longer than seven days, so Period multiplied by
//	EvaluationPeriods can't be more than 604,800 seconds. For alarms with a period of less than one hour (3,600
//	seconds), the total evaluation period can't be longer than one day (86,400 seconds)."
//
// and the model's types: Period and EvaluationPeriods are integers, "a 32-bit signed integer ranging from -2^31
// to (2^31)-1 (inclusive)" (Smithy). Each refusal is CloudWatch's ValidationError, naming the parameter, and
// leaves no alarm; each boundary value is accepted. The emulator runs SageMaker's 10-s metric period, where its
// periods are AWS's exactly.
func TestConformanceAlarmRanges(t *testing.T) {
	r := emulatortest.Start(t, tenSeconds)
	c := r.CloudWatch
	ctx := ctxFor(t, 2*time.Minute)
	alarm := func(name string, period, evals int32, datapoints *int32) error {
		_, err := c.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(name),
			Namespace: aws.String(emulator.NamespaceSageMaker), MetricName: aws.String("Invocations"), Statistic: cwtypes.StatisticSum,
			Period: aws.Int32(period), EvaluationPeriods: aws.Int32(evals), DatapointsToAlarm: datapoints,
			Threshold: aws.Float64(1), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold})
		return err
	}
	for _, tc := range []struct {
		name                string
		period, evaluations int32
		datapoints          *int32
		// want is what the refusal's message says; "" for an accepted alarm.
		want string
	}{
		// "Valid values are 10, 20, 30, and any multiple of 60."
		{"period 7", 7, 1, nil, "Period must be 10, 20, 30 or a multiple of 60"},
		{"period 1", 1, 1, nil, "Period must be 10, 20, 30 or a multiple of 60"},
		{"period 45", 45, 1, nil, "Period must be 10, 20, 30 or a multiple of 60"},
		{"period 90", 90, 1, nil, "Period must be 10, 20, 30 or a multiple of 60"},
		{"period 10", 10, 1, nil, ""},
		{"period 20", 20, 1, nil, ""},
		{"period 30", 30, 1, nil, ""},
		{"period 60", 60, 1, nil, ""},
		{"period 120", 120, 1, nil, ""},
		// "For alarms with a period of less than one hour (3,600 seconds), the total evaluation period can't be
		// longer than one day (86,400 seconds)."
		{"60 s x 1441", 60, 1441, nil, "Period (60) multiplied by EvaluationPeriods (1441) is 86460 seconds, more than 86400"},
		{"EvaluationPeriods 2^31-1", 60, math.MaxInt32, nil, "multiplied by EvaluationPeriods (2147483647)"},
		{"10 s x 8641", 10, 8641, nil, "more than 86400"},
		{"60 s x 1440", 60, 1440, nil, ""},
		{"10 s x 8640", 10, 8640, nil, ""},
		// "Period multiplied by EvaluationPeriods can't be more than 604,800 seconds."
		{"3600 s x 169", 3600, 169, nil, "is 608400 seconds, more than 604800"},
		{"period 2^31-1", math.MaxInt32, 1, nil, "more than 604800"},
		{"3600 s x 168", 3600, 168, nil, ""},
		{"604800 s x 1", 604800, 1, nil, ""},
		// DatapointsToAlarm, the M of "M out of N", is at most EvaluationPeriods, the N; CloudWatch answers
		// "ValidationError: DatapointsToAlarm must be less than or equal to EvaluationPeriods".
		{"DatapointsToAlarm 4 of 3", 60, 3, aws.Int32(4), "DatapointsToAlarm must be less than or equal to EvaluationPeriods"},
		{"DatapointsToAlarm 3 of 3", 60, 3, aws.Int32(3), ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "range-" + strings.NewReplacer(" ", "-", "^", "").Replace(tc.name)
			err := alarm(name, tc.period, tc.evaluations, tc.datapoints)
			code, msg := apiError(err)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Period %d, EvaluationPeriods %d: %v; want it accepted", tc.period, tc.evaluations, err)
			case tc.want != "" && (code != "ValidationError" || !strings.Contains(msg, tc.want)):
				t.Fatalf("Period %d, EvaluationPeriods %d: %v; want ValidationError saying %q", tc.period, tc.evaluations, err, tc.want)
			}
			out, err := c.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{name}})
			if err != nil {
				t.Fatalf("DescribeAlarms: %v", err)
			}
			if got, want := len(out.MetricAlarms), map[bool]int{true: 1, false: 0}[tc.want == ""]; got != want {
				t.Errorf("after the call: %d alarms named %s, want %d", got, name, want)
			}
		})
	}

	// A Period or EvaluationPeriods outside the model's integer type, which the Go SDK cannot send: the
	// model's ValidationError, naming the member.
	for _, tc := range []struct{ member, period, evaluations string }{
		{"period", "4611686018427387904", "1"},             // 2^62
		{"evaluationPeriods", "60", "2147483648"},          // 2^31
		{"evaluationPeriods", "60", "9223372036854775807"}, // 2^63 - 1
	} {
		body := fmt.Sprintf(`{"AlarmName":"range-raw","Namespace":"AWS/SageMaker","MetricName":"Invocations","Statistic":"Sum","Period":%s,"EvaluationPeriods":%s,"Threshold":1,"ComparisonOperator":"GreaterThanThreshold"}`,
			tc.period, tc.evaluations)
		status, code, msg := rawJSONCall(t, r, "GraniteServiceVersion20100801.PutMetricAlarm", "application/x-amz-json-1.0", "monitoring", body)
		if status != http.StatusBadRequest || code != "ValidationError" || !strings.Contains(msg, "at '"+tc.member+"' failed to satisfy constraint: Member must have value less than or equal to 2147483647") {
			t.Errorf("Period %s, EvaluationPeriods %s: %d %s %q; want 400 ValidationError naming %s and the integer's maximum", tc.period, tc.evaluations, status, code, msg, tc.member)
		}
	}
	if out, err := c.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{"range-raw"}}); err != nil || len(out.MetricAlarms) != 0 {
		t.Errorf("after the refused raw alarms: %+v, %v; want no alarm range-raw", out, err)
	}
}

// TestConformanceAlarmRangesShortened: an emulator whose metric period is shorter than SageMaker's 10 s (the
// test harness runs 1 s) compresses CloudWatch's clock by the same factor, and accepts AWS's valid periods
// shortened by it where they come out whole: at 1 s, 1, 2, 3 and the multiples of 6 for 10, 20, 30 and the
// multiples of 60. AWS's own values stay valid; a period that is neither is refused as on AWS.
func TestConformanceAlarmRangesShortened(t *testing.T) {
	r := emulatortest.Start(t)
	ctx := ctxFor(t, time.Minute)
	for _, tc := range []struct {
		period int32
		ok     bool
	}{{1, true}, {2, true}, {3, true}, {6, true}, {12, true}, {10, true}, {60, true}, {7, false}, {4, false}, {9, false}} {
		_, err := r.CloudWatch.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(fmt.Sprintf("short-%d", tc.period)),
			Namespace: aws.String(emulator.NamespaceSageMaker), MetricName: aws.String("Invocations"), Statistic: cwtypes.StatisticSum,
			Period: aws.Int32(tc.period), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold})
		code, msg := apiError(err)
		switch {
		case tc.ok && err != nil:
			t.Errorf("Period %d at a 1-s metric period: %v; want it accepted", tc.period, err)
		case !tc.ok && (code != "ValidationError" || !strings.Contains(msg, "Period must be 10, 20, 30 or a multiple of 60")):
			t.Errorf("Period %d at a 1-s metric period: %v; want ValidationError", tc.period, err)
		}
	}
}

// registerTarget registers the endpoint's variant with Application Auto Scaling (MinCapacity 1, MaxCapacity 4).
func registerTarget(t *testing.T, r *emulatortest.Emulator, endpoint string) string {
	t.Helper()
	res := emulator.ResourceIDOf(endpoint, "AllTraffic")
	if _, err := r.AutoScaling.RegisterScalableTarget(ctxFor(t, 30*time.Second), &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim, MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(4),
	}); err != nil {
		t.Fatalf("RegisterScalableTarget: %v", err)
	}
	return res
}

// step is a step adjustment with the given bounds (nil for none) and adjustment.
func step(lower, upper *float64, adjustment int32) aastypes.StepAdjustment {
	return aastypes.StepAdjustment{MetricIntervalLowerBound: lower, MetricIntervalUpperBound: upper, ScalingAdjustment: aws.Int32(adjustment)}
}

// contiguous returns n step adjustments [0, 1), [1, 2), ..., the last without an upper bound: ranges that
// neither overlap nor leave a gap.
func contiguous(n int) []aastypes.StepAdjustment {
	steps := make([]aastypes.StepAdjustment, n)
	for i := range steps {
		steps[i] = step(aws.Float64(float64(i)), aws.Float64(float64(i+1)), 1)
	}
	steps[n-1].MetricIntervalUpperBound = nil
	return steps
}

// TestConformanceStepAdjustmentRanges: PutScalingPolicy's step adjustments keep to StepAdjustment's rules (API
// reference): "The ranges of your step adjustments can't overlap or have a gap. At most one step adjustment
// can have a null lower bound. If one step adjustment has a negative lower bound, then there must be a step
// adjustment with a null lower bound. At most one step adjustment can have a null upper bound. If one step
// adjustment has a positive upper bound, then there must be a step adjustment with a null upper bound. The
// upper and lower bound can't be null in the same step adjustment." and MetricIntervalUpperBound: "The upper
// bound must be greater than the lower bound."; and to the quota "Step adjustments per step scaling policy: 20"
// (Quotas for Application Auto Scaling), in AWS's wording "There can be at most 20 step adjustments per scaling
// policy" (aws/aws-cdk#26215). Each refusal is a ValidationException naming the step adjustments (AWS documents
// no code for the quota's; the SDKs would retry its LimitExceededException as a throttle). A refused policy is
// not stored: 10,000 overlapping steps leave no trace in state.json.
func TestConformanceStepAdjustmentRanges(t *testing.T) {
	r := emulatortest.Start(t)
	ctx := ctxFor(t, 2*time.Minute)
	const name = "speech-steps"
	emulatortest.Endpoint(t, r, name)
	res := registerTarget(t, r, name)
	put := func(policy string, steps []aastypes.StepAdjustment) error {
		_, err := r.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
			PolicyName: aws.String(policy), ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim,
			PolicyType: aastypes.PolicyTypeStepScaling, StepScalingPolicyConfiguration: &aastypes.StepScalingPolicyConfiguration{
				AdjustmentType: aastypes.AdjustmentTypeChangeInCapacity, StepAdjustments: steps}})
		return err
	}
	f := aws.Float64
	for _, tc := range []struct {
		name  string
		steps []aastypes.StepAdjustment
		// code and want are the refusal's code and what its message says; "" for an accepted policy.
		code, want string
	}{
		{"overlapping ranges", []aastypes.StepAdjustment{step(f(0), f(10), 1), step(f(5), nil, 2)}, "ValidationException", "can't overlap"},
		{"a range inside another", []aastypes.StepAdjustment{step(f(0), nil, 1), step(f(5), f(6), 2)}, "ValidationException", "can't overlap"},
		{"a gap", []aastypes.StepAdjustment{step(f(0), f(10), 1), step(f(20), nil, 2)}, "ValidationException", "can't have a gap"},
		{"two null lower bounds", []aastypes.StepAdjustment{step(nil, f(-10), -2), step(nil, f(0), -1)}, "ValidationException", "At most one step adjustment can have a null lower bound"},
		{"two null upper bounds", []aastypes.StepAdjustment{step(f(0), nil, 1), step(f(10), nil, 2)}, "ValidationException", "At most one step adjustment can have a null upper bound"},
		{"both bounds null", []aastypes.StepAdjustment{step(nil, nil, 1)}, "ValidationException", "Both lower and upper bounds of a step adjustment cannot be left unspecified"},
		{"upper bound equal to the lower", []aastypes.StepAdjustment{step(f(5), f(5), 1), step(f(5), nil, 2)}, "ValidationException", "The upper bound must be greater than the lower bound"},
		{"a negative lower bound without a null one", []aastypes.StepAdjustment{step(f(-10), f(0), -1)}, "ValidationException", "null lower bound when one has a negative lower bound"},
		{"a positive upper bound without a null one", []aastypes.StepAdjustment{step(f(0), f(10), 1)}, "ValidationException", "null upper bound when one has a positive upper bound"},
		{"21 steps", contiguous(21), "ValidationException", "There can be at most 20 step adjustments per scaling policy"},
		// Accepted: the project's own scale-in step, a scale-out in two steps, and the quota's 20.
		{"the project's scale-in step", []aastypes.StepAdjustment{step(nil, f(0), -1)}, "", ""},
		{"two contiguous steps", []aastypes.StepAdjustment{step(f(0), f(10), 1), step(f(10), nil, 3)}, "", ""},
		{"steps given out of order", []aastypes.StepAdjustment{step(f(0), nil, 1), step(nil, f(-5), -2), step(f(-5), f(0), -1)}, "", ""},
		{"20 steps", contiguous(20), "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			policy := "steps-" + strings.ReplaceAll(tc.name, " ", "-")
			err := put(policy, tc.steps)
			code, msg := apiError(err)
			switch {
			case tc.code == "" && err != nil:
				t.Fatalf("%d steps: %v; want them accepted", len(tc.steps), err)
			case tc.code != "" && (code != tc.code || !strings.Contains(msg, tc.want) || !strings.Contains(msg, "stepScalingPolicyConfiguration.stepAdjustments")):
				t.Fatalf("%d steps: %v; want %s saying %q and naming stepScalingPolicyConfiguration.stepAdjustments", len(tc.steps), err, tc.code, tc.want)
			}
			out, err := r.AutoScaling.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: smNS, PolicyNames: []string{policy}})
			if err != nil {
				t.Fatalf("DescribeScalingPolicies: %v", err)
			}
			if got, want := len(out.ScalingPolicies), map[bool]int{true: 1, false: 0}[tc.code == ""]; got != want {
				t.Errorf("after the call: %d policies named %s, want %d", got, policy, want)
			}
		})
	}

	// 10,000 overlapping steps, every one [0, +inf): refused by the quota at once, and not stored (as a policy
	// they would take over a megabyte of state.json).
	many := make([]aastypes.StepAdjustment, 10000)
	for i := range many {
		many[i] = step(f(0), nil, 1)
	}
	if code, msg := apiError(put("steps-10000", many)); code != "ValidationException" || !strings.Contains(msg, "There can be at most 20 step adjustments per scaling policy: stepScalingPolicyConfiguration.stepAdjustments has 10000.") {
		t.Errorf("10,000 overlapping steps: %s %q; want ValidationException counting them", code, msg)
	}
	state, err := os.ReadFile(filepath.Join(r.StateDir, "state.json"))
	if err != nil {
		t.Fatalf("state.json: %v", err)
	}
	if strings.Contains(string(state), "steps-10000") || len(state) > 64<<10 {
		t.Errorf("state.json after the refused policy: %d bytes, naming it: %t; want it absent and the file small", len(state), strings.Contains(string(state), "steps-10000"))
	}
}

// TestConformanceScalableTargetRanges: RegisterScalableTarget's capacities. MinCapacity: "For the following
// resources, the minimum value allowed is 0: ... SageMaker endpoint variants"; MaxCapacity: "Although you can
// specify a large maximum capacity, note that service quotas might impose lower limits." Both are the model's
// ResourceCapacity, an integer, "a 32-bit signed integer ranging from -2^31 to (2^31)-1 (inclusive)" (Smithy):
// 2^63 - 1 is refused with the model's ValidationException, naming the member, and 2^31 - 1 accepted. A
// minimum above the maximum is refused.
func TestConformanceScalableTargetRanges(t *testing.T) {
	r := emulatortest.Start(t)
	ctx := ctxFor(t, time.Minute)
	const name = "speech-capacity"
	emulatortest.Endpoint(t, r, name)
	res := emulator.ResourceIDOf(name, "AllTraffic")
	register := func(minC, maxC int32) error {
		_, err := r.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
			ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim, MinCapacity: aws.Int32(minC), MaxCapacity: aws.Int32(maxC)})
		return err
	}
	for _, tc := range []struct{ member, value string }{
		{"maxCapacity", "9223372036854775807"}, // 2^63 - 1
		{"maxCapacity", "2147483648"},          // 2^31
		{"minCapacity", "4294967296"},          // 2^32
	} {
		other := map[string]string{"maxCapacity": `"MinCapacity":1`, "minCapacity": `"MaxCapacity":2`}[tc.member]
		body := fmt.Sprintf(`{"ServiceNamespace":"sagemaker","ResourceId":%q,"ScalableDimension":"sagemaker:variant:DesiredInstanceCount",%s,%q:%s}`,
			res, other, strings.ToUpper(tc.member[:1])+tc.member[1:], tc.value)
		status, code, msg := rawJSONCall(t, r, "AnyScaleFrontendService.RegisterScalableTarget", "application/x-amz-json-1.1", "application-autoscaling", body)
		if status != http.StatusBadRequest || code != "ValidationException" || !strings.Contains(msg, "at '"+tc.member+"' failed to satisfy constraint: Member must have value less than or equal to 2147483647") {
			t.Errorf("%s %s: %d %s %q; want 400 ValidationException naming %s and the integer's maximum", tc.member, tc.value, status, code, msg, tc.member)
		}
	}
	if out, err := r.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: smNS}); err != nil || len(out.ScalableTargets) != 0 {
		t.Fatalf("after the refused registrations: %+v, %v; want no scalable target", out, err)
	}
	if code, msg := apiError(register(3, 2)); code != "ValidationException" || !strings.Contains(msg, "cannot be greater than maximum capacity") {
		t.Errorf("MinCapacity 3, MaxCapacity 2: %s %q; want ValidationException", code, msg)
	}
	if code, _ := apiError(register(-1, 2)); code != "ValidationException" {
		t.Errorf("MinCapacity -1: %s; want ValidationException", code)
	}
	// The boundaries: a minimum of 0 and the integer's maximum.
	if err := register(0, math.MaxInt32); err != nil {
		t.Fatalf("MinCapacity 0, MaxCapacity 2^31-1: %v; want it accepted", err)
	}
	out, err := r.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: smNS})
	if err != nil || len(out.ScalableTargets) != 1 || aws.ToInt32(out.ScalableTargets[0].MinCapacity) != 0 || aws.ToInt32(out.ScalableTargets[0].MaxCapacity) != math.MaxInt32 {
		t.Errorf("DescribeScalableTargets = %+v, %v; want one target of capacities 0 to 2147483647", out, err)
	}
}

// TestConformanceMetricDataRange: a metric read over any range stamps its datapoints inside the range asked
// for and inside what CloudWatch keeps. GetMetricData: StartTime "The value specified is inclusive", EndTime
// "The value specified is exclusive", and "Data points with a period of 3600 seconds (1 hour) are available
// for 455 days (15 months)." A read from the year 1 to the year 9999 returns the one datapoint recorded, at its
// period's start; data older than 455 days is not served; a range wholly in the past returns nothing.
// GetMetricStatistics counts the datapoints over the range asked for: "The maximum number of data points
// returned from a single call is 1,440. If you request more than 1,440 data points, CloudWatch returns an
// error."
func TestConformanceMetricDataRange(t *testing.T) {
	r := emulatortest.Start(t)
	c := r.CloudWatch
	ctx := ctxFor(t, time.Minute)
	const metric = "ConcurrentRequestsPerModel"
	recorded := time.Now().UTC().Add(-time.Minute).Truncate(time.Second)
	stale := recorded.Add(-456 * 24 * time.Hour)
	// The recent datapoint first: the store drops what is a retention older than the point it adds.
	r.AddIsolatedMetric(emulator.NamespaceSageMaker, metric, "range", "AllTraffic", "range", recorded, 3)
	r.AddIsolatedMetric(emulator.NamespaceSageMaker, metric, "range", "AllTraffic", "range", stale, 5)
	dims := []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("range")}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")},
		{Name: aws.String("Injected"), Value: aws.String("range")}}
	year1, year9999 := time.Date(1, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	read := func(start, end time.Time, period int32) ([]time.Time, []float64, error) {
		out, err := c.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{StartTime: aws.Time(start), EndTime: aws.Time(end),
			MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("m"), MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{Namespace: aws.String(emulator.NamespaceSageMaker), MetricName: aws.String(metric), Dimensions: dims},
				Period: aws.Int32(period), Stat: aws.String("Maximum")}}}})
		if err != nil {
			return nil, nil, err
		}
		return out.MetricDataResults[0].Timestamps, out.MetricDataResults[0].Values, nil
	}
	for _, period := range []int32{1, 10, 60, 3600, 86400} {
		ts, vs, err := read(year1, year9999, period)
		// The grid of a read from the year 1 at midnight is the whole periods since then, the UTC day's
		// included: the recorded second's period starts at its truncation.
		want := recorded.Truncate(time.Duration(period) * time.Second)
		if err != nil || len(ts) != 1 || !ts[0].Equal(want) || vs[0] != 3 {
			t.Errorf("GetMetricData period %d from the year 1 to 9999: %v %v, %v; want the one datapoint 3 at %s", period, ts, vs, err, want)
		}
	}
	if ts, vs, err := read(year1, time.Date(2, 1, 1, 0, 0, 0, 0, time.UTC), 60); err != nil || len(ts) != 0 {
		t.Errorf("GetMetricData over the year 1: %v %v, %v; want no datapoint", ts, vs, err)
	}
	if ts, vs, err := read(stale.Add(-time.Hour), stale.Add(time.Hour), 3600); err != nil || len(ts) != 0 {
		t.Errorf("GetMetricData around a datapoint of 456 days ago: %v %v, %v; want none (455 days' retention)", ts, vs, err)
	}
	if _, _, err := read(recorded, recorded, 60); err == nil || !strings.Contains(func() string { _, m := apiError(err); return m }(), "StartTime") {
		t.Errorf("GetMetricData with StartTime equal to EndTime: %v; want a refusal naming StartTime", err)
	}

	stats := func(start, end time.Time, period int32) (*cloudwatch.GetMetricStatisticsOutput, error) {
		return c.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{Namespace: aws.String(emulator.NamespaceSageMaker), MetricName: aws.String(metric),
			Dimensions: dims, StartTime: aws.Time(start), EndTime: aws.Time(end), Period: aws.Int32(period), Statistics: []cwtypes.Statistic{cwtypes.StatisticMaximum}})
	}
	if _, err := stats(year1, year9999, 86400); func() string { c, _ := apiError(err); return c }() != "InvalidParameterCombination" {
		t.Errorf("GetMetricStatistics of days from the year 1 to 9999: %v; want InvalidParameterCombination (over 1,440 datapoints)", err)
	}
	day := recorded.Truncate(time.Minute).Add(-12 * time.Hour)
	if _, err := stats(day, day.Add(1441*time.Minute), 60); func() string { c, _ := apiError(err); return c }() != "InvalidParameterCombination" {
		t.Errorf("GetMetricStatistics of 1,441 minutes: %v; want InvalidParameterCombination", err)
	}
	out, err := stats(day, day.Add(1440*time.Minute), 60)
	if err != nil || len(out.Datapoints) != 1 || !out.Datapoints[0].Timestamp.Equal(recorded.Truncate(time.Minute)) {
		t.Errorf("GetMetricStatistics of 1,440 minutes: %+v, %v; want the one datapoint at %s", out, err, recorded.Truncate(time.Minute))
	}
}
