package capacity

import (
	"strings"
	"testing"
	"time"
)

// measurement_validity fails (not warns) when the ttotal probe never exceeded the SLO before
// in_service, and warns when the artifact does not record its probe; a probe past the SLO passes.
func TestMeasurementValidityProbe(t *testing.T) {
	m := kokoro(t)
	for _, tc := range []struct {
		name   string
		edit   func(*TTotal)
		status Status
		want   string
	}{
		{"probe past the SLO", func(*TTotal) {}, StatusPass, "are live"},
		{"probe never past the SLO", func(tt *TTotal) {
			tt.Probe.PeakP95BeforeInServiceMs, tt.Probe.ExceededSLOBeforeInService = float64(m.SLO.TTFABMs), false
		}, StatusFail, "never exceeded the SLO before in_service"},
		{"probe not recorded", func(tt *TTotal) { tt.Probe = nil }, StatusWarn, "does not record its probe load"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q, tt := testQMax(m), testTTotal(m)
			tc.edit(tt)
			if errs := tt.Verify(); len(errs) > 0 {
				t.Fatalf("the edited artifact does not verify: %v", errs)
			}
			f := measurementValidity(m, testMeasurement(q, tt))
			if f.Status != tc.status || !strings.Contains(f.Detail, tc.want) {
				t.Errorf("measurement_validity %s: %s; want %s mentioning %q", f.Status, f.Detail, tc.status, tc.want)
			}
		})
	}
}

// The probe and polling records verify: the exceeded flag agrees with the peak, the threshold stays within
// the SLO, a new instance is not one seen before, a first_served stage names its instance.
func TestTTotalProbeVerify(t *testing.T) {
	m := kokoro(t)
	neg := -1.0
	for _, tc := range []struct {
		name string
		edit func(*TTotal)
		want string
	}{
		{"flag disagrees", func(tt *TTotal) { tt.Probe.ExceededSLOBeforeInService = false }, "exceeded_slo_before_in_service"},
		{"threshold above the SLO", func(tt *TTotal) { tt.Probe.RecoveryThresholdMs = 2 * float64(m.SLO.TTFABMs) }, "above the SLO"},
		{"speed-up", func(tt *TTotal) { tt.Probe.Slowdown = 0.5 }, "probe.slowdown"},
		{"old instance as new", func(tt *TTotal) { tt.Probe.NewInstance = "a" }, "served before the scale-out"},
		{"negative uncertainty", func(tt *TTotal) { tt.TTotalUncertaintyS = &neg }, "t_total_uncertainty_s"},
		{"unnamed new instance", func(tt *TTotal) {
			last := tt.Timeline[len(tt.Timeline)-1]
			tt.Timeline = append(tt.Timeline, Stage{StageFirstServedByNewInstance, last.At.Add(time.Second), SourceClient, nil})
			if err := tt.Reconcile(tt.ClockStart); err != nil {
				t.Fatal(err)
			}
		}, "probe.new_instance: is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tt := testTTotal(m)
			tc.edit(tt)
			errs := tt.Verify()
			if len(errs) == 0 || !strings.Contains(joinErrors("verify", errs).Error(), tc.want) {
				t.Errorf("Verify: %v, want an error mentioning %q", errs, tc.want)
			}
		})
	}
}

// first_served_by_new_instance is ordered against in_service by time, whichever came first, and never clamps it.
func TestFirstServedOrderedByTime(t *testing.T) {
	t0 := time.Date(2025, 1, 2, 6, 0, 0, 0, time.UTC)
	for _, servedFirst := range []bool{true, false} {
		served, inService := t0.Add(10*time.Second), t0.Add(11*time.Second)
		if !servedFirst {
			served, inService = inService, served
		}
		tl := AssembleTimeline([]Event{
			{StageDesiredSet, t0, SourceClient}, {StageReady, t0.Add(5 * time.Second), SourceContainer},
			{StageTrafficRecovered, t0.Add(12 * time.Second), SourceClient},
			{StageFirstServedByNewInstance, served, SourceClient}, {StageInService, inService, SourceClient},
		})
		var names []string
		for _, s := range tl {
			names = append(names, s.Stage)
			if len(s.Flags) > 0 {
				t.Errorf("%s flagged %v", s.Stage, s.Flags)
			}
		}
		want := "desired_set ready first_served_by_new_instance in_service traffic_recovered"
		if !servedFirst {
			want = "desired_set ready in_service first_served_by_new_instance traffic_recovered"
		}
		if got := strings.Join(names, " "); got != want {
			t.Errorf("served first %t: timeline %s, want %s", servedFirst, got, want)
		}
	}
}

// measurement_validity warns when the rate staircase was not admitted within the shield the plan deploys (its
// shed is then not the deployed shield's), and passes when it was.
func TestMeasurementValidityRateShield(t *testing.T) {
	m := kokoro(t)
	for _, tc := range []struct {
		depth  int
		status Status
		want   string
	}{
		{m.QueueMaxDepth, StatusPass, ""},
		{0, StatusWarn, "the rate staircase ran without a queue shield, not the 50 the plan deploys"},
		{m.QueueMaxDepth + 1, StatusWarn, "the rate staircase ran within a queue shield of 51, not the 50 the plan deploys"},
	} {
		q, tt := testQMax(m), testTTotal(m)
		q.RateQueueMaxDepth = tc.depth
		f := measurementValidity(m, testMeasurement(q, tt))
		if f.Status != tc.status || !strings.Contains(f.Detail, tc.want) || (tc.status != StatusPass && !strings.Contains(f.Recommendation, "queue-max-depth=50")) {
			t.Errorf("rate_queue_max_depth %d: measurement_validity %s: %s (%s); want %s mentioning %q", tc.depth, f.Status, f.Detail, f.Recommendation, tc.status, tc.want)
		}
	}
}
