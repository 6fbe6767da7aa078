package main

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/simulate"
)

const replayDescription = `replay drives a traffic trace as open-loop load against a real endpoint (AWS, or --local) and reports
the same per-minute table as simulate, from real measurements.

Open loop, after k6's arrival-rate executors: arrival k of the trace is sent at its scheduled time, whatever the
endpoint answers. --arrivals poisson (the default) schedules the arrivals of a Poisson process whose rate follows
the trace, as independent users arrive: the process qmax's rate staircase measured the instance under and the plan
assumes (docs/design.md, "One instance model"). --arrivals uniform spaces them evenly, 1/rps apart (k6's
constant-arrival-rate): a smoother load whose queues, and scaling metric, stay below what the plan expects at the
same rate, so alarms fire later than the simulation says. Both are fixed by the trace and --seed. A pool of
--max-workers workers (one SDK client each) is started before the first arrival; an arrival that finds every
worker busy is DROPPED and counted, never queued on the client. Dropped arrivals mean the client, not the
endpoint, was too small: raise --max-workers (or shard the trace).

The trace (--trace) is a CSV file (timestamp,rps; see tts-bench simulate --help) or a built-in shape
(diurnal, step, spike, ramp) with --peak-rps, --trough-rps, --duration, --step, --period, --peak-at, --at
and --width.

Sharding: --shard i/n (i from 0 to n-1) sends only arrivals k with k mod n = i, so n machines together send
exactly the trace's arrivals, each at 1/n of its rate over the whole trace. Give every shard the same trace,
--run-id and --start-at (an RFC 3339 time a little ahead, so that all shards share time 0), then merge their
records with tts-bench report.

Per slice (--bucket, a minute by default) of scheduled time: offered rate, sent, dropped, the endpoint's
instances (DescribeEndpoint every --poll: CurrentInstanceCount, largest in the slice, and the desired count),
exact p95 TTFAB, shed rate (503 over sent) and errors. Records (one JSON line per arrival, the qmax format plus
the arrival) are written gzipped to --output (default artifacts/<model>/replay-<run id>[-shard-i-of-n].jsonl.gz),
with the instance samples beside them (<output without .jsonl.gz>.instances.json). The file ends with the
shard's end record: whether it sent its whole part of the trace, and up to which arrival (a run stopped by
SIGINT or SIGTERM keeps its records and says it stopped early; tts-bench report refuses it without --force).

Exit codes: 0 when every slice met the SLO, 1 when a slice did not (more than 5% of its arrivals over the
TTFAB bound, shed, dropped or failed: the "over SLO" column counts the successful ones over it), 2 for bad
input.

Examples:
  tts-bench replay --local --model espeak-ng --trace step --peak-rps 20 --trough-rps 2 --duration 10m --step 10s
  tts-bench replay --model kokoro-82m --trace day.csv --shard 0/4 --run-id day1 --start-at 2026-06-01T09:00:00Z`

// Defaults of replay.
const (
	DefaultReplayWorkers = 256
	DefaultReplayPoll    = 10 * time.Second
	DefaultReplayBucket  = time.Minute
)

