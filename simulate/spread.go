package simulate

import (
	"context"
	"math"
	"slices"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// FirstScaleOut is the time of the result's first scale-out decision, in seconds from the trace's start; -1
// when there was none.
func FirstScaleOut(r Result) float64 {
	for _, ev := range r.Events {
		if ev.To > ev.From {
			return ev.AtS
		}
	}
	return -1
}

// Spread is where the first scale-out falls, and how large the fleet grows, over many random runs of the
// alarm's datapoints.
type Spread struct {
	// Runs is the number of runs; Missing how many of them did not scale out at all.
	Runs, Missing int
	// Times are the runs' first scale-out times that happened, in seconds, sorted.
	Times []float64
	// PeakInstances are the runs' largest fleets (serving and starting), sorted.
	PeakInstances []int
	// ViolationRuns is how many runs had a minute that violated the SLO; HeldRuns how many held (Result.Holds: no
	// violation minute and no flap).
	ViolationRuns, HeldRuns int
	// InstanceHours is the runs' instance-hours, summed: MeanInstanceHours divides it by Runs.
	InstanceHours float64
}

// MeanInstanceHours is the runs' mean instance-hours; 0 without runs.
func (s Spread) MeanInstanceHours() float64 {
	if s.Runs == 0 {
		return 0
	}
	return s.InstanceHours / float64(s.Runs)
}

// Quantile is the q-quantile of the first scale-out times (nearest rank); NaN when no run scaled out.
func (s Spread) Quantile(q float64) float64 {
	if len(s.Times) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(s.Times)))) - 1
	return s.Times[min(len(s.Times)-1, max(0, i))]
}

// ScaleOutSpread runs f on tr once for each seed 1..runs with the alarm's datapoints drawn from sc
// (Fleet.Scatter), and gathers the first scale-out times: where one run of the real alarm may place it. The
// deterministic Run (the plan's verdict) feeds the alarm the quantile the model's metric is, and so scales out
// at the late end of this spread.
//
// cancel (nil: never) is checked as RunContext checks its context; ok is false when it stopped the runs.
func ScaleOutSpread(tr Trace, f Fleet, sc loadmodel.Scatter, runs int, cancel Cancel) (s Spread, ok bool) {
	s = Spread{Runs: runs}
	f.Scatter = &sc
	for seed := 1; seed <= runs; seed++ {
		f.Seed = uint64(seed)
		r, ok := run(tr, f, cancel)
		if !ok {
			return s, false
		}
		if at := FirstScaleOut(r); at >= 0 {
			s.Times = append(s.Times, at)
		} else {
			s.Missing++
		}
		s.PeakInstances = append(s.PeakInstances, r.PeakInstances)
		if r.ViolationMinutes > 0 {
			s.ViolationRuns++
		}
		if r.Holds() {
			s.HeldRuns++
		}
		s.InstanceHours += r.InstanceHours
	}
	slices.Sort(s.Times)
	slices.Sort(s.PeakInstances)
	return s, true
}

// ScaleOutSpreadContext is ScaleOutSpread that stops when ctx is done: it returns context.Cause(ctx) then.
func ScaleOutSpreadContext(ctx context.Context, tr Trace, f Fleet, sc loadmodel.Scatter, runs int) (Spread, error) {
	if s, ok := ScaleOutSpread(tr, f, sc, runs, stopOn(ctx)); ok {
		return s, nil
	}
	return Spread{}, context.Cause(ctx)
}
