package main

import (
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/awsenv"
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

Exit codes: 0 when every slice met the SLO, 1 when a slice did not (p95 TTFAB above the SLO, or more than 1%
of its arrivals shed, dropped or failed), 2 for bad input.

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
			&cli.StringFlag{Name: "trace", Usage: "a CSV trace (timestamp,rps) or a built-in shape: diurnal, step, spike, ramp (required)"},
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

// replayOpts is one tts-bench replay: the command line as given and what Validate resolves from it.
type replayOpts struct {
	args                       []string
	traceArg                   string
	shape                      simulate.ShapeParams
	shapeSet                   []string
	modelID                    string
	transport, url, corpusPath string
	maxWorkers                 int
	requestTimeout             time.Duration
	shardArg, runID, startAt   string
	bucket, poll               time.Duration
	seed                       uint64
	arrivalsArg                string
	output, format             string
	aws                        awsenv.Settings
	catalog                    models.Catalog
	stdout, stderr             io.Writer

	// Set by Validate.
	model         models.Model
	slo           time.Duration
	trace         simulate.Trace
	traceDigest   string
	segments      []bench.Segment
	shard, shards int
	arrivals      bench.ArrivalProcess
	start         time.Time
	corpus        *bench.Corpus
}

// newReplayOpts reads the command line of c; it checks nothing.
func newReplayOpts(c *cli.Context, cat models.Catalog) *replayOpts {
	o := &replayOpts{
		args: c.Args().Slice(), traceArg: c.String("trace"), modelID: c.String("model"),
		transport: c.String("transport"), url: c.String("url"), corpusPath: c.String("corpus"),
		maxWorkers: c.Int("max-workers"), requestTimeout: c.Duration("request-timeout"),
		shardArg: c.String("shard"), runID: c.String("run-id"), startAt: c.String("start-at"),
		bucket: c.Duration("bucket"), poll: c.Duration("poll"), seed: c.Uint64("seed"), arrivalsArg: c.String("arrivals"),
		output: c.String("output"), format: c.String("format"),
		aws: awsenv.FromContext(c), catalog: cat, stdout: c.App.Writer, stderr: c.App.ErrWriter,
	}
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
		o.model, o.slo = m, time.Duration(m.SLO.TTFABMs)*time.Millisecond
	}
	if tr, err := loadReplayTrace(o.traceArg, o.shape, o.shapeSet); err != nil {
		bad("%w", err)
	} else {
		o.trace, o.traceDigest, o.segments = tr, traceDigest(tr), traceSegments(tr)
		if peak := tr.Peak(); peak > bench.MaxOpenLoopRPS {
			bad("--trace %s peaks at %g rps: one replay sends at most %d rps: split it with --shard i/n over several machines", o.traceArg, peak, bench.MaxOpenLoopRPS)
		}
	}
	if p, err := bench.ParseArrivalProcess(o.arrivalsArg); err != nil {
		bad("--arrivals: %w", err)
	} else {
		o.arrivals = p
	}
	if n, err := parseShard(o.shardArg); err != nil {
		bad("--shard: %w", err)
	} else {
		o.shard, o.shards = n[0], n[1]
	}
	if o.shards > 1 && o.runID == "" {
		bad("--shard %s: give every shard the same --run-id (and --start-at), so that tts-bench report can merge them", o.shardArg)
	}
	if o.runID != "" && !validRunID(o.runID) {
		bad("--run-id %q: want 1 to 64 letters, digits, '.', '_' or '-' (it becomes part of a file name)", o.runID)
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
			o.start = t
		}
	} else if o.shards > 1 {
		bad("--shard %s: give every shard the same --start-at, so that they share the trace's time 0", o.shardArg)
	}
	if o.maxWorkers < 1 || o.maxWorkers > bench.MaxConcurrency {
		bad("--max-workers %d: want 1 to %d", o.maxWorkers, bench.MaxConcurrency)
	}
	if o.requestTimeout <= 0 || o.requestTimeout > time.Hour {
		bad("--request-timeout %s: want a positive duration up to 1h", o.requestTimeout)
	}
	if o.bucket < time.Second || o.bucket > 24*time.Hour {
		bad("--bucket %s: want 1s to 24h", o.bucket)
	}
	if o.poll < time.Second || o.poll > 10*time.Minute {
		bad("--poll %s: want 1s to 10m", o.poll)
	}
	if err := cliflags.CheckFormat(o.format); err != nil {
		errs = append(errs, err)
	}
	switch o.transport {
	case capacity.TransportSageMakerStream:
		if o.url != "" {
			bad("--url is for --transport http: drop it, or add --transport http to load a container directly")
		}
	case capacity.TransportHTTP:
		if err := checkContainerURL(o.url); err != nil {
			bad("--url: %w", err)
		}
		if o.aws.Local {
			bad("--local is for --transport sagemaker-stream: --transport http posts to --url directly")
		}
	default:
		bad("--transport %q: want sagemaker-stream or http", o.transport)
	}
	errs = append(errs, o.aws.Validate()...)
	o.corpus = bench.DefaultCorpus()
	if o.corpusPath != "" {
		c, err := bench.LoadCorpus(o.corpusPath)
		if err != nil {
			bad("--corpus: %w", err)
		}
		o.corpus = c
	}
	if len(errs) > 0 {
		return exitcode.Usage(errors.Join(errs...))
	}
	if o.runID == "" {
		o.runID = newReplayRunID()
	}
	if o.output == "" {
		name := "replay-" + o.runID
		if o.shards > 1 {
			name += fmt.Sprintf("-shard-%d-of-%d", o.shard, o.shards)
		}
		o.output = filepath.Join("artifacts", o.model.ID, name+".jsonl.gz")
	}
	if err := replayDirWritable(filepath.Dir(o.output)); err != nil {
		return exitcode.Usagef("--output %s: %w", o.output, err)
	}
	return nil
}

