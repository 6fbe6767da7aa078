package emulator_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// Conformance of the emulator's CloudWatch with AWS, through the real
// SDK client and the AWS CLI. Each case quotes the documentation sentence or botocore model fact it checks.

// tenSeconds runs the emulator at SageMaker's own 10-second metric period (no time compression).
func tenSeconds(o *emulator.Options) { o.MetricPeriod = 10 * time.Second }

// putAlarm creates a plain static-threshold alarm on an AWS/SageMaker metric.
func putAlarm(t *testing.T, c *cloudwatch.Client, name string) {
	t.Helper()
	_, err := c.PutMetricAlarm(ctxFor(t, 30*time.Second), &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(name),
		Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations"), Statistic: cwtypes.StatisticSum,
		Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold})
	if err != nil {
		t.Fatalf("PutMetricAlarm %s: %v", name, err)
	}
}

// alarmNames lists every alarm name, following NextToken.
func alarmNames(t *testing.T, c *cloudwatch.Client) []string {
	t.Helper()
	var names []string
	p := cloudwatch.NewDescribeAlarmsPaginator(c, &cloudwatch.DescribeAlarmsInput{})
	for p.HasMorePages() {
		out, err := p.NextPage(ctxFor(t, 30*time.Second))
		if err != nil {
			t.Fatalf("DescribeAlarms: %v", err)
		}
		for _, a := range out.MetricAlarms {
			names = append(names, aws.ToString(a.AlarmName))
		}
	}
	return names
}

// TestConformanceCloudWatchDeleteAlarms: item 6.
//
// DeleteAlarms (API reference): "If you specify any incorrect alarm names, the alarms you specify with correct
// names are still deleted."
func TestConformanceCloudWatchDeleteAlarms(t *testing.T) {
	r := emulatortest.Start(t)
	ctx := ctxFor(t, 2*time.Minute)
	for _, tc := range []struct {
		name string
		cli  bool
	}{{"sdk", false}, {"cli", true}} {
		t.Run(tc.name, func(t *testing.T) {
			existing, other := "conf-delete-"+tc.name, "conf-keep-"+tc.name
			putAlarm(t, r.CloudWatch, existing)
			putAlarm(t, r.CloudWatch, other)
			if tc.cli {
				mustAWS(ctx, t, r, "cloudwatch", "delete-alarms", "--alarm-names", existing, "nope")
			} else if _, err := r.CloudWatch.DeleteAlarms(ctx, &cloudwatch.DeleteAlarmsInput{AlarmNames: []string{existing, "nope"}}); err != nil {
				t.Fatalf("DeleteAlarms(%s, nope) = %v, want success", existing, err)
			}
			names := alarmNames(t, r.CloudWatch)
			if slices.Contains(names, existing) || !slices.Contains(names, other) {
				t.Errorf("after deleting %s and nope: alarms %v; want %s gone and %s kept", existing, names, existing, other)
			}
		})
	}
}

