package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/loadmodel"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
	"github.com/speech-infra/speech-infra/traffic"
	"github.com/urfave/cli/v2"
)

// planDescription is plan's help. Every number in it that the code also uses is formatted in from the
// constant the code uses.
func planDescription() string {
	f, pct := capacity.FormatNumber, func(x float64) string { return capacity.FormatNumber(100 * x) }
	cMax, cMin := capacity.OriginalThresholds(1.25, 50)
	slow := "%s × T_plan"
	return fmt.Sprintf(`plan turns the measurements into autoscaling settings, then judges them by simulating them.

Inputs:
  qmax.json    (tts-bench qmax)   the closed-loop staircase (Q_max, throughput by concurrency) and the open-loop
                                  rate staircase: the instance model, which gives per offered rate per instance
                                  the scaling metric (the 10-s Maximum of ConcurrentRequestsPerModel), p95 TTFAB,
                                  p95 stall and shed.
  ttotal.json  (tts-bench ttotal) T_total, the time from asking for one more instance until it serves.
  --peak-rps   the highest load the fleet must carry (required without --traffic); --trough-rps where a
               surge starts.
  --surge s    load may grow by s within one T_plan.
  --traffic    the users' own traffic (tts-bench traffic import or fetch), repeatable. Each trace is cut:
               the plan is derived from its first part and must hold on it, and is validated on the last
               --holdout share (default %s), which nothing is derived from. Without --peak-rps the peak is the
               planned-on parts' highest 1-minute rate; without --surge the surge ratio is the
               --surge-quantile (default %s) of their surge ratio at T_plan (tts-bench traffic describe's
               definition), rounded up to hundredths. plan.json records both parts, and the gate re-runs them.
               Each part is recorded as the mean rate over the shortest step that fits %d points ÷ the
               number of --traffic traces.

Derived, in rate terms, from the instance model:
  safe_rps            the highest offered rate per instance that meets the SLO (p95 TTFAB, p95 stall, shed),
                      never past the highest rate step measured within it, nor past the %s%% lower confidence
                      bound of that step's completion rate (its completions counted over its window)
  T_plan              T_total + detection buffer
  scale_out_rps       safe_rps ÷ s; the target-tracking target (%d datapoints of %d s above it scale out) is
                      the metric the instance model gives at that rate
  scale_in_rps        scale_out_rps × min ÷ (min + 1) × (1 − scale-in margin): scaling in from n to n − 1
                      instances leaves the survivors below scale_out_rps for every n in the fleet range; the
                      scale-in threshold is the metric at that rate, for ceil(T_plan ÷ %d s) datapoints (at
                      least %d): a window of at least T_plan
  cooldowns           scale-out T_plan ÷ 2 within [%d, %d] s; scale-in max(%d s, %d × T_plan)
  max fleet           ceil(peak ÷ scale_out_rps), at most the allowed maximum
  For comparison only, never deployed: the original's concurrency thresholds, with h = s − 1,
  C_scale_max = (1 − h)·Q_max and C_scale_min = (1 − 2h)·Q_max (Q_max 50, s 1.25 → C_scale_max %s,
  C_scale_min %s).

Envelope: the plan's own scaling (autoscale.Decide and the instance model, the simulator tts-bench simulate
runs) on traces that could fail it. A trace holds with zero SLO-violation minutes (a minute in which more
requests miss the SLO or are shed than its percentile allows) and no flap (a scale-in followed by a scale-out
within T_plan):
  diurnal     a day from trough to peak and back
  growth      ×s per T_plan from trough to peak, held, and back
  staircase   an instant ×s jump every T_plan from trough to peak, held %s × T_plan
  step        from the peak to %s × peak at once, held %s × T_plan: past what the plan promises, so the
              minutes after the step do not count until it recovers, but it must recover within %s × T_plan
              (the first minute from which no minute to the end violates; plan.json's recovery_s)
  hover fast  ±%s%% (--hover-amplitude) around each scale-in boundary n × scale_in_rps, period %s: a dip
              shorter than the scale-in window
  hover slow  the same with period `+slow+`: its low half outlasts the window, the fleet scales in, and
              must carry the high half on one instance fewer without scaling out again
  sawtooth    across each boundary: up to +%s%% at once, down to −%s%% over `+slow+`
  user        each --trace file, and the planned-on part of each --traffic trace
  holdout     the held-out part of each --traffic trace: a plan that fails it is infeasible; the search
              for a cheaper configuration never sees it, and says how its pick does on it
The hover amplitude is an input, recorded in plan.json, never the scale-in margin: a margin too small for it
shows as a flap.

%s

The plan is written to --output (default artifacts/<model>/plan.json); the endpoint stack deploys it only if
it is measured, feasible and matches what is deployed. --output is checked before any simulation, and the
plan is written last, atomically, after the search: SIGINT or SIGTERM stops the simulations at once (exit
130 or 143) and the run writes nothing.

--what-if explores without measuring: give the numbers the artifacts would hold, as key=value pairs —
q_max, t_total_s, throughput_rps are required; throughput_at_q_max_rps (default: throughput_rps),
cloudwatch_ratio (default 1), transport and container_digest are optional. The instance model is one M/M/1
queue served at the throughput at Q_max, μ, marked NOT MEASURED: p95 TTFAB is its sojourn time's,
ln(20) ÷ (μ − λ), and no rate above %s μ is ever called safe, so the fleet for a peak is never smaller than
peak ÷ μ. A what-if plan is marked measured: false, is printed but written only when --output is given, and
the deploy gate never accepts it.

--from-compare REPORT plans for the cheapest type that holds the SLO in a tts-bench compare report (its
winner; --instance-type T picks another row that holds): the type's qmax.json and ttotal.json in its artifact
directory, the report's peak and trough (--peak-rps and --trough-rps given still win). The plan is written
beside those artifacts (the gate accepts a measured plan only with its artifacts beside it), and the output
says how to deploy it: -c instance_type=T (speech-infra deploy --instance-type T) when T is not the
catalog's type.

Examples:
  tts-bench plan --peak-rps 80
  tts-bench plan --traffic day.csv    (day.csv from tts-bench traffic import requests.csv --time-column ts)
  tts-bench plan --from-compare artifacts/kokoro-82m/compare.json
  tts-bench plan --what-if q_max=50,t_total_s=260.2,throughput_rps=16.3 --peak-rps 80 --trough-rps 10
    (the published Kokoro-g5 figures: 61.3 ms a request, one at a time, is 16.3 rps)`,
		defaultHoldout, defaultSurgeQuantile, capacity.MaxUserTracePoints,
		pct(bench.CIConfidence), capacity.DefaultEvaluationPeriods, capacity.DefaultMetricPeriodS, capacity.DefaultMetricPeriodS, capacity.MinScaleInEvaluationPeriods,
		capacity.ScaleOutCooldownMinS, capacity.ScaleOutCooldownMaxS, capacity.ScaleInCooldownMinS, capacity.ScaleInCooldownTPlan,
		f(cMax), f(cMin),
		f(capacity.StaircaseHoldTPlan), f(capacity.StepRatio), f(capacity.StepHoldTPlan), f(capacity.StepRecoveryTPlan),
		pct(capacity.DefaultHoverAmplitude), capacity.HoverFastPeriod, f(capacity.HoverSlowPeriodTPlan),
		pct(capacity.DefaultHoverAmplitude), pct(capacity.DefaultHoverAmplitude), f(capacity.HoverSlowPeriodTPlan),
		cliflags.WrapHelp(fmt.Sprintf("Findings (pass / warn / fail, each with a recommendation): %s. Any fail makes the plan infeasible: exit 1. "+
			"Then, unless --no-search, plan searches %s, for the cheapest configuration that passes (fewest instance-hours on the diurnal day) and prints its flags; when none does, the smallest fixed fleet (--min-instances = --max-instances) that passes, up to the allowed maximum.",
			strings.Join(capacity.FindingNames, ", "), capacity.SearchSpace())),
		f(loadmodel.UnmeasuredMaxUtilization))
}

