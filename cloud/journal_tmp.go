package cloud

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strings"
	"time"
)

// FindingTempFileLeft: a hidden temporary file that a killed qmax or replay (or a journal write) left
// behind. It holds no result and disturbs nothing, but it takes space and hides from ls.
const FindingTempFileLeft = "temp_file_left"

// tempFileRE matches the hidden temporary names tts-bench writes before renaming into place:
// ".<records>.tmp-<digits>" (qmax's records and a journal, both written through internal/atomicfile),
// ".<records>.<digits>.tmp" (qmax's records before that), ".<records>.tmp<digits>" (replay's records) and
// ".qmax-probe-<digits>", ".replay-probe-<digits>" (the writability probes).
var tempFileRE = regexp.MustCompile(`^\..+\.(\d+\.tmp|tmp\d+|tmp-\d+)$|^\.(qmax|replay)-probe-\d+$`)

// TempFile is a hidden temporary file a killed run left behind.
type TempFile struct {
	// Path is the file; Size its size in bytes; ModTime when it was last written.
	Path    string
	Size    int64
	ModTime time.Time
}

// recentTempFile is how long a temporary file is taken to be a running run's when the system cannot say
// which files are open (no /proc).
const recentTempFile = 30 * time.Minute

// LeftoverTempFiles lists the hidden temporary files of tts-bench (tempFileRE) in dirs (a missing directory
// holds none), sorted by path. A file a running process holds open is left out: the run writing it is alive.
// Where the system cannot say which files are open (no /proc), a file written in the last 30 minutes is
// taken to be in use.
func LeftoverTempFiles(dirs ...string) ([]TempFile, error) {
	var out []TempFile
	var open map[string]bool
	seen := map[string]bool{}
	for _, dir := range dirs {
		if dir == "" {
			continue
		}
		abs, err := filepath.Abs(dir)
		if err != nil {
			return nil, err
		}
		// /proc names open files by their real path.
		if real, err := filepath.EvalSymlinks(abs); err == nil {
			abs = real
		}
		if seen[abs] {
			continue
		}
		seen[abs] = true
		entries, err := os.ReadDir(abs)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("look for temporary files in %s: %w", dir, err)
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !tempFileRE.MatchString(e.Name()) {
				continue
			}
			info, err := e.Info()
			if err != nil {
				continue // removed meanwhile
			}
			p := filepath.Join(abs, e.Name())
			if open == nil {
				open = openFiles()
			}
			if open[p] || (open[procUnavailable] && time.Since(info.ModTime()) < recentTempFile) {
				continue
			}
			out = append(out, TempFile{Path: p, Size: info.Size(), ModTime: info.ModTime()})
		}
	}
	sort.Slice(out, func(i, k int) bool { return out[i].Path < out[k].Path })
	return out, nil
}

// RemoveLeftoverTempFiles removes what LeftoverTempFiles lists in dirs and returns what it removed.
func RemoveLeftoverTempFiles(dirs ...string) ([]TempFile, error) {
	files, err := LeftoverTempFiles(dirs...)
	if err != nil {
		return nil, err
	}
	var removed []TempFile
	var errs []error
	for _, f := range files {
		if err := os.Remove(f.Path); err != nil && !errors.Is(err, fs.ErrNotExist) {
			errs = append(errs, fmt.Errorf("remove the temporary file %s: %w", f.Path, err))
			continue
		}
		removed = append(removed, f)
	}
	return removed, errors.Join(errs...)
}

// procUnavailable is the key openFiles sets when it cannot list open files.
const procUnavailable = "\x00no /proc"

// openFiles lists the files the processes this user can see hold open (Linux: /proc/<pid>/fd).
func openFiles() map[string]bool {
	open := map[string]bool{}
	if runtime.GOOS != "linux" {
		open[procUnavailable] = true
		return open
	}
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		open[procUnavailable] = true
		return open
	}
	procs, err := os.ReadDir("/proc")
	if err != nil {
		open[procUnavailable] = true
		return open
	}
	for _, p := range procs {
		if strings.Trim(p.Name(), "0123456789") != "" {
			continue
		}
		fds, err := os.ReadDir(filepath.Join("/proc", p.Name(), "fd"))
		if err != nil {
			continue // another user's process, or gone
		}
		for _, fd := range fds {
			if target, err := os.Readlink(filepath.Join("/proc", p.Name(), "fd", fd.Name())); err == nil {
				open[target] = true
			}
		}
	}
	return open
}

// sizeText renders a byte count for a finding, e.g. "348 KB".
func sizeText(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
