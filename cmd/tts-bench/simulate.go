package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

// simulateDescription is simulate's help. Every number in it that the code also uses is formatted in from
// the constant the code uses.
func simulateDescription() string {
	f := capacity.FormatNumber
	d := simulate.DefaultShapeParams(simulate.ShapeDiurnal)
	return fmt.Sprintf(`simulate replays a traffic trace through the plan's fleet before any money is spent.

The instance model is the plan's, the one every part of the tool uses: from the qmax artifact's open-loop rate
staircase, per offered rate per instance, the scaling metric (the 10-s Maximum of ConcurrentRequestsPerModel
that the alarm can count on), p95 TTFAB, p95 stall and shed; above an instance's capacity its queue fills to
queue_max_depth and the excess is shed with 503. An added instance serves T_total (ttotal's) after the
decision. The autoscaler is autoscale.Decide (the emulator's code) on exactly the policies and alarms the
endpoint stack deploys for the plan, thresholds derived in rate terms (tts-bench plan --help):
  scale out   target tracking at target_value, the metric at safe_rps ÷ s: %d datapoints of %s above it
  scale in    the step policy's alarm: the Maximum below scale_in_threshold (the metric at scale_in_rps,
              which leaves the survivors of a scale-in below safe_rps ÷ s at every fleet size) for
              scale_in_evaluation_periods datapoints of %s, a window of at least T_plan; one instance at a time
  cooldowns   the plan's, counted from the end of each scaling activity; the fleet within the plan's bounds
Each datapoint is evaluated %s after its period closes (the late end of CloudWatch's and the emulator's
evaluation phase); the fleet advances second by second. A minute violates the SLO when more than
(100 − percentile)%% of its requests miss the SLO's TTFAB or stall bound or are shed.

Output: the minutes that violated (with --minutes, one row per simulated minute: instances serving and
starting, load per instance, the metric, p95 TTFAB, shed), the scaling decisions, the totals (SLO-violation minutes, flaps, requests shed, instance-hours
and cost, the worst minute and why), and the comparison on the same trace and instance model:
  oracle                     ceil(rate ÷ safe_rps) instances at every second, zero start-up: the limit of any
                             reactive fleet
  original thresholds        the original's concurrency thresholds, for comparison only, never deployed:
                             C_scale_max = (1 − h)·Q_max to scale out, C_scale_min = (1 − 2h)·Q_max to scale in
                             over %d × %d s, with h = s − 1
  target tracking on InvocationsPerInstance
                             at %s%% of one instance's measured maximum rate, cooldowns %d s
  fixed fleet                ceil(peak ÷ safe_rps) instances, no autoscaling
naming the cheapest configuration that meets the SLO. An SVG timeline (load, instances, p95 against the SLO)
goes to --output. --scatter-runs adds runs with the alarm's datapoints scattered as qmax measured them: the
spread of the first scale-out and of the fleet, how many runs held and their mean cost; the plan then holds
only when its own run and at least %s%% of the scattered runs hold (exit 1 otherwise).

Traces (--trace):
  FILE.csv   rows "timestamp,rps" (optional header; timestamps RFC 3339 or seconds since the start,
             increasing; any step; the last row lasts as long as the step before it; at most %d rows)
  diurnal    trough-rps + (peak-rps − trough-rps)·(1 + cos(2π(t − peak-at)/period))/2
  step       trough-rps, then peak-rps from --at on
  spike      trough-rps, peak-rps from --at for --width
  ramp       linear from trough-rps to peak-rps over --duration
Shape parameters (defaults): --peak-rps %s, --trough-rps %s, --duration %s, --step %s (sampling step),
--period %s and --peak-at %s (diurnal), --at duration/3 (step, spike), --width %s (spike).

--what-if q_max=N,t_total_s=S,throughput_rps=X[,...] simulates without artifacts, as in tts-bench plan;
the plan is built for the trace's peak with the catalog's bounds, and every output says NOT MEASURED.

Exit codes: 0 the plan holds on the trace, 1 it does not (a violation minute or a flap, or too few scattered
runs held), 2 bad input (an --output that cannot be written included: it is checked before the run), 130 or
143 stopped by SIGINT or SIGTERM (nothing written).

Examples:
  tts-bench simulate --plan artifacts/espeak-ng/plan.json --trace diurnal
  tts-bench simulate --model kokoro-82m --what-if q_max=50,t_total_s=260.2,throughput_rps=16.3 \
      --trace diurnal --peak-rps 5000 --trough-rps 10
  tts-bench simulate --model espeak-ng --trace day.csv --format json`,
		capacity.DefaultEvaluationPeriods, simulate.Tick, simulate.Tick, simulate.EvaluationLag,
		capacity.OriginalScaleInEvaluationPeriods, capacity.AlarmPeriodS, f(100*capacity.InvocationsTargetShare), capacity.InvocationsCooldownS,
		f(100*capacity.ScatterHoldShare), simulate.MaxTracePoints, f(d.PeakRPS), f(d.TroughRPS), d.Duration, d.Step, d.Period, d.PeakAt, d.Width)
}

