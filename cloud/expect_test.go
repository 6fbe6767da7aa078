package cloud_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/capacity/plantest"
	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/models"
)

// A file left inside container/ that changes the container digest makes the gate refuse the plan, so drift
// must say why (Expect's reasons). A go build output (untracked, not copied by the image build) does not change the digest; an
// untracked file the image build copies does, and drift's reasons name it as untracked.
func TestDriftNamesAnUntrackedFileBehindADigestMismatch(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	repo := t.TempDir()
	dir := filepath.Join(repo, "container")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("..", "container"))); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"init", "-q"}, {"add", "-A"}, {"commit", "-q", "-m", "x"}} {
		cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"}, args...)...)
		cmd.Dir = repo
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	digest, err := capacity.SourceDigest(dir)
	if err != nil {
		t.Fatal(err)
	}
	art := t.TempDir()
	plantest.WriteEspeakPlan(t, art, digest)
	planPath := filepath.Join(art, capacity.PlanFile)
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("espeak-ng")
	if err != nil {
		t.Fatal(err)
	}
	if exp := cloud.Expect(context.Background(), m, planPath, dir, true, 1); exp.Spec == nil {
		t.Fatalf("the clean tree's plan is refused: %v", exp.Reasons)
	}
	// go build -o container/speech-container: the plan still applies.
	if err := os.WriteFile(filepath.Join(dir, "speech-container"), []byte("\x7fELF"), 0o755); err != nil {
		t.Fatal(err)
	}
	if exp := cloud.Expect(context.Background(), m, planPath, dir, true, 1); exp.Spec == nil {
		t.Fatalf("a go build output in container/ made the gate refuse: %v", exp.Reasons)
	}
	// An untracked source file the image build copies: refused, and said so.
	if err := os.WriteFile(filepath.Join(dir, "scratch.go"), []byte("package cloud_test\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	exp := cloud.Expect(context.Background(), m, planPath, dir, true, 1)
	if exp.Spec != nil || !strings.Contains(strings.Join(exp.Reasons, "\n"), "does not track but the image build copies (scratch.go)") {
		t.Fatalf("an untracked copied file: spec %v, reasons %q", exp.Spec != nil, exp.Reasons)
	}
}

// A thaw puts back the plan's bounds when the gate accepts the plan, the catalog's otherwise.
func TestExpectationBounds(t *testing.T) {
	m := models.Model{ID: "espeak-ng", Scaling: models.Scaling{MinInstances: 1, MaxInstances: 4}}
	if b := (cloud.Expectation{PlanPath: "plan.json"}).Bounds(m); b.Min != 1 || b.Max != 4 || b.Source != "the catalog (espeak-ng)" {
		t.Errorf("without a plan: %+v", b)
	}
	spec := &capacity.ScalingSpec{MinInstances: 2, MaxInstances: 6}
	if b := (cloud.Expectation{PlanPath: "plan.json", Spec: spec}).Bounds(m); b.Min != 2 || b.Max != 6 || b.Source != "the plan plan.json" {
		t.Errorf("with the plan: %+v", b)
	}
}
