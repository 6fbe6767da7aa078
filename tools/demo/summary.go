package main

import (
	"fmt"
	"io"
	"strings"
)

// SummaryBegin and SummaryEnd frame the summary in the demo's output; tools/demo/check reads what is between.
const (
	SummaryBegin = "==== speech-infra demo: summary ===="
	SummaryEnd   = "==== end of summary ===="
)

// summary is what the demo found, in the words of its last lines.
type summary struct {
	// QMax is the measured Q_max; QMaxLowerBound is true when no step failed.
	QMax           int
	QMaxLowerBound bool
	// QMaxP95Ms is the p95 TTFAB at Q_max, SLOMs the bound it was judged against.
	QMaxP95Ms, SLOMs float64
	// TTotalS is the measured T_total on the emulator, TimeScale the profile's compression.
	TTotalS, TimeScale float64
	// DominantStage is the longest stage of the T_total timeline.
	DominantStage string
	// ScaleOutRPS and ScaleInRPS are the plan's rates per instance, TargetValue and ScaleInThreshold the
	// metric values the alarms deploy; MinInstances and MaxInstances its fleet, TPlanS its T_plan.
	ScaleOutRPS, ScaleInRPS       float64
	TargetValue, ScaleInThreshold float64
	MinInstances, MaxInstances    int
	TPlanS                        float64
	// Verdict is the plan's verdict, EnvelopeTraces how many traces its envelope simulated and EnvelopeFailed
	// how many of them did not hold; Validated whether tts-bench validate passed after the second deploy.
	Verdict                        string
	EnvelopeTraces, EnvelopeFailed int
	Validated                      bool
	// Replanned holds the flags of the plan search's cheapest passing configuration when the plan at the
	// defaults was infeasible and the demo planned again with them ("" when the defaults passed).
	Replanned string
	// Surge: the trace's rates, the instance counts before, at most and at the end, when the second instance
	// served (seconds after the surge began; negative when it never did), scale-ins and flaps seen in the
	// instance samples, the 10-s slices (all, violating after the first T_plan, violating within it), and the
	// requests sent and shed.
	SurgeFromRPS, SurgeToRPS, SurgeLowRPS float64
	SurgeSeconds                          float64
	InstancesBefore, InstancesMax         int
	InstancesEnd                          int
	ServingAfterS                         float64
	// Served is whether a new instance served during the replay (ServingAfterS is then its time).
	Served                  bool
	ScaleIns, Flaps         int
	Slices, ViolatingSlices int
	EarlyViolatingSlices    int
	Sent, Shed              int
	// Day*: the plan on a diurnal day from its trough to its peak (tts-bench simulate), and oracle ÷ plan
	// instance-hours there.
	DayHeld                       bool
	DayViolationMinutes, DayFlaps int
	DayInstanceHours              float64
	DayOracleRatio                float64
	DayTroughRPS, DayPeakRPS      float64
	// Sim*: the same trace through tts-bench simulate.
	SimHeld bool
	// SimScatterHeld of SimScatterRuns scattered runs of the simulation held (0 of 0: none were run); the
	// simulation holds when its own run and at least capacity.ScatterHoldShare of them hold.
	SimScatterHeld, SimScatterRuns                 int
	SimViolationMinutes, SimFlaps, SimMaxInstances int
	SimScaleOuts, SimScaleIns                      int
	// Scatter*: the same trace simulated ScatterRuns times with the alarm's datapoints scattered as measured
	// (tts-bench simulate --scatter-runs): the first scale-out's p2.5, median and p97.5 (seconds from the
	// trace's start; ScatterRuns 0 when the simulation gave none) and the range of peak fleets; ReplayFirstOutS
	// is when the replay's desired count first rose (-1 when it never did).
	ScatterRuns                         int
	ScatterLo, ScatterMedian, ScatterHi float64
	ScatterPeakMin, ScatterPeakMax      int
	ReplayFirstOutS                     float64
	// Artifacts is the directory of the artifacts, Charts the chart files written.
	Artifacts string
	Charts    []string
	// Cleanup says what is left running ("nothing left running" when all went well).
	Cleanup string
}

