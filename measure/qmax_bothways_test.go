package measure

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/measure/measuretest"
	"github.com/speech-infra/speech-infra/models"
)

// TestQMaxBothWays: a staircase whose step at concurrency 4 meets the TTFAB SLO but not the stall budget has
// two Q_max: 2 by TTFAB and stall, at least 4 by TTFAB alone (the definition of the original, docs/design.md
// "The original"; the staircase stops at 4, so no step failed by TTFAB alone and it is a lower bound). The
// artifact (and its JSON) and the table show both (tts-bench's TestPlanWithBothQMax: the plan plans with the
// stricter one).
func TestQMaxBothWays(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	cfg, recs := measuretest.BothWays(m.SLO.Percentile)
	runID, t0 := measuretest.BothWaysRunID, measuretest.BothWaysStart
	steps := bench.Summarize(recs, cfg.Judge())
	if len(steps) != 3 || !steps[1].MeetsSLO || steps[2].MeetsSLO || !steps[2].MeetsTTFABSLO {
		t.Fatalf("the steps are not judged as built (want 4 failing the stall only): %+v", steps)
	}

	dir := t.TempDir()
	out := filepath.Join(dir, "qmax.json")
	var stderr bytes.Buffer
	o := &QMax{Stderr: &stderr, Model: m, SLO: cfg.SLO, StallBudget: cfg.StallBudget, Transport: capacity.TransportSageMakerStream,
		ContainerDigest: capacity.DigestBytes([]byte("bothways container"))}
	r := &qmaxRun{o: o, runID: runID, started: t0, cfg: cfg, steps: steps, instanceType: models.LocalInstanceType,
		cwMax: map[int]float64{}, cwOuter: map[int]bool{}, cwRate: map[int]float64{}, remeasured: map[int]bool{}, inconclusive: map[int]bool{},
		client: map[int]clientUse{}, littleWarned: map[int]bool{}}
	q := r.artifact()
	gz := measuretest.GzipRecords(t, recs)
	q.RecordsFile, q.RecordsSHA256 = "qmax.records.jsonl.gz", capacity.DigestBytes(gz)
	q.EndedAt = t0.Add(time.Hour)
	if err := os.WriteFile(filepath.Join(dir, q.RecordsFile), gz, 0o644); err != nil {
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
	if err := RenderQMaxSummary(&table, q); err != nil {
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
}
