package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	aastypes "github.com/aws/aws-sdk-go-v2/service/applicationautoscaling/types"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/twinrun"
)

// The demo's fixed choices: the twin of Kokoro-82M on g5 (the calibration engine waits Kokoro's published
// per-request compute on one slot, so that two emulated instances serve twice as much, as GPUs do; espeak-ng
// would share this machine's two cores and gain nothing from a second instance), and the short measurement
// that fits a few minutes.
const (
	model    = "kokoro-82m-twin"
	endpoint = "speech-" + model
	profile  = "kokoro-g5"
	// markerFile marks a directory as the demo's own, so that -dir never wipes anything else.
	markerFile = ".speech-infra-demo"
	// commandWaitDelay bounds how long a command may take to end after it got SIGINT (tts-bench restores).
	commandWaitDelay = 90 * time.Second
	// cleanupTimeout bounds the destroy and the emulator stop at the end.
	cleanupTimeout = 2 * time.Minute
	// scatterRuns is how many seeded runs of the surge's simulation scatter the alarm's datapoints (tts-bench
	// simulate --scatter-runs): the spread the replay's one run is compared with.
	scatterRuns = 400
)

// qmaxArgs is the short staircase: three closed-loop steps of 10 s (61 ms a request: an 8-s window holds the
// 100 requests a step needs). 64 in flight saturates the twin's one slot (the highest throughput the rate
// fractions refer to) and still meets the SLO, since the container serves first segments first (p95 TTFAB
// about 0.6 s); 192 is past it (measured on the twin: 2.3 s at 128, about 26 ms more per request in flight, so
// about 4 s at 192 against the 3-s SLO), so Q_max is bracketed (ttotal sets its own probe: ttotalArgs). Then
// the rate staircase: three open-loop steps of 17 s. Each
// 15-s measure window holds the 100 requests a step needs at the lowest fraction (about 10 rps) and six sliding
// 10-s peaks; it holds a whole 10-s ConcurrentRequestsPerModel period on CloudWatch's grid when it starts within
// 5 s of the grid, and a step that holds none takes CloudWatch's scale from the steps that do (the instance
// model's CloudWatch ÷ client ratio). The fractions sit below, at and past the scale-out rate (about 0.8 of the
// capacity at surge 1.25). No refinement (--rate-refine 0): each refinement step would add 17 s to the
// 5-minute budget, and the fractions stop below the capacity, where the steps meet the SLO.
var qmaxArgs = []string{"--ladder", "1,64,192", "--max-concurrency", "192", "--settle", "1s", "--hold", "9s", "--measure-window", "8s",
	"--rate-fractions", "0.6,0.8,0.95", "--rate-refine", "0", "--rate-settle", "2s", "--rate-hold", "15s", "--rate-measure-window", "15s"}

// ttotalArgs is the short T_total run the demo shares with the benchmark smoke (twinrun
// says why each setting is what it is).
var ttotalArgs = twinrun.TTotalArgs

// options are the demo's flags.
type options struct {
	Dir       string
	Port      int
	TimeScale float64
	Bin       string
	Docs      string
}

// defaultOptions are the values make demo runs with.
func defaultOptions() options {
	return options{Dir: ".demo", Port: 4699, TimeScale: 50, Bin: "bin"}
}

// Validate lists every problem of the options, each naming the flag and the fix.
func (o options) Validate() []error {
	var errs []error
	if clean := filepath.Clean(o.Dir); o.Dir == "" || clean == "." || clean == "/" || clean == ".." {
		errs = append(errs, fmt.Errorf("-dir %q: want a directory of its own, e.g. .demo (it is wiped at start)", o.Dir))
	} else if fi, err := os.Stat(o.Dir); err == nil {
		if !fi.IsDir() {
			errs = append(errs, fmt.Errorf("-dir %s: not a directory: give another path", o.Dir))
		} else if _, err := os.Stat(filepath.Join(o.Dir, markerFile)); err != nil {
			if entries, _ := os.ReadDir(o.Dir); len(entries) > 0 {
				errs = append(errs, fmt.Errorf("-dir %s exists and is not a demo directory (no %s): the demo wipes its directory at start, so give a new path", o.Dir, markerFile))
			}
		}
	}
	if o.Port < 1024 || o.Port > 65535 {
		errs = append(errs, fmt.Errorf("-port %d: want a free port from 1024 to 65535, e.g. 4699", o.Port))
	}
	if o.TimeScale < 1 || o.TimeScale > 1000 {
		errs = append(errs, fmt.Errorf("-time-scale %g: want 1 (as slow as AWS) to 1000, e.g. 50", o.TimeScale))
	}
	for _, b := range []string{"speech-infra", "tts-bench", "speech-container"} {
		if fi, err := os.Stat(filepath.Join(o.Bin, b)); err != nil || fi.IsDir() {
			errs = append(errs, fmt.Errorf("-bin %s: no %s there: run make build first (or make demo, which does)", o.Bin, b))
		}
	}
	return errs
}

