package traffic

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/speech-infra/speech-infra/simulate"
)

// MaxHoldout bounds the share of a trace held out from planning (tts-bench plan --holdout): at least a tenth
// of it is planned on.
const MaxHoldout = 0.9

// Split cuts s at the whole second that leaves holdout (a share in [0, MaxHoldout]) of it after the cut: the
// planning part first, the held-out rest second. Both keep s's name with what part they are; the held-out
// part's Start moves with it. The planning part is never empty; the held-out part is empty only when holdout
// is 0.
func (s Series) Split(holdout float64) (plan, held Series, err error) {
	if !(holdout >= 0 && holdout <= MaxHoldout) {
		return Series{}, Series{}, fmt.Errorf("holdout %g: want a share in [0, %g]", holdout, MaxHoldout)
	}
	n := len(s.PerSecond)
	cut := n - int(math.Round(holdout*float64(n)))
	if holdout > 0 {
		cut = min(cut, n-1)
	}
	if cut < 1 {
		return Series{}, Series{}, fmt.Errorf("%s lasts %s: too short to hold out %g%% of it", s.Name, s.Duration(), 100*holdout)
	}
	plan, held = s, s
	plan.PerSecond = slices.Clip(s.PerSecond[:cut])
	held.PerSecond = s.PerSecond[cut:]
	at := func(sec int) string { return (time.Duration(sec) * time.Second).String() }
	plan.Name = fmt.Sprintf("%s, planned on: %s to %s", s.Name, at(0), at(cut))
	held.Name = fmt.Sprintf("%s, held out: %s to %s", s.Name, at(cut), at(n))
	if !s.Start.IsZero() {
		held.Start = s.Start.Add(time.Duration(cut) * time.Second)
	}
	return plan, held, nil
}

// traceSteps are the steps RateTrace may resample to: whole seconds that divide a minute or an hour.
var traceSteps = []int{1, 2, 5, 10, 15, 20, 30, 60, 120, 300, 600, 900, 1800, 3600}

// RateTrace is s as a rate trace of at most maxPoints points: the mean rate over steps of the shortest of
// traceSteps that fits (step is that step), with a point only where the rate changes. A step longer than a
// second averages bursts shorter than it away, and the caller says so.
func (s Series) RateTrace(maxPoints int) (tr simulate.Trace, step time.Duration, err error) {
	n := len(s.PerSecond)
	if n == 0 {
		return simulate.Trace{}, 0, fmt.Errorf("%s has no second of traffic", s.Name)
	}
	k := 0
	for _, c := range traceSteps {
		if (n+c-1)/c <= maxPoints {
			k = c
			break
		}
	}
	if k == 0 {
		return simulate.Trace{}, 0, fmt.Errorf("%s lasts %s: more than %d points even at %ds steps", s.Name, s.Duration(), maxPoints, traceSteps[len(traceSteps)-1])
	}
	tr = simulate.Trace{Name: s.Name, Duration: s.Duration()}
	for from := 0; from < n; from += k {
		to := min(n, from+k)
		sum := 0.0
		for _, v := range s.PerSecond[from:to] {
			sum += v
		}
		rps := sum / float64(to-from)
		if len(tr.Points) > 0 && tr.Points[len(tr.Points)-1].RPS == rps {
			continue
		}
		tr.Points = append(tr.Points, simulate.Point{At: time.Duration(from) * time.Second, RPS: rps})
	}
	return tr, time.Duration(k) * time.Second, tr.Validate()
}

// SurgeQuantile is the quantile p (in (0, 1]) of s's surge ratio at horizon tPlan (whole seconds, at least
// 10 s; Describe's definition), at least 1 (a trace whose load never grows needs no headroom), and how many
// start minutes it is over. It is an error when s is too short for one start minute.
func SurgeQuantile(s Series, tPlan time.Duration, p float64) (ratio float64, startMinutes int, err error) {
	if !(p > 0 && p <= 1) {
		return 0, 0, fmt.Errorf("quantile %g: want (0, 1]", p)
	}
	if tPlan < surgeWindow*time.Second || tPlan%time.Second != 0 {
		return 0, 0, fmt.Errorf("t-plan %s: want whole seconds, at least %ds", tPlan, surgeWindow)
	}
	ratios, _, left := surgeRatios(prefixSums(s.PerSecond), int(tPlan/time.Second))
	if len(ratios) == 0 {
		return 0, 0, fmt.Errorf("%s: no surge ratio: %s", s.Name, surgeTooShort(len(s.PerSecond), int(tPlan/time.Second), left))
	}
	slices.Sort(ratios)
	return math.Max(1, nearestRank(ratios, p)), len(ratios), nil
}

// prefixSums are the running sums of v, from 0: prefix[i] is the sum of v[:i].
func prefixSums(v []float64) []float64 {
	prefix := make([]float64, len(v)+1)
	for i, x := range v {
		prefix[i+1] = prefix[i] + x
	}
	return prefix
}

// PeakOver is the highest mean rate of s over any window of w (whole seconds, windows sliding by 1 s); false
// when s is shorter than w.
func PeakOver(s Series, w time.Duration) (float64, bool) {
	if w < time.Second {
		return 0, false
	}
	p := peakOver(prefixSums(s.PerSecond), 0, len(s.PerSecond), int(w/time.Second))
	if p == nil {
		return 0, false
	}
	return p.RPS, true
}
