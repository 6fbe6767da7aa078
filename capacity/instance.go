package capacity

import (
	"fmt"
	"math"
	"strings"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/loadmodel"
)

// keepingUp is how close a rate step's completions must come to its arrivals for the step to be a steady
// state: an instance that completes less than this share of what arrives is saturated, its queue growing.
const keepingUp = 0.95

// InstanceModel builds the model of one instance under load from the artifact's rate staircase (docs/design.md,
// "One instance model"): every usable rate step that kept up (completed at least 95% of its arrivals, shed
// nothing beyond the SLO's allowance) is a steady state at its completion rate, with that rate's lower
// confidence bound (RateStep.rateLow); the capacity is the most the instance completed in open loop once a rate
// step fell behind its arrivals, else the most it completed in any step. The metric is CloudWatch's 10-s Maximum where it was
// read, else the client's 10-s peak in flight times the CloudWatch/client ratio. queueDepth is the shield the
// plan deploys; slo is the objective (stallMs with the jitter allowance). Without a rate staircase it returns
// the queueing approximation (loadmodel.Approximate) from the closed-loop capacity, marked NOT MEASURED. The
// metric and in-flight columns are fitted non-decreasing in the rate (loadmodel.Model.Monotone).
func (q *QMax) InstanceModel(queueDepth int, stallMs, cloudWatchRatio float64) (loadmodel.Model, error) {
	m, _, err := q.instanceModel(queueDepth, stallMs, cloudWatchRatio)
	return m, err
}

// InstanceScatter is how the alarm's datapoints scatter around InstanceModel's metric (loadmodel.Scatter): the
// mean 10-s peak of each step the model keeps, on the model's scale, with bench.AlarmQuantile, the quantile the
// model's metric is. It is nil when no kept step recorded its 10th-percentile peak (the model's metric is then
// the mean, and there is nothing to scatter around), or when the artifact has no rate staircase.
func (q *QMax) InstanceScatter(queueDepth int, stallMs, cloudWatchRatio float64) (*loadmodel.Scatter, error) {
	_, sc, err := q.instanceModel(queueDepth, stallMs, cloudWatchRatio)
	return sc, err
}