func planCommand() *cli.Command {
	return &cli.Command{
		Name:        "plan",
		Usage:       "derive scaling thresholds, cooldowns and fleet bounds from qmax and ttotal, and judge them",
		UsageText:   "tts-bench plan --peak-rps RPS [--model ID] [--qmax PATH] [--ttotal PATH] [options]\n   tts-bench plan --traffic TRACE [--holdout SHARE] [--surge-quantile Q] [options]\n   tts-bench plan --from-compare REPORT [--instance-type TYPE] [options]\n   tts-bench plan --what-if q_max=N,t_total_s=S,throughput_rps=X --peak-rps RPS [options]",
		Description: planDescription(),
		Flags: []cli.Flag{
			modelFlag("catalog id of the model to plan for"),
			&cli.StringFlag{Name: "qmax", Usage: "qmax artifact (default artifacts/<model>/qmax.json)"},
			&cli.StringFlag{Name: "ttotal", Usage: "ttotal artifact (default artifacts/<model>/ttotal.json)"},
			&cli.Float64Flag{Name: "peak-rps", Usage: "peak load the fleet must carry, requests per second (required)"},
			&cli.Float64Flag{Name: "trough-rps", Usage: "load a surge starts from, requests per second (default: what the minimum fleet carries at the scale-in rate)"},
			&cli.Float64Flag{Name: "surge", Usage: fmt.Sprintf("surge ratio s in [1, %d]: load may grow by s within one T_plan (default: the catalog's; with --traffic, the traffic's --surge-quantile)", models.MaxSurgeRatio)},
			&cli.Float64Flag{Name: "detection-buffer", Usage: "seconds from a surge until scale-out is asked for (default: the catalog's)"},
			&cli.IntFlag{Name: "min-instances", Usage: "fleet minimum (default: the catalog's)"},
			&cli.IntFlag{Name: "max-instances", Usage: "largest fleet allowed (default: the catalog's)"},
			&cli.Float64Flag{Name: "scale-in-margin", Usage: fmt.Sprintf("scale-in hysteresis in [0, 0.9): scale in at (1 − margin) of the rate at which the survivors would reach the scale-out rate (default %s)", capacity.FormatNumber(capacity.DefaultScaleInMargin))},
			&cli.Float64Flag{Name: "hover-amplitude", Usage: fmt.Sprintf("swing of the envelope's hover and sawtooth traces around each scale-in boundary, a share in (0, %s]; recorded in the plan, independent of the margin (default %s: ±%s%%)",
				capacity.FormatNumber(capacity.MaxHoverAmplitude), capacity.FormatNumber(capacity.DefaultHoverAmplitude), capacity.FormatNumber(100*capacity.DefaultHoverAmplitude))},
			&cli.StringSliceFlag{Name: "trace", Usage: fmt.Sprintf("a CSV trace (timestamp,rps) the plan must also hold on; repeat for more (at most %d with --traffic)", capacity.MaxUserTraces)},
			&cli.StringSliceFlag{Name: "traffic", Usage: "the users' traffic, a request or rate trace (tts-bench traffic import or fetch): the plan takes its peak and surge ratio from the first part of it, must hold on that part, and is validated on the held-out rest; repeat for more"},
			&cli.StringFlag{Name: "holdout", Value: defaultHoldout, Usage: fmt.Sprintf("with --traffic: the share at the end of each trace held out from planning and validated on, e.g. 25%% or 0.25; 0 to %g%%", 100*traffic.MaxHoldout)},
			&cli.StringFlag{Name: "surge-quantile", Value: defaultSurgeQuantile, Usage: "with --traffic and without --surge: the quantile of the traffic's surge ratio at T_plan the plan takes as its surge ratio: p95, p99, p99.9 or max"},
			&cli.BoolFlag{Name: "no-search", Usage: "when the plan is infeasible, do not search for the cheapest configuration that passes"},
			cliflags.Output("where to write the plan, atomically (default artifacts/<model>/plan.json; what-if plans only when given)"),
			cliflags.Format("what to print: text or json"),
			&cli.StringFlag{Name: "what-if", Usage: "plan from assumed numbers instead of artifacts: q_max=N,t_total_s=S,throughput_rps=X[,...]"},
			&cli.StringFlag{Name: "from-compare", Usage: "plan for the winner of a tts-bench compare report (its type's artifacts, peak and trough)"},
			&cli.StringFlag{Name: "instance-type", Usage: "with --from-compare: plan for this row of the report instead of the winner (it must hold the SLO)"},
		},
		Action: catalogAction(newPlanOpts),
	}
}