func simulateCommand() *cli.Command {
	d := simulate.DefaultShapeParams(simulate.ShapeDiurnal)
	return &cli.Command{
		Name:        "simulate",
		Usage:       "replay a traffic trace through the plan's fleet and autoscaling, and compare alternatives",
		UsageText:   "tts-bench simulate [--model ID] [--plan PATH | --what-if q_max=N,t_total_s=S,throughput_rps=X] --trace SHAPE|FILE.csv [options]",
		Description: simulateDescription(),
		Flags: []cli.Flag{
			modelFlag("catalog id of the model (the plan's when --plan is given)"),
			&cli.StringFlag{Name: "plan", Usage: "plan to simulate (default artifacts/<model>/plan.json); its qmax and ttotal artifacts are read beside it"},
			&cli.StringFlag{Name: "what-if", Usage: "simulate assumed numbers instead of a plan: q_max=N,t_total_s=S,throughput_rps=X[,...]"},
			&cli.Float64Flag{Name: "surge", Usage: fmt.Sprintf("surge ratio of the what-if plan, in [1, %d] (default: the catalog's)", models.MaxSurgeRatio)},
			&cli.StringFlag{Name: "trace", Usage: "diurnal, step, spike, ramp, or a trace file (timestamp,rps CSV, or a request trace from tts-bench traffic import) (required)"},
			&cli.Float64Flag{Name: "peak-rps", Value: d.PeakRPS, Usage: "shape: highest rate, requests per second"},
			&cli.Float64Flag{Name: "trough-rps", Value: d.TroughRPS, Usage: "shape: lowest rate, requests per second"},
			&cli.DurationFlag{Name: "duration", Value: d.Duration, Usage: "shape: length of the trace"},
			&cli.DurationFlag{Name: "step", Value: d.Step, Usage: "shape: sampling step of the trace (at least 1s)"},
			&cli.DurationFlag{Name: "period", Value: d.Period, Usage: "diurnal: length of one cycle"},
			&cli.DurationFlag{Name: "peak-at", Value: d.PeakAt, Usage: "diurnal: when the rate peaks, since the start"},
			&cli.DurationFlag{Name: "at", Usage: "step, spike: when the rate changes (default: a third into the trace)"},
			&cli.DurationFlag{Name: "width", Value: d.Width, Usage: "spike: how long the spike lasts"},
			&cli.IntFlag{Name: "initial-instances", Usage: "instances serving when the trace starts, for the fleets that scale (default: as many as keep the first rate at or below the scale-out target, where target tracking would have left them); give the endpoint's count when comparing with a replay of the same trace"},
			&cli.BoolFlag{Name: "minutes", Usage: "print a row for every simulated minute (default: only the minutes that violated)"},
			&cli.IntFlag{Name: "scatter-runs", Usage: fmt.Sprintf("also run the plan N times with the alarm's 10-s datapoints scattered as qmax measured them, the trace starting at a random phase of the 10-s period grid and the alarm evaluated at a random lag (seeded), and print where the first scale-out falls (p2.5, median, p97.5), how large the fleet grows, how many runs held and their mean cost: one real run lands anywhere in that spread, and the plan holds only when its own run and at least %s%% of these hold (measured plans only; 0 to %d)", capacity.FormatNumber(100*capacity.ScatterHoldShare), maxScatterRuns)},
			cliflags.PricePerHour(),
			cliflags.Format("what to print: text or json"),
			cliflags.Output("where to write the SVG timeline (default simulate-<model>.svg in the current directory)"),
		},
		Action: catalogAction(newSimulateOpts),
	}
}

