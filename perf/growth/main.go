// Command growth measures row 6 of BENCHMARKS.md: how the tools' cost grows.
//
//   - tts-bench qmax's wall time and peak resident memory (rusage, as /usr/bin/time -v reports it) against the
//     ladder's length and against the concurrency (C up to 1000), over --transport http against the real
//     container with the zero-compute calibration engine, so the client's own cost is what grows;
//   - tts-bench plan's wall time against the length of the throughput curve (the qmax artifact's steps);
//   - the local emulator's resident memory (its own process, and its instances apart) against the instance
//     count (1, 4, 16), with the instance quota raised to 16.
//
// It writes .cache/bench/6-cost-growth.json and its charts.
//
//	go run ./perf/growth          full size (a few minutes)
//	go run ./perf/growth -smoke   the smallest size: checks the program, judges nothing
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/capacitytest"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/containerbin"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/perf/internal/harness"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

const (
	rowN    = 6
	rowName = "cost-growth"
)

// size is one run's extent.
type size struct {
	hold         time.Duration
	ladderLens   []int
	concurrency  []int
	curveLens    []int
	traceLens    []int
	instances    []int
	planRepeats  int
	emulatorReqs int
}

var (
	// The curve lengths stop at 256: a qmax artifact holds at most 256 steps (capacity's bound on artifact
	// fields), and a longer one is refused before plan runs.
	full  = size{hold: 5 * time.Second, ladderLens: []int{1, 2, 4, 8, 16}, concurrency: []int{1, 10, 100, 1000}, curveLens: []int{2, 10, 50, 100, 256}, traceLens: []int{2000, 20000, 50000, 200000}, instances: []int{1, 4, 16}, planRepeats: 5, emulatorReqs: 32}
	smoke = size{hold: time.Second, ladderLens: []int{1, 2}, concurrency: []int{1, 10}, curveLens: []int{2, 10}, traceLens: []int{2000, 20000}, instances: []int{1}, planRepeats: 1, emulatorReqs: 2}
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "emulator-child" {
		if err := emulatorChild(os.Args[2:]); err != nil {
			os.Exit(exitcode.Report(os.Stderr, "bench growth emulator-child", err))
		}
		return
	}
	harness.Main("bench growth", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stderr) })
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("growth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common harness.Common
	common.AddCommon(fs, "the smallest size: checks the program still produces its row")
	containerBin := fs.String("container", "", "the inference container binary (default $SPEECH_CONTAINER_BIN, else built into .cache/bench)")
	if err := harness.ParseFlags(fs, args, "this program takes flags only (-smoke, -out, -container)"); err != nil {
		return err
	}
	if errs := common.Check(); len(errs) > 0 {
		return exitcode.Usage(errors.Join(errs...))
	}
	sz := full
	if common.Smoke {
		sz = smoke
	}
	started := time.Now().UTC()
	harness.RaiseFDLimit() // C=1000 needs more than 1024 descriptors; children inherit it
	var err error
	if *containerBin == "" {
		if *containerBin, err = harness.ContainerBinary(ctx); err != nil {
			return err
		}
	}
	root, err := containerbin.RepoRoot()
	if err != nil {
		return err
	}
	work, err := filepath.Abs(filepath.Join(common.Out, strconv.Itoa(rowN)+"-"+rowName))
	if err != nil {
		return err
	}
	ttsBench, err := harness.BuildGo(ctx, root, "./cmd/tts-bench", filepath.Join(work, "bin", "tts-bench"))
	if err != nil {
		return err
	}
	self, err := harness.BuildGo(ctx, root, "./perf/growth", filepath.Join(work, "bin", "growth"))
	if err != nil {
		return err
	}

	rw := row.Row{Schema: row.SchemaVersion, N: rowN, Name: rowName, Title: "How cost grows", Smoke: common.Smoke, Machine: row.CurrentMachine(), Date: started,
		Command: "go run ./perf/growth" + map[bool]string{true: " -smoke", false: ""}[common.Smoke],
		Summary: "Wall time and peak resident memory (the kernel's rusage maximum RSS, what `/usr/bin/time -v` prints) of `tts-bench qmax --transport http` " +
			"against the real container with the zero-compute calibration engine (CALIBRATION_SEGMENT_MS=0), so what grows is the client's own cost: " +
			"steps of settle 0 s and hold " + sz.hold.String() + "; of `tts-bench plan` against the number of steps of the qmax artifact's throughput curve; " +
			"(the records check, the derivation and the envelope's simulation; --no-search: the synthetic curves are infeasible, and the search for a passing configuration, about 90 plans, would be what grows); " +
			"of `tts-bench simulate` (the plan and its four comparison fleets) against the trace's length in 1-s rows (at most 200 000, the documented bound); " +
			"and of the local emulator process (instances counted apart) against the instance count.",
		Notes: []string{"A shared, noisy machine: other work ran beside these measurements; wall times move between runs."},
	}

	// qmax against the ladder's length and the concurrency.
	cal, err := harness.StartContainer(ctx, *containerBin, []string{"ENGINE=calibration", "CALIBRATION_SEGMENT_MS=0", "QUEUE_MAX_DEPTH=0", "MAX_CONNECTIONS=4096"}, harness.ContainerOutput{LogPath: filepath.Join(work, "calibration.log")})
	if err != nil {
		return err
	}
	defer cal.Stop()
	ladderT := row.Table{Title: "tts-bench qmax against the ladder's length (C = 1, 2, ... n)", Columns: []string{"steps", "wall (s)", "peak RSS (MiB)", "records", "records file (KiB)"}}
	var ladderRSS, ladderWall []harness.Point
	for _, n := range sz.ladderLens {
		var steps []string
		for c := 1; c <= n; c++ {
			steps = append(steps, strconv.Itoa(c))
		}
		m, err := qmax(ctx, ttsBench, cal.URL, strings.Join(steps, ","), n, sz.hold, filepath.Join(work, "ladder-"+strconv.Itoa(n)))
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench growth: qmax %d steps: %.1f s, %s MiB\n", n, m.wall.Seconds(), harness.MiB(m.rss))
		ladderT.Rows = append(ladderT.Rows, []string{strconv.Itoa(n), f1(m.wall.Seconds()), harness.MiB(m.rss), strconv.Itoa(m.records), strconv.FormatInt(m.recordsBytes>>10, 10)})
		ladderRSS = append(ladderRSS, harness.Point{X: float64(n), Y: float64(m.rss) / (1 << 20)})
		ladderWall = append(ladderWall, harness.Point{X: float64(n), Y: m.wall.Seconds()})
	}
	concT := row.Table{Title: "tts-bench qmax against the concurrency (one step)", Columns: []string{"C", "wall (s)", "peak RSS (MiB)", "records", "KiB per record in the step"}}
	var concRSS []harness.Point
	var rss1000 int64
	var recs1000 int
	for _, c := range sz.concurrency {
		m, err := qmax(ctx, ttsBench, cal.URL, strconv.Itoa(c), c, sz.hold, filepath.Join(work, "c-"+strconv.Itoa(c)))
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "bench growth: qmax C=%d: %.1f s, %s MiB, %d records\n", c, m.wall.Seconds(), harness.MiB(m.rss), m.records)
		per := "-"
		if m.records > 0 {
			per = f1(float64(m.rss) / 1024 / float64(m.records))
		}
		concT.Rows = append(concT.Rows, []string{strconv.Itoa(c), f1(m.wall.Seconds()), harness.MiB(m.rss), strconv.Itoa(m.records), per})
		concRSS = append(concRSS, harness.Point{X: float64(c), Y: float64(m.rss) / (1 << 20)})
		if c == 1000 {
			rss1000, recs1000 = m.rss, m.records
		}
	}
	cal.Stop()

	// plan against the curve's length.
	planT := row.Table{Title: "tts-bench plan against the throughput curve's length", Columns: []string{"curve steps", "wall (s, median of " + strconv.Itoa(sz.planRepeats) + ")", "peak RSS (MiB)"}}
	var planWall []harness.Point
	fixtures := filepath.Join(work, "fixture-plans")
	if _, err := harness.Run(ctx, root, nil, "go", "run", "./capacity/internal/fixturegen", "-out", fixtures, "-container-dir", "container"); err != nil {
		return err
	}
	for _, n := range sz.curveLens {
		qpath := filepath.Join(work, "curve-"+strconv.Itoa(n), "qmax.json")
		if err := writeCurve(filepath.Join(fixtures, "valid", "qmax.json"), qpath, n); err != nil {
			return err
		}
		// Synthesizing a long curve's records grows this process (about 1 GiB at 256 steps); a child forked
		// from it reports that in its own ru_maxrss (Linux counts the pages it held before exec), so give the
		// memory back before measuring the child.
		debug.FreeOSMemory()
		var walls []float64
		var rss int64
		for i := 0; i < sz.planRepeats; i++ {
			res, err := harness.Run(ctx, root, nil, ttsBench, "plan", "--model", "kokoro-82m", "--qmax", qpath, "--ttotal", filepath.Join(fixtures, "valid", "ttotal.json"),
				"--peak-rps", "80", "--no-search", "--format", "json", "--output", filepath.Join(work, "curve-"+strconv.Itoa(n), "plan.json"))
			if err != nil && !(errors.Is(err, harness.ErrExit) && res.ExitCode == 1) { // 1: an infeasible plan is still a plan
				return fmt.Errorf("plan with a %d-step curve: %w", n, err)
			}
			walls, rss = append(walls, res.Wall.Seconds()), max(rss, res.MaxRSSBytes)
		}
		fmt.Fprintf(stderr, "bench growth: plan %d steps: %.3f s\n", n, harness.Median(walls))
		planT.Rows = append(planT.Rows, []string{strconv.Itoa(n), strconv.FormatFloat(harness.Median(walls), 'f', 3, 64), harness.MiB(rss)})
		planWall = append(planWall, harness.Point{X: float64(n), Y: harness.Median(walls)})
	}

	// simulate against the trace's length (it must stay linear: the gate runs the simulator at every synth).
	simT := row.Table{Title: "tts-bench simulate against the trace's length (1-s rows)", Columns: []string{"rows", "wall (s, median of " + strconv.Itoa(sz.planRepeats) + ")", "µs per row", "peak RSS (MiB)"}}
	var simWall []harness.Point
	for _, n := range sz.traceLens {
		csv := filepath.Join(work, "trace-"+strconv.Itoa(n)+".csv")
		if err := writeTrace(csv, n); err != nil {
			return err
		}
		var walls []float64
		var rss int64
		for i := 0; i < sz.planRepeats; i++ {
			res, err := harness.Run(ctx, root, nil, ttsBench, "simulate", "--plan", filepath.Join(fixtures, "valid", "plan.json"), "--trace", csv,
				"--format", "json", "--output", filepath.Join(work, "trace-"+strconv.Itoa(n)+".svg"))
			if err != nil && !(errors.Is(err, harness.ErrExit) && res.ExitCode == 1) { // 1: the plan did not hold on the trace, still a run
				return fmt.Errorf("simulate on %d rows: %w", n, err)
			}
			walls, rss = append(walls, res.Wall.Seconds()), max(rss, res.MaxRSSBytes)
		}
		w := harness.Median(walls)
		fmt.Fprintf(stderr, "bench growth: simulate %d rows: %.3f s\n", n, w)
		simT.Rows = append(simT.Rows, []string{strconv.Itoa(n), strconv.FormatFloat(w, 'f', 3, 64), f1(w / float64(n) * 1e6), harness.MiB(rss)})
		simWall = append(simWall, harness.Point{X: float64(n), Y: w})
	}

	// The emulator against the instance count.
	emuT := row.Table{Title: "the local emulator against the instance count (after InService and " + strconv.Itoa(sz.emulatorReqs) + " invocations)", Columns: []string{"instances", "emulator RSS (MiB)", "emulator peak RSS (MiB)", "instances' RSS, sum (MiB)", "per instance (MiB)"}}
	var emuRSS, instRSS []harness.Point
	for _, n := range sz.instances {
		m, err := emulatorMemory(ctx, self, *containerBin, filepath.Join(work, "emulator-"+strconv.Itoa(n)), n, sz.emulatorReqs)
		if err != nil {
			return fmt.Errorf("emulator with %d instances: %w", n, err)
		}
		fmt.Fprintf(stderr, "bench growth: emulator %d instances: %s MiB (instances %s MiB)\n", n, harness.MiB(m.rss), harness.MiB(m.children))
		emuT.Rows = append(emuT.Rows, []string{strconv.Itoa(n), harness.MiB(m.rss), harness.MiB(m.peak), harness.MiB(m.children), harness.MiB(m.children / int64(n))})
		emuRSS = append(emuRSS, harness.Point{X: float64(n), Y: float64(m.rss) / (1 << 20)})
		instRSS = append(instRSS, harness.Point{X: float64(n), Y: float64(m.children) / (1 << 20)})
	}
	rw.Tables = []row.Table{ladderT, concT, planT, simT, emuT}

	g := row.Goal{Text: "records stream to disk, not accumulate in memory (qmax's memory does not grow with the ladder's length)"}
	if len(ladderRSS) >= 2 {
		first, last := ladderRSS[0].Y, ladderRSS[len(ladderRSS)-1].Y
		g.Measured = fmt.Sprintf("peak RSS %.1f MiB at %d step(s), %.1f MiB at %d", first, int(ladderRSS[0].X), last, int(ladderRSS[len(ladderRSS)-1].X))
		switch {
		case common.Smoke:
			g.Verdict, g.Why = row.NotMeasured, "smoke run: too small to judge; run `make bench`"
		case last <= first*1.5+8:
			g.Verdict = row.Met
			g.Why = "qmax writes each record to a temporary gzip file beside the output as it ends (not keeping the whole run's compressed records in a buffer). Within one step the records are kept for the exact percentiles, so memory grows with one step's request count, not with the ladder"
		default:
			g.Verdict, g.Why = row.Missed, "peak memory grows with the ladder's length: something keeps records across steps"
		}
	}
	rw.Goals = append(rw.Goals, g)
	rw.Goals = append(rw.Goals, linearGoal(simWall, common.Smoke))
	rw.Fixed = append(rw.Fixed, "measure/qmax_run.go: the gzipped records stream to a temporary file beside --output (digested while written, renamed into place at the end, removed on error) instead of a memory buffer holding the whole run")
	if rss1000 > 0 {
		rw.Notes = append(rw.Notes, fmt.Sprintf("At C=1000 a step of %s kept %d records: peak RSS %s MiB. Exact percentiles keep every record of the step in memory, about %.1f KiB each with the Go heap's headroom; a step's memory is bounded by its length × its request rate, so a long hold at a high rate is what costs memory.",
			sz.hold, recs1000, harness.MiB(rss1000), float64(rss1000)/1024/float64(recs1000)))
	}
	charts := []struct {
		file, caption string
		c             harness.Chart
	}{
		{"ladder", "qmax's peak RSS and wall time against the ladder's length", harness.Chart{Title: "tts-bench qmax against the ladder's length", XLabel: "steps in the ladder", YLabel: "MiB / s", Series: []harness.Series{{Name: "peak RSS (MiB)", Points: ladderRSS}, {Name: "wall (s)", Points: ladderWall}}}},
		{"concurrency", "qmax's peak RSS against the concurrency of one step", harness.Chart{Title: "tts-bench qmax against the concurrency", XLabel: "C (requests in flight)", YLabel: "peak RSS (MiB)", LogX: true, Series: []harness.Series{{Name: "peak RSS", Points: concRSS}}}},
		{"plan", "tts-bench plan's wall time against the curve's length", harness.Chart{Title: "tts-bench plan against the throughput curve's length", XLabel: "steps in the curve", YLabel: "wall (s)", LogX: true, Series: []harness.Series{{Name: "plan", Points: planWall}}}},
		{"simulate", "tts-bench simulate's wall time against the trace's length", harness.Chart{Title: "tts-bench simulate against the trace's length", XLabel: "rows in the trace (1 s each)", YLabel: "wall (s)", LogX: true, Series: []harness.Series{{Name: "simulate", Points: simWall}}}},
		{"emulator", "the emulator's RSS and its instances' against the instance count", harness.Chart{Title: "the local emulator against the instance count", XLabel: "instances", YLabel: "RSS (MiB)", Series: []harness.Series{{Name: "emulator process", Points: emuRSS}, {Name: "instances (sum)", Points: instRSS}}}},
	}
	for _, c := range charts {
		f := strconv.Itoa(rowN) + "-" + rowName + "-" + c.file + ".svg"
		if err := c.c.WriteSVG(filepath.Join(common.Out, f)); err != nil {
			return err
		}
		rw.Figures = append(rw.Figures, row.Figure{File: f, Caption: c.caption})
	}
	rw.Duration = row.Of(time.Since(started))
	p, err := row.Write(common.Out, rw)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench growth: wrote %s\n", p)
	return nil
}