func (q *QMax) instanceModel(queueDepth int, stallMs, cloudWatchRatio float64) (loadmodel.Model, *loadmodel.Scatter, error) {
	slo := loadmodel.SLO{TTFABMs: float64(q.SLOTTFABMs), Percentile: q.SLOPercentile, StallMs: stallMs}
	capRPS := q.HighestThroughputRPS
	for _, s := range q.Steps {
		if s.Usable {
			capRPS = math.Max(capRPS, s.Throughput())
		}
	}
	if len(q.RateSteps) == 0 {
		m, err := loadmodel.Approximate(loadmodel.Approximation{CapacityRPS: capRPS, QMax: max(1, q.QMax), QueueDepth: queueDepth, CloudWatchRatio: cloudWatchRatio, SLO: slo})
		m.Basis = fmt.Sprintf("NOT MEASURED: the qmax artifact has no rate staircase; M/M/1 approximation at its closed-loop capacity %s rps and Q_max %d, never safe above %s of the capacity",
			FormatNumber(capRPS), q.QMax, FormatNumber(loadmodel.UnmeasuredMaxUtilization))
		return m, nil, err
	}
	// Capacity is what the instance completed in open loop, where the shield the plan deploys sheds the excess,
	// once a step offered more than it completed: the closed-loop ladder holds its concurrency past the shield
	// and completes more than an instance behind the shield can (docs/design.md, "One instance model"). When
	// every usable rate step kept up, open loop never reached the capacity, and the closed-loop figure stands.
	openCap, saturated := 0.0, false
	for _, s := range q.RateSteps {
		if s.Usable {
			openCap = math.Max(openCap, s.AchievedRPS)
			saturated = saturated || s.fellBehind()
		}
	}
	capNote := fmt.Sprintf("capacity %s rps (the closed-loop ladder's: no rate step fell behind)", FormatNumber(math.Max(capRPS, openCap)))
	if saturated {
		capRPS = openCap
		capNote = fmt.Sprintf("capacity %s rps (the most completed in open loop)", FormatNumber(capRPS))
	} else {
		capRPS = math.Max(capRPS, openCap)
	}
	// keptUp: the step completed what arrived and shed no more than the SLO allows.
	keptUp := func(s RateStep) bool { return !s.fellBehind() && s.ShedFraction <= slo.AllowedShed() }
	keep := func(s RateStep) bool {
		return s.Usable && s.OKCount > 0 && keptUp(s) && s.ArrivalRPS < capRPS
	}
	// One scale for the metric: what CloudWatch shows. Where a rate step's window held no whole CloudWatch
	// period, its client peak is scaled by the CloudWatch ÷ client ratio of the rate steps that have both: in
	// open loop the client counts a request in flight before the container has it and after it has finished,
	// so its peaks run above the container's (a demo run read CloudWatch 8 beside a client peak of 12 at 15.5
	// rps). The closed-loop ratio (about 1: there the concurrency is held constant) is the fallback only when
	// no rate step was read, and the basis says so. Taking CloudWatch on one step and the client on the next
	// mixed two scales into one curve.
	var cwSum, clientSum float64
	read, kept := 0, 0
	for _, s := range q.RateSteps {
		if !keep(s) {
			continue
		}
		kept++
		if s.CloudWatchMax10s > 0 && s.InFlightMax10s > 0 {
			cwSum, clientSum, read = cwSum+s.CloudWatchMax10s, clientSum+s.InFlightMax10s, read+1
		}
	}
	openRatio, ratioNote := cloudWatchRatio, fmt.Sprintf("CloudWatch read on no rate step: client 10-s peaks × the closed-loop ratio %s", FormatNumber(cloudWatchRatio))
	switch {
	case read > 0 && read == kept:
		openRatio = cwSum / clientSum
		ratioNote = fmt.Sprintf("CloudWatch read on every kept step, its mean datapoint ÷ the client's mean peak %s", FormatNumber(openRatio))
	case read > 0:
		openRatio = cwSum / clientSum
		ratioNote = fmt.Sprintf("CloudWatch read on %d rate step(s), the others' client 10-s peaks × their CloudWatch ÷ client ratio %s", read, FormatNumber(openRatio))
	}
	m := loadmodel.Model{CapacityRPS: capRPS, QueueDepth: queueDepth, CloudWatchRatio: cloudWatchRatio, SLO: slo, Measured: true}
	used, low, behind := 0, 0, 0
	var behindRates []string
	sc := &loadmodel.Scatter{Quantile: bench.AlarmQuantile}
	for _, s := range q.RateSteps {
		steady := keep(s)
		// A usable step that did not keep up (it fell behind its arrivals or shed past the SLO's allowance) is a
		// point too, marked Unsteady: what the instance was measured in at that rate, which the model would
		// otherwise interpolate toward a full shield never measured. Its rate is what it completed. A step that
		// kept up but arrived at the capacity or above it is no point, as before.
		if !steady && (!s.Usable || s.OKCount <= 0 || keptUp(s)) {
			continue
		}
		// A point's rate is the step's completion rate, not its arrival rate: the model credits an instance
		// with no more than it was seen to complete (in steady state the two differ by the shed and the
		// window's edges), so the safe rate, capped at the highest point that met the SLO, is at most a
		// completion rate that was measured within it. Nor more than was offered: a window can complete
		// requests sent before it, and its completion rate can then pass its arrival rate.
		rate := math.Min(s.AchievedRPS, s.ArrivalRPS)
		if n := len(m.Points); !(rate < capRPS) || (n > 0 && !(rate > m.Points[n-1].RPS)) {
			continue
		}
		metric := s.CloudWatchMax10s
		if !(metric > 0) {
			metric = s.InFlightMax10s * openRatio
		}
		if s.InFlightMax10sLow > 0 {
			// The datapoint the alarm can count on (bench.AlarmQuantile), on CloudWatch's scale: the mean 10-s
			// peak is crossed by only about half of a rate's datapoints, and the alarm wants three in a row.
			metric = s.InFlightMax10sLow * openRatio
			if steady {
				low++
				sc.RPS, sc.Mean = append(sc.RPS, rate), append(sc.Mean, s.InFlightMax10s*openRatio)
			}
		}
		inFlight := s.InFlightMean
		if !steady {
			// A step that fell behind without the shield (an artifact measured before the rate staircase ran
			// within it) queued past the depth the plan deploys; deployed, the shield holds the rest back.
			inFlight, metric = math.Min(inFlight, float64(queueDepth)), math.Min(metric, float64(queueDepth)*cloudWatchRatio)
		}
		ttfab := s.ttfabAtSLO(q.SLOPercentile)
		m.Points = append(m.Points, loadmodel.Point{RPS: rate, RPSLow: s.rateLow(rate), Metric: metric, InFlight: inFlight, TTFABMs: ttfab, TTFABP50Ms: s.TTFABP50Ms, TTFABP99Ms: s.TTFABP99Ms,
			StallMs: s.StallP95Ms, Shed: s.ShedFraction, Unsteady: !steady})
		if steady {
			used++
		} else {
			behind++
			behindRates = append(behindRates, FormatNumber(rate))
		}
	}
	if used == 0 {
		return loadmodel.Model{}, nil, fmt.Errorf("the rate staircase of %s has no usable step that kept up with its arrivals: re-run tts-bench qmax with lower --rate-fractions", q.Model)
	}
	m = m.Monotone()
	metricNote := fmt.Sprintf("the metric is the 10th percentile of each step's sliding 10-s client peaks (what the alarm can count on) × the CloudWatch ÷ client ratio; %s", ratioNote)
	switch {
	case low == 0:
		metricNote = "the metric is each step's MEAN 10-s peak (the artifact predates the 10th-percentile peak: re-run tts-bench qmax; the alarm fires later than the simulation says); " + ratioNote
	case low < used:
		metricNote = fmt.Sprintf("the metric is the 10th percentile of the sliding 10-s peaks on %d of %d steps, the mean peak on the others; %s", low, used, ratioNote)
	}
	var steadyRates []float64
	for _, p := range m.Points {
		if !p.Unsteady {
			steadyRates = append(steadyRates, p.RPS)
		}
	}
	behindNote := ""
	if behind > 0 {
		behindNote = fmt.Sprintf(", %d more as unsteady points at what they completed (%s rps)", behind, strings.Join(behindRates, ", "))
	}
	m.Basis = fmt.Sprintf("measured (metric and in-flight fitted non-decreasing in the rate): %d of %d open-loop rate steps of qmax run %s kept up (%s to %s rps)%s, %s; %s; %s", used, len(q.RateSteps), q.RunID,
		FormatNumber(steadyRates[0]), FormatNumber(steadyRates[len(steadyRates)-1]), behindNote, capNote, rateBracket(q), metricNote)
	if low == 0 || sc.Validate() != nil {
		sc = nil
	}
	return m, sc, m.Validate()
}

