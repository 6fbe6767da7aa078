package emulator_test

import (
	"fmt"
	"os"
	"strconv"
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

// TestConformanceCooldownFromCompletion runs a scale-out and a scale-in that each take
// longer than their policy's cooldown, on a timing profile whose instances take 4 s to launch and 4 s to
// terminate, with the emulator's 1-s evaluation tick (the test harness's metric period; 10 s by default).
//
// Item 1, the cooldown counts from the activity's end:
//   - Application Auto Scaling API reference, StepScalingPolicyConfiguration.Cooldown / TargetTracking
//     ScaleOutCooldown: "The amount of time, in seconds, after a scale-out activity completes before another
//     scale-out activity can start." and ScaleInCooldown: "The amount of time, in seconds, after a scale-in
//     activity completes before another scale-in activity can start."
//   - Application Auto Scaling user guide, "Define cooldown periods": "after Application Auto Scaling
//     successfully scales out, it starts to calculate the cooldown time."
//
// So the second activity of a policy starts no earlier than cooldown after the first one's EndTime, and (the
// emulator evaluating once per tick) no later than one tick after that.
//
// Item 2, a scale-in terminates instances:
//   - SageMaker API reference, ProductionVariantStatus.Status: "Updating: Updating capacity for the production
//     variant."; StatusMessage: "A message that describes the status of the production variant." The
//     endpoint deployment events (Events that Amazon SageMaker AI sends to Amazon EventBridge) word it
//     "Terminating X instance(s).".
//   - DescribeEndpoint, CurrentInstanceCount: "The number of instances associated with the variant.": it falls
//     once the terminated instances are gone, after the profile's termination phase.
//
// A cooldown counted from the activity's start fails it: the second scale-out comes within one tick of the first
// EndTime (the cooldown ran out during the update); so does a scale-in that is Successful at once.
func TestConformanceCooldownFromCompletion(t *testing.T) {
	// The cooldown is 2 s (instances take 4 s to launch and to terminate) unless
	// SPEECH_CONFORMANCE_COOLDOWN_S says otherwise: SPEECH_CONFORMANCE_COOLDOWN_S=30 runs a larger case, a
	// 30-s cooldown with 32-s updates (about three minutes).
	cooldown := 2 * time.Second
	if v := os.Getenv("SPEECH_CONFORMANCE_COOLDOWN_S"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("SPEECH_CONFORMANCE_COOLDOWN_S=%q: want whole seconds", v)
		}
		cooldown = time.Duration(n) * time.Second
	}
	const (
		tick  = time.Second     // emulatortest's metric period
		slack = 2 * time.Second // the settle of an activity and the scheduling of one evaluation on a loaded machine
	)
	launch, terminate := cooldown+2*time.Second, cooldown+2*time.Second
	profile, err := emulator.ParseProfile(fmt.Sprintf("provisioning=%g@launch,termination=%g@terminate", launch.Seconds(), terminate.Seconds()))
	if err != nil {
		t.Fatal(err)
	}
	r := emulatortest.Start(t, emulatortest.Container(t), func(o *emulator.Options) { o.Profile = profile })
	c := r.Clients
	ctx := ctxFor(t, 150*time.Second+8*(launch+cooldown))
	const name = "speech-conf-cooldown"
	emulatortest.Endpoint(t, r, name, emulatortest.InService())
	res := emulator.ResourceIDOf(name, "AllTraffic")
	if _, err := c.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim, MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(3),
	}); err != nil {
		t.Fatalf("RegisterScalableTarget: %v", err)
	}
	policy := func(policyName string, steps ...aastypes.StepAdjustment) string {
		out, err := c.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
			PolicyName: aws.String(policyName), ServiceNamespace: smNS, ResourceId: aws.String(res), ScalableDimension: smDim,
			PolicyType: aastypes.PolicyTypeStepScaling, StepScalingPolicyConfiguration: &aastypes.StepScalingPolicyConfiguration{
				AdjustmentType: aastypes.AdjustmentTypeChangeInCapacity, Cooldown: aws.Int32(int32(cooldown / time.Second)), StepAdjustments: steps},
		})
		if err != nil {
			t.Fatalf("PutScalingPolicy %s: %v", policyName, err)
		}
		return aws.ToString(out.PolicyARN)
	}
	// The alarms read an injected series of their own (one more dimension): the emulator's sampler rewrites the
	// endpoint's own ConcurrentRequestsPerModel series with the instances' peaks as each period goes, which
	// would clear a high alarm at random moments and delay the decision this case times.
	alarm := func(alarmName, arn string, op cwtypes.ComparisonOperator, threshold float64) {
		if _, err := c.CloudWatch.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{
			AlarmName: aws.String(alarmName), AlarmActions: []string{arn}, Namespace: aws.String(emulator.NamespaceSageMaker),
			MetricName: aws.String("ConcurrentRequestsPerModel"), Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(name)},
				{Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}, {Name: aws.String("Injected"), Value: aws.String("cooldown")}},
			Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(1), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(threshold), ComparisonOperator: op,
		}); err != nil {
			t.Fatalf("PutMetricAlarm %s: %v", alarmName, err)
		}
	}
	describe := func() *sagemaker.DescribeEndpointOutput {
		d, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		if err != nil {
			t.Fatalf("DescribeEndpoint: %v", err)
		}
		return d
	}
	// done lists the scaling activities that set a capacity and have ended, oldest first.
	done := func() []aastypes.ScalingActivity {
		out, err := c.AutoScaling.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{ServiceNamespace: smNS, ResourceId: aws.String(res)})
		if err != nil {
			t.Fatalf("DescribeScalingActivities: %v", err)
		}
		var list []aastypes.ScalingActivity
		for i := len(out.ScalingActivities) - 1; i >= 0; i-- {
			if a := out.ScalingActivities[i]; a.EndTime != nil {
				list = append(list, a)
			}
		}
		return list
	}
	// checkGap checks that activity b of a policy started between cooldown and cooldown + one tick after
	// activity a's EndTime, and that a took longer than the cooldown (else the case proves nothing).
	checkGap := func(what string, a, b aastypes.ScalingActivity, minTook time.Duration) {
		t.Helper()
		took := a.EndTime.Sub(aws.ToTime(a.StartTime))
		gap := aws.ToTime(b.StartTime).Sub(*a.EndTime)
		t.Logf("%s: the first activity took %s; the second started %s after its EndTime (cooldown %s, tick %s)", what, took, gap, cooldown, tick)
		if a.StatusCode != aastypes.ScalingActivityStatusCodeSuccessful || took < minTook {
			t.Fatalf("%s: the first activity %s took %s, want Successful after at least %s", what, a.StatusCode, took, minTook)
		}
		if gap < cooldown || gap >= cooldown+tick+slack {
			t.Errorf("%s: the second activity started %s after the first one's EndTime, want within [%s, %s): the cooldown counts from the EndTime and expires at the next tick", what, gap, cooldown, cooldown+tick+slack)
		}
	}

	// Scale-out 1 → 2 → 3 with a +1 step on a breach of 3.
	alarm("cd-high", policy("cd-out", aastypes.StepAdjustment{MetricIntervalLowerBound: aws.Float64(0), ScalingAdjustment: aws.Int32(1)}),
		cwtypes.ComparisonOperatorGreaterThanThreshold, 5)
	inject := func(v float64) (stop func()) {
		done := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				r.AddIsolatedMetric(emulator.NamespaceSageMaker, "ConcurrentRequestsPerModel", name, "AllTraffic", "cooldown", time.Now(), v)
				select {
				case <-done:
					return
				case <-time.After(100 * time.Millisecond):
				}
			}
		}()
		return func() { close(done); wg.Wait() }
	}
	stop := inject(8)
	eventually(t, 60*time.Second+3*(launch+cooldown), "two scale-outs completed", func() bool { return len(done()) >= 2 })
	stop()
	if _, err := c.CloudWatch.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{"cd-high"}}); err != nil {
		t.Fatalf("DeleteAlarms: %v", err)
	}
	outs := done()
	checkGap("scale-out", outs[0], outs[1], launch)
	eventually(t, 30*time.Second, "3 instances InService", func() bool {
		d := describe()
		return d.EndpointStatus == smtypes.EndpointStatusInService && aws.ToInt32(d.ProductionVariants[0].CurrentInstanceCount) == 3
	})

	// Scale-in 3 → 2 → 1 with a -1 step on an idle metric. While the first one's instance terminates the
	// endpoint is Updating, VariantStatus Updating says "Terminating 1 instance(s).", and CurrentInstanceCount
	// is still 3; it is 2 only after the termination phase.
	stop = inject(0)
	defer stop()
	alarm("cd-low", policy("cd-in", aastypes.StepAdjustment{MetricIntervalUpperBound: aws.Float64(0), ScalingAdjustment: aws.Int32(-1)}),
		cwtypes.ComparisonOperatorLessThanThreshold, 1)
	var terminating, sawThree time.Time
	eventually(t, 30*time.Second+launch, "the scale-in's termination shown", func() bool {
		d := describe()
		v := d.ProductionVariants[0]
		if aws.ToInt32(v.DesiredInstanceCount) != 2 {
			return false
		}
		if d.EndpointStatus == smtypes.EndpointStatusUpdating && len(v.VariantStatus) == 1 &&
			v.VariantStatus[0].Status == smtypes.VariantStatusUpdating && aws.ToString(v.VariantStatus[0].StatusMessage) == "Terminating 1 instance(s)." &&
			aws.ToInt32(v.CurrentInstanceCount) == 3 {
			terminating = time.Now()
			return true
		}
		if d.EndpointStatus == smtypes.EndpointStatusInService {
			t.Fatalf("the scale-in to 2 was InService without showing its termination: %+v", v)
		}
		return false
	})
	eventually(t, 30*time.Second+terminate, "CurrentInstanceCount 2 after the termination", func() bool {
		d := describe()
		n := aws.ToInt32(d.ProductionVariants[0].CurrentInstanceCount)
		if n == 3 {
			sawThree = time.Now()
		}
		return n == 2
	})
	if sawThree.Sub(terminating) < terminate/2 {
		t.Errorf("CurrentInstanceCount fell %s after the termination showed, want about the %s termination phase", sawThree.Sub(terminating), terminate)
	}
	eventually(t, 60*time.Second+3*(terminate+cooldown), "two scale-ins completed", func() bool { return len(done()) >= 4 })
	ins := done()[2:]
	checkGap("scale-in", ins[0], ins[1], terminate)
	if msg := aws.ToString(ins[0].StatusMessage); msg == "" {
		t.Errorf("the scale-in activity has no StatusMessage")
	}
}

