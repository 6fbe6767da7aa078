package modelsync_test

import (
	"bytes"
	"context"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/speech-infra/speech-infra/modelsync"
)

var update = flag.Bool("update", false, "rewrite the golden model directory under container/internal/manifest/testdata")

// goldenDir is the model directory that container/internal/manifest's test verifies with the container's
// own code: the bytes modelsync writes and the bytes the container checks are the same files.
const goldenDir = "../container/internal/manifest/testdata/modelsync"

// TestGoldenModelDirMatchesTheContainersTestdata syncs a small fake repository into a directory and
// compares every file, manifest.json included, with the golden copy the container's manifest test verifies
// (`go test ./modelsync -run Golden -update` rewrites it).
func TestGoldenModelDirMatchesTheContainersTestdata(t *testing.T) {
	h := newFakeHub(t)
	h.files["onnx/model.onnx"] = bytes.Repeat([]byte("onnx"), 1024) // keep the golden copy small
	h.rev = "1939ad2a8e416c0acfeecc08a694d14ef25f2231"
	dir := t.TempDir()
	if *update {
		if err := os.RemoveAll(goldenDir); err != nil {
			t.Fatal(err)
		}
		dir = goldenDir
	}
	res, err := modelsync.Sync(context.Background(), h.source(), modelsync.Dir{Root: dir}, testOptions(t))
	if err != nil || !res.Done {
		t.Fatalf("Sync: %+v, %v", res, err)
	}
	got, want := readTree(t, dir), readTree(t, goldenDir)
	if len(got) != len(want) {
		t.Fatalf("golden dir has %d files, the sync wrote %d: run go test ./modelsync -run Golden -update", len(want), len(got))
	}
	for p, b := range got {
		if !bytes.Equal(b, want[p]) {
			t.Errorf("%s differs from %s/%s: run go test ./modelsync -run Golden -update and commit both", p, goldenDir, p)
		}
	}
	if _, err := modelsync.VerifyDir(goldenDir); err != nil {
		t.Errorf("VerifyDir(golden): %v", err)
	}
}

func readTree(t *testing.T, root string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		files[filepath.ToSlash(rel)] = b
		return err
	})
	if err != nil {
		t.Fatalf("read %s: %v", root, err)
	}
	return files
}
