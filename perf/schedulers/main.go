// Command schedulers measures row 2 of BENCHMARKS.md: Q_max under the full criterion (p95
// TTFAB ≤ SLO and p95 stall ≤ budget) of four scheduler configurations, on two engines, with the same machine,
// SLO, stall budget and corpus (bench.ParagraphCorpus(5): texts of five consecutive sentences, so every request
// has continuations to order). For each it starts the real container (bin/speech-container) on a free
// loopback port and runs `tts-bench qmax --transport http` against it (no endpoint, no AWS call):
//
//	deadline      SCHEDULER=deadline, FIRST_AUDIO_TARGET_MS=333 (a third of the espeak-ng catalog's 1000 ms SLO)
//	first-chunk   SCHEDULER=first-chunk
//	fifo          SCHEDULER=fifo
//	serial-lock   SCHEDULER=fifo, ENGINE_WORKERS=1: the original proof-of-value's one lock around the engine
//	              (docs/design.md, "The original")
//
// The engines:
//
//	calibration   ENGINE=calibration, CALIBRATION_SEGMENT_MS=100, ENGINE_WORKERS=1 (100 ms of
//	              compute a segment, 60 ms of audio a character); serial-lock is then fifo's configuration,
//	              measured twice. Its compute is a wait, so its four runs go side by side.
//	espeak        ENGINE=espeak, ENGINE_WORKERS=nproc (the container's default); the four runs go one after
//	              another, since espeak's compute is the cores'.
//
// It writes .cache/bench/2-schedulers.json (perf/internal/row), charts beside it, and each run's
// qmax artifact, records, chart, corpus and log under .cache/bench/2-schedulers/<engine>/<scheduler>/.
//
//	go run ./perf/schedulers            full size (about 40 minutes)
//	go run ./perf/schedulers -smoke     ladder 1,2 with 3-second steps: checks the program, judges nothing
package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/containerbin"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/perf/internal/harness"
	"github.com/speech-infra/speech-infra/perf/internal/row"
)

// Row identity in BENCHMARKS.md.
const (
	rowN    = 2
	rowName = "schedulers"
)

// corpusSentences is how many consecutive sentences a request text has (bench.ParagraphCorpus).
const corpusSentences = 5

// Scheduler is one container configuration measured.
type Scheduler struct {
	// Name is the row's label and the directory name; Env what the container runs with, over the engine's
	// Env and QUEUE_MAX_DEPTH=0.
	Name string
	Env  []string
	// What says it in words.
	What string
}

// Schedulers are the configurations row 2 knows, in the row's order. deadline gets the espeak-ng catalog's
// first-audio target (a third of its 1000 ms SLO, what the endpoint stack passes). The three schedulers run
// with the engine's own worker count (Engine.Workers); serial-lock sets one.
var Schedulers = []Scheduler{
	{Name: "deadline", Env: []string{"SCHEDULER=deadline", "FIRST_AUDIO_TARGET_MS=333"}, What: "SCHEDULER=deadline, FIRST_AUDIO_TARGET_MS=333"},
	{Name: "first-chunk", Env: []string{"SCHEDULER=first-chunk"}, What: "SCHEDULER=first-chunk"},
	{Name: "fifo", Env: []string{"SCHEDULER=fifo"}, What: "SCHEDULER=fifo"},
	{Name: "serial-lock", Env: []string{"SCHEDULER=fifo", "ENGINE_WORKERS=1"}, What: "SCHEDULER=fifo, ENGINE_WORKERS=1 (the proof-of-value's serial lock)"},
}

// baseline is the scheduler every ratio is taken against.
const baseline = "serial-lock"

// Engine is one engine the four configurations are measured on.
type Engine struct {
	// Name is the table's label and a directory name; Env what every configuration runs with; What says it.
	Name string
	Env  []string
	What string
	// Workers is the three schedulers' ENGINE_WORKERS, in words.
	Workers string
	// Full and Smoke are the sizes of its qmax runs.
	Full, Smoke size
	// Parallel runs the four configurations side by side: right only when the engine's compute is a wait.
	Parallel bool
	// Why says why the size is what it is.
	Why string
}

