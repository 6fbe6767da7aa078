package measure

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/models"
)

// The rate staircase (docs/design.md, "Open loop, too"): after the closed-loop steps, one open-loop
// step per fraction of the highest closed-loop throughput, Poisson arrivals, with the closed-loop step's
// settle, hold and measure windows (or the --rate-* overrides) and request timeout. Its records go to the same
// records file, marked with bench.Record.RateStep.

// DefaultRateFractions are the fractions of the highest closed-loop throughput the rate staircase offers.
var DefaultRateFractions = []float64{0.3, 0.5, 0.7, 0.85, 1.0, 1.1}

// RateWindows are the windows of a rate step: the --rate-* overrides, or the closed-loop step's.
func (o *QMax) RateWindows() (settle, hold, window time.Duration) {
	settle, hold, window = o.Settle, o.Hold, o.Window
	if o.RateSettle != nil {
		settle = *o.RateSettle
	}
	if o.RateHold != nil {
		hold = *o.RateHold
	}
	if o.RateWindow != nil {
		window = *o.RateWindow
	}
	return settle, hold, window
}

// rateShield is the queue depth the rate staircase's requests are admitted within: the catalog's shield depth,
// the one a plan deploys (0: none). Each request carries it as the custom attribute bench.ShieldAttribute, which
// the container applies to that request alone, so that on an endpoint in the measurement configuration
// (QUEUE_MAX_DEPTH=0, which the closed-loop ladder needs) the open-loop steps shed as the deployed shield would.
func (o *QMax) rateShield() int { return o.Model.QueueMaxDepth }

// rateTransport is the transport of the rate steps: the run's, sending rateShield with every request.
func (r *qmaxRun) rateTransport() (bench.Transport, error) {
	d := r.o.rateShield()
	if d <= 0 {
		return r.cfg.Transport, nil
	}
	return bench.WithCustomAttributes(r.cfg.Transport, bench.ShieldAttributes(d))
}

// qmaxStepOf is the artifact's step of a closed-loop step (CloudWatch fields set by artifact): capacity.StepOf,
// the mapping the gate checks the artifact against its records with.
func qmaxStepOf(s bench.StepResult) capacity.QMaxStep { return capacity.StepOf(s) }

// highestThroughput is the highest completed-request rate (capacity.QMaxStep.Throughput) of the usable
// closed-loop steps that completed requests; 0 when there is none.
func highestThroughput(steps []bench.StepResult) float64 {
	best := 0.0
	for _, s := range steps {
		if !s.Usable || s.OK == 0 {
			continue
		}
		best = max(best, qmaxStepOf(s).Throughput())
	}
	return best
}

// rateStaircase runs the rate staircase after the closed-loop steps (nothing with --rate-fractions none).
func (r *qmaxRun) rateStaircase(ctx context.Context) error {
	o := r.o
	if len(o.RateFractions) == 0 {
		return nil
	}
	h := highestThroughput(r.steps)
	if !(h > 0) {
		r.warn("no usable closed-loop step completed a request, so there is no throughput to take fractions of: the rate staircase is skipped (the artifact has no rate_steps)")
		return nil
	}
	r.highestRPS = h
	tr, err := r.rateTransport()
	if err != nil {
		return fmt.Errorf("the rate staircase: %w", err)
	}
	for i, f := range o.RateFractions {
		if i < len(r.rateSteps) {
			continue // a resumed run's finished rate step
		}
		if err := r.rateStep(ctx, tr, i, f, h); err != nil {
			return err
		}
	}
	// The refinement: midway between the highest step that met the SLO and the lowest one above it that missed,
	// until the bracket is within RateRefineWidth of the highest throughput or RateRefineSteps were run (a
	// resumed run counts the refinement steps it already has).
	for n := len(r.rateSteps) - len(o.RateFractions); n < o.RateRefineSteps; n++ {
		met, missed := RateBracket(r.rateSteps)
		if met == 0 || missed == 0 || missed-met <= RateRefineWidth+1e-12 {
			break
		}
		i := len(r.rateSteps)
		if err := r.rateStep(ctx, tr, i, (met+missed)/2, h); err != nil {
			return err
		}
		if s := r.rateSteps[i]; !s.Usable {
			r.warn(fmt.Sprintf("the refinement stops: its step at %.4g × the highest throughput is not usable (%s)", s.ID.Fraction, s.UnusableReason))
			break
		}
	}
	if met, missed := RateBracket(r.rateSteps); met > 0 && missed > 0 && missed-met > RateRefineWidth+1e-12 {
		r.warn(fmt.Sprintf("the SLO's boundary is bracketed between %.4g and %.4g × the highest throughput, wider than %.2g after %d refinement step(s) (--%s): the safe rate stops at the lower end", met, missed, RateRefineWidth, len(r.rateSteps)-len(o.RateFractions), RateRefineFlag))
	}
	return nil
}