// TestConformanceCloudWatchDescribeAlarmsPages: item 5.
func TestConformanceCloudWatchDescribeAlarmsPages(t *testing.T) {
	r := emulatortest.Start(t)
	ctx := ctxFor(t, time.Minute)
	for _, n := range []string{"page-a", "page-b", "page-c"} {
		putAlarm(t, r.CloudWatch, n)
	}
	// DescribeAlarms MaxRecords: "The maximum number of alarm descriptions to retrieve." NextToken: "The token
	// returned by a previous call to indicate that there is more data available."
	first, err := r.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{MaxRecords: aws.Int32(2)})
	if err != nil || len(first.MetricAlarms) != 2 || first.NextToken == nil {
		t.Fatalf("DescribeAlarms(MaxRecords 2) = %+v, %v; want 2 alarms and a NextToken", first, err)
	}
	second, err := r.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{MaxRecords: aws.Int32(2), NextToken: first.NextToken})
	if err != nil || len(second.MetricAlarms) != 1 || second.NextToken != nil || aws.ToString(second.MetricAlarms[0].AlarmName) != "page-c" {
		t.Fatalf("DescribeAlarms(page 2) = %+v, %v; want page-c alone and no NextToken", second, err)
	}
	for _, tc := range []struct {
		name string
		in   cloudwatch.DescribeAlarmsInput
		code string
	}{
		// DescribeAlarms errors (API reference): "InvalidNextToken: The next token specified is invalid. HTTP
		// Status Code: 400".
		{"bad token", cloudwatch.DescribeAlarmsInput{NextToken: aws.String("not-a-token")}, "InvalidNextToken"},
		// botocore's model: MaxRecords {min 1, max 100}.
		{"MaxRecords 101", cloudwatch.DescribeAlarmsInput{MaxRecords: aws.Int32(101)}, "ValidationError"},
	} {
		if _, err := r.CloudWatch.DescribeAlarms(ctx, &tc.in); apiCode(err) != tc.code {
			t.Errorf("DescribeAlarms(%s) = %v, want %s", tc.name, err, tc.code)
		}
	}
	// The AWS CLI's --page-size 1 pages through every alarm.
	out := mustAWS(ctx, t, r, "cloudwatch", "describe-alarms", "--page-size", "1", "--query", "MetricAlarms[].AlarmName", "--output", "text")
	if got := strings.Fields(out); len(got) != 3 {
		t.Errorf("describe-alarms --page-size 1 = %q, want the 3 alarms", out)
	}
}

// TestConformanceCloudWatchEnums: item 11. A value outside an enum of botocore's CloudWatch model is refused
// with ValidationError, the "1 validation error detected: Value '30' at 'period' failed to satisfy constraint"
// form AWS answers (e.g. ansible/ansible#29694).
func TestConformanceCloudWatchEnums(t *testing.T) {
	r := emulatortest.Start(t)
	c := r.CloudWatch
	ctx := ctxFor(t, time.Minute)
	now := time.Now()
	alarm := func(mod func(*cloudwatch.PutMetricAlarmInput)) error {
		in := &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String("enum"), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations"),
			Statistic: cwtypes.StatisticSum, Period: aws.Int32(60), EvaluationPeriods: aws.Int32(1), Threshold: aws.Float64(1), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold}
		mod(in)
		_, err := c.PutMetricAlarm(ctx, in)
		return err
	}
	stats := func(mod func(*cloudwatch.GetMetricStatisticsInput)) error {
		in := &cloudwatch.GetMetricStatisticsInput{Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations"),
			StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now), Period: aws.Int32(60), Statistics: []cwtypes.Statistic{cwtypes.StatisticSum}}
		mod(in)
		_, err := c.GetMetricStatistics(ctx, in)
		return err
	}
	data := func(mod func(*cloudwatch.GetMetricDataInput)) error {
		in := &cloudwatch.GetMetricDataInput{StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now), MetricDataQueries: []cwtypes.MetricDataQuery{{
			Id: aws.String("m1"), MetricStat: &cwtypes.MetricStat{Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations")},
				Period: aws.Int32(60), Stat: aws.String("Sum")}}}}
		mod(in)
		_, err := c.GetMetricData(ctx, in)
		return err
	}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		// StateValue enum: OK, ALARM, INSUFFICIENT_DATA.
		{"DescribeAlarms StateValue", func() error {
			_, err := c.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{StateValue: "BOGUS"})
			return err
		}},
		// AlarmTypes enum: CompositeAlarm, MetricAlarm.
		{"DescribeAlarms AlarmTypes", func() error {
			_, err := c.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmTypes: []cwtypes.AlarmType{"Bogus"}})
			return err
		}},
		// Statistic enum: SampleCount, Average, Sum, Minimum, Maximum.
		{"PutMetricAlarm Statistic", func() error { return alarm(func(in *cloudwatch.PutMetricAlarmInput) { in.Statistic = "Median" }) }},
		// ComparisonOperator enum: GreaterThanOrEqualToThreshold, GreaterThanThreshold, ...
		{"PutMetricAlarm ComparisonOperator", func() error {
			return alarm(func(in *cloudwatch.PutMetricAlarmInput) { in.ComparisonOperator = "Sideways" })
		}},
		// StandardUnit enum: Seconds, Microseconds, ..., None.
		{"PutMetricAlarm Unit", func() error { return alarm(func(in *cloudwatch.PutMetricAlarmInput) { in.Unit = "Furlongs" }) }},
		{"GetMetricStatistics Statistics", func() error {
			return stats(func(in *cloudwatch.GetMetricStatisticsInput) { in.Statistics = []cwtypes.Statistic{"Median"} })
		}},
		{"GetMetricStatistics Unit", func() error { return stats(func(in *cloudwatch.GetMetricStatisticsInput) { in.Unit = "Furlongs" }) }},
		// ScanBy enum: TimestampDescending, TimestampAscending.
		{"GetMetricData ScanBy", func() error { return data(func(in *cloudwatch.GetMetricDataInput) { in.ScanBy = "Sideways" }) }},
		{"GetMetricData MetricStat.Unit", func() error {
			return data(func(in *cloudwatch.GetMetricDataInput) { in.MetricDataQueries[0].MetricStat.Unit = "Furlongs" })
		}},
	} {
		if err := tc.call(); apiCode(err) != "ValidationError" || !strings.Contains(err.Error(), "Member must satisfy enum value set") {
			t.Errorf("%s with a value outside the enum: %v, want ValidationError (enum value set)", tc.name, err)
		}
	}
	// The AWS CLI gets the same answer (`describe-alarms --state-value BOGUS`).
	if _, errOut, code := awsCLI(ctx, t, r, "cloudwatch", "describe-alarms", "--state-value", "BOGUS"); code == 0 || !strings.Contains(errOut, "(ValidationError)") {
		t.Errorf("aws cloudwatch describe-alarms --state-value BOGUS: exit %d, stderr %q; want a ValidationError", code, errOut)
	}
}

