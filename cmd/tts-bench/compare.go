package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

const compareDescription = `compare answers which instance type to run a model on (docs/design.md, "Instance types side by side").
For each type of --instance-types it:

  1. deploys a measurement endpoint of its own, speech-<model>-<type with dots as dashes>, in the
     measurement configuration (no autoscaling, unbounded queue);
  2. runs drift, qmax (with its rate staircase) and ttotal against it, writing the type's artifact set into
     artifacts/<model>/<type>/ (qmax.json, ttotal.json, their records and charts);
  3. plans for the trace's peak and trough (the code of tts-bench plan) and simulates the plan on the trace
     (the code of tts-bench simulate), writing plan.json beside the artifacts;
  4. destroys the endpoint, its endpoint config and its model: also on an error, on SIGINT and on SIGTERM.

A type that cannot be measured, planned or simulated is a row with its error; the others go on. The report
(--output, default artifacts/<model>/compare.json) has one row per type: Q_max by TTFAB and by TTFAB plus
stall, the highest rate one instance serves within the SLO, T_total, the plan's fleet range, the
simulation's SLO-violation minutes and instance-hours on the trace, cost per day and per 1,000 requests at
the type's price, and whether the type holds the SLO (a feasible plan, no violation minute on the trace)
or the finding why not. The winner is the cheapest type per day that holds. A chart of cost per day
against T_total goes beside the report (compare.png).

Prices come from the catalog's per-type table; a type it does not price needs --price-per-hour TYPE=USD.

Measurement settings: --qmax-args and --ttotal-args are passed to qmax and ttotal as they are (e.g. a short
ladder), the defaults of those commands otherwise.

On --local (the emulator) the types run one at a time, whatever --parallel says: emulated instances share
this host's cores, so two measurements at once would disturb each other. On AWS, the quota of each type is
checked first (the preflight's check): types run --parallel at a time when every quota allows, one at a
time when one is short. --dry-run prints the endpoints, the quota checks, the estimated duration and the
estimated measurement cost, and changes nothing.

Exit codes: 0 a type holds (the winner is named), 1 no type holds (each type's finding is given),
2 a usage error, 3 no type could be measured (an AWS or network error), 130/143 interrupted.

Examples:
  tts-bench compare --local --model espeak-ng --instance-types ml.c5.large,ml.c5.xlarge --trace diurnal \
      --peak-rps 20 --trough-rps 2
  tts-bench compare --model kokoro-82m --instance-types ml.g5.xlarge,ml.g6.xlarge,ml.g4dn.xlarge \
      --trace day.csv --image <ECR image URI> --role <execution role ARN> --dry-run`

// maxCompareTypes is how many types one comparison measures at most (as many as SageMaker Inference
// Recommender load-tests).
const maxCompareTypes = 10