// write renders the summary: one "key  value" line each, between SummaryBegin and SummaryEnd.
func (s summary) write(w io.Writer) {
	bound := ""
	if s.QMaxLowerBound {
		bound = "; a lower bound: no step of the short ladder failed"
	}
	validated := "tts-bench validate: deployed scaling matches the plan"
	if !s.Validated {
		validated = "tts-bench validate: MISMATCH"
	}
	if s.Replanned != "" {
		validated += "; planned with the search's cheapest passing configuration " + s.Replanned + ", the defaults being infeasible"
	}
	serving := "the new instance did not serve before the surge ended"
	switch {
	case s.Served && s.ServingAfterS > 0:
		serving = fmt.Sprintf("the new instance served %.0f s after the surge began", s.ServingAfterS)
	case s.Served:
		// Served, but before the surge: earlier load was still in the scale-out alarm's window.
		serving = fmt.Sprintf("the new instance served %.0f s BEFORE the surge began (earlier load still in the alarm's window)", -s.ServingAfterS)
	}
	lines := [][2]string{
		{"Q_max", fmt.Sprintf("%d requests in flight per instance (p95 TTFAB %.0f ms, SLO %.0f ms%s)", s.QMax, s.QMaxP95Ms, s.SLOMs, bound)},
		{"T_total", fmt.Sprintf("%.1f s from asking for one more instance until it served (longest stage %s; kokoro-g5 profile %gx faster than AWS)", s.TTotalS, s.DominantStage, s.TimeScale)},
		{"thresholds", fmt.Sprintf("scale out above %s rps per instance (metric %s), scale in below %s rps (metric %s); fleet %d to %d instances; T_plan %.0f s",
			num(s.ScaleOutRPS), num(s.TargetValue), num(s.ScaleInRPS), num(s.ScaleInThreshold), s.MinInstances, s.MaxInstances, s.TPlanS)},
		{"verdict", fmt.Sprintf("%s: %d of %d envelope traces failed in simulation (the second deploy passed the gate and created the scaling policy; %s)", s.Verdict, s.EnvelopeFailed, s.EnvelopeTraces, validated)},
		{"diurnal", fmt.Sprintf("%s: the plan simulated on a day from %s to %s rps: %d violation minute(s), %d flap(s), %s instance-hours; oracle ÷ plan instance-hours %s",
			heldWord(s.DayHeld), num(s.DayTroughRPS), num(s.DayPeakRPS), s.DayViolationMinutes, s.DayFlaps, num(s.DayInstanceHours), num(s.DayOracleRatio))},
		{"surge", fmt.Sprintf("%s: %s to %s rps for %.0f s, then %s rps: the autoscaler went from %d to %d instances, %s, and back to %d (%d scale-in(s), %d flap(s)); %d of %d 10-s slices violated after the first T_plan (%d within it); %d requests sent, %d shed by the queue shield",
			replayVerdict(s), num(s.SurgeFromRPS), num(s.SurgeToRPS), s.SurgeSeconds, num(s.SurgeLowRPS), s.InstancesBefore, s.InstancesMax, serving, s.InstancesEnd, s.ScaleIns, s.Flaps,
			s.ViolatingSlices, s.Slices, s.EarlyViolatingSlices, s.Sent, s.Shed)},
		{"simulation", fmt.Sprintf("%s: the same trace simulated with the plan: %d violation minute(s), %d flap(s), %d scale-out(s), %d scale-in(s), peak %d instances; %d of %d scattered runs held",
			heldWord(s.SimHeld), s.SimViolationMinutes, s.SimFlaps, s.SimScaleOuts, s.SimScaleIns, s.SimMaxInstances, s.SimScatterHeld, s.SimScatterRuns)},
		{"scatter", scatterLine(s)},
		{"artifacts", fmt.Sprintf("%s (charts: %s)", s.Artifacts, strings.Join(s.Charts, ", "))},
		{"cleanup", s.Cleanup},
	}
	fmt.Fprintln(w, SummaryBegin)
	for _, l := range lines {
		fmt.Fprintf(w, "%-11s %s\n", l[0], l[1])
	}
	fmt.Fprintln(w, SummaryEnd)
}

// ScatterSlackS is the slack on either side of the scattered simulation's p2.5 to p97.5 within which the
// replay's first scale-out agrees with it: one 10-s evaluation period and the replay's 1-s instance poll.
const ScatterSlackS = 11

// scatterAgrees says whether the replay's first scale-out lies within the scattered simulation's spread (with
// ScatterSlackS either side) and its peak fleet within the simulated peaks.
func scatterAgrees(s summary) bool {
	return s.ScatterRuns > 0 && s.ReplayFirstOutS >= 0 && s.ReplayFirstOutS >= s.ScatterLo-ScatterSlackS && s.ReplayFirstOutS <= s.ScatterHi+ScatterSlackS &&
		s.InstancesMax >= s.ScatterPeakMin && s.InstancesMax <= s.ScatterPeakMax
}

func scatterLine(s summary) string {
	if s.ScatterRuns == 0 {
		return "DISAGREES: the simulation gave no scattered runs to compare the replay with"
	}
	word := "DISAGREES"
	if scatterAgrees(s) {
		word = "agrees"
	}
	replay := "never scaled out"
	if s.ReplayFirstOutS >= 0 {
		replay = fmt.Sprintf("first scaled out at %.0f s", s.ReplayFirstOutS)
	}
	return fmt.Sprintf("%s: the replay %s and peaked at %d instances; %d simulated runs with the alarm's datapoints scattered as measured scaled out first at %.0f / %.0f / %.0f s (p2.5 / median / p97.5; %d s either side counts) and peaked at %d to %d instances",
		word, replay, s.InstancesMax, s.ScatterRuns, s.ScatterLo, s.ScatterMedian, s.ScatterHi, ScatterSlackS, s.ScatterPeakMin, s.ScatterPeakMax)
}

// replayVerdict is the replay's own verdict: held when no 10-s slice violated after the first T_plan, nothing
// flapped, and the fleet grew in answer to the surge (its new instance served after the surge began).
func replayVerdict(s summary) string {
	return heldWord(s.ViolatingSlices == 0 && s.Flaps == 0 && s.InstancesMax > s.InstancesBefore && s.Served && s.ServingAfterS > 0)
}

func heldWord(held bool) string {
	if held {
		return "held"
	}
	return "FAILED"
}

// num prints a number without trailing zeros, at most two decimals.
func num(v float64) string {
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	if s == "" || s == "-0" {
		return "0"
	}
	return s
}
