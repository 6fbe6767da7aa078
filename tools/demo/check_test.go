package main

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/speech-infra/speech-infra/bench"
	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// saneSummary is a summary as a good run writes it.
func saneSummary() summary {
	return summary{
		QMax: 8, QMaxLowerBound: true, QMaxP95Ms: 84, SLOMs: 1000,
		TTotalS: 6.4, TimeScale: 50, DominantStage: "instance_in_service",
		ScaleOutRPS: 12.4, TargetValue: 6.5, ScaleInRPS: 5.6, ScaleInThreshold: 2.1, MinInstances: 1, MaxInstances: 3, TPlanS: 37,
		Verdict: "feasible", EnvelopeTraces: 4, Validated: true,
		SurgeFromRPS: 11.2, SurgeToRPS: 14, SurgeLowRPS: 1.9, SurgeSeconds: 67,
		InstancesBefore: 1, InstancesMax: 2, InstancesEnd: 1, ServingAfterS: 41, Served: true, ScaleIns: 1, Slices: 15, Sent: 1800, Shed: 0,
		DayHeld: true, DayTroughRPS: 5.7, DayPeakRPS: 38, DayInstanceHours: 53.54, DayOracleRatio: 0.86,
		SimHeld: true, SimScaleOuts: 1, SimScaleIns: 1, SimMaxInstances: 2,
		ScatterRuns: 400, ScatterLo: 40, ScatterMedian: 50, ScatterHi: 70, ScatterPeakMin: 2, ScatterPeakMax: 3, ReplayFirstOutS: 52,
		Artifacts: "/repo/.demo/artifacts/kokoro-82m-twin", Charts: []string{"qmax.svg", "ttotal.svg"},
		Cleanup: "endpoint destroyed, emulator stopped, nothing left running",
	}
}

// render is the part of a run's output the check reads, consistent with s as a run that found s prints it: the
// diurnal simulation's comparison lines (demo.simulate), the surge replay's per-slice table (tts-bench replay:
// measure/report_merge.go, ReplayReport.render), the surge simulation's comparison lines, the scaling activities
// (demo.showActivities) and the summary.
func render(s summary) string {
	var b bytes.Buffer
	b.WriteString("==> earlier output\n")
	comparison(&b, "diurnal", s.DayViolationMinutes, s.DayFlaps, s.DayInstanceHours)
	b.WriteString("\n==> surge: load grows by the surge ratio inside the plan's envelope, then falls\n")
	b.WriteString("$ bin/tts-bench replay --model kokoro-82m-twin --trace /repo/.demo/artifacts/kokoro-82m-twin/surge.csv --bucket 10s --run-id surge\n")
	replayTableOf(&b, s)
	comparison(&b, "surge", s.SimViolationMinutes, s.SimFlaps, 0.12)
	activitiesOf(&b, s)
	b.WriteString("\n")
	s.write(&b)
	return b.String()
}

// replayTableOf prints the surge replay's table for s: s.Slices rows of 10 s, the first s.EarlyViolatingSlices
// and the last s.ViolatingSlices over the SLO, s.Sent requests sent and s.Shed shed (in the first violating row).
func replayTableOf(b *bytes.Buffer, s summary) {
	n := s.Slices
	viol := make([]bool, n)
	for i := 0; i < s.EarlyViolatingSlices && i < n; i++ {
		viol[i] = true
	}
	for i := n - s.ViolatingSlices; i < n; i++ {
		viol[i] = true
	}
	fmt.Fprintf(b, "replay kokoro-82m-twin of 2026-06-01T10:41:07Z, run surge, trace sha256:5c1f0e2a\n")
	fmt.Fprintf(b, "open loop; shards 0 of 1; 1 file(s); slices of 10s; SLO p95 TTFAB %s ms\n\n", capacity.FormatNumber(s.SLOMs))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "time\toffered rps\tsent\tdropped\tinstances\tdesired\tp95 TTFAB ms\tover SLO\tshed %\terrors\tSLO\t")
	shedLeft, violating := s.Shed, 0
	for i := range n {
		sent := s.Sent / n
		if i < s.Sent%n {
			sent++
		}
		shed, p95 := 0, s.SLOMs/4+float64(i)
		if viol[i] {
			p95 = 1.5 * s.SLOMs
		}
		if shedLeft > 0 && (viol[i] || !slices.Contains(viol, true)) {
			shed, shedLeft = min(shedLeft, sent), shedLeft-min(shedLeft, sent)
		}
		inst := s.InstancesBefore
		switch {
		case i == n-1:
			inst = s.InstancesEnd
		case s.Served && float64(i*10) >= 10+s.ServingAfterS:
			inst = s.InstancesMax
		}
		shedRate := 0.0
		if sent > 0 {
			shedRate = float64(shed) / float64(sent)
		}
		// A violating slice's p95 is over the SLO: more than a twentieth of its successful requests are.
		over := 0
		if p95 > s.SLOMs {
			over = (sent-shed)/10 + 1
		}
		verdict := "ok"
		if bench.SliceViolates(sent, over, shed) {
			verdict = "VIOLATED"
			violating++
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%s\t%d\t%s\t\n", clock(i*10), capacity.FormatNumber(float64(sent)/10), sent, 0, inst, inst,
			capacity.FormatNumber(p95), over, capacity.FormatNumber(math.Round(10000*shedRate)/100), 0, verdict)
	}
	tw.Flush()
	fmt.Fprintf(b, "\narrivals %d: sent %d, dropped 0 (0%%), ok %d, shed %d (0%%), errors 0 (0 timeouts)\n", s.Sent, s.Sent, s.Sent-s.Shed, s.Shed)
	fmt.Fprintf(b, "TTFAB p50 102 ms, p95 612 ms, p99 880 ms (exact, over every successful request)\nSLO-violation slices: %d of %d\n", violating, n)
}

