package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func render(s summary) string {
	var b bytes.Buffer
	b.WriteString("==> earlier output\n")
	s.write(&b)
	return b.String()
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

// A doctored log: the summary's words claim success that the numbers printed beside them contradict (the
// review found "verdict feasible" above a replay in which 6 of 8 slices violated). Each claim is checked
// against its own numbers, not only against the verdict word.
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
