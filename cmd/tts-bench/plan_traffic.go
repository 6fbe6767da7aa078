package main

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/traffic"
)

// Defaults of plan --traffic.
const (
	defaultHoldout       = "25%"
	defaultSurgeQuantile = "p99"
)

// trafficPart is one --traffic trace, cut into the part the plan is derived from and the part held out.
type trafficPart struct {
	path       string
	plan, held traffic.Series
	// step is the rate traces' step in the plan (the planned-on part's; the held-out part's may differ).
	step, heldStep time.Duration
}

// parseShare reads a share written as a percentage ("25%") or a fraction ("0.25").
func parseShare(s string) (float64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	if strings.HasSuffix(t, "%") {
		t, scale = strings.TrimSpace(strings.TrimSuffix(t, "%")), 0.01
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%q is not a share: write it as 25%% or 0.25", s)
	}
	return v * scale, nil
}

// parseQuantile reads a quantile written as "p99", "p99.9", "max" or a fraction ("0.99").
func parseQuantile(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	bad := fmt.Errorf("%q is not a quantile: write it as p99, p99.9, p95 or max (a fraction such as 0.99 works too), in (p50, max]", s)
	var v float64
	var err error
	switch {
	case t == "max":
		return 1, nil
	case strings.HasPrefix(t, "p"):
		v, err = strconv.ParseFloat(t[1:], 64)
		v /= 100
	default:
		v, err = strconv.ParseFloat(t, 64)
	}
	if err != nil || !(v >= 0.5 && v <= 1) {
		return 0, bad
	}
	return v, nil
}

// loadTraffic reads the --traffic traces (docs/design.md, "Plans from traffic"), cuts each at --holdout and records both parts as rate traces in opts
// (the planned-on parts beside the --trace files, the held-out parts as opts.Holdout). Without --peak-rps the
// peak is the highest 1-minute rate of the planned-on parts. Every problem is an error naming the flag.
func (o *planOpts) loadTraffic(opts *capacity.Options) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(o.traffic) == 0 {
		if o.holdoutSet {
			bad("--holdout %s needs --traffic: it is the share of each traffic trace held out from planning", o.holdout)
		}
		if o.surgeQuantileSet {
			bad("--surge-quantile %s needs --traffic: it reads the surge ratio off the traffic", o.surgeQuantile)
		}
		return errs
	}
	if n := len(o.traffic) + len(o.traces); n > capacity.MaxUserTraces {
		bad("--traffic and --trace are given %d times in all: at most %d", n, capacity.MaxUserTraces)
		return errs
	}
	holdout, err := parseShare(o.holdout)
	if err == nil && !(holdout >= 0 && holdout <= traffic.MaxHoldout) {
		err = fmt.Errorf("%s: want a share from 0 (hold nothing out) to %g%%", o.holdout, 100*traffic.MaxHoldout)
	}
	if err != nil {
		bad("--holdout %w", err)
	}
	if o.surgeQuantileSet && o.surge != nil {
		bad("--surge %s and --surge-quantile %s both set the surge ratio: give one (--surge fixes it; --surge-quantile reads it off the traffic)", strconv.FormatFloat(*o.surge, 'g', -1, 64), o.surgeQuantile)
	}
	if o.quantile, err = parseQuantile(o.surgeQuantile); err != nil {
		bad("--surge-quantile %w", err)
	}
	if len(errs) > 0 {
		return errs
	}
	// Each part gets an equal share of one trace's points, so that the plan file stays within its limit however
	// many traces are given.
	points := capacity.MaxUserTracePoints / len(o.traffic)
	peak := 0.0
	for _, path := range o.traffic {
		s, err := traffic.Load(path)
		if err != nil {
			bad("--traffic %s: %w", path, err)
			continue
		}
		part := trafficPart{path: path}
		if part.plan, part.held, err = s.Split(holdout); err != nil {
			bad("--traffic %s: %w: give a longer trace or a smaller --holdout", path, err)
			continue
		}
		p, ok := traffic.PeakOver(part.plan, time.Minute)
		if !ok {
			bad("--traffic %s: its planned-on part lasts %s, less than the minute a peak is measured over: give a longer trace or a smaller --holdout", path, part.plan.Duration())
			continue
		}
		if !(p > 0) {
			bad("--traffic %s: its planned-on part has no request: give the traffic the fleet serves", path)
			continue
		}
		peak = max(peak, p)
		tr, step, err := part.plan.RateTrace(points)
		if err == nil {
			var ti capacity.TraceInput
			if ti, err = capacity.TraceInputFrom(tr); err == nil {
				opts.Traces = append(opts.Traces, ti)
				part.step = step
			}
		}
		if err != nil {
			bad("--traffic %s: %w", path, err)
			continue
		}
		if len(part.held.PerSecond) > 0 {
			tr, step, err := part.held.RateTrace(points)
			if err == nil {
				var ti capacity.TraceInput
				if ti, err = capacity.TraceInputFrom(tr); err == nil {
					opts.Holdout = append(opts.Holdout, ti)
					part.heldStep = step
				}
			}
			if err != nil {
				bad("--traffic %s: %w", path, err)
				continue
			}
		}
		o.trafficParts = append(o.trafficParts, part)
	}
	if len(errs) == 0 && o.peakRPS == nil {
		o.peakRPS, o.peakFromTraffic = &peak, true
	}
	return errs
}