func clock(s int) string { return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60) }

// comparison prints a simulation's comparison lines as demo.simulate does: the plan's, then the oracle's.
func comparison(b *bytes.Buffer, name string, viol, flaps int, hours float64) {
	fmt.Fprintf(b, "$ bin/tts-bench simulate --plan plan.json --trace %s --format json --output simulate-%s.svg > /repo/.demo/artifacts/kokoro-82m-twin/simulate-%s.json\n", name, name, name)
	fmt.Fprintf(b, "wrote the timeline chart to simulate-%s.svg\n", name)
	meets := "meets the SLO"
	if viol > 0 || flaps > 0 {
		meets = "VIOLATES the SLO"
	}
	fmt.Fprintf(b, "  %-40s %s: %d violation minute(s), %d flap(s), %.2f instance-hours, fleet %d to %d\n", "plan (s 1.25)", meets, viol, flaps, hours, 1, 3)
	fmt.Fprintf(b, "  %-40s %s: %d violation minute(s), %d flap(s), %.2f instance-hours, fleet %d to %d\n", "oracle", "meets the SLO", 0, 0, 0.8*hours, 1, 3)
}

// activitiesOf prints the scaling activities of s, newest first: one scale-out per instance up to
// s.InstancesMax, then s.ScaleIns scale-ins, the last to s.InstancesEnd.
func activitiesOf(b *bytes.Buffer, s summary) {
	var counts []int
	for c := s.InstancesBefore + 1; c <= s.InstancesMax; c++ {
		counts = append(counts, c)
	}
	for i := 1; i <= s.ScaleIns; i++ {
		counts = append(counts, max(s.InstancesMax-i, s.InstancesEnd))
	}
	fmt.Fprintln(b, "Scaling activities of endpoint/speech-kokoro-82m-twin/variant/AllTraffic (DescribeScalingActivities), newest first:")
	if len(counts) == 0 {
		fmt.Fprintln(b, "  none")
	}
	for i := len(counts) - 1; i >= 0; i-- {
		fmt.Fprintf(b, "  10:4%d:00  %-10s Setting desired instance count to %d.\n    cause: monitor alarm a in state ALARM triggered policy p\n", i, "Successful", counts[i])
	}
}

