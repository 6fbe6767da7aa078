// Command schedulers measures row 2 of BENCHMARKS.md (issues 15 and 17): Q_max of the espeak container under
// four scheduler configurations, with the same engine, machine, SLO, corpus and stall budget. For each it starts the real
// container (bin/speech-container) on a free loopback port and runs `tts-bench qmax --transport http` against
// it (no endpoint, no AWS call):
//
//	deadline      SCHEDULER=deadline, ENGINE_WORKERS = nproc (the container's default, issue 17)
//	first-chunk   SCHEDULER=first-chunk, ENGINE_WORKERS = nproc
//	fifo          SCHEDULER=fifo, ENGINE_WORKERS = nproc
//	serial-lock   SCHEDULER=fifo, ENGINE_WORKERS=1: the original proof-of-value's one lock around the engine
//
// It writes .cache/bench/2-schedulers.json (scripts/bench/internal/row), two charts beside it, and each run's
// qmax artifact, records, chart and log under .cache/bench/2-schedulers/<scheduler>/.
//
//	go run ./scripts/bench/schedulers            full size (ladder up to 64, 15-s steps: about 15 minutes)
//	go run ./scripts/bench/schedulers -smoke     ladder 1,2 with 3-second steps: checks the program, judges nothing
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/containerbin"
	"github.com/speech-infra/speech-infra/scripts/bench/internal/benchkit"
	"github.com/speech-infra/speech-infra/scripts/bench/internal/harness"
	"github.com/speech-infra/speech-infra/scripts/bench/internal/row"
)

// Row identity in BENCHMARKS.md.
const (
	rowN    = 2
	rowName = "schedulers"
)

// Scheduler is one container configuration measured.
type Scheduler struct {
	// Name is the row's label and the directory name; Env what the container runs with (over ENGINE=espeak,
	// QUEUE_MAX_DEPTH=0).
	Name string
	Env  []string
	// What says it in words.
	What string
}

// Schedulers are the configurations row 2 knows, in the row's order. deadline gets the espeak-ng catalog's
// first-audio target (a third of its 1000 ms SLO, what the endpoint stack passes).
var Schedulers = []Scheduler{
	{Name: "deadline", Env: []string{"SCHEDULER=deadline", "FIRST_AUDIO_TARGET_MS=333"}, What: "SCHEDULER=deadline, FIRST_AUDIO_TARGET_MS=333, ENGINE_WORKERS=nproc"},
	{Name: "first-chunk", Env: []string{"SCHEDULER=first-chunk"}, What: "SCHEDULER=first-chunk, ENGINE_WORKERS=nproc"},
	{Name: "fifo", Env: []string{"SCHEDULER=fifo"}, What: "SCHEDULER=fifo, ENGINE_WORKERS=nproc"},
	{Name: "serial-lock", Env: []string{"SCHEDULER=fifo", "ENGINE_WORKERS=1"}, What: "SCHEDULER=fifo, ENGINE_WORKERS=1 (the proof-of-value's serial lock)"},
}

// baseline is the scheduler every ratio is taken against.
const baseline = "serial-lock"

// size is how long and how far each qmax run goes.
type size struct {
	ladder, settle, hold, window string
	maxConcurrency               int
	refine                       bool
}

var (
	// The full size fits the four configurations in about 15 minutes: espeak answers a request in about 7 ms
	// uncontended, so with the +10 extension up to 200 a scheduler that keeps passing ran 25 steps (over 10
	// minutes each). Past 64 the row reports Q_max as a lower bound instead.
	full  = size{ladder: "1,2,4,6,8,12,16,24,32,48,64", settle: "3s", hold: "12s", window: "10s", maxConcurrency: 64, refine: true}
	smoke = size{ladder: "1,2", settle: "500ms", hold: "3s", window: "2500ms", maxConcurrency: 2}
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "bench schedulers:", err)
		os.Exit(1)
	}
}

// result is one scheduler's measurement.
type result struct {
	Scheduler Scheduler
	// Q is the artifact; nil when no step met the SLO (qmax writes none then) and QMax is 0.
	Q    *capacity.QMax
	Wall time.Duration
}

