package cloud_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// TestWaitInServiceUnderThrottling: speech-infra deploy's wait (cloud.WaitInService) on an
// emulator whose DescribeEndpoint bucket holds one call a second, with a client that does not retry, so every
// throttle reaches the waiter: it backs off and asks again instead of failing, and returns once the endpoint is
// InService.
func TestWaitInServiceUnderThrottling(t *testing.T) {
	e := emulatortest.Start(t, emulatortest.Container(t), emulatortest.Throttle(t, "DescribeEndpoint=1/1"))
	emulatortest.Endpoint(t, e, "speech-wait")
	sm := sagemaker.NewFromConfig(cloud.LocalConfig(e.URL, e.Key), func(o *sagemaker.Options) { o.Retryer = aws.NopRetryer{} })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	// Drain the bucket so that the wait starts throttled.
	throttled := 0
	for range 5 {
		if _, err := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-wait")}); cloud.IsThrottled(err) {
			throttled++
		}
	}
	if throttled == 0 {
		t.Fatal("5 DescribeEndpoint calls at once were never throttled: the case proves nothing")
	}
	d, err := cloud.WaitInService(ctx, sm, "speech-wait", cloud.WaitOptions{MinDelay: 100 * time.Millisecond, MaxDelay: 2 * time.Second, Timeout: 80 * time.Second})
	if err != nil || d == nil || d.EndpointStatus != "InService" {
		t.Fatalf("WaitInService under throttling: %v, %v", d, err)
	}
}
