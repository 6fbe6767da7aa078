// Package atomicfile replaces a file so that readers, other writers and a crash see either the old file or
// the whole new one, never a mix or a part. The capacity artifacts, the emulator's state, discovery and
// credentials files, qmax's records (File) and the freeze journals (CreateNew, Remove) are all written
// through it.
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
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	defer f.Discard()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Commit()
}

// File is the next version of a file, written in a hidden temporary file beside it (".<name>.tmp-<digits>")
// that readers never see: Commit puts it in place whole, as WriteFile does, and Discard removes it. It is
// for what is too large to hold in memory, such as the records of a long measurement, streamed as they
// come. A File is not safe for concurrent use.
type File struct {
	path string
	mode fs.FileMode
	tmp  *os.File
	done bool
}

// Create starts the next version of path. The mode it will get is WriteFile's: the permission bits of the
// regular file it replaces, else perm. The directory must exist.
func Create(path string, perm fs.FileMode) (*File, error) {
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
		return nil, fmt.Errorf("write %s: create a temporary file beside it: %w", path, err)
	}
	return &File{path: path, mode: mode, tmp: tmp}, nil
}

// Write appends p to the next version.
func (f *File) Write(p []byte) (int, error) { return f.tmp.Write(p) }

// Name is the temporary file's name.
func (f *File) Name() string { return f.tmp.Name() }

// Commit syncs the temporary file to disk, closes it, gives it its mode, renames it over the path and syncs
// the directory, so that the new name itself survives a crash. On an error before the rename the temporary
// file is removed and the path is left as it was. A File commits at most once.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("write %s: already committed or discarded", f.path)
	}
	f.done = true
	renamed := false
	defer func() {
		if !renamed {
			_ = f.tmp.Close() // a second Close only returns os.ErrClosed
			_ = os.Remove(f.tmp.Name())
		}
	}()
	if err := f.tmp.Sync(); err != nil {
		return fmt.Errorf("write %s: sync: %w", f.path, err)
	}
	if err := f.tmp.Close(); err != nil {
		return fmt.Errorf("write %s: close: %w", f.path, err)
	}
	// Chmod by name, not through the closed descriptor: CreateTemp made the file 0600.
	if err := os.Chmod(f.tmp.Name(), f.mode); err != nil {
		return fmt.Errorf("write %s: set mode %v: %w", f.path, f.mode, err)
	}
	if err := os.Rename(f.tmp.Name(), f.path); err != nil {
		return fmt.Errorf("write %s: rename into place: %w", f.path, err)
	}
	renamed = true
	if err := syncDir(filepath.Dir(f.path)); err != nil {
		return fmt.Errorf("write %s: the new file is in place, but syncing its directory failed, so it may not survive a crash: %w", f.path, err)
	}
	return nil
}

// Discard removes the temporary file and leaves the path as it was; after Commit it does nothing. It is
// safe to defer.
func (f *File) Discard() {
	if f.done {
		return
	}
	f.done = true
	_ = f.tmp.Close()
	_ = os.Remove(f.tmp.Name())
}

// CreateNew writes data to path atomically and exclusively: the whole file, synced, appears at path, or
// nothing does. When path exists it is left alone and the error wraps fs.ErrExist, so of two writers
// racing to create one file exactly one gets it (a freeze journal). The file gets perm exactly; the
// directory must exist.
func CreateNew(path string, data []byte, perm fs.FileMode) error {
	dir, base := filepath.Split(path)
	if dir == "" {
		dir = "."
	}
	tmp, err := os.CreateTemp(dir, "."+base+".tmp-*")
	if err != nil {
		return fmt.Errorf("write %s: create a temporary file beside it: %w", path, err)
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(data)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), perm.Perm())
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	// A hard link, unlike a rename, fails when the name exists: the exclusive step. The temporary name
	// is removed after it either way.
	if err := os.Link(tmp.Name(), path); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("write %s: the new file is in place, but syncing its directory failed, so it may not survive a crash: %w", path, err)
	}
	return nil
}

// Remove removes path and syncs its directory, so that the removal survives a crash; a missing path is
// no error.
func Remove(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil {
		return fmt.Errorf("remove %s: sync its directory: %w", path, err)
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

// Writable says, as an error, why an atomic write of path (a temporary file beside it, renamed over it) would
// fail: path is a directory, a directory on its way is a file, or no file can be created in the nearest
// directory that exists (the write creates the missing ones below it). It probes with a temporary file that
// it removes, and creates no directory. Commands call it before long work, so that the work does not end
// unable to write its result.
func Writable(path string) error {
	if info, err := os.Stat(path); err == nil && info.IsDir() {
		return fmt.Errorf("%s is a directory", path)
	}
	dir := filepath.Dir(path)
	for {
		info, err := os.Stat(dir)
		if err == nil {
			if !info.IsDir() {
				return fmt.Errorf("%s is not a directory", dir)
			}
			break
		}
		// Missing, or below a file: the parent says which.
		parent := filepath.Dir(dir)
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) || parent == dir {
			return err
		}
		dir = parent
	}
	return probe(dir)
}

// MkdirWritable creates dir (and its parents) when missing and checks that a file can be created in it, with
// a temporary file it removes: a long run checks so before it starts, so that it does not end unable to write.
func MkdirWritable(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	return probe(dir)
}

// probe creates a temporary file in dir and removes it. Its error names dir and why, not the probe's name.
func probe(dir string) error {
	f, err := os.CreateTemp(dir, ".atomicfile-probe-*")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("cannot write in %s: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	return os.Remove(name)
}
