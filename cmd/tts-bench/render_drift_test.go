package main

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/cloud"
)

// driftReportFixture has one finding of each severity.
var driftReportFixture = cloud.DriftReport{Endpoint: "speech-espeak-ng", Variant: "AllTraffic", Expected: "the plan artifacts/espeak-ng/plan.json",
	Findings: []cloud.Finding{
		{Severity: cloud.SeverityError, Code: cloud.FindingScalingSuspended, Subject: "endpoint/speech-espeak-ng/variant/AllTraffic",
			Detail: "scaling is suspended: dynamic scale-in; the fleet will not follow load", Remediation: "tts-bench thaw --endpoint speech-espeak-ng"},
		{Severity: cloud.SeverityWarn, Code: cloud.FindingAlarmNoData, Subject: "speech-espeak-ng-latency-above-slo", Detail: "INSUFFICIENT_DATA: no datapoints",
			Remediation: "normal for a new or idle endpoint; otherwise check that the endpoint publishes its metrics"},
		{Severity: cloud.SeverityInfo, Code: cloud.FindingAlarmFiring, Subject: "speech-espeak-ng-scale-in", Detail: "the scale-in alarm is in ALARM"},
	}}

func TestRenderGolden(t *testing.T) {
	var b strings.Builder
	if err := renderDriftTable(&b, driftReportFixture); err != nil {
		t.Fatal(err)
	}
	golden(t, "drift.txt", b.String())
	b.Reset()
	if err := renderDriftJSON(&b, driftReportFixture); err != nil {
		t.Fatal(err)
	}
	golden(t, "drift.json", b.String())

	checks := []cloud.Check{
		{Name: "minimum instances", Subject: "endpoint/speech-espeak-ng/variant/AllTraffic", Planned: "2", Deployed: "2", Pass: true},
		{Name: "scale-in disabled", Subject: "speech-espeak-ng-scale-out", Planned: "true", Deployed: "false"},
	}
	b.Reset()
	if err := renderValidateTable(&b, "speech-espeak-ng", "plan.json", checks); err != nil {
		t.Fatal(err)
	}
	golden(t, "validate.txt", b.String())
	b.Reset()
	if err := renderValidateJSON(&b, "speech-espeak-ng", "plan.json", checks); err != nil {
		t.Fatal(err)
	}
	golden(t, "validate.json", b.String())

	b.Reset()
	if err := renderThaw(&b, "speech-espeak-ng", cloud.ThawResult{
		Journal:       &cloud.Journal{RunID: "qmax-1", PID: 4242, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		JournalPath:   ".state/journals/speech-espeak-ng.json",
		RestoreResult: cloud.RestoreResult{Changes: []string{"maximum capacity 1 → 4", "instance count 1 → 2"}, JournalRemoved: true},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := renderThaw(&b, "speech-espeak-ng", cloud.ThawResult{JournalPath: ".state/journals/speech-espeak-ng.json"}, nil); err != nil {
		t.Fatal(err)
	}
	// A thaw that failed (AWS unreachable) changed nothing it knows of: it must not say the endpoint is fine.
	if err := renderThaw(&b, "speech-espeak-ng", cloud.ThawResult{JournalPath: ".state/journals/speech-espeak-ng.json"}, errors.New("unreachable")); err != nil {
		t.Fatal(err)
	}
	golden(t, "thaw.txt", b.String())
	b.Reset()
	if err := renderThawJSON(&b, "speech-espeak-ng", cloud.ThawResult{
		Journal:       &cloud.Journal{RunID: "qmax-1", PID: 4242, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		JournalPath:   ".state/journals/speech-espeak-ng.json",
		RestoreResult: cloud.RestoreResult{Changes: []string{"maximum capacity 1 → 4"}, JournalRemoved: true},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := renderThawJSON(&b, "speech-espeak-ng", cloud.ThawResult{JournalPath: ".state/journals/speech-espeak-ng.json"}, errors.New("unreachable")); err != nil {
		t.Fatal(err)
	}
	golden(t, "thaw.json", b.String())
}

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
