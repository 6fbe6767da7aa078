package measure

import (
	"fmt"
	"sort"

	"github.com/speech-infra/speech-infra/capacity"
)

// probePastSLO is the margin by which the default probe's qmax step exceeds the SLO, so that this run's
// noise keeps the fleet past it.
const probePastSLO = 1.2

// DefaultProbe is the default probe concurrency per instance: the qmax artifact's first usable step whose
// p95 TTFAB exceeds probePastSLO × the SLO (the highest usable step above the SLO when none does), so that
// the fleet is past its Q_max before the scale-out; false when no step is above the SLO.
func DefaultProbe(q *capacity.QMax) (int, string, bool) {
	slo := float64(q.SLOTTFABMs)
	var above *capacity.QMaxStep
	for _, s := range qmaxCurve(q) {
		if s.TTFABP95Ms > probePastSLO*slo {
			return s.Concurrency, fmt.Sprintf("qmax: the first step past Q_max %d whose p95 TTFAB (%.0f ms) exceeds %g × the SLO (%d ms), concurrency %d", q.QMax, s.TTFABP95Ms, probePastSLO, q.SLOTTFABMs, s.Concurrency), true
		}
		if s.TTFABP95Ms > slo {
			above = &s
		}
	}
	if above == nil {
		return 0, "", false
	}
	return above.Concurrency, fmt.Sprintf("qmax: the highest step past Q_max %d whose p95 TTFAB (%.0f ms) exceeds the SLO (%d ms), concurrency %d", q.QMax, above.TTFABP95Ms, q.SLOTTFABMs, above.Concurrency), true
}

// qmaxCurve is the p95 TTFAB curve of the artifact's usable steps that served requests, by concurrency.
func qmaxCurve(q *capacity.QMax) []capacity.QMaxStep {
	var steps []capacity.QMaxStep
	for _, s := range q.Steps {
		if s.Usable && s.OKCount > 0 {
			steps = append(steps, s)
		}
	}
	sort.Slice(steps, func(i, j int) bool { return steps[i].Concurrency < steps[j].Concurrency })
	return steps
}

// QMaxP95At interpolates the p95 TTFAB linearly between the measured concurrencies around c; false when c
// lies outside the measured range.
func QMaxP95At(q *capacity.QMax, c int) (float64, bool) {
	steps := qmaxCurve(q)
	for i, s := range steps {
		if s.Concurrency == c {
			return s.TTFABP95Ms, true
		}
		if i > 0 && steps[i-1].Concurrency < c && c < s.Concurrency {
			a := steps[i-1]
			f := float64(c-a.Concurrency) / float64(s.Concurrency-a.Concurrency)
			return a.TTFABP95Ms + f*(s.TTFABP95Ms-a.TTFABP95Ms), true
		}
	}
	return 0, false
}

// QMaxP95AtF is QMaxP95At at a concurrency that need not be whole (a probe spread over instances): linear
// between the measured concurrencies around c, the lowest step's p95 below it; false above the highest.
func QMaxP95AtF(q *capacity.QMax, c float64) (float64, bool) {
	steps := qmaxCurve(q)
	if len(steps) == 0 || c > float64(steps[len(steps)-1].Concurrency) {
		return 0, false
	}
	if c <= float64(steps[0].Concurrency) {
		return steps[0].TTFABP95Ms, true
	}
	for i := 1; i < len(steps); i++ {
		a, b := steps[i-1], steps[i]
		if c <= float64(b.Concurrency) {
			f := (c - float64(a.Concurrency)) / float64(b.Concurrency-a.Concurrency)
			return a.TTFABP95Ms + f*(b.TTFABP95Ms-a.TTFABP95Ms), true
		}
	}
	return 0, false
}

// QMaxRange is the lowest and highest usable measured concurrency.
func QMaxRange(q *capacity.QMax) (int, int) {
	steps := qmaxCurve(q)
	if len(steps) == 0 {
		return 0, 0
	}
	return steps[0].Concurrency, steps[len(steps)-1].Concurrency
}
