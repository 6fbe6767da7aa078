package cloud

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/bench"
)

// SageMakerAPI is the part of the SageMaker client the tts-bench commands use: describing, pinning and
// marking an endpoint (Freeze, Restore, the marker) and reading what it runs (Drift, DescribeDeployed).
type SageMakerAPI interface {
	EndpointAPI
	FreezeEndpointAPI
	ContainerEnvAPI
}

// AutoScalingAPI is the part of the Application Auto Scaling client the tts-bench commands use.
type AutoScalingAPI interface {
	FreezeScalingAPI
	ScalingReadAPI
}

// CloudWatchAPI is the part of the CloudWatch client the tts-bench commands use: alarms (Drift, Validate)
// and metric data (ReadConcurrency).
type CloudWatchAPI interface {
	AlarmReadAPI
	MetricReadAPI
}

// LogReadAPI is the part of the CloudWatch Logs client that lists an endpoint's log streams and reads one.
type LogReadAPI interface {
	DescribeLogStreams(ctx context.Context, in *cloudwatchlogs.DescribeLogStreamsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error)
	GetLogEvents(ctx context.Context, in *cloudwatchlogs.GetLogEventsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetLogEventsOutput, error)
}

// Clients are the clients a tts-bench command works through, each behind the interface of what it uses, so
// a test hands in cloudtest doubles where the real clients would reach AWS (karpenter's fake cloud provider,
// cli/cli's injected client factory). NewClients makes the SDK's.
type Clients struct {
	// SageMaker describes, pins and tags the endpoint.
	SageMaker SageMakerAPI
	// AutoScaling reads and registers the variant's scalable target.
	AutoScaling AutoScalingAPI
	// CloudWatch reads alarms and metric data.
	CloudWatch CloudWatchAPI
	// Logs reads the endpoint's log streams.
	Logs LogReadAPI
	// Runtime returns a new SageMaker Runtime client with optFns (e.g. bench.NoRetry). A measurement takes
	// one per worker: a client's event-stream decoder races when several streams are open on it
	// (aws/smithy-go#714).
	Runtime func(optFns ...func(*sagemakerruntime.Options)) bench.StreamInvoker
}

// NewClients makes the SDK clients for cfg (AWS, or the emulator's LocalConfig). It is the client factory
// the commands' options default to.
func NewClients(cfg aws.Config) Clients {
	return Clients{
		SageMaker:   sagemaker.NewFromConfig(cfg),
		AutoScaling: applicationautoscaling.NewFromConfig(cfg),
		CloudWatch:  cloudwatch.NewFromConfig(cfg),
		Logs:        cloudwatchlogs.NewFromConfig(cfg),
		Runtime: func(optFns ...func(*sagemakerruntime.Options)) bench.StreamInvoker {
			return sagemakerruntime.NewFromConfig(cfg, optFns...)
		},
	}
}

// Freeze returns the clients Freeze, Restore and Thaw work through.
func (c Clients) Freeze() FreezeClients {
	return FreezeClients{SageMaker: c.SageMaker, AutoScaling: c.AutoScaling}
}

// Drift returns the clients Drift works through.
func (c Clients) Drift() DriftClients {
	return DriftClients{SageMaker: c.SageMaker, AutoScaling: c.AutoScaling, CloudWatch: c.CloudWatch}
}

// Validate returns the clients ValidateScaling works through.
func (c Clients) Validate() ValidateClients {
	return ValidateClients{AutoScaling: c.AutoScaling, CloudWatch: c.CloudWatch}
}

// StreamTransport is the sagemaker-stream transport to endpoint over one Runtime client per worker, each
// made with optFns.
func (c Clients) StreamTransport(endpoint string, optFns ...func(*sagemakerruntime.Options)) *bench.SageMakerStream {
	return &bench.SageMakerStream{Endpoint: endpoint, NewClient: func() bench.StreamInvoker { return c.Runtime(optFns...) }}
}

// EndpointDescribeAPI is the part of the SageMaker client ReadEndpoint uses.
type EndpointDescribeAPI interface {
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
}

// EndpointState is what a measurement reads of an endpoint and one of its variants.
type EndpointState struct {
	// Output is the DescribeEndpoint answer, for DescribeDeployed.
	Output *sagemaker.DescribeEndpointOutput
	// Status is the endpoint status, e.g. "InService"; InService says it is that.
	Status    string
	InService bool
	// HasVariant says the endpoint has the variant; HasCount that the variant reports its instance count,
	// Instances.
	HasVariant, HasCount bool
	Instances            int32
	// DesiredInstances is the variant's desired instance count (0 when it reports none).
	DesiredInstances int32
	// VariantStatus is the newest (the last) of the variant's statuses, e.g. "Creating", or "" when it lists
	// none; ActivatingTraffic says the list holds ActivatingTraffic (a new instance is about to take traffic).
	VariantStatus     string
	ActivatingTraffic bool
	// Failed says the endpoint is Failed, FailureReason why.
	Failed        bool
	FailureReason string
}