// demo is one run: where it keeps things and what it found.
type demo struct {
	o               options
	out, errw       io.Writer
	state, journals string
	art, plan       string
	deployed        bool
	// loadEnded is when ttotal's probe stopped: its concurrency stays in the scale-out alarm's window for a while.
	loadEnded time.Time
	p         *capacity.Plan
	sum       summary
}

// Execute runs the demo. Whatever happens after the emulator may have started, the endpoint is destroyed and
// the emulator stopped before it returns.
func (o options) Execute(ctx context.Context, stdout, stderr io.Writer) (err error) {
	dir, err := filepath.Abs(o.Dir)
	if err != nil {
		return err
	}
	d := &demo{o: o, out: stdout, errw: stderr,
		state: filepath.Join(dir, "state"), journals: filepath.Join(dir, "journals"), art: filepath.Join(dir, "artifacts", model)}
	d.plan = filepath.Join(d.art, capacity.PlanFile)
	d.sum.Artifacts, d.sum.TimeScale = d.art, o.TimeScale
	start := time.Now()

	// A previous run that was killed may have left its emulator: stop it before wiping its state.
	if _, statErr := os.Stat(filepath.Join(d.state, "emulator.json")); statErr == nil {
		d.run(context.Background(), nil, "speech-infra", "local", "stop", "--state-dir", d.state)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("wipe the demo directory %s: %w: remove it by hand", dir, err)
	}
	if err := os.MkdirAll(d.art, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", d.art, err)
	}
	if err := os.WriteFile(filepath.Join(dir, markerFile), []byte("made by make demo; wiped by the next run\n"), 0o644); err != nil {
		return err
	}
	defer func() {
		cerr := d.cleanup()
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted: %w", errors.Join(ctx.Err(), cerr))
			return
		}
		if err == nil && cerr != nil {
			err = cerr
		}
		if err == nil {
			d.sum.Cleanup = "endpoint destroyed, emulator stopped, nothing left running; everything is in " + dir
			fmt.Fprintf(d.out, "\nThe demo took %s.\n\n", time.Since(start).Round(time.Second))
			d.sum.write(d.out)
		}
	}()
	for _, step := range []struct {
		title string
		do    func(context.Context) error
	}{
		{"deploy espeak-ng on the local emulator (measurement configuration: no autoscaling, unbounded queue)", d.deploy},
		{"drift: nothing may disturb the measurement", d.drift},
		{"qmax: the highest concurrency per instance within the SLO (closed-loop staircase)", d.qmax},
		{"ttotal: how long one more instance takes to serve", d.ttotal},
		{"plan: thresholds, cooldowns, fleet bounds and findings from the two measurements", d.planStep},
		{"deploy again: the plan passes the gate, the scaling policy and alarms are created", d.redeploy},
		{"validate: the deployed scaling matches the plan", d.validate},
		{"surge: load grows by the surge ratio inside the plan's envelope, then falls: the fleet must absorb it and scale back in", d.surge},
		{"artifacts and charts", d.artifacts},
	} {
		fmt.Fprintf(d.out, "\n==> %s\n", step.title)
		began := time.Now()
		if err := step.do(ctx); err != nil {
			return err
		}
		name, _, _ := strings.Cut(step.title, ":")
		name, _, _ = strings.Cut(name, " (")
		fmt.Fprintf(d.out, "(%s took %s)\n", name, time.Since(began).Round(100*time.Millisecond))
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
	return nil
}

// env is the environment of every command: the timing profile for the emulator that deploy starts, and the
// demo's state directory and port so that nothing touches the user's.
func (d *demo) env() []string {
	bin, _ := filepath.Abs(filepath.Join(d.o.Bin, "speech-container"))
	return append(os.Environ(),
		"SPEECH_EMULATOR_PROFILE="+profile,
		"SPEECH_EMULATOR_TIME_SCALE="+strconv.FormatFloat(d.o.TimeScale, 'g', -1, 64),
		"SPEECH_INFRA_STATE_DIR="+d.state,
		"SPEECH_INFRA_PORT="+strconv.Itoa(d.o.Port),
		"SPEECH_CONTAINER_BIN="+bin,
	)
}

// run prints the command, runs it with the demo's environment, shows its output and returns its stdout and
// exit code. An exit code outside okCodes (nil: only 0) is an error. On ctx's end the command gets SIGINT
// (never SIGKILL first: tts-bench restores what it froze) and at most commandWaitDelay to end.
func (d *demo) run(ctx context.Context, okCodes []int, name string, args ...string) (string, int, error) {
	return d.runTo(ctx, okCodes, "", name, args...)
}

