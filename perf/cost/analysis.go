package main

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
	"github.com/speech-infra/speech-infra/perf/internal/harness"
	"github.com/speech-infra/speech-infra/perf/internal/row"
	"github.com/speech-infra/speech-infra/simulate"
)

// The row's traces and fleet bounds, the same for both profiles (per instance both serve about 16 to 18 rps).
const (
	peakRPS   = 80.0
	troughRPS = 10.0
	// originalMaxInstances is the original's fleet maximum (1–9), the fleet bound every configuration and both
	// plans get: the twin's catalog maximum (4) is what one laptop runs in make demo, not a limit of the
	// simulated fleet.
	originalMaxInstances = 9
)

// The published figures of the original proof of value for Kokoro-82M on ml.g5.xlarge (docs/design.md, "The
// original").
const (
	publishedQMax    = 50
	publishedTTotalS = 260.2
	// publishedThroughputRPS is what one instance completes, one request at a time on the GPU: 1 ÷ 61.3 ms =
	// 16.3 rps, the figure the what-if examples, the README and the docs use. The publication's "17.9 rps at
	// Q_max" is 10% above what its own service time allows, so it is not used.
	publishedThroughputRPS = 16.3
	publishedUncontendedMs = 61.3
	publishedModel         = "kokoro-82m"
	goalOracleRatio        = 0.85
	goalViolationMinutes   = 0
	publishedKey, twinKey  = "published", "twin"
	publishedLabel         = "published Kokoro-g5 figures"
	twinLabel              = "the demo's twin, measured"
)

// profile is one instance profile: its plan and the comparison on every trace.
type profile struct {
	key, label string
	// basis says in one line what the profile's instance model and T_total come from.
	basis   string
	plan    *capacity.Plan
	reports []capacity.Report
}

// result is the whole row's analysis.
type result struct {
	profiles  []profile
	traceKeys []string
}

// traceSet builds the row's traces for a plan: the diurnal day and the spike are the same for every plan; the
// growth trace follows the plan's T_plan, as the plan's envelope does.
func traceSet(p *capacity.Plan, sz size) ([]string, []simulate.Trace, error) {
	in, d := p.Inputs, p.Derived
	day, err := simulate.Generate(simulate.ShapeParams{Shape: simulate.ShapeDiurnal, PeakRPS: peakRPS, TroughRPS: troughRPS,
		Duration: sz.dayDuration, Step: time.Minute, Period: sz.dayDuration, PeakAt: sz.dayDuration * 14 / 24})
	if err != nil {
		return nil, nil, fmt.Errorf("diurnal trace: %w", err)
	}
	tPlan := time.Duration(math.Round(d.TPlanS * float64(time.Second)))
	step := max(time.Second, (tPlan / 60).Round(time.Second))
	scaleInWindow := time.Duration(d.ScaleInPeriodS*d.ScaleInEvaluationPeriods) * time.Second
	growth := simulate.Growth(troughRPS, peakRPS, in.SurgeRatio, tPlan, 3*tPlan+2*scaleInWindow+time.Duration(d.ScaleInCooldownS)*time.Second, step)
	// The spike jumps by the surge ratio at once, from peak ÷ s to the peak: the largest sudden rise the plan is
	// made to absorb (growth by s within T_plan).
	spike, err := simulate.Generate(simulate.ShapeParams{Shape: simulate.ShapeSpike, PeakRPS: peakRPS, TroughRPS: peakRPS / in.SurgeRatio,
		Duration: sz.spikeDuration, Step: 10 * time.Second, At: sz.spikeDuration / 3, Width: sz.spikeWidth})
	if err != nil {
		return nil, nil, fmt.Errorf("spike trace: %w", err)
	}
	return []string{"diurnal", "growth", "spike"}, []simulate.Trace{day, growth, spike}, nil
}

// options are the planning options of a profile: the catalog's, with the traces' peak and trough and the
// original's fleet maximum.
func options(m models.Model) capacity.Options {
	o := capacity.DefaultOptions(m)
	o.PeakRPS, o.TroughRPS, o.MaxInstances = peakRPS, troughRPS, originalMaxInstances
	return o
}

