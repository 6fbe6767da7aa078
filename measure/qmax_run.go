package measure

import (
	"cmp"
	"compress/gzip"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

// measuringStreamTransport is the sagemaker-stream transport qmax measures with: one SDK client per worker
// (an event-stream decoder races when streams share a client, aws/smithy-go#714) with the retryer off
// (bench.NoRetry): a throttled or 5xx answer is an error record, never a slower success inside the TTFAB
// clock. The artifact records the policy (retry_policy).
func measuringStreamTransport(cl cloud.Clients, endpoint string) bench.Transport {
	return cl.StreamTransport(endpoint, bench.NoRetry)
}

// Bounds of the run's control-plane waits.
const (
	// restoreTimeout bounds putting the endpoint back: an instance count change on SageMaker takes minutes.
	restoreTimeout = cloud.DefaultWaitTimeout + 5*time.Minute
	// metricWait bounds waiting, after the last step, for ConcurrentRequestsPerModel datapoints CloudWatch
	// had not published when a step ended (AWS publishes with a delay of a minute or two).
	metricWait = 3 * time.Minute
	// metricPoll is the delay between two reads while waiting for datapoints.
	metricPoll = 15 * time.Second
)

// QMax is one measurement of Q_max, as tts-bench qmax's Validate resolved it from the command line: the model,
// the staircase, the judgement, the transport and where the artifact, records and charts go.
type QMax struct {
	MinRequests          int
	MaxClientCPU         float64
	MaxClientLag         time.Duration
	Settle, Hold, Window time.Duration
	RequestTimeout       time.Duration
	Transport, URL       string
	Refine, Force        bool
	Resume               bool
	Output               string
	JournalDir           string
	RateSettle, RateHold *time.Duration
	RateWindow           *time.Duration
	Seed                 uint64
	Format               string
	// AWSConfig loads the AWS configuration of --local, --region and --profile (awsenv.Settings.Config);
	// Emulator says it is the local emulator's (--local).
	AWSConfig func(context.Context) (aws.Config, error)
	Emulator  bool
	// CloudWatchCompression reads the CloudWatch compression of what AWSConfig points at
	// (awsenv.Settings.Compression: 1 on AWS, the emulator's published factor), recorded in the artifact; nil
	// records none.
	CloudWatchCompression func(context.Context) (int, error)
	Stdout, Stderr        io.Writer
	// Env is the client factory, the signals and the command line of the process.
	Env Env

	Model                  models.Model
	Ladder                 bench.Staircase
	SLO, StallBudget       time.Duration
	Corpus                 *bench.Corpus
	RecordsPath, ChartPath string
	RateChartPath          string
	ContainerDigest        string
	RateFractions          []float64
	// RateRefineSteps is the most refinement steps after the fixed fractions (0: none; RateBracket).
	RateRefineSteps int
}

// Endpoint is the endpoint the run measures (or, with --transport http, the URL).
func (o *QMax) Endpoint() string {
	if o.Transport == capacity.TransportHTTP {
		return o.URL
	}
	return o.Model.EndpointName()
}

// EngineConfig is the bench configuration of the run, without transport and records.
func (o *QMax) EngineConfig(runID string) bench.Config {
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold, cfg.Measure = o.Settle, o.Hold, o.Window
	cfg.RequestTimeout, cfg.Grace = o.RequestTimeout, o.RequestTimeout
	cfg.SLO, cfg.SLOPercentile = o.SLO, o.Model.SLO.Percentile
	cfg.StallBudget = o.StallBudget
	cfg.MinRequests = o.MinRequests
	cfg.Corpus, cfg.RunID, cfg.Seed = o.Corpus, runID, o.Seed
	return cfg
}

// qmaxDriftOptions check the endpoint against the measurement configuration qmax needs: no scaling target,
// policies or alarms that could move the instance count, no suspension or journal left by an earlier run,
// the endpoint InService.
func qmaxDriftOptions(o *QMax) cloud.DriftOptions {
	return cloud.DriftOptions{
		Model: o.Model.ID, Endpoint: o.Endpoint(), Variant: models.VariantName, JournalDir: o.JournalDir,
		CatalogInstances: int32(o.Model.InitialInstanceCount),
		NoPlanReasons:    []string{"qmax measures one pinned instance in the measurement configuration (no scaling)"},
	}
}

// DurationBound is the longest the run can take by its plan: every step of the worst-case ladder and of
// --refine, each measured twice (a doubled window), and every rate step twice with its request timeout. The
// measurement marker expires cloud.MarkerMargin after it.
func (o *QMax) DurationBound() time.Duration {
	cfg := o.EngineConfig("bound")
	steps := len(o.Ladder.WorstCase())
	if o.Refine {
		steps += o.Ladder.MostRefineSteps()
	}
	d := time.Duration(steps) * 2 * cfg.StepDuration()
	if n := len(o.RateFractions); n > 0 {
		rs, rh, _ := o.RateWindows()
		d += time.Duration(n+o.RateRefineSteps) * 2 * (rs + rh + cfg.RequestTimeout)
	}
	return d
}

// qmaxRun is the state of one measurement run.
type qmaxRun struct {
	o       *QMax
	runID   string
	started time.Time
	// instanceType is what the endpoint config deploys ("local" on the emulator and for --transport http).
	instanceType string
	// compression is the CloudWatch compression of the platform measured (0 when unknown: --transport http).
	compression int
	cfg         bench.Config
	// records streams to a temporary file beside the records path (renamed into place by write), so a long
	// run's records never accumulate in memory; recordsHash digests the compressed bytes as they are written.
	records     *atomicfile.File
	recordsHash hash.Hash
	gz          *gzip.Writer
	view        stepView
	cw          cloud.MetricReadAPI
	steps       []bench.StepResult
	cwMax       map[int]float64
	// cwOuter marks the steps whose window was shorter than two metric periods: their datapoints also
	// cover the neighbouring steps.
	cwOuter  map[int]bool
	warnings []string
	// highestRPS is the highest closed-loop throughput the rate staircase took fractions of (0: none ran);
	// rateSteps its steps, cwRate the mean 10-s CloudWatch Maximum per rate step index.
	highestRPS float64
	rateSteps  []bench.RateStepResult
	cwRate     map[int]float64
	// remeasured and inconclusive mark the steps measured twice, and those still inconclusive after that.
	remeasured, inconclusive map[int]bool
	// client is the measuring process's own use per step (this run's steps); littleWarned the steps whose
	// Little's-law miss was already warned about.
	client       map[int]clientUse
	littleWarned map[int]bool
}

// Run measures Q_max: the staircase, the rate staircase, then records, charts and artifact.
func (o *QMax) Run(ctx context.Context) error {
	if err := probeWritable(filepath.Dir(o.Output)); err != nil {
		return exitcode.Usage(fmt.Errorf("--output %s: %w: choose another --output (checked before measuring, so no run is lost to it)", o.Output, err))
	}
	r := &qmaxRun{o: o, runID: newRunID(), started: time.Now().UTC(), cwMax: map[int]float64{}, cwOuter: map[int]bool{}, cwRate: map[int]float64{}, remeasured: map[int]bool{}, inconclusive: map[int]bool{}, client: map[int]clientUse{}, littleWarned: map[int]bool{}, instanceType: models.LocalInstanceType}
	r.cfg = o.EngineConfig(r.runID)
	var resume *resumeState
	if o.Resume {
		st, err := o.loadResume(r.cfg.Judge())
		if err != nil {
			return exitcode.Usage(fmt.Errorf("qmax %s: %w", o.Model.ID, err))
		}
		resume = st
	}
	tmp, err := atomicfile.Create(o.RecordsPath, 0o644)
	if err != nil {
		return exitcode.Usage(fmt.Errorf("--output %s: create the records file: %w: choose another --output", o.Output, err))
	}
	r.records, r.recordsHash = tmp, sha256.New()
	defer r.discardRecords()
	if resume != nil {
		if err := r.takeOver(resume, io.MultiWriter(tmp, r.recordsHash)); err != nil {
			return exitcode.Usage(fmt.Errorf("--output %s: copy the partial run's records: %w", o.Output, err))
		}
		fmt.Fprintf(o.Stderr, "qmax %s: resuming run %s after %d finished step(s) and %d rate step(s)\n", o.Model.ID, r.runID, len(r.steps), len(r.rateSteps))
	}
	r.gz = gzip.NewWriter(io.MultiWriter(tmp, r.recordsHash))
	r.cfg.Records = r.gz

	if o.Transport == capacity.TransportHTTP {
		if err := pingContainer(ctx, o.URL); err != nil {
			return exitcode.CheckFailedf("qmax %s: %w: start the container (speech-container serve) or correct --url; nothing was measured", o.Model.ID, err)
		}
		r.cfg.Transport = bench.NewHTTP(o.URL)
		fmt.Fprintf(o.Stderr, "qmax %s: measuring the container at %s directly (no endpoint, no AWS call)\n", o.Model.ID, o.URL)
		return r.measureAndWrite(ctx)
	}

	sess, err := newSession(ctx, "qmax", o.Model.ID, o.Endpoint(), models.VariantName, o.JournalDir, o.AWSConfig, o.Env, o.Stderr)
	if err != nil {
		return err
	}
	r.cw = sess.cl.CloudWatch
	if r.compression, err = readCompression(ctx, o.CloudWatchCompression); err != nil {
		return err
	}
	r.cfg.Transport = measuringStreamTransport(sess.cl, o.Endpoint())
	if err := o.preflight(ctx, sess); err != nil {
		return err
	}
	if st, err := cloud.ReadEndpoint(ctx, sess.cl.SageMaker, o.Endpoint(), models.VariantName); err == nil {
		if spec, _, err := cloud.DescribeDeployed(ctx, sess.cl.SageMaker, st.Output); err == nil && spec.InstanceType != "" {
			r.instanceType = spec.InstanceType
		}
	}

	fmt.Fprintf(o.Stderr, "qmax %s: writing the journal, suspending dynamic scaling and pinning %s/%s to 1 instance\n", o.Model.ID, o.Endpoint(), models.VariantName)
	frozen, err := sess.freeze(ctx, r.runID, o.Env.CommandLine, 1, o.DurationBound(), o.Force)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "qmax %s: frozen (journal %s)\n", o.Model.ID, frozen.Path)
	runErr := r.measureAndWrite(ctx)
	restoreErr := sess.restore(frozen)
	return errors.Join(runErr, restoreErr)
}

