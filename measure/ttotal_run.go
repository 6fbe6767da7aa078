package measure

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

// logsLinger bounds how long, after traffic_recovered, ttotal keeps reading the new instance's log stream
// for stage lines CloudWatch Logs has not delivered yet (ingestion lags by seconds).
const logsLinger = 60 * time.Second

// clientClock is the measuring process's clock: monotonic, anchored to wall time once, so a wall-clock step
// during the run cannot move a client stage.
type clientClock struct{ wall, mono time.Time }

func newClientClock() clientClock {
	now := time.Now()
	return clientClock{wall: now.Round(0).UTC(), mono: now}
}

// now is the anchored wall time plus the monotonic time since the anchor.
func (c clientClock) now() time.Time { return c.wall.Add(time.Since(c.mono)) }

// at is t (a time.Now reading, with its monotonic clock) on this clock.
func (c clientClock) at(t time.Time) time.Time { return c.wall.Add(t.Sub(c.mono)) }

// TTotal is one measurement of T_total, as tts-bench ttotal's Validate resolved it from the command line: the
// model, the qmax artifact its recovery threshold comes from, the probe, the polling and where the artifact
// and chart go.
type TTotal struct {
	QMaxPath             string
	Transport            string
	ProbeConcurrency     int
	ProbeSet             bool
	Warmup, Poll, Window time.Duration
	FinePoll             time.Duration
	RecoveryWindows      int
	Format               string
	Tolerance            float64
	MinSamples           int
	MaxWait              time.Duration
	RequestTimeout       time.Duration
	Force                bool
	Output               string
	JournalDir           string
	// AWSConfig loads the AWS configuration of --local, --region and --profile (awsenv.Settings.Config);
	// Emulator says it is the local emulator's (--local).
	AWSConfig func(context.Context) (aws.Config, error)
	Emulator  bool
	// CloudWatchCompression reads the platform's CloudWatch compression, recorded in the artifact (as QMax's).
	CloudWatchCompression func(context.Context) (int, error)
	Stdout, Stderr        io.Writer
	// Env is the client factory, the signals and the command line of the process.
	Env Env

	// Set by Validate. probePerInstance and probeBasis are the default probe's concurrency per instance and
	// where it comes from (without --probe-concurrency).
	ProbePerInstance int
	ProbeBasis       string
	Model            models.Model
	QMax             *capacity.QMax
	QMaxSHA256       string
	ChartPath        string
}

// ttotalRun is the state of one measurement.
type ttotalRun struct {
	o *TTotal
	// compression is the CloudWatch compression of the platform measured (0: none).
	compression  int
	sess         *session
	runID        string
	clock        clientClock
	instanceType string
	from         int32
	oldStreams   map[string]bool

	mu     sync.Mutex
	events []capacity.Event
	seen   map[string]bool

	probe *recoveryProbe

	stream      string
	logToken    *string
	lastStatus  string
	inService   bool
	unknownLine map[string]bool

	// backoff and logsOff are the pollers' back-offs under throttling (cloud.Backoff) of DescribeEndpoint and
	// of the log reads; wait is how long the watch waits
	// before its next poll, lastRead when DescribeEndpoint last answered, and late the stages a poll observed
	// right after throttled ones, with what preceded it (written into their flags).
	backoff  cloud.Backoff
	logsOff  cloud.Backoff
	wait     time.Duration
	lastRead time.Time
	late     map[string]string

	// probeC is the probe concurrency (resolved at preflight, from the qmax artifact by default), probeBasis
	// where it came from; qmaxBefore and qmaxAfter the qmax curve's p95 at the per-instance concurrency
	// before the scale-out and on the busiest instance after it.
	probeC                int
	probeBasis            string
	qmaxBefore, qmaxAfter float64
	// rec is what the artifact says about the probe; peak the highest window p95 before in_service.
	rec  capacity.TTotalProbe
	peak float64
	// desiredMono is when desired_set was stamped (zero before); before the instance ids the probe's
	// responses named before it; newInstance the first id after it that was not among them (first_served);
	// noID counts successful responses that named no instance; served is closed at first_served.
	desiredMono time.Time
	before      map[string]bool
	newInstance string
	noID        int
	served      chan struct{}
	// gaps are, per poll-observed stage, the time since the previous successful DescribeEndpoint read (the
	// stage was reached within it); fineFrom the stage from which DescribeEndpoint is read every
	// --fine-poll-interval; incomplete why the run ended without a stage it waited for.
	gaps       map[string]float64
	fineFrom   string
	incomplete string
	// lastWindow is the probe's judged window when the recovery wait ran out (the numbers incomplete
	// states): the artifact records that window, not one taken after the probe stopped.
	lastWindow *probeWindow
}

// probeWindow is a p95 TTFAB over n requests of the probe's judged window.
type probeWindow struct {
	p95 float64
	n   int
}

// add records a stage observation once per stage name (AssembleTimeline keeps the first anyway; the probe
// and the poller may race to the same stage).
func (r *ttotalRun) add(stage string, at time.Time, source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, capacity.Event{Stage: stage, At: at, Source: source})
	if !r.seen[stage] {
		r.seen[stage] = true
		fmt.Fprintf(r.o.Stderr, "ttotal %s: %s (%s)\n", r.o.Model.ID, stage, source)
	}
}

func (r *ttotalRun) has(stage string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[stage]
}