// publishedPlan is the what-if plan from the published figures: Q_max 50, 16.3 rps (1 ÷ 61.3 ms, flat from
// C_scale_max: one request at a time on the GPU), T_total 260.2 s; its instance model is loadmodel.Approximate's
// M/M/1 queue, NOT MEASURED.
func publishedPlan(cat models.Catalog) (*capacity.Plan, models.Model, error) {
	m, err := cat.Get(publishedModel)
	if err != nil {
		return nil, m, err
	}
	p, err := capacity.FromWhatIf(m, capacity.WhatIf{QMax: publishedQMax, TTotalS: publishedTTotalS, ThroughputRPS: publishedThroughputRPS,
		ThroughputAtQMaxRPS: publishedThroughputRPS}, options(m))
	return p, m, err
}

// analyse builds both plans and runs capacity.Compare on every trace for each.
func analyse(ms capacity.Measurement, sz size, isSmoke bool) (result, error) {
	cat, err := models.Default()
	if err != nil {
		return result{}, err
	}
	var res result
	pub, pm, err := publishedPlan(cat)
	if err != nil {
		return result{}, fmt.Errorf("the published profile's plan: %w", err)
	}
	tm, err := cat.Get(twinModel)
	if err != nil {
		return result{}, err
	}
	twin, err := capacity.FromArtifacts(tm, ms, options(tm))
	if err != nil {
		return result{}, fmt.Errorf("the twin's plan: %w", err)
	}
	for _, pr := range []struct {
		key, label, basis string
		p                 *capacity.Plan
		m                 models.Model
	}{
		{publishedKey, publishedLabel, fmt.Sprintf("derived from published figures, NOT MEASURED here: Q_max %d, %s rps at Q_max (one request at a time; %s ms mean uncontended), T_total %s s, through capacity.FromWhatIf (loadmodel.Approximate's M/M/1 queue)",
			publishedQMax, capacity.FormatNumber(publishedThroughputRPS), capacity.FormatNumber(publishedUncontendedMs), capacity.FormatNumber(publishedTTotalS)), pub, pm},
		{twinKey, twinLabel, twinBasis(ms, sz), twin, tm},
	} {
		keys, traces, err := traceSet(pr.p, sz)
		if err != nil {
			return result{}, err
		}
		res.traceKeys = keys
		price, priceSource, err := pr.m.ResolvePrice(pr.p.Fingerprint.InstanceType, nil)
		if err != nil {
			return result{}, fmt.Errorf("%s: %w", pr.key, err)
		}
		prof := profile{key: pr.key, label: pr.label, basis: pr.basis, plan: pr.p}
		for _, tr := range traces {
			rep, err := capacity.Compare(tr, capacity.Setup{Plan: pr.p, PricePerHour: price, PriceSource: priceSource, AllowedMaxInstances: originalMaxInstances})
			if err != nil {
				return result{}, fmt.Errorf("%s: %w", pr.key, err)
			}
			prof.reports = append(prof.reports, rep)
		}
		res.profiles = append(res.profiles, prof)
	}
	return res, nil
}

func twinBasis(ms capacity.Measurement, sz size) string {
	q, t := ms.QMax, ms.TTotal
	return fmt.Sprintf("measured in this run: tts-bench qmax on the emulator running %s (calibration engine, 20 ms a segment, one worker), Q_max %d, %d rate steps; "+
		"tts-bench ttotal with the %s start-up profile at time scale %g, T_total %s s; capacity.FromArtifacts (capacity's QMax.InstanceModel)",
		twinModel, q.QMax, len(q.RateSteps), emulatorProfile, sz.timeScale, capacity.FormatNumber(t.TTotalS))
}

// summary finds a configuration's totals in a report.
func summary(rep capacity.Report, kind string) (capacity.Summary, bool) {
	for _, c := range rep.Comparison {
		if c.Kind == kind {
			return c, true
		}
	}
	return capacity.Summary{}, false
}

// oracleRatio is oracle instance-hours ÷ plan instance-hours, computed from the comparison's own totals (not
// from the report's OracleRatio field), with the plan's violation minutes beside it.
func oracleRatio(rep capacity.Report) (ratio float64, planViolation int, err error) {
	plan, ok1 := summary(rep, capacity.KindPlan)
	oracle, ok2 := summary(rep, capacity.KindOracle)
	if !ok1 || !ok2 {
		return 0, 0, fmt.Errorf("trace %s: the comparison lacks the plan or the oracle", rep.Trace)
	}
	if !(plan.InstanceHours > 0) {
		return 0, plan.ViolationMinutes, fmt.Errorf("trace %s: the plan has %g instance-hours", rep.Trace, plan.InstanceHours)
	}
	return oracle.InstanceHours / plan.InstanceHours, plan.ViolationMinutes, nil
}