// The summary a good run prints passes the check, and reads as a newcomer would want it.
func TestCheckAcceptsASaneSummary(t *testing.T) {
	out := render(saneSummary())
	if errs := checkSummary(strings.NewReader(out)); len(errs) > 0 {
		t.Fatalf("sane summary refused: %v\n%s", errs, out)
	}
	for _, want := range []string{
		"Q_max       8 requests in flight per instance (p95 TTFAB 84 ms, SLO 1000 ms; a lower bound",
		"T_total     6.4 s from asking for one more instance until it served",
		"thresholds  scale out above 12.4 rps per instance (metric 6.5), scale in below 5.6 rps (metric 2.1); fleet 1 to 3 instances; T_plan 37 s",
		"verdict     feasible: 0 of 4 envelope traces failed in simulation (",
		"surge       held: 11.2 to 14 rps for 67 s, then 1.9 rps: the autoscaler went from 1 to 2 instances, the new instance served 41 s after the surge began, and back to 1 (1 scale-in(s), 0 flap(s)); 0 of 15 10-s slices violated after the first T_plan (0 within it); 1800 requests sent, 0 shed",
		"simulation  held: the same trace simulated with the plan: 0 violation minute(s), 0 flap(s), 1 scale-out(s), 1 scale-in(s), peak 2 instances",
		"scatter     agrees: the replay first scaled out at 52 s and peaked at 2 instances; 400 simulated runs with the alarm's datapoints scattered as measured scaled out first at 40 / 50 / 70 s (p2.5 / median / p97.5; 11 s either side counts) and peaked at 2 to 3 instances",
		"cleanup     endpoint destroyed, emulator stopped, nothing left running",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// Each way a run can go wrong makes the check fail, naming the line.
func TestCheckRefusesInsaneSummaries(t *testing.T) {
	for name, c := range map[string]struct {
		edit func(*summary)
		want string
	}{
		"no scale-out":            {func(s *summary) { s.InstancesMax = 1; s.Served, s.ServingAfterS = false, -1 }, `"surge"`},
		"infeasible":              {func(s *summary) { s.Verdict = "infeasible" }, `"verdict"`},
		"validate mismatch":       {func(s *summary) { s.Validated = false }, `"verdict"`},
		"zero T_total":            {func(s *summary) { s.TTotalS = 0 }, `"T_total"`},
		"thresholds swapped":      {func(s *summary) { s.ScaleInRPS = 13 }, `"thresholds"`},
		"metrics swapped":         {func(s *summary) { s.ScaleInThreshold = 7 }, `"thresholds"`},
		"fleet too large":         {func(s *summary) { s.MaxInstances = 9 }, `"thresholds"`},
		"envelope failed":         {func(s *summary) { s.EnvelopeFailed = 1 }, `"verdict"`},
		"no scale-in":             {func(s *summary) { s.ScaleIns, s.InstancesEnd = 0, 2 }, `"surge"`},
		"simulation no scale-out": {func(s *summary) { s.SimScaleOuts = 0 }, `"simulation"`},
		"p95 above SLO":           {func(s *summary) { s.QMaxP95Ms = 1200 }, `"Q_max"`},
		"Q_max zero":              {func(s *summary) { s.QMax = 0 }, `"Q_max"`},
		"one chart":               {func(s *summary) { s.Charts = []string{"qmax.svg"} }, `"artifacts"`},
		"left running":            {func(s *summary) { s.Cleanup = "the emulator still runs" }, `"cleanup"`},
		"nothing sent":            {func(s *summary) { s.Sent, s.Shed = 0, 0 }, `"surge"`},
		// A run whose fleet grew as its surge began, on load an earlier step left in the alarm's window.
		"grew before the surge": {func(s *summary) { s.ServingAfterS = -0.4 }, `"surge"`},
	} {
		t.Run(name, func(t *testing.T) {
			s := saneSummary()
			c.edit(&s)
			errs := checkSummary(strings.NewReader(render(s)))
			if len(errs) == 0 {
				t.Fatalf("accepted:\n%s", render(s))
			}
			if !strings.Contains(errs[0].Error(), c.want) {
				t.Errorf("first error %q does not name %s", errs[0], c.want)
			}
		})
	}
}

// A doctored summary: its words claim success that the numbers printed beside them contradict. Each claim is
// checked against its own numbers, not only against the verdict word.
func TestCheckRefusesClaimsTheNumbersContradict(t *testing.T) {
	for name, c := range map[string]struct{ from, to, want string }{
		"surge held over violating slices":       {"0 of 15 10-s slices violated after", "6 of 15 10-s slices violated after", "says held, but the numbers"},
		"surge held over a flap":                 {"1 scale-in(s), 0 flap(s))", "1 scale-in(s), 1 flap(s))", "says held, but the numbers"},
		"simulation held over violations":        {"held: the same trace simulated with the plan: 0 violation", "held: the same trace simulated with the plan: 32 violation", "says held, but the numbers"},
		"day held over violations":               {"held: the plan simulated on a day from 5.7 to 38 rps: 0 violation", "held: the plan simulated on a day from 5.7 to 38 rps: 188 violation", "says held, but the numbers"},
		"feasible over a failed envelope":        {"feasible: 0 of 4 envelope", "feasible: 2 of 4 envelope", `"verdict"`},
		"scatter agrees but the replay is late":  {"the replay first scaled out at 52 s", "the replay first scaled out at 95 s", `says agrees, but`},
		"scatter agrees but the peak is outside": {"and peaked at 2 instances;", "and peaked at 4 instances;", `says agrees, but`},
		"scatter agrees without a scale-out":     {"the replay first scaled out at 52 s", "the replay never scaled out", `says agrees, but`},
		"scatter disagrees inside the spread":    {"scatter     agrees:", "scatter     DISAGREES:", `says DISAGREES, but`},
	} {
		t.Run(name, func(t *testing.T) {
			log := render(saneSummary())
			if !strings.Contains(log, c.from) {
				t.Fatalf("the sane summary lacks %q:\n%s", c.from, log)
			}
			doctored := strings.Replace(log, c.from, c.to, 1)
			errs := checkSummary(strings.NewReader(doctored))
			joined := fmt.Sprint(errs)
			if len(errs) == 0 || !strings.Contains(joined, c.want) {
				t.Errorf("doctored log accepted or refused for another reason (%v):\n%s", errs, doctored)
			}
		})
	}
}

// An honest failure passes the check: the replay did not hold and its line says FAILED beside the numbers
// that show it; the simulation and the day likewise. The check refuses claims, not outcomes.
func TestCheckAcceptsAnHonestFailure(t *testing.T) {
	s := saneSummary()
	s.ViolatingSlices, s.Flaps = 3, 1
	s.SimHeld, s.SimViolationMinutes = false, 2
	s.DayHeld, s.DayViolationMinutes = false, 12
	log := render(s)
	for _, want := range []string{"surge       FAILED:", "simulation  FAILED:", "diurnal     FAILED:"} {
		if !strings.Contains(log, want) {
			t.Fatalf("the summary lacks %q:\n%s", want, log)
		}
	}
	if errs := checkSummary(strings.NewReader(log)); len(errs) > 0 {
		t.Errorf("an honest failure was refused: %v\n%s", errs, log)
	}
}

// A run that did not finish has no summary, or a cut one; a missing line is named.
func TestCheckRefusesMissingSummary(t *testing.T) {
	if errs := checkSummary(strings.NewReader("==> deploy\ndemo: interrupted\n")); len(errs) != 1 || !strings.Contains(errs[0].Error(), "no summary") {
		t.Errorf("no summary: %v", errs)
	}
	cut := strings.TrimSuffix(render(saneSummary()), SummaryEnd+"\n")
	if errs := checkSummary(strings.NewReader(cut)); len(errs) != 1 || !strings.Contains(errs[0].Error(), "no end line") {
		t.Errorf("cut summary: %v", errs)
	}
	var lines []string
	for _, l := range strings.Split(render(saneSummary()), "\n") {
		if !strings.HasPrefix(l, "T_total") {
			lines = append(lines, l)
		}
	}
	if errs := checkSummary(strings.NewReader(strings.Join(lines, "\n"))); len(errs) != 1 || !strings.Contains(errs[0].Error(), `"T_total": missing`) {
		t.Errorf("missing line: %v", errs)
	}
}

// -check on files: exit 0 with a sane summary, an error listing the problems otherwise, a usage error for a
// missing file.
func TestRunCheck(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "good.log"), filepath.Join(dir, "bad.log")
	s := saneSummary()
	os.WriteFile(good, []byte(render(s)), 0o644)
	s.InstancesMax = 1
	os.WriteFile(bad, []byte(render(s)), 0o644)
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"-check", good}, &out, &errw); err != nil || !strings.Contains(out.String(), "sane") {
		t.Errorf("good: %v %q", err, out.String())
	}
	if err := run(context.Background(), []string{"-check", bad}, &out, &errw); err == nil || !strings.Contains(err.Error(), "the decline must exercise scale-in") {
		t.Errorf("bad: %v", err)
	}
	err := run(context.Background(), []string{"-check", filepath.Join(dir, "none.log")}, &out, &errw)
	if exitcode.Code(err) != exitcode.CodeUsage {
		t.Errorf("missing file: %v (exit %d), want a usage error (exit %d)", err, exitcode.Code(err), exitcode.CodeUsage)
	}
}

