package main

import (
	"strings"
	"testing"
)

// A careless command line is a usage error (exit 2) naming every problem at once, before any AWS call.
func TestDriftThawValidateUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"drift", "--model", ""}, []string{"--model: none given"}},
		{[]string{"drift", "--model", "nope", "--format", "xml", "--local", "--region", "eu-west-1"}, []string{"--model nope", "--format \"xml\"", "leave --region out"}},
		{[]string{"drift", "--model", "espeak-ng", "stray"}, []string{"takes no arguments"}},
		{[]string{"thaw", "--model", ""}, []string{"give --endpoint NAME or --model ID"}},
		{[]string{"thaw", "--endpoint", "../../etc", "--desired", "0"}, []string{"not a SageMaker endpoint name", "--desired 0"}},
		{[]string{"thaw", "--endpoint", "speech-x", "--model", "espeak-ng"}, []string{"disagree"}},
		{[]string{"thaw", "--model", "espeak-ng", "--format", "xml"}, []string{"--format \"xml\" is not a format"}},
		{[]string{"validate", "--model", "espeak-ng", "--plan", "/nonexistent/plan.json"}, []string{"--plan /nonexistent/plan.json"}},
		{[]string{"validate", "--model", "espeak-ng", "--plan", fixtures + "/valid/plan.json"}, []string{"is for model kokoro-82m, not espeak-ng"}},
	} {
		out, errOut, code := runCLI(t, tc.args...)
		if code != 2 || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want exit 2 and no data", tc.args, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errOut, w) {
				t.Errorf("%q: stderr %q does not name %q", tc.args, errOut, w)
			}
		}
	}
}
