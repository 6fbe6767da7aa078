// Package autoscale is the scaling decision of Application Auto Scaling as one pure function, written from
// AWS's documentation: given a scalable target's capacity, bounds and suspension, its policies, the alarms that
// invoke them and each policy's cooldown memory, Decide returns the new capacity, or none, with the reason.
//
// The emulator's autoscaler and `tts-bench simulate` both call it, so the rules live in one place. It has no
// AWS SDK and no emulator dependency.
//
// The documents it follows (quoted where each rule is applied):
//   - "How step scaling for Application Auto Scaling works" (step adjustments, bounds, adjustment types,
//     rounding, cooldown), https://docs.aws.amazon.com/autoscaling/application/userguide/step-scaling-policy-overview.html
//   - "How target tracking scaling for Application Auto Scaling works" (proportional scale-out, conservative
//     scale-in, cooldowns, multiple policies),
//     https://docs.aws.amazon.com/autoscaling/application/userguide/target-tracking-scaling-policy-overview.html
//   - "Scaling activities for Application Auto Scaling" (not scaled reason codes).
package autoscale

import (
	"fmt"
	"math"
	"time"

	"github.com/speech-infra/speech-infra/loadmodel"
)

// Adjustment types of a step scaling policy (the AdjustmentType enum).
const (
	ChangeInCapacity        = "ChangeInCapacity"
	PercentChangeInCapacity = "PercentChangeInCapacity"
	ExactCapacity           = "ExactCapacity"
)

// Metric aggregation types of a step scaling policy (the MetricAggregationType enum).
const (
	AggregateAverage = "Average"
	AggregateMinimum = "Minimum"
	AggregateMaximum = "Maximum"
)

// Not scaled reason codes (NotScaledReason.Code), as "Scaling activities for Application Auto Scaling" lists them.
const (
	AnticipatedFlapping      = "AutoScalingAnticipatedFlapping"
	AlreadyAtMaxCapacity     = "AlreadyAtMaxCapacity"
	AlreadyAtMinCapacity     = "AlreadyAtMinCapacity"
	AlreadyAtDesiredCapacity = "AlreadyAtDesiredCapacity"
)

// StepAdjustment is one step: bounds relative to the alarm threshold (nil is infinite) and the adjustment.
type StepAdjustment struct {
	Lower, Upper *float64
	Adjustment   int
}

// StepScaling is a step scaling policy's configuration.
type StepScaling struct {
	// AdjustmentType is ChangeInCapacity, PercentChangeInCapacity or ExactCapacity.
	AdjustmentType string
	Steps          []StepAdjustment
	// MinAdjustmentMagnitude applies to PercentChangeInCapacity; 0 when unset.
	MinAdjustmentMagnitude int
	// Cooldown is the policy's cooldown (Application Auto Scaling's default is 300 s; the caller fills it in).
	Cooldown time.Duration
	// Aggregation is Average (the default when empty), Minimum or Maximum.
	Aggregation string
}

// TargetTracking is a target tracking policy's configuration.
type TargetTracking struct {
	TargetValue      float64
	ScaleOutCooldown time.Duration
	ScaleInCooldown  time.Duration
	DisableScaleIn   bool
}

// Alarm is an alarm in ALARM that invokes a policy now.
type Alarm struct {
	Name string
	// Threshold is the alarm's threshold; step bounds are relative to it.
	Threshold float64
	// ScaleOut is true for an alarm that breaches above its threshold (GreaterThan...), false for one that
	// breaches below it. For a target tracking policy it tells its high alarm from its low one.
	ScaleOut bool
	// Datapoints are the most recent metric datapoints the alarm evaluated, oldest first.
	Datapoints []float64
}

