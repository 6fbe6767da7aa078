package emulator_test

import (
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// TestCustomAttributesPassedBack: the container names its instance in every response
// (X-Amzn-SageMaker-Custom-Attributes: instance-id=…, container/README.md) and SageMaker Runtime passes that
// header back to the caller (API reference, InvokeEndpoint and InvokeEndpointWithResponseStream, Response
// Syntax: CustomAttributes, "Provides additional information in the response about the inference returned
// by a model hosted at an Amazon SageMaker endpoint"). tts-bench ttotal sees a new instance serve by it.
func TestCustomAttributesPassedBack(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	const name = "speech-attrs"
	emulatortest.Endpoint(t, r, name, emulatortest.InService())

	out, err := r.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String(name), ContentType: aws.String("application/json"), Body: []byte(`{"text":"Name yourself.","format":"wav"}`),
	})
	if err != nil {
		t.Fatal(err)
	}
	id, ok := strings.CutPrefix(aws.ToString(out.CustomAttributes), "instance-id=")
	if !ok || id == "" {
		t.Fatalf("InvokeEndpoint: CustomAttributes %q, want instance-id=<the instance>", aws.ToString(out.CustomAttributes))
	}
	streams, err := r.Logs.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String(emulator.LogGroup(name))})
	if err != nil {
		t.Fatal(err)
	}
	if len(streams.LogStreams) != 1 || aws.ToString(streams.LogStreams[0].LogStreamName) != "AllTraffic/"+id {
		t.Errorf("instance-id=%s, but the endpoint's log streams are %+v: want the one instance's AllTraffic/%s", id, streams.LogStreams, id)
	}

	sout, err := r.Runtime.InvokeEndpointWithResponseStream(ctx, streamBody(name, "Name yourself, streaming."))
	if err != nil {
		t.Fatal(err)
	}
	s := sout.GetStream()
	for range s.Events() {
	}
	if err := s.Err(); err != nil && err != io.EOF {
		t.Fatal(err)
	}
	s.Close()
	if got := aws.ToString(sout.CustomAttributes); got != "instance-id="+id {
		t.Errorf("InvokeEndpointWithResponseStream: CustomAttributes %q, want instance-id=%s", got, id)
	}
}
