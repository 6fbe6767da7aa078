package cloud

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

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
		t.Fatalf("%v (run go test ./cloud -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test ./cloud -update after checking the change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// driftReportFixture has one finding of each severity.
var driftReportFixture = DriftReport{Endpoint: "speech-espeak-ng", Variant: "AllTraffic", Expected: "the plan artifacts/espeak-ng/plan.json",
	Findings: []Finding{
		{Severity: SeverityError, Code: FindingScalingSuspended, Subject: "endpoint/speech-espeak-ng/variant/AllTraffic",
			Detail: "scaling is suspended: dynamic scale-in; the fleet will not follow load", Remediation: "tts-bench thaw --endpoint speech-espeak-ng"},
		{Severity: SeverityWarn, Code: FindingAlarmNoData, Subject: "speech-espeak-ng-latency-above-slo", Detail: "INSUFFICIENT_DATA: no datapoints",
			Remediation: "normal for a new or idle endpoint; otherwise check that the endpoint publishes its metrics"},
		{Severity: SeverityInfo, Code: FindingAlarmFiring, Subject: "speech-espeak-ng-scale-in", Detail: "the scale-in alarm is in ALARM"},
	}}

// The drift report, validate's checks and a thaw's result print as the files in testdata/ (tts-bench drift,
// validate and thaw print them so).
func TestRenderGolden(t *testing.T) {
	var b strings.Builder
	if err := RenderDrift(&b, "text", driftReportFixture); err != nil {
		t.Fatal(err)
	}
	golden(t, "drift.txt", b.String())
	b.Reset()
	if err := RenderDrift(&b, "json", driftReportFixture); err != nil {
		t.Fatal(err)
	}
	golden(t, "drift.json", b.String())

	checks := []Check{
		{Name: "minimum instances", Subject: "endpoint/speech-espeak-ng/variant/AllTraffic", Planned: "2", Deployed: "2", Pass: true},
		{Name: "scale-in disabled", Subject: "speech-espeak-ng-scale-out", Planned: "true", Deployed: "false"},
	}
	b.Reset()
	if err := RenderValidation(&b, "text", "speech-espeak-ng", "plan.json", checks); err != nil {
		t.Fatal(err)
	}
	golden(t, "validate.txt", b.String())
	b.Reset()
	if err := RenderValidation(&b, "json", "speech-espeak-ng", "plan.json", checks); err != nil {
		t.Fatal(err)
	}
	golden(t, "validate.json", b.String())

	b.Reset()
	if err := RenderThaw(&b, "text", "speech-espeak-ng", ThawResult{
		Journal:       &Journal{RunID: "qmax-1", PID: 4242, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		JournalPath:   ".state/journals/speech-espeak-ng.json",
		RestoreResult: RestoreResult{Changes: []string{"maximum capacity 1 → 4", "instance count 1 → 2"}, JournalRemoved: true},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := RenderThaw(&b, "text", "speech-espeak-ng", ThawResult{JournalPath: ".state/journals/speech-espeak-ng.json"}, nil); err != nil {
		t.Fatal(err)
	}
	// A thaw that failed (AWS unreachable) changed nothing it knows of: it must not say the endpoint is fine.
	if err := RenderThaw(&b, "text", "speech-espeak-ng", ThawResult{JournalPath: ".state/journals/speech-espeak-ng.json"}, errors.New("unreachable")); err != nil {
		t.Fatal(err)
	}
	golden(t, "thaw.txt", b.String())
	b.Reset()
	if err := RenderThaw(&b, "json", "speech-espeak-ng", ThawResult{
		Journal:       &Journal{RunID: "qmax-1", PID: 4242, Created: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)},
		JournalPath:   ".state/journals/speech-espeak-ng.json",
		RestoreResult: RestoreResult{Changes: []string{"maximum capacity 1 → 4"}, JournalRemoved: true},
	}, nil); err != nil {
		t.Fatal(err)
	}
	if err := RenderThaw(&b, "json", "speech-espeak-ng", ThawResult{JournalPath: ".state/journals/speech-espeak-ng.json"}, errors.New("unreachable")); err != nil {
		t.Fatal(err)
	}
	golden(t, "thaw.json", b.String())
}