// planOpts is one tts-bench plan: the command line as given, the catalog and writers it runs with, and what
// Validate resolves from them. Flags that were not given are nil.
type planOpts struct {
	args                 []string
	modelID              string
	qmaxPath, ttotalPath string
	output               string
	format               string
	whatIf               *string
	peakRPS, troughRPS   *float64
	surge, detectionBuf  *float64
	minInst, maxInst     *int
	scaleInMargin        *float64
	hoverAmplitude       *float64
	traces               []string
	noSearch             bool
	// traffic, holdout and surgeQuantile are --traffic, --holdout and --surge-quantile (the Set fields say the
	// flag was given); Validate fills quantile, trafficParts and, without --peak-rps, the peak (peakFromTraffic).
	traffic                      []string
	holdout, surgeQuantile       string
	holdoutSet, surgeQuantileSet bool
	quantile                     float64
	trafficParts                 []trafficPart
	peakFromTraffic              bool
	// modelSet says --model was given; fromCompare and instanceType are --from-compare and --instance-type.
	modelSet                  bool
	fromCompare, instanceType string

	catalog        models.Catalog
	stdout, stderr io.Writer

	// Set by Validate.
	model    models.Model
	capOpts  capacity.Options
	whatIfIn capacity.WhatIf
	// compared is the report's row planned for, with --from-compare.
	compared *capacity.TypeRow
	report   *capacity.TypeComparison
}

