package emulator

import (
	"io"
	"log"
	"testing"
	"time"
)

// policyEmulator is an emulator with one InService endpoint of the given instance count, a scalable target
// for it (min 0, max 20) and no running goroutines: enough to run scaleTargetLocked directly.
func policyEmulator(t *testing.T, desired int) (*Emulator, *endpointRec, *targetRec) {
	t.Helper()
	const name = "speech-test"
	// The quota leaves room for the 20 instances the target allows.
	e := &Emulator{opts: Options{StateDir: t.TempDir(), InstanceQuota: 20}, log: log.New(io.Discard, "", 0), st: newState(),
		fleets: map[string]*fleet{name: {name: name, kick: make(chan struct{}, 1)}}, done: make(chan struct{})}
	ep := &endpointRec{Name: name, Variant: "AllTraffic", Status: statusInService, Desired: desired}
	for range desired {
		ep.Instances = append(ep.Instances, "i")
	}
	e.st.Endpoints[name] = ep
	tg := &targetRec{Namespace: namespaceSM, ResourceID: resourceIDOf(name, "AllTraffic"), Dimension: dimensionVariant, Min: 0, Max: 20}
	e.st.Targets[targetKey(tg.Namespace, tg.ResourceID, tg.Dimension)] = tg
	return e, ep, tg
}

// TestPercentChangeInCapacityRounding: a PercentChangeInCapacity step rounds as Application Auto Scaling
// documents it: results above 1 down, between 0 and 1 to 1, between -1 and 0 to -1, below -1 up.
func TestPercentChangeInCapacityRounding(t *testing.T) {
	for _, tc := range []struct {
		current, percent, want int
	}{
		{1, 50, 2},   // +0.5 → +1
		{10, 25, 12}, // +2.5 → +2
		{3, -10, 2},  // -0.3 → -1
		{9, -50, 5},  // -4.5 → -4
	} {
		e, ep, tg := policyEmulator(t, tc.current)
		p := &policyRec{Name: "step", Arn: "policy-arn", Namespace: tg.Namespace, ResourceID: tg.ResourceID, Dimension: tg.Dimension,
			Step: &stepConfig{AdjustmentType: "PercentChangeInCapacity", Cooldown: ptr(0),
				StepAdjustments: []stepAdjustment{{ScalingAdjustment: tc.percent}}}}
		e.st.Policies[policyKey(tg.Namespace, tg.ResourceID, tg.Dimension, p.Name)] = p
		e.st.Alarms["alarm"] = &alarmRec{Name: "alarm", State: alarmAlarm, ActionsEnabled: true, AlarmActions: []string{p.Arn},
			Threshold: 10, LastValue: 20, ComparisonOperator: "GreaterThanThreshold"}
		e.scaleTargetLocked(tg, []string{"alarm"}, time.Now())
		if ep.Desired != tc.want {
			t.Errorf("%d instances %+d%%: desired %d, want %d", tc.current, tc.percent, ep.Desired, tc.want)
		}
	}
}

// TestTargetTrackingScalesInGradually: a target tracking policy whose low alarm is in ALARM on an idle metric
// (0) at 4 instances removes one instance, not three: "Application Auto Scaling scales out proportionally to
// the metric as fast as it can, but scales in more gradually." (Application Auto Scaling user guide, target
// tracking considerations). AWS gives no exact step; the emulator removes one unit per scale-in activity and
// records the activity InProgress while the endpoint updates.
func TestTargetTrackingScalesInGradually(t *testing.T) {
	e, ep, tg := policyEmulator(t, 4)
	tg.Min = 1
	p := &policyRec{Name: "tt", Arn: "policy-arn", Namespace: tg.Namespace, ResourceID: tg.ResourceID, Dimension: tg.Dimension,
		TargetTracking: &targetTrackingConfig{TargetValue: ptr(5.0), ScaleInCooldown: ptr(300)}}
	e.st.Policies[policyKey(tg.Namespace, tg.ResourceID, tg.Dimension, p.Name)] = p
	e.st.Alarms["low"] = &alarmRec{Name: "low", State: alarmAlarm, ActionsEnabled: true, AlarmActions: []string{p.Arn},
		Threshold: 4.5, LastValue: 0, ComparisonOperator: "LessThanThreshold"}
	now := time.Now()
	e.scaleTargetLocked(tg, []string{"low"}, now)
	if ep.Desired != 3 {
		t.Fatalf("idle at 4 instances: desired %d, want 3", ep.Desired)
	}
	if n := len(e.st.Activities); n != 1 || e.st.Activities[0].StatusCode != activityInProgress {
		t.Fatalf("activities %+v: want one, InProgress while the endpoint updates", e.st.Activities)
	}
	// The next evaluation is within the policy's 300-s scale-in cooldown: nothing more.
	ep.Status = statusInService
	e.scaleTargetLocked(tg, []string{"low"}, now.Add(time.Second))
	if ep.Desired != 3 {
		t.Fatalf("within the scale-in cooldown: desired %d, want 3", ep.Desired)
	}
}
