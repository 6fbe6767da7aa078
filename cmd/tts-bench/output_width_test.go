package main

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/speech-infra/speech-infra/internal/textwidth"
)

// Text output fits a terminal: no line of plan is wider than textwidth.Default (a buffer is no terminal), and
// simulate on a day prints its totals and comparison in under 60 lines, the per-minute table only with
// --minutes.
func TestOutputFitsTheTerminal(t *testing.T) {
	wide := func(name, out string) {
		for i, l := range strings.Split(out, "\n") {
			if n := utf8.RuneCountInString(l); n > textwidth.Default {
				t.Errorf("%s line %d is %d columns: %q", name, i+1, n, l)
			}
		}
	}
	out, stderr, code := runCLI(t, "plan", "--what-if", "q_max=50,t_total_s=260.2,throughput_rps=16.3", "--peak-rps", "80")
	if code != 0 {
		t.Fatalf("plan --what-if: exit %d: %s", code, stderr)
	}
	wide("plan", out)
	valid, err := filepath.Abs(filepath.Join("..", "..", "testdata", "plans", "valid", "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	svg := filepath.Join(t.TempDir(), "s.svg")
	out, stderr, code = runCLI(t, "simulate", "--plan", valid, "--trace", "diurnal", "--output", svg)
	if code != 0 {
		t.Fatalf("simulate: exit %d: %s", code, stderr)
	}
	wide("simulate", out)
	if n := strings.Count(out, "\n"); n >= 60 || !strings.Contains(out, "TOTALS") || !strings.Contains(out, "COMPARISON") {
		t.Errorf("simulate on a day printed %d lines (want under 60, with the totals and the comparison):\n%s", n, out)
	}
	all, _, code := runCLI(t, "simulate", "--plan", valid, "--trace", "diurnal", "--output", svg, "--minutes")
	if code != 0 || strings.Count(all, "\n") < 1440 {
		t.Errorf("simulate --minutes: exit %d, %d lines: want a row for each of the day's 1440 minutes", code, strings.Count(all, "\n"))
	}
}

// flat is s with every run of white space one space: text output wraps to the terminal, so a test looks for
// a phrase in it flattened.
func flat(s string) string { return strings.Join(strings.Fields(s), " ") }
