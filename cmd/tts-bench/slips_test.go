package main

import (
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/internal/cliflags"
)

// The slips users make on the command line, each run through the real application in-process: the exit code
// and what stdout and stderr say.

// `help` is a command although the application's command list leaves it out: `help [command]` prints what
// `[command] --help` prints, on stdout, exit 0; a misspelt command after it is a usage error naming the nearest.
func TestSlipHelpCommand(t *testing.T) {
	for _, tc := range []struct{ help, same []string }{
		{[]string{"help"}, []string{"--help"}},
		{[]string{"h"}, []string{"--help"}},
		{[]string{"help", "plan"}, []string{"plan", "--help"}},
		{[]string{"help", "qmax"}, []string{"qmax", "--help"}},
	} {
		want, _, _ := runCLI(t, tc.same...)
		stdout, stderr, code := runCLI(t, tc.help...)
		if code != 0 || stderr != "" || stdout != want || !strings.Contains(stdout, "USAGE:") {
			t.Errorf("tts-bench %s: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and what tts-bench %s prints:\n%s",
				strings.Join(tc.help, " "), code, stderr, stdout, strings.Join(tc.same, " "), want)
		}
	}
	if stdout, _, _ := runCLI(t, "--help"); strings.Contains(stdout, "help, h") {
		t.Errorf("tts-bench --help lists the help command, which the application hides:\n%s", stdout)
	}
	stdout, stderr, code := runCLI(t, "help", "plna")
	if want := `tts-bench: help: unknown command "plna": did you mean "plan"? see tts-bench --help`; code != 2 || stdout != "" || strings.TrimSpace(stderr) != want {
		t.Errorf("tts-bench help plna: exit %d, stdout %q, stderr %q; want exit 2 and %q", code, stdout, stderr, want)
	}
}

// --version prints the version wherever it is given, after `help` too.
func TestSlipVersionAfterHelp(t *testing.T) {
	want := "tts-bench " + cliflags.Version() + "\n"
	for _, args := range [][]string{{"help", "--version"}, {"help", "plan", "--version"}, {"plan", "--version"}} {
		stdout, stderr, code := runCLI(t, args...)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("tts-bench %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
}

// A mistyped --model names the nearest catalog id; one far from every id names none, only the catalog.
func TestSlipModelSuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"qmax", "--model", "espeek-ng", "--container-dir", containerDir}, `--model: unknown model "espeek-ng": did you mean espeak-ng? the catalog has espeak-ng, kokoro-82m, kokoro-82m-twin`},
		{[]string{"plan", "--model", "kokoro-28m", "--peak-rps", "80"}, `--model: unknown model "kokoro-28m": did you mean kokoro-82m?`},
		{[]string{"plan", "--model", "nope", "--peak-rps", "80"}, `--model: unknown model "nope": the catalog has espeak-ng, kokoro-82m, kokoro-82m-twin`},
	} {
		stdout, stderr, code := runCLI(t, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("tts-bench %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}