// PolicyState is what Application Auto Scaling remembers of a policy between decisions: its cooldowns.
//
// A cooldown is counted from the end of the scaling activity that started it, not from its start: the API
// reference describes ScaleOutCooldown as "The amount of time, in seconds, after a scale-out activity
// completes before another scale-out activity can start" (ScaleInCooldown alike), and the user guide says
// "after Application Auto Scaling successfully scales out, it starts to calculate the cooldown time".
//
// Decide records a new activity's start (LastScaleOut, LastScaleIn) and clears its end; the caller reports
// the end with Completed when the activity finishes: the emulator when the endpoint is InService again
// (the activity's EndTime), the simulator when its new instances serve or its removed ones are gone. Both
// callers make no decision while an activity is in progress (the endpoint is Updating), as Application Auto
// Scaling waits for SageMaker. An activity whose end was never reported counts as ending at its start: a
// caller that does not call Completed gets cooldowns counted from the start, which is wrong against AWS for
// any activity that takes time.
type PolicyState struct {
	// LastScaleOut is when the policy's latest scale-out activity started; ScaleOutFrom the capacity before the
	// scale-out that started the current scale-out cooldown (kept while later, larger scale-outs happen within
	// it).
	LastScaleOut time.Time
	ScaleOutFrom int
	// ScaleOutEnd is when the scale-out activity that started at LastScaleOut completed (its EndTime), as
	// reported with Completed; zero until then. The scale-out cooldown runs from it.
	ScaleOutEnd time.Time
	// LastScaleIn is when the policy's latest scale-in activity started; zero once a scale-out stopped its
	// cooldown. ScaleInEnd is when it completed, as reported with Completed; the scale-in cooldown runs from it.
	LastScaleIn time.Time
	ScaleInEnd  time.Time
}

// Completed records that the policy's latest scale-out (out true) or scale-in activity ended at end, the
// activity's EndTime: the matching cooldown runs from end. An end before the activity's start (a clock step)
// counts as the start. It does nothing when the policy has no such activity.
func (s *PolicyState) Completed(out bool, end time.Time) {
	if out {
		if !s.LastScaleOut.IsZero() {
			s.ScaleOutEnd = laterOf(end, s.LastScaleOut)
		}
		return
	}
	if !s.LastScaleIn.IsZero() {
		s.ScaleInEnd = laterOf(end, s.LastScaleIn)
	}
}

// CooldownExpiry is when the policy's scale-out (out true) or scale-in cooldown of length cooldown ends: the
// activity's reported end (its start when none was reported) plus the cooldown; zero when the policy has no
// such activity.
//
// Decide is evaluated at ticks (the alarms' 10-s evaluation of AWS's high-resolution metrics, the emulator's
// metric period, the simulator's Tick). A decision at or after the expiry is outside the cooldown, one before
// it inside: a cooldown that expires between two ticks ends at the first tick at or after the expiry, so the
// next activity starts up to one tick after the expiry, never before it.
func (s PolicyState) CooldownExpiry(out bool, cooldown time.Duration) time.Time {
	start, end := s.LastScaleIn, s.ScaleInEnd
	if out {
		start, end = s.LastScaleOut, s.ScaleOutEnd
	}
	if start.IsZero() {
		return time.Time{}
	}
	return laterOf(end, start).Add(cooldown)
}

func laterOf(a, b time.Time) time.Time {
	if a.Before(b) {
		return b
	}
	return a
}

// Policy is one scaling policy of the target: exactly one of Step and TargetTracking is set. Alarms are the
// policy's alarms that are in ALARM now (none: the policy is not invoked).
type Policy struct {
	Name           string
	Step           *StepScaling
	TargetTracking *TargetTracking
	Alarms         []Alarm
	State          PolicyState
}

// Input is everything the decision depends on.
type Input struct {
	Now time.Time
	// Capacity is the target's current (desired) capacity.
	Capacity int
	Min, Max int
	// ScaleOutSuspended and ScaleInSuspended are the target's DynamicScalingOutSuspended and
	// DynamicScalingInSuspended.
	ScaleOutSuspended, ScaleInSuspended bool
	Policies                            []Policy
}

// NotScaledReason is why a triggered policy did not change the capacity, in AWS's machine-readable form.
type NotScaledReason struct {
	Code            string
	CurrentCapacity int
	MinCapacity     int
	MaxCapacity     int
}