// Run measures T_total: the probe, the scale-out by one instance and its stages, then artifact and chart.
func (o *TTotal) Run(ctx context.Context) error {
	if err := probeWritable(filepath.Dir(o.Output)); err != nil {
		return exitcode.Usage(fmt.Errorf("--output %s: %w: choose another --output (checked before measuring, so no run is lost to it)", o.Output, err))
	}
	// The probe's workers (stage lines, recovery windows) and the poller write stderr concurrently: one lock
	// (the race detector caught them in a clean-clone CI run).
	if _, ok := o.Stderr.(*LockedWriter); !ok {
		o.Stderr = &LockedWriter{W: o.Stderr}
	}
	ep := o.Model.EndpointName()
	sess, err := newSession(ctx, "ttotal", o.Model.ID, ep, models.VariantName, o.JournalDir, o.AWSConfig, o.Env, o.Stderr)
	if err != nil {
		return err
	}
	r := &ttotalRun{o: o, sess: sess, runID: newTTotalRunID(), clock: newClientClock(), instanceType: models.LocalInstanceType,
		seen: map[string]bool{}, unknownLine: map[string]bool{}, before: map[string]bool{}, served: make(chan struct{}), gaps: map[string]float64{}}
	if r.compression, err = readCompression(ctx, o.CloudWatchCompression); err != nil {
		return err
	}
	if err := r.preflight(ctx); err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "ttotal %s: writing the journal, suspending dynamic scaling and pinning %s/%s at %d instance(s)\n", o.Model.ID, ep, models.VariantName, r.from)
	frozen, err := sess.freeze(ctx, r.runID, o.Env.CommandLine, r.from, o.Warmup+o.MaxWait, o.Force)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.Stderr, "ttotal %s: frozen (journal %s)\n", o.Model.ID, frozen.Path)
	runErr := r.measureAndWrite(ctx)
	restoreErr := sess.restore(frozen)
	return errors.Join(runErr, restoreErr)
}

// preflight refuses a measurement that cannot be trusted (drift errors unless --force, an endpoint that is
// not InService) and reads what the run starts from: the instance count, the instance type and the
// instances' log streams.
func (r *ttotalRun) preflight(ctx context.Context) error {
	o, sess := r.o, r.sess
	if err := sess.checkDrift(ctx, cloud.DriftOptions{
		Model: o.Model.ID, Endpoint: sess.endpoint, Variant: models.VariantName, JournalDir: o.JournalDir,
		CatalogInstances: int32(o.Model.InitialInstanceCount),
		NoPlanReasons:    []string{"ttotal measures one scale-out in the measurement configuration (no scaling)"},
	}, o.Force, "a scale-out measured now could be disturbed"); err != nil {
		return err
	}
	st, err := cloud.ReadEndpoint(ctx, sess.cl.SageMaker, sess.endpoint, models.VariantName)
	if err != nil {
		if cloud.IsNotFound(err) {
			return exitcode.CheckFailedf("ttotal %s: the endpoint %s does not exist: deploy it first (speech-infra deploy %s)", o.Model.ID, sess.endpoint, o.Model.ID)
		}
		return fmt.Errorf("ttotal %s: describe endpoint %s: %w", o.Model.ID, sess.endpoint, err)
	}
	if !st.InService {
		return exitcode.CheckFailedf("ttotal %s: the endpoint %s is %s, not InService: wait for it (or repair it) and run again", o.Model.ID, sess.endpoint, st.Status)
	}
	if !st.HasVariant || !st.HasCount {
		return fmt.Errorf("ttotal %s: the endpoint %s has no variant %s with an instance count: check the deployment", o.Model.ID, sess.endpoint, models.VariantName)
	}
	r.from = st.Instances
	if r.from < 1 || int(r.from) >= capacity.MaxInstances {
		return fmt.Errorf("ttotal %s: the endpoint %s runs %d instances: cannot add one", o.Model.ID, sess.endpoint, r.from)
	}
	if spec, _, err := cloud.DescribeDeployed(ctx, sess.cl.SageMaker, st.Output); err == nil && spec.InstanceType != "" {
		r.instanceType = spec.InstanceType
	}
	if r.oldStreams, err = r.streams(ctx); err != nil {
		return fmt.Errorf("ttotal %s: %w", o.Model.ID, err)
	}
	return r.resolveProbe()
}

// resolveProbe sets the probe concurrency for the r.from instances the endpoint runs (by default the qmax
// step past Q_max times r.from, so that the fleet is past its Q_max before the scale-out) and the qmax
// curve's p95 at the per-instance concurrency before the scale-out and, on the busiest instance, after it.
func (r *ttotalRun) resolveProbe() error {
	o, n := r.o, int(r.from)
	r.probeC, r.probeBasis = o.ProbeConcurrency, "--probe-concurrency"
	if !o.ProbeSet {
		r.probeC = o.ProbePerInstance * n
		r.probeBasis = fmt.Sprintf("%s, × %d instance(s)", o.ProbeBasis, n)
	}
	if r.probeC > capacity.MaxConcurrency {
		return exitcode.Usagef("ttotal %s: a probe of %d in flight is more than %d: pass a lower --probe-concurrency", o.Model.ID, r.probeC, capacity.MaxConcurrency)
	}
	var ok bool
	if r.qmaxBefore, ok = QMaxP95AtF(o.QMax, float64(r.probeC)/float64(n)); !ok {
		lo, hi := QMaxRange(o.QMax)
		return exitcode.Usagef("ttotal %s: --probe-concurrency %d on the %d instance(s) of %s is %.1f per instance, outside the qmax curve of %s (concurrency %d to %d): choose a probe concurrency inside it",
			o.Model.ID, r.probeC, n, r.sess.endpoint, float64(r.probeC)/float64(n), o.QMaxPath, lo, hi)
	}
	busiest := (r.probeC + n) / (n + 1) // ⌈c ÷ (n+1)⌉: least-outstanding routing leaves one instance that many
	r.qmaxAfter, _ = QMaxP95AtF(o.QMax, float64(busiest))
	if float64(r.probeC)/float64(n) <= float64(o.QMax.QMax) {
		r.warn("the probe's %d in flight on %d instance(s) is %.1f per instance, not past Q_max %d: the fleet may meet the SLO before the scale-out, and then traffic_recovered marks no recovery (the plan's measurement_validity fails such a T_total); leave --probe-concurrency at its default",
			r.probeC, n, float64(r.probeC)/float64(n), o.QMax.QMax)
	}
	return nil
}

// logGroup is the endpoint's CloudWatch Logs group.
func (r *ttotalRun) logGroup() string { return cloud.EndpointLogGroup(r.sess.endpoint) }