func (r result) qmax() int {
	if r.Q == nil {
		return 0
	}
	return r.Q.QMax
}

// atQMax is the artifact's step at Q_max.
func (r result) atQMax() (capacity.QMaxStep, bool) {
	if r.Q == nil {
		return capacity.QMaxStep{}, false
	}
	for _, s := range r.Q.Steps {
		if s.Concurrency == r.Q.QMax {
			return s, true
		}
	}
	return capacity.QMaxStep{}, false
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("schedulers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	isSmoke := fs.Bool("smoke", false, "smallest size (ladder 1,2, 3-s steps): checks the program still produces its row")
	dir := fs.String("out", row.DefaultDir, "where the row, its charts and the runs go")
	containerBin := fs.String("container", "", "the inference container binary (default $SPEECH_CONTAINER_BIN, else built into .cache/bench)")
	ttsBench := fs.String("tts-bench", "", "the tts-bench binary (default: built from ./cmd/tts-bench into <out>/bin)")
	only := fs.String("schedulers", "", "comma-separated subset of "+names()+" (default all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected argument %q: this program takes flags only (-smoke, -out, -container, -tts-bench, -schedulers)", fs.Arg(0))
	}
	sz := full
	if *isSmoke {
		sz = smoke
	}
	chosen, err := choose(*only)
	if err != nil {
		return err
	}
	if err := binaries(ctx, *dir, containerBin, ttsBench); err != nil {
		return err
	}

	started := time.Now().UTC()
	var results []result
	for _, s := range chosen {
		fmt.Fprintf(stderr, "bench schedulers: %s: qmax --ladder %s\n", s.Name, sz.ladder)
		r, err := measure(ctx, s, sz, *dir, *containerBin, *ttsBench)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		fmt.Fprintf(stderr, "bench schedulers: %s: Q_max %d (%.0f s)\n", s.Name, r.qmax(), r.Wall.Seconds())
		results = append(results, r)
	}
	rw := build(results, *isSmoke, started)
	if err := charts(*dir, results, &rw); err != nil {
		return err
	}
	p, err := row.Write(*dir, rw)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench schedulers: wrote %s\n", p)
	return nil
}

// binaries fills in the default container and tts-bench binaries and checks both exist.
func binaries(ctx context.Context, dir string, containerBin, ttsBench *string) error {
	var err error
	if *containerBin == "" {
		if *containerBin, err = benchkit.ContainerBinary(ctx); err != nil {
			return err
		}
	}
	if *ttsBench == "" {
		root, err := containerbin.RepoRoot()
		if err != nil {
			return err
		}
		abs, err := filepath.Abs(filepath.Join(dir, "bin", "tts-bench"))
		if err != nil {
			return err
		}
		if *ttsBench, err = harness.BuildGo(ctx, root, "./cmd/tts-bench", abs); err != nil {
			return err
		}
	}
	for _, p := range []struct{ flag, path string }{{"-container", *containerBin}, {"-tts-bench", *ttsBench}} {
		if fi, err := os.Stat(p.path); err != nil || fi.IsDir() {
			return fmt.Errorf("%s %s: not a file (%v): give the binary's path or leave the flag out to build it", p.flag, p.path, err)
		}
	}
	return nil
}