// Decision is the outcome of Decide.
type Decision struct {
	// Scale is true when the capacity changes to Capacity.
	Scale    bool
	Capacity int
	// Policy and Alarm name the policy and alarm that decided (the trigger of a not scaled decision too).
	Policy, Alarm string
	// Reason says in words why the capacity changes or not.
	Reason string
	// NotScaled is set when a triggered policy did not scale for one of AWS's not scaled reasons (the
	// emulator records it as a not scaled activity). Nil when nothing triggered, or the reason is one AWS
	// records no activity for (a cooldown, a suspension).
	NotScaled *NotScaledReason
	// States are the policies' states after the decision, in the order of Input.Policies.
	States []PolicyState
}

// proposal is what one policy asks for.
type proposal struct {
	policy int
	alarm  string
	want   int
	out    bool
	reason string
	// blocked says why this proposal cannot be acted on (a cooldown); "" when it can.
	blocked string
	// notScaled is the not scaled reason code when the policy computed no change.
	notScaled string
}

// Decide returns the scaling decision for in. It is pure: the same input gives the same decision.
func Decide(in Input) Decision {
	d := Decision{Capacity: in.Capacity, States: make([]PolicyState, len(in.Policies))}
	for i, p := range in.Policies {
		d.States[i] = p.State
	}
	var outs, ins, idle []proposal
	// ttScaleIn counts the target tracking policies with scale-in enabled, ttReady those ready to scale in now.
	ttScaleIn, ttReady := 0, 0
	for i, p := range in.Policies {
		if p.TargetTracking != nil && !p.TargetTracking.DisableScaleIn {
			ttScaleIn++
		}
		for _, a := range p.Alarms {
			pr, ok := propose(in, i, p, a)
			if !ok {
				continue
			}
			switch {
			case pr.notScaled != "" || pr.want == in.Capacity && pr.blocked == "":
				idle = append(idle, pr)
			case pr.out:
				outs = append(outs, pr)
			default:
				ins = append(ins, pr)
				if p.TargetTracking != nil && pr.blocked == "" {
					ttReady++
				}
			}
		}
	}

	// "It will scale out the scalable target if any of the target tracking policies are ready for scale out,
	// but will scale in only if all of the target tracking policies (with the scale-in portion enabled) are
	// ready to scale in." and "If multiple scaling policies instruct the scalable target to scale out or in at
	// the same time, Application Auto Scaling scales based on the policy that provides the largest capacity for
	// both scale in and scale out."
	if best, ok := largest(outs); ok {
		return decideOut(in, d, best)
	}
	if len(outs) > 0 {
		// Every scale-out waits for its cooldown.
		return notScaling(d, in, outs[0], outs[0].blocked, "")
	}
	var ready []proposal
	for _, pr := range ins {
		if pr.blocked != "" {
			continue
		}
		// A step scaling policy's scale-in is not held back by target tracking: "if the step scaling policy
		// initiates a scale-in activity before the target tracking policy is ready to scale in, the scale-in
		// activity will not be blocked."
		if in.Policies[pr.policy].TargetTracking != nil && ttReady < ttScaleIn {
			continue
		}
		ready = append(ready, pr)
	}
	if best, ok := largest(ready); ok {
		return decideIn(in, d, best)
	}
	if len(ins) > 0 {
		pr := ins[0]
		why := pr.blocked
		if why == "" {
			why = fmt.Sprintf("not every target tracking policy with scale-in enabled is ready to scale in (%d of %d)", ttReady, ttScaleIn)
		}
		return notScaling(d, in, pr, why, "")
	}
	if len(idle) > 0 {
		pr := idle[0]
		code := pr.notScaled
		if code == "" {
			code = AlreadyAtDesiredCapacity
		}
		return notScaling(d, in, pr, pr.reason, code)
	}
	d.Reason = "no policy is invoked by an alarm in ALARM"
	return d
}

