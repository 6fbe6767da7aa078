package bench

import (
	"bytes"
	"context"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync"
	"testing"
	"time"
)

// TestPoissonArrivals: exponential gaps of mean 1/rps (a count within 4 standard deviations of rps × d, gaps
// with the exponential's coefficient of variation 1), in order, inside [0, d), the same for one seed and
// stream and different for another stream.
func TestPoissonArrivals(t *testing.T) {
	const rps, d = 200.0, 50 * time.Second
	var offs []time.Duration
	for k, off := range PoissonArrivals(rps, d, 7, 0) {
		if k != int64(len(offs)) || off < 0 || off >= d || (len(offs) > 0 && off < offs[len(offs)-1]) {
			t.Fatalf("arrival %d at %v after %d arrivals: want indexes from 0 and increasing offsets in [0, %v)", k, off, len(offs), d)
		}
		offs = append(offs, off)
	}
	mean := rps * d.Seconds()
	if n := float64(len(offs)); math.Abs(n-mean) > 4*math.Sqrt(mean) {
		t.Errorf("%d arrivals in %v at %g rps, want about %g", len(offs), d, rps, mean)
	}
	var sum, sq float64
	prev := time.Duration(0)
	for _, o := range offs {
		g := (o - prev).Seconds()
		sum += g
		sq += g * g
		prev = o
	}
	m := sum / float64(len(offs))
	cv := math.Sqrt(sq/float64(len(offs))-m*m) / m
	if math.Abs(cv-1) > 0.1 {
		t.Errorf("gaps have a coefficient of variation %.3f, want about 1 (exponential), not evenly spaced", cv)
	}
	var again, other []time.Duration
	for _, off := range PoissonArrivals(rps, d, 7, 0) {
		again = append(again, off)
	}
	for _, off := range PoissonArrivals(rps, d, 7, 1) {
		other = append(other, off)
	}
	if !reflect.DeepEqual(offs, again) || reflect.DeepEqual(offs, other) {
		t.Errorf("the same seed and stream must give the same arrivals, another stream others")
	}
}