// simulateOpts is one tts-bench simulate: the command line, the catalog and writers, and what Validate
// resolves.
type simulateOpts struct {
	args      []string
	modelID   string
	modelSet  bool
	planPath  string
	whatIf    *string
	surge     *float64
	trace     string
	shape     simulate.ShapeParams
	atSet     bool
	prices    []string
	initial   *int
	scatter   int
	minutes   bool
	format    string
	output    string
	catalog   models.Catalog
	stdout    io.Writer
	stderr    io.Writer
	shapeSet  []string
	readTrace func(path string) (io.ReadCloser, error)

	// Set by Validate.
	model    models.Model
	whatIfIn capacity.WhatIf
	tr       simulate.Trace
}

func newSimulateOpts(c *cli.Context, cat models.Catalog) *simulateOpts {
	o := &simulateOpts{
		args: c.Args().Slice(), modelID: c.String("model"), modelSet: c.IsSet("model"), planPath: c.String("plan"),
		trace: c.String("trace"), format: c.String("format"), output: c.String("output"),
		catalog: cat, stdout: c.App.Writer, stderr: c.App.ErrWriter,
		readTrace: func(path string) (io.ReadCloser, error) { return os.Open(path) },
	}
	o.shape = simulate.ShapeParams{Shape: o.trace, PeakRPS: c.Float64("peak-rps"), TroughRPS: c.Float64("trough-rps"),
		Duration: c.Duration("duration"), Step: c.Duration("step"), Period: c.Duration("period"), PeakAt: c.Duration("peak-at"),
		At: c.Duration("at"), Width: c.Duration("width")}
	o.atSet = c.IsSet("at")
	for _, f := range []string{"peak-rps", "trough-rps", "duration", "step", "period", "peak-at", "at", "width"} {
		if c.IsSet(f) {
			o.shapeSet = append(o.shapeSet, "--"+f)
		}
	}
	if c.IsSet("what-if") {
		s := c.String("what-if")
		o.whatIf = &s
	}
	if c.IsSet("surge") {
		v := c.Float64("surge")
		o.surge = &v
	}
	o.prices = c.StringSlice(cliflags.PricePerHourName)
	o.scatter = c.Int("scatter-runs")
	o.minutes = c.Bool("minutes")
	if c.IsSet("initial-instances") {
		v := c.Int("initial-instances")
		o.initial = &v
	}
	return o
}

