package modelsync

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"strings"
)

// Dir is a local directory destination (`speech-infra cache --to DIR`). Every write goes through an
// os.Root, so a symbolic link inside the directory cannot send a file outside it; a file is written to a
// temporary name in its final directory, synced, and renamed into place only after verification.
type Dir struct {
	// Root is the directory; it is created when missing.
	Root string
}

// String implements Destination.
func (d Dir) String() string { return d.Root }

func (d Dir) open() (*os.Root, error) {
	if err := os.MkdirAll(d.Root, 0o755); err != nil {
		return nil, fmt.Errorf("create %s: %w", d.Root, err)
	}
	return os.OpenRoot(d.Root)
}

// Lookup implements Destination: the file is present when it is a regular file of the right size whose
// content hashes to what the tree states (SHA-256 for LFS files, the git blob id otherwise).
func (d Dir) Lookup(_ context.Context, f File) (string, bool, error) {
	root, err := d.open()
	if err != nil {
		return "", false, err
	}
	defer root.Close()
	st, err := root.Lstat(f.Path)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && (!st.Mode().IsRegular() || st.Size() != f.Size)) {
		return "", false, nil
	}
	if err != nil {
		return "", false, err
	}
	r, err := root.Open(f.Path)
	if err != nil {
		return "", false, err
	}
	defer r.Close()
	sha, git := sha256.New(), sha1.New()
	fmt.Fprintf(git, "blob %d\x00", f.Size)
	if _, err := io.Copy(io.MultiWriter(sha, git), r); err != nil {
		return "", false, err
	}
	sum := hex.EncodeToString(sha.Sum(nil))
	if f.LFS() {
		return sum, strings.EqualFold(sum, f.SHA256), nil
	}
	return sum, strings.EqualFold(hex.EncodeToString(git.Sum(nil)), f.GitOID), nil
}

// Put implements Destination.
func (d Dir) Put(_ context.Context, f File, body io.Reader, verify func() (string, error)) (err error) {
	root, err := d.open()
	if err != nil {
		return err
	}
	defer root.Close()
	if dir := path.Dir(f.Path); dir != "." {
		if err := root.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("create %s in %s: %w", dir, d.Root, err)
		}
	}
	tmp := path.Join(path.Dir(f.Path), "."+path.Base(f.Path)+".modelsync-partial")
	w, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("create %s in %s: %w", tmp, d.Root, err)
	}
	defer func() {
		if err != nil {
			w.Close()
			root.Remove(tmp)
			var mm *MismatchError
			if errors.As(err, &mm) {
				root.Remove(f.Path)
			}
		}
	}()
	buf := make([]byte, 1<<20)
	if _, err := io.CopyBuffer(w, body, buf); err != nil {
		return fmt.Errorf("write %s: %w", f.Path, err)
	}
	if _, err := verify(); err != nil {
		return err
	}
	if err := w.Sync(); err != nil {
		return fmt.Errorf("write %s: %w", f.Path, err)
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("write %s: %w", f.Path, err)
	}
	if err := root.Rename(tmp, f.Path); err != nil {
		return fmt.Errorf("rename %s into place: %w", f.Path, err)
	}
	return nil
}

// PutManifest implements Destination.
func (d Dir) PutManifest(ctx context.Context, data []byte) error {
	root, err := d.open()
	if err != nil {
		return err
	}
	defer root.Close()
	tmp := "." + ManifestName + ".modelsync-partial"
	w, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	_, err = w.Write(data)
	if err == nil {
		err = w.Sync()
	}
	if cerr := w.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, ManifestName)
	}
	if err != nil {
		root.Remove(tmp)
	}
	return err
}