func compareCommand() *cli.Command {
	d := simulate.DefaultShapeParams(simulate.ShapeDiurnal)
	return &cli.Command{
		Name:        "compare",
		Usage:       "measure, plan and simulate a model on several instance types and name the cheapest that holds the SLO",
		UsageText:   "tts-bench compare --model ID --instance-types A,B[,...] --trace SHAPE|FILE.csv [--peak-rps P --trough-rps R] [--local | --region R] [options]",
		Description: compareDescription,
		Flags: append([]cli.Flag{
			modelFlag("catalog id of the model to compare instance types for"),
			&cli.StringFlag{Name: "instance-types", Usage: "comma-separated SageMaker instance types to compare, e.g. ml.g5.xlarge,ml.g6.xlarge (at most " + strconv.Itoa(maxCompareTypes) + ")"},
			&cli.StringFlag{Name: "trace", Usage: "the trace every type's plan is simulated on: diurnal, step, spike, ramp, or a trace file (timestamp,rps CSV, or a request trace from tts-bench traffic import) (required)"},
			&cli.Float64Flag{Name: "peak-rps", Value: d.PeakRPS, Usage: "shape: highest rate, requests per second (every type is planned for it)"},
			&cli.Float64Flag{Name: "trough-rps", Value: d.TroughRPS, Usage: "shape: lowest rate, requests per second"},
			cliflags.PricePerHour(),
			&cli.IntFlag{Name: "parallel", Value: 1, Usage: "on AWS: measure this many types at once when every quota allows (--local: always one at a time, the emulated instances share this host's cores)"},
			&cli.StringFlag{Name: "qmax-args", Usage: "arguments passed to each type's qmax, e.g. \"--ladder 1,8,16 --hold 9s\" (default: qmax's defaults)"},
			&cli.StringFlag{Name: "ttotal-args", Usage: "arguments passed to each type's ttotal, e.g. \"--warmup 20s --max-wait 4m\" (default: ttotal's defaults)"},
			&cli.StringFlag{Name: "image", Usage: "AWS: the container image URI the measurement endpoints run (the local emulator runs its own)"},
			&cli.StringFlag{Name: "role", Usage: "AWS: the execution role ARN the measurement endpoints' models run as"},
			&cli.StringFlag{Name: "model-dir", Usage: "the model's weights directory (models with weights only)"},
			&cli.StringFlag{Name: "artifacts", Usage: "the directory of the type artifact sets (default artifacts/<model>)"},
			cliflags.DryRun("print the endpoints, the quota checks, the estimated duration and cost; change nothing"),
			cliflags.Format("what to print on stdout: text or json (the report)"),
			cliflags.ContainerDir("the container source tree whose digest the artifacts record"),
			cliflags.JournalDir(cloud.DefaultJournalDir, "where the freeze journals are kept"),
		}, awsenv.Flags()...),
		Action: catalogAction(newCompareOpts),
	}
}

// compareOpts is one tts-bench compare: the command line as given and what Validate resolves from it.
type compareOpts struct {
	args                  []string
	modelID, typesFlag    string
	trace                 string
	peakRPS, troughRPS    float64
	peakSet, troughSet    bool
	prices                []string
	parallel              int
	qmaxArgs, ttotalArgs  string
	image, role, modelDir string
	artifacts             string
	dryRun                bool
	format                string
	containerDir, jdir    string
	aws                   awsenv.Settings
	catalog               models.Catalog
	stdout, stderr        io.Writer

	// Set by Validate.
	model models.Model
	types []string
	price map[string]measure.TypePrice
	tr    simulate.Trace
}

func newCompareOpts(c *cli.Context, cat models.Catalog) *compareOpts {
	return &compareOpts{
		args: c.Args().Slice(), modelID: c.String("model"), typesFlag: c.String("instance-types"), trace: c.String("trace"),
		peakRPS: c.Float64("peak-rps"), troughRPS: c.Float64("trough-rps"), peakSet: c.IsSet("peak-rps"), troughSet: c.IsSet("trough-rps"),
		prices: c.StringSlice("price-per-hour"), parallel: c.Int("parallel"), qmaxArgs: c.String("qmax-args"), ttotalArgs: c.String("ttotal-args"),
		image: c.String("image"), role: c.String("role"), modelDir: c.String("model-dir"), artifacts: c.String("artifacts"),
		dryRun: c.Bool("dry-run"), format: c.String("format"), containerDir: c.String("container-dir"), jdir: c.String("journal-dir"),
		aws: awsenv.FromContext(c), catalog: cat, stdout: c.App.Writer, stderr: c.App.ErrWriter,
	}
}