// runTo is run with the command's stdout written to the file saveTo instead of shown (when saveTo is not
// ""): a machine-readable report has its place in the artifacts, not in the demo's log.
func (d *demo) runTo(ctx context.Context, okCodes []int, saveTo, name string, args ...string) (string, int, error) {
	path := filepath.Join(d.o.Bin, name)
	line := shellLine(path, args)
	if saveTo != "" {
		line += " > " + shellLine(saveTo, nil)
	}
	fmt.Fprintf(d.out, "$ %s\n", line)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = d.env()
	var stdout bytes.Buffer
	cmd.Stdout = io.MultiWriter(&stdout, d.out)
	if saveTo != "" {
		cmd.Stdout = &stdout
		defer func() {
			if err := os.WriteFile(saveTo, stdout.Bytes(), 0o644); err != nil {
				fmt.Fprintf(d.out, "could not keep the output in %s: %v\n", saveTo, err)
			}
		}()
	}
	cmd.Stderr = d.out
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = commandWaitDelay
	err := cmd.Run()
	code := 0
	var exitErr *exec.ExitError
	switch {
	case errors.As(err, &exitErr):
		code = exitErr.ExitCode()
	case err != nil:
		return stdout.String(), -1, fmt.Errorf("run %s: %w", name, err)
	}
	if okCodes == nil {
		okCodes = []int{0}
	}
	if !slices.Contains(okCodes, code) {
		return stdout.String(), code, fmt.Errorf("%s %s exited %d (see its output above)", name, strings.Join(args[:min(1, len(args))], " "), code)
	}
	return stdout.String(), code, nil
}

