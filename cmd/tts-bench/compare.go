package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
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

// Bounds of compare's flags.
const (
	// maxCompareTypes is how many types one comparison measures at most (as many as SageMaker Inference
	// Recommender load-tests).
	maxCompareTypes = 10
	// compareDestroyTimeout bounds the destroy of one measurement endpoint, on a context of its own.
	compareDestroyTimeout = 3 * time.Minute
	// maxEndpointName is SageMaker's limit on an endpoint name's length.
	maxEndpointName = 63
	// compareChartFile is the chart written beside the report.
	compareChartFile = "compare.png"
)

// The local emulator's image and role, as speech-infra deploy --local records them (the emulator runs its own
// container binary whatever the image says).
const (
	localImage = "speech-infra/speech-container:local"
	localRole  = "arn:aws:iam::000000000000:role/speech-infra-local"
)

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
			&cli.StringFlag{Name: "trace", Usage: "the trace every type's plan is simulated on: diurnal, step, spike, ramp, or a CSV file of timestamp,rps (required)"},
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
	// destroyFailed counts the measurement endpoints that could not be destroyed.
	destroyFailed atomic.Int32
	price         map[string]typePrice
	tr            simulate.Trace
}

// typePrice is one type's price and where it comes from.
type typePrice struct {
	usd    float64
	source string
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
	seen := map[string]int{}
	var distinct []string
	entries := 0
	for _, t := range strings.Split(o.typesFlag, ",") {
		if t = strings.TrimSpace(t); t == "" {
			continue
		}
		if seen[t] == 0 {
			distinct = append(distinct, t)
		}
		seen[t]++
		entries++
	}
	var repeated []string
	for _, t := range distinct {
		if n := seen[t]; n > 1 {
			repeated = append(repeated, t+" is given "+timesWord(n))
		}
	}
	switch {
	case entries == 0:
		bad("--instance-types: none given: name the types to compare, comma-separated, e.g. --instance-types ml.g5.xlarge,ml.g6.xlarge")
	case entries > maxCompareTypes:
		what := fmt.Sprintf("%d types", entries)
		if len(repeated) > 0 {
			what = fmt.Sprintf("%d entries, %d of them distinct (%s)", entries, len(distinct), firstOf(repeated, 3))
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
			case modelKnown && len(compareEndpoint(m.ID, t)) > maxEndpointName:
				bad("--instance-types: %s: the measurement endpoint's name %s is longer than SageMaker's %d characters", t, compareEndpoint(m.ID, t), maxEndpointName)
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
	o.price = map[string]typePrice{}
	if modelKnown {
		for _, t := range o.types {
			usd, source, err := m.ResolvePrice(t, overrides)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			o.price[t] = typePrice{usd: usd, source: source}
		}
		if m.Source != nil && o.modelDir == "" && !o.dryRun {
			bad("--model-dir: %s needs its weights: pass the directory with the files of %s at %s", m.ID, m.Source.Repo, m.Source.Revision)
		}
	}
	for t := range overrides {
		if seen[t] == 0 {
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

// timesWord is "twice" or "N times".
func timesWord(n int) string {
	if n == 2 {
		return "twice"
	}
	return strconv.Itoa(n) + " times"
}

// firstOf joins the first n of items, and says how many more there are.
func firstOf(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more repeated", strings.Join(items[:n], ", "), len(items)-n)
}

// loadTrace resolves --trace: a built-in shape at --peak-rps and --trough-rps, or a CSV file (whose own peak
// and lowest rate are then the plan's).
func (o *compareOpts) loadTrace() []error {
	switch {
	case o.trace == "":
		return []error{errors.New("--trace is required: give diurnal, step, spike, ramp or a CSV file of timestamp,rps, e.g. --trace diurnal")}
	case strings.HasSuffix(strings.ToLower(o.trace), ".csv"):
		if o.peakSet || o.troughSet {
			return []error{fmt.Errorf("--peak-rps and --trough-rps shape a built-in trace; --trace %s is a CSV file whose peak and trough are its own: drop them", o.trace)}
		}
		tr, err := readTraceFile(o.trace)
		if err != nil {
			return []error{fmt.Errorf("--trace %s: %w", o.trace, err)}
		}
		o.tr, o.peakRPS, o.troughRPS = tr, tr.Peak(), lowestRate(tr)
		return nil
	case !slices.Contains(simulate.Shapes, o.trace):
		return []error{fmt.Errorf("--trace %s: not a shape (%s) nor a .csv file", o.trace, strings.Join(simulate.Shapes, ", "))}
	}
	sp := simulate.DefaultShapeParams(o.trace)
	sp.PeakRPS, sp.TroughRPS = o.peakRPS, o.troughRPS
	sp.At = sp.Duration / 3
	var errs []error
	for _, e := range sp.Validate() {
		errs = append(errs, fmt.Errorf("--%w", e))
	}
	if len(errs) > 0 {
		return errs
	}
	tr, err := simulate.Generate(sp)
	if err != nil {
		return []error{fmt.Errorf("--trace %s: %w", o.trace, err)}
	}
	o.tr = tr
	return nil
}

// compareEndpoint is the measurement endpoint of one type: speech-<model>-<type with dots as dashes>.
func compareEndpoint(modelID, instanceType string) string {
	return "speech-" + modelID + "-" + strings.ReplaceAll(instanceType, ".", "-")
}

// Execute runs the comparison: every type (one at a time on --local), then the report, the chart and the
// verdict.
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
	if o.dryRun {
		return o.printDryRun(ctx, cfg, qd, td, dd)
	}
	rep := &capacity.TypeComparison{SchemaVersion: capacity.SchemaVersion, Model: o.model.ID, Trace: o.tr.Name,
		PeakRPS: o.peakRPS, TroughRPS: o.troughRPS, Local: o.aws.Local, Rows: make([]capacity.TypeRow, len(o.types))}
	parallel := o.parallel
	if o.aws.Local {
		if parallel > 1 {
			fmt.Fprintf(o.stderr, "compare %s: --parallel %d ignored on --local: the emulated instances share this host's cores, so the types run one at a time\n", o.model.ID, parallel)
		}
		parallel = 1
	} else if parallel > 1 {
		parallel = o.quotaParallel(ctx, cfg, parallel)
	}
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i, it := range o.types {
		if ctx.Err() != nil {
			rep.Rows[i] = capacity.TypeRow{InstanceType: it, ArtifactDir: o.typeDir(it), Error: "not measured: the comparison was interrupted"}
			continue
		}
		sem <- struct{}{}
		if ctx.Err() != nil { // interrupted while the previous type ran: deploy nothing more
			<-sem
			rep.Rows[i] = capacity.TypeRow{InstanceType: it, ArtifactDir: o.typeDir(it), Error: "not measured: the comparison was interrupted"}
			continue
		}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			rep.Rows[i] = o.runType(ctx, cfg, it)
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		cause := context.Cause(ctx)
		left := "every measurement endpoint was destroyed"
		if n := o.destroyFailed.Load(); n > 0 {
			left = fmt.Sprintf("%d measurement endpoint(s) could NOT be destroyed (see DESTROY FAILED above): delete them by hand", n)
		}
		return interrupted(ctx, fmt.Errorf("compare %s: interrupted (%v): %s; the finished types' artifacts stay in %s; no report written", o.model.ID, cause, left, o.artifacts))
	}
	o.decide(rep)
	out := filepath.Join(o.artifacts, capacity.CompareFile)
	if err := capacity.WriteTypeComparison(out, rep); err != nil {
		return fmt.Errorf("compare %s: write the report: %w", o.model.ID, err)
	}
	fmt.Fprintf(o.stderr, "compare %s: wrote the report to %s\n", o.model.ID, out)
	if png, err := measure.RenderCompareChart(rep); err != nil {
		fmt.Fprintf(o.stderr, "compare %s: no chart: %v\n", o.model.ID, err)
	} else if err := capacity.WriteFileAtomic(filepath.Join(o.artifacts, compareChartFile), png); err != nil {
		return fmt.Errorf("compare %s: write the chart: %w", o.model.ID, err)
	} else {
		fmt.Fprintf(o.stderr, "compare %s: wrote the chart to %s\n", o.model.ID, filepath.Join(o.artifacts, compareChartFile))
	}
	if err := renderCompare(o.stdout, o.format, rep, out); err != nil {
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

// typeDir is the artifact set of one type: capacity.TypeArtifactDir (artifacts/<model>/<type>/), or <type>/
// inside --artifacts.
func (o *compareOpts) typeDir(it string) string {
	if o.artifacts == capacity.ArtifactDir(o.model.ID) {
		return capacity.TypeArtifactDir(o.model.ID, it)
	}
	return filepath.Join(o.artifacts, it)
}

// decide names the winner, the cheapest per day among the types that hold, and adds the comparison's notes.
func (o *compareOpts) decide(rep *capacity.TypeComparison) {
	for _, r := range rep.Rows {
		if r.Holds && (rep.Winner == "" || r.CostPerDayUSD < rep.Row(rep.Winner).CostPerDayUSD) {
			rep.Winner = r.InstanceType
		}
	}
	if rep.Local {
		rep.Notes = append(rep.Notes, "measured on the local emulator: the types differ only by the emulator's instance-type profiles (start-up phases, the twin's service time), not by real hardware")
	}
	cpu := false
	for _, r := range rep.Rows {
		cpu = cpu || r.CPUPercent != nil || r.MemoryMB != nil
	}
	if !cpu {
		rep.Notes = append(rep.Notes, "no CPU or memory figure: the container's EMF lines carry only its queue metrics (QueueDepth, QueueDepthPeak, QueueRejections), and no CPUUtilization datapoint of /aws/sagemaker/Endpoints was found for the qmax run (the emulator publishes none); SageMaker's MemoryUtilization is a percentage of the instance's memory and is not read as megabytes")
	}
}

// phase prints one progress line of a type on stderr.
func (o *compareOpts) phase(it, format string, args ...any) {
	fmt.Fprintf(o.stderr, "compare %s %s: %s\n", o.model.ID, it, fmt.Sprintf(format, args...))
}

// runType measures, plans and simulates one type and always destroys its endpoint. Its errors go into the row.
func (o *compareOpts) runType(ctx context.Context, cfg aws.Config, it string) (row capacity.TypeRow) {
	dir := o.typeDir(it)
	row = capacity.TypeRow{InstanceType: it, ArtifactDir: dir, PricePerHourUSD: o.price[it].usd, PriceSource: o.price[it].source}
	ep := compareEndpoint(o.model.ID, it)
	m := o.model.WithEndpoint(ep)
	dcl := cloud.NewDeployClients(cfg)
	sm := dcl.SageMaker
	deployed := false
	defer func() {
		if !deployed {
			return
		}
		// A fresh context: the run's may be canceled (SIGINT), and the endpoint must go all the same.
		dctx, cancel := context.WithTimeout(context.Background(), compareDestroyTimeout)
		defer cancel()
		o.phase(it, "destroy the endpoint %s (its endpoint config and model too)", ep)
		if _, err := cloud.DestroyEndpoint(dctx, sm, ep); err != nil {
			err = cloud.Diagnose(err)
			o.phase(it, "DESTROY FAILED: %v: the endpoint %s may still exist (and cost money while it runs): check it (aws sagemaker describe-endpoint --endpoint-name %s) and delete it, its endpoint config and its model by hand", err, ep, ep)
			o.destroyFailed.Add(1)
			row.Error = strings.TrimPrefix(row.Error+"; destroy: "+err.Error(), "; ")
			row.Holds = false
		}
	}()
	fail := func(phase string, err error) capacity.TypeRow {
		if ctx.Err() != nil {
			err = fmt.Errorf("interrupted (%w)", context.Cause(ctx))
		}
		err = cloud.Diagnose(err) // an AWS error as the preflight's one line with the fix
		o.phase(it, "%s failed: %v", phase, err)
		row.Error = phase + ": " + err.Error()
		return row
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fail("artifacts", err)
	}

	o.phase(it, "deploy the measurement endpoint %s (no autoscaling, unbounded queue)", ep)
	deployed = true
	off := false
	image, role := o.image, o.role
	if o.aws.Local {
		image, role = localImage, localRole
	}
	if _, err := cloud.DeployModel(ctx, dcl,
		cloud.DeployOptions{Model: m, InstanceType: it, Image: image, RoleARN: role, PlanPath: filepath.Join(dir, capacity.PlanFile),
			ModelDir: o.modelDir, AutoscalingOverride: &off}); err != nil {
		return fail("deploy", err)
	}

	o.phase(it, "drift: nothing may disturb the measurement")
	cl := cloud.NewClients(cfg)
	drift, err := cloud.Drift(ctx, cl.Drift(), cloud.DriftOptions{Model: m.ID, Endpoint: ep, Variant: models.VariantName, JournalDir: o.jdir,
		CatalogInstances: int32(m.InitialInstanceCount), NoPlanReasons: []string{"compare measures in the measurement configuration (no scaling)"}})
	if err != nil {
		return fail("drift", err)
	}
	if !drift.Clean() {
		var lines []string
		for _, f := range drift.Findings {
			if f.Severity == cloud.SeverityError {
				lines = append(lines, f.Code+" "+f.Subject+": "+f.Detail)
			}
		}
		return fail("drift", fmt.Errorf("%d error(s): %s", drift.Errors(), strings.Join(lines, "; ")))
	}

	qmaxPath, ttotalPath := filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile)
	cat := o.catalog.With(m)
	common := append([]string{"--model", m.ID, "--journal-dir", o.jdir, "--format", "text"}, o.awsArgs()...)
	if o.containerDir != "" {
		common = append(common, "--container-dir", o.containerDir)
	}
	sub := &prefixWriter{w: o.stderr, prefix: "  [" + it + "] "}
	o.phase(it, "qmax: the highest concurrency per instance within the SLO, then the rate staircase")
	qargs := append(append([]string{"--output", qmaxPath}, common...), strings.Fields(o.qmaxArgs)...)
	if err := runSub(ctx, qmaxCommand(), qargs, sub, func(c *cli.Context) error {
		q := newQMaxOpts(c, cat)
		if err := q.Validate(); err != nil {
			return err
		}
		return q.Execute(c.Context)
	}); err != nil {
		return fail("qmax", err)
	}
	o.phase(it, "ttotal: how long one more instance takes to serve")
	targs := append(append([]string{"--qmax", qmaxPath, "--output", ttotalPath}, common...), strings.Fields(o.ttotalArgs)...)
	if err := runSub(ctx, ttotalCommand(), targs, sub, func(c *cli.Context) error {
		t := newTTotalOpts(c, cat)
		if err := t.Validate(); err != nil {
			return err
		}
		return t.Execute(c.Context)
	}); err != nil {
		return fail("ttotal", err)
	}
	o.fillMeasured(ctx, cloud.NewClients(cfg).CloudWatch, &row, qmaxPath, ttotalPath)

	o.phase(it, "plan for peak %s rps, trough %s rps; simulate it on the trace %s", measure.FormatFloat(o.peakRPS), capacity.FormatNumber(o.troughRPS), o.tr.Name)
	if err := o.planAndSimulate(ctx, m, &row, qmaxPath, ttotalPath); err != nil {
		return fail("plan", err)
	}
	verdict := "holds"
	if !row.Holds {
		verdict = "does not hold: " + row.Finding
	}
	o.phase(it, "%s; %s USD a day", verdict, capacity.FormatNumber(row.CostPerDayUSD))
	return row
}

// fillMeasured copies the measurements into the row, and the container's CPU and memory during qmax where
// CloudWatch has them.
func (o *compareOpts) fillMeasured(ctx context.Context, cw cloud.MetricReadAPI, row *capacity.TypeRow, qmaxPath, ttotalPath string) {
	q, err := capacity.LoadQMax(qmaxPath)
	if err != nil {
		return
	}
	row.QMaxStall = q.QMax
	row.QMaxTTFAB = q.QMax
	if q.QMaxTTFABOnly != nil {
		row.QMaxTTFAB = *q.QMaxTTFABOnly
	}
	if t, err := capacity.LoadTTotal(ttotalPath); err == nil {
		row.TTotalS = t.TTotalS
	}
	// SageMaker's MemoryUtilization is a percentage of the instance's memory, not megabytes: MemoryMB stays nil
	// rather than a figure converted with a memory size this code does not know.
	row.CPUPercent = cloud.InstanceMetricMax(ctx, cw, q.Endpoint, models.VariantName, "CPUUtilization", q.StartedAt, q.EndedAt)
}

// planAndSimulate plans for the trace's peak and trough from the type's artifacts (tts-bench plan's code),
// writes the plan beside them, and simulates it on the trace (tts-bench simulate's code). It stops, writing no
// plan, when ctx is done.
func (o *compareOpts) planAndSimulate(ctx context.Context, m models.Model, row *capacity.TypeRow, qmaxPath, ttotalPath string) error {
	ms, err := capacity.LoadMeasurement(qmaxPath, ttotalPath)
	if err != nil {
		return err
	}
	if errs := ms.QMax.CheckRecords(filepath.Dir(qmaxPath)); len(errs) > 0 {
		return errors.New(capacity.RecordsRefusal(qmaxPath, errs))
	}
	opts := capacity.DefaultOptions(m)
	opts.PeakRPS, opts.TroughRPS = o.peakRPS, o.troughRPS
	p, err := capacity.FromArtifactsContext(ctx, m, ms, opts)
	if err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := capacity.WriteJSON(filepath.Join(row.ArtifactDir, capacity.PlanFile), p); err != nil {
		return err
	}
	row.SafeRPS = p.Derived.SafeRPS
	row.MinInstances, row.MaxInstances = p.Derived.MinInstances, p.Derived.MaxInstances
	row.Feasible = p.Feasible()
	sim, err := capacity.CompareContext(ctx, o.tr, capacity.Setup{Plan: p, PricePerHour: row.PricePerHourUSD, AllowedMaxInstances: m.Scaling.MaxInstances})
	if err != nil {
		return fmt.Errorf("simulate: %w", err)
	}
	r := sim.Plan
	row.ViolationMinutes, row.InstanceHours, row.Requests = r.ViolationMinutes, r.InstanceHours, r.Offered
	if d := o.tr.Duration.Hours(); d > 0 {
		row.CostPerDayUSD = r.InstanceHours * row.PricePerHourUSD * 24 / d
	}
	if r.Offered > 0 {
		row.CostPer1000USD = r.InstanceHours * row.PricePerHourUSD / r.Offered * 1000
	}
	row.Holds = row.Feasible && r.Holds()
	switch {
	case !row.Feasible:
		var failed []string
		for _, f := range p.Failed() {
			failed = append(failed, f.Name+": "+f.Detail)
		}
		row.Finding = "the plan is infeasible: " + strings.Join(failed, "; ")
	case !r.Holds():
		row.Finding = fmt.Sprintf("%d violation minute(s) and %d flap(s) on %s", r.ViolationMinutes, len(r.Flaps), o.tr.Name)
		if r.Worst != nil {
			row.Finding += fmt.Sprintf("; worst minute %d: %s", r.Worst.Minute, r.Worst.Why)
		}
	}
	return nil
}

// awsArgs are the flags that point a sub-command where compare points.
func (o *compareOpts) awsArgs() []string {
	if o.aws.Local {
		return []string{"--local", "--state-dir", o.aws.StateDir}
	}
	var a []string
	if o.aws.Region != "" {
		a = append(a, "--region", o.aws.Region)
	}
	if o.aws.Profile != "" {
		a = append(a, "--profile", o.aws.Profile)
	}
	return a
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

// prefixWriter writes every line with a prefix, so that a sub-command's output reads as the type's.
type prefixWriter struct {
	mu     sync.Mutex
	w      io.Writer
	prefix string
	mid    bool
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []byte
	for _, c := range b {
		if !p.mid {
			out = append(out, p.prefix...)
			p.mid = true
		}
		out = append(out, c)
		if c == '\n' {
			p.mid = false
		}
	}
	if _, err := p.w.Write(out); err != nil {
		return 0, err
	}
	return len(b), nil
}