// streams lists the variant's log streams (all pages); a missing log group holds none.
func (r *ttotalRun) streams(ctx context.Context) (map[string]bool, error) {
	return cloud.LogStreams(ctx, r.sess.cl.Logs, r.logGroup(), models.VariantName+"/")
}

// measureAndWrite applies the probe, raises the count, watches until traffic recovers, the recovery does
// not come within --recovery-windows windows after the new instance served, or --max-wait passes, and writes
// the artifact (partial when stages are missing). An interrupted run writes nothing.
func (r *ttotalRun) measureAndWrite(ctx context.Context) error {
	o := r.o
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	r.probe = newRecoveryProbe(r, o.Window, o.MinSamples)
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold = 0, o.Warmup+o.MaxWait+logsLinger+time.Minute
	cfg.Measure, cfg.RequestTimeout, cfg.Grace = cfg.Hold, o.RequestTimeout, o.RequestTimeout
	cfg.SLO, cfg.SLOPercentile, cfg.StallBudget = time.Duration(o.QMax.SLOTTFABMs)*time.Millisecond, o.QMax.SLOPercentile, o.Model.SLO.StallBudget()
	cfg.Corpus, cfg.RunID, cfg.Records = bench.DefaultCorpus(), r.runID, r.probe
	cfg.Transport = r.sess.streamTransport()
	if sm, ok := cfg.Transport.(*bench.SageMakerStream); ok {
		cfg.Transport = &instanceTransport{inner: sm, seen: r.responded, sending: r.probe.sending}
	} else {
		r.warn("the probe's transport cannot read the instance a response came from: first_served_by_new_instance cannot be observed")
	}
	probeDone := make(chan error, 1)
	r.add(capacity.StageLoadApplied, r.clock.now(), capacity.SourceClient)
	go func() {
		_, err := bench.RunStep(probeCtx, cfg, r.probeC)
		probeDone <- err
	}()
	stop := func() error {
		stopProbe()
		err := <-probeDone
		if err != nil && probeCtx.Err() != nil && ctx.Err() == nil {
			err = nil // stopped by us
		}
		return err
	}

	fmt.Fprintf(o.Stderr, "ttotal %s: probe load of %d in flight (%s); warming up for %s\n", o.Model.ID, r.probeC, r.probeBasis, o.Warmup)
	select {
	case <-ctx.Done():
		stop()
		return fmt.Errorf("ttotal %s: interrupted during the warm-up: no artifact written: %w", o.Model.ID, ctx.Err())
	case err := <-probeDone:
		return fmt.Errorf("ttotal %s: the probe stopped during the warm-up: %w: no artifact written", o.Model.ID, err)
	case <-time.After(o.Warmup):
	}
	// Two things must be known before the scale-out, and the warm-up goes on until they are, at most
	// --request-timeout longer (a request sent at the warm-up's end has ended by then; setThreshold warns about
	// what is still missing): the old instances, since after the scale-out a response from an instance that no
	// response named before would pass for the new one; and the probe's p95 over at least --min-samples
	// requests, the load the recovery is judged against.
	if !r.warmedUp() {
		named, _ := r.warmUpState()
		fmt.Fprintf(o.Stderr, "ttotal %s: after %s the probe's responses named %d of the %d instance(s) the endpoint runs, or too few requests ended for its p95: warming up until both are known, at most %s more\n",
			o.Model.ID, o.Warmup, named, r.from, o.RequestTimeout)
		bound := time.After(o.RequestTimeout)
		tick := time.NewTicker(50 * time.Millisecond)
	waitWarm:
		for !r.warmedUp() {
			select {
			case <-ctx.Done():
				tick.Stop()
				stop()
				return fmt.Errorf("ttotal %s: interrupted during the warm-up: no artifact written: %w", o.Model.ID, ctx.Err())
			case err := <-probeDone:
				tick.Stop()
				return fmt.Errorf("ttotal %s: the probe stopped during the warm-up: %w: no artifact written", o.Model.ID, err)
			case <-bound:
				break waitWarm
			case <-tick.C:
			}
		}
		tick.Stop()
	}
	r.setThreshold()

	to := r.from + 1
	r.mu.Lock()
	r.desiredMono = time.Now()
	r.mu.Unlock()
	r.add(capacity.StageDesiredSet, r.clock.at(r.desiredMono), capacity.SourceClient)
	if err := cloud.SetInstanceCount(ctx, r.sess.cl.SageMaker, r.sess.endpoint, models.VariantName, to); err != nil {
		stop()
		return fmt.Errorf("ttotal %s: raise the instance count of %s to %d: %w: no artifact written", o.Model.ID, r.sess.endpoint, to, err)
	}
	fmt.Fprintf(o.Stderr, "ttotal %s: desired instance count %d → %d; watching (poll every %s, every %s once in_service is near, at most %s)\n", o.Model.ID, r.from, to, o.Poll, min(o.Poll, o.FinePoll), o.MaxWait)
	r.lastRead = r.clock.now()

	deadline := time.Now().Add(o.MaxWait)
	var lingerUntil, recoverBy time.Time
	var pollErr error
	recovered, served := r.probe.recovered, r.served
	for {
		if err := r.pollOnce(ctx, to); err != nil {
			pollErr = err
			break
		}
		if !r.inService {
			r.updatePeak()
		}
		if r.has(capacity.StageTrafficRecovered) {
			if r.containerComplete() {
				break
			}
			if lingerUntil.IsZero() {
				lingerUntil = time.Now().Add(logsLinger)
			}
			if time.Now().After(lingerUntil) {
				break
			}
		} else if r.inService && r.has(capacity.StageFirstServedByNewInstance) {
			// The new instance serves and the endpoint is InService: the recovery gets a bounded number of
			// windows, then the run ends with what it saw.
			bound := time.Duration(o.RecoveryWindows) * o.Window
			if recoverBy.IsZero() {
				recoverBy = time.Now().Add(bound)
				fmt.Fprintf(o.Stderr, "ttotal %s: the new instance serves and the endpoint is InService: waiting at most %s (%d windows of %s) for the probe's p95 TTFAB to reach %.0f ms\n",
					o.Model.ID, bound, o.RecoveryWindows, o.Window, r.rec.RecoveryThresholdMs)
			}
			if time.Now().After(recoverBy) {
				p95, n := r.probe.judged(r.clock.now())
				r.mu.Lock()
				r.lastWindow = &probeWindow{p95: p95, n: n}
				r.mu.Unlock()
				r.incomplete = fmt.Sprintf("traffic_recovered not observed: %d windows of %s (%s) after the new instance served and the endpoint was InService, the probe's p95 TTFAB over the last window was %s over %d requests, above the recovery threshold %.0f ms (p95 before the scale-out %.0f ms; SLO %d ms): the fleet of %d does not serve %d in flight within the threshold here (a loaded machine, a slow new instance, or a probe past what %d instances serve)",
					o.RecoveryWindows, o.Window, bound, fmtP95(p95), n, r.rec.RecoveryThresholdMs, r.rec.P95BeforeScaleOutMs, o.QMax.SLOTTFABMs, to, r.probeC, to)
				break
			}
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(o.Stderr, "ttotal %s: --max-wait %s passed\n", o.Model.ID, o.MaxWait)
			r.incomplete = r.maxWaitReason()
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.wait): // the poll interval, or the back-off after a throttled read
		case <-recovered:
			recovered = nil // closed: wait on the poll from now on
		case <-served:
			served = nil
		}
		if ctx.Err() != nil {
			stop()
			return fmt.Errorf("ttotal %s: interrupted while waiting for the new instance: no artifact written: %w", o.Model.ID, ctx.Err())
		}
	}
	if !r.inService {
		r.updatePeak()
	}
	probeErr := stop()
	if pollErr != nil {
		return fmt.Errorf("ttotal %s: %w: no artifact written", o.Model.ID, pollErr)
	}
	if probeErr != nil {
		r.warn("the probe ended with %v", probeErr)
	}
	return r.write(to)
}