// linearGoal judges simulate's growth: linear when the time per row at the longest trace is at most twice the
// time per row at 20 000 rows (below that the process's start-up dominates). Quadratic growth (measured once:
// 20 000 rows 4 s, 200 000 about 710 s) would make it about ten times.
func linearGoal(pts []harness.Point, smoke bool) row.Goal {
	g := row.Goal{Text: "tts-bench simulate runs in time linear in the trace's length (time per row at the longest trace at most 2× that at 20 000 rows)"}
	var ref, last harness.Point
	for _, p := range pts {
		if p.X == 20000 {
			ref = p
		}
		last = p
	}
	if ref.X == 0 || last.X <= ref.X || ref.Y <= 0 {
		g.Verdict, g.Why = row.NotMeasured, "no trace longer than 20 000 rows was run"
		if smoke {
			g.Why = "smoke run: too small to judge; run `make bench`"
		}
		return g
	}
	ratio := (last.Y / last.X) / (ref.Y / ref.X)
	g.Measured = fmt.Sprintf("%.3f s at %d rows, %.3f s at %d: time per row ×%.2f", ref.Y, int(ref.X), last.Y, int(last.X), ratio)
	if ratio <= 2 {
		g.Verdict, g.Why = row.Met, "simulate walks the trace with a forward cursor (simulate.cursor) and steps the fleet once a second: each point is read once"
	} else {
		g.Verdict, g.Why = row.Missed, "time per row grows with the trace's length: something is worse than linear"
	}
	return g
}