// newPlanOpts reads the command line of c into planOpts; it checks nothing.
func newPlanOpts(c *cli.Context, cat models.Catalog) *planOpts {
	o := &planOpts{
		args: c.Args().Slice(), modelID: c.String("model"), qmaxPath: c.String("qmax"), ttotalPath: c.String("ttotal"),
		output: c.String("output"), format: c.String("format"),
		catalog: cat, stdout: c.App.Writer, stderr: c.App.ErrWriter,
		modelSet: c.IsSet("model"), fromCompare: c.String("from-compare"), instanceType: c.String("instance-type"),
	}
	f64 := func(name string) *float64 {
		if !c.IsSet(name) {
			return nil
		}
		v := c.Float64(name)
		return &v
	}
	integer := func(name string) *int {
		if !c.IsSet(name) {
			return nil
		}
		v := c.Int(name)
		return &v
	}
	o.peakRPS, o.troughRPS, o.surge, o.detectionBuf = f64("peak-rps"), f64("trough-rps"), f64("surge"), f64("detection-buffer")
	o.minInst, o.maxInst = integer("min-instances"), integer("max-instances")
	o.scaleInMargin, o.traces, o.noSearch = f64("scale-in-margin"), c.StringSlice("trace"), c.Bool("no-search")
	o.hoverAmplitude = f64("hover-amplitude")
	o.traffic, o.holdout, o.surgeQuantile = c.StringSlice("traffic"), c.String("holdout"), c.String("surge-quantile")
	o.holdoutSet, o.surgeQuantileSet = c.IsSet("holdout"), c.IsSet("surge-quantile")
	if c.IsSet("what-if") {
		s := c.String("what-if")
		o.whatIf = &s
	}
	return o
}