// preflight refuses a measurement that cannot be trusted: drift errors (unless --force), an endpoint that
// is not InService, a queue bound that would reject part of the ladder.
func (o *QMax) preflight(ctx context.Context, sess *session) error {
	if err := sess.checkDrift(ctx, qmaxDriftOptions(o), o.Force, "a measurement now would not measure one pinned, undisturbed instance"); err != nil {
		return err
	}
	st, err := cloud.ReadEndpoint(ctx, sess.cl.SageMaker, o.Endpoint(), models.VariantName)
	if err != nil {
		if cloud.IsNotFound(err) {
			return exitcode.CheckFailedf("qmax %s: the endpoint %s does not exist: deploy it first (speech-infra deploy %s)", o.Model.ID, o.Endpoint(), o.Model.ID)
		}
		return fmt.Errorf("qmax %s: describe endpoint %s: %w", o.Model.ID, o.Endpoint(), err)
	}
	if !st.InService {
		return exitcode.CheckFailedf("qmax %s: the endpoint %s is %s, not InService: wait for it (or repair it) and run again", o.Model.ID, o.Endpoint(), st.Status)
	}
	spec, model, err := cloud.DescribeDeployed(ctx, sess.cl.SageMaker, st.Output)
	if err != nil {
		return fmt.Errorf("qmax %s: %w", o.Model.ID, err)
	}
	return o.checkQueue(spec.Environment, model)
}

