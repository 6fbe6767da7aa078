package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/cliflags/cliflagstest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

// fixtures is absolute so that tests may change directory.
var fixtures = func() string {
	p, err := filepath.Abs(filepath.Join("..", "..", "testdata", "plans"))
	if err != nil {
		panic(err)
	}
	return p
}()

// runCLI runs tts-bench with args and returns stdout, stderr and the exit code main would use.
func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), append([]string{"tts-bench"}, args...), &stdout, &stderr)
	if err != nil {
		stderr.WriteString("tts-bench: " + err.Error() + "\n")
	}
	return stdout.String(), stderr.String(), exitcode.Code(err)
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/tts-bench -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test ./cmd/tts-bench -update after checking the change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

func measuredArgs(t *testing.T, out string, extra ...string) []string {
	valid := filepath.Join(fixtures, "valid")
	return append([]string{"plan", "--qmax", filepath.Join(valid, "qmax.json"), "--ttotal", filepath.Join(valid, "ttotal.json"),
		"--peak-rps", "80", "--trough-rps", "10", "--output", out}, extra...)
}

func TestPlanGolden(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name   string
		args   []string
		code   int
		golden string
	}{
		{"measured table", measuredArgs(t, filepath.Join(dir, "a.json")), 0, "plan-measured.txt"},
		{"measured json", measuredArgs(t, filepath.Join(dir, "b.json"), "--format", "json"), 0, "plan-measured.json"},
		{"infeasible table", measuredArgs(t, filepath.Join(dir, "c.json"), "--peak-rps", "200"), 1, "plan-infeasible.txt"},
		{"what-if table", []string{"plan", "--what-if", "q_max=40,t_total_s=280,throughput_rps=13.6", "--peak-rps", "80", "--trough-rps", "10"}, 0, "plan-what-if.txt"},
		{"what-if json", []string{"plan", "--what-if", "q_max=50,t_total_s=240,throughput_rps=37.5", "--peak-rps", "100", "--format", "json"}, 0, "plan-what-if.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, tt.args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			golden(t, tt.golden, stdout)
		})
	}
}

