package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
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

// ttotalOpts is one tts-bench ttotal: the command line as given, and the measurement (TTotal) Validate resolves
// from it.
type ttotalOpts struct {
	measure.TTotal
	args         []string
	modelID      string
	pollSet      bool
	dryRun       bool
	containerDir string
	aws          awsenv.Settings
	catalog      models.Catalog

	// Set by Validate: the qmax curve's p95 at the probe concurrency on one instance (as printed by --dry-run),
	// and the container digest checked against the qmax artifact's.
	baselineP95Ms   float64
	containerDigest string
}

func newTTotalOpts(c *cli.Context, cat models.Catalog) *ttotalOpts {
	o := &ttotalOpts{
		args: c.Args().Slice(), modelID: c.String("model"), pollSet: c.IsSet("poll-interval"), dryRun: c.Bool("dry-run"),
		containerDir: c.String("container-dir"), catalog: cat,
		TTotal: measure.TTotal{
			QMaxPath: c.String("qmax"), Transport: c.String("transport"),
			ProbeConcurrency: c.Int("probe-concurrency"), ProbeSet: c.IsSet("probe-concurrency"), Warmup: c.Duration("warmup"), Poll: c.Duration("poll-interval"),
			FinePoll: c.Duration("fine-poll-interval"), RecoveryWindows: c.Int("recovery-windows"), Format: c.String("format"),
			Window: c.Duration("window"), Tolerance: c.Float64("tolerance"),
			MinSamples: c.Int("min-samples"), MaxWait: c.Duration("max-wait"), RequestTimeout: c.Duration("request-timeout"),
			Force: c.Bool("force"), Output: c.String("output"),
			JournalDir: c.String("journal-dir"), Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
			Env: processEnv(c),
		},
	}
	o.aws = awsenv.FromContext(c)
	o.AWSConfig, o.Emulator, o.CloudWatchCompression = o.aws.Config, o.aws.Local, o.aws.Compression
	return o
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
		o.Model = m
	}
	switch o.Transport {
	case capacity.TransportSageMakerStream:
	case capacity.TransportHTTP:
		bad("--transport http: a probe sent to one container cannot see a new instance join the endpoint: ttotal probes over sagemaker-stream; measure Q_max over sagemaker-stream too (tts-bench qmax without --transport http)")
	default:
		bad("--transport %q: want sagemaker-stream", o.Transport)
	}
	if o.ProbeSet && (o.ProbeConcurrency < 1 || o.ProbeConcurrency > capacity.MaxConcurrency) {
		bad("--probe-concurrency %d: want 1 to %d requests in flight", o.ProbeConcurrency, capacity.MaxConcurrency)
	}
	if !o.pollSet && o.aws.Local {
		o.Poll = DefaultLocalPollInterval
	}
	for _, d := range []struct {
		flag   string
		v, min time.Duration
	}{{"--warmup", o.Warmup, 0}, {"--poll-interval", o.Poll, 100 * time.Millisecond}, {"--fine-poll-interval", o.FinePoll, 100 * time.Millisecond}, {"--window", o.Window, 100 * time.Millisecond},
		{"--max-wait", o.MaxWait, time.Second}, {"--request-timeout", o.RequestTimeout, time.Millisecond}} {
		if d.v < d.min || d.v > maxTTotalWait {
			bad("%s %s: want %s to %s, as a Go duration such as 30s or 25m", d.flag, d.v, d.min, maxTTotalWait)
		}
	}
	if o.Poll > o.MaxWait && o.MaxWait > 0 {
		bad("--poll-interval %s is longer than --max-wait %s: poll more often or wait longer", o.Poll, o.MaxWait)
	}
	if !(o.Tolerance >= 1 && o.Tolerance <= 10) {
		bad("--tolerance %g: want a factor from 1 to 10 on the qmax curve's p95 (1.25 = 25%% above it)", o.Tolerance)
	}
	if o.MinSamples < 1 || o.MinSamples > capacity.MaxCount {
		bad("--min-samples %d: want 1 to %d", o.MinSamples, capacity.MaxCount)
	}
	if o.RecoveryWindows < 1 || o.RecoveryWindows > 1000 {
		bad("--recovery-windows %d: want 1 to 1000 windows", o.RecoveryWindows)
	}
	if err := cliflags.CheckFormat(o.Format); err != nil {
		errs = append(errs, err)
	}
	errs = append(errs, o.aws.Validate()...)

	if o.QMaxPath == "" && modelKnown {
		o.QMaxPath = capacity.DefaultQMaxPath(m.ID)
	}
	if modelKnown {
		var qerrs []error
		o.baselineP95Ms, qerrs = o.LoadQMax()
		errs = append(errs, qerrs...)
	}
	if o.Output == "" && modelKnown {
		o.Output = capacity.DefaultTTotalPath(m.ID)
	}
	if o.Output != "" {
		errs = append(errs, o.resolveOutputs()...)
	}
	if o.containerDir == "" {
		bad("--container-dir: is empty: give the container source tree (container)")
	} else if !o.dryRun && o.QMax != nil {
		if o.containerDigest, err = capacity.SourceDigest(o.containerDir); err != nil {
			bad("--container-dir: %w: run from the repository root or pass --container-dir", err)
		} else if o.containerDigest != o.QMax.ContainerDigest {
			bad("--qmax %s: was measured on container source %s, but %s is %s: T_total must be measured on the container Q_max was: re-run tts-bench qmax on the deployed container (or deploy the measured one)",
				o.QMaxPath, o.QMax.ContainerDigest, o.containerDir, o.containerDigest)
		}
	}
	if modelKnown {
		if _, err := cloud.JournalPath(o.JournalDir, m.EndpointName()); err != nil {
			bad("--journal-dir: %w", err)
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

// resolveOutputs derives the chart path from --output and checks both can be written.
func (o *ttotalOpts) resolveOutputs() []error {
	paths, errs := artifactOutputs(o.Output, "artifacts/<model>/ttotal.json", ".svg")
	if paths != nil {
		o.ChartPath = paths[0]
	}
	return errs
}

// Execute runs the measurement Validate prepared (or prints its plan with --dry-run).
func (o *ttotalOpts) Execute(ctx context.Context) error {
	if o.dryRun {
		where := "AWS (standard credential chain)"
		if o.aws.Local {
			where = "the local emulator of " + o.aws.StateDir + " (--local)"
		}
		return o.DryRun(o.Stdout, where, o.baselineP95Ms)
	}
	return o.TTotal.Run(ctx)
}
