package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// leftovers returns the names in dir other than keep: temporary files a writer failed to remove.
func leftovers(t *testing.T, dir string, keep ...string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if !slices.Contains(keep, e.Name()) {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestWriteFileReplacesWholeFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	for _, content := range []string{"first\n", "second, longer\n", "3\n", ""} {
		if err := WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != content {
			t.Fatalf("read %q, %v; want %q", got, err, content)
		}
	}
	if left := leftovers(t, dir, "state.json"); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

func TestWriteFileRelativePath(t *testing.T) {
	// A bare file name is written in the working directory, its temporary file too.
	dir := t.TempDir()
	t.Chdir(dir)
	if err := WriteFile("x.json", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(filepath.Join(dir, "x.json")); err != nil || string(got) != "x" {
		t.Fatalf("read %q, %v", got, err)
	}
	if left := leftovers(t, dir, "x.json"); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

// TestConcurrentWritersNeverTear runs writers that each replace the same file with their own content, large
// enough to take many write calls' worth of time, while readers read it: every read must be one writer's
// content, whole. A writer with a fixed temporary name fails this: a second writer truncates the first one's
// temporary file before the first renames it into place.
func TestConcurrentWritersNeverTear(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	const writers, rounds, size = 6, 40, 256 << 10
	contents := make([][]byte, writers)
	for i := range contents {
		contents[i] = bytes.Repeat([]byte{byte('a' + i)}, size-1)
		contents[i] = append(contents[i], '\n')
	}
	if err := WriteFile(path, contents[0], 0o644); err != nil {
		t.Fatal(err)
	}
	whole := func(b []byte) bool {
		for _, c := range contents {
			if bytes.Equal(b, c) {
				return true
			}
		}
		return false
	}
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []string
		reads   int
		stop    = make(chan struct{})
		readers sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < 10 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	for r := 0; r < 2; r++ {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				b, err := os.ReadFile(path)
				if err != nil {
					fail("read: %v", err)
					continue
				}
				if !whole(b) {
					fail("read a torn file: %d bytes, first %q last %q", len(b), b[:min(1, len(b))], b[max(0, len(b)-2):])
				}
				mu.Lock()
				reads++
				mu.Unlock()
			}
		}()
	}
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < rounds; i++ {
				if err := WriteFile(path, contents[w], 0o644); err != nil {
					fail("writer %d: %v", w, err)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d readers' reads; problems:\n%s", reads, strings.Join(errs, "\n"))
	}
	if reads == 0 {
		t.Fatal("the readers read nothing while the writers ran")
	}
	b, err := os.ReadFile(path)
	if err != nil || !whole(b) {
		t.Fatalf("final file: %d bytes, %v", len(b), err)
	}
	if left := leftovers(t, dir, "state.json"); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

func TestFailedRenameLeavesTargetAndNoTemporaryFile(t *testing.T) {
	// GIVEN a path that is a directory holding a file WHEN a file is written over it THEN the write fails
	// naming the path, and the directory, its file and the parent are as they were.
	dir := t.TempDir()
	path := filepath.Join(dir, "plan.json")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	inner := filepath.Join(path, "keep")
	if err := os.WriteFile(inner, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	err := WriteFile(path, []byte("new"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "write "+path+": rename into place") {
		t.Fatalf("WriteFile over a directory = %v, want a rename error naming %s", err, path)
	}
	if b, err := os.ReadFile(inner); err != nil || string(b) != "old" {
		t.Fatalf("the directory's file reads %q, %v", b, err)
	}
	if left := leftovers(t, dir, "plan.json"); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}

func TestMissingDirectoryIsAnErrorNamingThePath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "absent", "state.json")
	err := WriteFile(path, []byte("x"), 0o644)
	if err == nil || !strings.Contains(err.Error(), "write "+path+": create a temporary file beside it") || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("WriteFile into a missing directory = %v", err)
	}
}

func TestModeIsGivenForNewFilesAndPreservedForReplacedOnes(t *testing.T) {
	dir := t.TempDir()
	// A new file gets perm exactly, wider than the usual umask lets os.WriteFile make it.
	fresh := filepath.Join(dir, "fresh")
	if err := WriteFile(fresh, []byte("x"), 0o666); err != nil {
		t.Fatal(err)
	}
	assertMode(t, fresh, 0o666)
	secret := filepath.Join(dir, "secret")
	if err := WriteFile(secret, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	assertMode(t, secret, 0o600)
	// A replaced regular file keeps its mode, whatever perm says.
	if err := os.Chmod(fresh, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(fresh, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	assertMode(t, fresh, 0o640)
	if err := WriteFile(secret, []byte("y"), 0o644); err != nil {
		t.Fatal(err)
	}
	assertMode(t, secret, 0o600)
	// A symbolic link is replaced by a regular file with perm; what it pointed to is untouched.
	target := filepath.Join(dir, "target")
	if err := os.WriteFile(target, []byte("target"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(link, []byte("new"), 0o644); err != nil {
		t.Fatal(err)
	}
	assertMode(t, link, 0o644)
	if b, err := os.ReadFile(target); err != nil || string(b) != "target" {
		t.Fatalf("link target reads %q, %v", b, err)
	}
}

func assertMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !info.Mode().IsRegular() || info.Mode().Perm() != want {
		t.Fatalf("%s has mode %v, want a regular file with %v", filepath.Base(path), info.Mode(), want)
	}
}
