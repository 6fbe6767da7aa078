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

// MetricReadAPI is the part of the CloudWatch client that reads metric data.
type MetricReadAPI interface {
	GetMetricData(ctx context.Context, in *cloudwatch.GetMetricDataInput, optFns ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error)
}

// ConcurrencyPeriod is the period ReadConcurrency asks for: SageMaker publishes ConcurrentRequestsPerModel at
// high resolution (the metric the target-tracking policy's SageMakerVariantConcurrentRequestsPerModelHighResolution
// tracks), and 10 s is the shortest period CloudWatch keeps for three hours.
const ConcurrencyPeriod = 10 * time.Second

// Datapoint is one value of a metric at the start of its period.
type Datapoint struct {
	// Time is the start of the period (UTC).
	Time time.Time `json:"time"`
	// Value is the statistic over the period.
	Value float64 `json:"value"`
}

// ReadConcurrency reads the Maximum of ConcurrentRequestsPerModel (namespace AWS/SageMaker, dimensions
// EndpointName and VariantName) per ConcurrencyPeriod over [start, end), through every page of GetMetricData,
// oldest first. No datapoint in the window is an empty slice, not an error: the caller decides what a window
// without data means (qmax warns that the ratio could not be measured).
func ReadConcurrency(ctx context.Context, api MetricReadAPI, endpoint, variant string, start, end time.Time) ([]Datapoint, error) {
	return readVariantMetric(ctx, api, capacity.ConcurrencyMetric, cwtypes.StatisticMaximum, ConcurrencyPeriod, endpoint, variant, start, end)
}

// readVariantMetric reads one statistic of one AWS/SageMaker metric of the endpoint's variant (dimensions
// EndpointName and VariantName) per period over [start, end), through every page of GetMetricData (its
// paginator), oldest first. A period without data has no datapoint; an empty window is an error.
func readVariantMetric(ctx context.Context, api MetricReadAPI, metric string, stat cwtypes.Statistic, period time.Duration, endpoint, variant string, start, end time.Time) ([]Datapoint, error) {
	if !end.After(start) {
		return nil, fmt.Errorf("read %s of %s: the window %s to %s is empty: give an end after the start", metric, endpoint, start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	const id = "m"
	in := &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(start.UTC()), EndTime: aws.Time(end.UTC()), ScanBy: cwtypes.ScanByTimestampAscending,
		MetricDataQueries: []cwtypes.MetricDataQuery{{
			Id: aws.String(id),
			MetricStat: &cwtypes.MetricStat{
				Metric: &cwtypes.Metric{
					Namespace: aws.String(capacity.MetricNamespace), MetricName: aws.String(metric),
					Dimensions: []cwtypes.Dimension{
						{Name: aws.String("EndpointName"), Value: aws.String(endpoint)},
						{Name: aws.String("VariantName"), Value: aws.String(variant)},
					},
				},
				Period: aws.Int32(int32(period / time.Second)), Stat: aws.String(string(stat)),
			},
		}},
	}
	var points []Datapoint
	p := cloudwatch.NewGetMetricDataPaginator(api, in)
	for p.HasMorePages() {
		out, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("read %s of %s/%s: %w", metric, endpoint, variant, err)
		}
		for _, r := range out.MetricDataResults {
			if aws.ToString(r.Id) != id {
				continue
			}
			if r.StatusCode == cwtypes.StatusCodeForbidden || r.StatusCode == cwtypes.StatusCodeInternalError {
				return nil, fmt.Errorf("read %s of %s/%s: CloudWatch answered %s: check the cloudwatch:GetMetricData permission", metric, endpoint, variant, r.StatusCode)
			}
			if len(r.Timestamps) != len(r.Values) {
				return nil, errors.New("read " + metric + ": CloudWatch answered different numbers of timestamps and values")
			}
			for i := range r.Values {
				points = append(points, Datapoint{Time: r.Timestamps[i].UTC(), Value: r.Values[i]})
			}
		}
	}
	sort.SliceStable(points, func(a, b int) bool { return points[a].Time.Before(points[b].Time) })
	return points, nil
}

// MaxValue is the largest value of points and whether there was any.
func MaxValue(points []Datapoint) (float64, bool) {
	if len(points) == 0 {
		return 0, false
	}
	m := points[0].Value
	for _, p := range points[1:] {
		m = max(m, p.Value)
	}
	return m, true
}

// InstanceMetricMax is the highest 1-minute Maximum of an /aws/sagemaker/Endpoints instance metric
// (CPUUtilization, ...) of the endpoint's variant between from and to; nil when CloudWatch has no datapoint
// (the local emulator publishes none) or could not be read.
func InstanceMetricMax(ctx context.Context, cw MetricReadAPI, endpoint, variant, metric string, from, to time.Time) *float64 {
	if from.IsZero() || !to.After(from) {
		return nil
	}
	out, err := cw.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(from.Truncate(time.Minute)), EndTime: aws.Time(to.Add(time.Minute)),
		MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("m"), MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{Namespace: aws.String("/aws/sagemaker/Endpoints"), MetricName: aws.String(metric),
				Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(endpoint)}, {Name: aws.String("VariantName"), Value: aws.String(variant)}}},
			Period: aws.Int32(60), Stat: aws.String("Maximum")}}},
	})
	if err != nil {
		return nil
	}
	found, v := false, 0.0
	for _, r := range out.MetricDataResults {
		for _, x := range r.Values {
			if !found || x > v {
				found, v = true, x
			}
		}
	}
	if !found {
		return nil
	}
	return &v
}