// shellLine quotes what needs quoting, so the line can be pasted into a shell.
func shellLine(path string, args []string) string {
	parts := []string{path}
	for _, a := range args {
		if a == "" || strings.ContainsAny(a, " \t'\"$`\\*?[]{}()<>|&;#~") {
			a = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

// localArgs point a tts-bench command at the demo's emulator.
func (d *demo) localArgs() []string { return []string{"--local", "--state-dir", d.state} }

// deployArgs are speech-infra deploy's arguments, the first and the second time alike.
// deployArgs are the deploy command's arguments on the demo's emulator: with the demo's plan once it exists
// (a --plan that is given must exist), else with autoscaling off, the measurement configuration (never the
// default plan path, which is the user's artifacts/).
func (d *demo) deployArgs() []string {
	args := []string{"deploy", model, "--local", "--state-dir", d.state, "--port", strconv.Itoa(d.o.Port)}
	if _, err := os.Stat(d.plan); err != nil {
		return append(args, "--autoscaling=false")
	}
	return append(args, "--plan", d.plan)
}

func (d *demo) deploy(ctx context.Context) error {
	d.deployed = true
	if _, _, err := d.run(ctx, nil, "speech-infra", d.deployArgs()...); err != nil {
		return err
	}
	// The emulator was started by deploy in the background: its log says whether the profile reached it.
	log, err := os.ReadFile(filepath.Join(d.state, "emulator.log"))
	if err != nil {
		return fmt.Errorf("read the emulator's log: %w", err)
	}
	if !bytes.Contains(log, []byte("of profile "+profile)) {
		return fmt.Errorf("the emulator's log %s names no phase of the %s profile: SPEECH_EMULATOR_PROFILE did not reach the emulator deploy started", filepath.Join(d.state, "emulator.log"), profile)
	}
	fmt.Fprintf(d.out, "(the emulator runs the %s start-up profile %gx faster than AWS: see %s)\n", profile, d.o.TimeScale, filepath.Join(d.state, "emulator.log"))
	return nil
}

func (d *demo) drift(ctx context.Context) error {
	_, _, err := d.run(ctx, nil, "tts-bench", append([]string{"drift", "--model", model, "--plan", d.plan, "--journal-dir", d.journals}, d.localArgs()...)...)
	return err
}

func (d *demo) qmax(ctx context.Context) error {
	args := append([]string{"qmax", "--model", model, "--output", filepath.Join(d.art, capacity.QMaxFile), "--journal-dir", d.journals}, qmaxArgs...)
	args = append(args, d.localArgs()...)
	fmt.Fprintln(d.out, "First the estimate (--dry-run makes no call), then the measurement:")
	if _, _, err := d.run(ctx, nil, "tts-bench", append(args, "--dry-run")...); err != nil {
		return err
	}
	if _, _, err := d.run(ctx, nil, "tts-bench", args...); err != nil {
		return err
	}
	q, err := capacity.LoadQMax(filepath.Join(d.art, capacity.QMaxFile))
	if err != nil {
		return err
	}
	d.sum.QMax, d.sum.QMaxLowerBound, d.sum.SLOMs = q.QMax, q.BracketLowestFail == 0, float64(q.SLOTTFABMs)
	for _, s := range q.Steps {
		if s.Concurrency == q.QMax {
			d.sum.QMaxP95Ms = s.TTFABP95Ms
		}
	}
	return nil
}

func (d *demo) ttotal(ctx context.Context) error {
	args := append([]string{"ttotal", "--model", model, "--qmax", filepath.Join(d.art, capacity.QMaxFile),
		"--output", filepath.Join(d.art, capacity.TTotalFile), "--journal-dir", d.journals}, ttotalArgs...)
	args = append(args, d.localArgs()...)
	fmt.Fprintln(d.out, "First the estimate (--dry-run makes no call), then the measurement:")
	if _, _, err := d.run(ctx, nil, "tts-bench", append(args, "--dry-run")...); err != nil {
		return err
	}
	_, _, err := d.run(ctx, nil, "tts-bench", args...)
	d.loadEnded = time.Now()
	if err != nil {
		return err
	}
	t, err := capacity.LoadTTotal(filepath.Join(d.art, capacity.TTotalFile))
	if err != nil {
		return err
	}
	d.sum.TTotalS, d.sum.DominantStage = t.TTotalS, t.DominantStage
	return nil
}

// rates are the measured per-instance throughputs the demo sizes its load from.
func (d *demo) rates() (atOne, highest float64, err error) {
	q, err := capacity.LoadQMax(filepath.Join(d.art, capacity.QMaxFile))
	if err != nil {
		return 0, 0, err
	}
	for _, s := range q.Steps {
		if s.Concurrency == 1 {
			atOne = s.Throughput()
		}
		highest = max(highest, s.Throughput())
	}
	if atOne <= 0 || highest <= 0 {
		return 0, 0, fmt.Errorf("the qmax artifact has no throughput at concurrency 1: cannot size the demo's load")
	}
	return atOne, highest, nil
}

func (d *demo) planStep(ctx context.Context) error {
	_, highest, err := d.rates()
	if err != nil {
		return err
	}
	// A peak of 2.5 instances' best: the plan needs a fleet of three of the local four.
	peak := fmt.Sprintf("%.0f", 2.5*highest)
	fmt.Fprintf(d.out, "Peak load %s rps: 2.5x the highest measured per-instance throughput (%.0f rps). The plan reads its thresholds off\n"+
		"the rate staircase (the instance model), then simulates its own scaling on the envelope: a diurnal day, growth by\n"+
		"the surge ratio per T_plan, a staircase of jumps, a step past the peak it must recover from, and load hovering\n"+
		"and see-sawing around each scale-in boundary.\n", peak, highest)
	args := []string{"plan", "--model", model, "--qmax", filepath.Join(d.art, capacity.QMaxFile), "--ttotal", filepath.Join(d.art, capacity.TTotalFile),
		"--peak-rps", peak, "--output", d.plan}
	out, code, err := d.run(ctx, []int{0, 1}, "tts-bench", args...)
	if err != nil {
		return err
	}
	if code == 1 {
		// Infeasible at the defaults: do what the plan says, as a user would: plan again with the cheapest
		// configuration its search found to pass the envelope. Without one the demo stops here.
		flags, ok := cheapestPassing(out)
		if !ok {
			return fmt.Errorf("tts-bench plan is infeasible and its search found no configuration that passes (see its output above)")
		}
		fmt.Fprintf(d.out, "The plan is infeasible at the defaults on these measurements; its search found a configuration that passes.\n"+
			"Planning again with it (%s):\n", strings.Join(flags, " "))
		d.sum.Replanned = strings.Join(flags, " ")
		if _, _, err := d.run(ctx, nil, "tts-bench", append(args, flags...)...); err != nil {
			return err
		}
	}
	p, err := capacity.LoadPlan(d.plan)
	if err != nil {
		return err
	}
	d.p = p
	d.sum.ScaleOutRPS, d.sum.ScaleInRPS = p.Derived.ScaleOutRPS, p.Derived.ScaleInRPS
	d.sum.TargetValue, d.sum.ScaleInThreshold = p.Derived.TargetValue, p.Derived.ScaleInThreshold
	d.sum.MinInstances, d.sum.MaxInstances, d.sum.Verdict = p.Derived.MinInstances, p.Derived.MaxInstances, p.Verdict
	d.sum.TPlanS = p.Derived.TPlanS
	for _, t := range p.Envelope.Traces {
		if !t.Holds {
			d.sum.EnvelopeFailed++
		}
	}
	d.sum.EnvelopeTraces = len(p.Envelope.Traces)
	// The plan on a day of traffic from its trough to its peak, through the same simulator, beside the oracle.
	fmt.Fprintln(d.out, "The plan on a diurnal day from the trough to the peak (tts-bench simulate), beside the oracle and the original's thresholds:")
	out, code, err = d.simulate(ctx, "diurnal", false, "--plan", d.plan, "--trace", "diurnal", "--peak-rps", num(p.Inputs.PeakRPS), "--trough-rps", num(p.Inputs.TroughRPS))
	if err != nil {
		return err
	}
	var rep capacity.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return fmt.Errorf("read tts-bench simulate's JSON: %w", err)
	}
	d.sum.DayHeld = rep.Plan.Holds() && code == 0
	d.sum.DayViolationMinutes, d.sum.DayFlaps, d.sum.DayInstanceHours, d.sum.DayOracleRatio = rep.Plan.ViolationMinutes, len(rep.Plan.Flaps), rep.Plan.InstanceHours, rep.OracleRatio
	d.sum.DayTroughRPS, d.sum.DayPeakRPS = p.Inputs.TroughRPS, p.Inputs.PeakRPS
	return nil
}

// cheapestPassing reads the flags of tts-bench plan's recommendation (capacity.Candidate.Recommendation) from
// its stdout: the line after the heading, "  tts-bench plan --surge 1.45 --min-instances 1 ...". ok is false when the search
// found nothing that passes (or printed no recommendation).
func cheapestPassing(stdout string) (flags []string, ok bool) {
	lines := strings.Split(stdout, "\n")
	for i, l := range lines {
		if !strings.HasPrefix(l, capacity.CheapestPassingHeading+"--") || i+1 >= len(lines) {
			continue
		}
		rest, found := strings.CutPrefix(strings.TrimSpace(lines[i+1]), "tts-bench plan ")
		if !found {
			return nil, false
		}
		flags = strings.Fields(rest)
		if len(flags) == 0 || len(flags)%2 != 0 {
			return nil, false
		}
		for j := 0; j < len(flags); j += 2 {
			if !strings.HasPrefix(flags[j], "--") {
				return nil, false
			}
		}
		return flags, true
	}
	return nil, false
}

func (d *demo) redeploy(ctx context.Context) error {
	// ttotal's probe (past Q_max) is still in the last 10-s datapoints of ConcurrentRequestsPerModel: an alarm
	// created now would see three breaching datapoints and scale out before the surge begins (a run went from
	// 1 to 4 instances the second its surge started). Wait until those datapoints have left the alarm's window:
	// the period the load ended in, the three datapoints, and the evaluation tick.
	quiet := d.p.ScaleOutAlarmMemory()
	if wait := time.Until(d.loadEnded.Add(quiet)); !d.loadEnded.IsZero() && wait > 0 {
		fmt.Fprintf(d.out, "Waiting %s for ttotal's probe load to leave the scale-out alarm's window (%s after it ended)...\n", wait.Round(time.Second), quiet)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	_, _, err := d.run(ctx, nil, "speech-infra", append(d.deployArgs(), "--autoscaling")...)
	return err
}

func (d *demo) validate(ctx context.Context) error {
	_, _, err := d.run(ctx, nil, "tts-bench", append([]string{"validate", "--model", model, "--plan", d.plan}, d.localArgs()...)...)
	d.sum.Validated = err == nil
	return err
}

// surgeTrace is the demo's surge inside the plan's envelope (growth by at most s per T_plan): one instance at
// 95% of the scale-out rate (surgeStart), then load grows by the surge ratio at once, which puts it above the
// scale-out target but within what one instance carries in the SLO, and stays there for T_plan (the plan's
// promise: a surge of s within T_plan is absorbed, the new instance serving within it). Then load falls to a third of what one instance
// carries at the scale-in rate, long enough for the scale-in alarm's window (at least T_plan) and its evaluation;
// the slices after the first T_plan are judged there.
// surgeStart is where the surge starts, as a fraction of the plan's scale-out rate. The scale-out target is
// the metric measured at that rate: one short rate step's peak in flight, which a burst of long requests decides,
// so the alarm may see the target crossed only well past the scale-out rate: a surge to 1.125 × that rate (a
// start at 0.9) has run its whole T_plan with no datapoint above the target. At 0.95 the surge reaches 1.19 × the
// scale-out rate at surge 1.25; below 1, the load before the surge stays under the target the model gives.
const surgeStart = 0.95

func (d *demo) surgeTrace() (csv string, at, surgeFor, total time.Duration, lo, hi, low float64) {
	p := d.p
	lo = surgeStart * p.Derived.ScaleOutRPS
	hi = lo * p.Inputs.SurgeRatio
	low = p.Derived.ScaleInRPS / 3
	window := time.Duration(p.Derived.ScaleInEvaluationPeriods*p.Derived.ScaleInPeriodS) * time.Second
	tPlan := time.Duration(p.Derived.TPlanS * float64(time.Second)).Round(time.Second)
	// After the window the scale-in alarm still needs the period the fall happened in and its evaluation tick (two
	// of the plan's metric periods: 1 s on an emulator that compresses CloudWatch time tenfold) and a few seconds
	// for the instance to drain and leave.
	period := time.Duration(p.Inputs.MetricPeriodS) * time.Second
	at = 10 * time.Second
	surgeFor = tPlan
	total = at + surgeFor + window + 2*period + 5*time.Second
	// A CSV trace lasts one step past its last row (simulate.ParseCSV): the last two rows a second apart end it
	// a second after total.
	csv = fmt.Sprintf("timestamp,rps\n0,%s\n%g,%s\n%g,%s\n%g,%s\n%g,%s\n", num(lo), at.Seconds(), num(hi),
		(at + surgeFor).Seconds(), num(low), (total - time.Second).Seconds(), num(low), total.Seconds(), num(low))
	return csv, at, surgeFor, total, lo, hi, low
}

// surge replays the surge and the decline against the endpoint, simulates the same trace with the plan, and
// shows what the autoscaler did.
func (d *demo) surge(ctx context.Context) error {
	csv, at, surgeFor, total, lo, hi, low := d.surgeTrace()
	tracePath := filepath.Join(d.art, "surge.csv")
	if err := capacity.WriteFileAtomic(tracePath, []byte(csv)); err != nil {
		return err
	}
	d.sum.SurgeFromRPS, d.sum.SurgeToRPS, d.sum.SurgeLowRPS, d.sum.SurgeSeconds = roundTo(lo), roundTo(hi), roundTo(low), surgeFor.Seconds()
	fmt.Fprintf(d.out, "%s rps (%g%% of the scale-out rate on one instance) for %s, then x%g at once to %s rps for %s (T_plan), then %s rps until %s.\n"+
		"The autoscaler sees ConcurrentRequestsPerModel above the target for 3 datapoints of %d s and adds an instance; one\n"+
		"instance carries the surge within the SLO until it serves. After the fall the scale-in alarm waits its window\n"+
		"(%d x %d s, at least T_plan) and removes one. The trace is in %s.\n",
		num(lo), 100*surgeStart, at, d.p.Inputs.SurgeRatio, num(hi), surgeFor, num(low), total, d.p.Inputs.MetricPeriodS, d.p.Derived.ScaleInEvaluationPeriods, d.p.Derived.ScaleInPeriodS, tracePath)
	emulatorLog := filepath.Join(d.state, "emulator.log")
	var logMark int64
	if fi, err := os.Stat(emulatorLog); err == nil {
		logMark = fi.Size()
	}
	out := filepath.Join(d.art, "replay-surge.jsonl.gz")
	args := append([]string{"replay", "--model", model, "--trace", tracePath,
		"--bucket", "10s", "--poll", "1s", "--request-timeout", "20s", "--run-id", "surge", "--output", out}, d.localArgs()...)
	// Exit 1 is the replay's own verdict that a slice violated: the summary reports it.
	if _, _, err := d.run(ctx, []int{0, 1}, "tts-bench", args...); err != nil {
		return err
	}
	if err := d.readSurge(out, at); err != nil {
		return err
	}
	fmt.Fprintln(d.out, "The same trace through the simulator (the plan's scaling, autoscale.Decide, the instance model):")
	// The simulation starts where the replay started: with the instances the endpoint had then.
	simOut, code, err := d.simulate(ctx, "surge", true, "--plan", d.plan, "--trace", tracePath, "--initial-instances", strconv.Itoa(d.sum.InstancesBefore),
		"--scatter-runs", strconv.Itoa(scatterRuns))
	if err != nil {
		return err
	}
	if err := d.readSimulation(simOut, code); err != nil {
		return err
	}
	if err := d.showActivities(ctx); err != nil {
		return err
	}
	return d.showEmulatorDecisions(emulatorLog, logMark)
}

// showEmulatorDecisions prints what the emulator logged from offset on about the alarms, the scaling and the
// endpoint's state: each alarm's transitions with the datapoints that decided them, each scaling decision and
// why. When the surge did not scale as planned, these lines say whether the alarm saw the load and what the
// autoscaler made of it.
func (d *demo) showEmulatorDecisions(path string, offset int64) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return err
	}
	fmt.Fprintf(d.out, "What the emulator's alarms and autoscaler did during the surge (%s):\n", path)
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		_, rest, ok := strings.Cut(line, " alarm ")
		if !ok {
			if _, rest, ok = strings.Cut(line, " scaling "); ok {
				rest = "scaling " + rest
			} else if _, rest, ok = strings.Cut(line, " endpoint "); ok {
				rest = "endpoint " + rest
			}
		} else {
			rest = "alarm " + rest
		}
		if !ok {
			continue
		}
		// "emulator: 2026/12/03 16:06:00.929499 alarm ...": the time of day, to the millisecond.
		if f := strings.Fields(line); len(f) > 2 && len(f[2]) >= 12 {
			rest = f[2][:12] + " " + rest
		}
		const width = 200
		if r := []rune(rest); len(r) > width {
			rest = string(r[:width-1]) + "…"
		}
		fmt.Fprintf(d.out, "  %s\n", rest)
		n++
	}
	if n == 0 {
		fmt.Fprintln(d.out, "  nothing")
	}
	return sc.Err()
}