// largest picks the unblocked proposal with the largest capacity.
func largest(list []proposal) (proposal, bool) {
	var best proposal
	found := false
	for _, pr := range list {
		if pr.blocked != "" {
			continue
		}
		if !found || pr.want > best.want {
			best, found = pr, true
		}
	}
	return best, found
}

func notScaling(d Decision, in Input, pr proposal, reason, code string) Decision {
	d.Policy, d.Alarm = in.Policies[pr.policy].Name, pr.alarm
	d.Reason = reason
	if code != "" {
		d.NotScaled = &NotScaledReason{Code: code, CurrentCapacity: in.Capacity, MinCapacity: in.Min, MaxCapacity: in.Max}
	}
	return d
}

func decideOut(in Input, d Decision, pr proposal) Decision {
	d.Policy, d.Alarm = in.Policies[pr.policy].Name, pr.alarm
	if in.ScaleOutSuspended {
		d.Reason = "dynamic scale-out is suspended (DynamicScalingOutSuspended)"
		return d
	}
	if in.Capacity >= in.Max {
		d.Reason = fmt.Sprintf("%s, but the capacity %d is already at the maximum %d", pr.reason, in.Capacity, in.Max)
		d.NotScaled = &NotScaledReason{Code: AlreadyAtMaxCapacity, CurrentCapacity: in.Capacity, MinCapacity: in.Min, MaxCapacity: in.Max}
		return d
	}
	want := min(pr.want, in.Max)
	d.Scale, d.Capacity = true, want
	d.Reason = pr.reason
	if want < pr.want {
		d.Reason += fmt.Sprintf(", limited to the maximum capacity %d", in.Max)
	}
	st := &d.States[pr.policy]
	p := in.Policies[pr.policy]
	if !inCooldown(in.Now, p.State, true, outCooldown(p)) {
		st.ScaleOutFrom = in.Capacity
	}
	// A new activity: its cooldown starts when the caller reports it completed (PolicyState.Completed).
	st.LastScaleOut, st.ScaleOutEnd = in.Now, time.Time{}
	// "if another alarm triggers a scale-out activity during the scale-in cooldown period, Application Auto
	// Scaling scales out the target immediately. In this case, the scale-in cooldown period stops and doesn't
	// complete."
	for i := range d.States {
		d.States[i].LastScaleIn, d.States[i].ScaleInEnd = time.Time{}, time.Time{}
	}
	return d
}

func decideIn(in Input, d Decision, pr proposal) Decision {
	d.Policy, d.Alarm = in.Policies[pr.policy].Name, pr.alarm
	if in.ScaleInSuspended {
		d.Reason = "dynamic scale-in is suspended (DynamicScalingInSuspended)"
		return d
	}
	if in.Capacity <= in.Min {
		d.Reason = fmt.Sprintf("%s, but the capacity %d is already at the minimum %d", pr.reason, in.Capacity, in.Min)
		d.NotScaled = &NotScaledReason{Code: AlreadyAtMinCapacity, CurrentCapacity: in.Capacity, MinCapacity: in.Min, MaxCapacity: in.Max}
		return d
	}
	want := max(pr.want, in.Min)
	d.Scale, d.Capacity = true, want
	d.Reason = pr.reason
	if want > pr.want {
		d.Reason += fmt.Sprintf(", limited to the minimum capacity %d", in.Min)
	}
	d.States[pr.policy].LastScaleIn, d.States[pr.policy].ScaleInEnd = in.Now, time.Time{}
	return d
}

// inCooldown reports whether a decision at now falls within the policy's scale-out (out) or scale-in
// cooldown: before the activity's end plus the cooldown.
func inCooldown(now time.Time, s PolicyState, out bool, cooldown time.Duration) bool {
	expiry := s.CooldownExpiry(out, cooldown)
	return !expiry.IsZero() && now.Before(expiry)
}

func outCooldown(p Policy) time.Duration {
	if p.TargetTracking != nil {
		return p.TargetTracking.ScaleOutCooldown
	}
	if p.Step != nil {
		return p.Step.Cooldown
	}
	return 0
}

