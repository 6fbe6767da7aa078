package emulator_test

import (
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// TestConformanceThrottling: the control plane has per-operation token buckets, on by default
// (emulator.DefaultRates), and an excess call gets a throttling error the SDKs recognise and retry: SageMaker's
// ThrottlingException, CloudWatch's Throttling, HTTP 400 "Rate exceeded": 400 DescribeEndpoint calls in 0.5 s
// are not all answered.
func TestConformanceThrottling(t *testing.T) {
	// The defaults as the emulator starts without options (the test harness turns throttling off otherwise).
	def, err := emulator.ParseThrottle("")
	if err != nil {
		t.Fatal(err)
	}
	if r := def.Rates["DescribeEndpoint"]; r != (emulator.Rate{PerSecond: 5, Burst: 10}) || def.Rates["DescribeLogStreams"].PerSecond != 25 {
		t.Fatalf("default rates %v", def)
	}
	r := emulatortest.Start(t, func(o *emulator.Options) { o.Throttle = def })
	emulatortest.Endpoint(t, r, "speech-throttle")

	// 40 calls at once: the burst of 10 passes, most of the rest are throttled.
	answered, throttledN := 0, 0
	start := time.Now()
	for range 40 {
		status, code, msg := awsJSONCall(t, r, "SageMaker.DescribeEndpoint", "sagemaker", `{"EndpointName":"speech-throttle"}`)
		switch {
		case status == 200:
			answered++
		case status == 400 && code == "ThrottlingException" && msg == "Rate exceeded":
			throttledN++
		default:
			t.Fatalf("DescribeEndpoint: %d %s %s", status, code, msg)
		}
	}
	elapsed := time.Since(start)
	// At most the burst plus what refilled meanwhile.
	if most := 10 + int(elapsed.Seconds()*5) + 1; answered > most || throttledN == 0 {
		t.Errorf("40 calls in %s: %d answered, %d throttled; want at most %d answered", elapsed, answered, throttledN, most)
	}

	// The SDK sees a throttling error (retry.IsErrorThrottles) and, with its standard retryer, gets through.
	ctx := ctxFor(t, 30*time.Second)
	once := func(o *sagemaker.Options) { o.Retryer = aws.NopRetryer{} }
	var sawThrottle bool
	for range 20 {
		_, err := r.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-throttle")}, once)
		if err != nil {
			if retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err) != aws.TrueTernary {
				t.Fatalf("a throttled DescribeEndpoint is not a throttling error to the SDK: %v", err)
			}
			sawThrottle = true
		}
	}
	if !sawThrottle {
		t.Errorf("20 DescribeEndpoint calls without retries were never throttled")
	}
	if _, err := r.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-throttle")}); err != nil {
		t.Errorf("DescribeEndpoint with the SDK's retries: %v", err)
	}

	// CloudWatch over rpcv2Cbor answers Throttling; another operation's bucket is untouched meanwhile.
	cwOnce := func(o *cloudwatch.Options) { o.Retryer = aws.NopRetryer{} }
	var cwErr error
	for range 30 {
		if _, err := r.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{}, cwOnce); err != nil {
			cwErr = err
			break
		}
	}
	if apiCode(cwErr) != "Throttling" {
		t.Errorf("30 DescribeAlarms: %v, want Throttling", cwErr)
	}
	if _, err := r.CloudWatch.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{StartTime: aws.Time(time.Now().Add(-time.Minute)), EndTime: aws.Time(time.Now()),
		MetricDataQueries: nil}, cwOnce); err != nil && apiCode(err) == "Throttling" {
		t.Errorf("GetMetricData throttled by DescribeAlarms' bucket: %v", err)
	}

	// A configured bucket: SPEECH_EMULATOR_THROTTLE syntax.
	low, err := emulator.ParseThrottle("DescribeEndpoint=1/1")
	if err != nil || low.Rates["DescribeEndpoint"] != (emulator.Rate{PerSecond: 1, Burst: 1}) || low.Rates["ListEndpoints"] != def.Rates["ListEndpoints"] {
		t.Errorf("ParseThrottle(DescribeEndpoint=1/1) = %v, %v", low, err)
	}
	for _, bad := range []string{"DescribeEndpoint", "DescribeEndpoint=0", "DescribeEndpoint=1/0", "Bogus=1"} {
		if _, err := emulator.ParseThrottle(bad); err == nil {
			t.Errorf("ParseThrottle(%q) accepted", bad)
		}
	}
	if off, err := emulator.ParseThrottle("off"); err != nil || !off.Off {
		t.Errorf("ParseThrottle(off) = %v, %v", off, err)
	}
}
