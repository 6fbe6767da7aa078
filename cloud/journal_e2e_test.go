package cloud_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// Against the emulator with real container instances: Freeze pins a two-instance variant with a target
// (1–3, scheduled scaling suspended by hand: a dynamic suspension is another measurement's pin, which Freeze
// refuses) to one instance with every kind of scaling suspended; the journal is left
// as a kill -9 would leave it; Restore (in a "new process": only the journal file is shared) puts back exactly
// two instances, the bounds and the hand-made suspension, and deletes the journal. ReadConcurrency reads the
// router's ConcurrentRequestsPerModel while streams are open.
func TestFreezeRestoreEmulator(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t))
	const name = "speech-freeze"
	emulatortest.Endpoint(t, e, name, emulatortest.Instances(2), emulatortest.InService())
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	before := cloud.Suspension{Scheduled: true}
	if _, err := e.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
		ServiceNamespace: "sagemaker", ResourceId: aws.String("endpoint/" + name + "/variant/AllTraffic"), ScalableDimension: "sagemaker:variant:DesiredInstanceCount",
		MinCapacity: aws.Int32(1), MaxCapacity: aws.Int32(3), SuspendedState: &aastypes.SuspendedState{ScheduledScalingSuspended: aws.Bool(true)},
	}); err != nil {
		t.Fatal(err)
	}
	cl := cloud.FreezeClients{SageMaker: e.SageMaker, AutoScaling: e.AutoScaling}
	wait := cloud.WaitOptions{Timeout: 90 * time.Second, MinDelay: 100 * time.Millisecond, MaxDelay: 500 * time.Millisecond}
	dir := t.TempDir()
	fr, err := cloud.Freeze(ctx, cl, cloud.FreezeOptions{JournalDir: dir, Endpoint: name, Variant: "AllTraffic", Instances: 1, RunID: "e2e", Wait: wait})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
	if err != nil {
		t.Fatal(err)
	}
	if v := d.ProductionVariants[0]; aws.ToInt32(v.DesiredInstanceCount) != 1 || aws.ToInt32(v.CurrentInstanceCount) != 1 || d.EndpointStatus != "InService" {
		t.Fatalf("after freeze: %s, desired %d, current %d", d.EndpointStatus, aws.ToInt32(v.DesiredInstanceCount), aws.ToInt32(v.CurrentInstanceCount))
	}
	tg := describeTarget(ctx, t, e, name)
	if aws.ToInt32(tg.MinCapacity) != 1 || aws.ToInt32(tg.MaxCapacity) != 1 || !aws.ToBool(tg.SuspendedState.DynamicScalingInSuspended) ||
		!aws.ToBool(tg.SuspendedState.DynamicScalingOutSuspended) || !aws.ToBool(tg.SuspendedState.ScheduledScalingSuspended) {
		t.Fatalf("target after freeze: %+v %+v", tg, tg.SuspendedState)
	}

	// Hold three streams open on the pinned instance and read the metric the router publishes.
	start := time.Now().Add(-time.Minute)
	var wg sync.WaitGroup
	for range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rt := e.NewClients().Runtime
			_, err := bench.InvokeStream(ctx, rt, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
				EndpointName: aws.String(name), ContentType: aws.String("application/json"),
				Body: []byte(`{"text":"A sentence long enough to keep the instance busy for a little while, and then some more words."}`),
			}, bench.StreamOptions{})
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	var peak float64
	deadline := time.Now().Add(10 * time.Second)
	for peak == 0 && time.Now().Before(deadline) {
		pts, err := cloud.ReadConcurrency(ctx, e.CloudWatch, name, "AllTraffic", start, time.Now().Add(time.Minute))
		if err != nil {
			t.Fatal(err)
		}
		peak, _ = cloud.MaxValue(pts)
		time.Sleep(500 * time.Millisecond)
	}
	if peak < 1 {
		t.Fatalf("ConcurrentRequestsPerModel maximum = %g while streams were open, want at least 1", peak)
	}

	// kill -9: nothing restores; a later process finds the journal.
	if _, err := os.Stat(fr.Path); err != nil {
		t.Fatal(err)
	}
	res, err := cloud.Restore(ctx, cl, fr.Path, wait)
	if err != nil {
		t.Fatal(err)
	}
	if !res.JournalRemoved {
		t.Fatalf("restore = %+v", res)
	}
	if _, err := os.Stat(fr.Path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("journal after restore: %v", err)
	}
	d, err = cloud.WaitInService(ctx, e.SageMaker, name, wait)
	if err != nil {
		t.Fatal(err)
	}
	if v := d.ProductionVariants[0]; aws.ToInt32(v.DesiredInstanceCount) != 2 {
		t.Fatalf("desired after restore = %d, want 2", aws.ToInt32(v.DesiredInstanceCount))
	}
	tg = describeTarget(ctx, t, e, name)
	got := cloud.Suspension{DynamicIn: aws.ToBool(tg.SuspendedState.DynamicScalingInSuspended), DynamicOut: aws.ToBool(tg.SuspendedState.DynamicScalingOutSuspended), Scheduled: aws.ToBool(tg.SuspendedState.ScheduledScalingSuspended)}
	if aws.ToInt32(tg.MinCapacity) != 1 || aws.ToInt32(tg.MaxCapacity) != 3 || got != before {
		t.Fatalf("target after restore: min %d max %d suspended %s; want 1, 3, %s", aws.ToInt32(tg.MinCapacity), aws.ToInt32(tg.MaxCapacity), got, before)
	}
}

func describeTarget(ctx context.Context, t *testing.T, e *emulatortest.Emulator, name string) aastypes.ScalableTarget {
	t.Helper()
	out, err := e.AutoScaling.DescribeScalableTargets(ctx, &applicationautoscaling.DescribeScalableTargetsInput{ServiceNamespace: "sagemaker", ResourceIds: []string{"endpoint/" + name + "/variant/AllTraffic"}})
	if err != nil || len(out.ScalableTargets) != 1 {
		t.Fatalf("DescribeScalableTargets = %v, %v", out, err)
	}
	return out.ScalableTargets[0]
}
