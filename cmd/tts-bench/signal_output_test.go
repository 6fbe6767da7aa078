package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// An --output that cannot be written is a usage error found before the simulation: exit 2 naming --output
// and the fix, nothing printed, nothing written. A month of 1-s steps would otherwise run to its end first.
func TestSimulateUnwritableOutputBeforeTheRun(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	asDir := filepath.Join(dir, "chart.svg")
	if err := os.Mkdir(asDir, 0o755); err != nil {
		t.Fatal(err)
	}
	month := []string{"simulate", "--plan", espeakPlan, "--trace", "diurnal", "--peak-rps", "500", "--trough-rps", "20", "--duration", "744h", "--step", "1m"}
	for _, tc := range []struct {
		name, output string
		want         []string
	}{
		{"a file on its way", filepath.Join(file, "sub", "chart.svg"), []string{"--output " + filepath.Join(file, "sub", "chart.svg"), file + " is not a directory"}},
		{"a directory", asDir, []string{"--output " + asDir, asDir + " is a directory"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := runCLI(t, append(month, "--output", tc.output)...)
			if code != exitcode.CodeUsage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.CodeUsage, stderr)
			}
			for _, w := range append(tc.want, "give --output a path in a directory you can write") {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr does not say %q:\n%s", w, stderr)
				}
			}
			if stdout != "" {
				t.Errorf("the simulation ran before the --output check: stdout\n%s", stdout)
			}
		})
	}
	// The default output (simulate-<model>.svg in the current directory) is checked as well, once the plan
	// names the model.
	t.Run("the default", func(t *testing.T) {
		cwd := t.TempDir()
		t.Chdir(cwd)
		if err := os.Mkdir("simulate-espeak-ng.svg", 0o755); err != nil {
			t.Fatal(err)
		}
		stdout, stderr, code := runCLI(t, month...)
		if code != exitcode.CodeUsage || stdout != "" {
			t.Fatalf("exit %d, want %d and nothing printed; stdout %d bytes, stderr:\n%s", code, exitcode.CodeUsage, len(stdout), stderr)
		}
		for _, w := range []string{"--output not given: the default simulate-espeak-ng.svg in the current directory cannot be written", "is a directory", "give --output PATH"} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr does not say %q:\n%s", w, stderr)
			}
		}
	})
	// A writable --output: the check leaves nothing behind but the chart, in the directories the write made.
	t.Run("writable", func(t *testing.T) {
		out := filepath.Join(t.TempDir(), "new", "dir", "chart.svg")
		if _, stderr, code := runCLI(t, "simulate", "--plan", espeakPlan, "--trace", "step", "--duration", "20m", "--output", out); code > 1 {
			t.Fatalf("exit %d:\n%s", code, stderr)
		}
		if got := leftIn(t, filepath.Dir(out)); strings.Join(got, " ") != "chart.svg" {
			t.Errorf("the output directory holds %q, want the chart alone", got)
		}
	})
}

// tts-bench plan checks --output before it builds and searches, for the same reason: nothing printed, exit 2.
func TestPlanUnwritableOutputBeforeTheBuild(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(file, "plan.json")
	stdout, stderr, code := runCLI(t, measuredArgs(t, out, "--peak-rps", "200")...)
	if code != exitcode.CodeUsage || stdout != "" {
		t.Fatalf("exit %d, want %d and nothing printed; stdout %d bytes, stderr:\n%s", code, exitcode.CodeUsage, len(stdout), stderr)
	}
	for _, w := range []string{"--output " + out, file + " is not a directory", "give --output a path in a directory you can write"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
}

// A plan records the user's traces point by point, and a plan file larger than capacity.MaxPlanBytes is one
// the gate, simulate and validate refuse to read: plan refuses such traces after its first build, before it
// prints or searches, naming --trace and the fix, and writes nothing.
func TestPlanRefusesTracesTooLargeForAPlanFile(t *testing.T) {
	dir := t.TempDir()
	var args []string
	for k := range 5 {
		// 4000 points (the most a trace may have) a second apart: over an hour each, cheap to simulate.
		var b strings.Builder
		for at := range capacity.MaxUserTracePoints {
			fmt.Fprintf(&b, "%d,%d\n", at, 10+(at+k)%7)
		}
		path := filepath.Join(dir, fmt.Sprintf("dense-%d.csv", k))
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		args = append(args, "--trace", path)
	}
	out := filepath.Join(dir, "out", "plan.json")
	stdout, stderr, code := runCLI(t, measuredArgs(t, out, args...)...)
	if code != exitcode.CodeUsage || stdout != "" {
		t.Fatalf("exit %d, want %d and nothing printed; stdout %d bytes, stderr:\n%s", code, exitcode.CodeUsage, len(stdout), stderr)
	}
	for _, w := range []string{"--trace, --traffic: the plan would be", "with the 20000 points of its 5 trace(s), above the 1048576 a plan file may be", "resample the traces to a coarser step"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("stderr does not say %q:\n%s", w, stderr)
		}
	}
	if _, err := os.Stat(filepath.Dir(out)); err == nil {
		t.Errorf("a refused plan created %s", filepath.Dir(out))
	}
}
