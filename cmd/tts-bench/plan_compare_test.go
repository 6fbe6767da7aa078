package main

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/plantest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

// fixtureDigest is the container digest the plan fixtures were measured against (testdata/plans/README.md).
const fixtureDigest = "sha256:6ac968ec7e59a12ad96ac4fa210aa2319f20ab8b604192f8dbb3ca20d71ca4a1"

// compareReport writes, in a temporary directory, what tts-bench compare leaves for kokoro-82m: one artifact
// set per type (the valid fixture's measurement, rewritten for ml.g5.xlarge and ml.g6.xlarge) and the report
// naming ml.g6.xlarge, the cheaper, as the winner. edit may change the report before it is written.
func compareReport(t *testing.T, edit func(*capacity.TypeComparison)) (string, *capacity.TypeComparison) {
	t.Helper()
	dir := t.TempDir()
	c := &capacity.TypeComparison{
		SchemaVersion: capacity.SchemaVersion, Model: "kokoro-82m", Trace: "diurnal", PeakRPS: 80, TroughRPS: 10, Winner: "ml.g6.xlarge",
	}
	for _, r := range []struct {
		typ  string
		cost float64
	}{{"ml.g5.xlarge", 30.2}, {"ml.g6.xlarge", 19.5}} {
		art := filepath.Join(dir, "artifacts", "kokoro-82m", r.typ)
		plantest.WriteTypeSet(t, filepath.Join(fixtures, "valid"), art, r.typ)
		c.Rows = append(c.Rows, capacity.TypeRow{InstanceType: r.typ, ArtifactDir: art, Feasible: true, Holds: true, CostPerDayUSD: r.cost})
	}
	if edit != nil {
		edit(c)
	}
	path := filepath.Join(dir, "artifacts", "kokoro-82m", capacity.CompareFile)
	if err := capacity.WriteTypeComparison(path, c); err != nil {
		t.Fatal(err)
	}
	return path, c
}

// GIVEN a comparison report WHEN tts-bench plan --from-compare runs THEN it plans for the winner from the
// winner's artifacts with the report's peak and trough, writes the plan beside those artifacts, says the
// deploy needs -c instance_type, and the gate accepts the plan for a deployment of that type only.
func TestPlanFromCompareWinner(t *testing.T) {
	report, c := compareReport(t, nil)
	stdout, stderr, code := runCLI(t, "plan", "--from-compare", report)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, stdout, stderr)
	}
	planPath := filepath.Join(c.Rows[1].ArtifactDir, capacity.PlanFile)
	if !strings.Contains(stderr, "wrote feasible plan to "+planPath) {
		t.Errorf("stderr does not say the plan was written beside the winner's artifacts:\n%s", stderr)
	}
	for _, w := range []string{
		"Plan for kokoro-82m on ml.g6.xlarge: measured",
		"→ deploy it on ml.g6.xlarge with -c instance_type=ml.g6.xlarge (speech-infra deploy --instance-type ml.g6.xlarge)",
		"Plan for ml.g6.xlarge: the winner (the cheapest type that holds the SLO on trace diurnal in " + report + ")",
		"The catalog deploys ml.g5.xlarge: the deploy needs -c instance_type=ml.g6.xlarge",
		"speech-infra deploy kokoro-82m --instance-type ml.g6.xlarge --plan " + planPath,
		"-c model=kokoro-82m -c instance_type=ml.g6.xlarge -c plan=" + planPath,
	} {
		if !strings.Contains(flat(stdout), flat(w)) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout)
		}
	}
	p, err := capacity.LoadPlan(planPath)
	if err != nil {
		t.Fatal(err)
	}
	if p.Fingerprint.InstanceType != "ml.g6.xlarge" || p.Inputs.PeakRPS != 80 || p.Inputs.TroughRPS != 10 || !p.Measured {
		t.Errorf("plan: type %s, peak %g, trough %g, measured %v", p.Fingerprint.InstanceType, p.Inputs.PeakRPS, p.Inputs.TroughRPS, p.Measured)
	}
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	on := true
	d := capacity.Deployment{Model: m, InstanceType: "ml.g6.xlarge", ContainerDigest: fixtureDigest, AutoscalingOverride: &on}
	if dec := capacity.Gate(d, planPath); !dec.Enabled {
		t.Errorf("the gate refused the winner's plan for a deployment of ml.g6.xlarge: %q", dec.Reasons)
	}
	d.InstanceType = m.InstanceType
	if dec := capacity.Gate(d, planPath); dec.Enabled || !strings.Contains(strings.Join(dec.Reasons, " "), "-c instance_type=ml.g6.xlarge") {
		t.Errorf("the gate on the catalog's type: enabled %v, reasons %q", dec.Enabled, dec.Reasons)
	}

	// Explicit flags win over the report's; --instance-type picks another row that holds, here the catalog's
	// type, which needs no -c instance_type.
	out := filepath.Join(t.TempDir(), "plan.json")
	stdout, stderr, code = runCLI(t, "plan", "--from-compare", report, "--instance-type", "ml.g5.xlarge", "--peak-rps", "60", "--output", out)
	if code != 0 {
		t.Fatalf("--instance-type ml.g5.xlarge: exit %d\n%s%s", code, stdout, stderr)
	}
	if p, err = capacity.LoadPlan(out); err != nil || p.Fingerprint.InstanceType != "ml.g5.xlarge" || p.Inputs.PeakRPS != 60 || p.Inputs.TroughRPS != 10 {
		t.Fatalf("plan %+v, %v", p, err)
	}
	if !strings.Contains(stdout, "ml.g5.xlarge is the catalog's type") || strings.Contains(stdout, "-c instance_type") ||
		!strings.Contains(stdout, "speech-infra deploy kokoro-82m --plan "+out) {
		t.Errorf("stdout for the catalog's type:\n%s", stdout)
	}

	// A comparison on the emulator: the plan is for the emulator's profile of the type, deployed with --local.
	local, _ := compareReport(t, func(c *capacity.TypeComparison) { c.Local = true })
	stdout, stderr, code = runCLI(t, "plan", "--from-compare", local, "--format", "json")
	if code != 0 {
		t.Fatalf("local report: exit %d\n%s", code, stderr)
	}
	var lp capacity.Plan
	if err := json.Unmarshal([]byte(stdout), &lp); err != nil || lp.Fingerprint.InstanceType != "ml.g6.xlarge" {
		t.Errorf("--format json: stdout is not the plan alone (%v):\n%s", err, stdout)
	}
	if !strings.Contains(stderr, "ran on the local emulator") || !strings.Contains(stderr, "speech-infra deploy kokoro-82m --local --instance-type ml.g6.xlarge --plan ") ||
		strings.Contains(stderr, "-c instance_type") {
		t.Errorf("local report, stderr:\n%s", stderr)
	}
}

