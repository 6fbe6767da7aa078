package plantest

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
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
