package main

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
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

const qmaxDescription = `qmax measures Q_max: the highest number of requests in flight on ONE instance at which the
p95 time to first audio byte (TTFAB) still meets the SLO, with a closed-loop concurrency staircase.

Each step holds exactly C requests in flight (a worker sends its next request only when its previous one
ended: closed loop, so a slowing server cannot hide its slowness). A step settles (--settle, discarded),
holds (--hold), and is judged on the requests sent in the last --measure-window of the hold. A step passes
when its p95 TTFAB ≤ --slo-ms AND its p95 stall ≤ the stall budget (+ jitter) and few requests failed.

The stall is measured for every request, beyond TTFAB: the longest time by which an audio byte arrived
after a real-time player, started at the first audio byte, would have needed it. A scheduler that serves
first chunks first keeps TTFAB low while continuations starve; the stall shows it. Nothing else in the
field measures this. The stall budget is a player buffer of that many milliseconds: a player that holds back
that much audio before it starts playing never runs dry on a response within it.

The ladder (default 1,5,10,20,30,40,50,60) runs in order and stops at the first failing step; while every
step passes it goes on by +10 up to --max-concurrency. Q_max is the highest passing step below the lowest
failing one; --refine bisects between them. The summary and the artifact also give Q_max by p95 TTFAB alone
(the original's definition, q_max_ttfab_only: the stall not judged), for comparison only: tts-bench plan plans
with the Q_max by TTFAB and stall. The ladder stops at the first step failing TTFAB and stall, so Q_max by
TTFAB alone is a lower bound unless some step failed it.

Before measuring (sagemaker-stream), against the endpoint speech-<model>:
  drift must be clean (refused with the findings unless --force); the endpoint must be InService; the
  container's QUEUE_MAX_DEPTH must not reject the ladder (deploy in measurement configuration,
  QUEUE_MAX_DEPTH=0, i.e. without a plan); the endpoint must carry no other run's measurement marker (the
  tag speech-infra:measurement: run id, owner user@host, pid, start and expiry, which every machine sees)
  and its dynamic scaling must not be suspended: both mean another measurement (another --journal-dir or
  another machine) holds it, and are refused (exit 1) naming that run; --force overrides an EXPIRED marker
  only, never a live one nor suspended scaling. Then a journal is written (.state/journals/<endpoint>.json),
  the endpoint marked as this run's (expiring 30 min after the run's longest planned duration), dynamic
  scaling suspended and the variant pinned to one instance. At the end, on error, on SIGINT and on SIGTERM
  the journaled state is restored, this run's marker and the journal removed; after kill -9 run tts-bench
  thaw (on the same machine and --journal-dir; elsewhere, or for another run's marker, tts-bench thaw --force).
Before measuring (http): the container at --url must answer GET /ping with 200 within 5 s.
Per step ConcurrentRequestsPerModel (Maximum, 10 s) is read and its ratio to the client's concurrency
recorded; a disagreement is warned about.

Then the rate staircase: one open-loop step per --rate-fractions (default 0.3,0.5,0.7,0.85,1.0,1.1)
of the highest completed-request rate of the usable closed-loop steps, with Poisson arrivals (exponential gaps
from a generator seeded by --seed), the same settle, hold, measure window and request timeout (or
--rate-settle, --rate-hold, --rate-measure-window). Per step: the offered, arrived and achieved rates, the
time-averaged requests in flight and the mean of the 10-s peaks (what the scaling alarm's 10-s Maximum of
ConcurrentRequestsPerModel sees; CloudWatch's own is read too), p50/p95/p99 TTFAB, p95 stall and the share
shed. After the fractions, up to --rate-refine steps (default 3) each offer midway between the highest step
that met the SLO and the lowest that missed it, until the two are within 5% of the highest throughput: the SLO's
boundary is measured on both sides, and the artifact lists the steps by fraction (refinement steps marked
refined). Every rate-step request carries the custom attribute queue-max-depth=<the catalog's queue_max_depth>,
which the container applies to that request alone: on the unbounded endpoint the ladder needs, the rate steps
shed as the shield a plan deploys would, so the shed is measured (the artifact's rate_queue_max_depth). It
relates an offered rate to the scaling metric, which a closed-loop curve cannot do for an instance that
saturates. --rate-fractions none skips it.

Outputs, each written atomically: --output (qmax.json), the raw records beside it
(<name>.records.jsonl.gz, one JSON line per request), the staircase chart (<name>.svg) and, with a rate
staircase, its chart (<name>.rate.svg: requests in flight against the offered rate).
--dry-run makes no AWS call: it prints the ladder, the estimated duration and every control-plane action.

SIGINT, SIGTERM or a lost connection (a step whose requests get no answer at all) write the finished steps
as a partial artifact, "complete": false, which tts-bench plan refuses; the same command with --resume
continues it from the last finished step when the endpoint, the container digest and the flags match (it
refuses, naming each difference, when they do not), appending to the records.

Examples:
  tts-bench qmax --model espeak-ng --local --dry-run
  tts-bench qmax --model espeak-ng --local --ladder 1,2,4,8 --settle 2s --hold 10s --measure-window 6s
  tts-bench qmax --model kokoro-82m --transport http --url http://127.0.0.1:8080`