func replayCommand() *cli.Command {
	return &cli.Command{
		Name:        "replay",
		Usage:       "drive a traffic trace as open-loop load against an endpoint and report it per minute",
		UsageText:   "tts-bench replay --trace CSV|SHAPE [--model ID] [--shard i/n --run-id ID --start-at TIME] [options]",
		Description: replayDescription,
		Flags: append([]cli.Flag{
			&cli.StringFlag{Name: "trace", Usage: "a trace file (timestamp,rps CSV, or a request trace from tts-bench traffic import) or a built-in shape: diurnal, step, spike, ramp (required)"},
			&cli.Float64Flag{Name: "peak-rps", Usage: "shape: the highest rate"},
			&cli.Float64Flag{Name: "trough-rps", Usage: "shape: the lowest rate"},
			&cli.DurationFlag{Name: "duration", Usage: "shape: how long the trace lasts (default 24h)"},
			&cli.DurationFlag{Name: "step", Usage: "shape: the sampling step (default 1m)"},
			&cli.DurationFlag{Name: "period", Usage: "shape diurnal: the cycle (default 24h)"},
			&cli.DurationFlag{Name: "peak-at", Usage: "shape diurnal: when the rate peaks"},
			&cli.DurationFlag{Name: "at", Usage: "shape step or spike: when it happens"},
			&cli.DurationFlag{Name: "width", Usage: "shape spike: how long it lasts"},
			modelFlag("catalog id of the model (endpoint speech-<model>, SLO)"),
			&cli.StringFlag{Name: "transport", Value: capacity.TransportSageMakerStream, Usage: "sagemaker-stream (the endpoint) or http (a container at --url)"},
			&cli.StringFlag{Name: "url", Usage: "the container's base URL, with --transport http"},
			&cli.IntFlag{Name: "max-workers", Value: DefaultReplayWorkers, Usage: "workers started before the first arrival; an arrival with none free is dropped"},
			&cli.DurationFlag{Name: "request-timeout", Value: bench.DefaultRequestTimeout, Usage: "bound of one request, send to end of stream"},
			&cli.StringFlag{Name: "shard", Value: "0/1", Usage: "i/n: send arrivals k with k mod n = i"},
			&cli.StringFlag{Name: "run-id", Usage: "the run's id, the same on every shard (default: a new one; required with --shard n > 1)"},
			&cli.StringFlag{Name: "start-at", Usage: "RFC 3339 time of the trace's time 0, the same on every shard (default: now)"},
			&cli.DurationFlag{Name: "bucket", Value: DefaultReplayBucket, Usage: "length of one row of the table"},
			&cli.DurationFlag{Name: "poll", Value: DefaultReplayPoll, Usage: "how often to read the endpoint's instance count (sagemaker-stream)"},
			&cli.StringFlag{Name: "corpus", Usage: "request texts, one per line (default: the built-in seeded corpus)"},
			&cli.StringFlag{Name: "arrivals", Value: string(bench.ArrivalsPoisson), Usage: "poisson (independent arrivals following the trace's rate, what the plan assumes) or uniform (evenly spaced, 1/rps apart)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "picks the texts and the Poisson arrival times: the same seed sends the same requests at the same times"},
			cliflags.Output("records file (default artifacts/<model>/replay-<run id>[-shard-i-of-n].jsonl.gz)"),
			cliflags.Format("what to print: text or json"),
		}, awsenv.Flags()...),
		Action: catalogAction(newReplayOpts),
	}
}

// replayOpts is one tts-bench replay: the command line as given, and the replay (Replay) Validate resolves
// from it.
type replayOpts struct {
	measure.Replay
	args              []string
	traceArg          string
	shape             simulate.ShapeParams
	shapeSet          []string
	modelID           string
	corpusPath        string
	shardArg, startAt string
	arrivalsArg       string
	aws               awsenv.Settings
	catalog           models.Catalog
}

// newReplayOpts reads the command line of c; it checks nothing.
func newReplayOpts(c *cli.Context, cat models.Catalog) *replayOpts {
	o := &replayOpts{
		args: c.Args().Slice(), traceArg: c.String("trace"), modelID: c.String("model"), corpusPath: c.String("corpus"),
		shardArg: c.String("shard"), startAt: c.String("start-at"), arrivalsArg: c.String("arrivals"),
		aws: awsenv.FromContext(c), catalog: cat,
		Replay: measure.Replay{
			Transport: c.String("transport"), URL: c.String("url"),
			MaxWorkers: c.Int("max-workers"), RequestTimeout: c.Duration("request-timeout"), RunID: c.String("run-id"),
			Bucket: c.Duration("bucket"), Poll: c.Duration("poll"), Seed: c.Uint64("seed"),
			Output: c.String("output"), Format: c.String("format"), Stdout: c.App.Writer, Stderr: c.App.ErrWriter,
		},
	}
	o.AWSConfig = o.aws.Config
	o.shape = simulate.DefaultShapeParams(o.traceArg)
	for _, f := range []struct {
		name string
		d    *time.Duration
	}{{"duration", &o.shape.Duration}, {"step", &o.shape.Step}, {"period", &o.shape.Period}, {"peak-at", &o.shape.PeakAt}, {"at", &o.shape.At}, {"width", &o.shape.Width}} {
		if c.IsSet(f.name) {
			*f.d = c.Duration(f.name)
			o.shapeSet = append(o.shapeSet, "--"+f.name)
		}
	}
	if c.IsSet("duration") && !c.IsSet("at") {
		o.shape.At = o.shape.Duration / 3
	}
	for _, f := range []struct {
		name string
		v    *float64
	}{{"peak-rps", &o.shape.PeakRPS}, {"trough-rps", &o.shape.TroughRPS}} {
		if c.IsSet(f.name) {
			*f.v = c.Float64(f.name)
			o.shapeSet = append(o.shapeSet, "--"+f.name)
		}
	}
	return o
}

// Validate checks the whole command line and reports every problem at once, as one usage error (exit 2).
func (o *replayOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.args) > 0 {
		bad("replay takes no arguments, got %q: give the trace with --trace, see tts-bench replay --help", o.args)
	}
	if m, err := o.catalog.Get(o.modelID); err != nil {
		bad("--model: %w", err)
	} else {
		o.Model, o.SLO = m, time.Duration(m.SLO.TTFABMs)*time.Millisecond
	}
	if tr, err := loadReplayTrace(o.traceArg, o.shape, o.shapeSet); err != nil {
		bad("%w", err)
	} else {
		o.Trace, o.TraceDigest, o.Segments = tr, measure.TraceDigest(tr), measure.TraceSegments(tr)
		if peak := tr.Peak(); peak > bench.MaxOpenLoopRPS {
			bad("--trace %s peaks at %g rps: one replay sends at most %d rps: split it with --shard i/n over several machines", o.traceArg, peak, bench.MaxOpenLoopRPS)
		}
	}
	if p, err := bench.ParseArrivalProcess(o.arrivalsArg); err != nil {
		bad("--arrivals: %w", err)
	} else {
		o.Arrivals = p
	}
	if n, err := measure.ParseShard(o.shardArg); err != nil {
		bad("--shard: %w", err)
	} else {
		o.Shard, o.Shards = n[0], n[1]
	}
	if o.Shards > 1 && o.RunID == "" {
		bad("--shard %s: give every shard the same --run-id (and --start-at), so that tts-bench report can merge them", o.shardArg)
	}
	if o.RunID != "" && !measure.ValidRunID(o.RunID) {
		bad("--run-id %q: want 1 to 64 letters, digits, '.', '_' or '-' (it becomes part of a file name)", o.RunID)
	}
	if o.startAt != "" {
		t, err := time.Parse(time.RFC3339Nano, o.startAt)
		switch {
		case err != nil:
			bad("--start-at %q: want an RFC 3339 time such as 2026-06-01T09:00:00Z", o.startAt)
		case time.Until(t) < -time.Second:
			bad("--start-at %s is in the past: give a time a little ahead of now, the same on every shard", o.startAt)
		case time.Until(t) > 24*time.Hour:
			bad("--start-at %s is more than 24 h ahead: give a time a little ahead of now", o.startAt)
		default:
			o.Start = t
		}
	} else if o.Shards > 1 {
		bad("--shard %s: give every shard the same --start-at, so that they share the trace's time 0", o.shardArg)
	}
	if o.MaxWorkers < 1 || o.MaxWorkers > bench.MaxConcurrency {
		bad("--max-workers %d: want 1 to %d", o.MaxWorkers, bench.MaxConcurrency)
	}
	if o.RequestTimeout <= 0 || o.RequestTimeout > time.Hour {
		bad("--request-timeout %s: want a positive duration up to 1h", o.RequestTimeout)
	}
	if o.Bucket < time.Second || o.Bucket > 24*time.Hour {
		bad("--bucket %s: want 1s to 24h", o.Bucket)
	}
	if o.Poll < time.Second || o.Poll > 10*time.Minute {
		bad("--poll %s: want 1s to 10m", o.Poll)
	}
	if err := cliflags.CheckFormat(o.Format); err != nil {
		errs = append(errs, err)
	}
	switch o.Transport {
	case capacity.TransportSageMakerStream:
		if o.URL != "" {
			bad("--url is for --transport http: drop it, or add --transport http to load a container directly")
		}
	case capacity.TransportHTTP:
		if err := checkContainerURL(o.URL); err != nil {
			bad("--url: %w", err)
		}
		if o.aws.Local {
			bad("--local is for --transport sagemaker-stream: --transport http posts to --url directly")
		}
	default:
		bad("--transport %q: want sagemaker-stream or http", o.Transport)
	}
	errs = append(errs, o.aws.Validate()...)
	o.Corpus = bench.DefaultCorpus()
	if o.corpusPath != "" {
		c, err := bench.LoadCorpus(o.corpusPath)
		if err != nil {
			bad("--corpus: %w", err)
		}
		o.Corpus = c
	}
	if len(errs) > 0 {
		return exitcode.Usage(errors.Join(errs...))
	}
	if o.RunID == "" {
		o.RunID = measure.NewReplayRunID()
	}
	if o.Output == "" {
		name := "replay-" + o.RunID
		if o.Shards > 1 {
			name += fmt.Sprintf("-shard-%d-of-%d", o.Shard, o.Shards)
		}
		o.Output = filepath.Join("artifacts", o.Model.ID, name+".jsonl.gz")
	}
	if err := atomicfile.MkdirWritable(filepath.Dir(o.Output)); err != nil {
		return exitcode.Usagef("--output %s: %w", o.Output, err)
	}
	return nil
}

