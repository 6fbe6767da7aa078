package emulator_test

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// stream invokes the endpoint with InvokeEndpointWithResponseStream through bench.InvokeStream, the reader
// every command shares, and returns the whole payload.
func stream(ctx context.Context, c emulatortest.Clients, name, text string) ([]byte, error) {
	res, err := bench.InvokeStream(ctx, c.Runtime, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String(name), ContentType: aws.String("application/json"),
		Body: []byte(fmt.Sprintf(`{"text":%q,"format":"wav"}`, text)),
	}, bench.StreamOptions{Keep: true})
	return res.Payload, err
}

// checkWAV fails unless b is a RIFF/WAVE file with a fmt chunk and audio samples after the header.
func checkWAV(t *testing.T, b []byte) {
	t.Helper()
	if len(b) < 44 || string(b[0:4]) != "RIFF" || string(b[8:12]) != "WAVE" || string(b[12:16]) != "fmt " {
		t.Fatalf("not a WAV file: % x", b[:min(len(b), 44)])
	}
	channels, rate, bits := binary.LittleEndian.Uint16(b[22:24]), binary.LittleEndian.Uint32(b[24:28]), binary.LittleEndian.Uint16(b[34:36])
	if channels != 1 || rate == 0 || bits != 16 {
		t.Errorf("WAV format: %d channels, %d Hz, %d bits; want mono 16-bit", channels, rate, bits)
	}
	i := strings.Index(string(b[:min(len(b), 256)]), "data")
	if i < 0 {
		t.Fatalf("WAV has no data chunk")
	}
	if samples := (len(b) - i - 8) / 2; samples < int(rate)/10 {
		t.Errorf("WAV holds %d samples, want at least 0.1 s of speech", samples)
	}
}

func describe(ctx context.Context, t *testing.T, c emulatortest.Clients, name string) *sagemaker.DescribeEndpointOutput {
	t.Helper()
	d, err := c.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
	if err != nil {
		t.Fatalf("DescribeEndpoint: %v", err)
	}
	return d
}

// load keeps `workers` closed-loop streams in flight until stop is closed and returns a function that waits
// for the workers and reports the outcomes. Each worker streams through SDK clients of its own: streams that
// share a client share its event-stream decoder, which races (aws/smithy-go#714).
func load(ctx context.Context, r *emulatortest.Emulator, name string, workers int, stop <-chan struct{}) func() (ok, failed int, first error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var nOK, nFail int
	var firstErr error
	for range workers {
		wg.Add(1)
		c := r.NewClients()
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := stream(ctx, c, name, "The quick brown fox jumps over the lazy dog, again and again, until the fleet grows.")
				mu.Lock()
				if err != nil {
					if nFail == 0 {
						firstErr = err
					}
					nFail++
				} else {
					nOK++
				}
				mu.Unlock()
			}
		}()
	}
	return func() (int, int, error) { wg.Wait(); return nOK, nFail, firstErr }
}

