package cloud_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	logtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/cloudtest"
)

func TestLogStreamsReadsEveryPageAndAMissingGroupHoldsNone(t *testing.T) {
	var asked []string
	logs := &cloudtest.Logs{DescribeLogStreamsFn: func(_ context.Context, in *cloudwatchlogs.DescribeLogStreamsInput, _ ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error) {
		asked = append(asked, aws.ToString(in.LogGroupName)+"|"+aws.ToString(in.LogStreamNamePrefix)+"|"+aws.ToString(in.NextToken))
		if in.NextToken == nil {
			return &cloudwatchlogs.DescribeLogStreamsOutput{LogStreams: []logtypes.LogStream{{LogStreamName: aws.String("AllTraffic/i-1")}}, NextToken: aws.String("p2")}, nil
		}
		return &cloudwatchlogs.DescribeLogStreamsOutput{LogStreams: []logtypes.LogStream{{LogStreamName: aws.String("AllTraffic/i-2")}}}, nil
	}}
	got, err := cloud.LogStreams(context.Background(), logs, cloud.EndpointLogGroup("ep"), "AllTraffic/")
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"AllTraffic/i-1": true, "AllTraffic/i-2": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("streams = %v, want %v", got, want)
	}
	if want := []string{"/aws/sagemaker/Endpoints/ep|AllTraffic/|", "/aws/sagemaker/Endpoints/ep|AllTraffic/|p2"}; !reflect.DeepEqual(asked, want) {
		t.Errorf("calls = %q, want %q", asked, want)
	}

	logs.DescribeLogStreamsFn = func(context.Context, *cloudwatchlogs.DescribeLogStreamsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error) {
		return nil, &logtypes.ResourceNotFoundException{Message: aws.String("The specified log group does not exist.")}
	}
	if got, err := cloud.LogStreams(context.Background(), logs, "g", "p"); err != nil || len(got) != 0 {
		t.Errorf("a missing group: %v, %v; want no streams and no error", got, err)
	}
	boom := errors.New("boom")
	logs.DescribeLogStreamsFn = func(context.Context, *cloudwatchlogs.DescribeLogStreamsInput, ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.DescribeLogStreamsOutput, error) {
		return nil, boom
	}
	if _, err := cloud.LogStreams(context.Background(), logs, "g", "p"); !errors.Is(err, boom) || err.Error() != "list the log streams of g: boom" {
		t.Errorf("a failing call: %v", err)
	}
}

func TestReadLogPageConvertsEventsAndPassesTheToken(t *testing.T) {
	logs := &cloudtest.Logs{GetLogEventsFn: func(_ context.Context, in *cloudwatchlogs.GetLogEventsInput, optFns ...func(*cloudwatchlogs.Options)) (*cloudwatchlogs.GetLogEventsOutput, error) {
		if aws.ToString(in.NextToken) != "f1" || !aws.ToBool(in.StartFromHead) || aws.ToString(in.LogStreamName) != "s" {
			t.Errorf("input = %+v", in)
		}
		var o cloudwatchlogs.Options
		for _, f := range optFns {
			f(&o)
		}
		if _, ok := o.Retryer.(aws.NopRetryer); !ok {
			t.Errorf("retryer = %T, want a single attempt (aws.NopRetryer)", o.Retryer)
		}
		return &cloudwatchlogs.GetLogEventsOutput{
			Events:           []logtypes.OutputLogEvent{{Timestamp: aws.Int64(1500), Message: aws.String("=== STAGE ready t=x ===")}},
			NextForwardToken: aws.String("f2"),
		}, nil
	}}
	p, err := cloud.ReadLogPage(context.Background(), logs, "g", "s", aws.String("f1"))
	if err != nil {
		t.Fatal(err)
	}
	want := cloud.LogPage{Events: []cloud.LogEvent{{Time: time.UnixMilli(1500).UTC(), Message: "=== STAGE ready t=x ==="}}, Next: aws.String("f2")}
	if !reflect.DeepEqual(p, want) {
		t.Errorf("page = %+v, want %+v", p, want)
	}
}

func TestReadEndpointReadsTheVariant(t *testing.T) {
	sm := &cloudtest.SageMaker{DescribeEndpointFn: func(_ context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
		return &sagemaker.DescribeEndpointOutput{EndpointName: in.EndpointName, EndpointStatus: smtypes.EndpointStatusUpdating, ProductionVariants: []smtypes.ProductionVariantSummary{
			{VariantName: aws.String("Other"), CurrentInstanceCount: aws.Int32(9)},
			{VariantName: aws.String("AllTraffic"), CurrentInstanceCount: aws.Int32(2), DesiredInstanceCount: aws.Int32(3), VariantStatus: []smtypes.ProductionVariantStatus{{Status: smtypes.VariantStatusActivatingTraffic}}},
		}}, nil
	}}
	s, err := cloud.ReadEndpoint(context.Background(), sm, "ep", "AllTraffic")
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != "Updating" || s.InService || !s.HasVariant || !s.HasCount || s.Instances != 2 || s.DesiredInstances != 3 || !s.ActivatingTraffic || s.VariantStatus != "ActivatingTraffic" || s.Output == nil {
		t.Errorf("state = %+v", s)
	}
	s, err = cloud.ReadEndpoint(context.Background(), sm, "ep", "Missing")
	if err != nil || s.HasVariant || s.HasCount {
		t.Errorf("a missing variant: %+v, %v", s, err)
	}
}

func TestSetInstanceCountAsksForTheCount(t *testing.T) {
	var got *sagemaker.UpdateEndpointWeightsAndCapacitiesInput
	sm := &cloudtest.SageMaker{UpdateEndpointWeightsAndCapacitiesFn: func(_ context.Context, in *sagemaker.UpdateEndpointWeightsAndCapacitiesInput, _ ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointWeightsAndCapacitiesOutput, error) {
		got = in
		return &sagemaker.UpdateEndpointWeightsAndCapacitiesOutput{}, nil
	}}
	if err := cloud.SetInstanceCount(context.Background(), sm, "ep", "AllTraffic", 3); err != nil {
		t.Fatal(err)
	}
	if aws.ToString(got.EndpointName) != "ep" || len(got.DesiredWeightsAndCapacities) != 1 ||
		aws.ToString(got.DesiredWeightsAndCapacities[0].VariantName) != "AllTraffic" || aws.ToInt32(got.DesiredWeightsAndCapacities[0].DesiredInstanceCount) != 3 {
		t.Errorf("input = %+v", got)
	}
}
