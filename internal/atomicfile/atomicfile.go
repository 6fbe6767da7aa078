// Package atomicfile replaces a file so that readers, other writers and a crash see either the old file or
// the whole new one, never a mix or a part. The capacity artifacts and the emulator's state, discovery and
// credentials files are all written through it.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// WriteFile writes data to path atomically. It creates a temporary file with a unique name in path's
// directory (so concurrent writers never share one, and the rename never crosses a file system), writes
// data, syncs it to disk, closes it, gives it its mode, renames it over path and syncs the directory, so
// that the new name itself survives a crash. On any error before the rename the temporary file is removed
// and path is left as it was.
//
// The file keeps the permission bits of the regular file it replaces; a new file (or one that replaces
// anything else, such as a symbolic link) gets perm, exactly: the process umask does not narrow it.
//
// The directory must exist. The rename makes the last of several concurrent writers win, whole.
func WriteFile(path string, data []byte, perm fs.FileMode) (err error) {
	mode := perm.Perm()
	if info, err := os.Lstat(path); err == nil && info.Mode().IsRegular() {
		mode = info.Mode().Perm()
	}
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: create a temporary file beside it: %w", path, err)
	}
	renamed := false
	defer func() {
		if !renamed {
			_ = tmp.Close() // a second Close only returns os.ErrClosed
			_ = os.Remove(tmp.Name())
		}
	}()
	if _, err := tmp.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", path, err)
	}
	// Chmod by name, not through the closed descriptor: CreateTemp made the file 0600.
	if err := os.Chmod(tmp.Name(), mode); err != nil {
		return fmt.Errorf("write %s: set mode %v: %w", path, mode, err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: rename into place: %w", path, err)
	}
	renamed = true
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: the new file is in place, but syncing its directory failed, so it may not survive a crash: %w", path, err)
	}
	return nil
}

// syncDir flushes a directory's entries to disk. A file system that cannot sync a directory (it answers
// EINVAL or ENOTSUP) has nothing to flush there, so that is not an error.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if errors.Is(err, syscall.EINVAL) || errors.Is(err, syscall.ENOTSUP) {
		err = nil
	}
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