// TestConformanceCloudWatchPeriods: item 9, the periods and limits of the metric reads.
func TestConformanceCloudWatchPeriods(t *testing.T) {
	r := emulatortest.Start(t, tenSeconds)
	c := r.CloudWatch
	ctx := ctxFor(t, time.Minute)
	now := time.Now()
	statsErr := func(period int32, span time.Duration) error {
		_, err := c.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations"),
			StartTime: aws.Time(now.Add(-span)), EndTime: aws.Time(now), Period: aws.Int32(period), Statistics: []cwtypes.Statistic{cwtypes.StatisticSum}})
		return err
	}
	dataErr := func(period int32) error {
		_, err := c.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{StartTime: aws.Time(now.Add(-time.Hour)), EndTime: aws.Time(now), MetricDataQueries: []cwtypes.MetricDataQuery{{
			Id: aws.String("m1"), MetricStat: &cwtypes.MetricStat{Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("Invocations")},
				Period: aws.Int32(period), Stat: aws.String("Sum")}}}})
		return err
	}
	for _, tc := range []struct {
		name string
		err  error
		code string
	}{
		// MetricStat/GetMetricStatistics Period: "For high-resolution metrics that are collected at intervals of
		// less than one minute, the period can be 1, 5, 10, 20, 30, 60, or any multiple of 60."
		{"GetMetricStatistics period 7", statsErr(7, time.Hour), "InvalidParameterValue"},
		{"GetMetricStatistics period 90", statsErr(90, time.Hour), "InvalidParameterValue"},
		{"GetMetricData period 7", dataErr(7), "InvalidParameterValue"},
		{"GetMetricStatistics period 20", statsErr(20, time.Hour), ""},
		{"GetMetricStatistics period 120", statsErr(120, time.Hour), ""},
		{"GetMetricData period 5", dataErr(5), ""},
		// GetMetricStatistics: "The maximum number of data points returned from a single call is 1,440. If you
		// request more than 1,440 data points, CloudWatch returns an error." The error is InvalidParameterCombination,
		// "You have requested up to 86400 datapoints, which exceeds the limit of 1440. ..." (cloud-custodian#7683).
		{"GetMetricStatistics 1 s over 2 h", statsErr(1, 2*time.Hour), "InvalidParameterCombination"},
		{"GetMetricStatistics 60 s over 24 h", statsErr(60, 24*time.Hour-time.Minute), ""},
	} {
		if got := apiCode(tc.err); got != tc.code {
			t.Errorf("%s: %v, want code %q", tc.name, tc.err, tc.code)
		}
	}
}