// Bad flags are refused all at once, before anything is wiped or started; a directory that is not the demo's
// is never wiped.
func TestOptionsValidate(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, "precious.txt"), []byte("x"), 0o644)
	o := options{Dir: dir, Port: 80, TimeScale: 0, Bin: filepath.Join(dir, "nobin")}
	errs := o.Validate()
	joined := ""
	for _, e := range errs {
		joined += e.Error() + "\n"
	}
	for _, want := range []string{"is not a demo directory", "-port 80", "-time-scale 0", "no speech-infra there", "no tts-bench there", "no speech-container there"} {
		if !strings.Contains(joined, want) {
			t.Errorf("errors lack %q:\n%s", want, joined)
		}
	}
	for _, d := range []string{"", ".", "/", ".."} {
		if errs := (options{Dir: d, Port: 4699, TimeScale: 50, Bin: dir}).Validate(); len(errs) == 0 || !strings.Contains(errs[0].Error(), "-dir") {
			t.Errorf("-dir %q accepted: %v", d, errs)
		}
	}
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"-dir", dir, "-bin", filepath.Join(dir, "nobin")}, &out, &errw); err == nil {
		t.Fatal("run with bad options succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "precious.txt")); err != nil {
		t.Errorf("the refused directory was touched: %v", err)
	}
}

// A fleet that grew before the surge began did not answer it: the surge line says FAILED and why.
func TestSurgeLineOfAFleetThatGrewBeforeTheSurge(t *testing.T) {
	s := saneSummary()
	s.ServingAfterS = -2
	out := render(s)
	if !strings.Contains(out, "surge       FAILED:") || !strings.Contains(out, "the new instance served 2 s BEFORE the surge began") {
		t.Fatalf("surge line:\n%s", out)
	}
}

// An honest disagreement between the replay and the scattered simulation is a truthful summary: the check
// passes it, and the summary says DISAGREES.
func TestCheckAcceptsAnHonestScatterDisagreement(t *testing.T) {
	for name, edit := range map[string]func(*summary){
		"late replay":     func(s *summary) { s.ReplayFirstOutS = 95 },
		"no scatter runs": func(s *summary) { s.ScatterRuns = 0 },
	} {
		s := saneSummary()
		edit(&s)
		out := render(s)
		if !strings.Contains(out, "scatter     DISAGREES: ") {
			t.Errorf("%s: the scatter line does not say DISAGREES:\n%s", name, out)
		}
		if errs := checkSummary(strings.NewReader(out)); len(errs) > 0 {
			t.Errorf("%s: refused: %v", name, errs)
		}
	}
}