// The measured plan the CLI writes is the committed valid fixture, byte for byte: one code path builds both.
func TestPlanWritesTheFixture(t *testing.T) {
	out := filepath.Join(t.TempDir(), "artifacts", "plan.json")
	_, stderr, code := runCLI(t, measuredArgs(t, out)...)
	if code != 0 || !strings.Contains(stderr, "wrote feasible plan to "+out) {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join(fixtures, "valid", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("the written plan differs from testdata/plans/valid/plan.json")
	}
}

func TestPlanInfeasibleIsWrittenAndExitsOne(t *testing.T) {
	out := filepath.Join(t.TempDir(), "plan.json")
	_, stderr, code := runCLI(t, measuredArgs(t, out, "--peak-rps", "200", "--no-search")...)
	if code != exitcode.CodeCheckFailed || !strings.Contains(stderr, "plan is infeasible: peak_coverage, surge_survival, envelope failed") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if strings.Contains(stderr, "searching") {
		t.Fatalf("--no-search searched: %s", stderr)
	}
	p, err := capacity.LoadPlan(out)
	if err != nil || p.Feasible() {
		t.Fatalf("written plan: %v, feasible %v", err, p != nil && p.Feasible())
	}
}

// --trace adds the user's trace to the envelope: one that makes the fleet scale in and straight out again
// (two instances at 20 rps, 9 rps for 400 s, then 20 rps) flaps, and the plan is infeasible, naming it.
func TestPlanUserTraceJoinsTheEnvelope(t *testing.T) {
	dir := t.TempDir()
	csv := filepath.Join(dir, "flapping.csv")
	if err := os.WriteFile(csv, []byte("0,20\n600,9\n1000,20\n2400,20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plan.json")
	stdout, stderr, code := runCLI(t, measuredArgs(t, out, "--trace", csv, "--no-search")...)
	if code != exitcode.CodeCheckFailed || !strings.Contains(stderr, "envelope failed") {
		t.Fatalf("exit %d, stderr %s\n%s", code, stderr, stdout)
	}
	// The envelope's table row of the user trace (its number, kind, violation minutes, flaps) shows a flap,
	// and the same number leads the trace's name below the table.
	m := regexp.MustCompile(`(?m)^\s+(\d+)\s+user\s+\d+\s+[1-9]\d*\s`).FindStringSubmatch(stdout)
	if m == nil || !regexp.MustCompile(`(?m)^\s+`+m[1]+`\s+.*flapping\.csv`).MatchString(stdout) {
		t.Errorf("the envelope table does not show the user trace's flap:\n%s", stdout)
	}
	p, err := capacity.LoadPlan(out)
	if err != nil || p.Feasible() || len(p.Inputs.Traces) != 1 || p.Inputs.Traces[0].Name != csv {
		t.Fatalf("written plan: %v; want the infeasible plan recording the trace", err)
	}
	if errs := p.Verify(); len(errs) > 0 {
		t.Fatalf("the written plan does not verify: %v", errs)
	}
	// A scale-in margin of 0.3 scales in below 11.98 × 1/2 × 0.7 = 4.19 rps per instance (the default 0.2: 4.79):
	// the trace's 9 rps on two instances (4.5 each) no longer scales in, so nothing flaps and the plan holds.
	if _, stderr, code = runCLI(t, measuredArgs(t, out, "--trace", csv, "--no-search", "--scale-in-margin", "0.3")...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if p, err = capacity.LoadPlan(out); err != nil || p.Inputs.ScaleInMargin != 0.3 || !p.Feasible() {
		t.Fatalf("scale-in margin not recorded: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--scale-in-margin", "0.9"}, "--scale-in-margin 0.9: want a share in [0, 0.9)"},
		{[]string{"--trace", filepath.Join(dir, "none.csv")}, "--trace " + filepath.Join(dir, "none.csv")},
	} {
		if _, stderr, code := runCLI(t, measuredArgs(t, out, tc.args...)...); code != exitcode.CodeUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %s; want %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestWhatIfIsWrittenOnlyWhenAsked(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	args := []string{"plan", "--what-if", "q_max=40,t_total_s=280,throughput_rps=13.6", "--peak-rps", "80"}
	_, stderr, code := runCLI(t, args...)
	if code != 0 || !strings.Contains(stderr, "what-if plan not written") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "artifacts")); !os.IsNotExist(err) {
		t.Fatal("a what-if plan was written to the default path")
	}
	out := filepath.Join(dir, "explore.json")
	if _, stderr, code = runCLI(t, append(args, "--output", out)...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	p, err := capacity.LoadPlan(out)
	if err != nil || p.Measured {
		t.Fatalf("written what-if plan: %v, measured %v", err, p != nil && p.Measured)
	}
}

func TestPlanDefaultPaths(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	_, stderr, code := runCLI(t, "plan", "--peak-rps", "80")
	if code != exitcode.CodeUsage || !strings.Contains(stderr, "--qmax artifacts/kokoro-82m/qmax.json: no such file: run tts-bench qmax first or pass --qmax PATH") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	art := filepath.Join(dir, "artifacts", "kokoro-82m")
	if err := os.MkdirAll(art, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"qmax.json", "ttotal.json", "qmax.records.jsonl.gz"} {
		data, err := os.ReadFile(filepath.Join(fixtures, "valid", f))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(art, f), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, stderr, code = runCLI(t, "plan", "--peak-rps", "80", "--trough-rps", "10"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if _, err := capacity.LoadPlan(filepath.Join(art, "plan.json")); err != nil {
		t.Fatalf("default output: %v", err)
	}
}

func TestPlanInputErrors(t *testing.T) {
	valid := filepath.Join(fixtures, "valid")
	q, tt := filepath.Join(valid, "qmax.json"), filepath.Join(valid, "ttotal.json")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no peak", []string{"plan", "--qmax", q, "--ttotal", tt}, "--peak-rps is required"},
		{"negative peak", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "-3"}, "--peak-rps -3: want a request rate in (0, 1e+09] requests per second"},
		{"peak 1e300", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "1e300"}, "--peak-rps 1e+300: want a request rate in (0, 1e+09]"},
		{"peak NaN", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "NaN"}, "--peak-rps NaN: want a request rate in (0, 1e+09]"},
		{"min instances huge", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "80", "--min-instances", "1000000000"}, "--min-instances 1000000000: want 1 to 100000"},
		{"what-if cloudwatch ratio 1e-300", []string{"plan", "--what-if", "q_max=40,t_total_s=280,throughput_rps=13.6,cloudwatch_ratio=1e-300", "--peak-rps", "80"}, "cloudwatch_ratio=1e-300: want a ratio in [0.1, 10]"},
		{"what-if throughput 1e300", []string{"plan", "--what-if", "q_max=40,t_total_s=280,throughput_rps=1e300", "--peak-rps", "80"}, "throughput_rps=1e300: want a per-instance request rate in (0, 1e+06]"},
		{"qmax /dev/zero", []string{"plan", "--qmax", "/dev/zero", "--ttotal", tt, "--peak-rps", "80"}, "/dev/zero is a character device, not a regular file"},
		{"qmax a directory", []string{"plan", "--qmax", valid, "--ttotal", tt, "--peak-rps", "80"}, valid + " is a directory, not a regular file"},
		{"surge", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "80", "--surge", "10.5"}, "--surge 10.5: want a ratio in [1, 10]"},
		{"trough above peak", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "80", "--trough-rps", "90"}, "--trough-rps 90"},
		{"bounds", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "80", "--min-instances", "5", "--max-instances", "2"}, "--min-instances 5 is above --max-instances 2"},
		{"detection buffer", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "80", "--detection-buffer", "-1"}, "--detection-buffer -1"},
		{"format", []string{"plan", "--qmax", q, "--ttotal", tt, "--peak-rps", "80", "--format", "yaml"}, `--format "yaml" is not a format`},
		{"model", []string{"plan", "--model", "nope", "--peak-rps", "80"}, `--model: unknown model "nope": the catalog has espeak-ng, kokoro-82m`},
		{"artifact for another model", []string{"plan", "--model", "espeak-ng", "--qmax", q, "--ttotal", tt, "--peak-rps", "80"}, `is for model "kokoro-82m", not "espeak-ng"`},
		{"what-if keys", []string{"plan", "--what-if", "q_max=40", "--peak-rps", "80"}, "--what-if \"q_max=40\": missing t_total_s, throughput_rps"},
		{"what-if with artifacts", []string{"plan", "--what-if", "q_max=40,t_total_s=1,throughput_rps=1", "--qmax", q, "--peak-rps", "80"}, "--what-if replaces the artifacts"},
		{"not a number", []string{"plan", "--peak-rps", "lots"}, "invalid value \"lots\" for flag -peak-rps"},
		{"unknown flag", []string{"plan", "--peak", "80"}, "flag provided but not defined: -peak"},
		{"arguments", []string{"plan", "--peak-rps", "80", "extra"}, "plan takes no arguments"},
		{"unknown command", []string{"plna"}, `unknown command "plna"`},
		{"invalid artifact", []string{"plan", "--qmax", tt, "--ttotal", tt, "--peak-rps", "80"}, "is not a valid qmax artifact"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runCLI(t, tt.args...)
			if code != exitcode.CodeUsage || !strings.Contains(stderr, tt.want) {
				t.Fatalf("exit %d, want %d; stderr does not contain %q:\n%s", code, exitcode.CodeUsage, tt.want, stderr)
			}
		})
	}
}

