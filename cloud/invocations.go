package cloud

import (
	"context"
	"time"

	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
)

// InvocationsMetric is SageMaker's count of requests to an endpoint's variant (namespace AWS/SageMaker,
// dimensions EndpointName and VariantName, published once a minute).
const InvocationsMetric = "Invocations"

// ReadInvocations reads the Sum of Invocations of the endpoint's variant per period over [start, end), through
// every page of GetMetricData (its paginator), oldest first. A period without data has no datapoint.
func ReadInvocations(ctx context.Context, api MetricReadAPI, endpoint, variant string, start, end time.Time, period time.Duration) ([]Datapoint, error) {
	return readVariantMetric(ctx, api, InvocationsMetric, cwtypes.StatisticSum, period, endpoint, variant, start, end)
}
