package cloud_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"

	"github.com/speech-infra/speech-infra/cloud"
)

// A journal's counts are bounded as thaw's --desired is; an edited journal is refused before any call.
func TestThawRefusesAJournalsUnboundedCount(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(1, target(1, 2, cloud.Suspension{}))
	if _, err := cloud.Freeze(t.Context(), w.clients(), freezeOptions(dir)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, worldEndpoint+".json")
	for _, edit := range [][2]string{
		{`"desired_instance_count": 1`, `"desired_instance_count": 1000000`},
		{`"max_capacity": 2`, `"max_capacity": 1000000`},
	} {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		orig := string(data)
		if !strings.Contains(orig, edit[0]) {
			t.Fatalf("the journal lacks %s:\n%s", edit[0], orig)
		}
		if err := os.WriteFile(path, []byte(strings.Replace(orig, edit[0], edit[1], 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		w.calls = nil
		_, err = cloud.Thaw(t.Context(), w.clients(), cloud.ThawOptions{JournalDir: dir, Endpoint: worldEndpoint, Variant: worldVariant, Wait: fast})
		if !errors.Is(err, cloud.ErrJournalInvalid) || !strings.Contains(err.Error(), "100000") || !strings.Contains(err.Error(), "1000000") {
			t.Fatalf("%s: thaw = %v, want a refusal naming the bound", edit[1], err)
		}
		for _, c := range w.calls {
			if c == "UpdateEndpointWeightsAndCapacities" || c == "RegisterScalableTarget" {
				t.Fatalf("%s: thaw changed the endpoint: %v", edit[1], w.calls)
			}
		}
		if err := os.WriteFile(path, []byte(orig), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// After ttotal's kill -9, thaw says it restored the count. ttotal pins the target and asks for one more
// instance; after kill -9, registering the journaled bounds already brings the count back (Application Auto
// Scaling moves a count outside new bounds inside them), so setting the count changes nothing: the "instance
// count" change must still be listed.
func TestThawSaysTheCountTheBoundsRestored(t *testing.T) {
	dir := t.TempDir()
	w := newWorld(1, target(1, 1, cloud.Suspension{}))
	clamp := w.aas.RegisterScalableTargetFn
	w.aas.RegisterScalableTargetFn = func(ctx context.Context, in *applicationautoscaling.RegisterScalableTargetInput, o ...func(*applicationautoscaling.Options)) (*applicationautoscaling.RegisterScalableTargetOutput, error) {
		out, err := clamp(ctx, in, o...)
		if err == nil {
			w.desired = min(max(w.desired, aws.ToInt32(in.MinCapacity)), aws.ToInt32(in.MaxCapacity))
		}
		return out, err
	}
	fo := freezeOptions(dir)
	fo.Command = "tts-bench ttotal"
	if _, err := cloud.Freeze(t.Context(), w.clients(), fo); err != nil {
		t.Fatal(err)
	}
	// ttotal asks for one more instance: the pinned target's bounds move to 2, and the count with them. kill -9.
	if _, err := w.aas.RegisterScalableTarget(t.Context(), &applicationautoscaling.RegisterScalableTargetInput{
		MinCapacity: aws.Int32(2), MaxCapacity: aws.Int32(2), SuspendedState: w.target.SuspendedState}); err != nil {
		t.Fatal(err)
	}
	if w.desired != 2 {
		t.Fatalf("the double did not bring the count to the bounds: %d", w.desired)
	}
	res, err := cloud.Thaw(t.Context(), w.clients(), cloud.ThawOptions{JournalDir: dir, Endpoint: worldEndpoint, Variant: worldVariant, Wait: fast})
	if err != nil {
		t.Fatal(err)
	}
	if w.desired != 1 {
		t.Fatalf("thaw left %d instances, want 1", w.desired)
	}
	got := strings.Join(res.Changes, "|")
	if !strings.Contains(got, "instance count 2 → 1") {
		t.Fatalf("changes = %s: want the count it restored", got)
	}
}

// kill -9 of qmax or replay leaves hidden temporary record files (.qmax.records…tmp, 348 KB). Drift
// reports them (a warning naming thaw), thaw removes them; a file a running process holds open is neither.
func TestLeftoverTempFilesAreReportedAndRemoved(t *testing.T) {
	artifacts, journals := t.TempDir(), t.TempDir()
	write := func(dir, name string, n int) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, make([]byte, n), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	left := []string{
		write(artifacts, ".qmax.records.jsonl.gz.2210391.tmp", 348<<10),
		write(artifacts, ".replay-day1-shard-0-of-2.jsonl.gz.tmp88231", 10),
		write(artifacts, ".qmax-probe-123", 0),
		write(journals, "."+worldEndpoint+".json.tmp-4411", 200),
	}
	keep := []string{
		write(artifacts, "qmax.json", 10),
		write(artifacts, ".hidden", 10),
		write(artifacts, "qmax.records.jsonl.gz", 10),
		write(journals, worldEndpoint+".json.bak", 10),
	}
	inUse := write(artifacts, ".qmax.records.jsonl.gz.777.tmp", 10)
	f, err := os.Open(inUse) // a running qmax writing its records
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()

	// drift: a warning per file, naming thaw; the open one is not reported.
	d := &deployed{endpoint: endpointIn("InService", 1)}
	rep, err := cloud.Drift(t.Context(), d.clients(), cloud.DriftOptions{Model: "espeak-ng", Endpoint: worldEndpoint, Variant: worldVariant,
		JournalDir: journals, TempDirs: []string{artifacts}, CatalogInstances: 1, TempFix: "tts-bench thaw --model espeak-ng --plan " + filepath.Join(artifacts, "plan.json")})
	if err != nil {
		t.Fatal(err)
	}
	var reported []string
	for _, fd := range rep.Findings {
		if fd.Code == cloud.FindingTempFileLeft {
			reported = append(reported, fd.Subject)
			// The fix named must remove the file: thaw --endpoint looks in the journal directory only, thaw with
			// the plan in the artifacts directory.
			want := "tts-bench thaw --endpoint"
			if strings.HasPrefix(fd.Subject, artifacts) {
				want = "tts-bench thaw --model espeak-ng --plan " + filepath.Join(artifacts, "plan.json")
			}
			if fd.Severity != cloud.SeverityWarn || !strings.Contains(fd.Remediation, want) || !strings.Contains(fd.Remediation, "rm ") && want != "tts-bench thaw --endpoint" {
				t.Errorf("finding %+v: want a warning naming %q", fd, want)
			}
			if strings.HasSuffix(fd.Subject, "2210391.tmp") && !strings.Contains(fd.Detail, "348 KB") {
				t.Errorf("finding %+v: want the size", fd)
			}
		}
	}
	if len(reported) != len(left) {
		t.Fatalf("drift reported %v, want %v", reported, left)
	}
	if !rep.Clean() {
		t.Fatalf("temporary files made drift fail: %+v", rep.Findings)
	}

	// thaw's clean-up removes exactly them.
	removed, err := cloud.RemoveLeftoverTempFiles(journals, artifacts)
	if err != nil || len(removed) != len(left) {
		t.Fatalf("removed %v, %v", removed, err)
	}
	for _, p := range left {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is still there", p)
		}
	}
	for _, p := range append(keep, inUse) {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s was removed: %v", p, err)
		}
	}
}
