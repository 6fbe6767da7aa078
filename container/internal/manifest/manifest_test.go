package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeDir(t *testing.T, files map[string]string, tweak func(*Manifest)) string {
	t.Helper()
	dir := t.TempDir()
	var m Manifest
	for p, content := range files {
		full := filepath.Join(dir, p)
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256([]byte(content))
		m.Files = append(m.Files, Entry{Path: p, Size: int64(len(content)), SHA256: hex.EncodeToString(sum[:])})
	}
	if tweak != nil {
		tweak(&m)
	}
	b, _ := json.Marshal(m)
	os.WriteFile(filepath.Join(dir, FileName), b, 0o644)
	return dir
}

func TestVerify(t *testing.T) {
	files := map[string]string{"onnx/model.onnx": "model", "voices/a.bin": "voice"}
	if _, err := Verify(writeDir(t, files, nil)); err != nil {
		t.Fatalf("matching files: %v", err)
	}
	cases := []struct {
		name   string
		mutate func(dir string)
		tweak  func(*Manifest)
		want   string
	}{
		{"changed content", func(d string) { os.WriteFile(filepath.Join(d, "voices/a.bin"), []byte("VOICE"), 0o644) }, nil, "voices/a.bin"},
		{"changed size", func(d string) { os.WriteFile(filepath.Join(d, "onnx/model.onnx"), []byte("model!"), 0o644) }, nil, "onnx/model.onnx"},
		{"missing", func(d string) { os.Remove(filepath.Join(d, "voices/a.bin")) }, nil, "voices/a.bin"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := writeDir(t, files, c.tweak)
			c.mutate(dir)
			_, err := Verify(dir)
			var me *MismatchError
			if !errors.As(err, &me) || me.Path != c.want || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Verify = %v, want a mismatch naming %s", err, c.want)
			}
		})
	}
}

func TestLoadRejectsBadManifests(t *testing.T) {
	cases := map[string]func(*Manifest){
		"escaping path": func(m *Manifest) { m.Files[0].Path = "../etc/passwd" },
		"absolute path": func(m *Manifest) { m.Files[0].Path = "/etc/passwd" },
		"short sha":     func(m *Manifest) { m.Files[0].SHA256 = "abc" },
		"no files":      func(m *Manifest) { m.Files = nil },
	}
	for name, tweak := range cases {
		t.Run(name, func(t *testing.T) {
			dir := writeDir(t, map[string]string{"a": "x"}, tweak)
			if _, err := Verify(dir); err == nil {
				t.Fatal("Verify accepted a bad manifest")
			}
		})
	}
	if _, err := Verify(t.TempDir()); err == nil || !strings.Contains(err.Error(), FileName) {
		t.Fatalf("missing manifest: %v", err)
	}
}

func TestTinyKokoroManifestMatches(t *testing.T) {
	m, err := Verify("../../testdata/tiny_kokoro")
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Files) != 4 {
		t.Errorf("tiny model manifest lists %d files, want 4", len(m.Files))
	}
}

func TestVerifyRequiresListedFiles(t *testing.T) {
	dir := writeDir(t, map[string]string{"onnx/model.onnx": "model"}, nil)
	if _, err := Verify(dir, "onnx/model.onnx"); err != nil {
		t.Fatalf("listed file: %v", err)
	}
	os.WriteFile(filepath.Join(dir, "tokenizer.json"), []byte("{}"), 0o644)
	_, err := Verify(dir, "onnx/model.onnx", "tokenizer.json")
	var me *MismatchError
	if !errors.As(err, &me) || me.Path != "tokenizer.json" || !strings.Contains(err.Error(), "does not list") {
		t.Fatalf("Verify = %v, want a mismatch naming the unlisted tokenizer.json", err)
	}
}
