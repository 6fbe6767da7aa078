package emulator_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// UpdateEndpoint swaps the fleet blue/green: Updating while the new instance starts, the old one serving until
// the new one answers /ping; then InService on the new config with a new instance. An update whose instances
// cannot start rolls back to the old config, InService, with FailureReason.
func TestUpdateEndpointBlueGreen(t *testing.T) {
	r := emulatortest.Start(t, emulatortest.Container(t))
	c := r.Clients
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-espeak-ng"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1))
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)
	blue := r.InstanceIDs(name)

	// Invalid updates get the AWS error shape and change nothing.
	if _, err := c.SageMaker.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String("no-such-config")}); apiCode(err) != "ValidationException" {
		t.Errorf("UpdateEndpoint to a missing config: %v, want ValidationException", err)
	}
	if _, err := c.SageMaker.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String("no-such-endpoint"), EndpointConfigName: aws.String(name)}); apiCode(err) != "ValidationException" {
		t.Errorf("UpdateEndpoint of a missing endpoint: %v, want ValidationException", err)
	}

	emulatortest.Version(t, r, name+"-v2", emulatortest.Env(map[string]string{"QUEUE_MAX_DEPTH": "16"}), emulatortest.StartupTimeout(60*time.Second))
	// Traffic keeps flowing during the swap: every stream started while Updating succeeds.
	stop := make(chan struct{})
	wait := load(ctx, r, name, 2, stop)
	if _, err := c.SageMaker.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String(name + "-v2")}); err != nil {
		t.Fatalf("UpdateEndpoint: %v", err)
	}
	d := describe(ctx, t, c, name)
	if d.EndpointStatus != smtypes.EndpointStatusUpdating || d.PendingDeploymentSummary == nil || aws.ToString(d.PendingDeploymentSummary.EndpointConfigName) != name+"-v2" {
		t.Fatalf("after UpdateEndpoint: status %s, pending %+v; want Updating towards %s-v2", d.EndpointStatus, d.PendingDeploymentSummary, name)
	}
	if aws.ToString(d.EndpointConfigName) != name {
		t.Errorf("while Updating, EndpointConfigName = %s, want the old %s", aws.ToString(d.EndpointConfigName), name)
	}
	if _, err := c.SageMaker.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String(name + "-v2")}); apiCode(err) != "ValidationException" {
		t.Errorf("UpdateEndpoint while Updating: %v, want ValidationException", err)
	}
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)
	close(stop)
	if ok, failed, first := wait(); failed > 0 || ok == 0 {
		t.Errorf("during the blue/green swap: %d streams ok, %d failed (first: %v)", ok, failed, first)
	}
	d = describe(ctx, t, c, name)
	if aws.ToString(d.EndpointConfigName) != name+"-v2" || d.PendingDeploymentSummary != nil || d.FailureReason != nil {
		t.Errorf("after the update: config %s, pending %+v, failure %v", aws.ToString(d.EndpointConfigName), d.PendingDeploymentSummary, aws.ToString(d.FailureReason))
	}
	green := r.InstanceIDs(name)
	if len(green) != 1 || len(blue) != 1 || green[0] == blue[0] {
		t.Errorf("instances before %v, after %v: want one new instance replacing the old one", blue, green)
	}
	audio, err := stream(ctx, c, name, "Updated in place.")
	if err != nil {
		t.Fatalf("stream after the update: %v", err)
	}
	checkWAV(t, audio)

	// A config whose container cannot start: the update fails and rolls back.
	emulatortest.Version(t, r, name+"-broken", emulatortest.Env(map[string]string{"ENGINE": "no-such-engine"}), emulatortest.StartupTimeout(60*time.Second))
	if _, err := c.SageMaker.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String(name + "-broken")}); err != nil {
		t.Fatalf("UpdateEndpoint to the broken config: %v", err)
	}
	emulatortest.WaitInService(ctx, t, c.SageMaker, name)
	d = describe(ctx, t, c, name)
	if aws.ToString(d.EndpointConfigName) != name+"-v2" || !strings.Contains(aws.ToString(d.FailureReason), "rolled back") {
		t.Errorf("after a failed update: config %s, FailureReason %q; want %s-v2 and a rollback reason", aws.ToString(d.EndpointConfigName), aws.ToString(d.FailureReason), name)
	}
	if ids := r.InstanceIDs(name); len(ids) != 1 || ids[0] != green[0] {
		t.Errorf("instances after the rollback %v, want the serving %v", ids, green)
	}
	audio, err = stream(ctx, c, name, "Still serving after a rollback.")
	if err != nil {
		t.Fatalf("stream after the rollback: %v", err)
	}
	checkWAV(t, audio)
}