// judge gives a profile's two goals: 0 SLO-violation minutes for the plan on every trace, and oracle ÷ plan
// instance-hours ≥ 0.85 at zero violation minutes on every trace. The verdicts follow the numbers only; a smoke
// run's are "not measured" (its traces are short), with the numbers still stated.
func judge(pr profile, keys []string, isSmoke bool) []row.Goal {
	g1 := row.Goal{Text: fmt.Sprintf("%s: the plan has %d SLO-violation minutes on every trace", pr.label, goalViolationMinutes)}
	g2 := row.Goal{Text: fmt.Sprintf("%s: oracle instance-hours ÷ plan instance-hours ≥ %s at zero violation minutes, on every trace", pr.label, capacity.FormatNumber(goalOracleRatio))}
	var viol, ratios []string
	violating, lowest, lowestAt := 0, math.Inf(1), ""
	var problems []string
	ratioOK := len(pr.reports) > 0
	for i, rep := range pr.reports {
		name := strconv.Itoa(i)
		if i < len(keys) {
			name = keys[i]
		}
		plan, ok := summary(rep, capacity.KindPlan)
		if !ok {
			problems = append(problems, name+": no plan in the comparison")
			ratioOK = false
			violating++
			continue
		}
		viol = append(viol, fmt.Sprintf("%s %d", name, plan.ViolationMinutes))
		if plan.ViolationMinutes > goalViolationMinutes {
			violating++
		}
		r, pv, err := oracleRatio(rep)
		if err != nil {
			problems = append(problems, err.Error())
			ratioOK = false
			continue
		}
		ratios = append(ratios, fmt.Sprintf("%s %.2f", name, r))
		if r < lowest {
			lowest, lowestAt = r, name
		}
		if r < goalOracleRatio || pv > goalViolationMinutes {
			ratioOK = false
		}
	}
	if len(pr.reports) == 0 {
		problems = append(problems, "no trace was simulated")
		violating++
	}
	g1.Measured = "violation minutes: " + strings.Join(viol, ", ")
	if len(problems) > 0 {
		g1.Measured += " (" + strings.Join(problems, "; ") + ")"
	}
	g1.Verdict = row.Verdict(violating == 0)
	if violating > 0 {
		g1.Why = fmt.Sprintf("the plan violates the SLO on %d of %d traces (see the table: the worst minute and why)", violating, len(pr.reports))
	}
	if math.IsInf(lowest, 1) {
		g2.Measured = "no ratio: " + strings.Join(problems, "; ")
	} else {
		g2.Measured = fmt.Sprintf("lowest %.2f (%s); %s", lowest, lowestAt, strings.Join(ratios, ", "))
	}
	g2.Verdict = row.Verdict(ratioOK)
	if !ratioOK {
		switch {
		case violating > 0:
			g2.Why = "a ratio counts only at zero violation minutes, and the plan violates on a trace"
			if !math.IsInf(lowest, 1) && lowest < goalOracleRatio {
				g2.Why += fmt.Sprintf("; the lowest ratio, %.2f on %s, is below %s too", lowest, lowestAt, capacity.FormatNumber(goalOracleRatio))
			}
		case !math.IsInf(lowest, 1):
			g2.Why = fmt.Sprintf("on %s the plan runs %.2f× the oracle's instance-hours (the goal allows %.2f×): %s", lowestAt, 1/lowest, 1/goalOracleRatio, whyCostly(pr))
		default:
			g2.Why = strings.Join(problems, "; ")
		}
	}
	if isSmoke {
		for _, g := range []*row.Goal{&g1, &g2} {
			g.Why = "smoke run: short traces and a short twin measurement at time scale 50 only show that the program works (its figures would say " + g.Verdict + "); run `go run ./perf/cost`"
			g.Verdict = row.NotMeasured
		}
	}
	return []row.Goal{g1, g2}
}

