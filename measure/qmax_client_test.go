package measure

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
)

// The watch sees the process's own CPU time and its scheduling lag.
func TestWatchClient(t *testing.T) {
	w := watchClient()
	deadline := time.Now().Add(300 * time.Millisecond)
	x := 0
	for time.Now().Before(deadline) { // one core busy
		x++
	}
	busy := w.Stop()
	w = watchClient()
	time.Sleep(300 * time.Millisecond)
	idle := w.Stop()
	// On a shared machine the busy loop gets what the scheduler gives it: only the order is certain.
	if !(busy.CPUCores > 0.05) || !(idle.CPUCores < busy.CPUCores) || busy.LagMaxMs < busy.LagP99Ms || busy.LagMaxMs <= 0 {
		t.Errorf("busy %+v, idle %+v: want CPU time seen while busy, less idle, and the lag measured (max ≥ p99) (%d)", busy, idle, x)
	}
	o := &QMax{MaxClientCPU: 0.8, MaxClientLag: 50 * time.Millisecond}
	if why := o.judgeClient(clientUse{CPUCores: 0.9, LagP99Ms: 10}); !strings.Contains(why, "used 0.90 of a core, above --max-client-cpu 0.80") {
		t.Errorf("0.9 cores: %q", why)
	}
	if why := o.judgeClient(clientUse{CPUCores: 0.2, LagP99Ms: 60, LagMaxMs: 90}); !strings.Contains(why, "scheduling lag was 60.0 ms p99 (90.0 ms max), above --max-client-lag 50ms") {
		t.Errorf("60 ms lag: %q", why)
	}
	if why := o.judgeClient(clientUse{CPUCores: 0.2, LagP99Ms: 10}); why != "" {
		t.Errorf("a quiet client: %q", why)
	}
}

// TestQMaxClientBoundStepIsUnusable: a step where the measuring process used more than its
// share of a core is unusable and says why, and the artifact records the client's CPU and lag; a step whose
// rate × response time disagrees with its concurrency is flagged by Little's law.
func TestQMaxClientBoundStepIsUnusable(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(10 * time.Millisecond)
		w.Header().Set("X-Sample-Rate", "24000")
		w.Write(append(testWAVHeader(24000), make([]byte, 4800)...))
	}))
	defer srv.Close()
	var stderr bytes.Buffer
	o := &QMax{Stderr: &stderr, SLO: time.Second, MaxClientCPU: 1e-9, MaxClientLag: time.Hour}
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure, cfg.RequestTimeout, cfg.Grace = 0, time.Second, time.Second, 2*time.Second, 2*time.Second
	cfg.SLO, cfg.StallBudget, cfg.MinRequests = o.SLO, time.Second, 5
	cfg.Transport, cfg.Corpus, cfg.RunID = bench.NewHTTP(srv.URL), bench.DefaultCorpus(), "client-test"
	r := &qmaxRun{o: o, cfg: cfg, view: newLineView(&stderr, time.Hour), cwMax: map[int]float64{}, cwOuter: map[int]bool{},
		remeasured: map[int]bool{}, inconclusive: map[int]bool{}, client: map[int]clientUse{}, littleWarned: map[int]bool{}}
	s, err := r.step(context.Background(), 2)
	if err != nil {
		t.Fatal(err)
	}
	if s.Usable || !strings.Contains(s.UnusableReason, "client-bound: the measuring process used") {
		t.Errorf("usable %v (%q): want a client-bound step", s.Usable, s.UnusableReason)
	}
	st := qmaxStepOf(s)
	if u := r.client[2]; u.CPUCores <= 0 {
		t.Errorf("the client's CPU was not measured: %+v", u)
	}
	if ratio, ok := st.LittlesLaw(); !ok || ratio < 0.9 || ratio > 1.1 {
		t.Logf("Little's law on a healthy step: ratio %.3f (ok %v)", ratio, ok)
	}
	st.AchievedRPS *= 2
	if ratio, ok := st.LittlesLaw(); ok || ratio < 1.5 {
		t.Errorf("a rate twice what the concurrency and response time allow: ratio %.3f, ok %v: want flagged", ratio, ok)
	}
	if _, ok := (capacity.QMaxStep{}).LittlesLaw(); !ok {
		t.Errorf("a step with nothing measured is not flagged")
	}
}
