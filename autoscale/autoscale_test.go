package autoscale

import (
	"testing"
	"time"
)

func f(v float64) *float64 { return &v }

var t0 = time.Date(2025, 1, 1, 12, 0, 0, 0, time.UTC)

// tt is a target tracking policy on target 10 with the given cooldowns, invoked by its high alarm (out) or
// low alarm (!out) at metric value m.
func tt(name string, out bool, m float64, outCD, inCD time.Duration, st PolicyState) Policy {
	threshold := 10.0
	if !out {
		threshold = 9
	}
	return Policy{Name: name, TargetTracking: &TargetTracking{TargetValue: 10, ScaleOutCooldown: outCD, ScaleInCooldown: inCD},
		Alarms: []Alarm{{Name: name + "-alarm", Threshold: threshold, ScaleOut: out, Datapoints: []float64{m}}}, State: st}
}

// step is a ChangeInCapacity step policy with the given steps and cooldown, invoked by an alarm of threshold
// 50 at the given datapoints.
func step(name string, out bool, cd time.Duration, st PolicyState, steps []StepAdjustment, points ...float64) Policy {
	return Policy{Name: name, Step: &StepScaling{AdjustmentType: ChangeInCapacity, Steps: steps, Cooldown: cd},
		Alarms: []Alarm{{Name: name + "-alarm", Threshold: 50, ScaleOut: out, Datapoints: points}}, State: st}
}