// checkQueue refuses a container whose queue shield would answer part of the ladder with 503s: the
// staircase would measure the shield, not the instance.
func (o *QMax) checkQueue(env map[string]string, model string) error {
	raw, ok := env["QUEUE_MAX_DEPTH"]
	if !ok {
		return exitcode.CheckFailedf("qmax %s: the model %s sets no QUEUE_MAX_DEPTH, so its queue bound is unknown: deploy in the measurement configuration (QUEUE_MAX_DEPTH=0: speech-infra deploy %s without a plan)", o.Model.ID, model, o.Model.ID)
	}
	depth, err := strconv.Atoi(strings.TrimSpace(raw))
	if err != nil || depth < 0 {
		return exitcode.CheckFailedf("qmax %s: the model %s sets QUEUE_MAX_DEPTH=%q, not a depth: deploy in the measurement configuration (QUEUE_MAX_DEPTH=0)", o.Model.ID, model, raw)
	}
	reach := o.Ladder.WorstCase()
	top := reach[len(reach)-1]
	if depth > 0 && depth < top {
		return exitcode.CheckFailedf("qmax %s: the container of %s admits at most QUEUE_MAX_DEPTH=%d requests and answers more with 503, but the ladder reaches concurrency %d: "+
			"the staircase would measure the shield, not the instance: deploy without a plan, in the measurement configuration QUEUE_MAX_DEPTH=0 (move artifacts/%s/plan.json aside and run speech-infra deploy %s), or keep the ladder at or below %d (--ladder, --max-concurrency)",
			o.Model.ID, model, depth, top, o.Model.ID, o.Model.ID, depth)
	}
	return nil
}

// measureAndWrite runs the staircase (and the bisection with --refine), then writes records, chart and
// artifact. An interrupted or failed run writes no artifact.
func (r *qmaxRun) measureAndWrite(ctx context.Context) error {
	o := r.o
	r.view = newStepView(o.Stderr)
	err := r.staircase(ctx)
	if err == nil {
		err = r.rateStaircase(ctx)
	}
	r.view.Close()
	if err != nil && (ctx.Err() != nil || errors.Is(err, errLostConnection)) {
		why := "interrupted"
		if ctx.Err() == nil {
			why = "lost its connection"
		} else {
			err = ctx.Err()
		}
		if len(r.steps) == 0 {
			return fmt.Errorf("qmax %s: %s before the first step finished: no artifact written: %w", o.Model.ID, why, err)
		}
		if werr := r.write(true); werr != nil {
			return fmt.Errorf("qmax %s: %s after %d step(s) and %d rate step(s): %w; the partial artifact could not be written: %w", o.Model.ID, why, len(r.steps), len(r.rateSteps), err, werr)
		}
		return fmt.Errorf("qmax %s: %s after %d step(s) and %d rate step(s): wrote the partial artifact %s (complete: false; plan refuses it): run the same command with --resume to finish it: %w",
			o.Model.ID, why, len(r.steps), len(r.rateSteps), o.Output, err)
	}
	if err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("qmax %s: interrupted after %d step(s) and %d rate step(s): no artifact written: %w", o.Model.ID, len(r.steps), len(r.rateSteps), ctx.Err())
		}
		return fmt.Errorf("qmax %s: %w: no artifact written", o.Model.ID, err)
	}
	r.awaitMetrics(ctx)
	return r.write(false)
}