func names() string {
	var n []string
	for _, s := range Schedulers {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func choose(list string) ([]Scheduler, error) {
	if strings.TrimSpace(list) == "" {
		return Schedulers, nil
	}
	var out []Scheduler
	for _, name := range strings.Split(list, ",") {
		found := false
		for _, s := range Schedulers {
			if s.Name == strings.TrimSpace(name) {
				out, found = append(out, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("-schedulers: %q is not a scheduler: use some of %s", name, names())
		}
	}
	return out, nil
}

// measure starts the container for s and runs qmax against it.
func measure(ctx context.Context, s Scheduler, sz size, dir, containerBin, ttsBench string) (result, error) {
	runDir := filepath.Join(dir, strconv.Itoa(rowN)+"-"+rowName, s.Name)
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return result{}, fmt.Errorf("create %s: %w", runDir, err)
	}
	out := filepath.Join(runDir, "qmax.json")
	// A previous run's artifact must not pass for this one's when this one writes none.
	if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return result{}, fmt.Errorf("remove the previous %s: %w", out, err)
	}
	env := append([]string{"ENGINE=espeak", "QUEUE_MAX_DEPTH=0"}, s.Env...)
	c, err := harness.StartContainer(ctx, containerBin, env, filepath.Join(runDir, "container.log"))
	if err != nil {
		return result{}, err
	}
	defer c.Stop()
	args := []string{"qmax", "--model", "espeak-ng", "--transport", "http", "--url", c.URL,
		"--ladder", sz.ladder, "--max-concurrency", strconv.Itoa(sz.maxConcurrency),
		"--settle", sz.settle, "--hold", sz.hold, "--measure-window", sz.window, "--output", out}
	if sz.refine {
		args = append(args, "--refine")
	}
	// Bounded: the full ladder with refinement stays well under an hour even if every step runs.
	rctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	res, err := harness.Run(rctx, "", nil, ttsBench, args...)
	if werr := atomicfile.WriteFile(filepath.Join(runDir, "qmax.log"), append(res.Stdout, res.Stderr...), 0o644); werr != nil {
		return result{}, werr
	}
	r := result{Scheduler: s, Wall: res.Wall}
	switch {
	case err == nil:
	case errors.Is(err, harness.ErrExit) && res.ExitCode == 1 && strings.Contains(string(res.Stderr), "no step met the SLO"):
		return r, nil // Q_max 0: a figure, not a failure of the program
	default:
		return result{}, fmt.Errorf("%w (log: %s)", err, filepath.Join(runDir, "qmax.log"))
	}
	q, err := capacity.LoadQMax(out)
	if err != nil {
		return result{}, err
	}
	if errs := q.Verify(); len(errs) > 0 {
		return result{}, fmt.Errorf("the qmax artifact %s does not verify: %w", out, errors.Join(errs...))
	}
	r.Q = q
	return r, nil
}

// build folds the results into the row.
func build(results []result, isSmoke bool, started time.Time) row.Row {
	cmd := "go run ./scripts/bench/schedulers"
	if isSmoke {
		cmd += " -smoke"
	}
	sz := full
	if isSmoke {
		sz = smoke
	}
	rw := row.Row{
		Schema: row.SchemaVersion, N: rowN, Name: rowName, Title: "Q_max by scheduler", Smoke: isSmoke,
		Command: cmd, Machine: row.CurrentMachine(), Date: started, Duration: row.Of(time.Since(started)),
		Summary: "`tts-bench qmax --transport http` against the real espeak container (bin/speech-container) on loopback, " +
			"started once per scheduler with the same engine, corpus (the built-in seeded English corpus), SLO and stall budget " +
			"(the espeak-ng catalog's: p95 TTFAB ≤ 1000 ms, p95 stall ≤ 0 ms + 50 ms jitter). Closed loop, ladder " + sz.ladder +
			", settle " + sz.settle + ", hold " + sz.hold + ", measure window " + sz.window + refineText(sz.refine) +
			". Q_max is the highest concurrency whose step met both bounds; the serial lock (fifo with one engine worker) is the original proof-of-value.",
		Notes: []string{"A shared, noisy machine: other work ran beside these measurements, so absolute figures move between runs; the ratios are measured side by side in one run.",
			"Each run's artifact, records, staircase chart and log are under .cache/bench/2-schedulers/<scheduler>/."},
	}
	var base *result
	for i := range results {
		if results[i].Scheduler.Name == baseline {
			base = &results[i]
		}
	}
	t := row.Table{Title: "Q_max and the step at Q_max", Columns: []string{"scheduler", "configuration", "Q_max", "lowest failing C", "p95 TTFAB at Q_max (ms)", "p95 stall at Q_max (ms)", "throughput at Q_max (req/s)", "Q_max ÷ serial lock", "throughput ÷ serial lock"}}
	for _, r := range results {
		st, ok := r.atQMax()
		lowest := "none (a lower bound)"
		if r.Q != nil && r.Q.BracketLowestFail > 0 {
			lowest = strconv.Itoa(r.Q.BracketLowestFail)
		}
		if r.Q == nil {
			lowest = "the first step"
		}
		cells := []string{r.Scheduler.Name, r.Scheduler.What, strconv.Itoa(r.qmax()), lowest, "-", "-", "-", "-", "-"}
		if ok {
			cells[4], cells[5], cells[6] = f1(st.TTFABP95Ms), f1(st.StallP95Ms), f1(st.Throughput())
		}
		if base != nil {
			cells[7] = ratio(float64(r.qmax()), float64(base.qmax()))
			if bst, bok := base.atQMax(); ok && bok {
				cells[8] = ratio(st.Throughput(), bst.Throughput())
			}
		}
		t.Rows = append(t.Rows, cells)
	}
	rw.Tables = append(rw.Tables, t)
	rw.Goals = append(rw.Goals, goal(results, base, isSmoke), deadlineGoal(results, base, isSmoke))
	return rw
}

func refineText(b bool) string {
	if b {
		return ", refined by bisection (--refine)"
	}
	return ""
}

// goal judges "first-chunk ≥ 2× the serial lock's Q_max, with the stall budget met".
func goal(results []result, base *result, isSmoke bool) row.Goal {
	g := row.Goal{Text: "first-chunk Q_max ≥ 2× the serial lock's, with the stall budget met"}
	var fc *result
	for i := range results {
		if results[i].Scheduler.Name == "first-chunk" {
			fc = &results[i]
		}
	}
	if fc == nil || base == nil {
		g.Verdict, g.Measured, g.Why = row.NotMeasured, "-", "first-chunk and serial-lock were not both measured (-schedulers)"
		return g
	}
	st, ok := fc.atQMax()
	stallMet := ok && st.StallP95Ms <= st.StallBudgetMs+st.StallJitterMs
	g.Measured = fmt.Sprintf("first-chunk %d vs serial lock %d: %s", fc.qmax(), base.qmax(), ratio(float64(fc.qmax()), float64(base.qmax())))
	if ok {
		g.Measured += fmt.Sprintf("; p95 stall at Q_max %s ms (budget %s + %s ms jitter)", f1(st.StallP95Ms), f1(st.StallBudgetMs), f1(st.StallJitterMs))
	}
	switch {
	case isSmoke:
		g.Verdict, g.Why = row.NotMeasured, "smoke run (ladder 1,2 with 3-second steps): too small to judge; run `make bench`"
	case base.qmax() == 0:
		g.Verdict, g.Why = row.NotMeasured, "the serial lock met the SLO at no step, so there is no ratio; lower the ladder's first step"
	case fc.Q != nil && fc.Q.BracketLowestFail == 0 && float64(fc.qmax()) < 2*float64(base.qmax()):
		g.Verdict, g.Why = row.NotMeasured, "first-chunk failed no step: its Q_max is a lower bound below 2×; raise the ladder"
	default:
		met := float64(fc.qmax()) >= 2*float64(base.qmax()) && stallMet
		g.Verdict = row.Verdict(met)
		if !met {
			if !stallMet {
				g.Why = "the stall budget was not met at first-chunk's Q_max"
			} else {
				g.Why = "first-chunk's Q_max is below twice the serial lock's on this machine: with espeak the first chunk is most of the work, so serving first chunks first buys little over fifo; the gain over the lock is the engine workers (nproc)"
			}
		} else if fc.Q != nil && fc.Q.BracketLowestFail == 0 {
			g.Why = "first-chunk failed no step: its Q_max is a lower bound"
		}
	}
	return g
}

// deadlineGoal judges issue 17's "deadline's Q_max under the full criterion (p95 TTFAB ≤ SLO and p95 stall ≤
// budget) at or above both other schedulers' and at least 2× the serial lock's".
func deadlineGoal(results []result, base *result, isSmoke bool) row.Goal {
	g := row.Goal{Text: "deadline Q_max (p95 TTFAB ≤ SLO and p95 stall ≤ budget) ≥ first-chunk's and fifo's, and ≥ 2× the serial lock's"}
	by := map[string]*result{}
	for i := range results {
		by[results[i].Scheduler.Name] = &results[i]
	}
	dl, fc, ff := by["deadline"], by["first-chunk"], by["fifo"]
	if dl == nil || fc == nil || ff == nil || base == nil {
		g.Verdict, g.Measured, g.Why = row.NotMeasured, "-", "deadline, first-chunk, fifo and serial-lock were not all measured (-schedulers)"
		return g
	}
	g.Measured = fmt.Sprintf("deadline %d, first-chunk %d, fifo %d, serial lock %d (deadline ÷ lock %s)",
		dl.qmax(), fc.qmax(), ff.qmax(), base.qmax(), ratio(float64(dl.qmax()), float64(base.qmax())))
	atLeastOthers := dl.qmax() >= fc.qmax() && dl.qmax() >= ff.qmax()
	twice := float64(dl.qmax()) >= 2*float64(base.qmax())
	switch {
	case isSmoke:
		g.Verdict, g.Why = row.NotMeasured, "smoke run (ladder 1,2 with 3-second steps): too small to judge; run `make bench`"
	case base.qmax() == 0:
		g.Verdict, g.Why = row.NotMeasured, "the serial lock met the SLO at no step, so there is no ratio; lower the ladder's first step"
	case dl.Q != nil && dl.Q.BracketLowestFail == 0 && !(atLeastOthers && twice):
		g.Verdict, g.Why = row.NotMeasured, "deadline failed no step: its Q_max is a lower bound that falls short; raise the ladder"
	default:
		g.Verdict = row.Verdict(atLeastOthers && twice)
		switch {
		case !atLeastOthers:
			g.Why = "deadline's Q_max is below another scheduler's on this run (see the table: the step at each Q_max, and each run's records under .cache/bench/2-schedulers/)"
		case !twice:
			g.Why = "deadline's Q_max is below twice the serial lock's: with espeak the first chunk is most of the work, and the gain over the lock is the engine workers (nproc)"
		case dl.Q != nil && dl.Q.BracketLowestFail == 0:
			g.Why = "deadline failed no step: its Q_max is a lower bound"
		}
	}
	return g
}

func charts(dir string, results []result, rw *row.Row) error {
	ttfab := harness.Chart{Title: "p95 TTFAB per step, by scheduler (espeak, closed loop)", XLabel: "concurrency (requests in flight)", YLabel: "p95 TTFAB (ms)", Lines: []harness.HLine{{Name: "SLO 1000 ms", Y: 1000}}}
	var labels []string
	var qm []float64
	for _, r := range results {
		labels, qm = append(labels, r.Scheduler.Name), append(qm, float64(r.qmax()))
		if r.Q == nil {
			continue
		}
		s := harness.Series{Name: r.Scheduler.Name}
		for _, st := range r.Q.Steps {
			s.Points = append(s.Points, harness.Point{X: float64(st.Concurrency), Y: st.TTFABP95Ms})
		}
		sortPoints(s.Points)
		ttfab.Series = append(ttfab.Series, s)
	}
	if len(results) > 0 {
		f := strconv.Itoa(rowN) + "-" + rowName + "-qmax.svg"
		if err := (harness.Bars{Title: "Q_max by scheduler", YLabel: "Q_max (requests in flight)", Labels: labels, Names: []string{"Q_max"}, Values: [][]float64{qm}}).WriteSVG(filepath.Join(dir, f)); err != nil {
			return err
		}
		rw.Figures = append(rw.Figures, row.Figure{File: f, Caption: "Q_max of each scheduler (higher is better)"})
	}
	if len(ttfab.Series) > 0 {
		f := strconv.Itoa(rowN) + "-" + rowName + "-ttfab.svg"
		if err := ttfab.WriteSVG(filepath.Join(dir, f)); err != nil {
			return err
		}
		rw.Figures = append(rw.Figures, row.Figure{File: f, Caption: "p95 TTFAB at each measured concurrency (bisection steps included)"})
	}
	return nil
}

func sortPoints(p []harness.Point) {
	for i := 1; i < len(p); i++ {
		for j := i; j > 0 && p[j].X < p[j-1].X; j-- {
			p[j], p[j-1] = p[j-1], p[j]
		}
	}
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}