// size is how long and how far each qmax run goes.
type size struct {
	ladder, settle, hold, window string
	maxConcurrency               int
	refine                       bool
}

func (z size) String() string {
	s := "ladder " + z.ladder + ", settle " + z.settle + ", hold " + z.hold + ", measure window " + z.window
	if z.refine {
		s += ", refined by bisection (--refine)"
	}
	return s
}

// smoke is every engine's smallest size.
var smoke = size{ladder: "1,2", settle: "500ms", hold: "3s", window: "2500ms", maxConcurrency: 2}

// Engines are the engines row 2 measures, in its order.
var Engines = []Engine{
	{
		Name: "calibration", Env: []string{"ENGINE=calibration", "CALIBRATION_SEGMENT_MS=100", "ENGINE_WORKERS=1"},
		What:    "the calibration engine: 100 ms of compute a segment (a wait), 60 ms of silent audio a character, one worker",
		Workers: "1", Parallel: true,
		Full: size{ladder: "1,2,4,8,16,24,32,48,64", settle: "30s", hold: "50s", window: "30s", maxConcurrency: 64, refine: true},
		Why:  "30-s settle: one worker serves about 1.3 requests/s (a text is five or more segments: clause punctuation splits too, and deadline cuts a long first sentence), so a request lasts up to C/1.3 s in a closed loop, and the window must start in steady state; 30-s window: at least 30 requests (qmax's floor) at that rate",
	},
	{
		Name: "espeak", Env: []string{"ENGINE=espeak"},
		What:    "espeak-ng 1.51 in ENGINE_WORKERS = nproc worker processes (the container's default)",
		Workers: "nproc",
		Full:    size{ladder: "1,4,16,32,64,128,256,384,512,768,1024", settle: "15s", hold: "20s", window: "10s", maxConcurrency: 1024, refine: true},
		Why:     "ladder to 1024: espeak computes a five-sentence request in about 15 ms on two cores, so fifo and the lock fail between 64 and 128, while deadline and first-chunk both passed every step to 256 in a run with a ladder that stopped there; 15-s settle: at about 60 requests/s a request lasts up to C/60 s in a closed loop (17 s at 1024), and the window must start in steady state",
	},
}

func main() {
	harness.Main("bench schedulers", func(ctx context.Context, args []string) error { return run(ctx, args, os.Stderr) })
}