// errLostConnection stops the staircase when a step's requests got no answer at all: the endpoint (or the
// network to it) went away, and the finished steps are kept as a partial artifact.
var errLostConnection = errors.New("lost the connection to the endpoint")

// staircase runs the ladder until the first failing step, then bisects the bracket when asked.
func (r *qmaxRun) staircase(ctx context.Context) error {
	var passedInOrder []int
	for {
		c, ok := r.o.Ladder.Next(passedInOrder)
		if !ok {
			break
		}
		s, done := r.measured(c) // a resumed run's finished step
		if !done {
			var err error
			if s, err = r.step(ctx, c); err != nil {
				return err
			}
		}
		if !s.MeetsSLO {
			break
		}
		passedInOrder = append(passedInOrder, c)
	}
	if !r.o.Refine {
		return nil
	}
	for {
		hp, lf := capacity.Bracket(r.passed())
		if lf == 0 {
			return nil
		}
		c, ok := bench.Bisect(hp, lf)
		if !ok {
			return nil
		}
		if _, err := r.step(ctx, c); err != nil {
			return err
		}
	}
}

// passed maps each measured concurrency to whether it met the SLO.
func (r *qmaxRun) passed() map[int]bool {
	m := map[int]bool{}
	for _, s := range r.steps {
		m[s.Concurrency] = s.MeetsSLO
	}
	return m
}

// step runs one step with the live view, reads its CloudWatch concurrency and reports its verdict.
func (r *qmaxRun) step(ctx context.Context, c int) (bench.StepResult, error) {
	cfg := r.cfg
	cfg.Observer = func(p bench.Progress) { r.view.Update(progressOf(p)) }
	r.view.StartStep(len(r.steps)+1, c, cfg.Settle+cfg.Hold)
	watch := watchClient()
	s, err := bench.RunStep(ctx, cfg, c)
	use := watch.Stop()
	if err != nil {
		r.view.EndStep("stopped: " + err.Error())
		return s, err
	}
	if s.Straddles(r.cfg.SLO) {
		// Inconclusive: the confidence interval of the p95 holds the SLO, so pass or fail could be
		// chance. Measure once more with a window twice as long (the hold grows by one window), then judge as
		// measured; the records of both windows are kept, the later one is the step's (bench.Summarize).
		r.view.EndStep(fmt.Sprintf("INCONCLUSIVE: the 95%% interval of the p%d TTFAB, [%s, %s] ms, holds the SLO %s ms: measuring again with a %s window",
			r.cfg.SLOPercentile, fmtMs(s.TTFABCILowMs), fmtMs(s.TTFABCIHighMs), fmtMs(float64(r.cfg.SLO/time.Millisecond)), 2*cfg.Measure))
		cfg.Hold, cfg.Measure = cfg.Hold+cfg.Measure, 2*cfg.Measure
		r.view.StartStep(len(r.steps)+1, c, cfg.Settle+cfg.Hold)
		watch = watchClient()
		s, err = bench.RunStep(ctx, cfg, c)
		use = watch.Stop()
		if err != nil {
			r.view.EndStep("stopped: " + err.Error())
			return s, err
		}
		r.remeasured[c] = true
		if s.Straddles(r.cfg.SLO) {
			r.inconclusive[c] = true
			r.warn(fmt.Sprintf("step at concurrency %d is still inconclusive after a second, longer measurement (95%% interval [%s, %s] ms around the SLO %s ms): judged as measured and flagged",
				c, fmtMs(s.TTFABCILowMs), fmtMs(s.TTFABCIHighMs), fmtMs(float64(r.cfg.SLO/time.Millisecond))))
		}
	}
	if s.Requests > 0 && float64(s.NoAnswer)/float64(s.Requests) > r.cfg.MaxErrorRate {
		r.view.EndStep(fmt.Sprintf("stopped: %d of %d requests got no answer at all", s.NoAnswer, s.Requests))
		return s, fmt.Errorf("step at concurrency %d: %w: %d of %d requests got no answer at all (refused, reset, unreachable)", c, errLostConnection, s.NoAnswer, s.Requests)
	}
	r.client[c] = use
	if why := r.o.judgeClient(use); why != "" {
		s.Usable = false
		s.UnusableReason = strings.TrimPrefix(strings.Join([]string{s.UnusableReason, why}, "; "), "; ")
	}
	r.steps = append(r.steps, s)
	r.readConcurrency(ctx, s, false)
	r.view.EndStep(verdict(s, r.cfg))
	if !s.Usable {
		r.warn(fmt.Sprintf("step at concurrency %d is not usable: %s", c, s.UnusableReason))
	}
	return s, nil
}

