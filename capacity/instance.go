package capacity

import (
	"fmt"
	"math"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// keepingUp is how close a rate step's completions must come to its arrivals for the step to be a steady
// state: an instance that completes less than this share of what arrives is saturated, its queue growing.
const keepingUp = 0.95

// InstanceModel builds the model of one instance under load from the artifact's rate staircase (docs/design.md,
// "One instance model"): every usable rate step that kept up (completed at least 95% of its arrivals, shed
// nothing beyond the SLO's allowance) is a steady state at its arrival rate; the capacity is the most the
// instance completed in any step, open or closed loop. The metric is CloudWatch's 10-s Maximum where it was
// read, else the client's 10-s peak in flight times the CloudWatch/client ratio. queueDepth is the shield the
// plan deploys; slo is the objective (stallMs with the jitter allowance). Without a rate staircase it returns
// the queueing approximation (loadmodel.Approximate) from the closed-loop capacity, marked NOT MEASURED. The
// metric and in-flight columns are fitted non-decreasing in the rate (loadmodel.Model.Monotone).
func (q *QMax) InstanceModel(queueDepth int, stallMs, cloudWatchRatio float64) (loadmodel.Model, error) {
	slo := loadmodel.SLO{TTFABMs: float64(q.SLOTTFABMs), Percentile: q.SLOPercentile, StallMs: stallMs}
	capRPS := q.HighestThroughputRPS
	for _, s := range q.Steps {
		if s.Usable {
			capRPS = math.Max(capRPS, s.Throughput())
		}
	}
	if len(q.RateSteps) == 0 {
		m, err := loadmodel.Approximate(loadmodel.Approximation{CapacityRPS: capRPS, QMax: max(1, q.QMax), QueueDepth: queueDepth, CloudWatchRatio: cloudWatchRatio, SLO: slo})
		m.Basis = fmt.Sprintf("NOT MEASURED: the qmax artifact has no rate staircase; M/M/1 approximation at its closed-loop capacity %s rps and Q_max %d", FormatNumber(capRPS), q.QMax)
		return m, err
	}
	for _, s := range q.RateSteps {
		if s.Usable {
			capRPS = math.Max(capRPS, s.AchievedRPS)
		}
	}
	m := loadmodel.Model{CapacityRPS: capRPS, QueueDepth: queueDepth, CloudWatchRatio: cloudWatchRatio, SLO: slo, Measured: true}
	used := 0
	for _, s := range q.RateSteps {
		if !s.Usable || s.OKCount == 0 || s.AchievedRPS < keepingUp*s.ArrivalRPS || s.ShedFraction > slo.AllowedShed() || !(s.ArrivalRPS < capRPS) {
			continue
		}
		if n := len(m.Points); n > 0 && !(s.ArrivalRPS > m.Points[n-1].RPS) {
			continue
		}
		metric := s.CloudWatchMax10s
		if !(metric > 0) {
			metric = s.InFlightMax10s * cloudWatchRatio
		}
		ttfab := s.TTFABP95Ms
		if v, ok := (QMaxStep{TTFABP50Ms: s.TTFABP50Ms, TTFABP95Ms: s.TTFABP95Ms, TTFABP99Ms: s.TTFABP99Ms}).ttfabAt(q.SLOPercentile); ok {
			ttfab = v
		}
		m.Points = append(m.Points, loadmodel.Point{RPS: s.ArrivalRPS, Metric: metric, InFlight: s.InFlightMean, TTFABMs: ttfab, StallMs: s.StallP95Ms, Shed: s.ShedFraction})
		used++
	}
	if used == 0 {
		return loadmodel.Model{}, fmt.Errorf("the rate staircase of %s has no usable step that kept up with its arrivals: re-run tts-bench qmax with lower --rate-fractions", q.Model)
	}
	m = m.Monotone()
	m.Basis = fmt.Sprintf("measured (metric and in-flight fitted non-decreasing in the rate): %d of %d open-loop rate steps of qmax run %s kept up (%s to %s rps), capacity %s rps", used, len(q.RateSteps), q.RunID,
		FormatNumber(m.Points[0].RPS), FormatNumber(m.Points[used-1].RPS), FormatNumber(capRPS))
	return m, m.Validate()
}

// stallBound is the stall bound of the steps: the stall budget plus the jitter allowance they were judged with.
func (q *QMax) stallBound() float64 {
	for _, s := range q.Steps {
		return s.StallBudgetMs + s.StallJitterMs
	}
	return 0
}
