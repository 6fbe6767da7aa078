package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// TestQMaxBothWays: a staircase whose step at concurrency 4 meets the TTFAB SLO but not the stall budget has
// two Q_max: 2 by TTFAB and stall, at least 4 by TTFAB alone (the definition of the original, docs/design.md
// "The original"; the staircase stops at 4, so no step failed by TTFAB alone and it is a lower bound). The
// artifact (and its JSON), the table and the plan show both; the plan plans with the stricter one.
func TestQMaxBothWays(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.DefaultConfig()
	cfg.SLO, cfg.StallBudget, cfg.MinRequests = time.Second, 250*time.Millisecond, 10
	cfg.SLOPercentile = m.SLO.Percentile

	// Synthetic records, as the engine writes them: each worker back to back, 500-ms responses over a 10-s
	// window. TTFAB 100 ms everywhere (SLO 1000 ms); p95 stall 0 at 1 and 2, 400 ms at 4 (budget 250 + 50).
	const runID = "qmax-bothways-test"
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var recs []bench.Record
	for _, c := range []int{1, 2, 4} {
		stall := 0.0
		if c == 4 {
			stall = 400
		}
		ws := t0.Add(time.Duration(c) * time.Minute)
		we := ws.Add(10 * time.Second)
		for w := 0; w < c; w++ {
			for k := 0; k < 20; k++ {
				sent := ws.Add(time.Duration(k) * 500 * time.Millisecond)
				recs = append(recs, bench.Record{
					RunID: runID, Transport: capacity.TransportSageMakerStream, Step: c, Worker: w, Seq: k, Chars: 40,
					Sent: sent, FirstAudio: sent.Add(100 * time.Millisecond), End: sent.Add(500 * time.Millisecond),
					WindowStart: ws, WindowEnd: we, Measured: true, TTFABMs: 100, ResponseMs: 500, StallMs: stall,
					Status: 200, Class: bench.ClassOK,
				})
			}
		}
	}
	steps := bench.Summarize(recs, cfg.Judge())
	if len(steps) != 3 || !steps[1].MeetsSLO || steps[2].MeetsSLO || !steps[2].MeetsTTFABSLO {
		t.Fatalf("the steps are not judged as built (want 4 failing the stall only): %+v", steps)
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "qmax.json")
	var stderr bytes.Buffer
	o := &qmaxOpts{stderr: &stderr, model: m, slo: cfg.SLO, stallBudget: cfg.StallBudget, transport: capacity.TransportSageMakerStream,
		containerDigest: capacity.DigestBytes([]byte("bothways container"))}
	r := &qmaxRun{o: o, runID: runID, started: t0, cfg: cfg, steps: steps, instanceType: models.LocalInstanceType,
		cwMax: map[int]float64{}, cwOuter: map[int]bool{}, cwRate: map[int]float64{}, remeasured: map[int]bool{}, inconclusive: map[int]bool{},
		client: map[int]clientUse{}, littleWarned: map[int]bool{}}
	q := r.artifact()
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	rw := bench.NewRecordWriter(zw)
	for _, rec := range recs {
		if err := rw.Write(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	q.RecordsFile, q.RecordsSHA256 = "qmax.records.jsonl.gz", capacity.DigestBytes(gz.Bytes())
	q.EndedAt = t0.Add(time.Hour)
	if err := os.WriteFile(filepath.Join(dir, q.RecordsFile), gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("the artifact does not verify: %v", errs)
	}

	// The artifact: two Q_max.
	if q.QMax != 2 || q.BracketLowestFail != 4 {
		t.Errorf("Q_max by TTFAB and stall is %d (lowest fail %d), want 2 (4)", q.QMax, q.BracketLowestFail)
	}
	if q.QMaxTTFABOnly == nil || *q.QMaxTTFABOnly != 4 || q.BracketTTFABOnlyLowestFail == nil || *q.BracketTTFABOnlyLowestFail != 0 {
		t.Fatalf("Q_max by TTFAB alone is %v (lowest fail %v), want 4 (0: a lower bound)", q.QMaxTTFABOnly, q.BracketTTFABOnlyLowestFail)
	}
	data, err := capacity.MarshalArtifact(q)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	if doc["q_max"] != 2.0 || doc["q_max_ttfab_only"] != 4.0 || doc["bracket_ttfab_only_lowest_fail"] != 0.0 {
		t.Errorf("the JSON artifact gives q_max %v, q_max_ttfab_only %v, bracket_ttfab_only_lowest_fail %v; want 2, 4, 0", doc["q_max"], doc["q_max_ttfab_only"], doc["bracket_ttfab_only_lowest_fail"])
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}

	// The table.
	var table strings.Builder
	if err := renderQMaxSummary(&table, q); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"Q_max of espeak-ng on local over sagemaker-stream: 2 by p95 TTFAB and p95 stall, the one the plan uses (passes at 2, fails at 4)",
		"Q_max by p95 TTFAB alone (the original's definition, for comparison only): 4 (a lower bound: no step failed by TTFAB alone; the staircase stopped at 4",
		"a player buffer of 250 ms",
	} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
	var row4 string
	for _, l := range strings.Split(table.String(), "\n") {
		if strings.HasPrefix(l, "4 ") {
			row4 = l
		}
	}
	if f := strings.Fields(row4); len(f) < 3 || f[1] != "no" || f[2] != "yes" {
		t.Errorf("the row of concurrency 4 should fail (pass no) yet meet TTFAB alone (ttfab yes): %q", row4)
	}

	// The plan: built with Q_max 2, and shows 4 beside it.
	tmpl, err := os.ReadFile(filepath.Join("testdata", "qmax-ttotal.json.tmpl"))
	if err != nil {
		t.Fatal(err)
	}
	ttotal := filepath.Join(dir, "ttotal.json")
	if err := os.WriteFile(ttotal, bytes.ReplaceAll(tmpl, []byte("{{QMAX_SHA256}}"), []byte(capacity.DigestBytes(data))), 0o644); err != nil {
		t.Fatal(err)
	}
	plan := filepath.Join(dir, "plan.json")
	stdout, stderrPlan, code := runCLI(t, "plan", "--model", "espeak-ng", "--qmax", out, "--ttotal", ttotal, "--peak-rps", "1", "--output", plan)
	if code == 2 {
		t.Fatalf("plan refused the artifact: exit 2\n%s\n%s", stdout, stderrPlan)
	}
	p, err := capacity.LoadPlan(plan)
	if err != nil {
		t.Fatal(err)
	}
	if p.Inputs.QMax != 2 {
		t.Errorf("the plan was built with Q_max %d, want the stricter 2 (TTFAB and stall)", p.Inputs.QMax)
	}
	if v := p.Inputs.QMaxTTFABOnly; v == nil || *v != 4 || !p.Inputs.QMaxTTFABOnlyLowerBound {
		t.Errorf("plan.json records Q_max by TTFAB alone %v (lower bound %v), want 4, a lower bound", v, p.Inputs.QMaxTTFABOnlyLowerBound)
	}
	for _, want := range []string{"concurrent requests per instance within the SLO, by TTFAB and stall: planned with", "Q_max TTFAB only  ≥ 4"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan's table lacks %q:\n%s", want, stdout)
		}
	}
}