// DefaultQMaxMinRequests is the fewest requests a usable step has in its measure window: with 100,
// the p95's distribution-free 95% interval runs from the 90th to the 100th order statistic.
const DefaultQMaxMinRequests = 100

// Flag names of qmax that other code refers to.
const (
	flagLadder = "ladder"
)

// Flag names of the rate staircase.
const (
	flagRateFractions = measure.RateFractionsFlag
	flagRateSettle    = "rate-settle"
	flagRateHold      = "rate-hold"
	flagRateWindow    = "rate-measure-window"
)

// maxStepDuration bounds settle and hold each: a day.
const maxStepDuration = 24 * time.Hour

func qmaxCommand() *cli.Command {
	return &cli.Command{
		Name:        "qmax",
		Usage:       "measure Q_max: the highest per-instance concurrency whose p95 TTFAB (and stall) meets the SLO",
		UsageText:   "tts-bench qmax [--model ID] [--local | --region R --profile P] [--ladder 1,5,10] [options]",
		Description: qmaxDescription,
		Flags: append([]cli.Flag{
			modelFlag("catalog id of the model to measure"),
			&cli.StringFlag{Name: flagLadder, Usage: "concurrencies to measure, in increasing order (default " + measure.JoinInts(measure.DefaultLadder) + ")"},
			&cli.IntFlag{Name: "max-concurrency", Value: measure.DefaultMaxConcurrency, Usage: "while every step passes, the ladder goes on by +10 up to this"},
			&cli.DurationFlag{Name: "settle", Value: measure.DefaultSettle, Usage: "per step: run this long before the hold starts (discarded)"},
			&cli.DurationFlag{Name: "hold", Value: measure.DefaultHold, Usage: "per step: hold the concurrency this long after settling"},
			&cli.DurationFlag{Name: "measure-window", Value: measure.DefaultMeasureWindow, Usage: "per step: judge the requests sent in the last part of the hold this long"},
			&cli.IntFlag{Name: "min-requests", Value: DefaultQMaxMinRequests, Usage: "per step: the fewest requests in the measure window for a usable step (and a 95% interval of its p95)"},
			&cli.Float64Flag{Name: "max-client-cpu", Value: measure.DefaultMaxClientCPU, Usage: "per step: the share of one core the measuring process may use before the step is unusable (client-bound); 0 = no bound"},
			&cli.DurationFlag{Name: "max-client-lag", Usage: "per step: the p99 scheduling lag of the measuring process before the step is unusable (client-bound); 0 = no bound (default: 5% of the SLO, at least " + measure.DefaultMaxClientLag.String() + ")"},
			&cli.DurationFlag{Name: "request-timeout", Value: bench.DefaultRequestTimeout, Usage: "bound on one request, send to end of stream (a timeout counts against the step)"},
			&cli.IntFlag{Name: "slo-ms", Usage: "p95 TTFAB bound in milliseconds (default: the catalog's slo.ttfab_ms)"},
			&cli.IntFlag{Name: "stall-budget-ms", Usage: "p95 stall bound in milliseconds, before the jitter allowance of " + bench.DefaultStallJitter.String() + " (default: the catalog's slo.stall_budget_ms)"},
			&cli.StringFlag{Name: "transport", Value: capacity.TransportSageMakerStream, Usage: "sagemaker-stream (the endpoint) or http (a container at --url)"},
			&cli.StringFlag{Name: "url", Usage: "with --transport http: the container's base URL, e.g. http://127.0.0.1:8080"},
			&cli.StringFlag{Name: "corpus", Usage: "request texts, one per line (default: the built-in seeded English corpus)"},
			&cli.BoolFlag{Name: "refine", Usage: "bisect between the highest passing and the lowest failing step"},
			cliflags.Force("measure even when drift reports errors, or over another run's EXPIRED measurement marker (never a live one)"),
			&cli.BoolFlag{Name: "resume", Usage: "continue the partial artifact an interrupted run wrote at --output (same endpoint, container and flags), appending to its records"},
			cliflags.DryRun("make no AWS call: print the ladder, the estimated duration and every control-plane action"),
			&cli.StringFlag{Name: flagRateFractions, Value: measure.JoinFloats(measure.DefaultRateFractions), Usage: "the rate staircase: fractions of the highest closed-loop throughput to offer as Poisson arrivals, increasing; none skips it"},
			&cli.IntFlag{Name: measure.RateRefineFlag, Value: measure.DefaultRateRefineSteps, Usage: fmt.Sprintf("the rate staircase: after its fractions, at most this many steps midway between the highest step that met the SLO and the lowest that missed it, until they are within %.2g of the highest throughput; 0 = none", measure.RateRefineWidth)},
			&cli.DurationFlag{Name: flagRateSettle, Usage: "per rate step: settle this long (default: --settle)"},
			&cli.DurationFlag{Name: flagRateHold, Usage: "per rate step: hold this long after settling (default: --hold)"},
			&cli.DurationFlag{Name: flagRateWindow, Usage: "per rate step: judge the requests sent in the last part of the hold this long (default: --measure-window)"},
			&cli.Uint64Flag{Name: "seed", Value: 1, Usage: "seeds the request texts and the rate staircase's Poisson arrivals (the same seed offers the same arrivals)"},
			cliflags.Format("what to print on stdout at the end: text or json (the artifact)"),
			cliflags.Output("where to write the artifact (default artifacts/<model>/qmax.json); records and chart go beside it"),
			cliflags.ContainerDir("the container source tree whose digest the artifact records"),
			cliflags.JournalDir(cloud.DefaultJournalDir, "where the freeze journal is kept"),
		}, awsenv.Flags()...),
		Action: catalogAction(newQMaxOpts),
	}
}

