package measure

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/models"
)

// DryRun prints what Run would do, without doing any of it: the target (where names the AWS account or the
// emulator the endpoint is on), the ladder, the estimated duration and every control-plane action.
func (o *QMax) DryRun(w io.Writer, where string) error {
	var b strings.Builder
	cfg := o.EngineConfig("dry-run")
	ep := o.Endpoint()
	fmt.Fprintf(&b, "qmax %s, DRY RUN: no AWS call is made and nothing is written.\n\n", o.Model.ID)
	row := func(k, format string, args ...any) { fmt.Fprintf(&b, "  %-15s %s\n", k, fmt.Sprintf(format, args...)) }
	if o.Transport == capacity.TransportHTTP {
		row("target", "the container at %s (transport http: no endpoint, no AWS call)", o.URL)
	} else {
		row("target", "endpoint %s, variant %s, transport %s, on %s", ep, models.VariantName, o.Transport, where)
	}
	row("SLO", "p%d TTFAB ≤ %s and p95 stall ≤ %s + %s jitter, at most %.0f%% failed requests", cfg.SLOPercentile, cfg.SLO, cfg.StallBudget, cfg.StallJitter, 100*cfg.MaxErrorRate)
	row("ladder", "%s (closed loop), stopping at the first failing step; while every step passes, +%d up to %d", JoinInts(o.Ladder.Steps), o.Ladder.Extension, o.Ladder.Max)
	row("per step", "settle %s, hold %s (judged on the last %s), then up to %s for requests in flight", cfg.Settle, cfg.Hold, cfg.Measure, cfg.Grace)
	bound := func(on bool, format string, args ...any) string {
		if !on {
			return "no bound"
		}
		return fmt.Sprintf(format, args...)
	}
	row("trusted when", "at least %d requests in the window (a 95%% interval of the p%d from order statistics; an interval holding the SLO is measured once more with a doubled window); the client's CPU %s, its p99 scheduling lag %s; one attempt per request (no retry)",
		cfg.MinRequests, cfg.SLOPercentile, bound(o.MaxClientCPU > 0, "≤ %.2f of a core", o.MaxClientCPU), bound(o.MaxClientLag > 0, "≤ %s", o.MaxClientLag))
	per := cfg.Settle + cfg.Hold
	n, worst := len(o.Ladder.Steps), len(o.Ladder.WorstCase())
	row("estimate", "%s for the %d ladder steps (%s each, up to %s with requests in flight)", time.Duration(n)*per, n, per, cfg.StepDuration())
	if worst > n {
		row("", "up to %s if every step passes up to %d (%d steps)", time.Duration(worst)*per, o.Ladder.Max, worst)
	}
	if o.Refine {
		most := o.Ladder.MostRefineSteps()
		row("", "--refine: up to %d more steps bisecting the bracket (%s)", most, time.Duration(most)*per)
	}
	if n := len(o.RateFractions); n > 0 {
		rs, rh, rw := o.RateWindows()
		rper := rs + rh
		row("rate steps", "%d open-loop steps after the ladder, Poisson arrivals (seed %d) at %s × the highest closed-loop throughput", n, o.Seed, JoinFloats(o.RateFractions))
		row("", "settle %s, hold %s (judged on the last %s) each, then up to %s for requests in flight: %s, up to %s", rs, rh, rw, cfg.RequestTimeout,
			time.Duration(n)*rper, time.Duration(n)*(rper+cfg.RequestTimeout))
		if k := o.RateRefineSteps; k > 0 {
			row("", "then up to %d refinement step(s) (--%s), each midway between the highest step that met the SLO and the lowest that missed it, until they are within %.2g × the highest throughput: up to %s more", k, RateRefineFlag, RateRefineWidth, time.Duration(k)*(rper+cfg.RequestTimeout))
		} else {
			row("", "no refinement (--%s 0): the boundary is bracketed by the fixed fractions alone", RateRefineFlag)
		}
		if d := o.rateShield(); d > 0 {
			row("", "every request with the custom attribute %s: admitted within the queue shield of %d the plan deploys, so shed is measured", bench.ShieldAttributes(d), d)
		} else {
			row("", "no queue shield (the model sets no queue_max_depth): shed is not measured")
		}
	} else {
		row("rate steps", "none (--%s none): the artifact has no rate staircase", RateFractionsFlag)
	}
	if len(o.RateFractions) > 0 {
		row("outputs", "%s, %s, %s, %s (each atomically)", o.Output, o.RecordsPath, o.ChartPath, o.RateChartPath)
	} else {
		row("outputs", "%s, %s, %s (each atomically)", o.Output, o.RecordsPath, o.ChartPath)
	}
	b.WriteString("\nControl-plane actions, in order:\n")
	var acts []string
	act := func(format string, args ...any) { acts = append(acts, fmt.Sprintf(format, args...)) }
	if o.Transport == capacity.TransportHTTP {
		act("none: every request is a POST to %s/invocations; no journal, no freeze, no CloudWatch read", strings.TrimSuffix(o.URL, "/"))
	} else {
		rid := capacity.ResourceID(ep, models.VariantName)
		journal, _ := cloud.JournalPath(o.JournalDir, ep)
		act("drift (read only): DescribeEndpoint %s; DescribeScalableTargets and DescribeScalingPolicies %s; DescribeAlarms; journals in %s: refuse on an error-level finding%s", ep, rid, o.JournalDir, map[bool]string{true: " (--force: warn only)", false: " unless --force"}[o.Force])
		act("DescribeEndpoint %s: refuse unless InService", ep)
		act("DescribeEndpointConfig and DescribeModel of %s: refuse when QUEUE_MAX_DEPTH is set and below %d, the highest concurrency the ladder can reach", ep, o.Ladder.WorstCase()[worst-1])
		act("ListTags on the endpoint's ARN: refuse another run's %s marker (an expired one only%s), and refuse dynamic scaling already suspended without this run's marker", cloud.MarkerTagKey, map[bool]string{true: " is overridden: --force", false: " with --force"}[o.Force])
		act("DescribeEndpoint and DescribeScalableTargets %s, then write the journal %s (desired instance count, min/max capacity, SuspendedState) before any change", rid, journal)
		act("AddTags %s=run=<run id> owner=<user@host> pid=<pid> start=<now> expires=<now + %s> on the endpoint, then ListTags to check it is this run's", cloud.MarkerTagKey, o.DurationBound()+cloud.MarkerMargin)
		act("RegisterScalableTarget %s with MinCapacity=MaxCapacity=1 and dynamic scale-in, scale-out and scheduled scaling suspended (only when a target is registered)", rid)
		act("UpdateEndpointWeightsAndCapacities %s %s DesiredInstanceCount=1 (only when it is not 1), then wait for InService (SDK waiter)", ep, models.VariantName)
		act("per step: InvokeEndpointWithResponseStream %s, C requests in flight (one SDK client per worker)", ep)
		act("per step: GetMetricData %s %s Maximum, period %s, EndpointName=%s VariantName=%s, over the measure window", capacity.MetricNamespace, capacity.ConcurrencyMetric, cloud.ConcurrencyPeriod, ep, models.VariantName)
		if len(o.RateFractions) > 0 {
			attrs := ""
			if d := o.rateShield(); d > 0 {
				attrs = "; CustomAttributes " + bench.ShieldAttributes(d)
			}
			act("per rate step: InvokeEndpointWithResponseStream %s at Poisson arrival times (a pool of SDK clients, one per worker%s), then GetMetricData as above", ep, attrs)
		}
		act("at the end, on an error, on SIGINT and on SIGTERM: wait for InService, RegisterScalableTarget back to the journaled bounds and SuspendedState, UpdateEndpointWeightsAndCapacities back to the journaled count and wait for InService, then DeleteTags %s when the marker is this run's, then delete the journal (after kill -9: tts-bench thaw --endpoint %s)", cloud.MarkerTagKey, ep)
	}
	for i, a := range acts {
		fmt.Fprintf(&b, "  %d. %s\n", i+1, a)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
