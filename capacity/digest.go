package capacity

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
)

// SourceDigest returns a deterministic "sha256:<hex>" over a directory tree: every regular file and symbolic
// link below dir, in sorted slash-separated relative path order, contributes its path, its executable bit and
// its contents (a link its target). Only .git entries are skipped; directories contribute nothing by
// themselves, so an empty directory does not change the digest. The endpoint stack and the local deploy
// record the digest of container/ as the container digest a plan's fingerprint must match.
func SourceDigest(dir string) (string, error) {
	info, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("digest source tree %s: %w", dir, err)
	}
	if !info.IsDir() {
		return "", fmt.Errorf("digest source tree %s: not a directory", dir)
	}
	type entry struct {
		rel  string
		path string
		mode fs.FileMode
	}
	var entries []entry
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Name() == ".git" && path != dir {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil // a submodule's .git file
		}
		if d.IsDir() {
			return nil
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		entries = append(entries, entry{rel: filepath.ToSlash(rel), path: path, mode: info.Mode()})
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("digest source tree %s: %w", dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].rel < entries[j].rel })
	h := sha256.New()
	for _, e := range entries {
		switch {
		case e.mode&fs.ModeSymlink != 0:
			target, err := os.Readlink(e.path)
			if err != nil {
				return "", fmt.Errorf("digest source tree %s: %w", dir, err)
			}
			fmt.Fprintf(h, "link\x00%s\x00%s\x00", e.rel, target)
		case e.mode.IsRegular():
			kind := "file"
			if e.mode&0o111 != 0 {
				kind = "exec"
			}
			fmt.Fprintf(h, "%s\x00%s\x00", kind, e.rel)
			if err := hashFile(h, e.path); err != nil {
				return "", fmt.Errorf("digest source tree %s: %w", dir, err)
			}
		default:
			continue // sockets, devices and pipes have no contents to build from
		}
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// hashFile writes the file's length and contents to w; the length keeps "ab"+"c" apart from "a"+"bc".
func hashFile(w io.Writer, path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "%d\x00", info.Size())
	n, err := io.Copy(w, f)
	if err != nil {
		return err
	}
	if n != info.Size() {
		return fmt.Errorf("%s changed while it was read", path)
	}
	return nil
}