// whyCostly says where a reactive plan's extra instance-hours come from, in the plan's own numbers.
func whyCostly(pr profile) string {
	d := pr.plan.Derived
	held := ""
	if n := d.MaxInstances; n > d.MinInstances && d.SafeRPS > 0 {
		below := float64(n) * d.ScaleInRPS
		held = fmt.Sprintf(" (one threshold for every fleet size, set so that scaling in from %d to %d cannot push the survivors past the scale-out rate: %d instances stay until the rate falls below %s rps, where the oracle runs %d)",
			d.MinInstances+1, d.MinInstances, n, capacity.FormatNumber(below), max(1, int(math.Ceil(below/d.SafeRPS-1e-9))))
	}
	return fmt.Sprintf("the oracle runs every instance at the safe rate (%s rps) and adds one the instant the rate needs it; the plan scales out at %s rps per instance (safe ÷ surge ratio %s, the headroom that absorbs growth during T_plan %s s), scales in only below %s rps per instance after a window of %d × %d s%s, and keeps at least %d instance(s)",
		capacity.FormatNumber(d.SafeRPS), capacity.FormatNumber(d.ScaleOutRPS), capacity.FormatNumber(pr.plan.Inputs.SurgeRatio), capacity.FormatNumber(d.TPlanS),
		capacity.FormatNumber(d.ScaleInRPS), d.ScaleInEvaluationPeriods, d.ScaleInPeriodS, held, d.MinInstances)
}

// shortName is a configuration's label in the charts.
func shortName(kind string) string {
	switch kind {
	case capacity.KindPlan:
		return "plan"
	case capacity.KindOracle:
		return "oracle"
	case capacity.KindOriginal:
		return "original thresholds"
	case capacity.KindInvocations:
		return "target tracking 70%"
	case capacity.KindFixed:
		return "fixed for peak"
	}
	return kind
}

// kinds are the configurations in the order of the tables and charts.
var kinds = []string{capacity.KindPlan, capacity.KindOracle, capacity.KindOriginal, capacity.KindInvocations, capacity.KindFixed}

func f2(x float64) string { return strconv.FormatFloat(x, 'f', 2, 64) }