// maxWaitReason says which stage --max-wait ran out on.
func (r *ttotalRun) maxWaitReason() string {
	o := r.o
	switch {
	case !r.inService:
		return fmt.Sprintf("--max-wait %s passed before DescribeEndpoint showed %s InService with the new instance", o.MaxWait, r.sess.endpoint)
	case !r.has(capacity.StageFirstServedByNewInstance):
		r.mu.Lock()
		ids, noID := sortedKeys(r.before), r.noID
		r.mu.Unlock()
		why := fmt.Sprintf("--max-wait %s passed and no probe response named an instance other than the %d seen before the scale-out (%s)", o.MaxWait, len(ids), strings.Join(ids, ", "))
		if noID > 0 {
			why += fmt.Sprintf("; %d successful response(s) named no instance (no X-Amzn-SageMaker-Custom-Attributes instance-id)", noID)
		}
		return why + ": the endpoint routed no probe request to the new instance, so its serving was not seen"
	default:
		return fmt.Sprintf("--max-wait %s passed before traffic_recovered", o.MaxWait)
	}
}

// setThreshold measures the probe before the scale-out and sets the recovery threshold: min(SLO, the qmax
// curve's p95 on the busiest instance after the scale-out × the slowdown this run shows before it ×
// --tolerance). The slowdown (this run's p95 over the curve's at the same per-instance load, at least 1)
// carries a busier machine than the one Q_max was measured on into the threshold.
func (r *ttotalRun) setThreshold() {
	o := r.o
	pre, n := r.probe.recent(r.clock.now())
	slowdown := 1.0
	if n > 0 && !math.IsInf(pre, 0) && r.qmaxBefore > 0 {
		slowdown = max(1, pre/r.qmaxBefore)
	}
	slo := float64(o.QMax.SLOTTFABMs)
	threshold := min(slo, r.qmaxAfter*slowdown*o.Tolerance)
	r.mu.Lock()
	r.rec = capacity.TTotalProbe{
		Concurrency: r.probeC, ConcurrencyBasis: r.probeBasis, SLOTTFABMs: o.QMax.SLOTTFABMs,
		P95BeforeScaleOutMs: r.finite(pre), SamplesBeforeScaleOut: n,
		QMaxP95BeforeMs: r.qmaxBefore, QMaxP95AfterMs: r.qmaxAfter, Slowdown: slowdown, Tolerance: o.Tolerance,
		RecoveryThresholdMs: threshold, WindowS: o.Window.Seconds(), MinSamples: o.MinSamples, RecoveryWindows: o.RecoveryWindows,
	}
	ids := sortedKeys(r.before)
	r.mu.Unlock()
	r.updatePeak()
	r.probe.setThreshold(threshold)
	if n == 0 {
		r.warn("no probe request ended within the last %s before the scale-out: the p95 before it is unknown (lengthen --warmup)", o.Window)
	} else {
		fmt.Fprintf(o.Stderr, "ttotal %s: before the scale-out the probe's p95 TTFAB is %s over %d requests (SLO %d ms; the qmax curve %.1f ms at %.1f per instance, so a slowdown of ×%.2f); recovered at ≤ %.1f ms\n",
			o.Model.ID, fmtP95(pre), n, o.QMax.SLOTTFABMs, r.qmaxBefore, float64(r.probeC)/float64(r.from), slowdown, threshold)
	}
	if !(pre > slo) {
		r.warn("the probe does not exceed the SLO before the scale-out (p95 %s ≤ %d ms): unless it does before in_service, traffic_recovered marks no recovery and the plan's measurement_validity fails this T_total: leave --probe-concurrency at its default (from the qmax artifact) or raise it", fmtP95(pre), o.QMax.SLOTTFABMs)
	}
	if len(ids) < int(r.from) {
		r.warn("the probe's responses named %d instance(s) before the scale-out (%s), but the endpoint runs %d: an old instance that served no probe request before it would pass for the new one", len(ids), strings.Join(ids, ", "), r.from)
	}
}

