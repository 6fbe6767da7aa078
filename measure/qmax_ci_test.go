package measure

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
)

// TestQMaxRemeasuresAnInconclusiveStep: a step whose p95's 95% interval holds the SLO is
// measured again with a window twice as long before the ladder moves on, at most once; still inconclusive, it
// is judged as measured and flagged. The server's first audio byte comes 0, 10, ..., 190 ms after the request
// in turn, so the p95's interval is tens of milliseconds wide. The SLO is put inside it by measuring the step
// once first (with an SLO no step meets or misses by its interval) and taking the middle of that interval: a
// loaded machine shifts every TTFAB alike, and the SLO with them.
func TestQMaxRemeasuresAnInconclusiveStep(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Duration((n.Add(1)-1)%20) * 10 * time.Millisecond)
		w.Header().Set("X-Sample-Rate", "24000")
		w.Write(append(testWAVHeader(24000), make([]byte, 4800)...))
	}))
	defer srv.Close()
	run := func(slo time.Duration) (*qmaxRun, *bytes.Buffer, *bytes.Buffer, bench.Config) {
		var stderr, records bytes.Buffer
		o := &QMax{Stderr: &stderr, SLO: slo}
		cfg := bench.DefaultConfig()
		cfg.Settle, cfg.Hold, cfg.Measure, cfg.RequestTimeout, cfg.Grace = 0, 3*time.Second, 3*time.Second, 5*time.Second, 5*time.Second
		cfg.SLO, cfg.StallBudget, cfg.MinRequests = o.SLO, time.Second, 10
		cfg.Transport, cfg.Corpus, cfg.RunID, cfg.Records = bench.NewHTTP(srv.URL), bench.DefaultCorpus(), "ci-test", &records
		return &qmaxRun{o: o, cfg: cfg, view: newLineView(&stderr, time.Hour), cwMax: map[int]float64{}, cwOuter: map[int]bool{},
			remeasured: map[int]bool{}, inconclusive: map[int]bool{}, client: map[int]clientUse{}, littleWarned: map[int]bool{}}, &stderr, &records, cfg
	}
	cal, _, _, _ := run(time.Hour)
	c, err := cal.step(context.Background(), 4)
	if err != nil || !c.TTFABCIOK || !(c.TTFABCIHighMs > c.TTFABCILowMs) {
		t.Fatalf("the calibration step: %+v, %v: want a p95 with an interval", c, err)
	}
	slo := time.Duration((c.TTFABCILowMs + c.TTFABCIHighMs) / 2 * float64(time.Millisecond))
	r, stderr, records, cfg := run(slo)
	o := r.o
	s, err := r.step(context.Background(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if !r.remeasured[4] || s.WindowEnd.Sub(s.WindowStart) != 2*cfg.Measure {
		t.Fatalf("the step was not re-measured with a doubled window (remeasured %v, window %v):\n%s", r.remeasured[4], s.WindowEnd.Sub(s.WindowStart), stderr.String())
	}
	if !strings.Contains(stderr.String(), "INCONCLUSIVE: the 95% interval of the p95 TTFAB") {
		t.Errorf("the view does not say why the step is measured again:\n%s", stderr.String())
	}
	if len(r.steps) != 1 {
		t.Errorf("%d steps recorded, want the one step once", len(r.steps))
	}
	recs, err := bench.ReadRecords(records)
	if err != nil {
		t.Fatal(err)
	}
	windows := map[time.Time]bool{}
	for _, rec := range recs {
		windows[rec.WindowStart] = true
	}
	if again := bench.Summarize(recs, cfg.Judge()); len(windows) != 2 || len(again) != 1 || again[0].TTFABP95Ms != s.TTFABP95Ms || again[0].Requests != s.Requests {
		t.Errorf("records of %d windows re-report as %+v, want both windows kept and the later one the step's (%+v)", len(windows), again, s)
	}
	st := qmaxStepOf(s)
	st.Remeasured, st.Inconclusive = r.remeasured[4], r.inconclusive[4]
	if !s.TTFABCIOK || st.TTFABCILowMs > st.TTFABP95Ms || st.TTFABCIHighMs < st.TTFABP95Ms {
		t.Errorf("the artifact's step lacks its interval: %+v", st)
	}
	if s.Straddles(o.SLO) != r.inconclusive[4] {
		t.Errorf("inconclusive %v but the second interval [%g, %g] straddles the SLO: %v", r.inconclusive[4], s.TTFABCILowMs, s.TTFABCIHighMs, s.Straddles(o.SLO))
	}
	var table strings.Builder
	q := &capacity.QMax{Model: "m", InstanceType: "local", Transport: "http", SLOPercentile: 95, SLOTTFABMs: 92, Steps: []capacity.QMaxStep{st}}
	if err := RenderQMaxSummary(&table, q); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "95% CI ms") || !strings.Contains(table.String(), "["+fmtMs(st.TTFABCILowMs)+", "+fmtMs(st.TTFABCIHighMs)+"]") {
		t.Errorf("the table lacks the interval:\n%s", table.String())
	}
}
