package main

import (
	"fmt"
	"io"
	"strings"
)

// SummaryBegin and SummaryEnd frame the summary in the demo's output; scripts/demo/check reads what is between.
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
	// CScaleMax and CScaleMin are the plan's thresholds; MinInstances and MaxInstances its fleet.
	CScaleMax, CScaleMin       float64
	MinInstances, MaxInstances int
	// Verdict is the plan's verdict, Validated whether tts-bench validate passed after the second deploy.
	Verdict   string
	Validated bool
	// Surge: the trace's rates, the instance counts before and at most, when the second instance served
	// (seconds after the surge began; negative when it never did), and the requests sent and shed.
	SurgeFromRPS, SurgeToRPS float64
	SurgeSeconds             float64
	InstancesBefore          int
	InstancesMax             int
	ServingAfterS            float64
	Sent, Shed               int
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
	serving := "the new instance did not serve before the surge ended"
	if s.ServingAfterS >= 0 {
		serving = fmt.Sprintf("the new instance served %.0f s after the surge began", s.ServingAfterS)
	}
	lines := [][2]string{
		{"Q_max", fmt.Sprintf("%d requests in flight per instance (p95 TTFAB %.0f ms, SLO %.0f ms%s)", s.QMax, s.QMaxP95Ms, s.SLOMs, bound)},
		{"T_total", fmt.Sprintf("%.1f s from asking for one more instance until it served (longest stage %s; kokoro-g5 profile %gx faster than AWS)", s.TTotalS, s.DominantStage, s.TimeScale)},
		{"thresholds", fmt.Sprintf("scale out above %s, scale in below %s requests in flight per instance; fleet %d to %d instances", num(s.CScaleMax), num(s.CScaleMin), s.MinInstances, s.MaxInstances)},
		{"verdict", fmt.Sprintf("%s (the second deploy passed the gate and created the scaling policy; %s)", s.Verdict, validated)},
		{"surge", fmt.Sprintf("%s to %s rps for %.0f s: the autoscaler went from %d to %d instances, %s; %d requests sent, %d shed by the queue shield", num(s.SurgeFromRPS), num(s.SurgeToRPS), s.SurgeSeconds, s.InstancesBefore, s.InstancesMax, serving, s.Sent, s.Shed)},
		{"artifacts", fmt.Sprintf("%s (charts: %s)", s.Artifacts, strings.Join(s.Charts, ", "))},
		{"cleanup", s.Cleanup},
	}
	fmt.Fprintln(w, SummaryBegin)
	for _, l := range lines {
		fmt.Fprintf(w, "%-11s %s\n", l[0], l[1])
	}
	fmt.Fprintln(w, SummaryEnd)
}

// num prints a number without trailing zeros, at most two decimals.
func num(v float64) string {
	s := strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", v), "0"), ".")
	if s == "" || s == "-0" {
		return "0"
	}
	return s
}