// demoLog is testdata/demo.log: the end of a make demo log, from the plan step to the summary, in the formats
// the demo (demo.go, summary.go) and tts-bench replay and simulate print, with the numbers of one run on AWS's
// 10-s periods (25 slices of 10 s, 2840 requests, from 1 to 3 instances and back to 2). It is built from
// those formats, not captured: the lines the check does not read (qmax, ttotal) are left out.
func demoLog(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "demo.log"))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inTable applies edit to the rows of the surge replay's table in log, and only to them.
func inTable(t *testing.T, log string, edit func(row string) string) string {
	t.Helper()
	head := "SLO p95 TTFAB 3000 ms\n\n"
	i := strings.Index(log, head)
	j := strings.Index(log, "\narrivals ")
	if i < 0 || j < i {
		t.Fatalf("the demo log has no replay table")
	}
	rows := strings.Split(log[i+len(head):j], "\n")
	for k := 1; k < len(rows); k++ { // rows[0] is the columns
		if rows[k] != "" {
			rows[k] = edit(rows[k])
		}
	}
	return log[:i+len(head)] + strings.Join(rows, "\n") + log[j:]
}

// replace replaces from by to once in log, failing when log lacks from (a doctoring that changed nothing would
// prove nothing).
func replace(t *testing.T, log, from, to string) string {
	t.Helper()
	if !strings.Contains(log, from) {
		t.Fatalf("the log lacks %q", from)
	}
	return strings.Replace(log, from, to, 1)
}

// The untouched demo log passes: every row's verdict follows from its numbers, and every summary line from the
// table, the activities and the simulations.
func TestCheckAcceptsTheDemoLog(t *testing.T) {
	if errs := checkSummary(strings.NewReader(demoLog(t))); len(errs) > 0 {
		t.Fatalf("the untouched demo log was refused:\n%v", errs)
	}
	var out, errw bytes.Buffer
	if err := run(context.Background(), []string{"-check", filepath.Join("testdata", "demo.log")}, &out, &errw); err != nil {
		t.Fatalf("-check testdata/demo.log: %v", err)
	}
}