// outSteps: +2 for a breach of [0, 20), +3 from 20 up.
var outSteps = []StepAdjustment{{Lower: f(0), Upper: f(20), Adjustment: 2}, {Lower: f(20), Adjustment: 3}}

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   Input
		// want is the new capacity, or -1 for no scaling.
		want    int
		notCode string
	}{
		// "So it responds by adding capacity proportional to the metric value as fast as it can." /
		// "Because it is not possible to add 1.5 instances, we round up and add two instances."
		{"target tracking scales out proportionally, rounded up", Input{Now: t0, Capacity: 2, Min: 1, Max: 10,
			Policies: []Policy{tt("tt", true, 25, time.Minute, time.Minute, PolicyState{})}}, 5, ""},
		// "A scaling policy won't increase the desired capacity again unless either a larger scale out is
		// triggered or the cooldown period ends."
		{"target tracking: a larger scale-out during the scale-out cooldown", Input{Now: t0, Capacity: 4, Min: 1, Max: 20,
			Policies: []Policy{tt("tt", true, 40, time.Minute, time.Minute, PolicyState{LastScaleOut: t0.Add(-10 * time.Second), ScaleOutFrom: 2})}}, 8, ""},
		{"target tracking: no smaller scale-out during the scale-out cooldown", Input{Now: t0, Capacity: 4, Min: 1, Max: 20,
			Policies: []Policy{tt("tt", true, 15, time.Minute, time.Minute, PolicyState{LastScaleOut: t0.Add(-10 * time.Second), ScaleOutFrom: 2})}}, -1, ""},
		{"target tracking: the cooldown has ended", Input{Now: t0, Capacity: 4, Min: 1, Max: 20,
			Policies: []Policy{tt("tt", true, 15, time.Minute, time.Minute, PolicyState{LastScaleOut: t0.Add(-2 * time.Minute), ScaleOutEnd: t0.Add(-90 * time.Second), ScaleOutFrom: 2})}}, 6, ""},
		// "If the alarm triggers again during the cooldown period but at a more aggressive step adjustment of
		// 3, the previous increase of 2 is considered part of the current capacity. Therefore, only 1 is added
		// to the capacity."
		{"step: a more aggressive step during the cooldown adds the difference", Input{Now: t0, Capacity: 12, Min: 1, Max: 20,
			Policies: []Policy{step("s", true, 5*time.Minute, PolicyState{LastScaleOut: t0.Add(-time.Minute), ScaleOutFrom: 10}, outSteps, 75)}}, 13, ""},
		{"step: the same step during the cooldown adds nothing", Input{Now: t0, Capacity: 12, Min: 1, Max: 20,
			Policies: []Policy{step("s", true, 5*time.Minute, PolicyState{LastScaleOut: t0.Add(-time.Minute), ScaleOutFrom: 10}, outSteps, 55)}}, -1, ""},
		// "A scaling policy won't increase the desired capacity again ..." is per policy: a step policy in its
		// cooldown does not hold back a target tracking policy on the same target.
		{"a step policy's cooldown does not block target tracking", Input{Now: t0, Capacity: 12, Min: 1, Max: 30,
			Policies: []Policy{
				step("s", true, 5*time.Minute, PolicyState{LastScaleOut: t0.Add(-time.Minute), ScaleOutFrom: 10}, outSteps, 55),
				tt("tt", true, 15, time.Minute, time.Minute, PolicyState{}),
			}}, 18, ""},
		// "so scale-in activities are blocked until the scale-in cooldown period has expired"; a scale-out
		// cooldown does not enter into it.
		{"the scale-out cooldown does not block scale-in", Input{Now: t0, Capacity: 4, Min: 1, Max: 10,
			Policies: []Policy{tt("tt", false, 2, 10*time.Minute, time.Minute, PolicyState{LastScaleOut: t0.Add(-time.Second), ScaleOutFrom: 2})}}, 3, ""},
		{"the scale-in cooldown blocks scale-in", Input{Now: t0, Capacity: 4, Min: 1, Max: 10,
			Policies: []Policy{tt("tt", false, 2, time.Minute, 5*time.Minute, PolicyState{LastScaleIn: t0.Add(-time.Minute)})}}, -1, ""},
		// "However, if another alarm triggers a scale-out activity during the scale-in cooldown period,
		// Application Auto Scaling scales out the target immediately."
		{"a scale-out during the scale-in cooldown happens at once", Input{Now: t0, Capacity: 4, Min: 1, Max: 10,
			Policies: []Policy{tt("tt", true, 15, time.Minute, 5*time.Minute, PolicyState{LastScaleIn: t0.Add(-time.Minute)})}}, 6, ""},
		// "Application Auto Scaling scales out proportionally to the metric as fast as it can, but scales in
		// more gradually": idle (metric 0) at 4 instances removes one, not three.
		{"target tracking scales in gradually", Input{Now: t0, Capacity: 4, Min: 1, Max: 10,
			Policies: []Policy{tt("tt", false, 0, time.Minute, time.Minute, PolicyState{})}}, 3, ""},
		// "the policy won't scale-in if it calculates that removing a minimum unit of capacity would likely
		// bring the metric back above the target value."
		{"no scale-in that would bring the metric back above the target", Input{Now: t0, Capacity: 4, Min: 1, Max: 10,
			Policies: []Policy{tt("tt", false, 8, time.Minute, time.Minute, PolicyState{})}}, -1, AnticipatedFlapping},
		// "AlreadyAtMaxCapacity: Scaling is blocked by the maximum capacity that you specified."
		{"already at the maximum", Input{Now: t0, Capacity: 5, Min: 1, Max: 5,
			Policies: []Policy{tt("tt", true, 30, time.Minute, time.Minute, PolicyState{})}}, -1, AlreadyAtMaxCapacity},
		// "AlreadyAtMinCapacity: Scaling is blocked by the minimum capacity that you specified."
		{"already at the minimum", Input{Now: t0, Capacity: 2, Min: 2, Max: 5,
			Policies: []Policy{step("s", false, time.Minute, PolicyState{}, []StepAdjustment{{Upper: f(0), Adjustment: -1}}, 10)}}, -1, AlreadyAtMinCapacity},
		// "AlreadyAtDesiredCapacity: Auto scaling algorithm calculated the revised capacity to be equal to the
		// current capacity."
		{"already at the desired capacity", Input{Now: t0, Capacity: 3, Min: 1, Max: 5,
			Policies: []Policy{step("s", true, time.Minute, PolicyState{}, []StepAdjustment{{Lower: f(0), Adjustment: 0}}, 60)}}, -1, AlreadyAtDesiredCapacity},
		// Bounds: the new capacity stays within [MinCapacity, MaxCapacity].
		{"a scale-out is limited to the maximum", Input{Now: t0, Capacity: 2, Min: 1, Max: 4,
			Policies: []Policy{tt("tt", true, 100, time.Minute, time.Minute, PolicyState{})}}, 4, ""},
		// DynamicScalingOutSuspended: "Whether scale out by a target tracking scaling policy or a step scaling
		// policy is suspended."
		{"scale-out suspended", Input{Now: t0, Capacity: 2, Min: 1, Max: 10, ScaleOutSuspended: true,
			Policies: []Policy{tt("tt", true, 30, time.Minute, time.Minute, PolicyState{})}}, -1, ""},
		{"scale-in suspended", Input{Now: t0, Capacity: 4, Min: 1, Max: 10, ScaleInSuspended: true,
			Policies: []Policy{tt("tt", false, 0, time.Minute, time.Minute, PolicyState{})}}, -1, ""},
		// "It will scale out the scalable target if any of the target tracking policies are ready for scale
		// out, but will scale in only if all of the target tracking policies (with the scale-in portion
		// enabled) are ready to scale in."
		{"scale in only when every target tracking policy is ready", Input{Now: t0, Capacity: 4, Min: 1, Max: 10,
			Policies: []Policy{tt("a", false, 0, time.Minute, time.Minute, PolicyState{}), {Name: "b", TargetTracking: &TargetTracking{TargetValue: 10}}}}, -1, ""},
		// "If multiple scaling policies instruct the scalable target to scale out or in at the same time,
		// Application Auto Scaling scales based on the policy that provides the largest capacity"
		{"the largest capacity wins", Input{Now: t0, Capacity: 2, Min: 1, Max: 20,
			Policies: []Policy{tt("a", true, 15, time.Minute, time.Minute, PolicyState{}), tt("b", true, 40, time.Minute, time.Minute, PolicyState{})}}, 8, ""},
		// "If the step scaling policy initiates a scale-in activity before the target tracking policy is ready
		// to scale in, the scale-in activity will not be blocked."
		{"a step scale-in is not held back by target tracking", Input{Now: t0, Capacity: 4, Min: 1, Max: 10,
			Policies: []Policy{step("s", false, time.Minute, PolicyState{}, []StepAdjustment{{Upper: f(0), Adjustment: -2}}, 10),
				{Name: "tt", TargetTracking: &TargetTracking{TargetValue: 10}}}}, 2, ""},
		// "ExactCapacity—Change the current capacity of the scalable target to the specified value."
		{"exact capacity", Input{Now: t0, Capacity: 3, Min: 1, Max: 10,
			Policies: []Policy{{Name: "s", Step: &StepScaling{AdjustmentType: ExactCapacity, Steps: []StepAdjustment{{Lower: f(0), Adjustment: 5}}},
				Alarms: []Alarm{{Threshold: 50, ScaleOut: true, Datapoints: []float64{60}}}}}}, 5, ""},
		// "If you specify a minimum amount of 2 ... 25 percent of 4 is 1. However, because you specified a
		// minimum increment of 2, Application Auto Scaling adds 2."
		{"percent change with MinAdjustmentMagnitude", Input{Now: t0, Capacity: 4, Min: 1, Max: 10,
			Policies: []Policy{{Name: "s", Step: &StepScaling{AdjustmentType: PercentChangeInCapacity, MinAdjustmentMagnitude: 2, Steps: []StepAdjustment{{Lower: f(0), Adjustment: 25}}},
				Alarms: []Alarm{{Threshold: 50, ScaleOut: true, Datapoints: []float64{60}}}}}}, 6, ""},
		// "If the metric value is above the breach threshold, the lower bound is inclusive and the upper bound
		// is exclusive": a breach of exactly 20 takes the +3 step.
		{"step bounds above the threshold", Input{Now: t0, Capacity: 10, Min: 1, Max: 20,
			Policies: []Policy{step("s", true, time.Minute, PolicyState{}, outSteps, 70)}}, 13, ""},
		// "If the metric value is below the breach threshold, the lower bound is exclusive and the upper bound
		// is inclusive": a breach of exactly -10 takes the step whose upper bound is -10 (-3), not the one whose
		// lower bound it is (-1), as the guide's example "If the metric value gets to 40" takes the -10% step.
		{"step bounds below the threshold", Input{Now: t0, Capacity: 10, Min: 1, Max: 20,
			Policies: []Policy{step("s", false, time.Minute, PolicyState{}, []StepAdjustment{{Lower: f(-10), Upper: f(0), Adjustment: -1}, {Upper: f(-10), Adjustment: -3}}, 40)}}, 7, ""},
		// "Application Auto Scaling applies your specified aggregation type to the most recent metric data
		// points": the average of 45, 60 and 75 is 60, a breach of 10 (+2); their maximum, 75, breaches by 25 (+3).
		{"metric aggregation Average", Input{Now: t0, Capacity: 10, Min: 1, Max: 20,
			Policies: []Policy{step("s", true, time.Minute, PolicyState{}, outSteps, 45, 60, 75)}}, 12, ""},
		{"metric aggregation Maximum", Input{Now: t0, Capacity: 10, Min: 1, Max: 20,
			Policies: []Policy{func() Policy {
				p := step("s", true, time.Minute, PolicyState{}, outSteps, 45, 60, 75)
				p.Step.Aggregation = AggregateMaximum
				return p
			}()}}, 13, ""},
		{"no alarm in ALARM", Input{Now: t0, Capacity: 3, Min: 1, Max: 5,
			Policies: []Policy{{Name: "tt", TargetTracking: &TargetTracking{TargetValue: 10}}}}, -1, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in)
			got := -1
			if d.Scale {
				got = d.Capacity
			}
			if got != tc.want {
				t.Errorf("capacity %d → %d (scale %v: %s), want %d", tc.in.Capacity, d.Capacity, d.Scale, d.Reason, tc.want)
			}
			code := ""
			if d.NotScaled != nil {
				code = d.NotScaled.Code
			}
			if code != tc.notCode {
				t.Errorf("not scaled reason %q (%s), want %q", code, d.Reason, tc.notCode)
			}
			if d.Reason == "" {
				t.Errorf("no reason given")
			}
		})
	}
}

