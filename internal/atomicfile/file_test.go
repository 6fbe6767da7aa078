package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
)

// A File streamed in parts appears whole at Commit, with its mode; until then the old file stays.
func TestFileCommitsWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "records.jsonl")
	if err := os.WriteFile(path, []byte("old\n"), 0o640); err != nil {
		t.Fatal(err)
	}
	f, err := Create(path, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Discard()
	for _, part := range []string{"a\n", "b\n"} {
		if _, err := f.Write([]byte(part)); err != nil {
			t.Fatal(err)
		}
	}
	if b, _ := os.ReadFile(path); string(b) != "old\n" {
		t.Fatalf("before Commit the path holds %q, want the old file", b)
	}
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "a\nb\n" {
		t.Fatalf("after Commit: %q, %v", b, err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o640 {
		t.Errorf("mode = %v, want the replaced file's 0640", info.Mode().Perm())
	}
	if err := f.Commit(); err == nil {
		t.Error("a second Commit succeeded")
	}
	if left := leftovers(t, dir, "records.jsonl"); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// Discard leaves the path as it was and no temporary file.
func TestFileDiscardLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "records.jsonl")
	f, err := Create(path, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write([]byte("partial")); err != nil {
		t.Fatal(err)
	}
	f.Discard()
	f.Discard()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Discard created the path: %v", err)
	}
	if left := leftovers(t, dir); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
}

// CreateNew writes a new file whole with its mode, and refuses an existing one, leaving it alone.
func TestCreateNewIsExclusive(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "journal.json")
	if err := CreateNew(path, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(path); info.Mode().Perm() != 0o600 {
		t.Errorf("mode = %v, want 0600", info.Mode().Perm())
	}
	err := CreateNew(path, []byte("second"), 0o600)
	if !errors.Is(err, fs.ErrExist) {
		t.Fatalf("a second CreateNew: %v, want fs.ErrExist", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first" {
		t.Errorf("the existing file became %q", b)
	}
	if left := leftovers(t, dir, "journal.json"); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Errorf("removing a missing file: %v", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Remove left the file: %v", err)
	}
}
