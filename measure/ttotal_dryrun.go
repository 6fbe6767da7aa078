package measure

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/models"
)

// DryRun prints what Run would do, without doing any of it: the target (where names the AWS account or the
// emulator the endpoint is on), the probe, the recovery, the estimate and every control-plane action.
// baselineP95Ms is the qmax curve's p95 TTFAB at the probe concurrency on one instance.
func (o *TTotal) DryRun(w io.Writer, where string, baselineP95Ms float64) error {
	var b strings.Builder
	ep := o.Model.EndpointName()
	fmt.Fprintf(&b, "ttotal %s, DRY RUN: no AWS call is made and nothing is written.\n\n", o.Model.ID)
	row := func(k, format string, args ...any) { fmt.Fprintf(&b, "  %-15s %s\n", k, fmt.Sprintf(format, args...)) }
	row("target", "endpoint %s, variant %s, transport %s, on %s", ep, models.VariantName, o.Transport, where)
	row("qmax", "%s (%s): p95 TTFAB %.1f ms at concurrency %d; SLO %d ms", o.QMaxPath, o.QMaxSHA256, baselineP95Ms, o.ProbeConcurrency, o.QMax.SLOTTFABMs)
	if o.ProbeSet {
		row("probe", "%d requests in flight (closed loop, --probe-concurrency), warm-up %s", o.ProbeConcurrency, o.Warmup)
	} else {
		row("probe", "N × %d requests in flight (closed loop; N the instances the endpoint runs, read at the start; %d with one), warm-up %s", o.ProbePerInstance, o.ProbePerInstance, o.Warmup)
		row("", "%s", o.ProbeBasis)
	}
	after, _ := QMaxP95AtF(o.QMax, float64((o.ProbeConcurrency+1)/2))
	row("recovered", "once the new instance has served: p95 TTFAB of the requests sent after in_service over the last %s (at least %d) ≤ min(SLO %d ms, the qmax curve's p95 on the busiest instance after the scale-out × this run's slowdown before it × %g); with one instance before it and no slowdown %.1f ms",
		o.Window, o.MinSamples, o.QMax.SLOTTFABMs, o.Tolerance, min(float64(o.QMax.SLOTTFABMs), after*o.Tolerance))
	row("", "at most %d windows (%s) after the new instance served and the endpoint was InService, then the artifact is written with the stages reached (exit 1)", o.RecoveryWindows, time.Duration(o.RecoveryWindows)*o.Window)
	row("polling", "every %s; every %s once in_service is near (ready or ActivatingTraffic); ThrottlingException backs off, recorded", o.Poll, min(o.Poll, o.FinePoll))
	row("estimate", "%s warm-up + T_total (minutes on AWS: about 260 s for Kokoro on ml.g5.xlarge; seconds on the emulator without a timing profile), at most %s (--max-wait), then the restore removes the instance again", o.Warmup, o.MaxWait)
	row("", "at most %s before the restore", o.Warmup+o.MaxWait)
	row("outputs", "%s, %s (each atomically), the stage table on stdout", o.Output, o.ChartPath)
	b.WriteString("\nControl-plane actions, in order:\n")
	rid := capacity.ResourceID(ep, models.VariantName)
	journal, _ := cloud.JournalPath(o.JournalDir, ep)
	acts := []string{
		fmt.Sprintf("drift (read only): DescribeEndpoint %s; DescribeScalableTargets and DescribeScalingPolicies %s; DescribeAlarms; journals in %s: refuse on an error-level finding%s", ep, rid, o.JournalDir, map[bool]string{true: " (--force: warn only)", false: " unless --force"}[o.Force]),
		fmt.Sprintf("DescribeEndpoint %s: refuse unless InService; read the desired instance count N", ep),
		fmt.Sprintf("DescribeLogStreams /aws/sagemaker/Endpoints/%s prefix %s/: the instances' streams before the scale-out", ep, models.VariantName),
		fmt.Sprintf("write the journal %s (N, min/max capacity, SuspendedState), then RegisterScalableTarget %s with MinCapacity=MaxCapacity=N and all scaling suspended (only when a target is registered)", journal, rid),
		fmt.Sprintf("probe: InvokeEndpointWithResponseStream %s, %s requests in flight (one SDK client per worker) until the end; each response's CustomAttributes names its instance", ep, map[bool]string{true: fmt.Sprint(o.ProbeConcurrency), false: fmt.Sprintf("N × %d", o.ProbePerInstance)}[o.ProbeSet]),
		fmt.Sprintf("after the warm-up: UpdateEndpointWeightsAndCapacities %s %s DesiredInstanceCount=N+1 (desired_set)", ep, models.VariantName),
		fmt.Sprintf("every %s (%s once in_service is near): DescribeEndpoint %s (VariantStatus, InService with N+1 instances); DescribeLogStreams and GetLogEvents for the new stream %s/<instance>", o.Poll, min(o.Poll, o.FinePoll), ep, models.VariantName),
		fmt.Sprintf("at the end, on an error, on SIGINT and on SIGTERM: wait for InService, put the target back, UpdateEndpointWeightsAndCapacities back to N and wait for InService, then delete the journal (after kill -9: tts-bench thaw --endpoint %s)", ep),
	}
	for i, a := range acts {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