// row assembles the row (without date, machine, command and figures).
func (res result) row(sz size, isSmoke bool) row.Row {
	rw := row.Row{Schema: row.SchemaVersion, N: rowN, Name: rowName, Title: "Cost against the limit", Smoke: isSmoke}
	rw.Summary = fmt.Sprintf("Two instance profiles of Kokoro-82M on ml.g5.xlarge: **%s** (%s) and **%s** (%s). For each, `capacity.FromWhatIf` or `capacity.FromArtifacts` "+
		"builds the plan from the catalog (SLO p95 TTFAB ≤ 3000 ms, queue 50, surge ratio 1.25) with peak %s rps and trough %s rps and fleet 1–%d, "+
		"and `capacity.Compare` (what `tts-bench simulate` prints) replays the same traces through the plan, the **oracle** (ceil(rate ÷ safe rate) instances at every second with zero start-up: "+
		"the physical limit of any reactive fleet), the original's thresholds ((1 − h)·Q_max and (1 − 2h)·Q_max concurrency, scale-in over 5 × 60 s, fleet 1–%d), "+
		"target tracking on InvocationsPerInstance at 70%% of the measured maximum rate (cooldowns 300 s) and a fixed fleet for the peak, all on the plan's one instance model and "+
		"`autoscale.Decide`. Traces: %s. Instance-hours and SLO-violation minutes (a minute in which more requests missed p95 TTFAB ≤ SLO or were shed than the percentile allows) "+
		"are the simulator's.",
		publishedLabel, res.profiles[0].basis, twinLabel, res.profiles[1].basis, capacity.FormatNumber(peakRPS), capacity.FormatNumber(troughRPS), originalMaxInstances, originalMaxInstances,
		traceWords(sz))
	for _, pr := range res.profiles {
		rw.Goals = append(rw.Goals, judge(pr, res.traceKeys, isSmoke)...)
	}
	plans := row.Table{Title: "The two plans", Columns: []string{"profile", "instance model", "verdict", "T_plan (s)", "safe rps per instance", "scale out at rps (metric)", "scale in below rps (metric)", "fleet", "original thresholds"}}
	for _, pr := range res.profiles {
		p := pr.plan
		d := p.Derived
		im := "measured (rate staircase)"
		if !p.Inputs.Instance.Measured {
			im = "NOT MEASURED (M/M/1 approximation)"
		}
		plans.Rows = append(plans.Rows, []string{pr.label, im, p.Verdict, capacity.FormatNumber(d.TPlanS), capacity.FormatNumber(d.SafeRPS),
			capacity.FormatNumber(d.ScaleOutRPS) + " (" + capacity.FormatNumber(d.TargetValue) + ")", capacity.FormatNumber(d.ScaleInRPS) + " (" + capacity.FormatNumber(d.ScaleInThreshold) + ")",
			fmt.Sprintf("%d–%d", d.MinInstances, d.MaxInstances), capacity.FormatNumber(d.CScaleMax) + "/" + capacity.FormatNumber(d.CScaleMin) + " (Q_max " + strconv.Itoa(p.Inputs.QMax) + ")"})
	}
	rw.Tables = append(rw.Tables, plans)
	goals := row.Table{Title: "The goals, trace by trace (oracle ÷ plan instance-hours counts only at zero violation minutes)", Columns: []string{"profile", "trace", "plan violation minutes", "plan flaps", "plan instance-hours", "oracle instance-hours", "oracle ÷ plan", "both goals", "cheapest that holds (oracle aside)"}}
	for _, pr := range res.profiles {
		for i, rep := range pr.reports {
			plan, _ := summary(rep, capacity.KindPlan)
			oracle, _ := summary(rep, capacity.KindOracle)
			r, pv, err := oracleRatio(rep)
			rs, ok := f2(r), err == nil && pv == 0 && r >= goalOracleRatio
			if err != nil {
				rs = "-"
			}
			cheapest := "none"
			if rep.Cheapest >= 0 && rep.Cheapest < len(rep.Comparison) {
				c := rep.Comparison[rep.Cheapest]
				cheapest = fmt.Sprintf("%s (%s instance-hours)", c.Name, f2(c.InstanceHours))
			}
			goals.Rows = append(goals.Rows, []string{pr.label, res.traceKeys[i], strconv.Itoa(plan.ViolationMinutes), strconv.Itoa(plan.Flaps), f2(plan.InstanceHours), f2(oracle.InstanceHours), rs, map[bool]string{true: "met", false: "missed"}[ok], cheapest})
		}
	}
	rw.Tables = append(rw.Tables, goals)
	for _, pr := range res.profiles {
		t := row.Table{Title: "Every configuration: " + pr.label, Columns: []string{"trace", "configuration", "fleet", "violation minutes", "flaps", "shed requests", "instance-hours", "cost (USD)", "oracle ÷ this", "how it is sized", "worst minute"}}
		for i, rep := range pr.reports {
			oracle, _ := summary(rep, capacity.KindOracle)
			for _, k := range kinds {
				c, ok := summary(rep, k)
				if !ok {
					continue
				}
				ratio := "-"
				if c.InstanceHours > 0 {
					ratio = f2(oracle.InstanceHours / c.InstanceHours)
				}
				worst := ""
				if k == capacity.KindPlan && rep.Plan.Worst != nil && rep.Plan.ViolationMinutes > 0 {
					worst = fmt.Sprintf("minute %d: %s", rep.Plan.Worst.Minute, rep.Plan.Worst.Why)
				}
				t.Rows = append(t.Rows, []string{res.traceKeys[i], c.Name, fmt.Sprintf("%d–%d", c.MinInstances, c.MaxInstances), strconv.Itoa(c.ViolationMinutes), strconv.Itoa(c.Flaps),
					strconv.FormatFloat(c.Shed, 'f', 0, 64), f2(c.InstanceHours), f2(c.Cost), ratio, c.Note, worst})
			}
		}
		rw.Tables = append(rw.Tables, t)
	}
	traces := row.Table{Title: "The traces", Columns: []string{"profile", "trace", "name", "duration", "peak rps"}}
	for _, pr := range res.profiles {
		for i, rep := range pr.reports {
			traces.Rows = append(traces.Rows, []string{pr.label, res.traceKeys[i], rep.Trace, (time.Duration(rep.DurationS) * time.Second).String(), capacity.FormatNumber(rep.PeakRPS)})
		}
	}
	rw.Tables = append(rw.Tables, traces)
	rw.Notes = append(rw.Notes,
		"The oracle is judged with the same instance model and violation rule as every other configuration; its instance-hours are the floor a reactive fleet cannot go below at the same safe rate.",
		"Both plans get the original's fleet maximum, 9: the twin's catalog maximum (4) is what one laptop runs in `make demo`, not a limit of a simulated fleet.",
		"The growth trace follows each plan's own T_plan (×1.25 per T_plan from trough to peak, held, and back, as in the plan's envelope); the diurnal day and the spike are the same rates for both profiles.",
		fmt.Sprintf("The published profile's instance model is `loadmodel.Approximate`'s M/M/1 queue at the published capacity (%s rps), marked NOT MEASURED in the plan; only the twin's comes from a measurement.", capacity.FormatNumber(publishedThroughputRPS)))
	for _, pr := range res.profiles {
		for _, f := range pr.plan.Findings {
			if f.Status == capacity.StatusFail {
				rw.Notes = append(rw.Notes, fmt.Sprintf("%s: plan finding %s fails: %s", pr.label, f.Name, f.Detail))
			}
		}
	}
	return rw
}

