package capacity

import (
	"path/filepath"
	"testing"
)

func TestScalingSpecForValidFixture(t *testing.T) {
	// GIVEN the valid fixture plan WHEN its scaling spec is derived THEN it carries the plan's numbers (rounded to
	// three decimals: target 32.425708… → 32.426, the metric at the scale-out rate 11.47 rps; scale-in 12.926…
	// → 12.926, the metric at the scale-in rate 4.59 rps) and the alarm names removal looks for.
	p, err := LoadPlan(filepath.Join("..", "testdata", "plans", "valid", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	s := ScalingSpecFor("speech-kokoro-82m", "AllTraffic", p)
	if s.MinInstances != 1 || s.MaxInstances != 7 || s.ScaleOut.TargetValue != 32.426 || s.ScaleOut.ScaleOutCooldownS != 30 ||
		s.ScaleIn.CooldownS != 1023 || s.ScaleIn.Adjustment != -1 || s.QueueMaxDepth != 50 {
		t.Errorf("spec = %+v", s)
	}
	names := AlarmNames("speech-kokoro-82m")
	if len(s.Alarms) != len(names) {
		t.Fatalf("%d alarms, %d names", len(s.Alarms), len(names))
	}
	triggers := 0
	for i, a := range s.Alarms {
		if a.Name != names[i] {
			t.Errorf("alarm %d named %s, want %s", i, a.Name, names[i])
		}
		if (a.Statistic == "") == (a.ExtendedStatistic == "") {
			t.Errorf("alarm %s: exactly one of statistic and extended statistic must be set", a.Name)
		}
		if a.TriggersScaleIn {
			triggers++
			// The scale-in window is at least T_plan 340.8 s in 10-s periods: ceil(34.08) = 35.
			if a.Threshold != 12.926 || a.Comparison != "LessThanThreshold" || a.PeriodS != 10 || a.EvaluationPeriods != 35 ||
				a.DatapointsToAlarm != 35 || a.Statistic != "Maximum" {
				t.Errorf("scale-in alarm = %+v", a)
			}
		}
	}
	if triggers != 1 {
		t.Errorf("%d alarms trigger scale-in, want 1", triggers)
	}
	// The scale-out on shed: the queue saturation alarm (the one minute's Sum of 5XX above 0) invokes it; one more
	// instance per 11.4723 rps × 60 s = 688.338 shed requests; the fleet can grow by 6, so 6 steps, the last open;
	// its cooldown the plan's 30 s raised to 2 × 60 + 10 = 130 s.
	if a := s.Alarms[1]; !a.TriggersShedScaleOut || a.TriggersScaleIn || a.Metric != "Invocation5XXErrors" || a.Statistic != "Sum" || a.Threshold != 0 || a.Comparison != "GreaterThanThreshold" {
		t.Errorf("queue saturation alarm = %+v, want the trigger of the scale-out on shed", a)
	}
	so := s.ShedScaleOut
	if so.PolicyName != "speech-kokoro-82m-scale-out-on-shed" || so.CooldownS != 130 || so.ShedUnit != 688.338 || len(so.Steps) != 6 {
		t.Fatalf("scale-out on shed = %+v", so)
	}
	for k, st := range so.Steps {
		if st.Lower != round3(float64(k)*688.338) || st.Adjustment != k+1 || (k < 5) != (st.Upper != nil) || st.Upper != nil && *st.Upper != round3(float64(k+1)*688.338) {
			t.Errorf("step %d = %+v (upper %v)", k, st, st.Upper)
		}
	}
	if got := s.PolicyNames(); len(got) != 3 || got[2] != so.PolicyName {
		t.Errorf("policy names %v", got)
	}
	// T_plan 340.8 s + 30 s cooldown → ceil(370.8/60) + 1 = 8 periods.
	if got := s.Alarms[3].EvaluationPeriods; got != 8 {
		t.Errorf("fleet-at-maximum evaluation periods = %d, want 8", got)
	}
	if got := s.Alarms[2]; got.ExtendedStatistic != "p95" || got.Threshold != 3e6 {
		t.Errorf("latency alarm = %+v", got)
	}
}

// The steps of the scale-out on shed stay within Application Auto Scaling's 20 per policy, and a fleet that
// cannot grow, or a zero unit, still gets one valid open step.
func TestShedStepsBounds(t *testing.T) {
	if got := shedSteps(100, 500); len(got) != MaxStepAdjustments || got[19].Upper != nil || got[19].Adjustment != 20 || got[19].Lower != 1900 {
		t.Errorf("500 instances of room: %d steps, last %+v", len(got), got[len(got)-1])
	}
	for _, c := range []struct {
		unit float64
		room int
	}{{100, 0}, {0, 5}, {-1, 5}} {
		if got := shedSteps(c.unit, c.room); len(got) != 1 || got[0].Upper != nil || got[0].Lower != 0 || got[0].Adjustment != 1 {
			t.Errorf("unit %g, room %d: %+v", c.unit, c.room, got)
		}
	}
}