// A doctored demo log is refused, naming the row or the line and the contradiction. Each case changes one thing
// in the log the previous test accepts, so each check is shown able to fail.
func TestCheckRefusesDoctoredDemoLogs(t *testing.T) {
	for name, c := range map[string]struct {
		doctor func(t *testing.T, log string) string
		// want are substrings of the errors, each in some error.
		want []string
	}{
		// Every slice's verdict changed from ok to VIOLATED, the summary's "held: ... 0 of 25 ... violated" left.
		"every slice flipped to VIOLATED": {
			func(t *testing.T, log string) string {
				return inTable(t, log, func(r string) string { return strings.TrimSuffix(r, "ok") + "VIOLATED" })
			},
			[]string{
				"replay table, row 0:00:00 (line 33): says VIOLATED, but its numbers meet the SLO (0 over the SLO 3000 ms + 0 dropped + 0 shed",
				"replay table, row 0:04:00 (line 57): says VIOLATED, but its numbers meet the SLO",
				`"SLO-violation slices: 0 of 25", but the table has 25 rows of which 25 say VIOLATED`,
				`summary line "surge": 0 violating slices after the first T_plan and 0 within it, but 25 rows of the replay's table say VIOLATED`,
			},
		},
		// The same, with the table's own count doctored too: the summary still contradicts the rows.
		"every slice flipped, the table's count too": {
			func(t *testing.T, log string) string {
				log = inTable(t, log, func(r string) string { return strings.TrimSuffix(r, "ok") + "VIOLATED" })
				return replace(t, log, "SLO-violation slices: 0 of 25", "SLO-violation slices: 25 of 25")
			},
			[]string{"row 0:01:30 (line 42): says VIOLATED, but its numbers meet the SLO", "but 25 rows of the replay's table say VIOLATED"},
		},
		"one slice's p95 over the SLO, still ok": {
			func(t *testing.T, log string) string {
				return replace(t, log, "  2208.6         0       0       0   ok", "  3208.6        12       0       0   ok")
			},
			[]string{"replay table, row 0:00:30 (line 36): says ok, but its numbers violate the SLO (12 over the SLO 3000 ms"},
		},
		// 8 of 151 over the SLO (5.3 %) with the p95 still within it: nearest rank allows at most 7.
		"a count over the SLO its p95 denies": {
			func(t *testing.T, log string) string {
				return replace(t, log, "  2208.6         0       0       0   ok", "  2208.6         8       0       0   VIOLATED")
			},
			[]string{"row 0:00:30 (line 36): p95 TTFAB 2208.6 ms is within the SLO 3000 ms, but 8 of at most 151 successful requests are counted over it"},
		},
		"a p95 over the SLO with nothing counted over it": {
			func(t *testing.T, log string) string {
				return replace(t, log, "  2208.6         0       0       0   ok", "  3208.6         0       0       0   ok")
			},
			[]string{"row 0:00:30 (line 36): p95 TTFAB 3208.6 ms is over the SLO 3000 ms, but none of its requests is counted over it"},
		},
		// 9 of 151 shed: 5.96 %, over the 5 % of a slice that may miss a p95 SLO.
		"one slice shedding over 5 %, still ok": {
			func(t *testing.T, log string) string {
				return replace(t, log, "  2208.6         0       0       0   ok", "  2208.6         0    5.96       0   ok")
			},
			[]string{"row 0:00:30 (line 36): says ok, but its numbers violate the SLO", "0 dropped + 9 shed (5.96 % of 151 sent) + 0 errors of 151 arrivals against at most 5 %",
				"totals of 2840 arrivals, 2840 sent, 0 dropped, 2840 ok, 0 shed, 0 errors, but its rows add up to 2840 sent, 0 dropped, 9 to 9 shed"},
		},
		"one slice violating, counted nowhere": {
			func(t *testing.T, log string) string {
				log = replace(t, log, "  1468.3         0       0       0   ok", "  3468.3        20       0       0   VIOLATED")
				return replace(t, log, "SLO-violation slices: 0 of 25", "SLO-violation slices: 1 of 25")
			},
			[]string{`summary line "surge": 0 violating slices after the first T_plan and 0 within it, but 1 rows of the replay's table say VIOLATED`},
		},
		"the summary's slice count": {
			func(t *testing.T, log string) string {
				return replace(t, log, "0 of 25 10-s slices", "0 of 24 10-s slices")
			},
			[]string{`summary line "surge": 24 10-s slices, but the replay's table has 25 rows`},
		},
		"a row removed from the table": {
			func(t *testing.T, log string) string {
				return replace(t, log, "  0:01:40         20.6   206        0          2        3        1152.6         0       0       0   ok\n", "")
			},
			[]string{"row 0:01:50 (line 43): the 11. slice starts at 1m50s, want 1m40s", "25 10-s slices, but the replay's table has 24 rows",
				"2840 requests sent, but the replay's table's rows sent 2634"},
		},
		"the summary's requests sent": {
			func(t *testing.T, log string) string {
				return replace(t, log, "2840 requests sent", "2900 requests sent")
			},
			[]string{"2900 requests sent, but the replay's table's rows sent 2840"},
		},
		"the summary's shed": {
			func(t *testing.T, log string) string {
				return replace(t, log, "0 shed by the queue shield", "3 shed by the queue shield")
			},
			[]string{"3 shed, but the replay's table totals 0 shed"},
		},
		"a row's offered rate": {
			func(t *testing.T, log string) string {
				return replace(t, log, "  0:00:20         15.2   152 ", "  0:00:20         25.2   152 ")
			},
			[]string{"row 0:00:20 (line 35): offered 25.2 rps over 10s is not its 152 sent + 0 dropped arrivals"},
		},
		"no replay table": {
			func(t *testing.T, log string) string {
				return replace(t, log, "replay kokoro-82m-twin of 2026-06-01T10:41:07Z", "replay of kokoro-82m-twin 2026-06-01T10:41:07Z")
			},
			[]string{`summary line "surge": the log holds no per-slice table of the surge replay`},
		},
		"the surge held over a fleet that did not grow": {
			func(t *testing.T, log string) string {
				return replace(t, log, "went from 1 to 3 instances", "went from 3 to 3 instances")
			},
			[]string{`summary line "surge": says held, but the numbers beside it say FAILED`},
		},
		"the surge FAILED over numbers that held": {
			func(t *testing.T, log string) string {
				return replace(t, log, "surge       held:", "surge       FAILED:")
			},
			[]string{`summary line "surge": says FAILED, but the numbers beside it say held`},
		},
		"the scale-out to 3 missing from the activities": {
			func(t *testing.T, log string) string {
				return replace(t, log, "Setting desired instance count to 3.", "Setting desired instance count to 2.")
			},
			[]string{"the autoscaler went from 1 to 3 instances, but no scaling activity set the desired count to 3 or more (the highest: 2)"},
		},
		"the scale-in missing from the activities": {
			func(t *testing.T, log string) string {
				return replace(t, log, "  10:45:01  Successful Setting desired instance count to 2.", "  10:45:01  Failed     Setting desired instance count to 2.")
			},
			[]string{"1 scale-in(s), but the scaling activities lowered the desired count 0 time(s)", "back to 2 instances after 3, but no scaling activity after the scale-out"},
		},
		"no activities": {
			func(t *testing.T, log string) string {
				return replace(t, log, "Scaling activities of endpoint/", "Activities of endpoint/")
			},
			[]string{"the log holds no scaling activities"},
		},
		"the simulation's plan line": {
			func(t *testing.T, log string) string {
				return replace(t, log, "  plan (s 1.25)                            meets the SLO: 0 violation minute(s), 0 flap(s), 400 of 400 scattered runs held, 0.17",
					"  plan (s 1.25)                            VIOLATES the SLO: 3 violation minute(s), 0 flap(s), 400 of 400 scattered runs held, 0.17")
			},
			[]string{`summary line "simulation": 0 violation minute(s), 0 flap(s), but the simulation's plan line (line 95, plan (s 1.25)) says 3, 0`},
		},
		// The plan's verdict counts its scattered runs: 300 of 400 is under the 95% that must hold.
		"the simulation held over too few scattered runs": {
			func(t *testing.T, log string) string {
				log = replace(t, log, "peak 3 instances; 400 of 400 scattered runs held", "peak 3 instances; 300 of 400 scattered runs held")
				return replace(t, log, "0 flap(s), 400 of 400 scattered runs held, 0.17", "0 flap(s), 300 of 400 scattered runs held, 0.17")
			},
			[]string{`summary line "simulation": says held, but the numbers beside it say FAILED (0 violation minutes, 0 flaps, 300 of 400 scattered runs held)`,
				`simulation surge, line 95 (plan (s 1.25)): says meets the SLO, but 0 violation minute(s), 0 flap(s) and 300 of 400 scattered runs held say otherwise`},
		},
		// The summary's scattered runs must be the plan line's.
		"the summary's scattered runs unlike the plan line's": {
			func(t *testing.T, log string) string {
				return replace(t, log, "peak 3 instances; 400 of 400 scattered runs held", "peak 3 instances; 399 of 400 scattered runs held")
			},
			[]string{`summary line "simulation": 399 of 400 scattered runs held, but the simulation's plan line (line 95, plan (s 1.25)) says 400 of 400`},
		},
		"a comparison line's verdict": {
			func(t *testing.T, log string) string {
				return replace(t, log, "fixed fleet of 3                         meets the SLO: 0", "fixed fleet of 3                         VIOLATES the SLO: 0")
			},
			[]string{"simulation diurnal, line 14 (fixed fleet of 3): says VIOLATES the SLO, but 0 violation minute(s) and 0 flap(s) say otherwise"},
		},
		"the day's instance-hours": {
			func(t *testing.T, log string) string {
				return replace(t, log, "0 flap(s), 61.05 instance-hours;", "0 flap(s), 51.05 instance-hours;")
			},
			[]string{`summary line "diurnal": 0 violation minute(s), 0 flap(s), 51.05 instance-hours, but the simulation's plan line (line 10, plan (s 1.25)) says 0, 0, 61.05 instance-hours`},
		},
		"the day FAILED over numbers that held": {
			func(t *testing.T, log string) string {
				return replace(t, log, "diurnal     held:", "diurnal     FAILED:")
			},
			[]string{`summary line "diurnal": says FAILED, but the numbers beside it say held`},
		},
		"the simulation FAILED over numbers that held": {
			func(t *testing.T, log string) string {
				return replace(t, log, "simulation  held:", "simulation  FAILED:")
			},
			[]string{`summary line "simulation": says FAILED, but the numbers beside it say held`},
		},
		"the scatter's replay peak": {
			func(t *testing.T, log string) string {
				return replace(t, log, "33 s and peaked at 3 instances;", "33 s and peaked at 4 instances;")
			},
			[]string{`summary line "scatter": the replay peaked at 4 instances, but the surge line says the autoscaler went to 3`},
		},
		"the table's SLO": {
			func(t *testing.T, log string) string {
				return replace(t, log, "SLO p95 TTFAB 3000 ms\n", "SLO p95 TTFAB 2000 ms\n")
			},
			[]string{"SLO p95 TTFAB 2000 ms, but the summary's Q_max line judges against 3000 ms", "row 0:00:30 (line 36): p95 TTFAB 2208.6 ms is over the SLO 2000 ms, but none of its requests is counted over it"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			doctored := c.doctor(t, demoLog(t))
			errs := checkSummary(strings.NewReader(doctored))
			if len(errs) == 0 {
				t.Fatal("the doctored log was accepted")
			}
			joined := ""
			for _, e := range errs {
				joined += e.Error() + "\n"
			}
			for _, w := range c.want {
				if !strings.Contains(joined, w) {
					t.Errorf("no error says %q; the errors:\n%s", w, joined)
				}
			}
		})
	}
}