// RateRefineFlag is the name of qmax's flag of the most refinement steps of the rate staircase.
const RateRefineFlag = "rate-refine"

// DefaultRateRefineSteps is the most refinement steps after the fixed fractions (--rate-refine): a bracket of
// 0.15 (qmax's default 0.85 to 1.0) is within RateRefineWidth after two, one of 0.4 after three.
const DefaultRateRefineSteps = 3

// MaxRateRefineSteps bounds --rate-refine: with the fixed fractions, within capacity.MaxRateSteps.
const MaxRateRefineSteps = 8

// RateRefineWidth is the width of the bracket, in fractions of the highest closed-loop throughput, at which the
// refinement stops.
const RateRefineWidth = 0.05

// RateBracket is the bracket of the SLO's boundary among the steps run, as fractions of the highest closed-loop
// throughput: capacity.RateBracket's rule (the one the plan's instance model states); both 0 when there is none.
func RateBracket(steps []bench.RateStepResult) (met, missed float64) {
	as := make([]capacity.RateStep, len(steps))
	for i, s := range steps {
		as[i] = capacity.RateStepOf(s, 0)
	}
	lo, hi := capacity.RateBracket(as)
	if lo < 0 {
		return 0, 0
	}
	return as[lo].Fraction, as[hi].Fraction
}

// rateStep runs rate step i at fraction f of the highest closed-loop throughput h and appends it to the run.
func (r *qmaxRun) rateStep(ctx context.Context, tr bench.Transport, i int, f, h float64) error {
	o := r.o
	settle, hold, window := o.RateWindows()
	id := bench.RateStepID{Index: i, Fraction: f, OfferedRPS: f * h}
	cfg := bench.RateStepConfig{
		ID: id, Settle: settle, Hold: hold, Measure: window, RequestTimeout: o.RequestTimeout,
		Judge: r.cfg.Judge(), Transport: tr, Corpus: r.cfg.Corpus, Seed: r.cfg.Seed,
		RunID: r.runID, Records: r.cfg.Records,
		Observer: func(p bench.Progress) { r.view.Update(progressOf(p)) },
	}
	r.view.StartRateStep(i+1, f, id.OfferedRPS, settle+hold)
	watch := watchClient()
	s, err := bench.RunRateStep(ctx, cfg)
	use := watch.Stop()
	if err != nil {
		r.view.EndStep("stopped: " + err.Error())
		return err
	}
	if s.LostConnection(cfg.Judge) {
		r.view.EndStep(fmt.Sprintf("stopped: %d of %d requests got no answer at all", s.NoAnswer, s.Requests))
		return fmt.Errorf("rate step %d: %w: %d of %d requests got no answer at all (refused, reset, unreachable)", i+1, errLostConnection, s.NoAnswer, s.Requests)
	}
	if why := o.judgeClient(use); why != "" {
		s.Usable = false
		s.UnusableReason = strings.TrimPrefix(strings.Join([]string{s.UnusableReason, why}, "; "), "; ")
	}
	r.rateSteps = append(r.rateSteps, s)
	r.readRateConcurrency(ctx, s)
	r.view.EndStep(rateVerdict(s, r.cfg))
	if !s.Usable {
		r.warn(fmt.Sprintf("rate step %d (%.3g rps) is not usable: %s", i+1, id.OfferedRPS, s.UnusableReason))
	}
	return nil
}

// rateVerdict is the one-line judgement of a rate step.
func rateVerdict(s bench.RateStepResult, cfg bench.Config) string {
	head := "meets the SLO"
	if !s.MeetsSLO {
		head = "misses the SLO (" + strings.Join(s.FailReasons, "; ") + ")"
	}
	return fmt.Sprintf("%s: offered %.3g rps, arrived %.3g rps, achieved %.3g rps, in flight %.2f mean / %.2f 10-s max (10th percentile %.0f), p%d TTFAB %s ms, p95 stall %s ms, %.1f%% shed",
		head, s.ID.OfferedRPS, s.ArrivalRPS, s.AchievedRPS, s.InFlightMean, s.InFlightMax10s, s.InFlightMax10sLow, cfg.SLOPercentile, fmtMs(s.TTFABSLOMs), fmtMs(s.StallP95Ms), 100*s.ShedFraction)
}