func inCooldownOf(p Policy) time.Duration {
	if p.TargetTracking != nil {
		return p.TargetTracking.ScaleInCooldown
	}
	if p.Step != nil {
		return p.Step.Cooldown
	}
	return 0
}

// propose computes what policy p asks for, invoked by alarm a; false when the alarm gives it nothing to act on
// (no datapoint, no step for the breach, a disabled scale-in).
func propose(in Input, i int, p Policy, a Alarm) (proposal, bool) {
	if len(a.Datapoints) == 0 {
		return proposal{}, false
	}
	pr := proposal{policy: i, alarm: a.Name}
	cur := in.Capacity
	// "A scaling policy won't increase the desired capacity again unless either a larger scale out is
	// triggered or the cooldown period ends. While the scale-out cooldown period is in effect, the capacity
	// added by the initiating scale-out activity is calculated as part of the desired capacity for the next
	// scale-out activity." Within its scale-out cooldown a policy measures from the capacity before that
	// scale-out, and scales out again only to a larger capacity, adding the difference.
	outCool := inCooldown(in.Now, p.State, true, outCooldown(p))
	base := cur
	if outCool {
		base = p.State.ScaleOutFrom
	}
	switch {
	case p.TargetTracking != nil:
		tt := p.TargetTracking
		m := a.Datapoints[len(a.Datapoints)-1]
		if a.ScaleOut {
			// "So it responds by adding capacity proportional to the metric value as fast as it can."
			// "Because it is not possible to add 1.5 instances, we round up and add two instances."
			pr.out = true
			pr.want = int(math.Ceil(float64(base) * m / tt.TargetValue))
			pr.reason = fmt.Sprintf("the metric %s is above the target %s: %d × %s / %s rounded up is %d", num(m), num(tt.TargetValue), base, num(m), num(tt.TargetValue), pr.want)
			return outOutcome(pr, cur, outCool, outCooldown(p))
		}
		if tt.DisableScaleIn {
			return proposal{}, false
		}
		// "When the metric falls below the target value, the policy won't scale-in if it calculates that
		// removing a minimum unit of capacity would likely bring the metric back above the target value."
		if cur <= 1 || float64(cur)*m/float64(cur-1) > tt.TargetValue {
			pr.notScaled = AnticipatedFlapping
			pr.want = cur
			pr.reason = fmt.Sprintf("the metric %s is below the target %s, but removing one unit of %d would likely bring it back above the target", num(m), num(tt.TargetValue), cur)
			return pr, true
		}
		// "Application Auto Scaling scales out proportionally to the metric as fast as it can, but scales in
		// more gradually." AWS gives no exact step; the emulator removes at most one unit per scale-in activity
		// (then ScaleInCooldown holds the next), never below what the metric needs rounded up ("if we determine
		// that removing 0.5 instances increases your CPU utilization to above 50 percent, we will choose not to
		// scale-in").
		need := int(math.Ceil(float64(cur) * m / tt.TargetValue))
		pr.want = max(need, cur-1)
		pr.reason = fmt.Sprintf("the metric %s is below the target %s: scaling in gradually by one unit from %d", num(m), num(tt.TargetValue), cur)
		return inOutcome(pr, cur, inCooldown(in.Now, p.State, false, inCooldownOf(p)), inCooldownOf(p))
	case p.Step != nil:
		st := p.Step
		m := aggregate(a.Datapoints, st.Aggregation)
		adj, ok := stepFor(st.Steps, m-a.Threshold, a.ScaleOut)
		if !ok {
			return proposal{}, false
		}
		want := applyAdjustment(cur, adj, st)
		pr.out = want > cur
		if pr.out && outCool {
			want = applyAdjustment(base, adj, st)
		}
		pr.want = want
		side := "at"
		switch {
		case m > a.Threshold:
			side = "above"
		case m < a.Threshold:
			side = "below"
		}
		pr.reason = fmt.Sprintf("the metric %s is %s the threshold %s: step adjustment %s %d gives %d", num(m), side, num(a.Threshold), st.AdjustmentType, adj, want)
		if pr.out {
			return outOutcome(pr, cur, outCool, st.Cooldown)
		}
		return inOutcome(pr, cur, inCooldown(in.Now, p.State, false, st.Cooldown), st.Cooldown)
	}
	return proposal{}, false
}