// verdict is the one-line judgement of a step.
func verdict(s bench.StepResult, cfg bench.Config) string {
	head := "PASS"
	if !s.MeetsSLO {
		head = "FAIL (" + strings.Join(s.FailReasons, "; ") + ")"
	}
	ci := ""
	if s.TTFABCIOK {
		ci = fmt.Sprintf(" [95%% CI %s–%s]", fmtMs(s.TTFABCILowMs), fmtMs(s.TTFABCIHighMs))
	}
	return fmt.Sprintf("%s: p%d TTFAB %s ms%s (SLO %s ms), p95 stall %s ms, %d ok, %d errors, %d shed, %.2f rps, mean response %s ms",
		head, cfg.SLOPercentile, fmtMs(s.TTFABSLOMs), ci, fmtMs(float64(cfg.SLO/time.Millisecond)), fmtMs(s.StallP95Ms), s.OK, s.Errors, s.Shed, s.AchievedRPS, fmtMs(s.ResponseMeanMs))
}

// progressOf maps the engine's live numbers to the view's.
func progressOf(p bench.Progress) stepStatus {
	return stepStatus{Phase: p.Phase, Completed: p.Completed, Failed: p.Failed,
		TTFABP95Ms: float64(p.TTFABP95) / float64(time.Millisecond), StallP95Ms: float64(p.StallP95) / float64(time.Millisecond)}
}

