package bench

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
)

// AttributesInvoker is a StreamInvoker that keeps the custom attributes of the last stream it opened: the
// container's X-Amzn-SageMaker-Custom-Attributes, which SageMaker passes back as the output's
// CustomAttributes (tts-bench ttotal reads instance-id=… from them). One worker sends one request at a time,
// so one AttributesInvoker serves one worker.
type AttributesInvoker struct {
	// Inner opens the streams.
	Inner StreamInvoker
	// Last is the custom attributes of the last stream opened; a call that fails leaves it as it was, so the
	// caller clears it before a request to tell a failed call from an earlier answer.
	Last string
}

// InvokeEndpointWithResponseStream calls Inner and keeps the answer's custom attributes in Last.
func (c *AttributesInvoker) InvokeEndpointWithResponseStream(ctx context.Context, in *sagemakerruntime.InvokeEndpointWithResponseStreamInput, optFns ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error) {
	out, err := c.Inner.InvokeEndpointWithResponseStream(ctx, in, optFns...)
	if err == nil && out != nil {
		c.Last = aws.ToString(out.CustomAttributes)
	}
	return out, err
}
