package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

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

// ttotalRun is the state of one measurement.
type ttotalRun struct {
	o            *ttotalOpts
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
}

// add records a stage observation once per stage name (AssembleTimeline keeps the first anyway; the probe
// and the poller may race to the same stage).
func (r *ttotalRun) add(stage string, at time.Time, source string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, capacity.Event{Stage: stage, At: at, Source: source})
	if !r.seen[stage] {
		r.seen[stage] = true
		fmt.Fprintf(r.o.stderr, "ttotal %s: %s (%s)\n", r.o.model.ID, stage, source)
	}
}

func (r *ttotalRun) has(stage string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seen[stage]
}

// Execute runs the measurement Validate prepared (or prints its plan with --dry-run).
func (o *ttotalOpts) Execute(ctx context.Context) error {
	if o.dryRun {
		return o.printPlan(o.stdout)
	}
	if err := probeWritable(filepath.Dir(o.output)); err != nil {
		return exitcode.Usage(fmt.Errorf("--output %s: %w: choose another --output (checked before measuring, so no run is lost to it)", o.output, err))
	}
	ep := o.model.EndpointName()
	sess, err := newSession(ctx, "ttotal", o.model.ID, ep, models.VariantName, o.journalDir, o.aws, o.stderr)
	if err != nil {
		return err
	}
	r := &ttotalRun{o: o, sess: sess, runID: newTTotalRunID(), clock: newClientClock(), instanceType: models.LocalInstanceType,
		seen: map[string]bool{}, unknownLine: map[string]bool{}}
	if err := r.preflight(ctx); err != nil {
		return err
	}
	fmt.Fprintf(o.stderr, "ttotal %s: writing the journal, suspending dynamic scaling and pinning %s/%s at %d instance(s)\n", o.model.ID, ep, models.VariantName, r.from)
	frozen, err := sess.freeze(ctx, r.runID, o.commandLine, r.from, o.warmup+o.maxWait, o.force)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.stderr, "ttotal %s: frozen (journal %s)\n", o.model.ID, frozen.Path)
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
		Model: o.model.ID, Endpoint: sess.endpoint, Variant: models.VariantName, JournalDir: o.journalDir,
		CatalogInstances: int32(o.model.InitialInstanceCount),
		NoPlanReasons:    []string{"ttotal measures one scale-out in the measurement configuration (no scaling)"},
	}, o.force, "a scale-out measured now could be disturbed"); err != nil {
		return err
	}
	d, err := sess.sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(sess.endpoint)})
	if err != nil {
		if cloud.IsNotFound(err) {
			return exitcode.CheckFailedf("ttotal %s: the endpoint %s does not exist: deploy it first (speech-infra deploy %s)", o.model.ID, sess.endpoint, o.model.ID)
		}
		return fmt.Errorf("ttotal %s: describe endpoint %s: %w", o.model.ID, sess.endpoint, err)
	}
	if d.EndpointStatus != smtypes.EndpointStatusInService {
		return exitcode.CheckFailedf("ttotal %s: the endpoint %s is %s, not InService: wait for it (or repair it) and run again", o.model.ID, sess.endpoint, d.EndpointStatus)
	}
	v, ok := variantOf(d)
	if !ok || v.CurrentInstanceCount == nil {
		return fmt.Errorf("ttotal %s: the endpoint %s has no variant %s with an instance count: check the deployment", o.model.ID, sess.endpoint, models.VariantName)
	}
	r.from = aws.ToInt32(v.CurrentInstanceCount)
	if r.from < 1 || int(r.from) >= capacity.MaxInstances {
		return fmt.Errorf("ttotal %s: the endpoint %s runs %d instances: cannot add one", o.model.ID, sess.endpoint, r.from)
	}
	if spec, _, err := cloud.DescribeDeployed(ctx, sess.sm, d); err == nil && spec.InstanceType != "" {
		r.instanceType = spec.InstanceType
	}
	if r.oldStreams, err = r.streams(ctx); err != nil {
		return fmt.Errorf("ttotal %s: %w", o.model.ID, err)
	}
	return nil
}

// variantOf is the endpoint's AllTraffic variant.
func variantOf(d *sagemaker.DescribeEndpointOutput) (smtypes.ProductionVariantSummary, bool) {
	for _, v := range d.ProductionVariants {
		if aws.ToString(v.VariantName) == models.VariantName {
			return v, true
		}
	}
	return smtypes.ProductionVariantSummary{}, false
}

// logGroup is the endpoint's CloudWatch Logs group.
func (r *ttotalRun) logGroup() string { return "/aws/sagemaker/Endpoints/" + r.sess.endpoint }

