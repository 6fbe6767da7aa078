package main

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/measure/measuretest"
	"github.com/speech-infra/speech-infra/models"
)

// The end-to-end qmax tests run the emulator in the test process, so the process's CPU time and scheduling lag
// are not the client's alone: they pass --max-client-cpu 0 --max-client-lag 0 (no bound).

// calibrationEndpoint is the espeak-ng endpoint on the emulator with the calibration engine behind it: one
// worker, 20 ms per segment as a wait, so one instance saturates at a rate the test machine's load does not
// move, and a queue forms in front of its one slot.
func calibrationEndpoint(t *testing.T) *emulatortest.Emulator {
	t.Helper()
	e := emulatortest.Start(t, emulatortest.Container(t))
	emulatortest.Endpoint(t, e, "speech-espeak-ng", emulatortest.InService(),
		emulatortest.Env(map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "20", "ENGINE_WORKERS": "1"}))
	return e
}

// TestQMaxRateStaircase: qmax ends with the rate staircase. On a one-slot instance the artifact
// verifies, has one rate step per fraction at fraction × the highest closed-loop throughput, the requests in
// flight grow with the offered rate, the records file holds the rate steps' records (marked with rate_step)
// and re-reports them exactly, --format json prints the artifact, and the table shows the rate steps with
// their units. The rate steps' requests are admitted within the catalog's shield (espeak-ng's 16, sent as the
// custom attribute queue-max-depth on an unbounded endpoint): the step at 3 × the one slot's throughput, whose
// queue reaches 16 within a second, sheds most of its requests, and the artifact records the depth.
func TestQMaxRateStaircase(t *testing.T) {
	e := calibrationEndpoint(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "qmax.json")
	stdout, stderr, code := runCLI(t, "qmax", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"),
		"--ladder", "1,2,4", "--max-concurrency", "4", "--settle", "1s", "--hold", "4s", "--measure-window", "3s", "--request-timeout", "10s",
		"--slo-ms", "5000", "--stall-budget-ms", "5000", "--rate-fractions", "0.3,0.7,1.0,3.0", "--rate-refine", "0", "--rate-hold", "6s", "--rate-measure-window", "5s",
		"--seed", "7", "--min-requests", "10", "--max-client-cpu", "0", "--max-client-lag", "0", "--format", "json", "--container-dir", containerDir, "--output", out)
	if code != 0 {
		t.Fatalf("qmax: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	q, err := capacity.LoadQMax(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("the artifact does not verify: %v", errs)
	}
	if q.RetryPolicy != capacity.RetryPolicyNone {
		t.Errorf("retry_policy %q, want %q", q.RetryPolicy, capacity.RetryPolicyNone)
	}
	var printed capacity.QMax
	if err := json.Unmarshal([]byte(stdout), &printed); err != nil || !reflect.DeepEqual(&printed, q) {
		t.Errorf("--format json printed something else than the artifact (%v):\n%s", err, stdout)
	}
	highest := 0.0
	for _, s := range q.Steps {
		if s.Usable && s.OKCount > 0 {
			highest = max(highest, s.Throughput())
		}
	}
	if q.HighestThroughputRPS != highest || highest <= 0 {
		t.Errorf("highest_throughput_rps %g, want the highest closed-loop throughput %g", q.HighestThroughputRPS, highest)
	}
	if len(q.RateSteps) != 4 {
		t.Fatalf("%d rate steps, want one per fraction (4)", len(q.RateSteps))
	}
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	if q.RateQueueMaxDepth != m.QueueMaxDepth || m.QueueMaxDepth < 1 {
		t.Errorf("rate_queue_max_depth %d, want the catalog's shield %d", q.RateQueueMaxDepth, m.QueueMaxDepth)
	}
	// Three times the one slot's throughput into a shield of 16: the slot completes at most a third of the
	// arrivals, and the rest are shed at the full shield rather than queued (in flight stays near 16).
	if s := q.RateSteps[3]; s.ShedFraction < 0.3 {
		t.Errorf("rate step 3 × max: shed %.3f of its requests, want most (at least 0.3): the shield of %d was not applied", s.ShedFraction, m.QueueMaxDepth)
	}
	for i, s := range q.RateSteps {
		t.Logf("rate step %.2f: offered %.2f rps, arrived %.2f, achieved %.2f, in flight %.2f mean %.2f max10s, p95 TTFAB %.0f ms, shed %.2f, usable %v %s",
			s.Fraction, s.OfferedRPS, s.ArrivalRPS, s.AchievedRPS, s.InFlightMean, s.InFlightMax10s, s.TTFABP95Ms, s.ShedFraction, s.Usable, s.UnusableReason)
		if want := []float64{0.3, 0.7, 1.0, 3.0}[i]; s.Fraction != want || s.OfferedRPS != want*highest {
			t.Errorf("rate step %d: fraction %g at %g rps, want %g × %g", i, s.Fraction, s.OfferedRPS, want, highest)
		}
		if s.OKCount == 0 || s.ArrivalRPS <= 0 || s.AchievedRPS <= 0 || s.InFlightMean <= 0 || s.InFlightMax10s < s.InFlightMean {
			t.Errorf("rate step %d: %+v: want requests, rates and in-flight recorded (mean ≤ 10-s max)", i, s)
		}
		if i > 0 && !(s.InFlightMean > q.RateSteps[i-1].InFlightMean) {
			t.Errorf("in flight at %.2f × max is %.3f, at %.2f × max %.3f: want it to grow with the offered rate", s.Fraction, s.InFlightMean, q.RateSteps[i-1].Fraction, q.RateSteps[i-1].InFlightMean)
		}
	}
	// The records: closed-loop and rate steps in one file; each re-reports as the artifact says.
	data, err := os.ReadFile(filepath.Join(dir, q.RecordsFile))
	if err != nil {
		t.Fatal(err)
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
	cfg.SLO, cfg.StallBudget, cfg.MinRequests = 5*time.Second, 5*time.Second, 10
	if closed := bench.Summarize(recs, cfg.Judge()); len(closed) != len(q.Steps) {
		t.Errorf("the records hold %d closed-loop steps, the artifact %d", len(closed), len(q.Steps))
	}
	rate := bench.SummarizeRateSteps(recs, cfg.Judge(), 0)
	if len(rate) != len(q.RateSteps) {
		t.Fatalf("the records hold %d rate steps, the artifact %d", len(rate), len(q.RateSteps))
	}
	for i, s := range rate {
		a := q.RateSteps[i]
		if s.ID.Fraction != a.Fraction || s.ID.OfferedRPS != a.OfferedRPS || s.InFlightMean != a.InFlightMean || s.InFlightMax10s != a.InFlightMax10s ||
			s.TTFABP95Ms != a.TTFABP95Ms || s.StallP95Ms != a.StallP95Ms || s.OK != a.OKCount || s.ShedFraction != a.ShedFraction || s.MeetsSLO != a.MeetsSLO || s.Usable != a.Usable {
			t.Errorf("re-reported rate step %d differs: %+v vs %+v", i, s, a)
		}
	}

	svg, err := os.ReadFile(filepath.Join(dir, "qmax.rate.svg"))
	if err != nil {
		t.Fatal(err)
	}
	if text := measuretest.SVGText(t, svg); !strings.Contains(text, "offered rate (requests/s, open loop)") || !strings.Contains(text, "highest closed-loop throughput") {
		t.Errorf("the rate chart lacks its axis or the throughput line: %q", text)
	}
	var table strings.Builder
	if err := measure.RenderQMaxSummary(&table, q); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"Rate staircase (open loop, Poisson arrivals)", "every request admitted within the queue shield of 16 (queue-max-depth)", "offered rps", "achieved rps", "in-flight mean", "in-flight max10s", "p95 TTFAB ms", "p95 stall ms", "shed %", "cw/client"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("the table lacks %q:\n%s", want, table.String())
		}
	}
}

