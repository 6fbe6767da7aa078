package main

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

var committed = filepath.Join("..", "..", "..", "testdata", "plans")

// The committed fixtures are exactly what the generator writes today: a change to the capacity package that
// alters a plan shows up here, and `go run ./capacity/internal/fixturegen` brings them up to date.
func TestCommittedFixturesAreCurrent(t *testing.T) {
	dir := t.TempDir()
	if err := Generate(dir); err != nil {
		t.Fatal(err)
	}
	want, got := files(t, dir), files(t, committed)
	if len(want) != len(got) {
		t.Fatalf("generated %d files, committed %d: run go run ./capacity/internal/fixturegen", len(want), len(got))
	}
	for rel, data := range want {
		if !bytes.Equal(got[rel], data) {
			t.Errorf("testdata/plans/%s is stale: run go run ./capacity/internal/fixturegen from the repository root", rel)
		}
	}
}

func files(t *testing.T, root string) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		data, err := os.ReadFile(path)
		out[filepath.ToSlash(rel)] = data
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Each case is what it claims: digests beside the plan match except in tampered, the fingerprint matches
// the catalog's kokoro-82m except in fingerprint-mismatch, and the verdicts and flags differ where promised.
func TestFixtureCases(t *testing.T) {
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	m, err := cat.Get("kokoro-82m")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range Cases {
		names = append(names, c.Name)
		dir := filepath.Join(committed, c.Name)
		p, err := capacity.LoadPlan(filepath.Join(dir, capacity.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		if errs := p.Verify(); len(errs) > 0 {
			t.Errorf("%s: plan does not verify: %v", c.Name, errs)
		}
		qd, _ := capacity.FileDigest(filepath.Join(dir, capacity.QMaxFile))
		if p.Measured && (qd == p.Inputs.QMaxSHA256) == (c.Name == "tampered") {
			t.Errorf("%s: qmax digest match is %v", c.Name, qd == p.Inputs.QMaxSHA256)
		}
		fp := p.Fingerprint
		if fp.Model != m.ID || fp.ModelRevision != m.Revision() || fp.InstanceType != m.InstanceType ||
			fp.SLOTTFABMs != m.SLO.TTFABMs || fp.SLOPercentile != m.SLO.Percentile || fp.Transport != capacity.TransportSageMakerStream {
			t.Errorf("%s: fingerprint %+v does not match the catalog", c.Name, fp)
		}
		if (fp.ContainerDigest == ContainerDigest) == (c.Name == "fingerprint-mismatch") {
			t.Errorf("%s: container digest %s", c.Name, fp.ContainerDigest)
		}
		if p.Feasible() == (c.Name == "infeasible") || p.Measured == (c.Name == "what-if") || p.Inputs.DryRun != (c.Name == "dry-run") {
			t.Errorf("%s: verdict %s, measured %v, dry run %v", c.Name, p.Verdict, p.Measured, p.Inputs.DryRun)
		}
	}
	if !capacity.ValidDigest(ContainerDigest) || !capacity.ValidDigest(OtherContainerDigest) || ContainerDigest == OtherContainerDigest {
		t.Fatal("the fixture digests must be two distinct sha256:<hex> digests")
	}
	if len(names) != 6 {
		t.Fatalf("cases %v: want the six gate branches", names)
	}
}