// statPoints reads Sum and SampleCount of a metric of endpoint conf/AllTraffic, oldest first.
func statPoints(t *testing.T, c *cloudwatch.Client, ns, metric string, start, end time.Time, period int32) []cwtypes.Datapoint {
	t.Helper()
	out, err := c.GetMetricStatistics(ctxFor(t, 30*time.Second), &cloudwatch.GetMetricStatisticsInput{Namespace: aws.String(ns), MetricName: aws.String(metric),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("conf")}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}},
		StartTime:  aws.Time(start), EndTime: aws.Time(end), Period: aws.Int32(period), Statistics: []cwtypes.Statistic{cwtypes.StatisticSum, cwtypes.StatisticSampleCount}})
	if err != nil {
		t.Fatalf("GetMetricStatistics %s period %d: %v", metric, period, err)
	}
	dps := out.Datapoints
	for i := range dps {
		for j := i + 1; j < len(dps); j++ {
			if dps[j].Timestamp.Before(*dps[i].Timestamp) {
				dps[i], dps[j] = dps[j], dps[i]
			}
		}
	}
	return dps
}

// stamps renders datapoints as "offset-from-base:sum" for messages and comparisons.
func stamps(base time.Time, dps []cwtypes.Datapoint) string {
	var parts []string
	for _, d := range dps {
		parts = append(parts, d.Timestamp.Sub(base).String()+":"+strconv.FormatFloat(aws.ToFloat64(d.Sum), 'g', -1, 64))
	}
	return strings.Join(parts, " ")
}

