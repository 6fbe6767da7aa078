package simulate

import (
	"context"
	"math"
	"time"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// Oracle is the physical limit of any reactive fleet on a trace: at every second exactly
// ceil(rate ÷ safeRPS) instances (at least one), with zero start-up time, each at its share of the rate. It
// is judged with the same instance model and violation rule as Run. It stops when ctx is done, checking it
// every CheckEvery of simulated time, and returns context.Cause(ctx) then, and no result.
func Oracle(ctx context.Context, tr Trace, inst loadmodel.Model, safeRPS float64) (Result, error) {
	if r, ok := oracle(tr, inst, safeRPS, stopOn(ctx)); ok {
		return r, nil
	}
	return Result{}, context.Cause(ctx)
}

// oracle is Oracle that stops when stop returns true; ok is false then.
func oracle(tr Trace, inst loadmodel.Model, safeRPS float64, stop Cancel) (Result, bool) {
	res := Result{Name: "oracle", BucketS: 60, MinInstances: math.MaxInt32}
	c := &cursor{tr: tr}
	steps := int((tr.Duration + substep - 1) / substep)
	cur := Minute{}
	instSeconds := 0.0
	rowStart := time.Duration(0)
	for i := range steps {
		if i%checkSteps == 0 && stop() {
			return res, false
		}
		t := time.Duration(i) * substep
		arrivals := c.requests(t, t+substep)
		rate := arrivals / substep.Seconds()
		n := 1
		if safeRPS > 0 {
			n = max(1, int(math.Ceil(rate/safeRPS-1e-9)))
		}
		res.MinInstances, res.MaxInstances = min(res.MinInstances, n), max(res.MaxInstances, n)
		st := inst.At(rate / float64(n))
		shed := arrivals * st.Shed
		cur.Offered += arrivals
		cur.Shed += shed
		cur.Violating += arrivals * inst.SLO.ViolatingShare(st)
		cur.Serving = n
		res.Offered += arrivals
		res.Shed += shed
		res.PeakInstances = max(res.PeakInstances, n)
		instSeconds += float64(n) * substep.Seconds()
		end := t + substep
		if end-rowStart >= time.Minute || i == steps-1 {
			cur.Minute = int(rowStart / time.Minute)
			cur.OfferedRPS = cur.Offered / (end - rowStart).Seconds()
			cur.Violates = inst.SLO.RowViolates(cur.Offered, cur.Violating)
			if cur.Violates {
				res.ViolationMinutes++
			}
			res.Minutes = append(res.Minutes, cur)
			cur = Minute{}
			rowStart = end
		}
	}
	res.InstanceHours = instSeconds / 3600
	return res, true
}