// writeTrace writes a trace of n 1-s rows to path: a slow sine between 5 and 35 rps.
func writeTrace(path string, n int) error {
	var b strings.Builder
	b.WriteString("timestamp,rps\n")
	for i := range n {
		fmt.Fprintf(&b, "%d,%.3f\n", i, 20+15*math.Sin(float64(i)/600))
	}
	return atomicfile.WriteFile(path, []byte(b.String()), 0o644)
}

type qmaxCost struct {
	wall         time.Duration
	rss          int64
	records      int
	recordsBytes int64
}

// qmax runs one tts-bench qmax and measures it.
func qmax(ctx context.Context, ttsBench, url, ladder string, maxC int, hold time.Duration, dir string) (qmaxCost, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return qmaxCost{}, err
	}
	out := filepath.Join(dir, "qmax.json")
	rctx, cancel := context.WithTimeout(ctx, 30*time.Minute)
	defer cancel()
	res, err := harness.Run(rctx, "", nil, ttsBench, "qmax", "--model", "espeak-ng", "--transport", "http", "--url", url, "--ladder", ladder,
		"--max-concurrency", strconv.Itoa(maxC), "--settle", "0s", "--hold", hold.String(), "--measure-window", hold.String(),
		"--slo-ms", "60000", "--stall-budget-ms", "60000", "--output", out,
		// The closed-loop ladder's cost alone (no rate staircase, a 30-request floor, no client CPU/lag bounds).
		"--rate-fractions", "none", "--min-requests", "30", "--max-client-cpu", "0", "--max-client-lag", "0")
	if werr := atomicfile.WriteFile(filepath.Join(dir, "qmax.log"), append(res.Stdout, res.Stderr...), 0o644); werr != nil {
		return qmaxCost{}, werr
	}
	if err != nil && !(errors.Is(err, harness.ErrExit) && res.ExitCode == 1) {
		return qmaxCost{}, fmt.Errorf("qmax --ladder %s: %w (log %s)", ladder, err, filepath.Join(dir, "qmax.log"))
	}
	m := qmaxCost{wall: res.Wall, rss: res.MaxRSSBytes}
	recs := filepath.Join(dir, "qmax.records.jsonl.gz")
	fi, err := os.Stat(recs)
	if err != nil {
		return qmaxCost{}, fmt.Errorf("qmax --ladder %s wrote no records: %w (log %s)", ladder, err, filepath.Join(dir, "qmax.log"))
	}
	m.recordsBytes = fi.Size()
	out2, err := exec.CommandContext(ctx, "sh", "-c", "zcat "+recs+" | wc -l").Output()
	if err != nil {
		return qmaxCost{}, fmt.Errorf("count the records of %s: %w", recs, err)
	}
	m.records, _ = strconv.Atoi(strings.TrimSpace(string(out2)))
	return m, nil
}