// readConcurrency reads the Maximum of ConcurrentRequestsPerModel over the step's measure window and
// records it. Periods wholly inside the window are read when there are any (they can be read later without
// catching a neighbouring step); a window shorter than two periods reads the periods around it, right
// after the step, before the next one starts. late says this is the read after the run.
func (r *qmaxRun) readConcurrency(ctx context.Context, s bench.StepResult, late bool) {
	if r.cw == nil || s.WindowEnd.IsZero() {
		return
	}
	p := cloud.ConcurrencyPeriod
	start, end := ceilTime(s.WindowStart, p), s.WindowEnd.Truncate(p)
	outer := !end.After(start)
	if outer {
		if late {
			return
		}
		start, end = s.WindowStart.Truncate(p), ceilTime(s.WindowEnd, p)
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pts, err := cloud.ReadConcurrency(rctx, r.cw, r.o.Endpoint(), models.VariantName, start, end)
	if err != nil {
		r.warn(fmt.Sprintf("step at concurrency %d: %v", s.Concurrency, err))
		return
	}
	if v, ok := cloud.MaxValue(pts); ok {
		r.cwMax[s.Concurrency], r.cwOuter[s.Concurrency] = v, outer
	}
}

// awaitMetrics reads again, for at most metricWait, the steps CloudWatch had no datapoint for yet.
func (r *qmaxRun) awaitMetrics(ctx context.Context) {
	if r.cw == nil {
		return
	}
	deadline := time.Now().Add(metricWait)
	for {
		var missing []bench.StepResult
		for _, s := range r.steps {
			if _, ok := r.cwMax[s.Concurrency]; !ok {
				missing = append(missing, s)
			}
		}
		var missingRate []bench.RateStepResult
		for _, s := range r.rateSteps {
			if _, ok := r.cwRate[s.ID.Index]; !ok && rateWindowHasPeriod(s) {
				missingRate = append(missingRate, s)
			}
		}
		if len(missing)+len(missingRate) == 0 || ctx.Err() != nil {
			return
		}
		if time.Now().After(deadline) {
			if len(missing) > 0 {
				var cs []int
				for _, s := range missing {
					cs = append(cs, s.Concurrency)
				}
				r.warn(fmt.Sprintf("ConcurrentRequestsPerModel had no datapoint for the step(s) at concurrency %s within %s: their CloudWatch ratio is not recorded (the plan then assumes 1)", JoinInts(cs), metricWait))
			}
			if len(missingRate) > 0 {
				var is []int
				for _, s := range missingRate {
					is = append(is, s.ID.Index+1)
				}
				r.warn(fmt.Sprintf("ConcurrentRequestsPerModel had no datapoint for the rate step(s) %s within %s: their cloudwatch_max_10s is not recorded", JoinInts(is), metricWait))
			}
			return
		}
		fmt.Fprintf(r.o.Stderr, "qmax %s: waiting for CloudWatch to publish ConcurrentRequestsPerModel for %d step(s)\n", r.o.Model.ID, len(missing)+len(missingRate))
		select {
		case <-ctx.Done():
			return
		case <-time.After(metricPoll):
		}
		for _, s := range missing {
			r.readConcurrency(ctx, s, true)
		}
		for _, s := range missingRate {
			r.readRateConcurrency(ctx, s)
		}
	}
}

func ceilTime(t time.Time, d time.Duration) time.Time {
	if tt := t.Truncate(d); tt.Equal(t) {
		return t
	} else {
		return tt.Add(d)
	}
}

// warn prints a warning now and keeps it for the summary.
func (r *qmaxRun) warn(msg string) {
	r.warnings = append(r.warnings, msg)
	fmt.Fprintf(r.o.Stderr, "qmax %s: warning: %s\n", r.o.Model.ID, msg)
}

// artifact folds the steps into the qmax artifact (capacity.NewQMax; records digest and name set by write)
// and warns once about each note of it.
func (r *qmaxRun) artifact() *capacity.QMax {
	o := r.o
	run := capacity.QMaxRun{
		Model: o.Model.ID, Endpoint: o.Endpoint(), InstanceType: r.instanceType, Emulator: o.Emulator, CloudWatchCompression: r.compression, ModelRevision: o.Model.Revision(),
		ContainerDigest: o.ContainerDigest, Transport: o.Transport, RunID: r.runID,
		SLOTTFABMs: int(o.SLO / time.Millisecond), SLOPercentile: r.cfg.SLOPercentile,
		StartedAt: r.started, EndedAt: time.Now().UTC(), CloudWatchPeriod: cloud.ConcurrencyPeriod,
	}
	for _, s := range r.steps {
		m := capacity.MeasuredStep{Step: s, Remeasured: r.remeasured[s.Concurrency], Inconclusive: r.inconclusive[s.Concurrency]}
		if u, ok := r.client[s.Concurrency]; ok {
			m.Client = &capacity.ClientUse{CPUCores: u.CPUCores, LagP99Ms: u.LagP99Ms, LagMaxMs: u.LagMaxMs}
		}
		if v, ok := r.cwMax[s.Concurrency]; ok {
			m.CloudWatchMax, m.CloudWatchOuter = &v, r.cwOuter[s.Concurrency]
		}
		run.Steps = append(run.Steps, m)
	}
	if len(r.rateSteps) > 0 {
		run.HighestThroughputRPS, run.RateQueueMaxDepth = r.highestRPS, o.rateShield()
		for _, s := range r.rateSteps {
			run.RateSteps = append(run.RateSteps, r.rateStepOf(s))
		}
		// By fraction: the refinement's steps lie between the fixed ones (the records keep the order run).
		slices.SortFunc(run.RateSteps, func(a, b capacity.RateStep) int { return cmp.Compare(a.Fraction, b.Fraction) })
	}
	q, notes := capacity.NewQMax(run)
	for _, n := range notes {
		// A Little's law miss is warned once per step (write may fold the steps more than once); the other
		// notes, as before, each time.
		if n.Check == capacity.NoteLittlesLaw {
			if r.littleWarned[n.Step] {
				continue
			}
			r.littleWarned[n.Step] = true
		}
		r.warn(n.Text)
	}
	return q
}

// write writes the records, the chart and the artifact, each atomically, the artifact last (it names the
// records' digest). A run where no step met the SLO writes records and chart but no artifact: there is no
// Q_max to plan from. partial writes the finished steps of an interrupted run, complete: false.
func (r *qmaxRun) write(partial bool) error {
	o := r.o
	if err := r.gz.Close(); err != nil {
		return fmt.Errorf("qmax %s: compress the records: %w", o.Model.ID, err)
	}
	q := r.artifact()
	complete := !partial
	q.Complete, q.Settings = &complete, o.settings()
	q.RecordsFile, q.RecordsSHA256 = baseName(o.RecordsPath), "sha256:"+hex.EncodeToString(r.recordsHash.Sum(nil))
	if err := r.keepRecords(); err != nil {
		return exitcode.Usage(fmt.Errorf("qmax %s: write the records: %w: choose another --output", o.Model.ID, err))
	}
	fmt.Fprintf(o.Stderr, "qmax %s: wrote %d step(s) of records to %s\n", o.Model.ID, len(r.steps), o.RecordsPath)
	svg, err := renderChartSVG(chartOf(q, r.steps, r.cfg))
	if err != nil {
		return fmt.Errorf("qmax %s: %w", o.Model.ID, err)
	}
	if err := capacity.WriteFileAtomic(o.ChartPath, svg); err != nil {
		return exitcode.Usage(fmt.Errorf("qmax %s: write the chart: %w: choose another --output", o.Model.ID, err))
	}
	fmt.Fprintf(o.Stderr, "qmax %s: wrote the staircase chart to %s\n", o.Model.ID, o.ChartPath)
	if len(q.RateSteps) > 0 {
		svg, err := renderRateChartSVG(q)
		if err != nil {
			return fmt.Errorf("qmax %s: %w", o.Model.ID, err)
		}
		if err := capacity.WriteFileAtomic(o.RateChartPath, svg); err != nil {
			return exitcode.Usage(fmt.Errorf("qmax %s: write the rate chart: %w: choose another --output", o.Model.ID, err))
		}
		fmt.Fprintf(o.Stderr, "qmax %s: wrote the rate staircase chart to %s\n", o.Model.ID, o.RateChartPath)
	}
	if partial {
		if errs := q.VerifyPartial(); len(errs) > 0 {
			return fmt.Errorf("the partial artifact does not verify: %w", errors.Join(errs...))
		}
		if err := capacity.WriteJSON(o.Output, q); err != nil {
			return fmt.Errorf("%w: choose another --output", err)
		}
		fmt.Fprintf(o.Stderr, "qmax %s: wrote the partial artifact %s (%d finished step(s), complete: false)\n", o.Model.ID, o.Output, len(q.Steps))
		return nil
	}
	if q.QMax < 1 {
		return exitcode.CheckFailedf("qmax %s: no step met the SLO (p%d TTFAB ≤ %d ms, p95 stall ≤ %s): no artifact written: lower the first step of the ladder, relax the SLO or choose a larger instance",
			o.Model.ID, q.SLOPercentile, q.SLOTTFABMs, r.cfg.StallBudget+r.cfg.StallJitter)
	}
	if errs := q.Verify(); len(errs) > 0 {
		return fmt.Errorf("qmax %s: the measured artifact does not verify (a bug in tts-bench: report it with the records %s): %w", o.Model.ID, o.RecordsPath, errors.Join(errs...))
	}
	if err := capacity.WriteJSON(o.Output, q); err != nil {
		return exitcode.Usage(fmt.Errorf("qmax %s: %w: choose another --output", o.Model.ID, err))
	}
	if o.Format == "json" {
		var data []byte
		if data, err = capacity.MarshalArtifact(q); err == nil {
			_, err = o.Stdout.Write(data)
		}
	} else {
		err = RenderQMaxSummary(o.Stdout, q)
	}
	if err != nil {
		return fmt.Errorf("print the summary: %w", err)
	}
	fmt.Fprintf(o.Stderr, "qmax %s: wrote %s (Q_max %d by TTFAB and stall; by TTFAB alone %s)\n", o.Model.ID, o.Output, q.QMax, ttfabOnlyQMax(q))
	return nil
}

// keepRecords puts the records in place (atomicfile.File.Commit: synced, 0644, renamed over the records
// path).
func (r *qmaxRun) keepRecords() error {
	f := r.records
	if f == nil {
		return errors.New("the records file is already closed")
	}
	r.records = nil
	return f.Commit()
}

// discardRecords removes the records' temporary file when write did not keep it (an error, an interrupted
// run): no partial records file is left behind.
func (r *qmaxRun) discardRecords() {
	if r.records == nil {
		return
	}
	r.records.Discard()
	r.records = nil
}

// chartOf is the chart of an artifact and its steps.
func chartOf(q *capacity.QMax, steps []bench.StepResult, cfg bench.Config) staircaseChart {
	c := staircaseChart{
		Title:      fmt.Sprintf("Q_max of %s on %s (%s, closed loop)", q.Model, q.InstanceType, q.Transport),
		Percentile: q.SLOPercentile, SLOMs: float64(q.SLOTTFABMs), StallBudgetMs: float64((cfg.StallBudget + cfg.StallJitter) / time.Millisecond),
		QMax: q.QMax, LowestFail: q.BracketLowestFail,
	}
	for _, s := range steps {
		c.Steps = append(c.Steps, chartStep{Concurrency: s.Concurrency, TTFABMs: s.TTFABSLOMs, StallMs: s.StallP95Ms, Pass: s.MeetsSLO})
	}
	return c
}

// RenderQMaxSummary prints the staircase and Q_max for humans (stdout).
func RenderQMaxSummary(w io.Writer, q *capacity.QMax) error {
	var b strings.Builder
	fmt.Fprintf(&b, "Q_max of %s on %s over %s: %d by p%d TTFAB and p95 stall, the one the plan uses", q.Model, q.InstanceType, q.Transport, q.QMax, q.SLOPercentile)
	if q.BracketLowestFail > 0 {
		fmt.Fprintf(&b, " (passes at %d, fails at %d)\n", q.BracketHighestPass, q.BracketLowestFail)
	} else {
		fmt.Fprintf(&b, " (a lower bound: no step failed)\n")
	}
	fmt.Fprintf(&b, "Q_max by p%d TTFAB alone (the original's definition, for comparison only): %s\n", q.SLOPercentile, ttfabOnlyQMax(q))
	fmt.Fprintf(&b, "SLO p%d TTFAB ≤ %d ms%s; uncontended service time %s ms mean, %s ms p95\n", q.SLOPercentile, q.SLOTTFABMs, stallSLO(q), fmtMs(q.ServiceTimeMeanMs), fmtMs(q.ServiceTimeP95Ms))
	fmt.Fprintf(&b, "%-7s %-5s %-5s %13s %15s %13s %13s %8s %8s %8s %9s %s\n", "C (req)", "pass", "ttfab", fmt.Sprintf("p%d TTFAB ms", q.SLOPercentile), "95% CI ms", "p95 stall ms", "resp mean ms", "rps", "ok", "failed", "cw/client", "usable")
	for _, s := range q.Steps {
		pass, ttfab, usable, cw := "no", "-", "yes", "-"
		if s.MeetsSLO {
			pass = "yes"
		}
		if s.MeetsTTFABSLO != nil {
			ttfab = map[bool]string{true: "yes", false: "no"}[*s.MeetsTTFABSLO]
		}
		if !s.Usable {
			usable = "no: " + s.UnusableReason
		}
		if s.CloudWatchRatio > 0 {
			cw = fmt.Sprintf("%.2f", s.CloudWatchRatio)
		}
		ci := "-"
		if s.TTFABCIHighMs > 0 {
			ci = fmt.Sprintf("[%s, %s]", fmtMs(s.TTFABCILowMs), fmtMs(s.TTFABCIHighMs))
		}
		switch {
		case s.Inconclusive:
			pass += "?"
		case s.Remeasured:
			pass += "*"
		}
		v, _ := stepTTFABAt(s, q.SLOPercentile)
		fmt.Fprintf(&b, "%-7d %-5s %-5s %13s %15s %13s %13s %8.2f %8d %8d %9s %s\n", s.Concurrency, pass, ttfab, fmtMs(v), ci, fmtMs(s.StallP95Ms),
			fmtMs(s.ResponseMeanMs), s.AchievedRPS, s.OKCount, s.ErrorCount+s.RejectedCount, cw, usable)
	}
	b.WriteString("pass: met the TTFAB SLO and the stall budget (+ jitter), errors counted against it (the plan's Q_max); ttfab: met the\n")
	b.WriteString("TTFAB SLO alone, errors counted, stall not judged (the original's Q_max; - = not recorded)\n")
	b.WriteString("95% CI: distribution-free interval of the TTFAB percentile (order statistics); * re-measured with a longer window because\n")
	b.WriteString("the first interval held the SLO; ? still inconclusive after that (judged as measured)\n")
	b.WriteString("cw/client: the Maximum of ConcurrentRequestsPerModel CloudWatch saw in the window ÷ the client's peak in flight (- = unread)\n")
	renderRateSteps(&b, q)
	_, err := io.WriteString(w, b.String())
	return err
}

// ttfabOnlyQMax says Q_max by TTFAB alone, with its bracket, or that the artifact did not record it.
func ttfabOnlyQMax(q *capacity.QMax) string {
	if q.QMaxTTFABOnly == nil || q.BracketTTFABOnlyLowestFail == nil {
		return "not recorded (the artifact predates the steps' TTFAB-alone verdict)"
	}
	v, lf := *q.QMaxTTFABOnly, *q.BracketTTFABOnlyLowestFail
	same := ""
	if v == q.QMax {
		same = "; the same as by TTFAB and stall"
	}
	if lf > 0 {
		return fmt.Sprintf("%d (passes at %d, fails at %d%s)", v, v, lf, same)
	}
	why := "no step failed"
	if q.BracketLowestFail > 0 {
		why = fmt.Sprintf("no step failed by TTFAB alone; the staircase stopped at %d, the first step failing TTFAB and stall", q.BracketLowestFail)
	}
	return fmt.Sprintf("%d (a lower bound: %s%s)", v, why, same)
}

// stallSLO is the stall half of the SLO line: the budget as a player buffer, and the jitter allowance.
func stallSLO(q *capacity.QMax) string {
	if len(q.Steps) == 0 {
		return ""
	}
	s := q.Steps[0]
	return fmt.Sprintf(" and p95 stall ≤ %s ms budget (a player buffer of %s ms) + %s ms jitter", fmtMs(s.StallBudgetMs), fmtMs(s.StallBudgetMs), fmtMs(s.StallJitterMs))
}

func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}

