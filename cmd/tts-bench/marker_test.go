package main

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/models"
)

// The measurement marker: without it, two qmax runs on one endpoint from two journal directories would both
// run, each measuring the other's load, and with --force the second would "restore" a frozen state. A run's
// marker is a tag on the endpoint itself, so a run from any directory or machine sees it.

// markerOf reads the endpoint's measurement marker tag ("" when there is none).
func markerOf(t *testing.T, e *emulatortest.Emulator) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	d, err := e.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-espeak-ng")})
	if err != nil {
		t.Fatal(err)
	}
	out, err := e.SageMaker.ListTags(ctx, &sagemaker.ListTagsInput{ResourceArn: d.EndpointArn})
	if err != nil {
		t.Fatal(err)
	}
	for _, tg := range out.Tags {
		if aws.ToString(tg.Key) == cloud.MarkerTagKey {
			return aws.ToString(tg.Value)
		}
	}
	return ""
}

// freezeAs freezes the endpoint as a qmax run of jdir would (journal, marker, pin) and leaves it frozen.
func freezeAs(t *testing.T, e *emulatortest.Emulator, jdir, runID string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if _, err := cloud.Freeze(ctx, cloud.FreezeClients{SageMaker: e.SageMaker, AutoScaling: e.AutoScaling}, cloud.FreezeOptions{
		JournalDir: jdir, Endpoint: "speech-espeak-ng", Variant: models.VariantName, Instances: 1, RunID: runID, Command: "tts-bench qmax",
		Owner: "alice@machine-a", Duration: time.Hour, Wait: cloud.WaitOptions{Timeout: 60 * time.Second},
	}); err != nil {
		t.Fatal(err)
	}
}

// qmaxQuick is the shortest qmax that freezes: one step at concurrency 1.
func qmaxQuick(e *emulatortest.Emulator, dir, jdir string, extra ...string) []string {
	return append([]string{"qmax", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir,
		"--ladder", "1", "--max-concurrency", "1", "--settle", "1s", "--hold", "2s", "--measure-window", "1s", "--request-timeout", "10s",
		"--slo-ms", "30000", "--stall-budget-ms", "30000", "--rate-fractions", "none", "--min-requests", "1", "--max-client-cpu", "0", "--max-client-lag", "0",
		"--container-dir", containerDir, "--output", filepath.Join(dir, "qmax.json")}, extra...)
}