func TestEndToEndEspeak(t *testing.T) {
	dir := t.TempDir()
	r := emulatortest.Start(t, emulatortest.StateDir(dir), emulatortest.Container(t))
	c := r.Clients
	ctx := ctxFor(t, 4*time.Minute)
	const name = "speech-espeak-ng"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1))
	if d := describe(ctx, t, c, name); d.EndpointStatus != smtypes.EndpointStatusCreating && d.EndpointStatus != smtypes.EndpointStatusInService {
		t.Fatalf("new endpoint status = %s", d.EndpointStatus)
	}
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)

	// Speech streams as a valid WAV through the event stream; the buffered call answers too.
	audio, err := stream(ctx, c, name, "Hello from the local emulator.")
	if err != nil {
		t.Fatalf("InvokeEndpointWithResponseStream: %v", err)
	}
	checkWAV(t, audio)
	// The shared reader measures a stream: WAV with the container's 44-byte header, or headerless PCM, with the
	// first audio byte after the request was sent and no later than the end.
	for format, header := range map[string]int{bench.FormatWAV: 44, bench.FormatPCM: 0} {
		res, err := bench.InvokeStream(ctx, c.Runtime, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
			EndpointName: aws.String(name), ContentType: aws.String("application/json"),
			Body: []byte(`{"text":"Measured by the shared reader.","format":"` + format + `"}`),
		}, bench.StreamOptions{PCMSampleRate: 22050})
		if err != nil || res.Format != format || res.HeaderBytes != header || res.Samples < 2205 || res.Samples != res.AudioBytes/2 || res.SampleRate != 22050 {
			t.Errorf("InvokeStream(%s) = %+v, %v; want %s, a %d-byte header and at least 0.1 s of 22050 Hz samples", format, res, err, format, header)
		}
		if res.TTFAB() <= 0 || res.FirstAudio.Before(res.FirstByte) || res.End.Before(res.FirstAudio) {
			t.Errorf("InvokeStream(%s): sent %v, first byte %v, first audio %v, end %v; want them in order", format, res.Sent, res.FirstByte, res.FirstAudio, res.End)
		}
	}
	inv, err := c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: []byte(`{"text":"Buffered.","format":"wav"}`)})
	if err != nil {
		t.Fatalf("InvokeEndpoint: %v", err)
	}
	checkWAV(t, inv.Body)
	if aws.ToString(inv.InvokedProductionVariant) != "AllTraffic" {
		t.Errorf("InvokedProductionVariant = %q", aws.ToString(inv.InvokedProductionVariant))
	}
	// A request the container refuses becomes a ModelError, buffered or streamed (the container refused
	// before streaming; conformance_runtime_test.go cites the API reference).
	var modelErr *rttypes.ModelError
	if _, err := c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: []byte(`{"voice":"x"}`)}); !errors.As(err, &modelErr) || aws.ToInt32(modelErr.OriginalStatusCode) != 400 {
		t.Errorf("InvokeEndpoint(no text) error = %v, want ModelError with original status 400", err)
	}
	var streamErr *rttypes.ModelError
	if _, err := stream(ctx, c, name, ""); !errors.As(err, &streamErr) || aws.ToInt32(streamErr.OriginalStatusCode) != 400 {
		t.Errorf("stream(empty text) error = %v, want ModelError with original status 400", err)
	}

	// Desired count 1 → 2: Updating, then InService with the second instance's stage lines in its own stream.
	if _, err := c.SageMaker.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{
		EndpointName: aws.String(name), DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String("AllTraffic"), DesiredInstanceCount: aws.Int32(2)}},
	}); err != nil {
		t.Fatalf("UpdateEndpointWeightsAndCapacities: %v", err)
	}
	if d := describe(ctx, t, c, name); d.EndpointStatus != smtypes.EndpointStatusUpdating {
		t.Errorf("status right after the capacity change = %s, want Updating", d.EndpointStatus)
	}
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)
	if d := describe(ctx, t, c, name); aws.ToInt32(d.ProductionVariants[0].CurrentInstanceCount) != 2 {
		t.Fatalf("CurrentInstanceCount = %d, want 2", aws.ToInt32(d.ProductionVariants[0].CurrentInstanceCount))
	}
	group := "/aws/sagemaker/Endpoints/" + name
	streams, err := c.Logs.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String(group), OrderBy: "LastEventTime"})
	if err != nil || len(streams.LogStreams) != 2 {
		t.Fatalf("DescribeLogStreams = %+v, %v; want two streams", streams, err)
	}
	second := aws.ToString(streams.LogStreams[1].LogStreamName)
	if !strings.HasPrefix(second, "AllTraffic/") {
		t.Errorf("stream name %q, want AllTraffic/<instance-id>", second)
	}
	events, err := c.Logs.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{LogGroupName: aws.String(group), LogStreamName: aws.String(second), StartFromHead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("GetLogEvents: %v", err)
	}
	var stages []string
	for _, ev := range events.Events {
		if msg := aws.ToString(ev.Message); strings.HasPrefix(msg, "=== STAGE ") {
			stages = append(stages, strings.Fields(msg)[2])
		}
	}
	if len(stages) < 2 || stages[0] != "container_started" || stages[len(stages)-1] != "ready" {
		t.Errorf("stages in %s = %v, want container_started … ready", second, stages)
	}
	filtered, err := c.Logs.FilterLogEvents(ctx, &cloudwatchlogs.FilterLogEventsInput{LogGroupName: aws.String(group), LogStreamNames: []string{second}, FilterPattern: aws.String(`"=== STAGE ready"`)})
	if err != nil || len(filtered.Events) != 1 {
		t.Errorf("FilterLogEvents(ready) = %+v, %v; want one event", filtered, err)
	}

	// With all scaling suspended, load above the target changes nothing, though the alarm sees it.
	resource := "endpoint/" + name + "/variant/AllTraffic"
	register := func(suspended bool) {
		t.Helper()
		if _, err := c.AutoScaling.RegisterScalableTarget(ctx, &applicationautoscaling.RegisterScalableTargetInput{
			ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource),
			ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount,
			MinCapacity:       aws.Int32(1), MaxCapacity: aws.Int32(3),
			SuspendedState: &aastypes.SuspendedState{DynamicScalingInSuspended: aws.Bool(suspended), DynamicScalingOutSuspended: aws.Bool(suspended), ScheduledScalingSuspended: aws.Bool(suspended)},
		}); err != nil {
			t.Fatalf("RegisterScalableTarget: %v", err)
		}
	}
	register(true)
	pol, err := c.AutoScaling.PutScalingPolicy(ctx, &applicationautoscaling.PutScalingPolicyInput{
		PolicyName: aws.String(name + "-scale-out"), ServiceNamespace: aastypes.ServiceNamespaceSagemaker,
		ResourceId: aws.String(resource), ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount,
		PolicyType: aastypes.PolicyTypeTargetTrackingScaling,
		TargetTrackingScalingPolicyConfiguration: &aastypes.TargetTrackingScalingPolicyConfiguration{
			TargetValue:                   aws.Float64(1),
			PredefinedMetricSpecification: &aastypes.PredefinedMetricSpecification{PredefinedMetricType: "SageMakerVariantConcurrentRequestsPerModelHighResolution"},
			DisableScaleIn:                aws.Bool(true), ScaleOutCooldown: aws.Int32(1),
		},
	})
	if err != nil {
		t.Fatalf("PutScalingPolicy: %v", err)
	}
	alarmName := aws.ToString(pol.Alarms[0].AlarmName)
	alarmState := func() cwtypes.StateValue {
		a, err := c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{alarmName}})
		if err != nil || len(a.MetricAlarms) != 1 {
			t.Fatalf("DescribeAlarms(%s) = %+v, %v", alarmName, a, err)
		}
		return a.MetricAlarms[0].StateValue
	}
	stop := make(chan struct{})
	wait := load(ctx, r, name, 6, stop)
	eventually(t, hangBound, "the target tracking alarm in ALARM under load", func() bool { return alarmState() == cwtypes.StateValueAlarm })
	time.Sleep(3 * time.Second) // three more evaluation periods in ALARM while suspended
	if d := describe(ctx, t, c, name); d.EndpointStatus != smtypes.EndpointStatusInService || aws.ToInt32(d.ProductionVariants[0].DesiredInstanceCount) != 2 {
		t.Fatalf("while suspended: status %s, desired %d; want InService with 2", d.EndpointStatus, aws.ToInt32(d.ProductionVariants[0].DesiredInstanceCount))
	}
	acts, err := c.AutoScaling.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource)})
	if err != nil || len(acts.ScalingActivities) != 0 {
		t.Fatalf("activities while suspended = %+v, %v; want none", acts, err)
	}

	// The metric the alarm follows is readable through GetMetricData and GetMetricStatistics.
	dims := []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(name)}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}
	now := time.Now()
	md, err := c.CloudWatch.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(now.Add(-time.Minute)), EndTime: aws.Time(now),
		MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("conc"), MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ConcurrentRequestsPerModel"), Dimensions: dims},
			Period: aws.Int32(1), Stat: aws.String("Maximum")}}},
	})
	if err != nil || len(md.MetricDataResults) != 1 || len(md.MetricDataResults[0].Values) == 0 {
		t.Fatalf("GetMetricData = %+v, %v", md, err)
	}
	peak := 0.0
	for _, v := range md.MetricDataResults[0].Values {
		peak = max(peak, v)
	}
	if peak <= 1 || peak > 6 {
		t.Errorf("peak ConcurrentRequestsPerModel = %g under 6 workers on 2 instances, want in (1, 6]", peak)
	}
	stats, err := c.CloudWatch.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations"), Dimensions: dims,
		StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now.Add(time.Second)), Period: aws.Int32(3600),
		Statistics: []cwtypes.Statistic{cwtypes.StatisticSum},
	})
	if err != nil || len(stats.Datapoints) == 0 || aws.ToFloat64(stats.Datapoints[0].Sum) < 4 {
		t.Errorf("GetMetricStatistics(Invocations) = %+v, %v", stats, err)
	}

	// Unsuspended, target tracking scales out within a bounded number of periods.
	register(false)
	eventually(t, hangBound, "desired count 3 after unsuspending", func() bool {
		return aws.ToInt32(describe(ctx, t, c, name).ProductionVariants[0].DesiredInstanceCount) == 3
	})
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)
	close(stop)
	if ok, failed, first := wait(); ok == 0 || failed > 0 {
		t.Errorf("load: %d ok, %d failed (first: %v); want no failures while the fleet changes", ok, failed, first)
	}
	acts, err = c.AutoScaling.DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource)})
	if err != nil || len(acts.ScalingActivities) == 0 || !strings.Contains(aws.ToString(acts.ScalingActivities[0].Description), "3") {
		t.Fatalf("activities after scale-out = %+v, %v", acts, err)
	}

	// Restart: the same endpoint, instance count and policy come back, and it serves again.
	r.Stop()
	r2 := emulatortest.Start(t, emulatortest.StateDir(dir), emulatortest.Container(t))
	c2 := r2.Clients
	d := describe(ctx, t, c2, name)
	if d.EndpointStatus != smtypes.EndpointStatusInService || aws.ToInt32(d.ProductionVariants[0].DesiredInstanceCount) != 3 {
		t.Fatalf("after restart: status %s, desired %d; want InService with 3", d.EndpointStatus, aws.ToInt32(d.ProductionVariants[0].DesiredInstanceCount))
	}
	pols, err := c2.AutoScaling.DescribeScalingPolicies(ctx, &applicationautoscaling.DescribeScalingPoliciesInput{ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource)})
	if err != nil || len(pols.ScalingPolicies) != 1 {
		t.Fatalf("after restart DescribeScalingPolicies = %+v, %v", pols, err)
	}
	audio, err = stream(ctx, c2, name, "Back after a restart.")
	if err != nil {
		t.Fatalf("stream after restart: %v", err)
	}
	checkWAV(t, audio)
	if _, err := c2.SageMaker.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)}); err != nil {
		t.Fatalf("DeleteEndpoint: %v", err)
	}
}
