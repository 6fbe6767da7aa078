package plantest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// The plan it writes loads, verifies, and names the digest it was given.
func TestWriteEspeakPlanWritesAPlanThatVerifies(t *testing.T) {
	dir := t.TempDir()
	digest := "sha256:" + strings.Repeat("ab", 32)
	p := WriteEspeakPlan(t, dir, digest)
	got, err := capacity.LoadPlan(filepath.Join(dir, capacity.PlanFile))
	if err != nil {
		t.Fatal(err)
	}
	if errs := got.Verify(); len(errs) > 0 {
		t.Fatalf("the written plan does not verify: %v", errs)
	}
	if got.Fingerprint.Model != "espeak-ng" || got.Fingerprint.Model != p.Fingerprint.Model {
		t.Errorf("model = %q, want espeak-ng", got.Fingerprint.Model)
	}
	if got.Fingerprint.ContainerDigest != digest {
		t.Errorf("container digest = %q, want %q", got.Fingerprint.ContainerDigest, digest)
	}
}

// A set rewritten for another type loads as one measurement of that type, its records still fold to its
// figures, and a plan built from it records the type.
func TestWriteTypeSetIsAMeasurementOfTheType(t *testing.T) {
	dir := t.TempDir()
	WriteTypeSet(t, filepath.Join("..", "..", "testdata", "plans", "valid"), dir, "ml.g6.xlarge")
	ms, err := capacity.LoadMeasurement(filepath.Join(dir, capacity.QMaxFile), filepath.Join(dir, capacity.TTotalFile))
	if err != nil {
		t.Fatal(err)
	}
	if ms.QMax.InstanceType != "ml.g6.xlarge" || ms.TTotal.InstanceType != "ml.g6.xlarge" {
		t.Fatalf("types %s / %s", ms.QMax.InstanceType, ms.TTotal.InstanceType)
	}
	if errs := ms.QMax.CheckRecords(dir); len(errs) > 0 {
		t.Fatalf("records: %v", errs)
	}
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	o := capacity.DefaultOptions(m)
	o.PeakRPS, o.TroughRPS = 80, 10
	p, err := capacity.FromArtifacts(m, ms, o)
	if err != nil {
		t.Fatal(err)
	}
	if p.Fingerprint.InstanceType != "ml.g6.xlarge" || !p.Feasible() {
		t.Fatalf("plan for %s, verdict %s", p.Fingerprint.InstanceType, p.Verdict)
	}
}