// simulate runs tts-bench simulate on the arguments for its JSON, kept as simulate-<name>.json in the artifacts
// (with the chart simulate-<name>.svg) and not shown, and returns its stdout and exit code. With showRows the
// text's minute rows are shown too (a second run: a surge's few minutes; a day's 1440 rows would bury the
// log); either way one line per configuration of the comparison is printed from the JSON.
func (d *demo) simulate(ctx context.Context, name string, showRows bool, args ...string) (string, int, error) {
	text := append([]string{"simulate"}, args...)
	if showRows {
		if _, _, err := d.run(ctx, []int{0, 1}, "tts-bench", append(slices.Clone(text), "--minutes", "--output", filepath.Join(d.art, "simulate-"+name+".svg"))...); err != nil {
			return "", 0, err
		}
	}
	out, code, err := d.runTo(ctx, []int{0, 1}, filepath.Join(d.art, "simulate-"+name+".json"), "tts-bench",
		slices.Concat(text, []string{"--format", "json", "--output", filepath.Join(d.art, "simulate-"+name+".svg")})...)
	if err != nil {
		return out, code, err
	}
	var rep capacity.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return out, code, fmt.Errorf("read tts-bench simulate's JSON: %w", err)
	}
	for i, c := range rep.Comparison {
		held := "meets the SLO"
		if !c.MeetsSLO {
			held = "VIOLATES the SLO"
		}
		scattered := ""
		if sp := rep.Spread; i == 0 && sp != nil {
			// The plan's verdict counts its scattered runs too (capacity.Report.PlanHolds).
			scattered = fmt.Sprintf(" %d of %d scattered runs held,", sp.HeldRuns, sp.Runs)
		}
		fmt.Fprintf(d.out, "  %-40s %s: %d violation minute(s), %d flap(s),%s %.2f instance-hours, fleet %d to %d\n", c.Name, held, c.ViolationMinutes, c.Flaps, scattered, c.InstanceHours, c.MinInstances, c.MaxInstances)
	}
	return out, code, nil
}