// --rate-fractions is checked with the rest of the command line (measure.ParseRateFractions); none skips the
// rate staircase (the dry run says so), and the dry run's estimate counts the rate steps.
func TestQMaxRateFlags(t *testing.T) {
	dir := t.TempDir()
	_, stderr, code := runCLI(t, "qmax", "--model", "espeak-ng", "--rate-fractions", "1,0.5", "--rate-hold", "2s", "--rate-measure-window", "3s",
		"--format", "yaml", "--output", filepath.Join(dir, "q.json"), "--dry-run")
	if code != 2 {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{"--rate-fractions: 0.5 follows 1", "--rate-measure-window 3s is longer than the rate steps' hold 2s", `--format "yaml"`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	stdout, stderr, code := runCLI(t, "qmax", "--model", "espeak-ng", "--rate-fractions", "none", "--output", filepath.Join(dir, "q.json"), "--dry-run")
	if code != 0 || !strings.Contains(stdout, "rate steps      none (--rate-fractions none)") {
		t.Errorf("--rate-fractions none: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestQMaxRateRefinement: after its fractions (0.5, which the one-slot instance meets, and 3, where most requests
// are shed at espeak-ng's shield of 16), qmax refines midway between the highest step that met the SLO and the
// lowest that missed it, twice (--rate-refine 2): the first refinement step is at 1.75, the second midway in the
// bracket the first left (whichever way it went). The artifact lists the four steps by fraction, marks the two
// refinement steps, verifies (the records are found by fraction, not by the order run), and says in the summary
// that the bracket is still wider than 5% when it is.
func TestQMaxRateRefinement(t *testing.T) {
	e := calibrationEndpoint(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "qmax.json")
	stdout, stderr, code := runCLI(t, "qmax", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", filepath.Join(dir, "journals"),
		"--ladder", "1,2", "--max-concurrency", "2", "--settle", "1s", "--hold", "4s", "--measure-window", "3s", "--request-timeout", "10s",
		"--slo-ms", "5000", "--stall-budget-ms", "5000", "--rate-fractions", "0.5,3", "--rate-refine", "2", "--rate-hold", "6s", "--rate-measure-window", "5s",
		"--seed", "7", "--min-requests", "10", "--max-client-cpu", "0", "--max-client-lag", "0", "--container-dir", containerDir, "--output", out)
	if code != 0 {
		t.Fatalf("qmax: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	q, err := capacity.LoadQMax(out)
	if err != nil {
		t.Fatal(err)
	}
	if errs := q.Verify(); len(errs) > 0 {
		t.Fatalf("the artifact does not verify: %v", errs)
	}
	if q.Settings == nil || q.Settings.RateRefineSteps != 2 {
		t.Errorf("settings %+v: want rate_refine_steps 2", q.Settings)
	}
	var fractions []float64
	verdict := map[float64]bool{}
	for _, s := range q.RateSteps {
		t.Logf("rate step %.4g (refined %v): offered %.2f rps, achieved %.2f, shed %.2f, meets %v, usable %v", s.Fraction, s.Refined, s.OfferedRPS, s.AchievedRPS, s.ShedFraction, s.MeetsSLO, s.Usable)
		fractions = append(fractions, s.Fraction)
		verdict[s.Fraction] = s.MeetsSLO && s.Usable
		if want := s.Fraction != 0.5 && s.Fraction != 3; s.Refined != want {
			t.Errorf("rate step %g: refined %v, want %v", s.Fraction, s.Refined, want)
		}
	}
	if len(fractions) != 4 {
		t.Fatalf("%d rate steps %v, want the 2 fractions and 2 refinement steps", len(fractions), fractions)
	}
	if !slices.IsSorted(fractions) {
		t.Errorf("rate steps %v: want them listed by fraction", fractions)
	}
	if !verdict[0.5] || verdict[3] {
		t.Fatalf("the fractions' verdicts: 0.5 %v, 3 %v: the test needs 0.5 to meet the SLO and 3 to miss it", verdict[0.5], verdict[3])
	}
	if _, ok := verdict[1.75]; !ok {
		t.Fatalf("rate steps %v: the first refinement step must be at (0.5 + 3) ÷ 2 = 1.75", fractions)
	}
	second := (1.75 + 3) / 2
	if !verdict[1.75] {
		second = (0.5 + 1.75) / 2
	}
	if _, ok := verdict[second]; !ok {
		t.Errorf("rate steps %v: the second refinement step must be at %g, midway in the bracket 1.75 left (met: %v)", fractions, second, verdict[1.75])
	}
	if !strings.Contains(stderr, "the SLO's boundary is bracketed between") || !strings.Contains(stderr, "after 2 refinement step(s) (--rate-refine)") {
		t.Errorf("stderr does not say the bracket is still wide after the two refinement steps:\n%s", stderr)
	}
}
