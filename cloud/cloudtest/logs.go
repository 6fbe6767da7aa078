package cloudtest

import (
	"context"

	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"

	"github.com/speech-infra/speech-infra/cloud"
)

// Logs is a double of the CloudWatch Logs client: cloud.LogReadAPI.
type Logs struct {
	// DescribeLogStreamsFn answers DescribeLogStreams.
	DescribeLogStreamsFn func(ctx context.Context, in *cloudwatchlogs.DescribeLogStreamsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error)
	// GetLogEventsFn answers GetLogEvents.
	GetLogEventsFn func(ctx context.Context, in *cloudwatchlogs.GetLogEventsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetLogEventsOutput, error)
}

// DescribeLogStreams calls DescribeLogStreamsFn.
func (d *Logs) DescribeLogStreams(ctx context.Context, in *cloudwatchlogs.DescribeLogStreamsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error) {
	if d.DescribeLogStreamsFn == nil {
		return nil, unexpected("Logs.DescribeLogStreams")
	}
	return d.DescribeLogStreamsFn(ctx, in, optFns...)
}

// GetLogEvents calls GetLogEventsFn.
func (d *Logs) GetLogEvents(ctx context.Context, in *cloudwatchlogs.GetLogEventsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetLogEventsOutput, error) {
	if d.GetLogEventsFn == nil {
		return nil, unexpected("Logs.GetLogEvents")
	}
	return d.GetLogEventsFn(ctx, in, optFns...)
}

// The doubles stand in for every client of cloud.Clients.
var (
	_ cloud.LogReadAPI     = (*Logs)(nil)
	_ cloud.SageMakerAPI   = (*SageMaker)(nil)
	_ cloud.AutoScalingAPI = (*AutoScaling)(nil)
	_ cloud.CloudWatchAPI  = (*CloudWatch)(nil)
)