// writeCurve writes a qmax artifact like the one at from with an n-step throughput curve (C = 1 ... n, the
// last failing), so plan reads and interpolates a curve of that length.
func writeCurve(from, to string, n int) error {
	q, err := capacity.LoadQMax(from)
	if err != nil {
		return err
	}
	if len(q.Steps) == 0 {
		return fmt.Errorf("%s has no steps to extend", from)
	}
	base := q.Steps[0]
	slo := float64(q.SLOTTFABMs)
	steps := make([]capacity.QMaxStep, n)
	for i := range steps {
		s := base
		c := i + 1
		frac := float64(i) / float64(n)
		s.Concurrency = c
		s.TTFABP50Ms, s.TTFABP95Ms, s.TTFABP99Ms = base.TTFABP50Ms+frac*(slo-base.TTFABP95Ms)*0.9, base.TTFABP95Ms+frac*(slo-base.TTFABP95Ms), base.TTFABP99Ms+frac*(slo-base.TTFABP95Ms)*1.1
		s.ResponseMeanMs = base.ResponseMeanMs * (1 + frac)
		// Rounded: capacitytest synthesizes records whose count over the window gives the rate exactly.
		s.AchievedRPS = math.Round(float64(c)/(s.ResponseMeanMs/1000)*100) / 100
		s.ClientConcurrencyMean, s.ClientConcurrencyPeak = float64(c)*0.98, c
		if s.CloudWatchRatio > 0 {
			s.CloudWatchConcurrencyMax, s.CloudWatchRatio = float64(c), 1
		}
		s.MeetsSLO = i < n-1
		if !s.MeetsSLO {
			s.TTFABP95Ms, s.TTFABP99Ms = slo*1.2, slo*1.3
		}
		// The last step fails by TTFAB itself, so both definitions of Q_max agree.
		meets := s.MeetsSLO
		s.MeetsTTFABSLO = &meets
		steps[i] = s
	}
	q.Steps = steps
	q.SetQMax()
	if n == 1 {
		return errors.New("a curve needs at least 2 steps")
	}
	if errs := q.Verify(); len(errs) > 0 {
		return fmt.Errorf("the %d-step curve does not verify: %w", n, errors.Join(errs...))
	}
	// plan checks the artifact against its raw records: write records that give these figures.
	if err := os.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	if err := capacitytest.WriteRecords(to, q, 0); err != nil {
		return fmt.Errorf("the %d-step curve's records: %w", n, err)
	}
	return capacity.WriteJSON(to, q)
}