// rateBracket says between which measured rate steps the SLO's boundary lies (RateBracket: the rule the rate
// staircase's refinement follows): the completion rate of the highest step that met the SLO, and the offered rate
// of the lowest above it that did not, with how it missed.
func rateBracket(q *QMax) string {
	lo, hi := RateBracket(q.RateSteps)
	if lo < 0 {
		for _, s := range q.RateSteps {
			if s.Met() {
				return "no usable rate step missed the SLO, so its boundary is not bracketed"
			}
		}
		return "no rate step met the SLO, so there is no bracket"
	}
	met, missed := q.RateSteps[lo], q.RateSteps[hi]
	why := fmt.Sprintf("completed %s rps, p%d TTFAB %s ms, %s%% shed", FormatNumber(missed.AchievedRPS), q.SLOPercentile,
		FormatNumber(missed.ttfabAtSLO(q.SLOPercentile)), FormatNumber(100*missed.ShedFraction))
	return fmt.Sprintf("the SLO held at %s rps and was missed at %s rps offered, the lowest usable rate step above it (%s)",
		FormatNumber(math.Min(met.AchievedRPS, met.ArrivalRPS)), FormatNumber(missed.OfferedRPS), why)
}

// stallBound is the stall bound of the steps: the stall budget plus the jitter allowance they were judged with.
func (q *QMax) stallBound() float64 {
	for _, s := range q.Steps {
		return s.StallBudgetMs + s.StallJitterMs
	}
	return 0
}

// rateLow is the lower confidence bound (bench.CIConfidence) of a rate step's point rate: the step's window is
// OKCount ÷ AchievedRPS seconds, and the rate a count of rate × window completions over it
// (loadmodel.RateLowerBound). 0 when the step completed nothing.
func (s RateStep) rateLow(rate float64) float64 {
	if s.OKCount <= 0 || !(s.AchievedRPS > 0) {
		return 0
	}
	window := float64(s.OKCount) / s.AchievedRPS
	n := int(math.Round(rate * window))
	return math.Min(rate, loadmodel.RateLowerBound(n, window, bench.CIConfidence))
}