// ReadEndpoint describes endpoint (with optFns, e.g. PollOnceSageMaker for a poller) and reads variant out
// of the answer. The error is the SDK's, so IsNotFound and IsThrottled apply to it.
func ReadEndpoint(ctx context.Context, api EndpointDescribeAPI, endpoint, variant string, optFns ...func(*sagemaker.Options)) (EndpointState, error) {
	d, err := api.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(endpoint)}, optFns...)
	if err != nil {
		return EndpointState{}, err
	}
	s := EndpointState{
		Output: d, Status: string(d.EndpointStatus), InService: d.EndpointStatus == smtypes.EndpointStatusInService,
		Failed: d.EndpointStatus == smtypes.EndpointStatusFailed, FailureReason: aws.ToString(d.FailureReason),
	}
	for _, v := range d.ProductionVariants {
		if aws.ToString(v.VariantName) != variant {
			continue
		}
		s.HasVariant = true
		if v.CurrentInstanceCount != nil {
			s.HasCount, s.Instances = true, *v.CurrentInstanceCount
		}
		s.DesiredInstances = aws.ToInt32(v.DesiredInstanceCount)
		for _, st := range v.VariantStatus {
			s.VariantStatus = string(st.Status)
			if st.Status == smtypes.VariantStatusActivatingTraffic {
				s.ActivatingTraffic = true
			}
		}
		break
	}
	return s, nil
}

// InstanceCountAPI is the part of the SageMaker client SetInstanceCount uses.
type InstanceCountAPI interface {
	UpdateEndpointWeightsAndCapacities(ctx context.Context, in *sagemaker.UpdateEndpointWeightsAndCapacitiesInput, optFns ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointWeightsAndCapacitiesOutput, error)
}

// SetInstanceCount sets the desired instance count of the endpoint's variant to n
// (UpdateEndpointWeightsAndCapacities); it returns once SageMaker has accepted the change, not when the
// instances serve.
func SetInstanceCount(ctx context.Context, api InstanceCountAPI, endpoint, variant string, n int32) error {
	_, err := api.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{
		EndpointName:                aws.String(endpoint),
		DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String(variant), DesiredInstanceCount: aws.Int32(n)}},
	})
	return err
}

// EndpointLogGroup is the CloudWatch Logs group SageMaker writes an endpoint's container output to.
func EndpointLogGroup(endpoint string) string { return "/aws/sagemaker/Endpoints/" + endpoint }

// LogStreams lists the names of the streams in group that start with prefix (every page). A group that does
// not exist (yet: SageMaker creates it with the first instance's output) holds none.
func LogStreams(ctx context.Context, api LogReadAPI, group, prefix string) (map[string]bool, error) {
	out := map[string]bool{}
	p := cloudwatchlogs.NewDescribeLogStreamsPaginator(api, &cloudwatchlogs.DescribeLogStreamsInput{
		LogGroupName: aws.String(group), LogStreamNamePrefix: aws.String(prefix),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if strings.Contains(err.Error(), "ResourceNotFoundException") {
				return out, nil
			}
			return nil, fmt.Errorf("list the log streams of %s: %w", group, err)
		}
		for _, s := range page.LogStreams {
			out[aws.ToString(s.LogStreamName)] = true
		}
	}
	return out, nil
}

// LogEvent is one line of a log stream.
type LogEvent struct {
	// Time is the event's timestamp (UTC, millisecond resolution).
	Time time.Time
	// Message is the line.
	Message string
}

// LogPage is one page of a log stream read forward.
type LogPage struct {
	// Events are the page's lines, oldest first.
	Events []LogEvent
	// Next is the token that reads on after the page (nil when the service gave none). A page read at the
	// end of the stream is empty and returns the token it was given.
	Next *string
}

// ReadLogPage reads one page of stream in group from its head, or on from token, in a single attempt
// (PollOnceLogs: a poller backs off itself, so that the time of the answer is when it was read).
func ReadLogPage(ctx context.Context, api LogReadAPI, group, stream string, token *string) (LogPage, error) {
	out, err := api.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{
		LogGroupName: aws.String(group), LogStreamName: aws.String(stream), StartFromHead: aws.Bool(true), NextToken: token,
	}, PollOnceLogs)
	if err != nil {
		return LogPage{}, fmt.Errorf("read the log stream %s: %w", stream, err)
	}
	p := LogPage{Next: out.NextForwardToken, Events: make([]LogEvent, 0, len(out.Events))}
	for _, e := range out.Events {
		p.Events = append(p.Events, LogEvent{Time: time.UnixMilli(aws.ToInt64(e.Timestamp)).UTC(), Message: aws.ToString(e.Message)})
	}
	return p, nil
}