// qmaxOpts is one tts-bench qmax: the command line as given, and the measurement (QMax) Validate resolves
// from it.
type qmaxOpts struct {
	measure.QMax
	args                 []string
	modelID              string
	ladder               string
	ladderSet            bool
	maxConcurrency       int
	maxClientLagSet      bool
	sloMs, stallBudgetMs *int
	corpusPath           string
	dryRun               bool
	containerDir         string
	rateFractionsFlag    string
	aws                  awsenv.Settings
	catalog              models.Catalog
}

// newQMaxOpts reads the command line of c; it checks nothing.
func newQMaxOpts(c *cli.Context, cat models.Catalog) *qmaxOpts {
	o := &qmaxOpts{
		args: c.Args().Slice(), modelID: c.String("model"), ladder: c.String(flagLadder), ladderSet: c.IsSet(flagLadder),
		maxConcurrency: c.Int("max-concurrency"), maxClientLagSet: c.IsSet("max-client-lag"), corpusPath: c.String("corpus"),
		dryRun: c.Bool("dry-run"), containerDir: c.String("container-dir"), catalog: cat, rateFractionsFlag: c.String(flagRateFractions),
		QMax: measure.QMax{
			MinRequests: c.Int("min-requests"), MaxClientCPU: c.Float64("max-client-cpu"), MaxClientLag: c.Duration("max-client-lag"),
			Settle: c.Duration("settle"), Hold: c.Duration("hold"), Window: c.Duration("measure-window"), RequestTimeout: c.Duration("request-timeout"),
			Transport: c.String("transport"), URL: c.String("url"), Refine: c.Bool("refine"), Force: c.Bool("force"), Resume: c.Bool("resume"),
			RateRefineSteps: c.Int(measure.RateRefineFlag),
			Output:          c.String("output"), JournalDir: c.String("journal-dir"),
			Stdout: c.App.Writer, Stderr: c.App.ErrWriter, Env: processEnv(c),
			Seed: c.Uint64("seed"), Format: c.String("format"),
		},
	}
	o.aws = awsenv.FromContext(c)
	o.AWSConfig, o.Emulator, o.CloudWatchCompression = o.aws.Config, o.aws.Local, o.aws.Compression
	for _, d := range []struct {
		flag string
		dst  **time.Duration
	}{{flagRateSettle, &o.RateSettle}, {flagRateHold, &o.RateHold}, {flagRateWindow, &o.RateWindow}} {
		if c.IsSet(d.flag) {
			v := c.Duration(d.flag)
			*d.dst = &v
		}
	}
	if c.IsSet("slo-ms") {
		v := c.Int("slo-ms")
		o.sloMs = &v
	}
	if c.IsSet("stall-budget-ms") {
		v := c.Int("stall-budget-ms")
		o.stallBudgetMs = &v
	}
	return o
}

