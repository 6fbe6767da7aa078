package capacity

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/models"
)

// fixtureRecordsFile is the records file of the plan fixtures' qmax artifacts (fixturegen).
const fixtureRecordsFile = "qmax.records.jsonl.gz"

// reseal rewrites the set around the plan at planPath after its qmax artifact changed: q written, the ttotal
// artifact's qmax_sha256 recomputed, and the plan rebuilt from both with its own planning options, as
// someone would who hand-makes a set with an older tts-bench whose plan does not read the records.
func reseal(t *testing.T, planPath string, q *QMax) {
	t.Helper()
	dir := filepath.Dir(planPath)
	qPath, tPath := filepath.Join(dir, QMaxFile), filepath.Join(dir, TTotalFile)
	if err := WriteJSON(qPath, q); err != nil {
		t.Fatal(err)
	}
	tt, _, err := load[TTotal](tPath)
	if err != nil {
		t.Fatal(err)
	}
	if tt.QMaxSHA256, err = FileDigest(qPath); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(tPath, tt); err != nil {
		t.Fatal(err)
	}
	p, err := LoadPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	in := p.Inputs
	ms, err := LoadMeasurement(qPath, tPath)
	if err != nil {
		t.Fatal(err)
	}
	rebuilt, err := FromArtifacts(kokoro(t), ms, Options{
		SurgeRatio: in.SurgeRatio, DetectionBufferS: in.DetectionBufferS, PeakRPS: in.PeakRPS, TroughRPS: in.TroughRPS,
		MinInstances: in.MinInstances, MaxInstances: in.MaxInstances, ScaleInMargin: in.ScaleInMargin, Traces: in.Traces,
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(planPath, rebuilt); err != nil {
		t.Fatal(err)
	}
}

func loadQMax(t *testing.T, path string) *QMax {
	t.Helper()
	q, err := LoadQMax(path)
	if err != nil {
		t.Fatal(err)
	}
	return q
}

// readRecords is q's records beside it in dir (QMax.ReadQMaxRecords), or the test stops.
func readRecords(t *testing.T, q *QMax, dir string) []bench.Record {
	t.Helper()
	recs, err := q.ReadQMaxRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	return recs
}

// rewriteRecords replaces the records file beside the plan with what edit makes of its records, and records
// the new file's digest in q: a records file edited and re-sealed.
func rewriteRecords(t *testing.T, dir string, q *QMax, edit func([]bench.Record) []bench.Record) {
	t.Helper()
	data := gzipTestRecords(t, edit(readRecords(t, q, dir)))
	if err := os.WriteFile(filepath.Join(dir, q.RecordsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	q.RecordsSHA256 = DigestBytes(data)
}

func gzipTestRecords(t testing.TB, recs []bench.Record) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	w := bench.NewRecordWriter(zw)
	for _, r := range recs {
		if err := w.Write(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// A qmax artifact whose figures its raw records do not give, in each of these variants, is refused by the gate,
// which names the step and the figure, however carefully the rest of the set was re-sealed (the ttotal's
// qmax_sha256 and the plan rebuilt from the edited artifact, so that every digest the gate checked before
// matches).
func TestGateRefusesAQMaxItsRecordsDoNotGive(t *testing.T) {
	for _, tt := range []struct {
		name    string
		edit    func(t *testing.T, dir string, q *QMax)
		reasons []string
	}{
		{"achieved_rps ×10, records file that does not exist", func(t *testing.T, dir string, q *QMax) {
			for i := range q.Steps {
				q.Steps[i].AchievedRPS *= 10
			}
			q.RecordsFile = "qmax-run9.records.jsonl.gz"
		}, []string{"does not follow from its raw records", "records_file: ", "qmax-run9.records.jsonl.gz is missing"}},
		{"one figure edited beside the true records", func(t *testing.T, dir string, q *QMax) {
			q.Steps[3].AchievedRPS *= 10
		}, []string{"steps[3] (concurrency 20): achieved_rps is 94.3 but its records give 9.43"}},
		{"a percentile edited beside the true records", func(t *testing.T, dir string, q *QMax) {
			q.RateSteps[3].TTFABP95Ms = 1900
		}, []string{"rate_steps[3] (fraction 0.85): ttfab_p95_ms is 1900 but its records give 2250"}},
		{"records missing", func(t *testing.T, dir string, q *QMax) {
			rm(t, filepath.Join(dir, q.RecordsFile))
		}, []string{"qmax.records.jsonl.gz is missing"}},
		{"records truncated", func(t *testing.T, dir string, q *QMax) {
			path := filepath.Join(dir, q.RecordsFile)
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
				t.Fatal(err)
			}
		}, []string{"qmax.records.jsonl.gz has digest sha256:", "but records_sha256 is", "the records changed after the measurement"}},
		{"records truncated and their digest re-sealed", func(t *testing.T, dir string, q *QMax) {
			path := filepath.Join(dir, q.RecordsFile)
			data, _ := os.ReadFile(path)
			if err := os.WriteFile(path, data[:len(data)/2], 0o644); err != nil {
				t.Fatal(err)
			}
			q.RecordsSHA256 = DigestBytes(data[:len(data)/2])
		}, []string{"qmax.records.jsonl.gz is cut short or damaged (gzip: unexpected EOF)"}},
		{"records cut at a line, recompressed and re-sealed", func(t *testing.T, dir string, q *QMax) {
			rewriteRecords(t, dir, q, func(recs []bench.Record) []bench.Record {
				var out []bench.Record
				for _, r := range recs {
					if r.RateStep == nil || r.RateStep.Index < 4 {
						out = append(out, r)
					}
				}
				return out
			})
		}, []string{"rate_steps[4] (fraction 1): the records file has no records of this rate step", "rate_steps[5] (fraction 1.1): the records file has no records"}},
		{"one record's TTFAB edited and re-sealed", func(t *testing.T, dir string, q *QMax) {
			rewriteRecords(t, dir, q, func(recs []bench.Record) []bench.Record {
				for i, r := range recs {
					if r.Step == 40 && r.RateStep == nil && r.Measured && r.TTFABMs == 2750 {
						recs[i].TTFABMs = 3500 // the p95 itself
					}
				}
				return recs
			})
		}, []string{"steps[5] (concurrency 40): ttfab_p95_ms is 2750 but its records give"}},
		{"the failing step removed from the artifact", func(t *testing.T, dir string, q *QMax) {
			q.Steps = q.Steps[:6]
			q.SetQMax() // Q_max 40, now a lower bound
		}, []string{"the records file holds a closed-loop step at concurrency 50 that the artifact does not list"}},
		{"another run's records", func(t *testing.T, dir string, q *QMax) {
			copyFile(t, filepath.Join("..", "testdata", "plans", "dry-run", fixtureRecordsFile), filepath.Join(dir, q.RecordsFile))
			q.RecordsSHA256 = mustDigestRecords(t, filepath.Join(dir, q.RecordsFile))
		}, []string{`is of run "qmax-20250602T090000Z-dry", not the artifact's run "qmax-20250602T090000Z"`}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan := validSet(t)
			dir := filepath.Dir(plan)
			q := loadQMax(t, filepath.Join(dir, QMaxFile))
			tt.edit(t, dir, q)
			reseal(t, plan, q)
			dec := Gate(fixtureDeployment(t), plan)
			all := strings.Join(dec.Reasons, "\n")
			if dec.Enabled || dec.Plan != nil || dec.QueueMaxDepth() != 0 {
				t.Fatalf("accepted: %+v", dec)
			}
			// The only reason is the records': the re-sealed set is otherwise what the gate accepted before.
			if len(dec.Reasons) != 1 || !strings.Contains(all, "does not follow from its raw records") {
				t.Fatalf("want exactly the records' reason, got:\n%s", all)
			}
			for _, want := range tt.reasons {
				if !strings.Contains(all, want) {
					t.Errorf("reasons lack %q:\n%s", want, all)
				}
			}
		})
	}
}

func mustDigestRecords(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return DigestBytes(data)
}

// The same set re-sealed without an edit passes: the refusals above are the edits', not the re-sealing's.
func TestGateAcceptsAResealedSetWhoseRecordsGiveIt(t *testing.T) {
	plan := validSet(t)
	dir := filepath.Dir(plan)
	q := loadQMax(t, filepath.Join(dir, QMaxFile))
	rewriteRecords(t, dir, q, func(recs []bench.Record) []bench.Record { return recs })
	reseal(t, plan, q)
	if dec := Gate(fixtureDeployment(t), plan); !dec.Enabled {
		t.Fatalf("refused: %q", dec.Reasons)
	}
}

// Every figure of every step is compared: each edit is named by step and figure.
func TestCheckAgainstNamesEachEditedFigure(t *testing.T) {
	dir := filepath.Join("..", "testdata", "plans", "valid")
	q := loadQMax(t, filepath.Join(dir, QMaxFile))
	recs := readRecords(t, q, dir)
	if errs := q.CheckAgainst(recs); len(errs) > 0 {
		t.Fatalf("the fixture does not follow from its records: %v", errs)
	}
	for _, tt := range []struct {
		edit func(q *QMax)
		want string
	}{
		{func(q *QMax) { q.Steps[0].OKCount++ }, "steps[0] (concurrency 1): ok_count is 51 but its records give 50"},
		{func(q *QMax) { q.Steps[1].ErrorCount = 3 }, "steps[1] (concurrency 5): error_count is 3"},
		{func(q *QMax) { q.Steps[2].RejectedCount = 1 }, "steps[2] (concurrency 10): rejected_count is 1"},
		{func(q *QMax) { q.Steps[2].TTFABP50Ms = 500 }, "steps[2] (concurrency 10): ttfab_p50_ms is 500 but its records give 560"},
		{func(q *QMax) { q.Steps[4].TTFABP99Ms = 1900 }, "steps[4] (concurrency 30): ttfab_p99_ms is 1900 but its records give 1950"},
		{func(q *QMax) { q.Steps[4].TTFABCIHighMs = 2000 }, "steps[4] (concurrency 30): ttfab_ci_high_ms is 2000"},
		{func(q *QMax) { q.Steps[5].StallP95Ms = 20 }, "steps[5] (concurrency 40): stall_p95_ms is 20 but its records give 45.8"},
		{func(q *QMax) { q.Steps[5].ResponseMeanMs = 2000 }, "steps[5] (concurrency 40): response_mean_ms is 2000"},
		{func(q *QMax) { q.Steps[5].ClientConcurrencyMean = 20 }, "steps[5] (concurrency 40): client_concurrency_mean is 20"},
		{func(q *QMax) { q.Steps[5].ClientConcurrencyPeak = 80 }, "steps[5] (concurrency 40): client_concurrency_peak is 80 but its records give 40"},
		{func(q *QMax) { q.Steps[6].MeetsSLO = true }, "steps[6] (concurrency 50): meets_slo is true but its records give false"},
		{func(q *QMax) { v := true; q.Steps[6].MeetsTTFABSLO = &v }, "steps[6] (concurrency 50): meets_ttfab_slo is true but its records give false"},
		{func(q *QMax) { q.ServiceTimeMeanMs = 1000 }, "service time (the step at concurrency 1): service_time_mean_ms is 1000"},
		{func(q *QMax) { q.HighestThroughputRPS = 20 }, "rate staircase: highest_throughput_rps is 20 but its records give 17.7"},
		{func(q *QMax) { q.RateSteps[0].ArrivalRPS = 6 }, "rate_steps[0] (fraction 0.3): arrival_rps is 6 but its records give 5.29"},
		{func(q *QMax) { q.RateSteps[1].AchievedRPS = 9 }, "rate_steps[1] (fraction 0.5): achieved_rps is 9 but its records give 8.86"},
		{func(q *QMax) { q.RateSteps[2].InFlightMean = 20 }, "rate_steps[2] (fraction 0.7): in_flight_mean is 20 but its records give 26.4"},
		{func(q *QMax) { q.RateSteps[2].InFlightMax10s = 36 }, "rate_steps[2] (fraction 0.7): in_flight_max_10s is 36"},
		{func(q *QMax) { q.RateSteps[3].StallP95Ms = 10 }, "rate_steps[3] (fraction 0.85): stall_p95_ms is 10 but its records give 38"},
		{func(q *QMax) { q.RateSteps[4].ShedFraction = 0.5 }, "rate_steps[4] (fraction 1): shed_fraction is 0.5 but its records give 0"},
		{func(q *QMax) { q.RateSteps[5].OfferedRPS = 30 }, "rate_steps[5] (fraction 1.1): offered_rps is 30"},
		{func(q *QMax) { q.RateSteps[5].MeetsSLO = true }, "rate_steps[5] (fraction 1.1): meets_slo is true but its records give false"},
	} {
		e := loadQMax(t, filepath.Join(dir, QMaxFile))
		tt.edit(e)
		errs := e.CheckAgainst(recs)
		if len(errs) != 1 || !strings.Contains(errs[0].Error(), tt.want) {
			t.Errorf("want one error containing %q, got %v", tt.want, errs)
		}
	}
	// A step the records give as unusable may not be usable in the artifact; the other way round is the
	// measuring process's own judgement (its CPU, its lag), which the records do not hold.
	e := loadQMax(t, filepath.Join(dir, QMaxFile))
	e.Settings.MinRequests = 60 // the c = 1 step has 50 requests in its window
	if errs := e.CheckAgainst(recs); len(errs) != 1 || !strings.Contains(errs[0].Error(), "steps[0] (concurrency 1): usable is true but its records give an unusable step (too few requests: 50 sent") {
		t.Errorf("got %v", errs)
	}
	e = loadQMax(t, filepath.Join(dir, QMaxFile))
	e.Steps[2].Usable, e.Steps[2].UnusableReason = false, "client-bound: the measuring process used 1.5 of a core"
	if errs := e.CheckAgainst(recs); len(errs) != 0 {
		t.Errorf("a step the client's own load made unusable: %v", errs)
	}
}

// Within RecordsTolerance a figure matches; an edit in the tenth significant digit does not.
func TestRecordsTolerance(t *testing.T) {
	for _, tt := range []struct {
		a, b float64
		ok   bool
	}{{9.43, 9.43, true}, {9.43, 9.43 * (1 + 1e-12), true}, {9.43, 9.4300001, false}, {0, 0, true}, {0, 1e-300, false}, {math.NaN(), 1, false}} {
		if got := withinRecordsTolerance(tt.a, tt.b); got != tt.ok {
			t.Errorf("withinRecordsTolerance(%v, %v) = %v", tt.a, tt.b, got)
		}
	}
}

// ladderRecords are the records of a qmax run like a 36-minute ladder: eight closed-loop steps (1 to 64 in
// flight, 30 s settle + 240 s hold each, measured over the last 60 s) of a model whose response time grows
// from 2 s with the load, each response streamed in 20 chunks, as the transports record them.
func ladderRecords(run string) []bench.Record {
	start := time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(36, 27))
	var recs []bench.Record
	stepStart := start
	for _, c := range []int{1, 2, 4, 8, 16, 32, 48, 64} {
		ws, we := stepStart.Add(210*time.Second), stepStart.Add(270*time.Second)
		for w := 0; w < c; w++ {
			sent := stepStart.Add(time.Duration(rng.IntN(1000)) * time.Millisecond)
			for seq := 0; sent.Before(we); seq++ {
				resp := time.Duration((2000 + 20*float64(c) + rng.NormFloat64()*100) * float64(time.Millisecond))
				ttfab := 300 + 30*float64(c) + rng.ExpFloat64()*100
				end := sent.Add(resp)
				chunks := make([][2]float64, 20)
				for k := range chunks {
					chunks[k] = [2]float64{float64(k) * (float64(resp)/float64(time.Millisecond) - ttfab) / 20, 4800}
				}
				recs = append(recs, bench.Record{
					RunID: run, Transport: TransportSageMakerStream, Step: c, Worker: w, Seq: seq, Chars: 120,
					Sent: sent, FirstAudio: sent.Add(time.Duration(ttfab * float64(time.Millisecond))), End: end,
					WindowStart: ws, WindowEnd: we, Measured: !sent.Before(ws) && sent.Before(we),
					TTFABMs: ttfab, ResponseMs: float64(resp) / float64(time.Millisecond), Bytes: 96044, AudioBytes: 96000,
					AudioSeconds: 2, SampleRate: 24000, StallMs: rng.ExpFloat64() * 10, Chunks: chunks, Status: 200, Class: bench.ClassOK,
				})
				sent = end.Add(time.Duration(rng.IntN(300)) * time.Microsecond)
			}
		}
		stepStart = stepStart.Add(270 * time.Second)
	}
	return recs
}

// ladderSet writes a 36-minute ladder's records and the artifact folded from them into a directory.
func ladderSet(b testing.TB) (*QMax, string, int, int) {
	cat, err := models.Default()
	if err != nil {
		b.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		b.Fatal(err)
	}
	recs := ladderRecords("qmax-bench")
	q := testQMax(m)
	q.RunID, q.RecordsFile, q.RateSteps, q.HighestThroughputRPS = "qmax-bench", "qmax.records.jsonl.gz", nil, 0
	j := q.RecordsJudge()
	q.Steps = nil
	for _, s := range bench.Summarize(recs, j) {
		q.Steps = append(q.Steps, StepOf(s))
	}
	first := bench.Summarize(recs, j)[0]
	q.ServiceTimeMeanMs, q.ServiceTimeP95Ms = first.ResponseMeanMs, first.ResponseP95Ms
	data := gzipTestRecords(b, recs)
	q.RecordsSHA256 = DigestBytes(data)
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, q.RecordsFile), data, 0o644); err != nil {
		b.Fatal(err)
	}
	return q, dir, len(recs), len(data)
}

// BenchmarkCheckRecords times the gate's records check (read, digest, decompress, parse, fold, compare) on a
// 36-minute ladder's records.
func BenchmarkCheckRecords(b *testing.B) {
	q, dir, n, size := ladderSet(b)
	if errs := q.CheckRecords(dir); len(errs) > 0 {
		b.Fatal(errs)
	}
	b.ResetTimer()
	for range b.N {
		if errs := q.CheckRecords(dir); len(errs) > 0 {
			b.Fatal(errs)
		}
	}
	b.ReportMetric(float64(n), "records")
	b.ReportMetric(float64(size)/(1<<20), "MiB-gz")
}

// The benchmark's set is an honest one: the check passes on it and refuses its edit.
func TestLadderRecordsCheck(t *testing.T) {
	if testing.Short() {
		t.Skip("writes a 36-minute ladder's records")
	}
	q, dir, n, _ := ladderSet(t)
	start := time.Now()
	if errs := q.CheckRecords(dir); len(errs) > 0 {
		t.Fatal(errs)
	}
	t.Logf("checked %d records in %v", n, time.Since(start))
	q.Steps[4].AchievedRPS *= 1.01
	if errs := q.CheckRecords(dir); len(errs) != 1 || !strings.Contains(errs[0].Error(), fmt.Sprintf("steps[4] (concurrency 16): achieved_rps is %v", q.Steps[4].AchievedRPS)) {
		t.Fatalf("got %v", errs)
	}
}

// TestReadQMaxRecordsKeepsNoSharedState: the records of the last file read are kept by digest
// (decodedRecords), so a second read must give the same records, untouched by what a caller did to the first
// read's, and a file re-sealed with other records must give those.
func TestReadQMaxRecordsKeepsNoSharedState(t *testing.T) {
	src := filepath.Join("..", "testdata", "plans", "valid")
	q := loadQMax(t, filepath.Join(src, QMaxFile))
	first := readRecords(t, q, src)
	want := cloneRecords(first)
	for i := range first {
		first[i].TTFABMs = -1
		if first[i].Chunks != nil {
			first[i].Chunks[0][0] = -1
		}
		if first[i].Arrival != nil {
			first[i].Arrival.Index = -1
		}
		if first[i].RateStep != nil {
			first[i].RateStep.Fraction = -1
		}
	}
	again := readRecords(t, q, src)
	if !reflect.DeepEqual(again, want) {
		t.Fatal("the second read differs from the first read's records as decoded: a caller's change reached the kept records")
	}
	// The same file name in another directory, re-sealed with one record less: its own records, not the kept ones.
	dir := t.TempDir()
	data := gzipTestRecords(t, want[1:])
	if err := os.WriteFile(filepath.Join(dir, q.RecordsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
	q.RecordsSHA256 = DigestBytes(data)
	other := readRecords(t, q, dir)
	if len(other) != len(want)-1 || !reflect.DeepEqual(other, want[1:]) {
		t.Fatalf("the re-sealed file gave %d records, want its own %d", len(other), len(want)-1)
	}
}