// Files that are not small regular JSON files, and artifacts whose keys a reader and the decoder
// would read differently, are refused at once with exit 2 and the file named: no hang on a FIFO, no memory
// filled from a device or a huge file.
func TestPlanRefusesUnreadableArtifacts(t *testing.T) {
	valid := filepath.Join(fixtures, "valid")
	q, tt := filepath.Join(valid, "qmax.json"), filepath.Join(valid, "ttotal.json")
	dir := t.TempDir()
	fifo := filepath.Join(dir, "qmax.json")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(q)
	if err != nil {
		t.Fatal(err)
	}
	dup := filepath.Join(dir, "dup.json")
	if err := os.WriteFile(dup, []byte(strings.Replace(string(data), "{", `{"q_max": 99,`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	caseVariant := filepath.Join(dir, "case.json")
	if err := os.WriteFile(caseVariant, []byte(strings.Replace(string(data), "{", `{"Q_MAX": 99,`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	huge := filepath.Join(dir, "huge.json")
	if err := os.WriteFile(huge, []byte(strings.Replace(string(data), "{", `{"x":"`+strings.Repeat("x", capacity.MaxTTotalBytes)+`",`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name        string
		qmax, ttotl string
		want        string
	}{
		{"FIFO", fifo, tt, fifo + " is a named pipe (FIFO), not a regular file"},
		{"duplicate key", dup, tt, `q_max: duplicate key: "q_max" appears more than once`},
		{"case-variant key", caseVariant, tt, `q_max: duplicate key: "q_max" differs from "Q_MAX" only in case`},
		{"ttotal above its limit", q, huge, huge + " is larger than the 1 MiB limit"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			type result struct {
				stderr string
				code   int
			}
			done := make(chan result, 1)
			go func() {
				_, stderr, code := runCLI(t, "plan", "--qmax", tc.qmax, "--ttotal", tc.ttotl, "--peak-rps", "80", "--output", filepath.Join(dir, "plan.json"))
				done <- result{stderr, code}
			}()
			select {
			case r := <-done:
				if r.code != exitcode.CodeUsage || !strings.Contains(r.stderr, tc.want) {
					t.Fatalf("exit %d, want %d; stderr does not contain %q:\n%s", r.code, exitcode.CodeUsage, tc.want, r.stderr)
				}
			case <-time.After(20 * time.Second):
				t.Fatal("tts-bench plan did not return within 20 s")
			}
			if _, err := os.Stat(filepath.Join(dir, "plan.json")); err == nil {
				t.Fatal("a plan was written from a refused artifact")
			}
		})
	}
}

// --surge 1.4999999999 must not print surge 1.5, a scale-in threshold of 0 and a feasible plan. The surge is
// printed as given; the original's C_scale_min (1 − 2h)·Q_max (docs/design.md, "The original") collapses to
// 8e-09 and is shown for comparison only; the deployed scale-in threshold is the instance model's metric at
// the scale-in rate, which stays well above 0 (a threshold that rounds to 0 still fails scale_in_safety:
// capacity's TestScaleInThresholdThatRoundsToZeroFails).
func TestPlanSurgeJustBelowTheLimit(t *testing.T) {
	stdout, stderr, code := runCLI(t, "plan", "--what-if", "q_max=40,t_total_s=280,throughput_rps=13.6", "--peak-rps", "60", "--trough-rps", "10", "--surge", "1.4999999999")
	if code != 0 {
		t.Fatalf("exit %d, want 0\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{`surge ratio s\s+1\.4999999999\s`, `safe_rps 12\.24 ÷ surge 1\.4999999999`, `original thresholds\s+20 / 8e-09\s`,
		`scale_in_threshold\s+2\.49 \(metric`, `pass\s+scale_in_safety`, `VERDICT\s+feasible`} {
		if !regexp.MustCompile(want).MatchString(stdout) {
			t.Errorf("output does not match %q:\n%s", want, stdout)
		}
	}
}

func TestHelpTeaches(t *testing.T) {
	stdout, _, code := runCLI(t, "plan", "--help")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"the original's concurrency thresholds", "C_scale_max = (1 − h)·Q_max", "Q_max 50, s 1.25 → C_scale_max 37.5",
		"safe_rps ÷ s", "scale_out_rps × min ÷ (min + 1) × (1 − scale-in margin)", "tts-bench plan --what-if q_max=", "--peak-rps", "measured: false",
		"staircase", "sawtooth", "hover fast", "hover slow", "--hover-amplitude", "recovery_s", "instance_model,", " envelope,"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan --help does not mention %q", want)
		}
	}
	// The numbers come from the constants the code uses.
	for _, want := range []string{
		fmt.Sprintf("±%s%% (--hover-amplitude)", capacity.FormatNumber(100*capacity.DefaultHoverAmplitude)),
		fmt.Sprintf("period %s: a dip", capacity.HoverFastPeriod),
		fmt.Sprintf("period %s × T_plan", capacity.FormatNumber(capacity.HoverSlowPeriodTPlan)),
		fmt.Sprintf("from the peak to %s × peak at once", capacity.FormatNumber(capacity.StepRatio)),
		fmt.Sprintf("recover within %s × T_plan", capacity.FormatNumber(capacity.StepRecoveryTPlan)),
		fmt.Sprintf("max(%d s, %d × T_plan)", capacity.ScaleInCooldownMinS, capacity.ScaleInCooldownTPlan),
		fmt.Sprintf("(default %s)", capacity.FormatNumber(capacity.DefaultScaleInMargin)),
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("plan --help does not say %q", want)
		}
	}
	stdout, _, code = runCLI(t, "simulate", "--help")
	for _, want := range []string{"the original's concurrency thresholds, for comparison only", "the metric at safe_rps ÷ s", "scale_in_threshold",
		fmt.Sprintf("over %d × %d s", capacity.OriginalScaleInEvaluationPeriods, capacity.AlarmPeriodS)} {
		if code != 0 || !strings.Contains(stdout, want) {
			t.Errorf("simulate --help (exit %d) does not say %q", code, want)
		}
	}
	stdout, _, code = runCLI(t)
	if code != 0 || !strings.Contains(stdout, "plan") || !strings.Contains(stdout, "Exit codes") {
		t.Fatalf("tts-bench with no command: exit %d\n%s", code, stdout)
	}
}

// The exit-code contract through the CLI: an output that cannot be written is an input error (exit 2), as an
// unreadable artifact is; only a marked error exits 2 (internal/exitcode: an unmarked one exits 1).
func TestPlanUnwritableOutputIsAnInputError(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, measuredArgs(t, filepath.Join(file, "plan.json"))...)
	if code != exitcode.CodeUsage || !strings.Contains(stderr, file) {
		t.Fatalf("exit %d, want %d; stderr does not name %s:\n%s", code, exitcode.CodeUsage, file, stderr)
	}
}

// Validate reports every problem of the command line at once, each in the form "{what}: {why}: {fix}".
func TestPlanReportsEveryProblemAtOnce(t *testing.T) {
	_, stderr, code := runCLI(t, "plan", "extra", "--format", "yaml", "--model", "nope", "--peak-rps", "-3", "--surge", "20",
		"--min-instances", "0", "--what-if", "q_max=40", "--qmax", "q.json")
	if code != exitcode.CodeUsage {
		t.Fatalf("exit %d, want %d:\n%s", code, exitcode.CodeUsage, stderr)
	}
	for _, want := range []string{"plan takes no arguments", `--format "yaml" is not a format`, `--model: unknown model "nope"`,
		"--peak-rps -3: want a request rate", "--surge 20: want a ratio in [1, 10]", "--min-instances 0: want 1 to",
		"--what-if replaces the artifacts", `--what-if "q_max=40": missing t_total_s, throughput_rps`} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not contain %q:\n%s", want, stderr)
		}
	}
	// Both missing artifacts at once, not the first alone.
	t.Chdir(t.TempDir())
	_, stderr, code = runCLI(t, "plan", "--peak-rps", "80")
	if code != exitcode.CodeUsage || !strings.Contains(stderr, "--qmax artifacts/kokoro-82m/qmax.json: no such file") || !strings.Contains(stderr, "--ttotal artifacts/kokoro-82m/ttotal.json: no such file") {
		t.Fatalf("exit %d; want both missing artifacts named:\n%s", code, stderr)
	}
}

// A boolean flag added to any tts-bench command works after the command's argument with no other edit, and a
// value flag after it keeps its value.
func TestBoolFlagsAfterArgument(t *testing.T) {
	cliflagstest.CheckBoolFlagsAfterArgument(t, newApp)
}