type emuMem struct{ rss, peak, children int64 }

// emulatorMemory starts `self emulator-child` (an emulator in a process of its own), deploys an espeak
// endpoint with n instances through the real SDK clients, waits InService, sends reqs invocations, and reads
// the emulator's memory and its instances' from /proc.
func emulatorMemory(ctx context.Context, self, containerBin, stateDir string, n, reqs int) (emuMem, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	os.RemoveAll(stateDir)
	cmd := exec.Command(self, "emulator-child", "-state-dir", stateDir, "-container", containerBin, "-quota", "16")
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return emuMem{}, err
	}
	child, err := harness.StartProcess(ctx, cmd, "", 0) // ready when it says where it serves, below
	if err != nil {
		return emuMem{}, fmt.Errorf("the emulator child: %w", err)
	}
	defer child.Stop()
	type hello struct {
		URL string `json:"url"`
		emulator.Credentials
	}
	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	var h hello
	select {
	case l, ok := <-lines:
		if !ok || json.Unmarshal([]byte(l), &h) != nil {
			return emuMem{}, fmt.Errorf("the emulator child did not say where it serves (%q)", l)
		}
	case <-time.After(30 * time.Second):
		return emuMem{}, errors.New("the emulator child did not start within 30 s")
	}
	cfg := cloud.LocalConfig(h.URL, cloud.LocalCredentials(h.Credentials))
	sm := sagemaker.NewFromConfig(cfg, func(o *sagemaker.Options) { o.BaseEndpoint = aws.String(h.URL) })
	rt := sagemakerruntime.NewFromConfig(cfg, func(o *sagemakerruntime.Options) { o.BaseEndpoint = aws.String(h.URL) })
	name := "speech-growth"
	if err := harness.Deploy(ctx, sm, harness.Endpoint{Name: name, Env: map[string]string{"ENGINE": "espeak", "QUEUE_MAX_DEPTH": "0", "ENGINE_WORKERS": "1"},
		Instances: n, StartupHealthCheck: 2 * time.Minute, InServiceWait: 3 * time.Minute}); err != nil {
		return emuMem{}, err
	}
	for i := 0; i < reqs; i++ {
		out, err := rt.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{EndpointName: aws.String(name), ContentType: aws.String("application/json"),
			Body: []byte(`{"text":"How cost grows with the number of instances."}`)})
		if err != nil {
			return emuMem{}, fmt.Errorf("invocation %d: %w", i+1, err)
		}
		if len(out.Body) == 0 {
			return emuMem{}, fmt.Errorf("invocation %d: empty audio", i+1)
		}
	}
	var m emuMem
	if m.rss, m.peak, err = harness.ProcMemory(child.Pid()); err != nil {
		return emuMem{}, err
	}
	kids, err := harness.Children(child.Pid())
	if err != nil {
		return emuMem{}, err
	}
	counted := 0
	for _, k := range kids {
		if rss, _, err := harness.ProcMemory(k); err == nil {
			m.children += rss
			counted++
		}
	}
	if counted < n {
		return emuMem{}, fmt.Errorf("%d instance processes found under the emulator, want %d", counted, n)
	}
	return m, nil
}

// emulatorChild serves an emulator in this process until SIGTERM, after printing {"url", access key} on stdout.
func emulatorChild(args []string) error {
	fs := flag.NewFlagSet("emulator-child", flag.ContinueOnError)
	stateDir := fs.String("state-dir", "", "state directory")
	bin := fs.String("container", "", "container binary")
	quota := fs.Int("quota", 16, "instance quota")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	emu, err := emulator.Open(emulator.Options{StateDir: *stateDir, Addr: "127.0.0.1:0", ContainerBin: *bin, InstanceQuota: *quota, Profile: &emulator.Profile{Name: "none"}, TimeScale: 1})
	if err != nil {
		return err
	}
	hello, err := json.Marshal(struct {
		URL string `json:"url"`
		emulator.Credentials
	}{emu.URL(), emu.Credentials()})
	if err != nil {
		return err
	}
	fmt.Println(string(hello))
	return emu.Run(ctx)
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