// Validate checks the whole command line and reports every problem at once, as one usage error (exit 2),
// each naming the flag and the fix. It resolves the model, the ladder, the SLO, the corpus, the output
// paths and the container digest.
func (o *qmaxOpts) Validate() error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.args) > 0 {
		bad("qmax takes no arguments, got %q: name the model with --model, see tts-bench qmax --help", o.args)
	}
	m, err := o.catalog.Get(o.modelID)
	modelKnown := err == nil
	if !modelKnown {
		bad("--model: %w", err)
	} else {
		o.Model = m
	}

	// The staircase.
	if o.maxConcurrency < 1 || o.maxConcurrency > bench.MaxConcurrency {
		bad("--max-concurrency %d: want 1 to %d", o.maxConcurrency, bench.MaxConcurrency)
	}
	steps := measure.DefaultLadder
	if o.ladderSet {
		if steps, err = measure.ParseLadder(o.ladder); err != nil {
			bad("--ladder: %w", err)
		}
	}
	if n := len(steps); n > 0 && steps[n-1] > o.maxConcurrency && o.maxConcurrency >= 1 {
		bad("--ladder goes up to %d, above --max-concurrency %d: raise --max-concurrency or shorten the ladder", steps[n-1], o.maxConcurrency)
	}
	if len(steps) > capacity.MaxQMaxSteps {
		bad("--ladder has %d steps: at most %d", len(steps), capacity.MaxQMaxSteps)
	}
	o.Ladder = bench.Staircase{Steps: steps, Extension: measure.DefaultLadderExtension, Max: o.maxConcurrency, MaxSteps: capacity.MaxQMaxSteps}
	for _, d := range []struct {
		flag string
		v    time.Duration
		zero bool
	}{{"--settle", o.Settle, true}, {"--hold", o.Hold, false}, {"--measure-window", o.Window, false}, {"--request-timeout", o.RequestTimeout, false}} {
		if d.v < 0 || (d.v == 0 && !d.zero) || d.v > maxStepDuration {
			lo := "a positive duration"
			if d.zero {
				lo = "0 or a positive duration"
			}
			bad("%s %s: want %s up to %s, as a Go duration such as 30s or 4m", d.flag, d.v, lo, maxStepDuration)
		}
	}
	if o.MinRequests < 1 || o.MinRequests > capacity.MaxCount {
		bad("--min-requests %d: want 1 to %d (default %d: a step's p95 then has a 95%% interval bounded by order statistics)", o.MinRequests, capacity.MaxCount, DefaultQMaxMinRequests)
	}
	if !(o.MaxClientCPU >= 0 && o.MaxClientCPU <= 1024) {
		bad("--max-client-cpu %g: want a share of a core from 0 (no bound) up", o.MaxClientCPU)
	}
	if o.MaxClientLag < 0 {
		bad("--max-client-lag %s: want 0 (no bound) or a positive duration", o.MaxClientLag)
	}
	if o.Window > 0 && o.Hold > 0 && o.Window > o.Hold {
		bad("--measure-window %s is longer than --hold %s: the window is the last part of the hold: shorten it or hold longer", o.Window, o.Hold)
	}

	// The rate staircase.
	if o.RateFractions, err = measure.ParseRateFractions(o.rateFractionsFlag); err != nil {
		bad("--%s: %w", flagRateFractions, err)
	}
	if o.RateRefineSteps < 0 || o.RateRefineSteps > measure.MaxRateRefineSteps {
		bad("--%s: %d: give 0 (no refinement) to %d steps", measure.RateRefineFlag, o.RateRefineSteps, measure.MaxRateRefineSteps)
	} else if n := len(o.RateFractions) + o.RateRefineSteps; n > capacity.MaxRateSteps {
		bad("--%s and --%s: %d rate steps at most, more than an artifact holds (%d): give fewer fractions or refinement steps", flagRateFractions, measure.RateRefineFlag, n, capacity.MaxRateSteps)
	}
	for _, d := range []struct {
		flag string
		v    *time.Duration
		zero bool
	}{{flagRateSettle, o.RateSettle, true}, {flagRateHold, o.RateHold, false}, {flagRateWindow, o.RateWindow, false}} {
		if d.v != nil && (*d.v < 0 || (*d.v == 0 && !d.zero) || *d.v > maxStepDuration) {
			bad("--%s %s: want a positive duration up to %s, as a Go duration such as 30s or 4m", d.flag, *d.v, maxStepDuration)
		}
	}
	if _, rh, rw := o.RateWindows(); rw > 0 && rh > 0 && rw > rh && (o.RateHold != nil || o.RateWindow != nil) {
		bad("--%s %s is longer than the rate steps' hold %s: the window is the last part of the hold: shorten it or hold longer (--%s)", flagRateWindow, rw, rh, flagRateHold)
	}
	if err := cliflags.CheckFormat(o.Format); err != nil {
		errs = append(errs, err)
	}

	// The judgement.
	if modelKnown {
		o.SLO = time.Duration(m.SLO.TTFABMs) * time.Millisecond
	}
	if o.sloMs != nil {
		if *o.sloMs < 1 || *o.sloMs > models.MaxSLOMs {
			bad("--slo-ms %d: want 1 to %d milliseconds (default: the catalog's slo.ttfab_ms)", *o.sloMs, models.MaxSLOMs)
		}
		o.SLO = time.Duration(*o.sloMs) * time.Millisecond
	}
	if modelKnown {
		o.StallBudget = m.SLO.StallBudget()
	}
	if o.stallBudgetMs != nil {
		if *o.stallBudgetMs < 0 || *o.stallBudgetMs > models.MaxSLOMs {
			bad("--stall-budget-ms %d: want 0 to %d milliseconds", *o.stallBudgetMs, models.MaxSLOMs)
		}
		o.StallBudget = time.Duration(*o.stallBudgetMs) * time.Millisecond
	}

	if !o.maxClientLagSet {
		// A lag of the client's adds to the TTFAB it measures: bound it to a twentieth of the SLO.
		o.MaxClientLag = max(measure.DefaultMaxClientLag, o.SLO/20)
	}

	// The transport.
	switch o.Transport {
	case capacity.TransportSageMakerStream:
		if o.URL != "" {
			bad("--url is for --transport http: drop it, or add --transport http to measure a container directly")
		}
	case capacity.TransportHTTP:
		if err := checkContainerURL(o.URL); err != nil {
			bad("--url: %w", err)
		}
		if o.aws.Local || o.aws.Region != "" || o.aws.Profile != "" {
			bad("--local, --region and --profile are for --transport sagemaker-stream: --transport http measures the container at --url and makes no AWS call")
		}
	default:
		bad("--transport %q: want sagemaker-stream or http", o.Transport)
	}
	errs = append(errs, o.aws.Validate()...)

	// Inputs and outputs.
	o.Corpus = bench.DefaultCorpus()
	if o.corpusPath != "" {
		if o.Corpus, err = bench.LoadCorpus(o.corpusPath); err != nil {
			bad("--corpus: %w", err)
		}
	}
	if o.Output == "" && modelKnown {
		o.Output = capacity.DefaultQMaxPath(m.ID)
	}
	if o.Output != "" {
		errs = append(errs, o.resolveOutputs()...)
	}
	if o.containerDir == "" {
		bad("--container-dir: is empty: give the container source tree (container)")
	} else if !o.dryRun {
		if o.ContainerDigest, err = capacity.SourceDigest(o.containerDir); err != nil {
			bad("--container-dir: %w: run from the repository root or pass --container-dir", err)
		}
	}
	if o.Transport == capacity.TransportSageMakerStream && modelKnown {
		if _, err := cloud.JournalPath(o.JournalDir, m.EndpointName()); err != nil {
			bad("--journal-dir: %w", err)
		}
	}
	return exitcode.Usage(errors.Join(errs...))
}