// updatePeak raises the peak p95 before in_service to the current window's, over at least --min-samples.
func (r *ttotalRun) updatePeak() {
	p95, n := r.probe.recent(r.clock.now())
	if n < r.o.MinSamples {
		return
	}
	r.mu.Lock()
	r.peak = max(r.peak, r.finite(p95))
	r.mu.Unlock()
}

// finite is a p95 for the artifact: a failed request counts as infinitely slow in the judgement, as the
// request timeout here.
func (r *ttotalRun) finite(p95 float64) float64 {
	return min(p95, float64(r.o.RequestTimeout)/float64(time.Millisecond))
}

// fmtP95 prints a p95 that may be infinite (more than 5% of the requests failed).
func fmtP95(p95 float64) string {
	if math.IsInf(p95, 1) {
		return "unbounded (more than 5% of the requests failed)"
	}
	return fmt.Sprintf("%.1f ms", p95)
}

// responded takes one probe response's instance id (instanceTransport): ids of requests sent before
// desired_set are the old instances; the first successful response after it from another instance is
// first_served_by_new_instance, stamped when its first audio arrived.
func (r *ttotalRun) responded(id string, res bench.StreamResult, err error) {
	if err != nil {
		return
	}
	r.mu.Lock()
	if id == "" {
		r.noID++
		r.mu.Unlock()
		return
	}
	if r.desiredMono.IsZero() || res.Sent.Before(r.desiredMono) {
		r.before[id] = true
		r.mu.Unlock()
		return
	}
	// Until responses before the scale-out named every old instance, an unknown one may be old: no response
	// is taken for the new instance's then (the artifact misses first_served_by_new_instance, and
	// setThreshold has said why), rather than one that a late record shows was old.
	if r.before[id] || r.newInstance != "" || len(r.before) < int(r.from) {
		r.mu.Unlock()
		return
	}
	r.newInstance = id
	r.mu.Unlock()
	at := res.FirstAudio
	if at.IsZero() {
		at = res.End
	}
	if at.IsZero() {
		at = time.Now()
	}
	r.add(capacity.StageFirstServedByNewInstance, r.clock.at(at), capacity.SourceClient)
	fmt.Fprintf(r.o.Stderr, "ttotal %s: the new instance %s served a probe request\n", r.o.Model.ID, id)
	r.probe.markServed()
	close(r.served)
}

// warmUpState is how many instances the responses to requests sent before desired_set named, and how many
// requests the probe's p95 before the scale-out would be taken over now.
func (r *ttotalRun) warmUpState() (named, samples int) {
	r.mu.Lock()
	named = len(r.before)
	r.mu.Unlock()
	_, samples = r.probe.recent(r.clock.now())
	return named, samples
}