// Validate checks the whole command line and reports every problem at once, as one usage error (exit 2).
func (o *compareOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.args) > 0 {
		bad("compare takes no arguments, got %q: name the types with --instance-types, see tts-bench compare --help", o.args)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	m, err := lookupModel(o.catalog, o.modelID)
	modelKnown := err == nil
	if err != nil {
		errs = append(errs, err)
	}
	o.model = m
	o.types = nil
	// The list is counted, and its repeats found, before any type is looked at: a list of a thousand entries
	// gets one line, not a line per entry.
	list := capacity.ParseInstanceTypeList(o.typesFlag)
	entries, distinct, repeated := list.Entries, list.Distinct, list.Repeated
	switch {
	case entries == 0:
		bad("--instance-types: none given: name the types to compare, comma-separated, e.g. --instance-types ml.g5.xlarge,ml.g6.xlarge")
	case entries > maxCompareTypes:
		what := fmt.Sprintf("%d types", entries)
		if len(repeated) > 0 {
			what = fmt.Sprintf("%d entries, %d of them distinct (%s)", entries, len(distinct), list.FirstRepeated(3))
		}
		bad("--instance-types: %s: compare at most %d types at once, each named once", what, maxCompareTypes)
	default:
		if len(repeated) > 0 {
			bad("--instance-types: %s: name each type once", strings.Join(repeated, ", "))
		}
		for _, t := range distinct {
			switch {
			case capacity.ValidInstanceType(t) != nil:
				bad("--instance-types: %v: name real-time endpoint types such as ml.g5.xlarge or ml.c5.large", capacity.ValidInstanceType(t))
			case modelKnown && len(measure.CompareEndpoint(m.ID, t)) > measure.MaxEndpointName:
				bad("--instance-types: %s: the measurement endpoint's name %s is longer than SageMaker's %d characters", t, measure.CompareEndpoint(m.ID, t), measure.MaxEndpointName)
			}
		}
		o.types = distinct
	}
	if o.parallel < 1 || o.parallel > maxCompareTypes {
		bad("--parallel %d: want 1 to %d types measured at once", o.parallel, maxCompareTypes)
	}
	// A bare USD would price no type in particular here: each price names its type.
	overrides, err := models.ParsePriceOverrides(o.prices, "")
	if err != nil {
		errs = append(errs, err)
	}
	o.price = map[string]measure.TypePrice{}
	if modelKnown {
		for _, t := range o.types {
			usd, source, err := m.ResolvePrice(t, overrides)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			o.price[t] = measure.TypePrice{USD: usd, Source: source}
		}
		if m.Source != nil && o.modelDir == "" && !o.dryRun {
			bad("--model-dir: %s needs its weights: pass the directory with the files of %s at %s", m.ID, m.Source.Repo, m.Source.Revision)
		}
	}
	for t := range overrides {
		if !slices.Contains(distinct, t) {
			bad("--price-per-hour %s=...: %s is not in --instance-types: drop it or add the type", t, t)
		}
	}
	errs = append(errs, o.loadTrace()...)
	errs = append(errs, o.aws.Validate()...)
	if !o.aws.Local && !o.dryRun {
		if o.image == "" {
			bad("--image: none given: on AWS the measurement endpoints need the container image URI (the endpoint stack's image), or use --local")
		}
		if o.role == "" {
			bad("--role: none given: on AWS the measurement endpoints need an execution role ARN, or use --local")
		}
	}
	if o.jdir == "" {
		bad("--journal-dir is empty: give the journal directory or leave the flag out (default %s)", cloud.DefaultJournalDir)
	}
	for _, a := range []struct{ flag, v string }{{"--qmax-args", o.qmaxArgs}, {"--ttotal-args", o.ttotalArgs}} {
		for _, f := range strings.Fields(a.v) {
			name := strings.SplitN(strings.TrimLeft(f, "-"), "=", 2)[0]
			if strings.HasPrefix(f, "-") && slices.Contains([]string{"model", "output", "qmax", "local", "state-dir", "region", "profile", "journal-dir", "container-dir", "dry-run", "format", "transport", "url", "catalog"}, name) {
				bad("%s: --%s is compare's to set (--transport and --url: compare measures each type's endpoint over sagemaker-stream): leave it out", a.flag, name)
			}
		}
	}
	if o.artifacts == "" && modelKnown {
		o.artifacts = capacity.ArtifactDir(m.ID)
	}
	return exitcode.Usage(errors.Join(errs...))
}

