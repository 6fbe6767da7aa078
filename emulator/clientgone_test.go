package emulator_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// TestConformanceClientGoneIsNeither4XXNor5XX: SageMaker counts Invocation5XXErrors and Invocation4XXErrors by
// the model's answer (https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html:
// Invocation5XXErrors is "The number of InvokeEndpoint requests where the model returned a 5xx HTTP response
// code. For each 5xx response, 1 is sent; otherwise, 0 is sent."). A request the queue gate sheds (the model
// answers 503) is a 5XX; a stream whose client hangs up mid-stream is an invocation, but neither. Before the
// emulator followed this, the hang-up was recorded as a 500 (or, mid-write, a 499: a 4XX), and a load
// generator's cancelled requests raised the 5XX alarm.
func TestConformanceClientGoneIsNeither4XXNor5XX(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-hangup"
	// One admitted request at most; each segment (one per sentence) computes for 700 ms.
	emulatortest.Endpoint(t, r, name, emulatortest.InService(), emulatortest.Env(map[string]string{
		"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "700", "QUEUE_MAX_DEPTH": "1",
	}))

	// A stream that holds the only place: its first part has arrived, the rest takes seconds.
	holdCtx, hangUp := context.WithCancel(ctx)
	defer hangUp()
	out, err := r.Runtime.InvokeEndpointWithResponseStream(holdCtx, streamBody(name, strings.Repeat("Hold the only place. ", 8)))
	if err != nil {
		t.Fatalf("the holding stream was refused: %v", err)
	}
	s := out.GetStream()
	defer s.Close()
	select {
	case _, ok := <-s.Events():
		if !ok {
			t.Fatalf("the holding stream ended before its first part: %v", s.Err())
		}
	case <-ctx.Done():
		t.Fatal("the holding stream sent nothing")
	}
	// The model answers 503 to a second request: one 5XX.
	_, err = bench.InvokeStream(ctx, r.Runtime, streamBody(name, "Shed me."), bench.StreamOptions{})
	var me *bench.ModelError
	if !errors.As(err, &me) || me.OriginalStatusCode != 503 {
		t.Fatalf("a second request while the place is held: %v, want ModelError 503", err)
	}
	// The holding stream's client hangs up mid-stream.
	hangUp()

	dims := []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(name)}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}
	sum := func(metric string) float64 {
		now := time.Now()
		st, err := r.CloudWatch.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
			Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String(metric), Dimensions: dims,
			StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now.Add(time.Minute)), Period: aws.Int32(3600),
			Statistics: []cwtypes.Statistic{cwtypes.StatisticSum},
		})
		if err != nil {
			t.Fatalf("GetMetricStatistics(%s): %v", metric, err)
		}
		total := 0.0
		for _, d := range st.Datapoints {
			total += aws.ToFloat64(d.Sum)
		}
		return total
	}
	// Both invocations are recorded once the emulator has seen the hang-up (bounded by ctx).
	for sum("Invocations") < 2 {
		select {
		case <-ctx.Done():
			t.Fatalf("Invocations is %g: the hung-up stream was never recorded", sum("Invocations"))
		case <-time.After(100 * time.Millisecond):
		}
	}
	if inv, five, four := sum("Invocations"), sum("Invocation5XXErrors"), sum("Invocation4XXErrors"); inv != 2 || five != 1 || four != 0 {
		t.Fatalf("Invocations %g, Invocation5XXErrors %g, Invocation4XXErrors %g: want 2, 1 (the shed request) and 0 (a hang-up is neither)", inv, five, four)
	}
}