// readSimulation fills the summary's simulation line from tts-bench simulate's JSON.
func (d *demo) readSimulation(out string, code int) error {
	var rep capacity.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		return fmt.Errorf("read tts-bench simulate's JSON: %w", err)
	}
	r := rep.Plan
	d.sum.SimViolationMinutes, d.sum.SimFlaps, d.sum.SimMaxInstances = r.ViolationMinutes, len(r.Flaps), r.PeakInstances
	d.sum.SimScaleOuts, d.sum.SimScaleIns = r.ScaleOuts, r.ScaleIns
	d.sum.SimHeld = rep.PlanHolds() && code == 0
	if sp := rep.Spread; sp != nil {
		d.sum.SimScatterHeld, d.sum.SimScatterRuns = sp.HeldRuns, sp.Runs
	}
	if sp := rep.Spread; sp != nil && sp.FirstScaleOutS != nil {
		d.sum.ScatterRuns = sp.Runs
		d.sum.ScatterLo, d.sum.ScatterMedian, d.sum.ScatterHi = sp.FirstScaleOutS[0], sp.FirstScaleOutS[1], sp.FirstScaleOutS[2]
		d.sum.ScatterPeakMin, d.sum.ScatterPeakMax = sp.PeakInstancesMin, sp.PeakInstancesMax
	}
	return nil
}

