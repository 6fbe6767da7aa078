// Package manifest verifies model files against manifest.json (size and
// SHA-256 per file) before anything loads them.
package manifest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// FileName is the manifest's name inside a model directory.
const FileName = "manifest.json"

// Entry is one file of a manifest: its path relative to the model directory,
// its size in bytes and the hex SHA-256 of its content.
type Entry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Manifest lists the files a model directory must hold.
type Manifest struct {
	Files []Entry `json:"files"`
}

// MismatchError says which file failed verification and how.
type MismatchError struct {
	Path   string
	Reason string
}

// Error implements error.
func (e *MismatchError) Error() string {
	return fmt.Sprintf("model file %s does not match %s: %s", e.Path, FileName, e.Reason)
}

// Load reads and checks dir/manifest.json: it must parse, list at least one
// file, and every path must be relative and stay inside dir.
func Load(dir string) (*Manifest, error) {
	p := filepath.Join(dir, FileName)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w (MODEL_DIR must hold the model files and their %s)", p, err, FileName)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("parse %s: %w", p, err)
	}
	if len(m.Files) == 0 {
		return nil, fmt.Errorf("%s lists no files: add a {path, size, sha256} entry per model file", p)
	}
	for _, e := range m.Files {
		clean := filepath.Clean(e.Path)
		if e.Path == "" || filepath.IsAbs(e.Path) || clean == ".." || strings.HasPrefix(clean, "../") {
			return nil, fmt.Errorf("%s: path %q must be relative to the model directory", p, e.Path)
		}
		if len(e.SHA256) != 64 {
			return nil, fmt.Errorf("%s: %s: sha256 must be 64 hex digits", p, e.Path)
		}
	}
	return &m, nil
}

// Verify checks that the manifest lists every path in required (relative to
// dir) and every file of the manifest for size and SHA-256, in the manifest's
// order, and returns a *MismatchError naming the first file that is unlisted,
// missing or differs.
func Verify(dir string, required ...string) (*Manifest, error) {
	m, err := Load(dir)
	if err != nil {
		return nil, err
	}
	listed := make(map[string]bool, len(m.Files))
	for _, e := range m.Files {
		listed[filepath.Clean(e.Path)] = true
	}
	for _, p := range required {
		if !listed[filepath.Clean(p)] {
			return nil, &MismatchError{Path: p, Reason: "the manifest does not list it"}
		}
	}
	for _, e := range m.Files {
		if err := verifyFile(filepath.Join(dir, e.Path), e); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func verifyFile(path string, e Entry) error {
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return &MismatchError{Path: e.Path, Reason: "file is missing"}
		}
		return &MismatchError{Path: e.Path, Reason: err.Error()}
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return &MismatchError{Path: e.Path, Reason: err.Error()}
	}
	if st.Size() != e.Size {
		return &MismatchError{Path: e.Path, Reason: fmt.Sprintf("size is %d bytes, manifest says %d", st.Size(), e.Size)}
	}
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return &MismatchError{Path: e.Path, Reason: err.Error()}
	}
	if got := hex.EncodeToString(h.Sum(nil)); !strings.EqualFold(got, e.SHA256) {
		return &MismatchError{Path: e.Path, Reason: fmt.Sprintf("sha256 is %s, manifest says %s", got, e.SHA256)}
	}
	return nil
}
