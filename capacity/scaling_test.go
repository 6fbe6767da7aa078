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
	// T_plan 340.8 s + 30 s cooldown → ceil(370.8/60) + 1 = 8 periods.
	if got := s.Alarms[3].EvaluationPeriods; got != 8 {
		t.Errorf("fleet-at-maximum evaluation periods = %d, want 8", got)
	}
	if got := s.Alarms[2]; got.ExtendedStatistic != "p95" || got.Threshold != 3e6 {
		t.Errorf("latency alarm = %+v", got)
	}
}