// loadTrace resolves --trace: a built-in shape at --peak-rps and --trough-rps, or a CSV file (whose own peak
// and lowest rate are then the plan's).
func (o *compareOpts) loadTrace() []error {
	switch {
	case o.trace == "":
		return []error{errors.New("--trace is required: give diurnal, step, spike, ramp or a CSV file of timestamp,rps, e.g. --trace diurnal")}
	case simulate.IsTraceFile(o.trace):
		if o.peakSet || o.troughSet {
			return []error{fmt.Errorf("--peak-rps and --trough-rps shape a built-in trace; --trace %s is a CSV file whose peak and trough are its own: drop them", o.trace)}
		}
		tr, err := simulate.ReadFile(o.trace)
		if err != nil {
			return []error{fmt.Errorf("--trace %s: %w", o.trace, err)}
		}
		o.tr, o.peakRPS, o.troughRPS = tr, tr.Peak(), tr.Lowest()
		return nil
	case !slices.Contains(simulate.Shapes, o.trace):
		return []error{fmt.Errorf("--trace %s: not a shape (%s) nor a .csv file", o.trace, strings.Join(simulate.Shapes, ", "))}
	}
	sp := simulate.DefaultShapeParams(o.trace)
	sp.PeakRPS, sp.TroughRPS = o.peakRPS, o.troughRPS
	sp.At = sp.Duration / 3
	var errs []error
	o.tr, errs = shapeTrace(o.trace, sp)
	return errs
}

// Execute runs the comparison (measure.Compare): every type (one at a time on --local), then the report, the
// chart and the verdict.
func (o *compareOpts) Execute(ctx context.Context) error {
	// qmax's and ttotal's own checks of --qmax-args and --ttotal-args, before anything is deployed: a bad value
	// is a usage error now, not the same error in every type's row after a deploy.
	qd, td, dd, err := o.measurementBound(ctx)
	if err != nil {
		return exitcode.Usage(err)
	}
	cfg, err := o.aws.Config(ctx)
	if err != nil {
		return err
	}
	run := o.run()
	if o.dryRun {
		return run.DryRun(ctx, cfg, o.stdout, qd, td, dd)
	}
	rep, out, err := run.Run(ctx, cfg)
	if ctx.Err() != nil {
		return interrupted(ctx, err)
	}
	if err != nil {
		return err
	}
	if err := capacity.RenderTypeComparison(o.stdout, o.format, rep, out); err != nil {
		return fmt.Errorf("print the report: %w", err)
	}
	if rep.Winner != "" {
		return nil
	}
	measured := 0
	for _, r := range rep.Rows {
		if r.Error == "" {
			measured++
		}
	}
	if measured == 0 {
		return exitcode.CouldNotRunf("compare %s: no type could be measured (each row names its error)", o.model.ID)
	}
	return exitcode.CheckFailedf("compare %s: no type holds the SLO on the trace %s (each row names its finding)", o.model.ID, rep.Trace)
}