// TestConformanceCloudWatchAlignment: items 8 and 9, the timestamps and cadence of datapoints.
func TestConformanceCloudWatchAlignment(t *testing.T) {
	r := emulatortest.Start(t, tenSeconds)
	c := r.CloudWatch
	base := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	add := func(metric string, at time.Duration, v float64) {
		r.AddMetric(emulator.NamespaceSageMaker, metric, "conf", "AllTraffic", base.Add(at), v)
	}
	// High resolution: one datapoint per instance every 10 s.
	add("ConcurrentRequestsPerModel", 0, 1)
	add("ConcurrentRequestsPerModel", 15*time.Second, 2)
	add("ConcurrentRequestsPerModel", 65*time.Second, 4)
	// Standard resolution: invocations published once a minute.
	add("Invocations", 15*time.Second, 1)
	add("Invocations", 45*time.Second, 1)
	const hr = "ConcurrentRequestsPerModel"
	for _, tc := range []struct {
		name        string
		metric      string
		start       time.Duration
		period      int32
		want        string
		sampleCount float64
	}{
		// StartTime: "If you set Period to 5, 10, 20, or 30, the start time of your request is rounded down to
		// the nearest time that corresponds to even 5-, 10-, 20-, or 30-second divisions of a minute." A start at
		// :05 keeps the bucket of :00.
		{"10 s from :05", hr, 5 * time.Second, 10, "0s:1 10s:2 1m0s:4", 1},
		// StartTime: "Start time less than 15 days ago - Round down to the nearest whole minute." A 60-s query
		// from :30 covers the whole first minute, stamped at the minute, not before StartTime with part of it.
		{"60 s from :30", hr, 30 * time.Second, 60, "0s:3 1m0s:4", 0},
		// Period 1 serves 10-s data at its own timestamps.
		{"1 s from :00", hr, 0, 1, "0s:1 10s:2 1m0s:4", 1},
		// SageMaker invocation metrics: "Metrics are available at a 1-minute frequency." Both invocations are one
		// datapoint stamped at the minute, even at a 10-s period.
		{"Invocations at 10 s", "Invocations", 0, 10, "0s:2", 2},
	} {
		dps := statPoints(t, c, emulator.NamespaceSageMaker, tc.metric, base.Add(tc.start), base.Add(5*time.Minute), tc.period)
		if got := stamps(base, dps); got != tc.want {
			t.Errorf("%s: datapoints %q, want %q", tc.name, got, tc.want)
		}
		if tc.sampleCount > 0 && len(dps) > 0 && aws.ToFloat64(dps[0].SampleCount) != tc.sampleCount {
			t.Errorf("%s: first SampleCount %g, want %g", tc.name, aws.ToFloat64(dps[0].SampleCount), tc.sampleCount)
		}
	}
	// GetMetricData rounds the same way.
	md, err := c.GetMetricData(ctxFor(t, 30*time.Second), &cloudwatch.GetMetricDataInput{StartTime: aws.Time(base.Add(5 * time.Second)), EndTime: aws.Time(base.Add(5 * time.Minute)),
		ScanBy: cwtypes.ScanByTimestampAscending, MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("m1"), MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{Namespace: aws.String(emulator.NamespaceSageMaker), MetricName: aws.String(hr),
				Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("conf")}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}},
			Period: aws.Int32(10), Stat: aws.String("Sum")}}}})
	if err != nil || len(md.MetricDataResults) != 1 || len(md.MetricDataResults[0].Timestamps) != 3 || !md.MetricDataResults[0].Timestamps[0].Equal(base) {
		t.Errorf("GetMetricData period 10 from :05 = %+v, %v; want 3 datapoints from %s", md, err, base)
	}

	// Retention: "Data points with a period of less than 60 seconds are available for 3 hours." Data 4 h old is
	// served at 60 s, not at 10 s.
	old := time.Now().UTC().Truncate(time.Minute).Add(-4 * time.Hour)
	r.AddMetric(emulator.NamespaceSageMaker, hr, "conf", "AllTraffic", old, 7)
	if dps := statPoints(t, c, emulator.NamespaceSageMaker, hr, old, old.Add(time.Minute), 10); len(dps) != 0 {
		t.Errorf("10-s datapoints of 4 h ago: %d, want none (3-hour retention)", len(dps))
	}
	if dps := statPoints(t, c, emulator.NamespaceSageMaker, hr, old, old.Add(time.Minute), 60); len(dps) != 1 || aws.ToFloat64(dps[0].Sum) != 7 {
		t.Errorf("60-s datapoints of 4 h ago: %+v, want one of 7", dps)
	}
}

