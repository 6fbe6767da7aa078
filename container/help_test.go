package main

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// --help, -h and help print the usage on stdout and exit 0, on the program and on each subcommand;
// --version prints the build's version. A bad command line still exits 2 on stderr.
func TestHelpAndVersion(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--help"}, "usage: speech-container serve"},
		{[]string{"-h"}, "usage: speech-container serve"},
		{[]string{"help"}, "usage: speech-container serve"},
		{[]string{"serve", "--help"}, "usage: speech-container serve"},
		{[]string{"phonemize", "-h"}, "usage: speech-container phonemize"},
		{[]string{"voices", "--help"}, "usage: speech-container voices"},
		{[]string{"--version"}, "speech-container "},
	} {
		var stdout, stderr bytes.Buffer
		cmd := exec.Command(binPath, tc.args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil || !strings.HasPrefix(stdout.String(), tc.want) || stderr.Len() != 0 {
			t.Errorf("speech-container %q: %v, stdout %q, stderr %q; want exit 0 and stdout starting %q", tc.args, err, stdout.String(), stderr.String(), tc.want)
		}
	}
	cmd := exec.Command(binPath, "bogus")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 || stdout.Len() != 0 {
		t.Errorf("speech-container bogus: %v, stdout %q; want exit 2 and nothing on stdout", err, stdout.String())
	}
}