// outOutcome finishes a scale-out proposal: during the policy's scale-out cooldown one no larger than the
// current capacity is blocked; outside it, one that adds nothing is no scale-out.
func outOutcome(pr proposal, cur int, cooling bool, cooldown time.Duration) (proposal, bool) {
	switch {
	case pr.want > cur:
	case cooling:
		pr.blocked = fmt.Sprintf("%s; within the %s scale-out cooldown only a larger scale-out is made", pr.reason, cooldown)
	default:
		pr.out = false
	}
	return pr, true
}

// inOutcome finishes a scale-in proposal: it is blocked while the policy's scale-in cooldown runs.
func inOutcome(pr proposal, cur int, cooling bool, cooldown time.Duration) (proposal, bool) {
	if pr.want < cur && cooling {
		pr.blocked = fmt.Sprintf("%s; the %s scale-in cooldown has not expired", pr.reason, cooldown)
	}
	return pr, true
}

// aggregate applies a step policy's MetricAggregationType to the alarm's recent datapoints: "Application Auto
// Scaling applies your specified aggregation type to the most recent metric data points from CloudWatch".
func aggregate(points []float64, how string) float64 {
	v := points[0]
	sum := 0.0
	for _, p := range points {
		sum += p
		switch how {
		case AggregateMinimum:
			v = min(v, p)
		case AggregateMaximum:
			v = max(v, p)
		}
	}
	if how == AggregateMinimum || how == AggregateMaximum {
		return v
	}
	return sum / float64(len(points))
}

// stepFor picks the step whose interval holds delta (the metric minus the threshold): "If the metric value
// is above the breach threshold, the lower bound is inclusive and the upper bound is exclusive. If the metric
// value is below the breach threshold, the lower bound is exclusive and the upper bound is inclusive."
func stepFor(steps []StepAdjustment, delta float64, above bool) (int, bool) {
	for _, s := range steps {
		lo, hi := math.Inf(-1), math.Inf(1)
		if s.Lower != nil {
			lo = *s.Lower
		}
		if s.Upper != nil {
			hi = *s.Upper
		}
		if above && delta >= lo && delta < hi || !above && delta > lo && delta <= hi {
			return s.Adjustment, true
		}
	}
	return 0, false
}

// applyAdjustment is the capacity a step adjustment gives from capacity cur, before bounds.
func applyAdjustment(cur, adj int, st *StepScaling) int {
	switch st.AdjustmentType {
	case ExactCapacity:
		return adj
	case PercentChangeInCapacity:
		change := RoundPercentChange(float64(cur) * float64(adj) / 100)
		// "With PercentChangeInCapacity, you can also specify the minimum amount to scale using the
		// MinAdjustmentMagnitude parameter."
		if st.MinAdjustmentMagnitude > 0 && change != 0 && abs(change) < st.MinAdjustmentMagnitude {
			change = sign(change) * st.MinAdjustmentMagnitude
		}
		return cur + change
	default:
		return cur + adj
	}
}

// RoundPercentChange rounds a PercentChangeInCapacity change as Application Auto Scaling documents: "Values
// greater than 1 are rounded down. ... Values between 0 and 1 are rounded to 1. ... Values between 0 and -1
// are rounded to -1. ... Values less than -1 are rounded up."
func RoundPercentChange(v float64) int {
	switch {
	case v == 0:
		return 0
	case v > 0 && v < 1:
		return 1
	case v < 0 && v > -1:
		return -1
	default:
		return int(math.Trunc(v))
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

func sign(v int) int {
	if v < 0 {
		return -1
	}
	return 1
}

// num is a number in a decision's reason, in the project's one number format (never a raw float such as
// 3.2679738562091503).
func num(x float64) string { return loadmodel.Format(x) }