// bin/demo -check exits 1 on a doctored log (every slice flipped), naming the rows, and 0 on the untouched one.
func TestRunCheckRefusesAFlippedTable(t *testing.T) {
	path := filepath.Join(t.TempDir(), "demo.log")
	flipped := inTable(t, demoLog(t), func(r string) string { return strings.TrimSuffix(r, "ok") + "VIOLATED" })
	if err := os.WriteFile(path, []byte(flipped), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errw bytes.Buffer
	err := run(context.Background(), []string{"-check", path}, &out, &errw)
	if exitcode.Code(err) != exitcode.CodeCheckFailed {
		t.Fatalf("-check of a flipped table: %v (exit %d), want exit 1", err, exitcode.Code(err))
	}
	if !strings.Contains(err.Error(), "replay table, row 0:02:30 (line 48): says VIOLATED, but its numbers meet the SLO") {
		t.Errorf("the refusal does not name the row:\n%v", err)
	}
}

// An honest run in which slices violated passes: a violating row whose numbers say so, counted within the first
// T_plan (0:00:30, before 65 s) or after it (0:01:30), with the surge line saying FAILED for the one after.
func TestCheckAcceptsHonestViolatingSlices(t *testing.T) {
	log := demoLog(t)
	log = replace(t, log, "  2208.6         0       0       0   ok", "  3208.6        12       0       0   VIOLATED")
	log = replace(t, log, "SLO-violation slices: 0 of 25", "SLO-violation slices: 1 of 25")
	log = replace(t, log, "0 of 25 10-s slices violated after the first T_plan (0 within it)", "0 of 25 10-s slices violated after the first T_plan (1 within it)")
	if errs := checkSummary(strings.NewReader(log)); len(errs) > 0 {
		t.Fatalf("a slice violating within the first T_plan, counted there, was refused: %v", errs)
	}
	log = replace(t, log, "  1468.3         0       0       0   ok", "  3468.3        20       0       0   VIOLATED")
	log = replace(t, log, "SLO-violation slices: 1 of 25", "SLO-violation slices: 2 of 25")
	if errs := checkSummary(strings.NewReader(log)); len(errs) == 0 {
		t.Fatal("a violating slice after the first T_plan under a held surge line was accepted")
	}
	log = replace(t, log, "surge       held:", "surge       FAILED:")
	log = replace(t, log, "0 of 25 10-s slices violated after the first T_plan (1 within it)", "1 of 25 10-s slices violated after the first T_plan (1 within it)")
	if errs := checkSummary(strings.NewReader(log)); len(errs) > 0 {
		t.Fatalf("an honest FAILED was refused: %v", errs)
	}
}

// What the printed rounding leaves open passes either way: p95 prints to 0.1 ms, so a printed 3000 at an SLO
// of 3000 ms may have been 3000.04 (more than a twentieth of the requests over it) or 2999.96 (none over it),
// and the verdict follows the count; a first scale-out printed 81 s may have been 81.4 s, outside a spread
// whose p97.5 printed 70 s may have been 70.2 s (with 11 s either side).
func TestCheckLeavesOpenWhatTheRoundingLeavesOpen(t *testing.T) {
	base := demoLog(t)
	for _, verdict := range []string{"ok", "VIOLATED"} {
		over := map[string]string{"ok": "0", "VIOLATED": "12"}[verdict]
		log := replace(t, base, "  2208.6         0       0       0   ok", "  3000  "+over+"       0       0   "+verdict)
		if verdict == "VIOLATED" {
			log = replace(t, log, "SLO-violation slices: 0 of 25", "SLO-violation slices: 1 of 25")
			log = replace(t, log, "(0 within it)", "(1 within it)")
		}
		if errs := checkSummary(strings.NewReader(log)); len(errs) > 0 {
			t.Errorf("p95 3000 ms at the SLO, %s: refused: %v", verdict, errs)
		}
	}
	s := saneSummary()
	s.ReplayFirstOutS, s.ScatterHi = 81.4, 70.2
	if errs := checkSummary(strings.NewReader(render(s))); len(errs) > 0 || !strings.Contains(render(s), "scatter     DISAGREES: the replay first scaled out at 81 s") {
		t.Errorf("an honest DISAGREES at the edge of the rounding: %v", errs)
	}
	if errs := checkSummary(strings.NewReader(strings.Replace(render(s), "scatter     DISAGREES:", "scatter     agrees:", 1))); len(errs) > 0 {
		t.Errorf("agrees, which the printed numbers allow, was refused: %v", errs)
	}
}

// The table reader reads what tts-bench replay prints: the renderer's golden output
// (cmd/tts-bench/testdata/report.txt, pinned by its own test) reads as three rows whose verdicts follow from
// their numbers by bench.SliceViolates (0:01:00 by its count over the SLO and its shed, 0:02:00 by 2 dropped and 2
// over the SLO of 60 arrivals, its p95 within the SLO).
func TestTableReaderReadsTheRenderersGolden(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("..", "..", "cmd", "tts-bench", "testdata", "report.txt"))
	if err != nil {
		t.Fatal(err)
	}
	ev := evidence{sims: map[string][]comparisonRow{}}
	for i, l := range strings.Split(string(golden), "\n") {
		ev.read(i+1, l)
	}
	tb := ev.table
	if len(ev.problems) > 0 || tb == nil || len(tb.slices) != 3 || tb.bucket != time.Minute || tb.sloMs != 1000 || tb.totals == nil || tb.violating == nil {
		t.Fatalf("the golden table read as %+v (problems %v)", tb, ev.problems)
	}
	errs := checkReplayTable(tb, surgeClaim{slices: 3, after: 2, sent: 178, shed: 20, instancesMax: 2}, -1, 1000)
	for _, e := range errs {
		if strings.Contains(e.Error(), "row ") || strings.Contains(e.Error(), "totals") || strings.Contains(e.Error(), "SLO-violation slices") {
			t.Errorf("the golden table: %v", e)
		}
	}
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), "slices of 1m0s, but the summary counts 10-s slices") {
		t.Errorf("the golden table, against a summary of 10-s slices: %v", errs)
	}
}