// warmedUp says the warm-up has what the scale-out needs: every old instance named, and --min-samples
// requests for the p95 before it.
func (r *ttotalRun) warmedUp() bool {
	named, samples := r.warmUpState()
	return named >= int(r.from) && samples >= r.o.MinSamples
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// instanceTransport is the probe's sagemaker-stream transport, handing every response's instance id (the
// container's X-Amzn-SageMaker-Custom-Attributes: instance-id=…, which SageMaker passes back as the
// output's CustomAttributes) to seen.
type instanceTransport struct {
	inner   *bench.SageMakerStream
	seen    func(id string, res bench.StreamResult, err error)
	sending func(worker int, at time.Time)
}

func (t *instanceTransport) Name() string { return t.inner.Name() }

// Worker returns a Sender over a client of its own (bench.SageMakerStream's rule) that remembers the
// instance of the last response.
func (t *instanceTransport) Worker(i int) (bench.Sender, error) {
	if t.inner.NewClient == nil {
		return t.inner.Worker(i) // refused there, with the reason
	}
	// One wrapper for the worker, whose client is replaced when the sender takes a new one (after a failed
	// request, see bench.SageMakerStream).
	c := &bench.AttributesInvoker{}
	w, err := (&bench.SageMakerStream{Endpoint: t.inner.Endpoint, NewClient: func() bench.StreamInvoker {
		c.Inner = t.inner.NewClient()
		return c
	}}).Worker(i)
	if err != nil {
		return nil, err
	}
	return &instanceSender{inner: w, client: c, seen: t.seen, sending: t.sending, worker: i}, nil
}

type instanceSender struct {
	inner   bench.Sender
	client  *bench.AttributesInvoker
	seen    func(id string, res bench.StreamResult, err error)
	sending func(worker int, at time.Time)
	worker  int
}

func (s *instanceSender) Send(ctx context.Context, text string) (bench.StreamResult, error) {
	s.client.Last = ""
	if s.sending != nil {
		s.sending(s.worker, time.Now())
	}
	res, err := s.inner.Send(ctx, text)
	s.seen(instanceIDOf(s.client.Last), res, err)
	return res, err
}

// instanceIDOf reads instance-id=… from custom attributes (comma- or semicolon-separated key=value pairs).
func instanceIDOf(attrs string) string {
	for _, kv := range strings.FieldsFunc(attrs, func(r rune) bool { return r == ',' || r == ';' }) {
		if k, v, ok := strings.Cut(strings.TrimSpace(kv), "="); ok && strings.TrimSpace(k) == "instance-id" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// containerComplete says whether the new instance's stream and all its stage lines were seen.
func (r *ttotalRun) containerComplete() bool {
	for _, s := range append([]string{capacity.StageInstanceLogging}, capacity.ContainerStages...) {
		if !r.has(s) {
			return false
		}
	}
	return true
}

func (r *ttotalRun) warn(format string, args ...any) {
	fmt.Fprintf(r.o.Stderr, "ttotal %s: warning: %s\n", r.o.Model.ID, fmt.Sprintf(format, args...))
}

// pollOnce reads DescribeEndpoint (VariantStatus transitions, in_service) and the new instance's log stream.
// A failing read is retried at the next poll; only a canceled context ends the watch.
func (r *ttotalRun) pollOnce(ctx context.Context, to int32) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// One attempt per poll: a throttled read backs off here, recorded, instead of waiting inside the SDK,
	// so that now is when this answer was read.
	st, err := cloud.ReadEndpoint(rctx, r.sess.cl.SageMaker, r.sess.endpoint, models.VariantName, cloud.PollOnceSageMaker)
	now := r.clock.now()
	if err == nil {
		r.nearInService(st)
	}
	r.wait = r.backoff.Next("DescribeEndpoint", err, r.interval(), now)
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if cloud.IsThrottled(err) {
			r.warn("DescribeEndpoint %s throttled: backing off %s", r.sess.endpoint, r.wait)
		} else {
			r.warn("DescribeEndpoint %s: %v (retrying at the next poll)", r.sess.endpoint, err)
		}
	} else {
		note := ""
		if n, waited := r.backoff.Succeeded(); n > 0 {
			note = fmt.Sprintf("throttled: observed after %d throttled DescribeEndpoint read(s) and %.1f s of back-off; reached between %s and %s",
				n, waited.Seconds(), r.lastRead.Format(time.RFC3339Nano), now.Format(time.RFC3339Nano))
		}
		prevRead := r.lastRead
		r.lastRead = now
		// observe records a stage this read shows, marked when the read came right after throttled ones.
		gap := now.Sub(prevRead).Seconds()
		observe := func(stage string) {
			if !r.has(stage) {
				r.mu.Lock()
				if note != "" {
					if r.late == nil {
						r.late = map[string]string{}
					}
					r.late[stage] = note
				}
				r.gaps[stage] = gap
				r.mu.Unlock()
			}
			r.add(stage, now, capacity.SourceClient)
		}
		if st.HasVariant {
			status := st.VariantStatus
			if status != "" && status != r.lastStatus {
				observe(status)
			}
			r.lastStatus = status
			if !r.inService && st.InService && st.Instances >= to {
				r.inService = true
				observe(capacity.StageInService)
				r.probe.startJudging(now)
			}
		}
		if st.Failed {
			return fmt.Errorf("the endpoint %s failed while scaling out: %s", r.sess.endpoint, st.FailureReason)
		}
	}
	if err := r.readLogs(rctx); err == nil {
		r.logsOff.Next("CloudWatchLogs", nil, 0, now) // a read that was not throttled resets its back-off
	} else if ctx.Err() == nil {
		if cloud.IsThrottled(err) {
			// The log stages carry their own times; a throttled read only delays them. Back off all the same.
			r.wait = max(r.wait, r.logsOff.Next("CloudWatchLogs", err, r.o.Poll, r.clock.now()))
			r.warn("%v: backing off %s", err, r.wait)
		} else {
			r.warn("%v (retrying at the next poll)", err)
		}
	}
	return nil
}

// interval is how long the watch waits between DescribeEndpoint reads: --poll-interval, and
// --fine-poll-interval (when shorter) once in_service is near, so that the stamp T_total depends on is
// late by at most that.
func (r *ttotalRun) interval() time.Duration {
	if r.fineFrom != "" && !r.inService {
		return min(r.o.Poll, r.o.FinePoll)
	}
	return r.o.Poll
}

// nearInService starts the fine polling once in_service is near: the new container printed ready, or the
// variant shows ActivatingTraffic, whichever comes first.
func (r *ttotalRun) nearInService(st cloud.EndpointState) {
	if r.fineFrom != "" {
		return
	}
	from := ""
	if r.has(capacity.StageReady) {
		from = capacity.StageReady
	} else if st.ActivatingTraffic {
		from = "ActivatingTraffic"
	}
	if from != "" {
		r.fineFrom = from
		if r.o.FinePoll < r.o.Poll {
			fmt.Fprintf(r.o.Stderr, "ttotal %s: %s seen: reading DescribeEndpoint every %s until in_service\n", r.o.Model.ID, from, r.o.FinePoll)
		}
	}
}

// stageLine is the container's stage line (container/README.md).
var stageLine = regexp.MustCompile(`^=== STAGE ([a-z_]+) t=(\S+) ===$`)

// readLogs finds the new instance's stream (one the variant did not have before) and reads its events
// from where the last read stopped.
func (r *ttotalRun) readLogs(ctx context.Context) error {
	if r.stream == "" {
		now, err := r.streams(ctx)
		if err != nil {
			return err
		}
		var fresh []string
		for s := range now {
			if !r.oldStreams[s] {
				fresh = append(fresh, s)
			}
		}
		if len(fresh) == 0 {
			return nil
		}
		sort.Strings(fresh)
		if len(fresh) > 1 {
			r.warn("%d new log streams (%s): following %s", len(fresh), strings.Join(fresh, ", "), fresh[0])
		}
		r.stream = fresh[0]
		fmt.Fprintf(r.o.Stderr, "ttotal %s: the new instance logs to %s\n", r.o.Model.ID, r.stream)
	}
	known := map[string]bool{}
	for _, s := range capacity.ContainerStages {
		known[s] = true
	}
	for range 100 { // pages per poll; the rest waits for the next poll
		out, err := cloud.ReadLogPage(ctx, r.sess.cl.Logs, r.logGroup(), r.stream, r.logToken)
		if err != nil {
			return err
		}
		for _, e := range out.Events {
			if !r.has(capacity.StageInstanceLogging) {
				r.add(capacity.StageInstanceLogging, e.Time, capacity.SourceLog)
			}
			m := stageLine.FindStringSubmatch(strings.TrimSpace(e.Message))
			if m == nil {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, m[2])
			if err != nil {
				r.warn("stage line %q: its time does not parse: %v", e.Message, err)
				continue
			}
			if !known[m[1]] {
				if !r.unknownLine[m[1]] {
					r.unknownLine[m[1]] = true
					r.warn("stage line of an unknown stage %q: not on the timeline", m[1])
				}
				continue
			}
			r.add(m[1], at.UTC(), capacity.SourceContainer)
		}
		next := out.Next
		if next == nil || (r.logToken != nil && *next == *r.logToken) || len(out.Events) == 0 {
			if next != nil {
				r.logToken = next
			}
			return nil
		}
		r.logToken = next
	}
	return nil
}

// write assembles the timeline and writes the chart and the artifact, each atomically, and the table.
// A timeline without every expected stage is written as a partial artifact and exits 1.
func (r *ttotalRun) write(to int32) error {
	o := r.o
	r.mu.Lock()
	events := append([]capacity.Event(nil), r.events...)
	r.mu.Unlock()
	t := &capacity.TTotal{
		SchemaVersion: capacity.SchemaVersion, Model: o.Model.ID, Endpoint: r.sess.endpoint, InstanceType: r.instanceType, Emulator: o.Emulator, CloudWatchCompression: r.compression,
		Transport: o.Transport, QMaxSHA256: o.QMaxSHA256, RunID: r.runID, FromInstances: int(r.from), ToInstances: int(to),
		Timeline: capacity.AssembleTimeline(events),
	}
	// A client stage observed right after throttled reads says so, with the window it was reached in.
	r.mu.Lock()
	for i := range t.Timeline {
		if note, ok := r.late[t.Timeline[i].Stage]; ok {
			t.Timeline[i].Flags = append(t.Timeline[i].Flags, note)
		}
	}
	r.mu.Unlock()
	for _, b := range []*cloud.Backoff{&r.backoff, &r.logsOff} {
		if s := b.Summary(); s != "" {
			fmt.Fprintf(o.Stderr, "ttotal %s: throttled while watching: %s\n", o.Model.ID, s)
		}
	}
	t.MissingStages = capacity.MissingStages(t.Timeline)
	if err := t.Reconcile(capacity.StageDesiredSet); err != nil {
		return fmt.Errorf("ttotal %s: nothing was observed after desired_set within --max-wait %s: no artifact written: %w", o.Model.ID, o.MaxWait, err)
	}
	r.record(t)
	if errs := t.Verify(); len(errs) > 0 {
		return fmt.Errorf("ttotal %s: the measured artifact does not verify (a bug in tts-bench: report it): %w", o.Model.ID, errors.Join(errs...))
	}
	svg, err := renderWaterfallSVG(t)
	if err != nil {
		return fmt.Errorf("ttotal %s: %w", o.Model.ID, err)
	}
	if err := capacity.WriteFileAtomic(o.ChartPath, svg); err != nil {
		return exitcode.Usage(fmt.Errorf("ttotal %s: write the chart: %w: choose another --output", o.Model.ID, err))
	}
	if err := capacity.WriteJSON(o.Output, t); err != nil {
		return exitcode.Usage(fmt.Errorf("ttotal %s: %w: choose another --output", o.Model.ID, err))
	}
	if o.Format == "json" {
		data, err := capacity.MarshalArtifact(t)
		if err == nil {
			_, err = o.Stdout.Write(data)
		}
		if err != nil {
			return fmt.Errorf("print the artifact: %w", err)
		}
	} else if err := renderTTotalTable(o.Stdout, t); err != nil {
		return fmt.Errorf("print the table: %w", err)
	}
	fmt.Fprintf(o.Stderr, "ttotal %s: wrote %s and the waterfall chart %s (T_total %s)\n", o.Model.ID, o.Output, o.ChartPath, formatTTotal(t))
	if p := t.Probe; p != nil && !p.ExceededSLOBeforeInService {
		r.warn("the probe never exceeded the SLO before in_service (peak p95 %.1f ms ≤ %d ms): traffic_recovered marks no recovery, and the plan's measurement_validity fails this artifact", p.PeakP95BeforeInServiceMs, p.SLOTTFABMs)
	}
	if len(t.MissingStages) > 0 {
		why := t.IncompleteReason
		if why == "" {
			why = "not observed within --max-wait " + o.MaxWait.String()
		}
		return exitcode.CheckFailedf("ttotal %s: partial: %s missing: %s: the artifact %s names the stages reached and the missing ones; the plan treats it as incomplete",
			o.Model.ID, strings.Join(t.MissingStages, ", "), why, o.Output)
	}
	return nil
}

// record puts what the run saw besides the timeline into the artifact: the probe, the polling (intervals and
// back-offs) and T_total's uncertainty, and why the run is incomplete.
func (r *ttotalRun) record(t *capacity.TTotal) {
	r.mu.Lock()
	p := r.rec
	p.PeakP95BeforeInServiceMs = r.peak
	p.InstancesBeforeScaleOut = sortedKeys(r.before)
	p.NewInstance = r.newInstance
	gaps := maps.Clone(r.gaps)
	window := r.lastWindow
	r.mu.Unlock()
	p.ExceededSLOBeforeInService = p.PeakP95BeforeInServiceMs > float64(p.SLOTTFABMs)
	if window == nil {
		p95, n := r.probe.judged(r.clock.now())
		window = &probeWindow{p95: p95, n: n}
	}
	if window.n > 0 {
		p.P95LastWindowMs, p.SamplesLastWindow = r.finite(window.p95), window.n
	}
	t.Probe = &p
	pl := &capacity.TTotalPolling{IntervalS: r.o.Poll.Seconds(), FineIntervalS: min(r.o.Poll, r.o.FinePoll).Seconds(), FineFrom: r.fineFrom,
		InServiceGapS: gaps[capacity.StageInService], Throttled: []capacity.ThrottleEvent{}}
	for _, b := range []*cloud.Backoff{&r.backoff, &r.logsOff} {
		for _, e := range b.Events() {
			pl.Throttled = append(pl.Throttled, capacity.ThrottleEvent{At: e.At.UTC(), Operation: e.Operation, WaitS: e.WaitS})
		}
	}
	sort.SliceStable(pl.Throttled, func(i, j int) bool { return pl.Throttled[i].At.Before(pl.Throttled[j].At) })
	t.Polling = pl
	// The stamp T_total ends on: traffic_recovered is judged on requests sent after in_service was seen, so
	// both are late by at most the in_service read's gap; a poll-observed status by its own read's gap; a
	// client stamp of a response (first_served) or a container or log time by no poll.
	last := t.Timeline[len(t.Timeline)-1].Stage
	u := gaps[last]
	if last == capacity.StageTrafficRecovered {
		u = gaps[capacity.StageInService]
	}
	t.TTotalUncertaintyS = &u
	if len(t.MissingStages) > 0 {
		t.IncompleteReason = r.incomplete
		if t.IncompleteReason == "" {
			t.IncompleteReason = "stages not observed: " + strings.Join(t.MissingStages, ", ")
		}
	}
}

// newTTotalRunID is a time-ordered, unique run id: ttotal-20260130T120000Z-1a2b3c4d.
func newTTotalRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "ttotal-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// recoveryProbe receives the probe's records (bench.Config.Records: one JSON line per request) and decides
// traffic_recovered: once the new instance has served (markServed) and judging has started (at in_service),
// when the requests sent after in_service that ended within the last window number at least minSamples
// and their p95 TTFAB (a failed request counts as infinitely slow) is at or under the threshold.
//
// A p95 is taken over a cohort, not over whatever completed: only requests sent before the oldest request
// still in flight count (sending marks a send, its record ends it), also when that one was sent before
// in_service, so that a slow instance's requests, still running, cannot leave the window to the fast ones.
type recoveryProbe struct {
	run        *ttotalRun
	window     time.Duration
	minSamples int
	recovered  chan struct{}

	mu          sync.Mutex
	buf         bytes.Buffer
	pending     map[int][]time.Time // per worker, when its sends without a record yet started (wall)
	samples     []probeSample
	thresholdMs float64
	judging     time.Time
	served      bool
	done        bool
}

type probeSample struct {
	end, sent time.Time
	ttfabMs   float64
}

func newRecoveryProbe(r *ttotalRun, window time.Duration, minSamples int) *recoveryProbe {
	return &recoveryProbe{run: r, window: window, minSamples: minSamples, recovered: make(chan struct{}), pending: map[int][]time.Time{}}
}

// sending marks the start of a send of worker (instanceSender); the worker's next record ends it.
func (p *recoveryProbe) sending(worker int, at time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.pending[worker] = append(p.pending[worker], at.Round(0).UTC())
}

// cutoffLocked is when the oldest send still in flight started; zero when none is in flight. Requests sent
// at or after it are left out of a p95 until it ends.
func (p *recoveryProbe) cutoffLocked() time.Time {
	var cut time.Time
	for _, q := range p.pending {
		for _, t := range q {
			if cut.IsZero() || t.Before(cut) {
				cut = t
			}
		}
	}
	return cut
}

// setThreshold sets the recovery threshold (before the scale-out).
func (p *recoveryProbe) setThreshold(ms float64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.thresholdMs = ms
}

// startJudging starts judging requests sent at or after t.
func (p *recoveryProbe) startJudging(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.judging = t
}

// markServed says the new instance has served: a recovery can count from now on.
func (p *recoveryProbe) markServed() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.served = true
}