// TestDecideState: a scale-out records the policy's cooldown and stops every scale-in cooldown; within the
// cooldown a further, larger scale-out keeps the capacity the cooldown started from.
func TestDecideState(t *testing.T) {
	in := Input{Now: t0, Capacity: 2, Min: 1, Max: 20, Policies: []Policy{
		tt("tt", true, 25, time.Minute, time.Minute, PolicyState{LastScaleIn: t0.Add(-time.Second)}),
	}}
	d := Decide(in)
	if !d.Scale || d.Capacity != 5 {
		t.Fatalf("first scale-out: %+v", d)
	}
	if s := d.States[0]; !s.LastScaleOut.Equal(t0) || s.ScaleOutFrom != 2 || !s.LastScaleIn.IsZero() {
		t.Fatalf("state after the first scale-out: %+v", s)
	}
	in.Now, in.Capacity = t0.Add(10*time.Second), 5
	in.Policies[0].State = d.States[0]
	in.Policies[0].Alarms[0].Datapoints = []float64{40}
	d = Decide(in)
	if !d.Scale || d.Capacity != 8 || d.States[0].ScaleOutFrom != 2 || !d.States[0].LastScaleOut.Equal(in.Now) {
		t.Fatalf("larger scale-out within the cooldown: %+v", d)
	}
}

