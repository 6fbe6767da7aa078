package capacity

import (
	"math"
	"strings"
	"testing"
	"time"
)

func TestAssembleTimelineOrdersClampsAndFlags(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }
	// Given observations out of order, with a container clock 0.3 s behind the client's and a duplicate
	// container_started (a restarted container).
	events := []Event{
		{StageTrafficRecovered, at(9), SourceClient},
		{StageReady, at(5), SourceContainer},
		{StageDesiredSet, at(1), SourceClient},
		{"ActivatingTraffic", at(6), SourceClient},
		{StageLoadApplied, at(0), SourceClient},
		{StageContainerStarted, at(3.5), SourceContainer},
		{StageInstanceLogging, at(3.8), SourceLog}, // the log event is stamped later than the line it carries
		{"Updating", at(1.2), SourceClient},
		{StageWeightsVerified, at(3.9), SourceContainer},
		{StageEngineLoaded, at(4.5), SourceContainer},
		{StageWarmupDone, at(4.9), SourceContainer},
		{StageInService, at(8), SourceClient},
		{StageFirstServedByNewInstance, at(8.5), SourceClient},
		{StageContainerStarted, at(4.0), SourceContainer},
	}
	tl := AssembleTimeline(events)
	var names []string
	for _, s := range tl {
		names = append(names, s.Stage)
	}
	want := "load_applied desired_set Updating instance_logging container_started weights_verified engine_loaded warmup_done ready ActivatingTraffic in_service first_served_by_new_instance traffic_recovered"
	if got := strings.Join(names, " "); got != want {
		t.Fatalf("order = %s\nwant    %s", got, want)
	}
	for i := 1; i < len(tl); i++ {
		if tl[i].At.Before(tl[i-1].At) {
			t.Errorf("%s at %s is before %s", tl[i].Stage, tl[i].At, tl[i-1].Stage)
		}
	}
	cs := tl[4]
	if !cs.At.Equal(at(3.8)) || len(cs.Flags) != 2 || !strings.HasPrefix(cs.Flags[0], FlagDuplicate+": seen 2 times") ||
		!strings.HasPrefix(cs.Flags[1], FlagClamped+": observed at 2026-03-01T12:00:03.5Z, 300ms before instance_logging") {
		t.Errorf("container_started = %+v: want clamped to instance_logging (3.8 s) and flagged duplicate and clamped", cs)
	}
	if len(tl[5].Flags) != 0 || !tl[5].At.Equal(at(3.9)) {
		t.Errorf("weights_verified = %+v: want unflagged at 3.9 s", tl[5])
	}
	if m := MissingStages(tl); len(m) != 0 {
		t.Errorf("missing = %v, want none", m)
	}

	// The artifact reconciles: durations from desired_set sum to T_total exactly, the split is at
	// container_started.
	tt := &TTotal{Timeline: tl}
	if err := tt.Reconcile(StageDesiredSet); err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, d := range tt.Durations {
		sum += d.DurationS
	}
	if len(tt.Durations) != len(tl)-2 || tt.Durations[0].From != StageDesiredSet {
		t.Errorf("durations = %+v: want one per pair from desired_set on", tt.Durations)
	}
	if math.Abs(sum-8) > 1e-9 || math.Abs(tt.TTotalS-8) > 1e-9 {
		t.Errorf("sum %g, t_total_s %g: want 8", sum, tt.TTotalS)
	}
	if math.Abs(tt.PlatformS-2.8) > 1e-9 || math.Abs(tt.ContainerS-5.2) > 1e-9 || math.Abs(tt.PlatformShare-0.35) > 1e-9 {
		t.Errorf("platform %g s (%g), container %g s: want 2.8 s (0.35) and 5.2 s", tt.PlatformS, tt.PlatformShare, tt.ContainerS)
	}
	if tt.DominantStage != "instance_logging" {
		t.Errorf("dominant = %s, want instance_logging (Updating → instance_logging, 2.6 s)", tt.DominantStage)
	}
}

func TestAssembleTimelinePartialAndReconcileRefusals(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tl := AssembleTimeline([]Event{
		{StageDesiredSet, t0.Add(time.Second), SourceClient}, {StageLoadApplied, t0, SourceClient},
		{"Updating", t0.Add(2 * time.Second), SourceClient}, {"Updating", t0.Add(3 * time.Second), SourceClient},
	})
	if len(tl) != 3 || len(tl[2].Flags) != 1 || !strings.HasPrefix(tl[2].Flags[0], "duplicate") || !tl[2].At.Equal(t0.Add(2*time.Second)) {
		t.Fatalf("timeline = %+v: want the first Updating kept, flagged duplicate", tl)
	}
	want := "instance_logging container_started weights_verified engine_loaded warmup_done ready in_service first_served_by_new_instance traffic_recovered"
	if got := strings.Join(MissingStages(tl), " "); got != want {
		t.Errorf("missing = %s, want %s", got, want)
	}
	tt := &TTotal{Timeline: tl}
	if err := tt.Reconcile(StageDesiredSet); err != nil {
		t.Fatal(err)
	}
	if tt.TTotalS != 1 || tt.PlatformS != 1 || tt.ContainerS != 0 || tt.PlatformShare != 1 {
		t.Errorf("partial: t_total %g, platform %g (%g), container %g: want all of 1 s the platform's", tt.TTotalS, tt.PlatformS, tt.PlatformShare, tt.ContainerS)
	}
	if err := (&TTotal{Timeline: tl}).Reconcile(StageInService); err == nil {
		t.Error("Reconcile with a clock start that is not on the timeline: no error")
	}
	if err := (&TTotal{Timeline: tl[:2]}).Reconcile(StageDesiredSet); err == nil {
		t.Error("Reconcile with the clock start as the last stage: no error")
	}
	back := []Stage{{Stage: "a", At: t0.Add(time.Second)}, {Stage: "b", At: t0}}
	if err := (&TTotal{Timeline: back}).Reconcile("a"); err == nil || !strings.Contains(err.Error(), "assemble the timeline first") {
		t.Errorf("Reconcile of a backwards timeline: %v", err)
	}
}

func TestTTotalVerifyChecksClockStartAndShares(t *testing.T) {
	m := kokoro(t)
	for _, c := range []struct {
		name   string
		mutate func(*TTotal)
		want   string
	}{
		{"no clock start", func(x *TTotal) { x.ClockStart = "" }, `clock_start: "" is not a timeline stage`},
		{"clock start last", func(x *TTotal) { x.ClockStart = "first_success" }, "is the last stage"},
		{"platform edited", func(x *TTotal) { x.PlatformS = 150 }, "platform_s: is 150 but the timeline gives 200.000"},
		{"share edited", func(x *TTotal) { x.ContainerShare = 0.5 }, "container_share: is 0.5 but the timeline gives 0.3333"},
		{"context stage before the clock", func(x *TTotal) {
			x.Timeline = append([]Stage{{Stage: StageLoadApplied, At: x.Timeline[0].At.Add(-30 * time.Second), Source: SourceClient}}, x.Timeline...)
		}, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			x := testTTotal(m)
			c.mutate(x)
			errs := x.Verify()
			if c.want == "" {
				if len(errs) > 0 {
					t.Fatalf("Verify = %v, want none", errs)
				}
				return
			}
			for _, e := range errs {
				if strings.Contains(e.Error(), c.want) {
					return
				}
			}
			t.Fatalf("Verify = %v, want one containing %q", errs, c.want)
		})
	}
}
