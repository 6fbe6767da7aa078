package main

import (
	"bytes"
	"compress/gzip"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
)

// TestQMaxInterruptKeepsTheFinishedSteps: SIGINT after two finished steps writes a partial
// artifact (complete: false) of those steps, which Verify (and so plan) refuses; --resume with other flags is
// refused naming the difference; --resume with the same flags finishes the ladder, appending to the records,
// into an artifact of one run's shape that verifies.
func TestQMaxInterruptKeepsTheFinishedSteps(t *testing.T) {
	e := calibrationEndpoint(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "qmax.json")
	args := []string{"qmax", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"),
		"--ladder", "1,2,3", "--max-concurrency", "3", "--settle", "500ms", "--hold", "3s", "--measure-window", "2s", "--request-timeout", "5s",
		"--slo-ms", "5000", "--stall-budget-ms", "5000", "--min-requests", "5", "--max-client-cpu", "0", "--max-client-lag", "0", "--rate-fractions", "0.5,1", "--rate-refine", "0", "--rate-hold", "2s", "--rate-measure-window", "2s",
		"--container-dir", containerDir, "--output", out}
	cmd, output := startCLI(t, args...)
	waitOutput(t, output, "step 3: concurrency 3 (closed loop)", 90*time.Second)
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if code := waitExit(t, cmd, 60*time.Second, output); code != 1 {
		t.Errorf("exit %d after SIGINT, want 1; output:\n%s", code, output)
	}
	if !strings.Contains(output.String(), "wrote the partial artifact") || !strings.Contains(output.String(), "--resume") {
		t.Errorf("the interrupted run does not say it kept its work:\n%s", output)
	}
	partial, err := capacity.LoadQMax(out)
	if err != nil {
		t.Fatal(err)
	}
	if partial.IsComplete() || len(partial.Steps) != 2 || partial.Steps[1].Concurrency != 2 || len(partial.RateSteps) != 0 {
		t.Fatalf("partial artifact: complete %v, %d steps, %d rate steps; want complete false and the steps at 1 and 2", partial.IsComplete(), len(partial.Steps), len(partial.RateSteps))
	}
	if errs := partial.VerifyPartial(); len(errs) > 0 {
		t.Errorf("the partial artifact does not verify as one: %v", errs)
	}
	if errs := partial.Verify(); len(errs) != 1 || !strings.Contains(errs[0].Error(), "complete: is false") {
		t.Errorf("Verify of a partial artifact: %v, want it refused for complete: false alone", errs)
	}

	// Other flags: refused, naming the difference; nothing changes.
	other := append(append([]string(nil), args...), "--resume")
	for i, a := range other {
		if a == "--hold" {
			other[i+1] = "4s"
		}
	}
	if _, stderr, code := runCLI(t, other...); code != 2 || !strings.Contains(stderr, "hold_s: was 3, now 4") {
		t.Errorf("--resume with another --hold: exit %d, want 2 naming hold_s:\n%s", code, stderr)
	}

	stdout, stderr, code := runCLI(t, append(args, "--resume")...)
	if code != 0 {
		t.Fatalf("--resume: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	q, err := capacity.LoadQMax(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("the resumed artifact does not verify: %v", errs)
	}
	var cs []int
	for _, s := range q.Steps {
		cs = append(cs, s.Concurrency)
	}
	if !q.IsComplete() || q.RunID != partial.RunID || !q.StartedAt.Equal(partial.StartedAt) || !reflect.DeepEqual(cs, []int{1, 2, 3}) || len(q.RateSteps) != 2 || q.QMax != 3 {
		t.Errorf("resumed: complete %v, run %s (partial %s), steps %v, %d rate steps, Q_max %d; want the one run's shape: steps 1,2,3, two rate steps, Q_max 3", q.IsComplete(), q.RunID, partial.RunID, cs, len(q.RateSteps), q.QMax)
	}
	if !reflect.DeepEqual(q.Steps[:2], partial.Steps) {
		t.Errorf("the finished steps changed on resume:\n%+v\nwant\n%+v", q.Steps[:2], partial.Steps)
	}
	data, err := os.ReadFile(filepath.Join(dir, q.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if capacity.DigestBytes(data) != q.RecordsSHA256 {
		t.Errorf("the records' digest is not the artifact's")
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	recs, err := bench.ReadRecords(zr)
	if err != nil {
		t.Fatal(err)
	}
	cfg := bench.DefaultConfig()
	cfg.SLO, cfg.StallBudget, cfg.MinRequests = 5*time.Second, 5*time.Second, 5
	again := bench.Summarize(recs, cfg.Judge())
	if len(again) != 3 {
		t.Fatalf("the appended records hold %d closed-loop steps, want 3", len(again))
	}
	for i, s := range again {
		if a := q.Steps[i]; s.Concurrency != a.Concurrency || s.TTFABP95Ms != a.TTFABP95Ms || s.OK != a.OKCount {
			t.Errorf("re-reported step %d differs: %+v vs %+v", i, s, a)
		}
	}
	if n := len(bench.SummarizeRateSteps(recs, cfg.Judge(), 0)); n != 2 {
		t.Errorf("the records hold %d rate steps, want 2", n)
	}
	// A complete artifact is not resumed.
	if _, stderr, code := runCLI(t, append(args, "--resume")...); code != 2 || !strings.Contains(stderr, "is a complete artifact") {
		t.Errorf("--resume of a complete artifact: exit %d:\n%s", code, stderr)
	}
}