// TestRoundPercentChange: "Values greater than 1 are rounded down. For example, 12.7 is rounded to 12. Values
// between 0 and 1 are rounded to 1. For example, .67 is rounded to 1. Values between 0 and -1 are rounded to
// -1. For example, -.58 is rounded to -1. Values less than -1 are rounded up. For example, -6.67 is rounded to
// -6."
func TestRoundPercentChange(t *testing.T) {
	for v, want := range map[float64]int{12.7: 12, .67: 1, -.58: -1, -6.67: -6, 0: 0, 1: 1, -1: -1} {
		if got := RoundPercentChange(v); got != want {
			t.Errorf("RoundPercentChange(%g) = %d, want %d", v, got, want)
		}
	}
}

// TestCooldownFromCompletion: a cooldown is counted from the end of the activity that
// started it. The API reference (ScaleOutCooldown): "The amount of time, in seconds, after a scale-out activity
// completes before another scale-out activity can start." and (ScaleInCooldown) "The amount of time, in
// seconds, after a scale-in activity completes before another scale-in activity can start." The user guide
// ("Define cooldown periods"): "after Application Auto Scaling successfully scales out, it starts to calculate
// the cooldown time." An activity that took longer than the cooldown therefore still holds the next smaller
// scale-out (or the next scale-in) for the whole cooldown after its EndTime. Expiry and the 10-s tick: a
// decision at or after EndTime + cooldown is outside the cooldown, so the next activity comes at the first
// tick at or after the expiry.
func TestCooldownFromCompletion(t *testing.T) {
	const cd = 30 * time.Second
	tick := 10 * time.Second
	start := t0
	end := t0.Add(95 * time.Second) // an update much longer than the cooldown

	// Scale-out: 2 → 3 at start, completed at end.
	in := Input{Now: start, Capacity: 2, Min: 1, Max: 20, Policies: []Policy{tt("tt", true, 15, cd, cd, PolicyState{})}}
	d := Decide(in)
	if !d.Scale || d.Capacity != 3 {
		t.Fatalf("first scale-out: %+v", d)
	}
	st := d.States[0]
	if !st.LastScaleOut.Equal(start) || !st.ScaleOutEnd.IsZero() {
		t.Fatalf("state after the scale-out: %+v, want its start and no end yet", st)
	}
	st.Completed(true, end)
	in.Capacity = 3
	in.Policies[0].State = st
	if exp := st.CooldownExpiry(true, cd); !exp.Equal(end.Add(cd)) {
		t.Fatalf("CooldownExpiry = %v, want EndTime + 30 s = %v", exp, end.Add(cd))
	}
	// Rounding to the tick: decisions come every 10 s from start. The expiry is end + 30 s = start + 125 s,
	// between the ticks at start + 120 s and start + 130 s: the first is inside the cooldown, the second not.
	// Counted from the start (the old rule) every one of these would have scaled out.
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{100 * time.Second, false}, {120 * time.Second, false}, {125*time.Second - time.Nanosecond, false}, {125 * time.Second, true}, {130 * time.Second, true}} {
		in.Now = start.Add(c.at)
		if d := Decide(in); d.Scale != c.want {
			t.Errorf("scale-out at start+%s (EndTime+%s): scale %v, want %v (%s)", c.at, c.at-95*time.Second, d.Scale, c.want, d.Reason)
		}
	}
	// The first tick a decision acts on is the first one at or after the expiry.
	var first time.Time
	for in.Now = end; first.IsZero(); in.Now = in.Now.Add(tick) {
		if d := Decide(in); d.Scale {
			first = in.Now
		}
	}
	if first.Before(end.Add(cd)) || !first.Before(end.Add(cd+tick)) {
		t.Errorf("the second scale-out comes %s after EndTime, want within [30 s, 40 s)", first.Sub(end))
	}

	// Scale-in: 4 → 3 at start, completed at end; the next scale-in waits until end + 30 s.
	in = Input{Now: start, Capacity: 4, Min: 1, Max: 20, Policies: []Policy{tt("tt", false, 0, cd, cd, PolicyState{})}}
	d = Decide(in)
	if !d.Scale || d.Capacity != 3 || !d.States[0].LastScaleIn.Equal(start) || !d.States[0].ScaleInEnd.IsZero() {
		t.Fatalf("first scale-in: %+v", d)
	}
	st = d.States[0]
	st.Completed(false, end)
	in.Capacity = 3
	in.Policies[0].State = st
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{60 * time.Second, false}, {120 * time.Second, false}, {125*time.Second - time.Nanosecond, false}, {125 * time.Second, true}} {
		in.Now = start.Add(c.at)
		if d := Decide(in); d.Scale != c.want {
			t.Errorf("scale-in at start+%s: scale %v, want %v (%s)", c.at, d.Scale, c.want, d.Reason)
		}
	}

	// Completed with an end before the start (a clock step) counts from the start; with no activity it does
	// nothing.
	var none PolicyState
	none.Completed(true, end)
	if !none.ScaleOutEnd.IsZero() || !none.CooldownExpiry(true, cd).IsZero() {
		t.Errorf("Completed without an activity: %+v", none)
	}
	st = PolicyState{LastScaleOut: end}
	st.Completed(true, start)
	if !st.ScaleOutEnd.Equal(end) {
		t.Errorf("an end before the start: %+v", st)
	}
	// A policy whose end was never reported counts from the start (callers that do not report).
	if exp := (PolicyState{LastScaleOut: start}).CooldownExpiry(true, cd); !exp.Equal(start.Add(cd)) {
		t.Errorf("unreported end: expiry %v, want start + 30 s", exp)
	}
}
