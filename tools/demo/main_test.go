package main

import (
	"bytes"
	"errors"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// The demo binary follows the exit-code contract of internal/exitcode: -h prints the usage on stdout and exits 0,
// a bad flag or argument exits 2 with the problem on stderr, and nothing is started for either.
func TestDemoExitCodes(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "demo")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cases := []struct {
		args       []string
		code       int
		stdout     string // a substring of stdout ("" for empty stdout)
		stderrWant string // a substring of stderr ("" for empty stderr)
	}{
		{[]string{"-h"}, exitcode.CodeOK, "-time-scale", ""},
		{[]string{"--help"}, exitcode.CodeOK, "-time-scale", ""},
		{[]string{"-no-such-flag"}, exitcode.CodeUsage, "", "flag provided but not defined: -no-such-flag"},
		{[]string{"now"}, exitcode.CodeUsage, "", `unexpected argument "now"`},
		{[]string{"-time-scale", "0"}, exitcode.CodeUsage, "", "-time-scale"},
		{[]string{"-check", filepath.Join(t.TempDir(), "none.log")}, exitcode.CodeUsage, "", "give the file the demo's output was captured in"},
	}
	for _, c := range cases {
		t.Run(strings.Join(c.args, " "), func(t *testing.T) {
			cmd := exec.Command(bin, c.args...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.code, stderr.String())
			}
			if c.stdout == "" && stdout.Len() > 0 || !strings.Contains(stdout.String(), c.stdout) {
				t.Errorf("stdout %q, want it to hold %q", stdout.String(), c.stdout)
			}
			if c.stderrWant == "" && stderr.Len() > 0 || !strings.Contains(stderr.String(), c.stderrWant) {
				t.Errorf("stderr %q, want it to hold %q", stderr.String(), c.stderrWant)
			}
		})
	}
}