// The refusals are usage errors (exit 2) naming the flag and the finding, and write no plan.
func TestPlanFromCompareRefusals(t *testing.T) {
	report, _ := compareReport(t, nil)
	noWinner, _ := compareReport(t, func(c *capacity.TypeComparison) {
		c.Winner = ""
		c.Rows[0].Holds, c.Rows[0].Finding = false, "surge_survival: 4 violation minutes at 09:12"
		c.Rows[1].Holds, c.Rows[1].Error = false, "qmax: endpoint speech-kokoro-82m-ml-g6-xlarge failed to start"
	})
	notHolding, _ := compareReport(t, func(c *capacity.TypeComparison) {
		c.Rows[0].Holds, c.Rows[0].Finding = false, "peak_coverage: the peak needs 11 instances, the maximum is 9"
	})
	gone, _ := compareReport(t, func(c *capacity.TypeComparison) { c.Rows[1].ArtifactDir = filepath.Join(t.TempDir(), "moved") })
	swapped, _ := compareReport(t, func(c *capacity.TypeComparison) {
		c.Rows[0].ArtifactDir, c.Rows[1].ArtifactDir = c.Rows[1].ArtifactDir, c.Rows[0].ArtifactDir
	})
	for _, tc := range []struct {
		name  string
		args  []string
		wants []string
	}{
		{"no winner", []string{"--from-compare", noWinner}, []string{"no type holds the SLO (winner is empty)",
			"ml.g5.xlarge: surge_survival: 4 violation minutes at 09:12", "ml.g6.xlarge: qmax: endpoint speech-kokoro-82m-ml-g6-xlarge failed to start"}},
		{"unknown type", []string{"--from-compare", report, "--instance-type", "ml.g4dn.xlarge"},
			[]string{"--instance-type ml.g4dn.xlarge: the report " + report + " has no row for it (it compares ml.g5.xlarge, ml.g6.xlarge)"}},
		{"a row that does not hold", []string{"--from-compare", notHolding, "--instance-type", "ml.g5.xlarge"},
			[]string{"--instance-type ml.g5.xlarge: it does not hold the SLO", "peak_coverage: the peak needs 11 instances", "leave --instance-type out"}},
		{"with --qmax", []string{"--from-compare", report, "--qmax", filepath.Join(fixtures, "valid", "qmax.json")},
			[]string{"--from-compare takes the chosen type's qmax and ttotal artifacts from the report: drop --qmax and --ttotal"}},
		{"with --what-if", []string{"--from-compare", report, "--what-if", "q_max=40,t_total_s=280,throughput_rps=13.6"},
			[]string{"give one of them"}},
		{"another model", []string{"--from-compare", report, "--model", "espeak-ng"}, []string{"--model espeak-ng: the report " + report + " compares kokoro-82m"}},
		{"--instance-type alone", []string{"--instance-type", "ml.g6.xlarge", "--peak-rps", "80"}, []string{"--instance-type ml.g6.xlarge picks a row of a comparison report: give --from-compare REPORT"}},
		{"no report", []string{"--from-compare", filepath.Join(t.TempDir(), "compare.json")}, []string{"no such file: run tts-bench compare first"}},
		{"artifacts gone", []string{"--from-compare", gone}, []string{"the artifact directory of ml.g6.xlarge (artifact_dir ", "no such file or directory", "run tts-bench compare again"}},
		{"another type's artifacts", []string{"--from-compare", swapped}, []string{"the row of ml.g6.xlarge names", "measured on ml.g5.xlarge", "run tts-bench compare again"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "plan.json")
			stdout, stderr, code := runCLI(t, append(append([]string{"plan"}, tc.args...), "--output", out)...)
			if code != exitcode.CodeUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitcode.CodeUsage, stdout, stderr)
			}
			for _, w := range tc.wants {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if _, err := capacity.LoadPlan(out); err == nil {
				t.Error("a plan was written")
			}
		})
	}
}