// streams lists the variant's log streams (all pages); a missing log group holds none.
func (r *ttotalRun) streams(ctx context.Context) (map[string]bool, error) {
	out := map[string]bool{}
	p := cloudwatchlogs.NewDescribeLogStreamsPaginator(r.sess.logs, &cloudwatchlogs.DescribeLogStreamsInput{
		LogGroupName: aws.String(r.logGroup()), LogStreamNamePrefix: aws.String(models.VariantName + "/"),
	})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			if strings.Contains(err.Error(), "ResourceNotFoundException") {
				return out, nil
			}
			return nil, fmt.Errorf("list the log streams of %s: %w", r.logGroup(), err)
		}
		for _, s := range page.LogStreams {
			out[aws.ToString(s.LogStreamName)] = true
		}
	}
	return out, nil
}

// measureAndWrite applies the probe, raises the count, watches until traffic recovers or --max-wait
// passes, and writes the artifact (partial when stages are missing). An interrupted run writes nothing.
func (r *ttotalRun) measureAndWrite(ctx context.Context) error {
	o := r.o
	probeCtx, stopProbe := context.WithCancel(ctx)
	defer stopProbe()
	r.probe = newRecoveryProbe(r, o.thresholdMs, o.window, o.minSamples)
	cfg := bench.DefaultConfig()
	cfg.Settle, cfg.Hold = 0, o.warmup+o.maxWait+logsLinger+time.Minute
	cfg.Measure, cfg.RequestTimeout, cfg.Grace = cfg.Hold, o.requestTimeout, o.requestTimeout
	cfg.SLO, cfg.SLOPercentile, cfg.StallBudget = time.Duration(o.qmax.SLOTTFABMs)*time.Millisecond, o.qmax.SLOPercentile, o.model.SLO.StallBudget()
	cfg.Corpus, cfg.RunID, cfg.Records = bench.DefaultCorpus(), r.runID, r.probe
	cfg.Transport = r.sess.streamTransport()
	probeDone := make(chan error, 1)
	r.add(capacity.StageLoadApplied, r.clock.now(), capacity.SourceClient)
	go func() {
		_, err := bench.RunStep(probeCtx, cfg, o.probeConcurrency)
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

	fmt.Fprintf(o.stderr, "ttotal %s: probe load of %d in flight; warming up for %s\n", o.model.ID, o.probeConcurrency, o.warmup)
	select {
	case <-ctx.Done():
		stop()
		return fmt.Errorf("ttotal %s: interrupted during the warm-up: no artifact written: %w", o.model.ID, ctx.Err())
	case err := <-probeDone:
		return fmt.Errorf("ttotal %s: the probe stopped during the warm-up: %w: no artifact written", o.model.ID, err)
	case <-time.After(o.warmup):
	}
	if p95, n, ok := r.probe.recent(r.clock.now()); ok {
		fmt.Fprintf(o.stderr, "ttotal %s: before the scale-out the probe's p95 TTFAB is %.1f ms over %d requests (recovered at ≤ %.1f ms)\n", o.model.ID, p95, n, o.thresholdMs)
		if p95 <= o.thresholdMs {
			r.warn("the probe already meets the recovery threshold before the scale-out (p95 %.1f ms ≤ %.1f ms): traffic_recovered then only marks the first %d requests sent after in_service, not a recovery; raise --probe-concurrency above what %d instance(s) serve within the threshold", p95, o.thresholdMs, o.minSamples, r.from)
		}
	}

	to := r.from + 1
	r.add(capacity.StageDesiredSet, r.clock.now(), capacity.SourceClient)
	if _, err := r.sess.sm.UpdateEndpointWeightsAndCapacities(ctx, &sagemaker.UpdateEndpointWeightsAndCapacitiesInput{
		EndpointName:                aws.String(r.sess.endpoint),
		DesiredWeightsAndCapacities: []smtypes.DesiredWeightAndCapacity{{VariantName: aws.String(models.VariantName), DesiredInstanceCount: aws.Int32(to)}},
	}); err != nil {
		stop()
		return fmt.Errorf("ttotal %s: raise the instance count of %s to %d: %w: no artifact written", o.model.ID, r.sess.endpoint, to, err)
	}
	fmt.Fprintf(o.stderr, "ttotal %s: desired instance count %d → %d; watching (poll every %s, at most %s)\n", o.model.ID, r.from, to, o.poll, o.maxWait)
	r.lastRead = r.clock.now()

	deadline := time.Now().Add(o.maxWait)
	var lingerUntil time.Time
	var pollErr error
	for {
		if err := r.pollOnce(ctx, to); err != nil {
			pollErr = err
			break
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
		}
		if time.Now().After(deadline) {
			fmt.Fprintf(o.stderr, "ttotal %s: --max-wait %s passed\n", o.model.ID, o.maxWait)
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(r.wait): // o.poll, or the back-off after a throttled read
		case <-r.probe.recovered:
		}
		if ctx.Err() != nil {
			stop()
			return fmt.Errorf("ttotal %s: interrupted while waiting for the new instance: no artifact written: %w", o.model.ID, ctx.Err())
		}
	}
	probeErr := stop()
	if pollErr != nil {
		return fmt.Errorf("ttotal %s: %w: no artifact written", o.model.ID, pollErr)
	}
	if probeErr != nil {
		r.warn("the probe ended with %v", probeErr)
	}
	return r.write(to)
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
	fmt.Fprintf(r.o.stderr, "ttotal %s: warning: %s\n", r.o.model.ID, fmt.Sprintf(format, args...))
}

// pollOnce reads DescribeEndpoint (VariantStatus transitions, in_service) and the new instance's log stream.
// A failing read is retried at the next poll; only a canceled context ends the watch.
func (r *ttotalRun) pollOnce(ctx context.Context, to int32) error {
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	// One attempt per poll: a throttled read backs off here, recorded, instead of waiting inside the SDK,
	// so that now is when this answer was read.
	d, err := r.sess.sm.DescribeEndpoint(rctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(r.sess.endpoint)}, cloud.PollOnceSageMaker)
	now := r.clock.now()
	r.wait = r.backoff.Next("DescribeEndpoint", err, r.o.poll, now)
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
		r.lastRead = now
		// observe records a stage this read shows, marked when the read came right after throttled ones.
		observe := func(stage string) {
			if note != "" && !r.has(stage) {
				r.mu.Lock()
				if r.late == nil {
					r.late = map[string]string{}
				}
				r.late[stage] = note
				r.mu.Unlock()
			}
			r.add(stage, now, capacity.SourceClient)
		}
		if v, ok := variantOf(d); ok {
			status := ""
			for _, s := range v.VariantStatus {
				status = string(s.Status) // the newest is the last
			}
			if status != "" && status != r.lastStatus {
				observe(status)
			}
			r.lastStatus = status
			if !r.inService && d.EndpointStatus == smtypes.EndpointStatusInService && aws.ToInt32(v.CurrentInstanceCount) >= to {
				r.inService = true
				observe(capacity.StageInService)
				r.probe.startJudging(now)
			}
		}
		if d.EndpointStatus == smtypes.EndpointStatusFailed {
			return fmt.Errorf("the endpoint %s failed while scaling out: %s", r.sess.endpoint, aws.ToString(d.FailureReason))
		}
	}
	if err := r.readLogs(rctx); err == nil {
		r.logsOff.Next("CloudWatchLogs", nil, 0, now) // a read that was not throttled resets its back-off
	} else if ctx.Err() == nil {
		if cloud.IsThrottled(err) {
			// The log stages carry their own times; a throttled read only delays them. Back off all the same.
			r.wait = max(r.wait, r.logsOff.Next("CloudWatchLogs", err, r.o.poll, r.clock.now()))
			r.warn("%v: backing off %s", err, r.wait)
		} else {
			r.warn("%v (retrying at the next poll)", err)
		}
	}
	return nil
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
		fmt.Fprintf(r.o.stderr, "ttotal %s: the new instance logs to %s\n", r.o.model.ID, r.stream)
	}
	known := map[string]bool{}
	for _, s := range capacity.ContainerStages {
		known[s] = true
	}
	for range 100 { // pages per poll; the rest waits for the next poll
		out, err := r.sess.logs.GetLogEvents(ctx, &cloudwatchlogs.GetLogEventsInput{
			LogGroupName: aws.String(r.logGroup()), LogStreamName: aws.String(r.stream), StartFromHead: aws.Bool(true), NextToken: r.logToken,
		}, cloud.PollOnceLogs)
		if err != nil {
			return fmt.Errorf("read the log stream %s: %w", r.stream, err)
		}
		for _, e := range out.Events {
			if !r.has(capacity.StageInstanceLogging) {
				r.add(capacity.StageInstanceLogging, time.UnixMilli(aws.ToInt64(e.Timestamp)).UTC(), capacity.SourceLog)
			}
			m := stageLine.FindStringSubmatch(strings.TrimSpace(aws.ToString(e.Message)))
			if m == nil {
				continue
			}
			at, err := time.Parse(time.RFC3339Nano, m[2])
			if err != nil {
				r.warn("stage line %q: its time does not parse: %v", aws.ToString(e.Message), err)
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
		next := out.NextForwardToken
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
		SchemaVersion: capacity.SchemaVersion, Model: o.model.ID, Endpoint: r.sess.endpoint, InstanceType: r.instanceType,
		Transport: o.transport, QMaxSHA256: o.qmaxSHA256, RunID: r.runID, FromInstances: int(r.from), ToInstances: int(to),
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
			fmt.Fprintf(o.stderr, "ttotal %s: throttled while watching: %s\n", o.model.ID, s)
		}
	}
	t.MissingStages = capacity.MissingStages(t.Timeline)
	if err := t.Reconcile(capacity.StageDesiredSet); err != nil {
		return fmt.Errorf("ttotal %s: nothing was observed after desired_set within --max-wait %s: no artifact written: %w", o.model.ID, o.maxWait, err)
	}
	if errs := t.Verify(); len(errs) > 0 {
		return fmt.Errorf("ttotal %s: the measured artifact does not verify (a bug in tts-bench: report it): %w", o.model.ID, errors.Join(errs...))
	}
	svg, err := renderWaterfallSVG(t)
	if err != nil {
		return fmt.Errorf("ttotal %s: %w", o.model.ID, err)
	}
	if err := capacity.WriteFileAtomic(o.chartPath, svg); err != nil {
		return exitcode.Usage(fmt.Errorf("ttotal %s: write the chart: %w: choose another --output", o.model.ID, err))
	}
	if err := capacity.WriteJSON(o.output, t); err != nil {
		return exitcode.Usage(fmt.Errorf("ttotal %s: %w: choose another --output", o.model.ID, err))
	}
	if err := renderTTotalTable(o.stdout, t); err != nil {
		return fmt.Errorf("print the table: %w", err)
	}
	fmt.Fprintf(o.stderr, "ttotal %s: wrote %s and the waterfall chart %s (T_total %.3f s)\n", o.model.ID, o.output, o.chartPath, t.TTotalS)
	if len(t.MissingStages) > 0 {
		return exitcode.CheckFailedf("ttotal %s: partial: %s not observed within --max-wait %s: the artifact %s names them; the plan treats it as incomplete: wait longer (--max-wait) or lower --probe-concurrency",
			o.model.ID, strings.Join(t.MissingStages, ", "), o.maxWait, o.output)
	}
	return nil
}

