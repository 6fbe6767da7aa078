package cloud

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/speech-infra/speech-infra/capacity"
)

// InvocationsMetric is SageMaker's count of requests to an endpoint's variant (namespace AWS/SageMaker,
// dimensions EndpointName and VariantName, published once a minute).
const InvocationsMetric = "Invocations"

// ReadInvocations reads the Sum of Invocations of the endpoint's variant per period over [start, end), through
// every page of GetMetricData (its paginator), oldest first. A period without data has no datapoint.
func ReadInvocations(ctx context.Context, api MetricReadAPI, endpoint, variant string, start, end time.Time, period time.Duration) ([]Datapoint, error) {
	if !end.After(start) {
		return nil, fmt.Errorf("read %s of %s: the window %s to %s is empty: give an end after the start", InvocationsMetric, endpoint, start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	const id = "invocations"
	in := &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(start.UTC()), EndTime: aws.Time(end.UTC()), ScanBy: cwtypes.ScanByTimestampAscending,
		MetricDataQueries: []cwtypes.MetricDataQuery{{
			Id: aws.String(id),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{
					Namespace: aws.String(capacity.MetricNamespace), MetricName: aws.String(InvocationsMetric),
					Dimensions: []cwtypes.Dimension{
						{Name: aws.String("EndpointName"), Value: aws.String(endpoint)},
						{Name: aws.String("VariantName"), Value: aws.String(variant)},
					},
				},
				Period: aws.Int32(int32(period / time.Second)), Stat: aws.String(string(cwtypes.StatisticSum)),
			},
		}},
	}
	var points []Datapoint
	p := cloudwatch.NewGetMetricDataPaginator(api, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s of %s/%s: %w", InvocationsMetric, endpoint, variant, err)
		}
		for _, r := range out.MetricDataResults {
			if aws.ToString(r.Id) != id {
				continue
			}
			if r.StatusCode == cwtypes.StatusCodeForbidden || r.StatusCode == cwtypes.StatusCodeInternalError {
				return nil, fmt.Errorf("read %s of %s/%s: CloudWatch answered %s: check the cloudwatch:GetMetricData permission", InvocationsMetric, endpoint, variant, r.StatusCode)
			}
			if len(r.Timestamps) != len(r.Values) {
				return nil, errors.New("read " + InvocationsMetric + ": CloudWatch answered different numbers of timestamps and values")
			}
			for i := range r.Values {
				points = append(points, Datapoint{Time: r.Timestamps[i].UTC(), Value: r.Values[i]})
			}
		}
	}
	sort.SliceStable(points, func(a, b int) bool { return points[a].Time.Before(points[b].Time) })
	return points, nil
}