// TestConformanceCloudWatchSampleCadence: item 8 with a live endpoint. The high-resolution
// ConcurrentRequestsPerModel is one datapoint per instance and metric period (here compressed to 1 s), not one
// per internal sample. SageMaker's "Define a scaling policy": "these high-resolution metrics emit data every 10
// seconds".
func TestConformanceCloudWatchSampleCadence(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	ctx := ctxFor(t, 2*time.Minute)
	const name = "speech-conf-cadence"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1))
	emulatortest.WaitInService(ctx, t, r.SageMaker, name)
	start := time.Now().Add(time.Second)
	time.Sleep(4 * time.Second)
	out, err := r.CloudWatch.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{Namespace: aws.String(emulator.NamespaceSageMaker), MetricName: aws.String("ConcurrentRequestsPerModel"),
		Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String(name)}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}},
		StartTime:  aws.Time(start), EndTime: aws.Time(time.Now().Add(-time.Second)), Period: aws.Int32(1), Statistics: []cwtypes.Statistic{cwtypes.StatisticSampleCount}})
	if err != nil || len(out.Datapoints) < 2 {
		t.Fatalf("GetMetricStatistics ConcurrentRequestsPerModel = %+v, %v; want complete 1-s datapoints", out, err)
	}
	for _, d := range out.Datapoints {
		if aws.ToFloat64(d.SampleCount) != 1 {
			t.Errorf("datapoint %s: SampleCount %g, want 1 (one instance, one datapoint a period)", d.Timestamp, aws.ToFloat64(d.SampleCount))
		}
	}
}

// TestConformanceCloudWatchMetricMath: item 13 (metric math) and item 5 (GetMetricData pages).
func TestConformanceCloudWatchMetricMath(t *testing.T) {
	r := emulatortest.Start(t, tenSeconds)
	c := r.CloudWatch
	ctx := ctxFor(t, time.Minute)
	base := time.Now().UTC().Truncate(time.Minute).Add(-10 * time.Minute)
	for i := 0; i < 3; i++ {
		at := base.Add(time.Duration(i) * time.Minute)
		for j := 0; j < 4; j++ {
			r.AddMetric(emulator.NamespaceSageMaker, "Invocations", "conf", "AllTraffic", at.Add(time.Duration(j)*time.Second), 1)
		}
		r.AddMetric(emulator.NamespaceSageMaker, "Invocation5XXErrors", "conf", "AllTraffic", at, float64(i))
	}
	metric := func(id, name string, ret bool) cwtypes.MetricDataQuery {
		return cwtypes.MetricDataQuery{Id: aws.String(id), ReturnData: aws.Bool(ret), MetricStat: &cwtypes.MetricStat{Period: aws.Int32(60), Stat: aws.String("Sum"),
			Metric: &cwtypes.Metric{Namespace: aws.String(emulator.NamespaceSageMaker), MetricName: aws.String(name),
				Dimensions: []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("conf")}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}}}}
	}
	expr := func(id, e string) cwtypes.MetricDataQuery {
		return cwtypes.MetricDataQuery{Id: aws.String(id), Expression: aws.String(e)}
	}
	in := &cloudwatch.GetMetricDataInput{StartTime: aws.Time(base), EndTime: aws.Time(base.Add(5 * time.Minute)), ScanBy: cwtypes.ScanByTimestampAscending,
		MetricDataQueries: []cwtypes.MetricDataQuery{
			// MetricDataQuery ReturnData: "When used in GetMetricData, this option indicates whether to return the
			// timestamps and raw data values of this metric. If you are performing math expressions on this set of
			// data, specify False for this parameter."
			metric("m1", "Invocations", false), metric("m2", "Invocation5XXErrors", false),
			// Metric math ("Metric math syntax and functions"): arithmetic between ids and numbers, METRICS() and SUM.
			expr("rate", "100 * m2 / m1"), expr("total", "SUM(METRICS())"), expr("same", "m1"), expr("shifted", "(m1 - 1) * -2"),
		}}
	out, err := c.GetMetricData(ctx, in)
	if err != nil {
		t.Fatalf("GetMetricData with expressions: %v", err)
	}
	want := map[string][]float64{"rate": {0, 25, 50}, "total": {4, 5, 6}, "same": {4, 4, 4}, "shifted": {-6, -6, -6}}
	if len(out.MetricDataResults) != len(want) {
		t.Fatalf("GetMetricData returned %d results, want %d (m1 and m2 have ReturnData false)", len(out.MetricDataResults), len(want))
	}
	for _, res := range out.MetricDataResults {
		w := want[aws.ToString(res.Id)]
		if len(res.Values) != len(w) || len(res.Timestamps) != len(w) || !res.Timestamps[0].Equal(base) {
			t.Errorf("%s = %v at %v, want %v from %s", aws.ToString(res.Id), res.Values, res.Timestamps, w, base)
			continue
		}
		for i := range w {
			if res.Values[i] != w[i] {
				t.Errorf("%s = %v, want %v", aws.ToString(res.Id), res.Values, w)
				break
			}
		}
	}
	for _, bad := range []string{"m3 + 1", "RATE(m1)", "m1 +", "2 * 3"} {
		in := &cloudwatch.GetMetricDataInput{StartTime: aws.Time(base), EndTime: aws.Time(base.Add(5 * time.Minute)),
			MetricDataQueries: []cwtypes.MetricDataQuery{metric("m1", "Invocations", false), expr("e1", bad)}}
		if _, err := c.GetMetricData(ctx, in); apiCode(err) == "" {
			t.Errorf("GetMetricData expression %q: no error, want one", bad)
		}
	}

	// GetMetricData MaxDatapoints: "The maximum number of data points the request should return before
	// paginating." NextToken: "Include this value, if it was returned by the previous call, to get the next set
	// of data points."
	page := &cloudwatch.GetMetricDataInput{StartTime: aws.Time(base), EndTime: aws.Time(base.Add(5 * time.Minute)), ScanBy: cwtypes.ScanByTimestampAscending,
		MaxDatapoints: aws.Int32(2), MetricDataQueries: []cwtypes.MetricDataQuery{metric("m1", "Invocations", true)}}
	var got []float64
	for i := 0; i < 3; i++ {
		out, err := c.GetMetricData(ctx, page)
		if err != nil {
			t.Fatalf("GetMetricData page %d: %v", i+1, err)
		}
		if n := len(out.MetricDataResults[0].Values); n > 2 {
			t.Errorf("page %d has %d datapoints, want at most MaxDatapoints 2", i+1, n)
		}
		got = append(got, out.MetricDataResults[0].Values...)
		if out.NextToken == nil {
			break
		}
		page.NextToken = out.NextToken
	}
	if len(got) != 3 || page.NextToken == nil {
		t.Errorf("paged values %v (last token %v), want 3 values over 2 pages", got, page.NextToken)
	}
	// GetMetricData errors: "InvalidNextToken: The next token specified is invalid."
	page.NextToken = aws.String("bogus")
	if _, err := c.GetMetricData(ctx, page); apiCode(err) != "InvalidNextToken" {
		t.Errorf("GetMetricData with a bad token: %v, want InvalidNextToken", err)
	}
}

