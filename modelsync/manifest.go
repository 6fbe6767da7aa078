package modelsync

import (
	"bytes"
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

// Manifest is manifest.json: the files of a synced model with size and SHA-256, plus where they come from.
// Its "files" array is exactly what the inference container's internal/manifest package reads and verifies
// at start (that decoder ignores the extra "repo" and "revision" members); the golden test in this package
// and container/internal/manifest's test check the same bytes.
type Manifest struct {
	// Repo is the Hugging Face repository, owner/name.
	Repo string `json:"repo"`
	// Revision is the pinned commit the files come from.
	Revision string `json:"revision"`
	// Files are the model files, sorted by path.
	Files []Entry `json:"files"`
}

// Entry is one file of a manifest: path relative to the model directory, size in bytes, hex SHA-256.
type Entry struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Encode returns the manifest as indented JSON with a final newline.
func (m *Manifest) Encode() ([]byte, error) {
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("modelsync: encode %s: %w", ManifestName, err)
	}
	return append(data, '\n'), nil
}

// VerifyDir checks dir as the inference container does before it loads a model: dir/manifest.json parses,
// lists at least one file, every path is relative and inside dir, every sha256 is 64 hex digits, and every
// listed file has the stated size and SHA-256. It returns the manifest or an error naming the first
// file that differs.
func VerifyDir(dir string) (*Manifest, error) {
	p := filepath.Join(dir, ManifestName)
	data, err := os.ReadFile(p)
	if err != nil {
		return nil, fmt.Errorf("verify %s: %w", dir, err)
	}
	var m Manifest
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&m); err != nil {
		return nil, fmt.Errorf("verify %s: parse %s: %w", dir, p, err)
	}
	if len(m.Files) == 0 {
		return nil, fmt.Errorf("verify %s: %s lists no files", dir, p)
	}
	for _, e := range m.Files {
		if strings.IndexFunc(e.Path, isControl) >= 0 {
			return nil, fmt.Errorf("verify %s: %s: path %q holds a control character: refusing a name that would be printed raw", dir, p, e.Path)
		}
		if e.Path == "" || !filepath.IsLocal(e.Path) {
			return nil, fmt.Errorf("verify %s: %s: path %q must be relative to the model directory", dir, p, e.Path)
		}
		if !isHex(e.SHA256, 64) {
			return nil, fmt.Errorf("verify %s: %s: %s: sha256 must be 64 hex digits", dir, p, e.Path)
		}
	}
	for _, e := range m.Files {
		sum, n, err := hashFile(filepath.Join(dir, e.Path))
		if err != nil {
			return nil, fmt.Errorf("verify %s: %s: %w", dir, e.Path, err)
		}
		if n != e.Size {
			return nil, fmt.Errorf("verify %s: %s: size is %d bytes, %s says %d: run the sync again", dir, e.Path, n, ManifestName, e.Size)
		}
		if !strings.EqualFold(sum, e.SHA256) {
			return nil, fmt.Errorf("verify %s: %s: sha256 is %s, %s says %s: run the sync again", dir, e.Path, sum, ManifestName, e.SHA256)
		}
	}
	return &m, nil
}

// hashFile returns the hex SHA-256 and size of a regular file.
func hashFile(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return "", 0, err
	}
	if !st.Mode().IsRegular() {
		return "", 0, errors.New("not a regular file")
	}
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return "", 0, err
	}
	return hex.EncodeToString(h.Sum(nil)), n, nil
}