// newTTotalRunID is a time-ordered, unique run id: ttotal-20260130T120000Z-1a2b3c4d.
func newTTotalRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "ttotal-" + time.Now().UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}

// recoveryProbe receives the probe's records (bench.Config.Records: one JSON line per request) and decides
// traffic_recovered: once judging has started (at in_service), when the requests sent after it that ended
// within the last window number at least minSamples and their p95 TTFAB (a failed request counts as
// infinitely slow) is at or under the threshold.
type recoveryProbe struct {
	run         *ttotalRun
	thresholdMs float64
	window      time.Duration
	minSamples  int
	recovered   chan struct{}

	mu      sync.Mutex
	buf     bytes.Buffer
	samples []probeSample
	judging time.Time
	done    bool
}

type probeSample struct {
	end, sent time.Time
	ttfabMs   float64
}

func newRecoveryProbe(r *ttotalRun, thresholdMs float64, window time.Duration, minSamples int) *recoveryProbe {
	return &recoveryProbe{run: r, thresholdMs: thresholdMs, window: window, minSamples: minSamples, recovered: make(chan struct{})}
}

// startJudging starts judging requests sent at or after t.
func (p *recoveryProbe) startJudging(t time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.judging = t
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
	if p.done || p.judging.IsZero() {
		return
	}
	var vals []float64
	for _, s := range p.samples {
		if !s.sent.Before(p.judging) {
			vals = append(vals, s.ttfabMs)
		}
	}
	if len(vals) < p.minSamples {
		return
	}
	sort.Float64s(vals)
	if p95 := bench.Percentile(vals, 95); p95 <= p.thresholdMs {
		p.done = true
		p.run.add(capacity.StageTrafficRecovered, now, capacity.SourceClient)
		fmt.Fprintf(p.run.o.stderr, "ttotal %s: probe p95 TTFAB %.1f ms over %d requests after in_service (≤ %.1f ms)\n", p.run.o.model.ID, p95, len(vals), p.thresholdMs)
		close(p.recovered)
	}
}

// recent is the p95 TTFAB of the requests that ended within the last window before now.
func (p *recoveryProbe) recent(now time.Time) (float64, int, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var vals []float64
	for _, s := range p.samples {
		if !s.end.Before(now.Add(-p.window)) {
			vals = append(vals, s.ttfabMs)
		}
	}
	if len(vals) == 0 {
		return 0, 0, false
	}
	sort.Float64s(vals)
	return bench.Percentile(vals, 95), len(vals), true
}
