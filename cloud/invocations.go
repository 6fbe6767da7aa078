package cloud

import (
	"context"
	"time"

	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/speech-infra/speech-infra/traffic"
)

// InvocationsMetric is SageMaker's count of requests to an endpoint's variant (namespace AWS/SageMaker,
// dimensions EndpointName and VariantName, published once a minute).
const InvocationsMetric = "Invocations"

// ReadInvocations reads the Sum of Invocations of the endpoint's variant per period over [start, end), through
// every page of GetMetricData (its paginator), oldest first. A period without data has no datapoint.
func ReadInvocations(ctx context.Context, api MetricReadAPI, endpoint, variant string, start, end time.Time, period time.Duration) ([]Datapoint, error) {
	return readVariantMetric(ctx, api, InvocationsMetric, cwtypes.StatisticSum, period, endpoint, variant, start, end)
}

// InvocationsSumReader is the traffic.SumReader of the endpoint's variant: ReadInvocations through api.
func InvocationsSumReader(api MetricReadAPI, endpoint, variant string) traffic.SumReader {
	return func(ctx context.Context, start, end time.Time, period time.Duration) ([]traffic.Datapoint, error) {
		points, err := ReadInvocations(ctx, api, endpoint, variant, start, end, period)
		if err != nil {
			return nil, err
		}
		out := make([]traffic.Datapoint, len(points))
		for i, p := range points {
			out[i] = traffic.Datapoint{Time: p.Time, Value: p.Value}
		}
		return out, nil
	}
}