// replayDirWritable creates dir when missing and checks that a file can be created in it, so that a long
// replay does not end unable to write its records.
func replayDirWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".replay-probe-*")
	if err != nil {
		return err
	}
	f.Close()
	return os.Remove(f.Name())
}

// loadReplayTrace reads --trace: a CSV file (name ending in .csv) or a built-in shape with its parameters.
func loadReplayTrace(arg string, p simulate.ShapeParams, shapeFlags []string) (simulate.Trace, error) {
	if arg == "" {
		return simulate.Trace{}, errors.New("--trace is required: a CSV file (timestamp,rps) or a built-in shape (diurnal, step, spike, ramp)")
	}
	if strings.HasSuffix(strings.ToLower(arg), ".csv") {
		if len(shapeFlags) > 0 {
			return simulate.Trace{}, fmt.Errorf("%s set the parameters of a built-in shape, but --trace %s is a CSV file: drop them", strings.Join(shapeFlags, ", "), arg)
		}
		f, err := os.Open(arg)
		if err != nil {
			return simulate.Trace{}, fmt.Errorf("--trace: %w", err)
		}
		defer f.Close()
		tr, err := simulate.ParseCSV(arg, io.LimitReader(f, simulate.MaxTraceBytes+1))
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

// traceSegments turns a trace's points into the executor's segments.
func traceSegments(tr simulate.Trace) []bench.Segment {
	segs := make([]bench.Segment, 0, len(tr.Points))
	for i, p := range tr.Points {
		end := tr.Duration
		if i+1 < len(tr.Points) {
			end = tr.Points[i+1].At
		}
		segs = append(segs, bench.Segment{Duration: end - p.At, RPS: p.RPS})
	}
	return segs
}

// traceDigest identifies a trace by its points and length (not its name): "sha256:<hex>".
func traceDigest(tr simulate.Trace) string {
	h := sha256.New()
	var b [16]byte
	for _, p := range tr.Points {
		binary.BigEndian.PutUint64(b[:8], uint64(p.At))
		binary.BigEndian.PutUint64(b[8:], math.Float64bits(p.RPS))
		h.Write(b[:])
	}
	binary.BigEndian.PutUint64(b[:8], uint64(tr.Duration))
	h.Write(b[:8])
	return "sha256:" + hex.EncodeToString(h.Sum(nil))
}

// parseShard reads "i/n" with 0 ≤ i < n.
func parseShard(s string) ([2]int, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil {
		return [2]int{}, fmt.Errorf("%q: want i/n, e.g. 0/4 for the first of four shards", s)
	}
	if n < 1 || n > 1000 {
		return [2]int{}, fmt.Errorf("%q: the shard count %d: want 1 to 1000", s, n)
	}
	if i < 0 || i >= n {
		return [2]int{}, fmt.Errorf("%q: the shard index %d: want 0 to %d (shards count from 0)", s, i, n-1)
	}
	return [2]int{i, n}, nil
}

func validRunID(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '.' || r == '_' || r == '-') {
			return false
		}
	}
	return s != "." && s != ".."
}

func newReplayRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "replay-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// Execute runs the replay Validate prepared.
func (o *replayOpts) Execute(ctx context.Context) error {
	cfg := bench.OpenLoopConfig{
		Segments: o.segments, Shard: o.shard, Shards: o.shards, MaxWorkers: o.maxWorkers, RequestTimeout: o.requestTimeout,
		Process: o.arrivals, Start: o.start, Corpus: o.corpus, Seed: o.seed, RunID: o.runID, Trace: o.traceDigest,
	}
	var poll func(context.Context) (measure.InstanceSample, error)
	if o.transport == capacity.TransportHTTP {
		cfg.Transport = bench.NewHTTP(o.url)
	} else {
		awsCfg, err := o.aws.Config(ctx)
		if err != nil {
			return err
		}
		cl := cloud.NewClients(awsCfg)
		name := o.model.EndpointName()
		poll = func(ctx context.Context) (measure.InstanceSample, error) {
			return describeInstances(ctx, cl.SageMaker, name, true) // one attempt: the poller backs off itself
		}
		if _, err := describeInstances(ctx, cl.SageMaker, name, false); err != nil { // with the SDK's retries
			if cloud.IsNotFound(err) {
				return exitcode.CheckFailedf("replay: the endpoint %s does not exist: deploy it first (speech-infra deploy %s)", name, o.model.ID)
			}
			// Anything else (a closed port, expired credentials, throttling) is not a missing endpoint: say what
			// it was, and let the exit code say the run could not start.
			return fmt.Errorf("replay: %w", err)
		}
		// One client per worker: a client's event-stream decoder races when several streams are open on it
		// (aws/smithy-go#714).
		cfg.Transport = cl.StreamTransport(name)
	}

	// The records go to a temporary file beside --output, renamed into place at the end: readers see no
	// half-written records file, and a day-long run does not hold its records in memory.
	tmp, err := os.CreateTemp(filepath.Dir(o.output), "."+filepath.Base(o.output)+".tmp*")
	if err != nil {
		return fmt.Errorf("replay: create the records file: %w", err)
	}
	defer os.Remove(tmp.Name())
	defer tmp.Close()
	gz := gzip.NewWriter(tmp)
	cfg.Records = gz

	log := measure.InstanceLog{RunID: o.runID, Trace: o.traceDigest, Endpoint: o.model.EndpointName()}
	var mu sync.Mutex
	// The poller and the load's progress both write to stderr: one lock keeps their lines whole (the race
	// detector caught the poller's back-off line racing the start line).
	stderr := &measure.LockedWriter{W: o.stderr}
	pollCtx, stopPoll := context.WithCancel(ctx)
	var pollDone sync.WaitGroup
	var backoff cloud.Backoff
	if poll != nil {
		pollDone.Add(1)
		go func() {
			defer pollDone.Done()
			for {
				rctx, cancel := context.WithTimeout(pollCtx, o.poll)
				s, err := poll(rctx)
				cancel()
				// A throttled read waits the back-off (recorded in the instance log), not the interval.
				wait := backoff.Next("DescribeEndpoint", err, o.poll, time.Now())
				if err == nil {
					mu.Lock()
					log.Samples = append(log.Samples, s)
					mu.Unlock()
				} else if pollCtx.Err() == nil {
					if cloud.IsThrottled(err) {
						fmt.Fprintf(stderr, "replay: reading the instance count was throttled: backing off %s\n", wait)
					} else {
						fmt.Fprintf(stderr, "replay: read the instance count: %v\n", err)
					}
				}
				select {
				case <-pollCtx.Done():
					return
				case <-time.After(wait):
				}
			}
		}()
	}
	fmt.Fprintf(stderr, "replay %s: %s (%s, %s), shard %d/%d, open loop, %s arrivals (seed %d), up to %d workers, run %s\n",
		o.model.ID, o.trace.Name, o.trace.Duration, o.traceDigest[:19], o.shard, o.shards, o.arrivals, o.seed, o.maxWorkers, o.runID)
	cfg.Observer = replayProgress(stderr)
	res, runErr := bench.RunOpenLoop(ctx, cfg)
	stopPoll()
	pollDone.Wait()
	log.Backoffs = backoff.Events()
	if sum := backoff.Summary(); sum != "" {
		fmt.Fprintf(o.stderr, "replay: throttled while reading the instance count: %s (recorded in %s)\n", sum, measure.InstancesPath(o.output))
	}
	if err := gz.Close(); err != nil && runErr == nil {
		runErr = fmt.Errorf("replay: write the records: %w", err)
	}
	if err := tmp.Sync(); err != nil && runErr == nil {
		runErr = fmt.Errorf("replay: write the records: %w", err)
	}
	if res.Scheduled == 0 {
		if runErr != nil {
			return runErr
		}
		return fmt.Errorf("replay: shard %d/%d of the trace has no arrivals: the trace offers too few requests for %d shards", o.shard, o.shards, o.shards)
	}
	// The end record goes last (measure.WriteShardEnd): whether this shard sent its whole part, and up to which arrival.
	if err := o.writeShardEnd(tmp, res, runErr); err != nil {
		return fmt.Errorf("replay: write the records' end record: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("replay: write the records: %w", err)
	}
	if err := os.Rename(tmp.Name(), o.output); err != nil {
		return fmt.Errorf("replay: write the records: %w", err)
	}
	fmt.Fprintf(o.stderr, "replay: %d records written to %s\n", res.Scheduled, o.output)
	if poll != nil {
		data, err := json.MarshalIndent(log, "", "  ")
		if err == nil {
			err = capacity.WriteFileAtomic(measure.InstancesPath(o.output), append(data, '\n'))
		}
		if err != nil {
			return fmt.Errorf("replay: write the instance samples: %w", err)
		}
	}
	if runErr != nil {
		return fmt.Errorf("replay stopped early (the records so far are in %s): %w", o.output, runErr)
	}
	recs, err := measure.ReadRecordsFile(o.output)
	if err != nil {
		return err
	}
	rep, err := measure.NewReplayReport(recs, log.Samples, o.bucket, o.slo, o.model.ID)
	if err != nil {
		return err
	}
	rep.Files = []string{o.output}
	return rep.Write(o.stdout, o.format)
}

// describeInstances reads the instance counts of the endpoint's variant; pollOnce makes the read a single
// attempt (cloud.PollOnceSageMaker), for a poller that backs off itself.
func describeInstances(ctx context.Context, api cloud.EndpointDescribeAPI, name string, pollOnce bool) (measure.InstanceSample, error) {
	read := func() (cloud.EndpointState, error) { return cloud.ReadEndpoint(ctx, api, name, models.VariantName) }
	if pollOnce {
		read = func() (cloud.EndpointState, error) {
			return cloud.ReadEndpoint(ctx, api, name, models.VariantName, cloud.PollOnceSageMaker)
		}
	}
	st, err := read()
	if err != nil {
		return measure.InstanceSample{}, fmt.Errorf("describe endpoint %s: %w", name, err)
	}
	return measure.InstanceSample{At: time.Now().UTC(), Current: int(st.Instances), Desired: int(st.DesiredInstances)}, nil
}

// replayProgress prints one line about every 10 s to w.
func replayProgress(w io.Writer) func(bench.OpenLoopProgress) {
	var last time.Time
	return func(p bench.OpenLoopProgress) {
		if !p.Done && time.Since(last) < 10*time.Second {
			return
		}
		last = time.Now()
		fmt.Fprintf(w, "replay: %s of %s: %d arrivals, %d sent, %d dropped, %d in flight, %d ok, %d shed, %d failed\n",
			p.Elapsed.Truncate(time.Second), p.Duration, p.Scheduled, p.Sent, p.Dropped, p.InFlight, p.OK, p.Shed, p.Failed)
	}
}

// writeShardEnd appends the end record to a replay's records file (tmp, its records member closed and
// synced): complete when the run ended without error, with the arrivals the file holds and the last one.
func (o *replayOpts) writeShardEnd(tmp *os.File, res bench.OpenLoopResult, runErr error) error {
	n, last, _, err := measure.RecordsEnd(tmp.Name())
	if err != nil {
		return err
	}
	e := measure.ShardEnd{Complete: runErr == nil && n == res.Scheduled, Arrivals: n, LastArrival: last, StoppedAtS: o.trace.Duration.Seconds()}
	if !e.Complete {
		// The first of this shard's arrivals after the last one scheduled.
		for k, off := range bench.ShardArrivals(bench.TraceArrivals(o.segments, o.arrivals, o.seed), o.shard, o.shards) {
			if k > last {
				e.StoppedAtS = off.Seconds()
				break
			}
		}
		e.Reason = "stopped"
		if runErr != nil {
			e.Reason = runErr.Error()
		}
	}
	if _, err := tmp.Seek(0, io.SeekEnd); err != nil {
		return err
	}
	if err := measure.WriteShardEnd(tmp, e); err != nil {
		return err
	}
	return tmp.Sync()
}