// TestConformanceCloudWatchStateReason: item 13, the StateReason wording. AWS's own reason (aws/aws-sdk-java#1723):
// "Threshold Crossed: 1 out of the last 1 datapoints [6.046241709654764 (15/08/18 21:15:00)] was less than or
// equal to the threshold (70.0) (minimum 1 datapoint for OK -> ALARM transition)."
func TestConformanceCloudWatchStateReason(t *testing.T) {
	r := emulatortest.Start(t)
	c := r.CloudWatch
	ctx := ctxFor(t, time.Minute)
	const ns, metric = "Conformance/StateReason", "ConcurrentRequestsPerModel"
	dims := []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("conf")}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}
	for _, tc := range []struct {
		name      string
		value     float64
		datapoint *int32
		state     cwtypes.StateValue
		reason    string
	}{
		{"alarm", 42, nil, cwtypes.StateValueAlarm,
			`^Threshold Crossed: 1 datapoint \[42\.0 \(\d\d/\d\d/\d\d \d\d:\d\d:\d\d\)\] was greater than the threshold \(30\.0\)\.$`},
		{"ok-m-of-n", 6.5, aws.Int32(1), cwtypes.StateValueOk,
			`^Threshold Crossed: 1 out of the last 1 datapoints \[6\.5 \(\d\d/\d\d/\d\d \d\d:\d\d:\d\d\)\] was not greater than the threshold \(30\.0\) \(minimum 1 datapoint for ALARM -> OK transition\)\.$`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := "reason-" + tc.name
			if _, err := c.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(name), Namespace: aws.String(ns), MetricName: aws.String(metric),
				Dimensions: dims, Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(1), EvaluationPeriods: aws.Int32(1), DatapointsToAlarm: tc.datapoint,
				Threshold: aws.Float64(30), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold}); err != nil {
				t.Fatalf("PutMetricAlarm: %v", err)
			}
			var reason string
			eventually(t, hangBound, "the alarm to reach "+string(tc.state), func() bool {
				r.AddMetric(ns, metric, "conf", "AllTraffic", time.Now(), tc.value)
				out, err := c.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{name}})
				if err != nil || len(out.MetricAlarms) != 1 {
					t.Fatalf("DescribeAlarms: %+v, %v", out, err)
				}
				reason = aws.ToString(out.MetricAlarms[0].StateReason)
				return out.MetricAlarms[0].StateValue == tc.state
			})
			if !regexp.MustCompile(tc.reason).MatchString(reason) {
				t.Errorf("StateReason %q, want to match %s", reason, tc.reason)
			}
		})
	}
}

