package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/internal/cliflags"
)

// The slips users make on the command line, each run through the real application in-process: the exit code
// and what stdout and stderr say.

// `help` is a command: `help [command...]` prints what `[command...] --help` prints, on stdout, exit 0; a
// misspelt command after it is a usage error naming the nearest one.
func TestSlipHelpCommand(t *testing.T) {
	for _, tc := range []struct{ help, same []string }{
		{[]string{"help"}, []string{"--help"}},
		{[]string{"h"}, []string{"--help"}},
		{[]string{"help", "deploy"}, []string{"deploy", "--help"}},
		{[]string{"help", "local"}, []string{"local", "--help"}},
		{[]string{"help", "local", "status"}, []string{"local", "status", "--help"}},
		{[]string{"local", "help"}, []string{"local", "--help"}},
		{[]string{"local", "help", "stop"}, []string{"local", "stop", "--help"}},
	} {
		want, _, _ := invoke(t, tc.same...)
		stdout, stderr, code := invoke(t, tc.help...)
		if code != 0 || stderr != "" || stdout != want || !strings.Contains(stdout, "USAGE:") {
			t.Errorf("speech-infra %s: exit %d, stderr %q, stdout:\n%s\nwant exit 0 and what speech-infra %s prints:\n%s",
				strings.Join(tc.help, " "), code, stderr, stdout, strings.Join(tc.same, " "), want)
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"help", "deplyo"}, `speech-infra: help: unknown command "deplyo": did you mean "deploy"? see speech-infra --help`},
		{[]string{"help", "local", "stauts"}, `speech-infra: help: unknown command "stauts": did you mean "status"? see speech-infra local --help`},
		{[]string{"local", "help", "stpo"}, `speech-infra: local help: unknown command "stpo": did you mean "stop"? see speech-infra local --help`},
	} {
		stdout, stderr, code := invoke(t, tc.args...)
		if code != 2 || stdout != "" || strings.TrimSpace(stderr) != tc.want {
			t.Errorf("speech-infra %s: exit %d, stdout %q, stderr %q; want exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}

// --version prints the version wherever it is given, after `help` too.
func TestSlipVersionAfterHelp(t *testing.T) {
	want := "speech-infra " + cliflags.Version() + "\n"
	for _, args := range [][]string{
		{"help", "--version"},
		{"help", "deploy", "--version"},
		{"help", "--version", "deploy"},
		{"local", "help", "--version"},
		{"local", "--version"},
	} {
		stdout, stderr, code := invoke(t, args...)
		if code != 0 || stdout != want || stderr != "" {
			t.Errorf("speech-infra %s: exit %d, stdout %q, stderr %q; want exit 0 and %q", strings.Join(args, " "), code, stdout, stderr, want)
		}
	}
}

// A --plan that does not exist is a usage error (exit 2) on the emulator as on AWS, with the same words, before
// anything is started: no state directory, no emulator, no deploy.
func TestSlipDeployLocalMissingPlan(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "no-such-plan.json")
	state := filepath.Join(dir, "state")
	// Were the check missing, the deploy would stop at the absent container binary, before an emulator starts.
	stdout, stderr, code := invoke(t, "deploy", "espeak-ng", "--local", "--plan", missing,
		"--state-dir", state, "--container-bin", filepath.Join(dir, "no-container"))
	line := "--plan " + missing + ": stat " + missing + ": no such file or directory: give the plan tts-bench plan wrote, or leave --plan out for artifacts/espeak-ng/plan.json"
	if code != 2 || stdout != "" || !strings.Contains(stderr, line) {
		t.Errorf("deploy --local --plan <missing>: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 2 and the line %q", code, stdout, stderr, line)
	}
	if _, err := os.Stat(state); !os.IsNotExist(err) {
		t.Errorf("deploy --local --plan <missing> touched the state directory %s (%v): it must stop before the emulator", state, err)
	}
	// The same words on AWS: one check for both.
	awsEnv(t, "http://"+closedAddr(t))
	_, awsErr, awsCode := invoke(t, "deploy", "espeak-ng", "--plan", missing, "--app-dir", filepath.Join("..", ".."))
	if awsCode != 2 || !strings.Contains(awsErr, line) {
		t.Errorf("deploy --plan <missing> (AWS): exit %d\n%s\nwant exit 2 and the line %q", awsCode, awsErr, line)
	}
}

// A mistyped model id names the nearest catalog id; one far from every id names none, only the catalog.
func TestSlipModelSuggestion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"deploy", "kokoro-28m"}, `unknown model "kokoro-28m": did you mean kokoro-82m? the catalog has espeak-ng, kokoro-82m, kokoro-82m-twin`},
		{[]string{"deploy", "espeek-ng", "--local", "--state-dir", t.TempDir()}, `unknown model "espeek-ng": did you mean espeak-ng?`},
		{[]string{"destroy", "Kokoro-82M", "--local", "--state-dir", t.TempDir()}, `unknown model "Kokoro-82M": did you mean kokoro-82m?`},
		{[]string{"cache", "kokoro-82m-twni", "--to", t.TempDir()}, `unknown model "kokoro-82m-twni": did you mean kokoro-82m-twin?`},
		{[]string{"deploy", "whisper"}, `unknown model "whisper": the catalog has espeak-ng, kokoro-82m, kokoro-82m-twin`},
	} {
		stdout, stderr, code := invoke(t, tc.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tc.want) {
			t.Errorf("speech-infra %s: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 2 and %q", strings.Join(tc.args, " "), code, stdout, stderr, tc.want)
		}
	}
}