// result is one configuration's measurement.
type result struct {
	Engine    Engine
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

// lowerBound is true when the run failed no step: its Q_max is only a lower bound.
func (r result) lowerBound() bool { return r.Q != nil && r.Q.BracketLowestFail == 0 }

// unusableBracket lists the steps that bracket Q_max (at Q_max and the lowest failing one) that are not
// usable, each with its reason: such a Q_max is not trusted (tts-bench plan refuses it too).
func (r result) unusableBracket() []string {
	if r.Q == nil {
		return nil
	}
	var out []string
	for _, s := range r.Q.Steps {
		if !s.Usable && (s.Concurrency == r.Q.QMax || s.Concurrency == r.Q.BracketLowestFail) {
			out = append(out, fmt.Sprintf("C=%d (%s)", s.Concurrency, s.UnusableReason))
		}
	}
	return out
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

// options are the program's settings after the flags.
type options struct {
	smoke                  bool
	dir, container, ttsBin string
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("schedulers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var common harness.Common
	common.AddCommon(fs, "smallest size (ladder 1,2, 3-s steps): checks the program still produces its row")
	containerBin := fs.String("container", "", "the inference container binary (default $SPEECH_CONTAINER_BIN, else built into .cache/bench)")
	ttsBench := fs.String("tts-bench", "", "the tts-bench binary (default: built from ./cmd/tts-bench into <out>/bin)")
	onlySched := fs.String("schedulers", "", "comma-separated subset of "+schedulerNames()+" (default all)")
	onlyEngines := fs.String("engines", "", "comma-separated subset of "+engineNames()+" (default all)")
	if err := harness.ParseFlags(fs, args, "this program takes flags only (-smoke, -out, -container, -tts-bench, -schedulers, -engines)"); err != nil {
		return err
	}
	if errs := common.Check(); len(errs) > 0 {
		return exitcode.Usage(errors.Join(errs...))
	}
	scheds, err := chooseSchedulers(*onlySched)
	if err != nil {
		return exitcode.Usage(err)
	}
	engines, err := chooseEngines(*onlyEngines)
	if err != nil {
		return exitcode.Usage(err)
	}
	if err := binaries(ctx, common.Out, containerBin, ttsBench); err != nil {
		return err
	}
	o := options{smoke: common.Smoke, dir: common.Out, container: *containerBin, ttsBin: *ttsBench}

	started := time.Now().UTC()
	var results []result
	for _, e := range engines {
		rs, err := measureEngine(ctx, o, e, scheds, stderr)
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("interrupted: no row written (the runs so far are under %s)", filepath.Join(o.dir, strconv.Itoa(rowN)+"-"+rowName))
		}
		if err != nil {
			return err
		}
		results = append(results, rs...)
	}
	rw := build(results, engines, o.smoke, started)
	if err := charts(o.dir, results, engines, &rw); err != nil {
		return err
	}
	p, err := row.Write(o.dir, rw)
	if err != nil {
		return err
	}
	fmt.Fprintf(stderr, "bench schedulers: wrote %s\n", p)
	return nil
}

// measureEngine measures every chosen scheduler on e, side by side when e.Parallel, in the order of scheds.
func measureEngine(ctx context.Context, o options, e Engine, scheds []Scheduler, stderr io.Writer) ([]result, error) {
	sz := e.Full
	if o.smoke {
		sz = smoke
	}
	out := make([]result, len(scheds))
	errs := make([]error, len(scheds))
	var mu sync.Mutex // stderr
	say := func(format string, a ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "bench schedulers: "+format+"\n", a...)
	}
	one := func(i int) {
		s := scheds[i]
		say("%s/%s: qmax --ladder %s", e.Name, s.Name, sz.ladder)
		r, err := measure(ctx, o, e, s, sz)
		if err != nil {
			errs[i] = fmt.Errorf("%s/%s: %w", e.Name, s.Name, err)
			return
		}
		say("%s/%s: Q_max %d (%.0f s)", e.Name, s.Name, r.qmax(), r.Wall.Seconds())
		out[i] = r
	}
	if e.Parallel {
		var wg sync.WaitGroup
		for i := range scheds {
			wg.Go(func() { one(i) })
		}
		wg.Wait()
	} else {
		for i := range scheds {
			if one(i); errs[i] != nil {
				break
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// binaries fills in the default container and tts-bench binaries and checks both exist.
func binaries(ctx context.Context, dir string, containerBin, ttsBench *string) error {
	var err error
	if *containerBin == "" {
		if *containerBin, err = harness.ContainerBinary(ctx); err != nil {
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

func schedulerNames() string {
	var n []string
	for _, s := range Schedulers {
		n = append(n, s.Name)
	}
	return strings.Join(n, ",")
}

func engineNames() string {
	var n []string
	for _, e := range Engines {
		n = append(n, e.Name)
	}
	return strings.Join(n, ",")
}

// pick returns the elements of all named in the comma-separated list (all of them for an empty list), in
// all's order, or an error naming the flag and the choices.
func pick[T any](flagName, list string, all []T, name func(T) string, choices string) ([]T, error) {
	if strings.TrimSpace(list) == "" {
		return all, nil
	}
	want := map[string]bool{}
	for _, n := range strings.Split(list, ",") {
		n = strings.TrimSpace(n)
		found := false
		for _, x := range all {
			found = found || name(x) == n
		}
		if !found {
			return nil, fmt.Errorf("%s: %q is not one of %s: use some of them, comma-separated", flagName, n, choices)
		}
		want[n] = true
	}
	var out []T
	for _, x := range all {
		if want[name(x)] {
			out = append(out, x)
		}
	}
	return out, nil
}

func chooseSchedulers(list string) ([]Scheduler, error) {
	return pick("-schedulers", list, Schedulers, func(s Scheduler) string { return s.Name }, schedulerNames())
}

func chooseEngines(list string) ([]Engine, error) {
	return pick("-engines", list, Engines, func(e Engine) string { return e.Name }, engineNames())
}

// runDir is where one configuration's files go.
func runDir(dir string, e Engine, s Scheduler) string {
	return filepath.Join(dir, strconv.Itoa(rowN)+"-"+rowName, e.Name, s.Name)
}

// measure starts the container for e and s and runs qmax against it.
func measure(ctx context.Context, o options, e Engine, s Scheduler, sz size) (result, error) {
	rd := runDir(o.dir, e, s)
	if err := os.MkdirAll(rd, 0o755); err != nil {
		return result{}, fmt.Errorf("create %s: %w", rd, err)
	}
	out := filepath.Join(rd, "qmax.json")
	// A previous run's artifact must not pass for this one's when this one writes none.
	if err := os.Remove(out); err != nil && !errors.Is(err, os.ErrNotExist) {
		return result{}, fmt.Errorf("remove the previous %s: %w", out, err)
	}
	corpus, err := bench.ParagraphCorpus(corpusSentences)
	if err != nil {
		return result{}, err
	}
	corpusPath := filepath.Join(rd, "corpus.txt")
	if err := atomicfile.WriteFile(corpusPath, []byte(strings.Join(corpus.Texts(), "\n")+"\n"), 0o644); err != nil {
		return result{}, err
	}
	env := append(append([]string{"QUEUE_MAX_DEPTH=0"}, e.Env...), s.Env...)
	c, err := harness.StartContainer(ctx, o.container, env, harness.ContainerOutput{LogPath: filepath.Join(rd, "container.log")})
	if err != nil {
		return result{}, err
	}
	defer c.Stop()
	args := []string{"qmax", "--model", "espeak-ng", "--transport", "http", "--url", c.URL, "--corpus", corpusPath,
		"--ladder", sz.ladder, "--max-concurrency", strconv.Itoa(sz.maxConcurrency),
		"--settle", sz.settle, "--hold", sz.hold, "--measure-window", sz.window, "--output", out,
		// This row compares closed-loop Q_max alone, measured the same way on every run: no rate staircase, a
		// 30-request floor and no client CPU/lag bounds (qmax's defaults add a rate staircase, a 100-request floor
		// and the client's own CPU/lag bounds).
		"--rate-fractions", "none", "--min-requests", "30", "--max-client-cpu", "0", "--max-client-lag", "0"}
	if sz.refine {
		args = append(args, "--refine")
	}
	// Bounded: the full ladder with refinement stays well under an hour even if every step runs.
	rctx, cancel := context.WithTimeout(ctx, time.Hour)
	defer cancel()
	res, err := harness.Run(rctx, "", nil, o.ttsBin, args...)
	if werr := atomicfile.WriteFile(filepath.Join(rd, "qmax.log"), append(res.Stdout, res.Stderr...), 0o644); werr != nil {
		return result{}, werr
	}
	r := result{Engine: e, Scheduler: s, Wall: res.Wall}
	switch {
	case err == nil:
	case errors.Is(err, harness.ErrExit) && res.ExitCode == 1 && strings.Contains(string(res.Stderr), "no step met the SLO"):
		return r, nil // Q_max 0: a figure, not a failure of the program
	default:
		return result{}, fmt.Errorf("%w (log: %s)", err, filepath.Join(rd, "qmax.log"))
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

// of returns the engine's results by scheduler name.
func of(results []result, e Engine) map[string]*result {
	by := map[string]*result{}
	for i := range results {
		if results[i].Engine.Name == e.Name {
			by[results[i].Scheduler.Name] = &results[i]
		}
	}
	return by
}

// build folds the results into the row.
func build(results []result, engines []Engine, isSmoke bool, started time.Time) row.Row {
	cmd := "go run ./perf/schedulers"
	if isSmoke {
		cmd += " -smoke"
	}
	var sizes []string
	for _, e := range engines {
		sz := e.Full
		if isSmoke {
			sz = smoke
		}
		sizes = append(sizes, e.Name+": "+sz.String())
	}
	rw := row.Row{
		Schema: row.SchemaVersion, N: rowN, Name: rowName, Title: "Q_max by scheduler", Smoke: isSmoke,
		Command: cmd, Machine: row.CurrentMachine(), Date: started, Duration: row.Of(time.Since(started)),
		Summary: "`tts-bench qmax --transport http` against the real container (bin/speech-container) on loopback, started once per " +
			"engine and scheduler, all with the same SLO and stall budget (the espeak-ng catalog's: p95 TTFAB ≤ 1000 ms, p95 stall ≤ 0 ms + 50 ms jitter) " +
			"and the same corpus: texts of five consecutive sentences (bench.ParagraphCorpus(5), 120 texts of 260 to 370 characters), so every request " +
			"has four continuations for a scheduler to order. Q_max is the highest concurrency whose step met both bounds (closed loop); the serial lock " +
			"(fifo with one engine worker) is the original proof-of-value. Sizes: " + strings.Join(sizes, "; ") + ".",
		Fixed: []string{"measure/qmax_run.go (commit 6b327cd): `qmax --transport http` GETs /ping before the first step. Probing this row with the container not yet started, one 8-s step sent 153,954 requests to a closed port in a tight loop and wrote their records; now a wrong --url or an unhealthy container is refused before anything is sent or written"},
		Notes: []string{
			"A shared, noisy machine: other work ran beside these measurements, so absolute figures move between runs; the ratios are measured side by side in one run.",
			"The calibration engine runs with one worker, so its serial-lock configuration is its fifo configuration: the two rows are two runs of the same thing, and their difference is run-to-run spread.",
			"Each run's artifact, records, staircase chart, corpus and log are under .cache/bench/2-schedulers/<engine>/<scheduler>/.",
		},
	}
	for _, e := range engines {
		if !isSmoke {
			rw.Notes = append(rw.Notes, e.Name+": "+e.Why+".")
		}
	}
	for _, e := range engines {
		by := of(results, e)
		base := by[baseline]
		t := row.Table{Title: e.Name + ": " + e.What, Columns: []string{"scheduler", "configuration", "Q_max", "lowest failing C", "p95 TTFAB at Q_max (ms)", "p95 stall at Q_max (ms)", "throughput at Q_max (req/s)", "Q_max ÷ serial lock", "throughput ÷ serial lock", "bracketing steps usable"}}
		for _, s := range Schedulers {
			r := by[s.Name]
			if r == nil {
				continue
			}
			st, ok := r.atQMax()
			lowest := "none (a lower bound)"
			if r.Q != nil && r.Q.BracketLowestFail > 0 {
				lowest = strconv.Itoa(r.Q.BracketLowestFail)
			}
			if r.Q == nil {
				lowest = "the first step"
			}
			what := s.What
			if s.Name != baseline {
				what += ", ENGINE_WORKERS=" + e.Workers
			}
			usable := "yes"
			if u := r.unusableBracket(); len(u) > 0 {
				usable = "no: " + strings.Join(u, "; ")
			}
			cells := []string{s.Name, what, strconv.Itoa(r.qmax()), lowest, "-", "-", "-", "-", "-", usable}
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
		rw.Goals = append(rw.Goals, deadlineGoal(e, by, isSmoke))
		if e.Name == "espeak" {
			rw.Goals = append(rw.Goals, firstChunkGoal(by, isSmoke))
		}
	}
	return rw
}

// smokeWhy is every goal's reason in a smoke run.
const smokeWhy = "smoke run (ladder 1,2 with 3-second steps): too small to judge; run `make bench`"

// firstChunkGoal judges the goal "first-chunk ≥ 2× the serial lock's Q_max, with the stall budget met" (espeak).
func firstChunkGoal(by map[string]*result, isSmoke bool) row.Goal {
	g := row.Goal{Text: "espeak: first-chunk Q_max ≥ 2× the serial lock's, with the stall budget met"}
	fc, base := by["first-chunk"], by[baseline]
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
	twice := float64(fc.qmax()) >= 2*float64(base.qmax())
	switch {
	case isSmoke:
		g.Verdict, g.Why = row.NotMeasured, smokeWhy
	case base.qmax() == 0:
		g.Verdict, g.Why = row.NotMeasured, "the serial lock met the SLO at no step, so there is no ratio; lower the ladder's first step"
	case fc.lowerBound() && !twice:
		g.Verdict, g.Why = row.NotMeasured, "first-chunk failed no step: its Q_max is a lower bound below 2×; raise the ladder"
	default:
		g.Verdict = row.Verdict(twice && stallMet)
		switch {
		case !stallMet:
			g.Why = "the stall budget was not met at first-chunk's Q_max"
		case !twice:
			g.Why = "first-chunk's Q_max is below twice the serial lock's on this machine"
		case fc.lowerBound():
			g.Why = "first-chunk failed no step: its Q_max is a lower bound"
		}
	}
	return g
}

// deadlineGoal judges the goal "deadline's Q_max under the full criterion (p95 TTFAB ≤ SLO and p95 stall ≤
// budget) at or above both other schedulers' and at least 2× the serial lock's" on one engine. A Q_max that is
// a lower bound (no step failed) decides only what it decides: deadline's lower bound at or above another's
// exact Q_max is "at or above"; two lower bounds are not ordered.
func deadlineGoal(e Engine, by map[string]*result, isSmoke bool) row.Goal {
	g := row.Goal{Text: e.Name + ": deadline Q_max (p95 TTFAB ≤ SLO and p95 stall ≤ budget) ≥ first-chunk's and fifo's, and ≥ 2× the serial lock's"}
	dl, fc, ff, base := by["deadline"], by["first-chunk"], by["fifo"], by[baseline]
	if dl == nil || fc == nil || ff == nil || base == nil {
		g.Verdict, g.Measured, g.Why = row.NotMeasured, "-", "deadline, first-chunk, fifo and serial-lock were not all measured (-schedulers)"
		return g
	}
	show := func(r *result) string {
		if r.lowerBound() {
			return "≥ " + strconv.Itoa(r.qmax())
		}
		return strconv.Itoa(r.qmax())
	}
	g.Measured = fmt.Sprintf("deadline %s, first-chunk %s, fifo %s, serial lock %s (deadline ÷ lock %s)",
		show(dl), show(fc), show(ff), show(base), ratio(float64(dl.qmax()), float64(base.qmax())))
	var behind, unordered []string
	for _, o := range []*result{fc, ff} {
		switch {
		case dl.qmax() < o.qmax():
			behind = append(behind, o.Scheduler.Name)
		case o.lowerBound() && dl.lowerBound():
			unordered = append(unordered, o.Scheduler.Name)
		}
	}
	twice := float64(dl.qmax()) >= 2*float64(base.qmax())
	var untrusted []string
	for _, r := range []*result{dl, fc, ff, base} {
		if u := r.unusableBracket(); len(u) > 0 {
			untrusted = append(untrusted, r.Scheduler.Name+" at "+strings.Join(u, ", "))
		}
	}
	switch {
	case isSmoke:
		g.Verdict, g.Why = row.NotMeasured, smokeWhy
	case len(untrusted) > 0:
		g.Verdict, g.Why = row.NotMeasured, "a step that brackets a Q_max is not usable, so that Q_max is not trusted: "+strings.Join(untrusted, "; ")+"; lengthen the steps"
	case base.qmax() == 0:
		g.Verdict, g.Why = row.NotMeasured, "the serial lock met the SLO at no step, so there is no ratio; lower the ladder's first step"
	case base.lowerBound():
		g.Verdict, g.Why = row.NotMeasured, "the serial lock failed no step: its Q_max is a lower bound, so the ratio is not known; raise the ladder"
	case dl.lowerBound() && (len(behind) > 0 || !twice):
		g.Verdict, g.Why = row.NotMeasured, "deadline failed no step: its Q_max is a lower bound that falls short; raise the ladder"
	case len(behind) > 0:
		g.Verdict, g.Why = row.Missed, "deadline's Q_max is below "+strings.Join(behind, " and ")+"'s on this run (see the table: the step at each Q_max, and each run's records under .cache/bench/2-schedulers/"+e.Name+"/)"
	case !twice:
		g.Verdict, g.Why = row.Missed, "deadline's Q_max is below twice the serial lock's on this run"
	case len(unordered) > 0:
		g.Verdict, g.Why = row.NotMeasured, "deadline is ≥ 2× the serial lock, but it and "+strings.Join(unordered, " and ")+" both passed every step up to "+strconv.Itoa(dl.qmax())+", so they are not ordered; raise the ladder"
	default:
		g.Verdict = row.Met
		if dl.lowerBound() {
			g.Why = "deadline failed no step: its Q_max is a lower bound, already at or above the others' and twice the lock's"
		}
	}
	return g
}

func charts(dir string, results []result, engines []Engine, rw *row.Row) error {
	if len(results) == 0 {
		return nil
	}
	var labels []string
	for _, s := range Schedulers {
		labels = append(labels, s.Name)
	}
	bars := harness.Bars{Title: "Q_max by scheduler and engine (full criterion: TTFAB and stall)", YLabel: "Q_max (requests in flight)", Labels: labels}
	for _, e := range engines {
		by := of(results, e)
		vals := make([]float64, len(Schedulers))
		for i, s := range Schedulers {
			if r := by[s.Name]; r != nil {
				vals[i] = float64(r.qmax())
			}
		}
		bars.Names, bars.Values = append(bars.Names, e.Name), append(bars.Values, vals)
	}
	f := strconv.Itoa(rowN) + "-" + rowName + "-qmax.svg"
	if err := bars.WriteSVG(filepath.Join(dir, f)); err != nil {
		return err
	}
	rw.Figures = append(rw.Figures, row.Figure{File: f, Caption: "Q_max of each scheduler on each engine (higher is better)"})
	for _, e := range engines {
		ttfab := harness.Chart{Title: e.Name + ": p95 TTFAB per step, by scheduler (closed loop)", XLabel: "concurrency (requests in flight)", YLabel: "p95 TTFAB (ms)", Lines: []harness.HLine{{Name: "SLO 1000 ms", Y: 1000}}}
		stall := harness.Chart{Title: e.Name + ": p95 stall per step, by scheduler (closed loop)", XLabel: "concurrency (requests in flight)", YLabel: "p95 stall (ms)", Lines: []harness.HLine{{Name: "budget 0 ms + 50 ms jitter", Y: 50}}}
		by := of(results, e)
		for _, s := range Schedulers {
			r := by[s.Name]
			if r == nil || r.Q == nil {
				continue
			}
			ts, ss := harness.Series{Name: s.Name}, harness.Series{Name: s.Name}
			for _, st := range r.Q.Steps {
				ts.Points = append(ts.Points, harness.Point{X: float64(st.Concurrency), Y: st.TTFABP95Ms})
				ss.Points = append(ss.Points, harness.Point{X: float64(st.Concurrency), Y: st.StallP95Ms})
			}
			sortPoints(ts.Points)
			sortPoints(ss.Points)
			ttfab.Series, stall.Series = append(ttfab.Series, ts), append(stall.Series, ss)
		}
		for _, c := range []struct {
			chart         harness.Chart
			kind, caption string
		}{
			{ttfab, "ttfab", "p95 TTFAB at each measured concurrency (bisection steps included)"},
			{stall, "stall", "p95 stall at each measured concurrency (bisection steps included)"},
		} {
			if len(c.chart.Series) == 0 {
				continue
			}
			f := strconv.Itoa(rowN) + "-" + rowName + "-" + e.Name + "-" + c.kind + ".svg"
			if err := c.chart.WriteSVG(filepath.Join(dir, f)); err != nil {
				return err
			}
			rw.Figures = append(rw.Figures, row.Figure{File: f, Caption: e.Name + ": " + c.caption})
		}
	}
	return nil
}

// sortPoints orders p by concurrency (bisection steps come after the ladder's), keeping equal ones in order.
func sortPoints(p []harness.Point) {
	slices.SortStableFunc(p, func(a, b harness.Point) int { return cmp.Compare(a.X, b.X) })
}

func f1(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }

func ratio(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}