// readRateConcurrency reads the 10-s Maximum datapoints of ConcurrentRequestsPerModel in a rate step's measure
// window (the periods wholly inside it) and records their mean; a window that holds no whole period is not
// read (CloudWatchMax10s stays unread).
func (r *qmaxRun) readRateConcurrency(ctx context.Context, s bench.RateStepResult) {
	if r.cw == nil || s.WindowEnd.IsZero() {
		return
	}
	p := cloud.ConcurrencyPeriod
	start, end := ceilTime(s.WindowStart, p), s.WindowEnd.Truncate(p)
	if !end.After(start) {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	pts, err := cloud.ReadConcurrency(rctx, r.cw, r.o.Endpoint(), models.VariantName, start, end)
	if err != nil {
		r.warn(fmt.Sprintf("rate step %d: %v", s.ID.Index+1, err))
		return
	}
	if len(pts) == 0 {
		return
	}
	var sum float64
	for _, pt := range pts {
		sum += pt.Value
	}
	r.cwRate[s.ID.Index] = sum / float64(len(pts))
}

// rateWindowHasPeriod reports whether a rate step's window holds a whole CloudWatch period (it can be read).
func rateWindowHasPeriod(s bench.RateStepResult) bool {
	p := cloud.ConcurrencyPeriod
	return !s.WindowEnd.IsZero() && s.WindowEnd.Truncate(p).After(ceilTime(s.WindowStart, p))
}

// rateStepOf is the artifact's rate step (capacity.RateStepOf, the mapping the gate checks it with).
func (r *qmaxRun) rateStepOf(s bench.RateStepResult) capacity.RateStep {
	st := capacity.RateStepOf(s, r.cwRate[s.ID.Index])
	st.Refined = s.ID.Index >= len(r.o.RateFractions)
	return st
}

// renderRateSteps prints the rate staircase as a second table, units in every header.
func renderRateSteps(b *strings.Builder, q *capacity.QMax) {
	if len(q.RateSteps) == 0 {
		return
	}
	shield := "no queue shield (no request carried queue-max-depth: shed was not measured)"
	if q.RateQueueMaxDepth > 0 {
		shield = fmt.Sprintf("every request admitted within the queue shield of %d (queue-max-depth)", q.RateQueueMaxDepth)
	}
	fmt.Fprintf(b, "\nRate staircase (open loop, Poisson arrivals) at fractions of the highest closed-loop throughput, %.3g rps; %s:\n", q.HighestThroughputRPS, shield)
	fmt.Fprintf(b, "%-12s %11s %11s %12s %14s %16s %10s %13s %13s %12s %6s %4s %s\n", "fraction×max", "offered rps", "arrived rps", "achieved rps",
		"in-flight mean", "in-flight max10s", "max10s p10", "cw max10s", fmt.Sprintf("p%d TTFAB ms", q.SLOPercentile), "p95 stall ms", "shed %", "pass", "usable")
	for _, s := range q.RateSteps {
		pass, usable, cw, low := "no", "yes", "-", "-"
		if s.InFlightMax10sLow > 0 {
			low = fmt.Sprintf("%.0f", s.InFlightMax10sLow)
		}
		if s.MeetsSLO {
			pass = "yes"
		}
		if !s.Usable {
			usable = "no: " + s.UnusableReason
		}
		if s.CloudWatchMax10s > 0 {
			cw = fmt.Sprintf("%.2f", s.CloudWatchMax10s)
		}
		v, _ := ttfabAtPercentile(s, q.SLOPercentile)
		fmt.Fprintf(b, "%-12.2f %11.3f %11.3f %12.3f %14.2f %16.2f %10s %13s %13s %12s %6.1f %4s %s\n", s.Fraction, s.OfferedRPS, s.ArrivalRPS, s.AchievedRPS,
			s.InFlightMean, s.InFlightMax10s, low, cw, fmtMs(v), fmtMs(s.StallP95Ms), 100*s.ShedFraction, pass, usable)
	}
	b.WriteString("in flight mean: time-averaged requests in flight (client); max10s: mean over the window's 10-s slices of each slice's peak, as the\n")
	b.WriteString("scaling alarm's 10-s Maximum of ConcurrentRequestsPerModel sees it; max10s p10: the 10th percentile of the peaks of 10-s windows\n")
	b.WriteString("sliding by 1 s, the datapoint the alarm can count on (the instance model's metric, × the CloudWatch ÷ client ratio; - = not\n")
	b.WriteString("recorded); cw max10s: the metric as CloudWatch published it (- = unread)\n")
}

// ttfabAtPercentile is the rate step's TTFAB at the SLO percentile.
func ttfabAtPercentile(s capacity.RateStep, p int) (float64, bool) {
	switch p {
	case 50:
		return s.TTFABP50Ms, true
	case 99:
		return s.TTFABP99Ms, true
	}
	return s.TTFABP95Ms, p == 95
}

// stepTTFABAt is a closed-loop step's TTFAB at the SLO percentile.
func stepTTFABAt(s capacity.QMaxStep, p int) (float64, bool) {
	switch p {
	case 50:
		return s.TTFABP50Ms, true
	case 99:
		return s.TTFABP99Ms, true
	}
	return s.TTFABP95Ms, p == 95
}