// resolveOutputs derives the records and chart paths from --output and checks that all three can be
// written: plain file names, a directory that is one (or can be created), no directory in their place.
func (o *qmaxOpts) resolveOutputs() []error {
	paths, errs := artifactOutputs(o.Output, "artifacts/<model>/qmax.json", ".records.jsonl.gz", ".svg", ".rate.svg")
	if paths == nil {
		return errs
	}
	o.RecordsPath, o.ChartPath, o.RateChartPath = paths[0], paths[1], paths[2]
	if !plainFileName.MatchString(filepath.Base(o.RecordsPath)) {
		errs = append([]error{fmt.Errorf("--output %s: the records file name %q is not a plain file name (letters, digits, '.', '_', '-'): rename the output", o.Output, filepath.Base(o.RecordsPath))}, errs...)
	}
	return errs
}

// artifactOutputs checks --output, an artifact's .json file (example is its usual path), and derives from it
// the files written beside it (its stem with each suffix): none of them may exist as anything but a regular
// file, and the directory must be one. It returns the derived paths, nil when output is not a .json file.
func artifactOutputs(output, example string, suffixes ...string) ([]string, []error) {
	base := filepath.Base(output)
	if !strings.HasSuffix(base, ".json") || base == ".json" {
		return nil, []error{fmt.Errorf("--output %s: want a file name ending in .json, e.g. %s", output, example)}
	}
	var paths []string
	for _, suffix := range suffixes {
		paths = append(paths, strings.TrimSuffix(output, ".json")+suffix)
	}
	var errs []error
	for _, p := range append([]string{output}, paths...) {
		if fi, err := os.Stat(p); err == nil && !fi.Mode().IsRegular() {
			errs = append(errs, fmt.Errorf("--output: %s exists and is not a regular file: remove it or choose another --output", p))
		}
	}
	if fi, err := os.Stat(filepath.Dir(output)); err == nil && !fi.IsDir() {
		errs = append(errs, fmt.Errorf("--output %s: %s is not a directory: choose another --output", output, filepath.Dir(output)))
	}
	return paths, errs
}

// plainFileName is what an artifact may record as a file beside it (capacity's artifactNamePattern).
var plainFileName = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$`)

// checkContainerURL accepts an absolute http(s) URL of a container, without query or fragment.
func checkContainerURL(s string) error {
	if s == "" {
		return errors.New("is required with --transport http: give the container's base URL, e.g. --url http://127.0.0.1:8080")
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("%q is not a container URL: want http://host:port (the container's base; /invocations is added)", s)
	}
	return nil
}

// Execute runs the measurement Validate prepared (or prints its plan with --dry-run).
func (o *qmaxOpts) Execute(ctx context.Context) error {
	if o.dryRun {
		where := "AWS (standard credential chain"
		if o.aws.Local {
			where = "the local emulator of " + o.aws.StateDir + " (--local"
		}
		if o.aws.Region != "" {
			where += ", region " + o.aws.Region
		}
		if o.aws.Profile != "" {
			where += ", profile " + o.aws.Profile
		}
		return o.DryRun(o.Stdout, where+")")
	}
	return o.QMax.Run(ctx)
}