// Percentile statistics are exact from the kept samples, in GetMetricStatistics, GetMetricData, alarms and
// their evaluation.
func TestExtendedStatistics(t *testing.T) {
	r := emulatortest.Start(t)
	c := r.Clients
	ctx := ctxFor(t, time.Minute)

	// 1..1000 in one past second of one series.
	t0 := time.Now().Add(-time.Hour).Truncate(time.Second)
	for v := 1000; v >= 1; v-- {
		r.AddMetric(emulator.NamespaceSageMaker, emulator.MetricModelLatency, "pct-fixed", "AllTraffic", t0.Add(time.Duration(v)*time.Microsecond), float64(v))
	}
	cwDims := []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("pct-fixed")}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}
	st, err := c.CloudWatch.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ModelLatency"), Dimensions: cwDims,
		StartTime: aws.Time(t0), EndTime: aws.Time(t0.Add(time.Second)), Period: aws.Int32(1),
		Statistics: []cwtypes.Statistic{cwtypes.StatisticAverage}, ExtendedStatistics: []string{"p50", "p95", "p99.9", "p100"},
	})
	if err != nil || len(st.Datapoints) != 1 {
		t.Fatalf("GetMetricStatistics = %+v, %v; want one datapoint", st, err)
	}
	want := map[string]float64{"p50": 500, "p95": 950, "p99.9": 999, "p100": 1000}
	for k, v := range want {
		if got := st.Datapoints[0].ExtendedStatistics[k]; got != v {
			t.Errorf("GetMetricStatistics %s = %g, want %g", k, got, v)
		}
	}
	if got := aws.ToFloat64(st.Datapoints[0].Average); got != 500.5 {
		t.Errorf("Average = %g, want 500.5", got)
	}
	md, err := c.CloudWatch.GetMetricData(ctx, &cloudwatch.GetMetricDataInput{
		StartTime: aws.Time(t0), EndTime: aws.Time(t0.Add(time.Second)),
		MetricDataQueries: []cwtypes.MetricDataQuery{{Id: aws.String("p95"), MetricStat: &cwtypes.MetricStat{
			Metric: &cwtypes.Metric{Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ModelLatency"), Dimensions: cwDims},
			Period: aws.Int32(1), Stat: aws.String("p95"),
		}}},
	})
	if err != nil || len(md.MetricDataResults) != 1 || len(md.MetricDataResults[0].Values) != 1 || md.MetricDataResults[0].Values[0] != 950 {
		t.Fatalf("GetMetricData p95 = %+v, %v; want [950]", md, err)
	}
	if _, err := c.CloudWatch.GetMetricStatistics(ctx, &cloudwatch.GetMetricStatisticsInput{
		Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ModelLatency"), StartTime: aws.Time(t0), EndTime: aws.Time(t0.Add(time.Second)),
		Period: aws.Int32(1), ExtendedStatistics: []string{"p101"},
	}); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("ExtendedStatistics p101: %v, want InvalidParameterValue", err)
	}

	// Alarms on p95 and p50 of a live series whose every period holds 1..100 evenly.
	live := []cwtypes.Dimension{{Name: aws.String("EndpointName"), Value: aws.String("pct-live")}, {Name: aws.String("VariantName"), Value: aws.String("AllTraffic")}}
	put := func(name, stat, ext string) error {
		in := &cloudwatch.PutMetricAlarmInput{
			AlarmName: aws.String(name), Namespace: aws.String("AWS/SageMaker"), MetricName: aws.String("ModelLatency"), Dimensions: live,
			Period: aws.Int32(1), EvaluationPeriods: aws.Int32(1), DatapointsToAlarm: aws.Int32(1), Threshold: aws.Float64(90),
			ComparisonOperator: cwtypes.ComparisonOperatorGreaterThanThreshold, TreatMissingData: aws.String("notBreaching"),
		}
		if stat != "" {
			in.Statistic = cwtypes.Statistic(stat)
		}
		if ext != "" {
			in.ExtendedStatistic = aws.String(ext)
		}
		_, err := c.CloudWatch.PutMetricAlarm(ctx, in)
		return err
	}
	if err := put("both", "Average", "p95"); apiCode(err) != "InvalidParameterCombination" {
		t.Errorf("Statistic and ExtendedStatistic together: %v, want InvalidParameterCombination", err)
	}
	if err := put("bad", "", "p100.5"); apiCode(err) != "InvalidParameterValue" {
		t.Errorf("ExtendedStatistic p100.5: %v, want InvalidParameterValue", err)
	}
	for _, a := range [][2]string{{"p95-high", "p95"}, {"p50-high", "p50"}} {
		if err := put(a[0], "", a[1]); err != nil {
			t.Fatalf("PutMetricAlarm %s: %v", a[0], err)
		}
	}
	feedCtx, stopFeed := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-feedCtx.Done():
				return
			case <-time.After(5 * time.Millisecond):
			}
			r.AddMetric(emulator.NamespaceSageMaker, emulator.MetricModelLatency, "pct-live", "AllTraffic", time.Now(), float64(i%100+1))
		}
	}()
	defer func() { stopFeed(); wg.Wait() }()
	state := func(name string) *cwtypes.MetricAlarm {
		out, err := c.CloudWatch.DescribeAlarms(ctx, &cloudwatch.DescribeAlarmsInput{AlarmNames: []string{name}})
		if err != nil || len(out.MetricAlarms) != 1 {
			t.Fatalf("DescribeAlarms %s = %+v, %v", name, out, err)
		}
		return &out.MetricAlarms[0]
	}
	eventually(t, hangBound, "the p95 alarm in ALARM and the p50 alarm OK", func() bool {
		return state("p95-high").StateValue == cwtypes.StateValueAlarm && state("p50-high").StateValue == cwtypes.StateValueOk
	})
	a := state("p95-high")
	if aws.ToString(a.ExtendedStatistic) != "p95" || a.Statistic != "" {
		t.Errorf("DescribeAlarms: Statistic %q, ExtendedStatistic %q; want only p95", a.Statistic, aws.ToString(a.ExtendedStatistic))
	}
}