// Validate checks the whole command line and reports every problem at once, as one usage error (exit 2).
// It resolves the model, the planning options (the catalog's defaults with the given flags applied), the
// what-if numbers, and the default artifact paths, and checks that the artifacts exist.
func (o *planOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.args) > 0 {
		bad("plan takes no arguments, got %q: use flags, see tts-bench plan --help", o.args)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	if o.fromCompare != "" || o.instanceType != "" {
		// Only the report's own problems: the rest of the command line is checked below, with the report's
		// model, peak and trough filled in.
		if err := o.fromComparison(); err != nil {
			return exitcode.Usage(err)
		}
	}
	m, err := o.catalog.Get(o.modelID)
	modelKnown := err == nil
	if !modelKnown {
		bad("--model: %w", err)
	} else {
		o.model = m
		o.capOpts = capacity.DefaultOptions(m)
	}
	// The traffic first: without --peak-rps its peak is the plan's.
	trafficErrs := o.loadTraffic(&o.capOpts)
	errs = append(errs, trafficErrs...)
	if len(trafficErrs) == 0 {
		errs = append(errs, o.applyOptions(&o.capOpts)...)
	}
	if o.whatIf != nil {
		if o.qmaxPath != "" || o.ttotalPath != "" {
			bad("--what-if replaces the artifacts: drop --qmax and --ttotal, or drop --what-if")
		}
		w, err := capacity.ParseWhatIf(*o.whatIf)
		if err != nil {
			bad("--what-if %q: %w", *o.whatIf, err)
		}
		o.whatIfIn = w
	} else if modelKnown && o.compared != nil {
		dir := o.compared.ArtifactDir
		o.qmaxPath, o.ttotalPath = filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile)
		for _, path := range []string{o.qmaxPath, o.ttotalPath} {
			if _, err := os.Stat(path); err != nil {
				bad("--from-compare %s: the artifact directory of %s (artifact_dir %s) cannot be used: %v: run tts-bench plan from the directory tts-bench compare ran in (a relative artifact_dir is from there), or run tts-bench compare again",
					o.fromCompare, o.compared.InstanceType, dir, err)
				break
			}
		}
		if o.output == "" {
			// Beside the artifacts it is derived from: the gate accepts a measured plan only so.
			o.output = filepath.Join(dir, capacity.PlanFile)
		}
	} else if modelKnown {
		if o.qmaxPath == "" {
			o.qmaxPath = capacity.DefaultQMaxPath(m.ID)
		}
		if o.ttotalPath == "" {
			o.ttotalPath = capacity.DefaultTTotalPath(m.ID)
		}
		errs = append(errs, artifactExists("--qmax", o.qmaxPath, "tts-bench qmax"), artifactExists("--ttotal", o.ttotalPath, "tts-bench ttotal"))
		if o.output == "" {
			o.output = capacity.DefaultPlanPath(m.ID)
		}
	}
	if o.output != "" {
		// Before the builds and the search, not after them: a long search must not end unable to write.
		if err := atomicfile.Writable(o.output); err != nil {
			bad("--output %s: %v: give --output a path in a directory you can write", o.output, err)
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

// fromComparison reads the --from-compare report and picks its row: the winner, or the --instance-type row,
// which must hold the SLO. It sets the model to the report's, and the peak and trough to the report's unless
// --peak-rps and --trough-rps were given. Every problem is an error naming the flag and the fix.
func (o *planOpts) fromComparison() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.fromCompare == "" {
		return fmt.Errorf("--instance-type %s picks a row of a comparison report: give --from-compare REPORT (tts-bench compare writes %s), or drop --instance-type", o.instanceType, capacity.DefaultComparePath("<model>"))
	}
	if o.qmaxPath != "" || o.ttotalPath != "" {
		bad("--from-compare takes the chosen type's qmax and ttotal artifacts from the report: drop --qmax and --ttotal, or drop --from-compare")
	}
	if o.whatIf != nil {
		bad("--from-compare plans from measured artifacts, --what-if from assumed numbers: give one of them")
	}
	c, err := capacity.LoadTypeComparison(o.fromCompare)
	if errors.Is(err, fs.ErrNotExist) {
		bad("--from-compare %s: no such file: run tts-bench compare first, or give the report it wrote", o.fromCompare)
		return errors.Join(errs...)
	}
	if err != nil {
		bad("--from-compare %s: %w: run tts-bench compare again instead of editing the report", o.fromCompare, err)
		return errors.Join(errs...)
	}
	o.report = c
	if o.modelSet && o.modelID != c.Model {
		bad("--model %s: the report %s compares %s: drop --model, or give that model's report", o.modelID, o.fromCompare, c.Model)
	}
	o.modelID = c.Model
	row, err := c.Choose(o.fromCompare, o.instanceType)
	if err != nil {
		errs = append(errs, err)
	}
	if row == nil {
		return errors.Join(errs...)
	}
	o.compared = row
	if o.peakRPS == nil && c.PeakRPS > 0 {
		v := c.PeakRPS
		o.peakRPS = &v
	}
	if o.troughRPS == nil && c.TroughRPS > 0 {
		v := c.TroughRPS
		o.troughRPS = &v
	}
	return errors.Join(errs...)
}

// writeDeployHint says which type the plan made from a comparison is for, and how to deploy it: the
// endpoint stack deploys the catalog's type unless told otherwise, and the gate refuses a plan measured on
// another type (docs/design.md, "Instance types side by side").
func (o *planOpts) writeDeployHint(w io.Writer) {
	t := o.compared.InstanceType
	which := "the winner (the cheapest type that holds the SLO"
	if t != o.report.Winner {
		which = "the row chosen with --instance-type (it holds the SLO"
	}
	fmt.Fprintf(w, "\nPlan for %s: %s on trace %s in %s).\n", t, which, o.report.Trace, o.fromCompare)
	planFlag, planCtx := "", ""
	if o.output != capacity.DefaultPlanPath(o.model.ID) {
		planFlag, planCtx = " --plan "+o.output, " -c plan="+o.output
	}
	if o.report.Local {
		// The artifacts name the type the emulator's profile stood for; its service times are assumptions
		// (emulator/README.md), not a measurement of that type on AWS.
		fmt.Fprintf(w, "The comparison ran on the local emulator: this plan is for the emulator's %s profile, not a measurement on AWS. Deploy it there with:\n  speech-infra deploy %s --local --instance-type %s%s\n",
			t, o.model.ID, t, planFlag)
		return
	}
	if t == o.model.InstanceType {
		fmt.Fprintf(w, "%s is the catalog's type. Deploy it with:\n  speech-infra deploy %s%s\n  (CDK: -c model=%s%s)\n", t, o.model.ID, planFlag, o.model.ID, planCtx)
		return
	}
	fmt.Fprintf(w, "The catalog deploys %s: the deploy needs -c instance_type=%s, or the gate refuses this plan. Deploy it with:\n  speech-infra deploy %s --instance-type %s%s\n  (CDK: -c model=%s -c instance_type=%s%s)\n",
		o.model.InstanceType, t, o.model.ID, t, planFlag, o.model.ID, t, planCtx)
}

// applyOptions applies the flags that were given to opts, checking each against its bounds.
func (o *planOpts) applyOptions(opts *capacity.Options) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if o.peakRPS == nil {
		bad("--peak-rps is required: give the highest load the fleet must carry in requests per second, e.g. --peak-rps 80, or give the users' traffic with --traffic")
	} else if opts.PeakRPS = *o.peakRPS; !(opts.PeakRPS > 0 && opts.PeakRPS <= capacity.MaxRPS) {
		bad("--peak-rps %s: want a request rate in (0, %g] requests per second, e.g. --peak-rps 80", measure.FormatFloat(opts.PeakRPS), float64(capacity.MaxRPS))
	}
	if o.troughRPS != nil {
		opts.TroughRPS = *o.troughRPS
		if !(opts.TroughRPS > 0 && opts.TroughRPS <= capacity.MaxRPS) || (opts.PeakRPS > 0 && opts.TroughRPS > opts.PeakRPS) {
			bad("--trough-rps %s: want a request rate in (0, --peak-rps], or leave it out", measure.FormatFloat(opts.TroughRPS))
		}
	}
	if o.surge != nil {
		opts.SurgeRatio = *o.surge
		if !models.ValidSurgeRatio(opts.SurgeRatio) {
			bad("--surge %s: want a ratio in [1, %d], e.g. --surge 1.25 (load may grow 25%% within one T_plan)", measure.FormatFloat(opts.SurgeRatio), models.MaxSurgeRatio)
		}
	}
	if o.detectionBuf != nil {
		opts.DetectionBufferS = *o.detectionBuf
		if !(opts.DetectionBufferS >= 0 && opts.DetectionBufferS <= capacity.MaxDetectionBufferS) {
			bad("--detection-buffer %s: want 0 to %d seconds (metric period × evaluation periods + scale-out cooldown, 60 by default)", measure.FormatFloat(opts.DetectionBufferS), capacity.MaxDetectionBufferS)
		}
	}
	if o.minInst != nil {
		if opts.MinInstances = *o.minInst; opts.MinInstances < 1 || opts.MinInstances > capacity.MaxInstances {
			bad("--min-instances %d: want 1 to %d", opts.MinInstances, capacity.MaxInstances)
		}
	}
	if o.maxInst != nil {
		if opts.MaxInstances = *o.maxInst; opts.MaxInstances < 1 || opts.MaxInstances > capacity.MaxInstances {
			bad("--max-instances %d: want 1 to %d", opts.MaxInstances, capacity.MaxInstances)
		}
	}
	if o.scaleInMargin != nil {
		if opts.ScaleInMargin = *o.scaleInMargin; !(opts.ScaleInMargin >= 0 && opts.ScaleInMargin < 0.9) {
			bad("--scale-in-margin %s: want a share in [0, 0.9), e.g. --scale-in-margin 0.2", measure.FormatFloat(opts.ScaleInMargin))
		}
	}
	if o.hoverAmplitude != nil {
		if opts.HoverAmplitude = *o.hoverAmplitude; !(opts.HoverAmplitude > 0 && opts.HoverAmplitude <= capacity.MaxHoverAmplitude) {
			bad("--hover-amplitude %s: want a share in (0, %s], e.g. --hover-amplitude %s (±%s%% around each scale-in boundary)", measure.FormatFloat(opts.HoverAmplitude),
				measure.FormatFloat(capacity.MaxHoverAmplitude), measure.FormatFloat(capacity.DefaultHoverAmplitude), capacity.FormatNumber(100*capacity.DefaultHoverAmplitude))
		}
	}
	if len(o.traces) > capacity.MaxUserTraces {
		bad("--trace is given %d times: at most %d", len(o.traces), capacity.MaxUserTraces)
	} else {
		for _, path := range o.traces {
			tr, err := simulate.ReadFile(path)
			if err != nil {
				bad("--trace %s: %w", path, err)
				continue
			}
			ti, err := capacity.TraceInputFrom(tr)
			if err != nil {
				bad("--trace %s: %w", path, err)
				continue
			}
			opts.Traces = append(opts.Traces, ti)
		}
	}
	if opts.MinInstances >= 1 && opts.MaxInstances >= 1 && opts.MinInstances > opts.MaxInstances {
		bad("--min-instances %d is above --max-instances %d: lower the minimum or raise the maximum", opts.MinInstances, opts.MaxInstances)
	}
	return errs
}