// Validate checks the command line and reports every problem at once as one usage error (exit 2): the
// model, the plan or what-if numbers, the trace (shape parameters or CSV), the price and the format.
func (o *simulateOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.args) > 0 {
		bad("simulate takes no arguments, got %q: use flags, see tts-bench simulate --help", o.args)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	m, err := o.catalog.Get(o.modelID)
	if err != nil {
		bad("--model: %w", err)
	}
	o.model = m
	if o.whatIf != nil {
		if o.planPath != "" {
			bad("--what-if replaces the plan: drop --plan or drop --what-if")
		}
		w, err := capacity.ParseWhatIf(*o.whatIf)
		if err != nil {
			bad("--what-if %q: %w", *o.whatIf, err)
		}
		o.whatIfIn = w
		if o.surge != nil && !models.ValidSurgeRatio(*o.surge) {
			bad("--surge %s: want a ratio in [1, %d], e.g. --surge 1.25", measure.FormatFloat(*o.surge), models.MaxSurgeRatio)
		}
	} else {
		if o.surge != nil {
			bad("--surge applies to --what-if only: a plan carries its own surge ratio")
		}
		if o.planPath == "" && err == nil {
			o.planPath = capacity.DefaultPlanPath(m.ID)
		}
		if o.planPath != "" {
			if e := artifactExists("--plan", o.planPath, "tts-bench plan"); e != nil {
				errs = append(errs, e)
			}
		}
	}
	// The values' form is checked here; which type a bare price stands for is the simulated plan's, known once
	// the plan is read (models.Model.PriceOf).
	if _, e := models.ParsePriceOverrides(o.prices, m.InstanceType); e != nil && err == nil {
		errs = append(errs, e)
	}
	if o.initial != nil && !(*o.initial >= 1 && *o.initial <= capacity.MaxInstances) {
		bad("--initial-instances %d: want 1 to %d instances serving at the trace's start (the plan's fleet range bounds it further)", *o.initial, capacity.MaxInstances)
	}
	if o.scatter < 0 || o.scatter > maxScatterRuns {
		bad("--scatter-runs %d: want 0 (off) to %d seeded runs", o.scatter, maxScatterRuns)
	} else if o.scatter > 0 && o.whatIf != nil {
		bad("--scatter-runs needs a measured plan (the scatter is qmax's measured 10-s peaks): drop it with --what-if")
	}
	errs = append(errs, o.loadTrace()...)
	if o.output != "" {
		// Before the simulation, not after it: a long run must not end unable to write its chart.
		if err := atomicfile.Writable(o.output); err != nil {
			bad("--output %s: %v: give --output a path in a directory you can write", o.output, err)
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

// loadTrace resolves --trace: a built-in shape with its parameters, or a CSV file (shape flags then refused).
func (o *simulateOpts) loadTrace() []error {
	switch {
	case o.trace == "":
		return []error{errors.New("--trace is required: give diurnal, step, spike, ramp or a CSV file of timestamp,rps, e.g. --trace diurnal")}
	case simulate.IsTraceFile(o.trace):
		var errs []error
		if len(o.shapeSet) > 0 {
			errs = append(errs, fmt.Errorf("%s shape a built-in trace; --trace %s is a CSV file: drop them", strings.Join(o.shapeSet, ", "), o.trace))
		}
		f, err := o.readTrace(o.trace)
		if err != nil {
			return append(errs, fmt.Errorf("--trace %s: %w", o.trace, err))
		}
		defer f.Close()
		tr, err := simulate.ParseCSV(o.trace, f)
		if err != nil {
			return append(errs, fmt.Errorf("--trace: %w", err))
		}
		o.tr = tr
		return errs
	}
	if !o.atSet {
		o.shape.At = o.shape.Duration / 3
	}
	var errs []error
	o.tr, errs = shapeTrace(o.trace, o.shape)
	return errs
}

// Execute builds the setup (plan, instance model, re-derivation), simulates, prints the report, writes the
// chart, and fails the check (exit 1) when the plan violates the SLO on the trace. SIGINT or SIGTERM (ctx,
// main's signal context) stops the plan's verification and the simulation within a simulated minute's work:
// exit 130 or 143, and no chart is written.
// longSimulation is the simulated time past which simulate says, before it starts, that the run takes a while
// and how to stop it.
const longSimulation = 10 * 24 * time.Hour

func (o *simulateOpts) Execute(ctx context.Context) error {
	setup, err := o.setup(ctx)
	if ctx.Err() != nil {
		return o.stopped(ctx)
	}
	if err != nil {
		return exitcode.Usage(err)
	}
	out := o.output
	if out == "" {
		// The default names the plan's model, known once the plan is read: checked here, before simulating.
		out = "simulate-" + setup.Plan.Fingerprint.Model + ".svg"
		if err := atomicfile.Writable(out); err != nil {
			return exitcode.Usagef("--output not given: the default %s in the current directory cannot be written: %v: give --output PATH in a directory you can write (checked before simulating)", out, err)
		}
	}
	if total := time.Duration(1+setup.ScatterRuns) * o.tr.Duration; total >= longSimulation {
		// The plan's run and each scattered run simulate the whole trace (each configuration of the comparison
		// too): say so before a long wait, and how to stop it.
		what := fmt.Sprintf("a %s trace", o.tr.Duration)
		if setup.ScatterRuns > 0 {
			what = fmt.Sprintf("%d scattered runs of a %s trace and the plan's own", setup.ScatterRuns, o.tr.Duration)
		}
		fmt.Fprintf(o.stderr, "simulate: %s (%.0f simulated days for each configuration): this takes a while; Ctrl-C stops it\n", what, total.Hours()/24)
	}
	rep, err := capacity.CompareContext(ctx, o.tr, setup)
	if errors.Is(err, capacity.ErrCanceled) || ctx.Err() != nil {
		return o.stopped(ctx)
	}
	if err != nil {
		return exitcode.Usage(err)
	}
	if err := capacity.RenderReport(o.stdout, o.format, rep, o.minutes); err != nil {
		return fmt.Errorf("print the simulation: %w", err)
	}
	svg, err := measure.RenderSimulateSVG(rep)
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		return o.stopped(ctx)
	}
	if err := capacity.WriteFileAtomic(out, svg); err != nil {
		return exitcode.Usage(fmt.Errorf("--output %s: %w", out, err))
	}
	fmt.Fprintf(o.stderr, "wrote the timeline chart to %s\n", out)
	if !rep.Plan.Holds() {
		return exitcode.CheckFailedf("the plan does not hold on this trace: %d violation minute(s), %d flap(s), %s requests shed (see the worst minute and the comparison above)",
			rep.Plan.ViolationMinutes, len(rep.Plan.Flaps), capacity.FormatNumber(math.Round(rep.Plan.Shed)))
	}
	if sp := rep.Spread; !rep.PlanHolds() {
		return exitcode.CheckFailedf("the plan does not hold on this trace: its own run held, but only %d of %d scattered runs did (at least %s%% must; %d had a violation minute)",
			sp.HeldRuns, sp.Runs, capacity.FormatNumber(100*capacity.ScatterHoldShare), sp.ViolationRuns)
	}
	return nil
}

// shapeTrace generates the built-in shape named --trace name with its parameters, or says, per flag, what is
// wrong with them (simulate and compare).
func shapeTrace(name string, sp simulate.ShapeParams) (simulate.Trace, []error) {
	var errs []error
	for _, e := range sp.Validate() {
		errs = append(errs, fmt.Errorf("--%w", e))
	}
	if len(errs) > 0 {
		return simulate.Trace{}, errs
	}
	tr, err := simulate.Generate(sp)
	if err != nil {
		return simulate.Trace{}, []error{fmt.Errorf("--trace %s: %w", name, err)}
	}
	return tr, nil
}

// stopped is the error of a simulation stopped by SIGINT or SIGTERM: exit 130 or 143, nothing written.
func (o *simulateOpts) stopped(ctx context.Context) error {
	return interrupted(ctx, fmt.Errorf("simulate: stopped (%v) before it finished: nothing written", context.Cause(ctx)))
}

// setup loads the plan (or builds the what-if plan) into a comparison setup. A measured plan must still
// follow from the artifacts beside it: its instance model is theirs. Building or verifying the plan simulates
// its envelope: it stops when ctx is done (the caller checks ctx before the error).
func (o *simulateOpts) setup(ctx context.Context) (capacity.Setup, error) {
	var s capacity.Setup
	m := o.model
	if o.whatIf != nil {
		p, err := capacity.WhatIfOnTrace(ctx, m, o.whatIfIn, o.tr, o.surge)
		if err != nil {
			return s, err
		}
		s.Plan = p
	} else {
		p, err := capacity.LoadPlan(o.planPath)
		if err != nil {
			return s, fmt.Errorf("--plan: %w", err)
		}
		if errs := p.VerifyContext(ctx); len(errs) > 0 {
			return s, fmt.Errorf("--plan %s is not a valid plan (run tts-bench plan again): %w", o.planPath, errors.Join(errs...))
		}
		if pm, err := o.catalog.Get(p.Fingerprint.Model); err != nil {
			return s, fmt.Errorf("--plan %s: %w", o.planPath, err)
		} else if o.modelSet && pm.ID != m.ID {
			return s, fmt.Errorf("--plan %s is for model %s, not --model %s: drop --model or pass the right plan", o.planPath, pm.ID, m.ID)
		} else {
			m, o.model = pm, pm
		}
		if !p.Feasible() {
			fmt.Fprintf(o.stderr, "warning: %s is infeasible; simulating it anyway\n", o.planPath)
		}
		if s.Scatter, err = p.SimulationScatter(o.planPath, o.scatter); err != nil {
			return s, err
		}
		if s.Scatter != nil {
			s.ScatterRuns = o.scatter
		}
		s.Plan = p
	}
	s.AllowedMaxInstances = m.Scaling.MaxInstances
	if o.initial != nil {
		if d := s.Plan.Derived; *o.initial < d.MinInstances || *o.initial > d.MaxInstances {
			return s, exitcode.Usagef("--initial-instances %d is outside the plan's fleet range %d to %d", *o.initial, d.MinInstances, d.MaxInstances)
		}
		s.InitialInstances = *o.initial
	}
	usd, source, err := m.PriceOf(s.Plan.Fingerprint.InstanceType, o.prices)
	if err != nil {
		return s, err
	}
	s.PricePerHour, s.PriceSource = usd, source
	return s, nil
}

// maxScatterRuns bounds --scatter-runs: each run is a whole simulation of the trace.
const maxScatterRuns = 10000