// surgeFromTraffic sets the surge ratio from the traffic when --surge was not given: the --surge-quantile of
// each planned-on part's surge ratio at the plan's T_plan (the highest of the traces'), at most
// models.MaxSurgeRatio. T_plan does not depend on the surge ratio; it is read off a plan built with the
// catalog's, whose envelope is simulated too (a few seconds).
func (o *planOpts) surgeFromTraffic(ctx context.Context, build capacity.Builder) error {
	if len(o.trafficParts) == 0 || o.surge != nil {
		return nil
	}
	probe := o.capOpts
	probe.Traces, probe.Holdout = nil, nil
	p, err := build(ctx, probe)
	if err != nil {
		return err
	}
	tPlan := max(10*time.Second, time.Duration(math.Ceil(p.Derived.TPlanS))*time.Second)
	best, from, minutes := 0.0, "", 0
	for _, part := range o.trafficParts {
		r, n, err := traffic.SurgeQuantile(part.plan, tPlan, o.quantile)
		if err != nil {
			return fmt.Errorf("--traffic %s: %w: give a longer trace or a smaller --holdout, or give --surge", part.path, err)
		}
		if r > best {
			best, from, minutes = r, part.path, n
		}
	}
	q := "p" + capacity.FormatNumber(100*o.quantile)
	if o.quantile == 1 {
		q = "max"
	}
	few := ""
	if o.quantile < 1 && int(math.Ceil(o.quantile*float64(minutes)-1e-9)) >= minutes {
		// Nearest rank: too few start minutes for this quantile to be anything but their highest.
		few = fmt.Sprintf(" (with %d start minutes the %s is their highest: a longer log gives a steadier ratio)", minutes, q)
	}
	o.capOpts.SurgeSource = fmt.Sprintf("the %s of the traffic's surge ratio at T_plan %s over %d start minutes of %s's planned-on part, %s, rounded up to hundredths%s",
		q, tPlan, minutes, from, strconv.FormatFloat(best, 'f', 4, 64), few)
	// Rounded up, so that the flags the plan and its search print give this ratio again.
	best = math.Ceil(best*100-1e-9) / 100
	if best > models.MaxSurgeRatio {
		o.capOpts.SurgeSource += fmt.Sprintf(", capped at %d", models.MaxSurgeRatio)
		best = models.MaxSurgeRatio
	}
	o.capOpts.SurgeRatio = best
	fmt.Fprintf(o.stderr, "plan: surge ratio %s: %s\n", capacity.FormatNumber(best), o.capOpts.SurgeSource)
	return nil
}

// describeTraffic says, on stderr, how each --traffic trace was cut and recorded.
func (o *planOpts) describeTraffic() {
	for _, part := range o.trafficParts {
		held := "nothing held out (--holdout 0)"
		if len(part.held.PerSecond) > 0 {
			held = fmt.Sprintf("held out and validated on: the last %s, at %s steps", part.held.Duration(), part.heldStep)
		}
		fmt.Fprintf(o.stderr, "plan: traffic %s: planned on the first %s, recorded at %s steps; %s\n", part.path, part.plan.Duration(), part.step, held)
		if part.step > time.Second || part.heldStep > time.Second {
			fmt.Fprintf(o.stderr, "plan: traffic %s: the plan's simulation sees the mean rate of each step, so bursts shorter than a step are averaged in it; the surge ratio and the peak are read at 1 s\n", part.path)
		}
	}
	if o.peakFromTraffic {
		fmt.Fprintf(o.stderr, "plan: peak %s rps: the highest 1-minute rate of the planned-on traffic (--peak-rps sets another)\n", capacity.FormatNumber(*o.peakRPS))
	}
}
