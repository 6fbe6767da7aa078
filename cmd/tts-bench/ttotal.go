package main

import (
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

const ttotalDescription = `ttotal measures T_total: the time from asking SageMaker for one more instance until the
endpoint serves the load healthily again, as a timeline of stages whose durations sum exactly to it.

Against the endpoint speech-<model> (transport sagemaker-stream, the same as the qmax artifact's):
  the qmax artifact must be for this model, endpoint and transport and measured on the container source
  deployed (--container-dir's digest); drift must be clean (refused with the findings unless --force); then
  a journal is written (.state/journals/<endpoint>.json), dynamic scaling is suspended with the instance
  count pinned where it is, and:
  1. a closed-loop probe load starts (load_applied) and warms up for --warmup: by default N × the
     concurrency of the qmax artifact's first step past Q_max whose p95 TTFAB exceeds 1.2 × the SLO (the
     highest step above the SLO when none does), N the instances the endpoint runs, so that the fleet is
     past its Q_max before the scale-out; --probe-concurrency overrides it;
  2. the probe's p95 TTFAB over the last --window is measured and the recovery threshold set: min(SLO,
     the qmax curve's p95 on the busiest instance after the scale-out (⌈concurrency ÷ (N+1)⌉) × the
     slowdown this run shows before the scale-out (its p95 ÷ the curve's at the same load, at least 1) ×
     --tolerance); then the desired instance count is raised by one (desired_set: the clock starts);
  3. DescribeEndpoint is polled every --poll-interval, every --fine-poll-interval once in_service is near
     (the container printed ready, or ActivatingTraffic), backing off on ThrottlingException (recorded in
     the artifact) (VariantStatus: Updating, ActivatingTraffic, ...; in_service once InService with the
     new count) and CloudWatch Logs is watched for the new instance's stream
     (/aws/sagemaker/Endpoints/<endpoint>, AllTraffic/<instance>): its first event (instance_logging)
     and the container's STAGE lines (container_started, weights_verified, engine_loaded, warmup_done,
     ready);
  4. first_served_by_new_instance: the first probe response naming an instance (the container's
     X-Amzn-SageMaker-Custom-Attributes: instance-id=…, passed back by SageMaker) that no response named
     before the scale-out;
  5. traffic_recovered: once the new instance has served, the p95 TTFAB of the probe's requests sent after
     in_service over the last --window is at or under the threshold, over at least --min-samples requests.
     The recovery gets --recovery-windows windows from when the new instance served and the endpoint was
     InService; without it the artifact is written with the stages reached and why (exit 1).
  At the end, on error, on SIGINT and on SIGTERM the journaled state is restored (the instance count goes
  back, after waiting out Updating) and the journal removed; after kill -9 run tts-bench thaw.
After --max-wait without traffic_recovered the artifact is written partial, naming the missing stages and
why (exit 1). Container stage times are the instance's wall clock; the client's on a monotonic clock
anchored to wall time once; a stage earlier than its predecessor is clamped to it and flagged. T_total is
printed with its uncertainty: ± the gap of the DescribeEndpoint read its end depends on.

Outputs, each written atomically: --output (ttotal.json) and the waterfall chart beside it (<name>.svg);
the stage table on stdout (--format json: the artifact). --dry-run makes no AWS call: it prints the actions and the expected duration.

Examples:
  tts-bench ttotal --model espeak-ng --local --qmax artifacts/espeak-ng/qmax.json --dry-run
  tts-bench ttotal --model espeak-ng --local --qmax artifacts/espeak-ng/qmax.json --warmup 5s
  tts-bench ttotal --model kokoro-82m --qmax artifacts/kokoro-82m/qmax.json`

// Defaults of ttotal.
const (
	DefaultWarmup       = 30 * time.Second
	DefaultPollInterval = 10 * time.Second
	// DefaultFinePollInterval is the poll interval once in_service is near.
	DefaultFinePollInterval = 2 * time.Second
	// DefaultRecoveryWindows is how many windows the recovery gets once the new instance has served.
	DefaultRecoveryWindows = 10
	// probePastSLO is the margin by which the default probe's qmax step exceeds the SLO, so that this run's
	// noise keeps the fleet past it.
	probePastSLO = 1.2
	// DefaultLocalPollInterval is the poll interval against the emulator.
	DefaultLocalPollInterval = time.Second
	DefaultTolerance         = 1.25
	DefaultRecoveryWindow    = 30 * time.Second
	DefaultMinSamples        = 20
	DefaultMaxWait           = 1500 * time.Second
	// maxTTotalWait bounds --max-wait and --warmup (a day, as capacity.MaxTTotalS).
	maxTTotalWait = capacity.MaxTTotalS * time.Second
)

func ttotalCommand() *cli.Command {
	return &cli.Command{
		Name:        "ttotal",
		Usage:       "measure T_total: the time from asking for one more instance until it serves healthy traffic, as a timeline of stages",
		UsageText:   "tts-bench ttotal [--model ID] [--qmax FILE] [--local | --region R --profile P] [options]",
		Description: ttotalDescription,
		Flags: append([]cli.Flag{
			modelFlag("catalog id of the model to measure"),
			&cli.StringFlag{Name: "qmax", Usage: "the qmax artifact of this model, endpoint and transport (default artifacts/<model>/qmax.json)"},
			&cli.StringFlag{Name: "transport", Value: capacity.TransportSageMakerStream, Usage: "how the probe is sent: sagemaker-stream (the only one that can see a new instance); must equal the qmax artifact's"},
			&cli.IntFlag{Name: "probe-concurrency", Usage: "closed-loop probe: requests held in flight (default: the instances × the qmax artifact's first step past Q_max whose p95 exceeds 1.2 × the SLO)"},
			&cli.DurationFlag{Name: "warmup", Value: DefaultWarmup, Usage: "run the probe this long before raising the instance count"},
			&cli.DurationFlag{Name: "poll-interval", Value: DefaultPollInterval, Usage: "how often DescribeEndpoint and CloudWatch Logs are read; 1s with --local unless given"},
			&cli.DurationFlag{Name: "fine-poll-interval", Value: DefaultFinePollInterval, Usage: "how often DescribeEndpoint is read once in_service is near (the new container is ready or the variant ActivatingTraffic), when shorter than --poll-interval"},
			&cli.Float64Flag{Name: "tolerance", Value: DefaultTolerance, Usage: "traffic is recovered when the probe's p95 TTFAB is at most min(SLO, the qmax curve's p95 on the busiest instance after the scale-out × this run's slowdown × this)"},
			&cli.IntFlag{Name: "recovery-windows", Value: DefaultRecoveryWindows, Usage: "once the new instance has served and the endpoint is InService, wait at most this many --window for traffic_recovered"},
			&cli.DurationFlag{Name: "window", Value: DefaultRecoveryWindow, Usage: "the sliding window of probe requests (by end time) the recovery p95 is taken over"},
			&cli.IntFlag{Name: "min-samples", Value: DefaultMinSamples, Usage: "requests sent after in_service the window must hold before traffic can count as recovered"},
			&cli.DurationFlag{Name: "max-wait", Value: DefaultMaxWait, Usage: "give up this long after desired_set and write a partial artifact naming the missing stages"},
			&cli.DurationFlag{Name: "request-timeout", Value: bench.DefaultRequestTimeout, Usage: "bound on one probe request (a timeout counts against the window)"},
			cliflags.Force("measure even when drift reports errors"),
			cliflags.DryRun("make no AWS call: print the actions and the expected duration"),
			cliflags.Output("where to write the artifact (default artifacts/<model>/ttotal.json); the chart goes beside it"),
			cliflags.Format("what to print on stdout at the end: text or json (the artifact); --dry-run prints its plan as text"),
			cliflags.ContainerDir("the container source tree whose digest must equal the qmax artifact's"),
			cliflags.JournalDir(cloud.DefaultJournalDir, "where the freeze journal is kept"),
		}, awsenv.Flags()...),
		Action: catalogAction(newTTotalOpts),
	}
}

// ttotalOpts is one tts-bench ttotal: the command line as given and what Validate resolves from it.
type ttotalOpts struct {
	args                 []string
	modelID, qmaxPath    string
	transport            string
	probeConcurrency     int
	probeSet             bool
	warmup, poll, window time.Duration
	finePoll             time.Duration
	recoveryWindows      int
	format               string
	pollSet              bool
	tolerance            float64
	minSamples           int
	maxWait              time.Duration
	requestTimeout       time.Duration
	force, dryRun        bool
	output, containerDir string
	journalDir           string
	aws                  awsenv.Settings
	catalog              models.Catalog
	stdout, stderr       io.Writer
	// env is the client factory, the signals and the command line of the process.
	env runEnv

	// Set by Validate. probePerInstance and probeBasis are the default probe's concurrency per instance and
	// where it comes from (without --probe-concurrency); baselineP95Ms the qmax curve's p95 at the probe
	// concurrency on one instance (as printed by --dry-run).
	probePerInstance int
	probeBasis       string
	model            models.Model
	qmax             *capacity.QMax
	qmaxSHA256       string
	baselineP95Ms    float64
	chartPath        string
	containerDigest  string
}

func newTTotalOpts(c *cli.Context, cat models.Catalog) *ttotalOpts {
	return &ttotalOpts{
		args: c.Args().Slice(), modelID: c.String("model"), qmaxPath: c.String("qmax"), transport: c.String("transport"),
		probeConcurrency: c.Int("probe-concurrency"), probeSet: c.IsSet("probe-concurrency"), warmup: c.Duration("warmup"), poll: c.Duration("poll-interval"),
		finePoll: c.Duration("fine-poll-interval"), recoveryWindows: c.Int("recovery-windows"), format: c.String("format"),
		pollSet: c.IsSet("poll-interval"), window: c.Duration("window"), tolerance: c.Float64("tolerance"),
		minSamples: c.Int("min-samples"), maxWait: c.Duration("max-wait"), requestTimeout: c.Duration("request-timeout"),
		force: c.Bool("force"), dryRun: c.Bool("dry-run"), output: c.String("output"), containerDir: c.String("container-dir"),
		journalDir: c.String("journal-dir"), aws: awsenv.FromContext(c), catalog: cat, stdout: c.App.Writer, stderr: c.App.ErrWriter,
		env: processEnv(c),
	}
}

// Validate checks the whole command line and the qmax artifact and reports every problem at once, as one
// usage error (exit 2), each naming the flag and the fix.
func (o *ttotalOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.args) > 0 {
		bad("ttotal takes no arguments, got %q: name the model with --model and the qmax artifact with --qmax, see tts-bench ttotal --help", o.args)
	}
	m, err := o.catalog.Get(o.modelID)
	modelKnown := err == nil
	if !modelKnown {
		bad("--model: %w", err)
	} else {
		o.model = m
	}
	switch o.transport {
	case capacity.TransportSageMakerStream:
	case capacity.TransportHTTP:
		bad("--transport http: a probe sent to one container cannot see a new instance join the endpoint: ttotal probes over sagemaker-stream; measure Q_max over sagemaker-stream too (tts-bench qmax without --transport http)")
	default:
		bad("--transport %q: want sagemaker-stream", o.transport)
	}
	if o.probeSet && (o.probeConcurrency < 1 || o.probeConcurrency > capacity.MaxConcurrency) {
		bad("--probe-concurrency %d: want 1 to %d requests in flight", o.probeConcurrency, capacity.MaxConcurrency)
	}
	if !o.pollSet && o.aws.Local {
		o.poll = DefaultLocalPollInterval
	}
	for _, d := range []struct {
		flag   string
		v, min time.Duration
	}{{"--warmup", o.warmup, 0}, {"--poll-interval", o.poll, 100 * time.Millisecond}, {"--fine-poll-interval", o.finePoll, 100 * time.Millisecond}, {"--window", o.window, 100 * time.Millisecond},
		{"--max-wait", o.maxWait, time.Second}, {"--request-timeout", o.requestTimeout, time.Millisecond}} {
		if d.v < d.min || d.v > maxTTotalWait {
			bad("%s %s: want %s to %s, as a Go duration such as 30s or 25m", d.flag, d.v, d.min, maxTTotalWait)
		}
	}
	if o.poll > o.maxWait && o.maxWait > 0 {
		bad("--poll-interval %s is longer than --max-wait %s: poll more often or wait longer", o.poll, o.maxWait)
	}
	if !(o.tolerance >= 1 && o.tolerance <= 10) {
		bad("--tolerance %g: want a factor from 1 to 10 on the qmax curve's p95 (1.25 = 25%% above it)", o.tolerance)
	}
	if o.minSamples < 1 || o.minSamples > capacity.MaxCount {
		bad("--min-samples %d: want 1 to %d", o.minSamples, capacity.MaxCount)
	}
	if o.recoveryWindows < 1 || o.recoveryWindows > 1000 {
		bad("--recovery-windows %d: want 1 to 1000 windows", o.recoveryWindows)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.aws.Validate()...)

	if o.qmaxPath == "" && modelKnown {
		o.qmaxPath = capacity.DefaultQMaxPath(m.ID)
	}
	if modelKnown {
		errs = append(errs, o.checkQMax()...)
	}
	if o.output == "" && modelKnown {
		o.output = capacity.DefaultTTotalPath(m.ID)
	}
	if o.output != "" {
		errs = append(errs, o.resolveOutputs()...)
	}
	if o.containerDir == "" {
		bad("--container-dir: is empty: give the container source tree (container)")
	} else if !o.dryRun && o.qmax != nil {
		if o.containerDigest, err = capacity.SourceDigest(o.containerDir); err != nil {
			bad("--container-dir: %w: run from the repository root or pass --container-dir", err)
		} else if o.containerDigest != o.qmax.ContainerDigest {
			bad("--qmax %s: was measured on container source %s, but %s is %s: T_total must be measured on the container Q_max was: re-run tts-bench qmax on the deployed container (or deploy the measured one)",
				o.qmaxPath, o.qmax.ContainerDigest, o.containerDir, o.containerDigest)
		}
	}
	if modelKnown {
		if _, err := cloud.JournalPath(o.journalDir, m.EndpointName()); err != nil {
			bad("--journal-dir: %w", err)
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

// checkQMax loads and verifies the qmax artifact, refuses one for another model, endpoint or transport, and
// derives the recovery threshold from its curve at the probe concurrency.
func (o *ttotalOpts) checkQMax() []error {
	q, err := capacity.LoadQMax(o.qmaxPath)
	if err != nil {
		return []error{fmt.Errorf("--qmax: %w: measure it with tts-bench qmax --model %s", err, o.model.ID)}
	}
	var errs []error
	if v := q.Verify(); len(v) > 0 {
		return []error{fmt.Errorf("--qmax %s: not a valid qmax artifact: %w: re-run tts-bench qmax", o.qmaxPath, errors.Join(v...))}
	}
	if q.DryRun {
		errs = append(errs, fmt.Errorf("--qmax %s: is a dry run: measure Q_max first (tts-bench qmax without --dry-run)", o.qmaxPath))
	}
	if q.Model != o.model.ID {
		errs = append(errs, fmt.Errorf("--qmax %s: is for model %s, not %s: pass the %s artifact or --model %s", o.qmaxPath, q.Model, o.model.ID, o.model.ID, q.Model))
	}
	if q.Endpoint != o.model.EndpointName() {
		errs = append(errs, fmt.Errorf("--qmax %s: was measured on %s, not the endpoint %s: measure Q_max on the endpoint ttotal scales (tts-bench qmax --model %s)", o.qmaxPath, q.Endpoint, o.model.EndpointName(), o.model.ID))
	}
	if q.Transport != o.transport {
		errs = append(errs, fmt.Errorf("--qmax %s: was measured over %s, but ttotal probes over %s: the recovery threshold must come from the same transport: re-run tts-bench qmax --transport %s", o.qmaxPath, q.Transport, o.transport, o.transport))
	}
	if !o.probeSet {
		c, basis, ok := defaultProbe(q)
		if !ok {
			errs = append(errs, fmt.Errorf("--qmax %s: no usable step has a p95 TTFAB above the SLO %d ms, so the default probe cannot put the fleet past Q_max: extend the staircase past Q_max (tts-bench qmax --max-concurrency) or pass --probe-concurrency", o.qmaxPath, q.SLOTTFABMs))
		}
		o.probeConcurrency, o.probePerInstance, o.probeBasis = c, c, basis
	}
	p95, ok := qmaxP95At(q, o.probeConcurrency)
	if !ok && o.probeConcurrency > 0 {
		lo, hi := qmaxRange(q)
		errs = append(errs, fmt.Errorf("--probe-concurrency %d: the qmax curve of %s covers concurrency %d to %d only: choose a probe concurrency inside it", o.probeConcurrency, o.qmaxPath, lo, hi))
	}
	if len(errs) > 0 {
		return errs
	}
	digest, err := capacity.FileDigest(o.qmaxPath)
	if err != nil {
		return []error{fmt.Errorf("--qmax: %w", err)}
	}
	o.qmax, o.qmaxSHA256, o.baselineP95Ms = q, digest, p95
	return nil
}

// defaultProbe is the default probe concurrency per instance: the qmax artifact's first usable step whose
// p95 TTFAB exceeds probePastSLO × the SLO (the highest usable step above the SLO when none does), so that
// the fleet is past its Q_max before the scale-out; false when no step is above the SLO.
func defaultProbe(q *capacity.QMax) (int, string, bool) {
	slo := float64(q.SLOTTFABMs)
	var above *capacity.QMaxStep
	for _, s := range qmaxCurve(q) {
		if s.TTFABP95Ms > probePastSLO*slo {
			return s.Concurrency, fmt.Sprintf("qmax: the first step past Q_max %d whose p95 TTFAB (%.0f ms) exceeds %g × the SLO (%d ms), concurrency %d", q.QMax, s.TTFABP95Ms, probePastSLO, q.SLOTTFABMs, s.Concurrency), true
		}
		if s.TTFABP95Ms > slo {
			above = &s
		}
	}
	if above == nil {
		return 0, "", false
	}
	return above.Concurrency, fmt.Sprintf("qmax: the highest step past Q_max %d whose p95 TTFAB (%.0f ms) exceeds the SLO (%d ms), concurrency %d", q.QMax, above.TTFABP95Ms, q.SLOTTFABMs, above.Concurrency), true
}

// qmaxCurve is the p95 TTFAB curve of the artifact's usable steps that served requests, by concurrency.
func qmaxCurve(q *capacity.QMax) []capacity.QMaxStep {
	var steps []capacity.QMaxStep
	for _, s := range q.Steps {
		if s.Usable && s.OKCount > 0 {
			steps = append(steps, s)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Concurrency < steps[j].Concurrency })
	return steps
}

// qmaxP95At interpolates the p95 TTFAB linearly between the measured concurrencies around c; false when c
// lies outside the measured range.
func qmaxP95At(q *capacity.QMax, c int) (float64, bool) {
	steps := qmaxCurve(q)
	for i, s := range steps {
		if s.Concurrency == c {
			return s.TTFABP95Ms, true
		}
		if i > 0 && steps[i-1].Concurrency < c && c < s.Concurrency {
			a := steps[i-1]
			f := float64(c-a.Concurrency) / float64(s.Concurrency-a.Concurrency)
			return a.TTFABP95Ms + f*(s.TTFABP95Ms-a.TTFABP95Ms), true
		}
	}
	return 0, false
}

// qmaxP95AtF is qmaxP95At at a concurrency that need not be whole (a probe spread over instances): linear
// between the measured concurrencies around c, the lowest step's p95 below it; false above the highest.
func qmaxP95AtF(q *capacity.QMax, c float64) (float64, bool) {
	steps := qmaxCurve(q)
	if len(steps) == 0 || c > float64(steps[len(steps)-1].Concurrency) {
		return 0, false
	}
	if c <= float64(steps[0].Concurrency) {
		return steps[0].TTFABP95Ms, true
	}
	for i := 1; i < len(steps); i++ {
		a, b := steps[i-1], steps[i]
		if c <= float64(b.Concurrency) {
			f := (c - float64(a.Concurrency)) / float64(b.Concurrency-a.Concurrency)
			return a.TTFABP95Ms + f*(b.TTFABP95Ms-a.TTFABP95Ms), true
		}
	}
	return 0, false
}

// qmaxRange is the lowest and highest usable measured concurrency.
func qmaxRange(q *capacity.QMax) (int, int) {
	steps := qmaxCurve(q)
	if len(steps) == 0 {
		return 0, 0
	}
	return steps[0].Concurrency, steps[len(steps)-1].Concurrency
}

// resolveOutputs derives the chart path from --output and checks both can be written.
func (o *ttotalOpts) resolveOutputs() []error {
	base := filepath.Base(o.output)
	if !strings.HasSuffix(base, ".json") || base == ".json" {
		return []error{fmt.Errorf("--output %s: want a file name ending in .json, e.g. artifacts/<model>/ttotal.json", o.output)}
	}
	o.chartPath = strings.TrimSuffix(o.output, ".json") + ".svg"
	var errs []error
	for _, p := range []string{o.output, o.chartPath} {
		if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("--output: %s exists and is not a regular file: remove it or choose another --output", p))
		}
	}
	if fi, err := os.Stat(filepath.Dir(o.output)); err == nil && !fi.IsDir() {
		errs = append(errs, fmt.Errorf("--output %s: %s is not a directory: choose another --output", o.output, filepath.Dir(o.output)))
	}
	return errs
}

// printPlan prints what a run would do, without doing any of it (--dry-run).
func (o *ttotalOpts) printPlan(w io.Writer) error {
	var b strings.Builder
	ep := o.model.EndpointName()
	fmt.Fprintf(&b, "ttotal %s, DRY RUN: no AWS call is made and nothing is written.\n\n", o.model.ID)
	row := func(k, format string, args ...any) { fmt.Fprintf(&b, "  %-15s %s\n", k, fmt.Sprintf(format, args...)) }
	where := "AWS (standard credential chain)"
	if o.aws.Local {
		where = "the local emulator of " + o.aws.StateDir + " (--local)"
	}
	row("target", "endpoint %s, variant %s, transport %s, on %s", ep, models.VariantName, o.transport, where)
	row("qmax", "%s (%s): p95 TTFAB %.1f ms at concurrency %d; SLO %d ms", o.qmaxPath, o.qmaxSHA256, o.baselineP95Ms, o.probeConcurrency, o.qmax.SLOTTFABMs)
	if o.probeSet {
		row("probe", "%d requests in flight (closed loop, --probe-concurrency), warm-up %s", o.probeConcurrency, o.warmup)
	} else {
		row("probe", "N × %d requests in flight (closed loop; N the instances the endpoint runs, read at the start; %d with one), warm-up %s", o.probePerInstance, o.probePerInstance, o.warmup)
		row("", "%s", o.probeBasis)
	}
	after, _ := qmaxP95AtF(o.qmax, float64((o.probeConcurrency+1)/2))
	row("recovered", "once the new instance has served: p95 TTFAB of the requests sent after in_service over the last %s (at least %d) ≤ min(SLO %d ms, the qmax curve's p95 on the busiest instance after the scale-out × this run's slowdown before it × %g); with one instance before it and no slowdown %.1f ms",
		o.window, o.minSamples, o.qmax.SLOTTFABMs, o.tolerance, min(float64(o.qmax.SLOTTFABMs), after*o.tolerance))
	row("", "at most %d windows (%s) after the new instance served and the endpoint was InService, then the artifact is written with the stages reached (exit 1)", o.recoveryWindows, time.Duration(o.recoveryWindows)*o.window)
	row("polling", "every %s; every %s once in_service is near (ready or ActivatingTraffic); ThrottlingException backs off, recorded", o.poll, min(o.poll, o.finePoll))
	row("estimate", "%s warm-up + T_total (minutes on AWS: about 260 s for Kokoro on ml.g5.xlarge; seconds on the emulator without a timing profile), at most %s (--max-wait), then the restore removes the instance again", o.warmup, o.maxWait)
	row("", "at most %s before the restore", o.warmup+o.maxWait)
	row("outputs", "%s, %s (each atomically), the stage table on stdout", o.output, o.chartPath)
	b.WriteString("\nControl-plane actions, in order:\n")
	rid := capacity.ResourceID(ep, models.VariantName)
	journal, _ := cloud.JournalPath(o.journalDir, ep)
	acts := []string{
		fmt.Sprintf("drift (read only): DescribeEndpoint %s; DescribeScalableTargets and DescribeScalingPolicies %s; DescribeAlarms; journals in %s: refuse on an error-level finding%s", ep, rid, o.journalDir, map[bool]string{true: " (--force: warn only)", false: " unless --force"}[o.force]),
		fmt.Sprintf("DescribeEndpoint %s: refuse unless InService; read the desired instance count N", ep),
		fmt.Sprintf("DescribeLogStreams /aws/sagemaker/Endpoints/%s prefix %s/: the instances' streams before the scale-out", ep, models.VariantName),
		fmt.Sprintf("write the journal %s (N, min/max capacity, SuspendedState), then RegisterScalableTarget %s with MinCapacity=MaxCapacity=N and all scaling suspended (only when a target is registered)", journal, rid),
		fmt.Sprintf("probe: InvokeEndpointWithResponseStream %s, %s requests in flight (one SDK client per worker) until the end; each response's CustomAttributes names its instance", ep, map[bool]string{true: fmt.Sprint(o.probeConcurrency), false: fmt.Sprintf("N × %d", o.probePerInstance)}[o.probeSet]),
		fmt.Sprintf("after the warm-up: UpdateEndpointWeightsAndCapacities %s %s DesiredInstanceCount=N+1 (desired_set)", ep, models.VariantName),
		fmt.Sprintf("every %s (%s once in_service is near): DescribeEndpoint %s (VariantStatus, InService with N+1 instances); DescribeLogStreams and GetLogEvents for the new stream %s/<instance>", o.poll, min(o.poll, o.finePoll), ep, models.VariantName),
		fmt.Sprintf("at the end, on an error, on SIGINT and on SIGTERM: wait for InService, put the target back, UpdateEndpointWeightsAndCapacities back to N and wait for InService, then delete the journal (after kill -9: tts-bench thaw --endpoint %s)", ep),
	}
	for i, a := range acts {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// renderTTotalTable prints the timeline for humans (stdout): each stage's time from the clock start, its
// duration and share of T_total, its source and flags, then the split and what is missing.
func renderTTotalTable(w io.Writer, t *capacity.TTotal) error {
	var b strings.Builder
	state := "complete"
	if len(t.MissingStages) > 0 {
		state = "PARTIAL"
	}
	fmt.Fprintf(&b, "T_total of %s on %s over %s: %s (%d → %d instances, %s)\n", t.Model, t.InstanceType, t.Transport, formatTTotal(t), t.FromInstances, t.ToInstances, state)
	var zero time.Time
	for _, s := range t.Timeline {
		if s.Stage == t.ClockStart {
			zero = s.At
		}
	}
	dur := map[string]float64{}
	for _, d := range t.Durations {
		dur[d.To] = d.DurationS
	}
	fmt.Fprintf(&b, "%-20s %10s %12s %7s  %-9s %s\n", "stage", "at (s)", "duration (s)", "share", "source", "flags")
	started := false
	for _, s := range t.Timeline {
		d, share := "-", "-"
		if started {
			d = fmt.Sprintf("%.3f", dur[s.Stage])
			if t.TTotalS > 0 {
				share = fmt.Sprintf("%.1f%%", 100*dur[s.Stage]/t.TTotalS)
			}
		}
		if s.Stage == t.ClockStart {
			started = true
		}
		fmt.Fprintf(&b, "%-20s %10.3f %12s %7s  %-9s %s\n", s.Stage, s.At.Sub(zero).Seconds(), d, share, s.Source, strings.Join(s.Flags, "; "))
	}
	fmt.Fprintf(&b, "dominant stage: %s; platform %.3f s (%.1f%%, before container_started), container %.3f s (%.1f%%)\n",
		t.DominantStage, t.PlatformS, 100*t.PlatformShare, t.ContainerS, 100*t.ContainerShare)
	if p := t.Probe; p != nil {
		fmt.Fprintf(&b, "probe: %d in flight (%s); p95 TTFAB %.1f ms before the scale-out (peak %.1f ms before in_service, SLO %d ms: %s); recovered at ≤ %.1f ms; last window %.1f ms over %d requests\n",
			p.Concurrency, p.ConcurrencyBasis, p.P95BeforeScaleOutMs, p.PeakP95BeforeInServiceMs, p.SLOTTFABMs,
			map[bool]string{true: "past it", false: "NEVER PAST IT: no recovery to measure"}[p.ExceededSLOBeforeInService], p.RecoveryThresholdMs, p.P95LastWindowMs, p.SamplesLastWindow)
		if p.NewInstance != "" {
			fmt.Fprintf(&b, "new instance: %s (before the scale-out: %s)\n", p.NewInstance, strings.Join(p.InstancesBeforeScaleOut, ", "))
		}
	}
	if pl := t.Polling; pl != nil && len(pl.Throttled) > 0 {
		total := 0.0
		for _, e := range pl.Throttled {
			total += e.WaitS
		}
		fmt.Fprintf(&b, "throttled: %d read(s), %.1f s of back-off in all\n", len(pl.Throttled), total)
	}
	if len(t.MissingStages) > 0 {
		fmt.Fprintf(&b, "missing stages: %s\n", strings.Join(t.MissingStages, ", "))
	}
	if t.IncompleteReason != "" {
		fmt.Fprintf(&b, "why: %s\n", t.IncompleteReason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// formatTTotal prints T_total with its uncertainty, to the precision the uncertainty allows: "283 s ± 2 s",
// "14.2 s ± 0.9 s"; without a recorded uncertainty, to a tenth of a second, saying so; ending on a stage no
// poll delays (a partial run's first_served_by_new_instance or a container line), to the hundredth.
func formatTTotal(t *capacity.TTotal) string {
	if t.TTotalUncertaintyS == nil {
		return fmt.Sprintf("%.1f s (uncertainty not recorded)", t.TTotalS)
	}
	u := *t.TTotalUncertaintyS
	switch {
	case u == 0:
		return fmt.Sprintf("%.2f s (it ends on %s, a time no poll delays)", t.TTotalS, t.Timeline[len(t.Timeline)-1].Stage)
	case u >= 1:
		return fmt.Sprintf("%.0f s ± %.0f s", t.TTotalS, math.Ceil(u))
	case u >= 0.1:
		return fmt.Sprintf("%.1f s ± %.1f s", t.TTotalS, math.Ceil(u*10)/10)
	default:
		return fmt.Sprintf("%.2f s ± %.2f s", t.TTotalS, math.Ceil(u*100)/100)
	}
}