// Write takes JSON lines of bench.Record.
func (p *recoveryProbe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf.Write(b)
	for {
		line, err := p.buf.ReadBytes('\n')
		if err != nil {
			p.buf.Write(line) // an incomplete line waits for the rest
			break
		}
		var rec bench.Record
		if err := json.Unmarshal(line, &rec); err != nil {
			continue
		}
		p.addLocked(rec)
	}
	return len(b), nil
}

func (p *recoveryProbe) addLocked(rec bench.Record) {
	if q := p.pending[rec.Worker]; len(q) > 0 {
		p.pending[rec.Worker] = q[1:] // a worker's records come in the order of its sends
	}
	if rec.Class == bench.ClassCanceled {
		return
	}
	s := probeSample{end: rec.End, sent: rec.Sent, ttfabMs: math.Inf(1)}
	if rec.OK() {
		s.ttfabMs = rec.TTFABMs
	}
	p.samples = append(p.samples, s)
	now := p.run.clock.now()
	cut := now.Add(-p.window)
	i := 0
	for i < len(p.samples) && p.samples[i].end.Before(cut) {
		i++
	}
	p.samples = p.samples[i:]
	if p.done || p.judging.IsZero() || !p.served || p.thresholdMs <= 0 {
		return
	}
	p95, n := p.judgedLocked(now)
	if n < p.minSamples {
		return
	}
	if p95 <= p.thresholdMs {
		p.done = true
		p.run.add(capacity.StageTrafficRecovered, now, capacity.SourceClient)
		fmt.Fprintf(p.run.o.Stderr, "ttotal %s: probe p95 TTFAB %.1f ms over %d requests after in_service (≤ %.1f ms)\n", p.run.o.Model.ID, p95, n, p.thresholdMs)
		close(p.recovered)
	}
}