// newRunID is a time-ordered, unique run id: qmax-20260130T120000Z-1a2b3c4d.
func newRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "qmax-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// probeWritable creates dir when missing and checks that a file can be created in it.
func probeWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".qmax-probe-*")
	if err != nil {
		return err
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}

// pingTimeout bounds the container health check before an http measurement.
const pingTimeout = 5 * time.Second

// pingContainer checks that a container answers GET <base>/ping with 200 (the SageMaker contract's health
// check) before an http measurement: without it a wrong --url or a stopped container fails every request in a
// tight loop for the whole step and writes records of nothing but connection errors.
func pingContainer(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	u := strings.TrimSuffix(base, "/") + "/ping"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fmt.Errorf("GET %s: %w", u, err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("nothing answers GET %s within %s: %w", u, pingTimeout, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s answered %s (%s), not 200: the container is not healthy", u, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// readCompression reads the CloudWatch compression of the platform measured (docs/design.md, "Compressed
// CloudWatch time"): 0, recorded as absent, when read is nil or the platform runs CloudWatch at its own speed.
func readCompression(ctx context.Context, read func(context.Context) (int, error)) (int, error) {
	if read == nil {
		return 0, nil
	}
	f, err := read(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the CloudWatch compression of the platform measured: %w", err)
	}
	if f <= 1 {
		return 0, nil
	}
	return f, nil
}