func traceWords(sz size) string {
	day := "a day"
	if sz.dayDuration != 24*time.Hour {
		day = sz.dayDuration.String() + " (a day compressed)"
	}
	return fmt.Sprintf("a diurnal cycle of %s from %s to %s rps (1-min steps); growth by the surge ratio per T_plan from %s to %s rps, held, and back down "+
		"(the plan envelope's growth trace); a spike by the surge ratio at once, from %s to %s rps for %s in %s",
		day, capacity.FormatNumber(troughRPS), capacity.FormatNumber(peakRPS), capacity.FormatNumber(troughRPS), capacity.FormatNumber(peakRPS),
		capacity.FormatNumber(peakRPS/1.25), capacity.FormatNumber(peakRPS), sz.spikeWidth, sz.spikeDuration)
}

// charts writes, per profile, instance-hours relative to the oracle's and violation minutes, per configuration
// and trace.
func (res result) charts(dir string) ([]row.Figure, error) {
	var figs []row.Figure
	labels := make([]string, len(kinds))
	for i, k := range kinds {
		labels[i] = shortName(k)
	}
	for _, pr := range res.profiles {
		cost := harness.Bars{Title: "Instance-hours ÷ the oracle's: " + pr.label, YLabel: "instance-hours ÷ oracle's", Labels: labels,
			Lines: []harness.HLine{{Name: fmt.Sprintf("goal: plan ≤ oracle ÷ %s", capacity.FormatNumber(goalOracleRatio)), Y: 1 / goalOracleRatio}}}
		viol := harness.Bars{Title: "SLO-violation minutes: " + pr.label, YLabel: "violation minutes", Labels: labels}
		for i, rep := range pr.reports {
			oracle, _ := summary(rep, capacity.KindOracle)
			var cv, vv []float64
			for _, k := range kinds {
				c, _ := summary(rep, k)
				rel := 0.0
				if oracle.InstanceHours > 0 {
					rel = c.InstanceHours / oracle.InstanceHours
				}
				cv, vv = append(cv, rel), append(vv, float64(c.ViolationMinutes))
			}
			cost.Names, cost.Values = append(cost.Names, res.traceKeys[i]), append(cost.Values, cv)
			viol.Names, viol.Values = append(viol.Names, res.traceKeys[i]), append(viol.Values, vv)
		}
		for _, c := range []struct {
			file, caption string
			b             harness.Bars
		}{
			{"instance-hours", "Instance-hours of each configuration ÷ the oracle's, per trace (" + pr.label + "); the dashed line is the goal's limit for the plan", cost},
			{"violations", "SLO-violation minutes of each configuration, per trace (" + pr.label + ")", viol},
		} {
			f := fmt.Sprintf("%d-%s-%s-%s.svg", rowN, rowName, pr.key, c.file)
			if err := c.b.WriteSVG(filepath.Join(dir, f)); err != nil {
				return nil, err
			}
			figs = append(figs, row.Figure{File: f, Caption: c.caption})
		}
	}
	if len(figs) == 0 {
		return nil, errors.New("no chart: no profile was analysed")
	}
	return figs, nil
}