// judged is the p95 TTFAB of the requests sent after in_service that ended within the last window before
// now, and their count (0 before in_service).
func (p *recoveryProbe) judged(now time.Time) (float64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.judgedLocked(now)
}

func (p *recoveryProbe) judgedLocked(now time.Time) (float64, int) {
	if p.judging.IsZero() {
		return 0, 0
	}
	cut := p.cutoffLocked()
	var vals []float64
	for _, s := range p.samples {
		if !s.sent.Before(p.judging) && !s.end.Before(now.Add(-p.window)) && (cut.IsZero() || s.sent.Before(cut)) {
			vals = append(vals, s.ttfabMs)
		}
	}
	if len(vals) == 0 {
		return 0, 0
	}
	sort.Float64s(vals)
	return bench.Percentile(vals, 95), len(vals)
}

// recent is the p95 TTFAB of the requests that ended within the last window before now (of the cohort sent
// before the oldest send in flight), and their count.
func (p *recoveryProbe) recent(now time.Time) (float64, int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	cut := p.cutoffLocked()
	var vals []float64
	for _, s := range p.samples {
		if !s.end.Before(now.Add(-p.window)) && (cut.IsZero() || s.sent.Before(cut)) {
			vals = append(vals, s.ttfabMs)
		}
	}
	if len(vals) == 0 {
		return 0, 0
	}
	sort.Float64s(vals)
	return bench.Percentile(vals, 95), len(vals)
}