// serialServer answers one request at a time (a saturating instance: one slot), each after service, with a
// short WAV.
func serialServer(t *testing.T, service time.Duration) *httptest.Server {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		time.Sleep(service)
		mu.Unlock()
		w.Header().Set("X-Sample-Rate", "24000")
		w.Write(append(wavHeader(24000), make([]byte, 4800)...))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func rateConfig(tr Transport, index int, rps float64) RateStepConfig {
	return RateStepConfig{
		ID:     RateStepID{Index: index, Fraction: rps / 50, OfferedRPS: rps},
		Settle: 300 * time.Millisecond, Hold: 2 * time.Second, Measure: 1500 * time.Millisecond, RequestTimeout: 2 * time.Second,
		Judge:     Judge{SLO: time.Second, SLOPercentile: 95, StallBudget: time.Second, StallJitter: DefaultStallJitter, MinRequests: 5},
		MaxLag:    time.Second, // a loaded test machine must not make the step unusable
		Transport: tr, Corpus: DefaultCorpus(), Seed: 3, RunID: "rate-test",
	}
}

// TestRunRateStep: two rate steps against a one-slot server of 20 ms per request (50 rps at most): the records
// carry the step and its window and re-report to exactly the steps' results, the closed-loop Summarize skips
// them, the arrival rate is about the offered one, and the requests in flight grow with the offered rate (a
// queue forms near saturation), which is what the rate staircase measures.
func TestRunRateStep(t *testing.T) {
	srv := serialServer(t, 20*time.Millisecond)
	var out bytes.Buffer
	var got []RateStepResult
	for i, rps := range []float64{8, 40} {
		cfg := rateConfig(NewHTTP(srv.URL), i, rps)
		cfg.Records = &out
		var progress []Progress
		cfg.Observer = func(p Progress) { progress = append(progress, p) }
		s, err := RunRateStep(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(progress) == 0 || progress[len(progress)-1].Phase != PhaseDone {
			t.Errorf("step %d: the observer was not called to the end: %+v", i, progress)
		}
		if s.ID != cfg.ID || s.Workers != RateStepWorkers(rps, cfg.RequestTimeout) || s.WindowEnd.Sub(s.WindowStart) != cfg.Measure {
			t.Errorf("step %d: id %+v, %d workers, window %v", i, s.ID, s.Workers, s.WindowEnd.Sub(s.WindowStart))
		}
		if s.OK == 0 || s.Errors+s.Shed != 0 || s.Dropped != 0 || !s.MeetsSLO {
			t.Errorf("step %d at %g rps: %d ok, %d errors, %d shed, %d dropped, meets SLO %v (%v)", i, rps, s.OK, s.Errors, s.Shed, s.Dropped, s.MeetsSLO, s.FailReasons)
		}
		if mean := rps * cfg.Measure.Seconds(); math.Abs(float64(s.Requests)-mean) > 5*math.Sqrt(mean)+2 {
			t.Errorf("step %d: %d requests sent in the window, want about %g (%g rps)", i, s.Requests, mean, rps)
		}
		if s.InFlightMax10s < s.InFlightMean || float64(s.InFlightPeak) < s.InFlightMax10s {
			t.Errorf("step %d: in flight mean %g, 10-s max %g, peak %d: want mean ≤ max10s ≤ peak", i, s.InFlightMean, s.InFlightMax10s, s.InFlightPeak)
		}
		got = append(got, s)
	}
	if !(got[1].InFlightMean > 2*got[0].InFlightMean) {
		t.Errorf("in flight at 40 rps %.3f, at 8 rps %.3f: want it to grow faster than the rate near saturation", got[1].InFlightMean, got[0].InFlightMean)
	}
	recs, err := ReadRecords(&out)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.RateStep == nil || r.Arrival == nil {
			t.Fatalf("a rate step's record lacks its step or arrival: %+v", r)
		}
	}
	again := SummarizeRateSteps(recs, rateConfig(nil, 0, 1).Judge, time.Second)
	for i := range again {
		again[i].FailReasons, got[i].FailReasons = nil, nil
	}
	if !reflect.DeepEqual(again, got) {
		t.Errorf("the records re-report differently:\n%+v\nwant\n%+v", again, got)
	}
	if s := Summarize(recs, Judge{SLO: time.Second, SLOPercentile: 95, MinRequests: 1}); len(s) != 0 {
		t.Errorf("the closed-loop Summarize folded %d steps from rate-step records, want none", len(s))
	}
}

// A rate step with shed requests misses the SLO by its shed share; too few requests or a client that fell
// behind its schedule make it unusable.
func TestRateStepJudgement(t *testing.T) {
	ws := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	we := ws.Add(10 * time.Second)
	id := RateStepID{Index: 0, Fraction: 1, OfferedRPS: 10}
	mk := func(i int, class string, lag time.Duration) Record {
		sent := ws.Add(time.Duration(i) * 100 * time.Millisecond)
		r := Record{Step: 20, Sent: sent, End: sent.Add(50 * time.Millisecond), WindowStart: ws, WindowEnd: we, Measured: true,
			Class: class, TTFABMs: 10, RateStep: &id, Arrival: &Arrival{Index: int64(i), Scheduled: sent.Add(-lag)}}
		return r
	}
	j := Judge{SLO: time.Second, SLOPercentile: 95, StallBudget: time.Second, MinRequests: 50}
	var recs []Record
	for i := range 100 {
		class := ClassOK
		if i%10 == 0 {
			class = ClassShed
		}
		recs = append(recs, mk(i, class, 0))
	}
	s := SummarizeRateSteps(recs, j, 0)[0]
	if s.MeetsSLO || s.ShedFraction != 0.1 || !s.Usable || s.ArrivalRPS != 10 || s.AchievedRPS != 9 {
		t.Errorf("10%% shed: meets %v, shed %g, usable %v (%s), arrival %g, achieved %g; want a usable failure at 10 and 9 rps", s.MeetsSLO, s.ShedFraction, s.Usable, s.UnusableReason, s.ArrivalRPS, s.AchievedRPS)
	}
	for i := range recs {
		recs[i].Class = ClassOK
		recs[i].Arrival.Scheduled = recs[i].Sent.Add(-200 * time.Millisecond)
	}
	s = SummarizeRateSteps(recs, j, 0)[0]
	if !s.MeetsSLO || s.Usable || s.LagP95Ms != 200 {
		t.Errorf("200 ms behind schedule: meets %v, usable %v, lag p95 %g: want a pass the client cannot vouch for", s.MeetsSLO, s.Usable, s.LagP95Ms)
	}
	j.MinRequests = 101
	for i := range recs {
		recs[i].Arrival.Scheduled = recs[i].Sent
	}
	if s = SummarizeRateSteps(recs, j, 0)[0]; s.Usable {
		t.Errorf("100 requests with 101 wanted is usable")
	}
}

func TestInFlightMax(t *testing.T) {
	ws := time.Date(2026, 1, 1, 0, 0, 5, 0, time.UTC) // off the 10-s grid: slices [10,20) and [20,30)
	we := ws.Add(30 * time.Second)
	at := func(s float64) time.Time { return time.Date(2026, 1, 1, 0, 0, 0, int(s*1e9), time.UTC) }
	recs := []Record{
		{Sent: at(11), End: at(12)}, {Sent: at(11.5), End: at(13)}, {Sent: at(12.5), End: at(14)}, // peak 2 in [10,20)
		{Sent: at(21), End: at(22)},                                                           // peak 1 in [20,30)
		{Sent: at(31), End: at(32)}, {Sent: at(31), End: at(32)}, {Sent: at(31), End: at(32)}, // outside the whole slices
	}
	if got := InFlightMax(recs, ws, we, 10*time.Second); got != 1.5 {
		t.Errorf("InFlightMax = %g, want (2+1)/2", got)
	}
	if got := InFlightMax(recs, at(30.5), at(33), 10*time.Second); got != 3 {
		t.Errorf("a window with no whole slice: %g, want its own peak 3", got)
	}
}

func TestRunRateStepValidateAndCancel(t *testing.T) {
	if _, err := RunRateStep(context.Background(), RateStepConfig{}); !errors.Is(err, ErrConfig) {
		t.Errorf("an empty config: %v, want ErrConfig", err)
	}
	srv := serialServer(t, 20*time.Millisecond)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := RunRateStep(ctx, rateConfig(NewHTTP(srv.URL), 0, 10))
	if !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 2*time.Second {
		t.Errorf("a canceled step: %v after %v, want the context's error at once", err, time.Since(start))
	}
}