// loadReplayTrace reads --trace: a trace file (simulate.IsTraceFile) or a built-in shape with its parameters.
func loadReplayTrace(arg string, p simulate.ShapeParams, shapeFlags []string) (simulate.Trace, error) {
	if arg == "" {
		return simulate.Trace{}, errors.New("--trace is required: a CSV file (timestamp,rps) or a built-in shape (diurnal, step, spike, ramp)")
	}
	if simulate.IsTraceFile(arg) {
		if len(shapeFlags) > 0 {
			return simulate.Trace{}, fmt.Errorf("%s set the parameters of a built-in shape, but --trace %s is a CSV file: drop them", strings.Join(shapeFlags, ", "), arg)
		}
		tr, err := simulate.ReadFile(arg)
		if err != nil {
			return simulate.Trace{}, fmt.Errorf("--trace: %w", err)
		}
		return tr, nil
	}
	if errs := p.Validate(); len(errs) > 0 {
		return simulate.Trace{}, fmt.Errorf("--trace %s: %w", arg, errors.Join(errs...))
	}
	tr, err := simulate.Generate(p)
	if err != nil {
		return simulate.Trace{}, fmt.Errorf("--trace %s: %w", arg, err)
	}
	return tr, nil
}

// Execute runs the replay Validate prepared.
func (o *replayOpts) Execute(ctx context.Context) error { return o.Replay.Run(ctx) }