// TestConformanceDeleteInProgressRefused: DeleteEndpoint on an endpoint that is Creating or
// Updating is refused with ValidationException, as SageMaker refuses it, and succeeds once the endpoint is
// InService. The SageMaker API reference's EndpointStatus: "Creating: CreateEndpoint is executing.", "Updating:
// UpdateEndpoint or UpdateEndpointWeightsAndCapacities is executing." and "Failed: ... DeleteEndpoint is the only
// operation that can be performed on a failed endpoint."
func TestConformanceDeleteInProgressRefused(t *testing.T) {
	profile, err := emulator.ParseProfile("provisioning=3@launch")
	if err != nil {
		t.Fatal(err)
	}
	r := emulatortest.Start(t, emulatortest.Container(t), func(o *emulator.Options) { o.Profile = profile })
	c := r.Clients
	ctx := ctxFor(t, 90*time.Second)
	const name = "speech-conf-delete"
	emulatortest.Endpoint(t, r, name)
	del := func() error {
		_, err := c.SageMaker.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)})
		return err
	}
	if err := del(); apiCode(err) != "ValidationException" {
		t.Fatalf("DeleteEndpoint while Creating: %v, want ValidationException", err)
	}
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)
	if _, err := c.SageMaker.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{EndpointName: aws.String(name),
		DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String("AllTraffic"), DesiredInstanceCount: aws.Int32(2)}}}); err != nil {
		t.Fatalf("UpdateEndpointWeightsAndCapacities: %v", err)
	}
	if err := del(); apiCode(err) != "ValidationException" {
		t.Fatalf("DeleteEndpoint while Updating: %v, want ValidationException", err)
	}
	if d := describe(ctx, t, c, name); d.EndpointStatus != smtypes.EndpointStatusUpdating {
		t.Fatalf("after the refused delete the endpoint is %s, want still Updating", d.EndpointStatus)
	}
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)
	if err := del(); err != nil {
		t.Fatalf("DeleteEndpoint once InService: %v", err)
	}
}