// readSurge fills the summary's surge line from the replay's records and instance samples: the slices that
// violated (after the first T_plan, which a fleet sized for the trough may need to react), and flaps.
func (d *demo) readSurge(out string, at time.Duration) error {
	f, err := os.Open(out)
	if err != nil {
		return err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return fmt.Errorf("read %s: %w", out, err)
	}
	recs, err := bench.ReadRecords(zr)
	if err != nil {
		return fmt.Errorf("read %s: %w", out, err)
	}
	slo := time.Duration(d.p.Fingerprint.SLOTTFABMs) * time.Millisecond
	s, err := bench.SummarizeOpenLoop(recs, 10*time.Second, slo)
	if err != nil {
		return err
	}
	d.sum.Sent, d.sum.Shed, d.sum.Slices = s.Sent, s.Shed, len(s.Buckets)
	tPlan := time.Duration(d.p.Derived.TPlanS * float64(time.Second))
	for i, b := range s.Buckets {
		if !b.Violates {
			continue
		}
		if time.Duration(i)*10*time.Second < tPlan {
			d.sum.EarlyViolatingSlices++
		} else {
			d.sum.ViolatingSlices++
		}
	}
	data, err := os.ReadFile(strings.TrimSuffix(out, ".jsonl.gz") + ".instances.json")
	if err != nil {
		return fmt.Errorf("read the replay's instance samples: %w", err)
	}
	var log struct {
		Samples []struct {
			At      time.Time `json:"at"`
			Current int       `json:"current"`
			Desired int       `json:"desired"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		return fmt.Errorf("read the replay's instance samples: %w", err)
	}
	if len(log.Samples) == 0 {
		return errors.New("the replay sampled no instance count: DescribeEndpoint never answered")
	}
	d.sum.InstancesBefore, d.sum.ServingAfterS, d.sum.ReplayFirstOutS = log.Samples[0].Current, -1, -1
	served := false
	surgeAt := s.Start.Add(at)
	lastIn := time.Time{}
	prev := log.Samples[0].Desired
	for _, smp := range log.Samples {
		d.sum.InstancesMax = max(d.sum.InstancesMax, smp.Current)
		if smp.Current > d.sum.InstancesBefore && !served {
			served, d.sum.ServingAfterS = true, smp.At.Sub(surgeAt).Seconds()
			d.sum.Served = true
		}
		switch {
		case smp.Desired < prev:
			lastIn = smp.At
			d.sum.ScaleIns++
		case smp.Desired > prev:
			if d.sum.ReplayFirstOutS < 0 {
				d.sum.ReplayFirstOutS = smp.At.Sub(s.Start).Seconds()
			}
			if !lastIn.IsZero() && smp.At.Sub(lastIn) < tPlan {
				d.sum.Flaps++
			}
		}
		prev = smp.Desired
	}
	d.sum.InstancesEnd = log.Samples[len(log.Samples)-1].Current
	return nil
}

// showActivities prints the autoscaler's activities on the endpoint (DescribeScalingActivities).
func (d *demo) showActivities(ctx context.Context) error {
	cfg, err := awsenv.Settings{Local: true, StateDir: d.state}.Config(ctx)
	if err != nil {
		return err
	}
	resource := "endpoint/" + endpoint + "/variant/AllTraffic"
	fmt.Fprintf(d.out, "Scaling activities of %s (DescribeScalingActivities), newest first:\n", resource)
	acts, err := applicationautoscaling.NewFromConfig(cfg).DescribeScalingActivities(ctx, &applicationautoscaling.DescribeScalingActivitiesInput{
		ServiceNamespace: aastypes.ServiceNamespaceSagemaker, ResourceId: aws.String(resource),
		ScalableDimension: aastypes.ScalableDimensionSageMakerVariantDesiredInstanceCount, IncludeNotScaledActivities: aws.Bool(true),
	})
	if err != nil {
		return fmt.Errorf("DescribeScalingActivities %s: %w", resource, err)
	}
	if len(acts.ScalingActivities) == 0 {
		fmt.Fprintln(d.out, "  none")
	}
	for _, a := range acts.ScalingActivities {
		fmt.Fprintf(d.out, "  %s  %-10s %s\n    cause: %s\n", aws.ToTime(a.StartTime).Local().Format("15:04:05"), a.StatusCode, aws.ToString(a.Description), aws.ToString(a.Cause))
	}
	return nil
}

// charts are the figures a run writes: the qmax staircase and the ttotal waterfall.
func (d *demo) charts() []string {
	var out []string
	for _, name := range []string{"qmax.svg", "ttotal.svg"} {
		if _, err := os.Stat(filepath.Join(d.art, name)); err == nil {
			out = append(out, name)
		}
	}
	return out
}

func (d *demo) artifacts(context.Context) error {
	entries, err := os.ReadDir(d.art)
	if err != nil {
		return err
	}
	fmt.Fprintf(d.out, "In %s:\n", d.art)
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(d.out, "  %-40s %8d bytes\n", e.Name(), fi.Size())
	}
	d.sum.Charts = d.charts()
	if len(d.sum.Charts) < 2 {
		return fmt.Errorf("charts written: %v: want the qmax staircase (qmax.svg) and the ttotal waterfall (ttotal.svg)", d.sum.Charts)
	}
	if d.o.Docs == "" {
		return nil
	}
	if err := os.MkdirAll(d.o.Docs, 0o755); err != nil {
		return err
	}
	for _, c := range d.sum.Charts {
		data, err := os.ReadFile(filepath.Join(d.art, c))
		if err != nil {
			return err
		}
		dst := filepath.Join(d.o.Docs, "demo-"+c)
		if err := capacity.WriteFileAtomic(dst, data); err != nil {
			return err
		}
		fmt.Fprintf(d.out, "copied %s to %s\n", c, dst)
	}
	return nil
}

// cleanup destroys the endpoint and stops the emulator, on a context of its own (the run's may be canceled),
// and checks that the emulator is gone.
func (d *demo) cleanup() error {
	if !d.deployed {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), cleanupTimeout)
	defer cancel()
	fmt.Fprintln(d.out, "\n==> destroy the endpoint and stop the emulator")
	var errs []error
	if _, _, err := d.run(ctx, nil, "speech-infra", "destroy", model, "--local", "--state-dir", d.state, "--port", strconv.Itoa(d.o.Port)); err != nil {
		errs = append(errs, err)
	}
	if _, _, err := d.run(ctx, nil, "speech-infra", "local", "stop", "--state-dir", d.state); err != nil {
		errs = append(errs, err)
	}
	if ok, err := d.emulatorRunning(ctx); err != nil || ok {
		errs = append(errs, fmt.Errorf("the emulator of %s still runs after local stop (%v): stop it with bin/speech-infra local stop --state-dir %s", d.state, err, d.state))
	}
	return errors.Join(errs...)
}

// emulatorRunning asks speech-infra local status whether the demo's emulator still runs.
func (d *demo) emulatorRunning(ctx context.Context) (bool, error) {
	cmd := exec.CommandContext(ctx, filepath.Join(d.o.Bin, "speech-infra"), "local", "status", "--state-dir", d.state, "--format", "json")
	cmd.Env = d.env()
	out, err := cmd.Output()
	if err != nil {
		return false, fmt.Errorf("local status: %w", err)
	}
	var st struct {
		Running bool `json:"running"`
	}
	if err := json.Unmarshal(out, &st); err != nil {
		return false, fmt.Errorf("local status: %w", err)
	}
	return st.Running, nil
}

// roundTo keeps two decimals, as the trace flags are printed.
func roundTo(v float64) float64 {
	f, _ := strconv.ParseFloat(num(v), 64)
	return f
}
