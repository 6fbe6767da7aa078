package cloud_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// An emulator at time scale 50 compresses CloudWatch time tenfold (docs/design.md, "Compressed CloudWatch
// time"): it publishes compression 10 and a 1-s metric period, accepts the 1-s and 6-s alarms of a plan measured
// at that compression, and the plan's scaling, applied through aws-sdk-go-v2 as the local deploy applies it,
// scales out under load and back in after it, in that order, on the real wire protocols.
func TestCompressedPlanScalesOutAndInOnTheEmulator(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.TimeScale(50), emulatortest.Container(t))
	if info := e.Info(); info.CloudWatchCompression != 10 || info.MetricPeriodS != 1 || info.TimeScale != 50 {
		t.Fatalf("published identity: compression %d, metric period %g s, time scale %g; want 10, 1 s and 50", info.CloudWatchCompression, info.MetricPeriodS, info.TimeScale)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const name = "speech-compressed"
	emulatortest.Endpoint(t, e, name, emulatortest.Instances(1), emulatortest.InService())

	// The valid fixture's plan as measured at compression 10, its thresholds set for espeak on this machine: a
	// target of 2 in flight, scale-in below 0.5 over 3 × 1 s, fleet 1 to 2.
	p, err := capacity.LoadPlan(filepath.Join("..", "testdata", "plans", "valid", capacity.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	p.Fingerprint.CloudWatchCompression, p.Inputs.MetricPeriodS = 10, 1
	d := &p.Derived
	d.MinInstances, d.MaxInstances, d.TargetValue, d.ScaleInThreshold = 1, 2, 2, 0.5
	d.ScaleInPeriodS, d.ScaleInEvaluationPeriods, d.ScaleOutCooldownS, d.ScaleInCooldownS, d.TPlanS = 1, 3, 3, 30, 10
	spec := capacity.ScalingSpecFor(name, "AllTraffic", p)
	c := e.Clients
	if err := cloud.ApplyScaling(ctx, c.AutoScaling, c.CloudWatch, spec); err != nil {
		t.Fatalf("ApplyScaling of a compressed plan: %v", err)
	}
	alarms, err := c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range alarms.MetricAlarms {
		if p := aws.ToInt32(a.Period); p != 1 && p != 6 {
			t.Errorf("alarm %s has period %d s; want the 1-s metric period or AWS's 60 s ÷ 10", aws.ToString(a.AlarmName), p)
		}
	}

	desired := func() int32 {
		out, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		if err != nil || len(out.ProductionVariants) == 0 {
			return -1
		}
		return aws.ToInt32(out.ProductionVariants[0].DesiredInstanceCount)
	}
	waitFor := func(what string, want int32) {
		t.Helper()
		for desired() != want {
			if ctx.Err() != nil {
				t.Fatalf("%s: the desired instance count never reached %d", what, want)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	// Load: six closed-loop workers keep about six requests in flight, above the target of 2.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		rt := e.NewClients().Runtime
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				rt.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name), ContentType: aws.String("application/json"),
					Body: []byte(`{"text":"Load for a compressed alarm, long enough to keep the instance busy for a while."}`)})
			}
		}()
	}
	waitFor("under load", 2)
	close(stop)
	wg.Wait()
	waitFor("after the load", 1)

	acts, err := c.AutoScaling.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{
		ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String("endpoint/" + name + "/variant/AllTraffic"),
		ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount,
	})
	if err != nil {
		t.Fatal(err)
	}
	// Newest first: the scale-in, then the scale-out it followed.
	if len(acts.ScalingActivities) < 2 {
		t.Fatalf("scaling activities %d; want a scale-out and a scale-in", len(acts.ScalingActivities))
	}
	in, out := acts.ScalingActivities[0], acts.ScalingActivities[1]
	if !strings.Contains(aws.ToString(in.Description), "count to 1.") || !strings.Contains(aws.ToString(out.Description), "count to 2.") {
		t.Errorf("activities, newest first: %q, %q; want the scale-in to 1 after the scale-out to 2", aws.ToString(in.Description), aws.ToString(out.Description))
	}
}