// An emulator that compresses CloudWatch time (time scale 50: 1-s periods standing for AWS's 10 s) evaluates
// each alarm datapoint over the wall-clock window of the AWS period it stands for: one datapoint of 42 published
// 4 s ago is in the trailing 10 s of each of the last three 1-s periods, so a 3-of-3 alarm above 30 goes to
// ALARM naming three datapoints of 42, though the last three 1-s periods published nothing themselves
// (docs/design.md, "Compressed CloudWatch time"; our extension, not AWS behaviour).
func TestCompressedAlarmSeesTheAWSPeriod(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.TimeScale(50))
	if info := r.Info(); info.CloudWatchCompression != 10 || info.MetricPeriodS != 1 {
		t.Fatalf("time scale 50: compression %d, metric period %g s; want 10 and 1 s", info.CloudWatchCompression, info.MetricPeriodS)
	}
	c := r.CloudWatch
	ctx := ctxFor(t, time.Minute)
	const ns, metric, name = "Conformance/Compressed", "ConcurrentRequestsPerModel", "compressed"
	dims := []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("conf")}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}
	if _, err := c.PutMetricAlarm(ctx, &cloudwatch.PutMetricAlarmInput{AlarmName: aws.String(name), Namespace: aws.String(ns), MetricName: aws.String(metric),
		Dimensions: dims, Statistic: cwtypes.StatisticMaximum, Period: aws.Int32(1), EvaluationPeriods: aws.Int32(3), DatapointsToAlarm: aws.Int32(3),
		Threshold: aws.Float64(30), ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold}); err != nil {
		t.Fatalf("PutMetricAlarm: %v", err)
	}
	r.AddMetric(ns, metric, "conf", "AllTraffic", time.Now().Add(-4*time.Second), 42)
	var reason string
	eventually(t, hangBound, "the alarm to reach ALARM", func() bool {
		out, err := c.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{name}})
		if err != nil || len(out.MetricAlarms) != 1 {
			t.Fatalf("DescribeAlarms: %+v, %v", out, err)
		}
		reason = aws.ToString(out.MetricAlarms[0].StateReason)
		return out.MetricAlarms[0].StateValue == cwtypes.StateValueAlarm
	})
	if !regexp.MustCompile(`^Threshold Crossed: 3 out of the last 3 datapoints \[42\.0 [^,]*, 42\.0 [^,]*, 42\.0 [^,]*\] were greater than`).MatchString(reason) {
		t.Errorf("StateReason %q, want three datapoints of 42", reason)
	}
}
