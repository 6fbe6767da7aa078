package manifest

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// testdata/modelsync is a model directory written by the root module's modelsync package (the sync that
// fills the weights bucket and `speech-infra cache`), regenerated and compared byte for byte by its
// TestGoldenModelDirMatchesTheContainersTestdata. Verifying it here with the container's own code proves
// the two sides agree on one manifest format, extra "repo" and "revision" members included.
func TestVerifyAcceptsAModelDirWrittenByModelsync(t *testing.T) {
	m, err := Verify("testdata/modelsync", "onnx/model.onnx", "voices/af.bin")
	if err != nil {
		t.Fatalf("Verify: %v", err)
	}
	if len(m.Files) != 5 {
		t.Fatalf("files = %d, want 5", len(m.Files))
	}

	// The same directory with one byte changed is refused, naming the file.
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS("testdata/modelsync")); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "voices", "bf.bin")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	b[100] ^= 1
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	var mm *MismatchError
	if _, err := Verify(dir); !errors.As(err, &mm) || mm.Path != "voices/bf.bin" {
		t.Fatalf("Verify(corrupted) = %v, want a mismatch for voices/bf.bin", err)
	}
}
