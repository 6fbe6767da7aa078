package measure

import (
	"bytes"
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	cwtypes "github.com/aws/aws-sdk-go-v2/service/cloudwatch/types"

	"github.com/speech-infra/speech-infra/bench"
)

// fakeMetrics answers GetMetricData with fixed 10-s Maximum datapoints and keeps the last window asked for.
type fakeMetrics struct {
	values     []float64
	start, end time.Time
}

func (f *fakeMetrics) GetMetricData(_ context.Context, in *cloudwatch.GetMetricDataInput, _ ...func(*cloudwatch.Options)) (*cloudwatch.GetMetricDataOutput, error) {
	f.start, f.end = aws.ToTime(in.StartTime), aws.ToTime(in.EndTime)
	r := cwtypes.MetricDataResult{Id: in.MetricDataQueries[0].Id, StatusCode: cwtypes.StatusCodeComplete}
	for i, v := range f.values {
		r.Timestamps = append(r.Timestamps, f.start.Add(time.Duration(i)*10*time.Second))
		r.Values = append(r.Values, v)
	}
	return &cloudwatch.GetMetricDataOutput{MetricDataResults: []cwtypes.MetricDataResult{r}}, nil
}

// A rate step's cloudwatch_max_10s is the mean of the 10-s Maximum datapoints of the whole periods in its
// window; a window without a whole period is not read.
func TestRateStepCloudWatch(t *testing.T) {
	f := &fakeMetrics{values: []float64{2, 4, 9}}
	var stderr bytes.Buffer
	r := &qmaxRun{o: &QMax{Stderr: &stderr}, cw: f, cwRate: map[int]float64{}}
	ws := time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC)
	s := bench.RateStepResult{ID: bench.RateStepID{Index: 2}, WindowStart: ws, WindowEnd: ws.Add(40 * time.Second)}
	r.readRateConcurrency(context.Background(), s)
	if got := r.cwRate[2]; got != 5 || !f.start.Equal(ws.Add(5*time.Second)) || !f.end.Equal(ws.Add(35*time.Second)) {
		t.Errorf("cloudwatch_max_10s %g over %s–%s, want the mean 5 of the periods from :10 to :40", got, f.start.Format(time.TimeOnly), f.end.Format(time.TimeOnly))
	}
	short := bench.RateStepResult{ID: bench.RateStepID{Index: 3}, WindowStart: ws, WindowEnd: ws.Add(12 * time.Second)}
	if r.readRateConcurrency(context.Background(), short); rateWindowHasPeriod(short) || r.cwRate[3] != 0 {
		t.Errorf("a 12-s window off the grid holds no whole period: read %g", r.cwRate[3])
	}
}

// A step whose requests get no answer at all stops the staircase as a lost connection (qmax then writes the
// finished steps as a partial artifact), instead of being recorded as a step.
func TestQMaxLostConnectionStopsTheStaircase(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close()
	var stderr bytes.Buffer
	o := &QMax{Stderr: &stderr, SLO: time.Second}
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure, cfg.RequestTimeout, cfg.Grace = 0, 500*time.Millisecond, 500*time.Millisecond, time.Second, time.Second
	cfg.SLO, cfg.MinRequests = time.Second, 1
	cfg.Transport, cfg.Corpus, cfg.RunID = bench.NewHTTP(url), bench.DefaultCorpus(), "lost"
	r := &qmaxRun{o: o, cfg: cfg, view: newLineView(&stderr, time.Hour), cwMax: map[int]float64{}, cwOuter: map[int]bool{},
		remeasured: map[int]bool{}, inconclusive: map[int]bool{}, client: map[int]clientUse{}, littleWarned: map[int]bool{}}
	_, err = r.step(context.Background(), 2)
	if !errors.Is(err, errLostConnection) || len(r.steps) != 0 || !strings.Contains(stderr.String(), "got no answer at all") {
		t.Errorf("err %v, %d steps recorded: want the lost connection and no step\n%s", err, len(r.steps), stderr.String())
	}
}