// A second qmax from another journal directory refuses (exit 1) an endpoint the first run holds, naming its
// run id, owner, start and expiry and how to clear it, with --force too, and changes nothing; thaw of the
// first (its journal directory) restores the endpoint and removes its marker; then the second runs, and its
// own restore removes its own marker.
func TestQMaxRefusesAnotherRunsMarker(t *testing.T) {
	e, before := frozenEndpoint(t, nil)
	dir := t.TempDir()
	jdirA, jdirB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	freezeAs(t, e, jdirA, "qmax-first")
	frozen := readScaling(t, e)
	value := markerOf(t, e)
	m, err := cloud.ParseMarker(value)
	if err != nil || m.RunID != "qmax-first" || m.Owner != "alice@machine-a" {
		t.Fatalf("the first run's marker = %q (%v)", value, err)
	}

	// drift, from any directory, names the run that holds the endpoint.
	stdout, stderr, code := runCLI(t, "drift", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdirB, "--container-dir", containerDir)
	if code != 1 || !strings.Contains(stdout, cloud.FindingMeasurementMarker) || !strings.Contains(stdout, "run qmax-first by alice@machine-a") {
		t.Fatalf("drift of the marked endpoint: exit %d, want 1 with %s naming the run\n%s%s", code, cloud.FindingMeasurementMarker, stdout, stderr)
	}

	for _, force := range []bool{false, true} {
		var extra []string
		if force {
			extra = []string{"--force"} // overrides drift's scaling_suspended and journal findings, never a live marker
		}
		stdout, stderr, code := runCLI(t, qmaxQuick(e, dir, jdirB, extra...)...)
		for _, want := range []string{"run qmax-first by alice@machine-a", "started " + m.Started.Format(time.RFC3339), "expires " + m.Expires.Format(time.RFC3339),
			"tts-bench thaw --endpoint speech-espeak-ng"} {
			if code != 1 || !strings.Contains(stderr, want) {
				t.Fatalf("second qmax (force %v): exit %d, want 1 saying %q\nstdout:\n%s\nstderr:\n%s", force, code, want, stdout, stderr)
			}
		}
		if !strings.Contains(stderr, "--force does not override a live marker") || strings.Contains(stderr, "drift found") {
			t.Fatalf("second qmax (force %v): want the marker's refusal, before drift's\n%s", force, stderr)
		}
		if after := readScaling(t, e); !reflect.DeepEqual(after, frozen) || markerOf(t, e) != value {
			t.Fatalf("the refused run changed the endpoint: %+v (was %+v), marker %q", after, frozen, markerOf(t, e))
		}
		if _, err := os.Stat(filepath.Join(jdirB, "speech-espeak-ng.json")); err == nil {
			t.Fatal("the refused run left a journal")
		}
	}

	stdout, stderr, code = runCLI(t, "thaw", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdirA, "--container-dir", containerDir)
	if code != 0 || !strings.Contains(stdout, "removed the measurement marker of this run (run qmax-first by alice@machine-a") {
		t.Fatalf("thaw of the first run: exit %d\n%s%s", code, stdout, stderr)
	}
	if v := markerOf(t, e); v != "" {
		t.Fatalf("the marker after thaw = %q, want none", v)
	}
	if after := readScaling(t, e); !reflect.DeepEqual(after, before) {
		t.Fatalf("after thaw: %+v, want %+v", after, before)
	}

	// --force here passes drift's target_orphaned (frozenEndpoint's target has no plan); no marker is left to
	// override.
	stdout, stderr, code = runCLI(t, qmaxQuick(e, dir, jdirB, "--force")...)
	if code != 0 || !strings.Contains(stderr, "marked speech-espeak-ng as run qmax-") || !strings.Contains(stderr, "removed the measurement marker of this run") ||
		strings.Contains(stderr, "replaced the expired") {
		t.Fatalf("second qmax after thaw: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if v := markerOf(t, e); v != "" {
		t.Fatalf("the marker after the second run = %q, want none", v)
	}
	if after := readScaling(t, e); !reflect.DeepEqual(after, before) {
		t.Fatalf("after the second run: %+v, want %+v", after, before)
	}
}

// Scaling suspended without a marker (a run of an older tts-bench, or a marker removed by hand) is refused
// even with --force: a journal of it would restore the endpoint frozen. An expired marker is reported and
// refused without --force; thaw without a journal refuses the marked endpoint; qmax --force overrides the
// expired marker, says so, and its restore leaves no marker.
func TestQMaxExpiredMarkerAndSuspendedScaling(t *testing.T) {
	e, before := frozenEndpoint(t, nil)
	dir := t.TempDir()
	jdirA, jdirB := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d, err := e.SageMaker.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-espeak-ng")})
	if err != nil {
		t.Fatal(err)
	}

	freezeAs(t, e, jdirA, "qmax-unmarked")
	if _, err := e.SageMaker.DeleteTags(ctx, &sagemaker.DeleteTagsInput{ResourceArn: d.EndpointArn, TagKeys: []string{cloud.MarkerTagKey}}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code := runCLI(t, qmaxQuick(e, dir, jdirB, "--force")...)
	if code != 1 || !strings.Contains(stderr, "is already suspended") || !strings.Contains(stderr, "--force does not override this") {
		t.Fatalf("qmax --force on suspended scaling without a marker: exit %d, want 1\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if _, stderr, code := runCLI(t, "thaw", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdirA, "--container-dir", containerDir); code != 0 {
		t.Fatalf("thaw: exit %d\n%s", code, stderr)
	}

	expired := cloud.Marker{RunID: "qmax-dead", Owner: "bob@machine-b", PID: 99, Started: time.Now().Add(-3 * time.Hour).UTC().Truncate(time.Second),
		Expires: time.Now().Add(-time.Hour).UTC().Truncate(time.Second)}
	if _, err := e.SageMaker.AddTags(ctx, &sagemaker.AddTagsInput{ResourceArn: d.EndpointArn,
		Tags: []smtypes.Tag{{Key: aws.String(cloud.MarkerTagKey), Value: aws.String(expired.Value())}}}); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, code = runCLI(t, qmaxQuick(e, dir, jdirB)...)
	if code != 1 || !strings.Contains(stderr, "EXPIRED measurement marker of run qmax-dead by bob@machine-b (pid 99)") ||
		!strings.Contains(stderr, "expired at "+expired.Expires.Format(time.RFC3339)) || !strings.Contains(stderr, "run again with --force") {
		t.Fatalf("qmax over an expired marker: exit %d, want 1 naming it\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, stderr, code = runCLI(t, "thaw", "--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdirB, "--container-dir", containerDir)
	if code != 1 || !strings.Contains(stderr, "carries the measurement marker of run qmax-dead") || !strings.Contains(stderr, "--force") {
		t.Fatalf("thaw without a journal of a marked endpoint: exit %d, want 1\n%s%s", code, stdout, stderr)
	}
	if markerOf(t, e) != expired.Value() {
		t.Fatal("the refusals removed the marker")
	}

	stdout, stderr, code = runCLI(t, qmaxQuick(e, dir, jdirB, "--force")...)
	if code != 0 || !strings.Contains(stderr, "warning: --force: replaced the expired measurement marker of run qmax-dead by bob@machine-b") {
		t.Fatalf("qmax --force over an expired marker: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if v := markerOf(t, e); v != "" {
		t.Fatalf("the marker after the forced run = %q, want none", v)
	}
	if after := readScaling(t, e); !reflect.DeepEqual(after, before) {
		t.Fatalf("after the forced run: %+v, want %+v", after, before)
	}
}