// Execute builds the plan Validate prepared, prints it as --format asks, searches for the cheapest passing
// configuration when it is infeasible, then writes it (a what-if plan only to a given --output) and fails the
// check (exit 1) when it is infeasible. An artifact or what-if set that cannot make a plan, or an output that
// cannot be written, is an input error (exit 2).
//
// The builds and the search simulate the envelope, the user's traces included, and can take minutes: SIGINT
// or SIGTERM (ctx, main's signal context) stops them within a simulated minute's work, exit 130 or 143, and
// nothing is written then (the plan is written last, atomically, once the search is over).
func (o *planOpts) Execute(ctx context.Context) error {
	build := capacity.WhatIfBuilder(o.model, o.whatIfIn)
	if o.whatIf == nil {
		ms, b, err := capacity.MeasuredBuilder(o.model, o.qmaxPath, o.ttotalPath)
		if err != nil {
			return exitcode.Usage(err)
		}
		if r := o.compared; r != nil && ms.QMax.InstanceType != r.InstanceType {
			return exitcode.Usagef("--from-compare %s: the row of %s names %s, whose qmax artifact was measured on %s: the artifact directory holds another type's measurement; run tts-bench compare again",
				o.fromCompare, r.InstanceType, o.qmaxPath, ms.QMax.InstanceType)
		}
		build = b
	}
	if ctx.Err() != nil {
		return o.stopped(ctx)
	}
	o.describeTraffic()
	if err := o.surgeFromTraffic(ctx, build); err != nil {
		if ctx.Err() != nil {
			return o.stopped(ctx)
		}
		return exitcode.Usage(err)
	}
	// From 10 simulated days of user traces (a 31-day trace is about a second of simulation per configuration),
	// each configuration takes a while.
	recorded := append(slices.Clone(o.capOpts.Traces), o.capOpts.Holdout...)
	if d := capacity.TraceDays(recorded); d >= 10 {
		fmt.Fprintf(o.stderr, "plan: simulating the envelope with %d user trace(s), %.0f simulated days: each configuration takes a while; Ctrl-C stops it and writes nothing\n",
			len(recorded), d)
	}
	p, err := build(ctx, o.capOpts)
	if ctx.Err() != nil {
		return o.stopped(ctx)
	}
	if err != nil {
		return exitcode.Usage(err)
	}
	if o.output != "" {
		// Before the search: a plan the gate, simulate and validate would refuse to read is not written.
		var big *capacity.PlanSizeError
		if err := capacity.CheckPlanSize(p, recorded); errors.As(err, &big) {
			return exitcode.Usagef("--trace, --traffic: %w", err)
		} else if err != nil {
			return err
		}
	}
	if err := capacity.RenderPlan(o.stdout, o.format, p); err != nil {
		return fmt.Errorf("print plan: %w", err)
	}
	// The search's result, printed after the plan is written (and after the deployment hint).
	cheapest := ""
	if !p.Feasible() && !o.noSearch {
		if cheapest, err = capacity.SearchCheapest(ctx, o.capOpts, build, o.stderr); err != nil || ctx.Err() != nil {
			return o.stopped(ctx)
		}
	}
	// The last point at which a signal stops the run: past it the plan is written whole, and the run ends as
	// it would have without the signal.
	if ctx.Err() != nil {
		return o.stopped(ctx)
	}
	if o.output != "" {
		if err := capacity.WriteJSON(o.output, p); err != nil {
			return exitcode.Usage(fmt.Errorf("--output: %w", err))
		}
		fmt.Fprintf(o.stderr, "wrote %s plan to %s\n", p.Verdict, o.output)
		if o.compared != nil {
			hint := o.stdout
			if o.format == "json" {
				hint = o.stderr
			}
			o.writeDeployHint(hint)
		}
	} else {
		fmt.Fprintln(o.stderr, "what-if plan not written: pass --output PATH to keep it (the deploy gate refuses what-if plans)")
	}
	fmt.Fprint(o.stdout, cheapest)
	if !p.Feasible() {
		var failed []string
		for _, f := range p.Failed() {
			failed = append(failed, f.Name)
		}
		return exitcode.CheckFailedf("plan is infeasible: %s failed: follow the recommendations above and plan again", strings.Join(failed, ", "))
	}
	return nil
}

// stopped is the error of a plan stopped by SIGINT or SIGTERM: exit 130 or 143, nothing written.
func (o *planOpts) stopped(ctx context.Context) error {
	left := "nothing written"
	if o.output != "" {
		left += " to " + o.output
	}
	return interrupted(ctx, fmt.Errorf("plan: stopped (%v) before it finished: %s", context.Cause(ctx), left))
}

// artifactExists says, as an error, that the artifact flag names at path is missing or cannot be looked at;
// nil when it exists.
func artifactExists(flag, path, producer string) error {
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s %s: no such file: run %s first or pass %s PATH", flag, path, producer, flag)
	}
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, path, err)
	}
	return nil
}
