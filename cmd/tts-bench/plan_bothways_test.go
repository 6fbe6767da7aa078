package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/measure/measuretest"
	"github.com/speech-infra/speech-infra/models"
)

// TestPlanWithBothQMax: from a qmax artifact whose Q_max by TTFAB and stall is 2 and by TTFAB alone at least 4
// (measure's TestQMaxBothWays), the plan plans with the stricter one and shows both.
func TestPlanWithBothQMax(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	cfg, recs := measuretest.BothWays(m.SLO.Percentile)
	t0 := measuretest.BothWaysStart
	run := capacity.QMaxRun{
		Model: m.ID, Endpoint: m.EndpointName(), InstanceType: models.LocalInstanceType, ModelRevision: m.Revision(),
		ContainerDigest: capacity.DigestBytes([]byte("bothways container")), Transport: capacity.TransportSageMakerStream,
		RunID: measuretest.BothWaysRunID, SLOTTFABMs: int(cfg.SLO / time.Millisecond), SLOPercentile: cfg.SLOPercentile,
		StartedAt: t0, EndedAt: t0.Add(time.Hour), CloudWatchPeriod: cloud.ConcurrencyPeriod,
	}
	for _, s := range bench.Summarize(recs, cfg.Judge()) {
		run.Steps = append(run.Steps, capacity.MeasuredStep{Step: s})
	}
	q, _ := capacity.NewQMax(run)
	dir := t.TempDir()
	gz := measuretest.GzipRecords(t, recs)
	q.RecordsFile, q.RecordsSHA256 = "qmax.records.jsonl.gz", capacity.DigestBytes(gz)
	if err := os.WriteFile(filepath.Join(dir, q.RecordsFile), gz, 0o644); err != nil {
		t.Fatal(err)
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("the artifact does not verify: %v", errs)
	}
	if q.QMax != 2 || q.QMaxTTFABOnly == nil || *q.QMaxTTFABOnly != 4 {
		t.Fatalf("the artifact has Q_max %d and by TTFAB alone %v, want 2 and 4", q.QMax, q.QMaxTTFABOnly)
	}
	data, err := capacity.MarshalArtifact(q)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "qmax.json")
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
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
		if !strings.Contains(flat(stdout), flat(want)) {
			t.Errorf("plan's table lacks %q:\n%s", want, stdout)
		}
	}
}