// run is the comparison Validate resolved, its qmax and ttotal those of tts-bench qmax and ttotal with
// --qmax-args and --ttotal-args, pointed where compare points.
func (o *compareOpts) run() *measure.Compare {
	common := append([]string{"--journal-dir", o.jdir, "--format", "text"}, o.aws.Args()...)
	if o.containerDir != "" {
		common = append(common, "--container-dir", o.containerDir)
	}
	return &measure.Compare{Model: o.model, Types: o.types, Price: o.price, Trace: o.tr, PeakRPS: o.peakRPS, TroughRPS: o.troughRPS,
		Local: o.aws.Local, Parallel: o.parallel, Image: o.image, RoleARN: o.role, ModelDir: o.modelDir, Artifacts: o.artifacts,
		JournalDir: o.jdir, Stderr: o.stderr,
		QMax: func(ctx context.Context, m models.Model, output string, w io.Writer) error {
			args := append(append([]string{"--output", output, "--model", m.ID}, common...), strings.Fields(o.qmaxArgs)...)
			return runSub(ctx, qmaxCommand(), args, w, func(c *cli.Context) error { return runWith(c, o.catalog.With(m), newQMaxOpts) })
		},
		TTotal: func(ctx context.Context, m models.Model, qmaxPath, output string, w io.Writer) error {
			args := append(append([]string{"--qmax", qmaxPath, "--output", output, "--model", m.ID}, common...), strings.Fields(o.ttotalArgs)...)
			return runSub(ctx, ttotalCommand(), args, w, func(c *cli.Context) error { return runWith(c, o.catalog.With(m), newTTotalOpts) })
		},
	}
}

// measurementBound is the longest one type's measurement takes by the settings: qmax's bound (its own
// dry-run estimate), ttotal's warm-up and wait, and the deploy's start-up bound.
func (o *compareOpts) measurementBound(ctx context.Context) (qmaxD, ttotalD, deployD time.Duration, err error) {
	cat := o.catalog.With(o.model.WithEndpoint(measure.CompareEndpoint(o.model.ID, o.types[0])))
	common := append([]string{"--model", o.model.ID, "--journal-dir", o.jdir}, o.aws.Args()...)
	if o.containerDir != "" {
		common = append(common, "--container-dir", o.containerDir)
	}
	var out bytes.Buffer
	if err := runSub(ctx, qmaxCommand(), append(common, strings.Fields(o.qmaxArgs)...), &out, func(c *cli.Context) error {
		q := newQMaxOpts(c, cat)
		q.Output = "" // the estimate writes nothing
		if err := q.Validate(); err != nil {
			return err
		}
		qmaxD = q.DurationBound()
		return nil
	}); err != nil {
		return 0, 0, 0, subArgsError("qmax", "--qmax-args", err)
	}
	if err := runSub(ctx, ttotalCommand(), append(common, strings.Fields(o.ttotalArgs)...), &out, func(c *cli.Context) error {
		ttotalD = c.Duration("warmup") + c.Duration("max-wait")
		return nil
	}); err != nil {
		return 0, 0, 0, subArgsError("ttotal", "--ttotal-args", err)
	}
	deployD = time.Duration(o.model.Container.StartupHealthCheckTimeoutS)*time.Second + cloud.DeployWaitSlack
	return qmaxD, ttotalD, deployD, nil
}

// subArgsError says which sub-command refused its settings: those of flag, or the flags compare passes on.
func subArgsError(command, flag string, err error) error {
	return fmt.Errorf("%s refuses its settings (%s, or --container-dir and --journal-dir, which compare passes on): %w", command, flag, err)
}

// subParse serializes the parsing of sub-commands' flags: urfave/cli keeps settings at package level, and two
// parses at once race on them. The sub-command runs outside the lock.
var subParse sync.Mutex

// runSub runs cmd with args as tts-bench would, its action replaced by action (the command's own code with
// compare's catalog), its output on w.
func runSub(ctx context.Context, cmd *cli.Command, args []string, w io.Writer, action func(*cli.Context) error) error {
	var once sync.Once
	unlock := func() { once.Do(subParse.Unlock) }
	subParse.Lock()
	defer unlock()
	cmd.Action = func(c *cli.Context) error {
		unlock()
		return action(c)
	}
	app := &cli.App{Name: "tts-bench", Writer: w, ErrWriter: w, HideHelpCommand: true, Commands: []*cli.Command{cmd},
		ExitErrHandler: func(*cli.Context, error) {}}
	return app.RunContext(ctx, append([]string{"tts-bench", cmd.Name}, args...))
}
