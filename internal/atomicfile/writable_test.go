package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWritable(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path, want string
	}{
		{"a new file", filepath.Join(dir, "out.csv"), ""},
		{"below missing directories", filepath.Join(dir, "a", "b", "out.csv"), ""},
		{"an existing file", file, ""},
		{"a directory", dir, dir + " is a directory"},
		{"a file on its way", filepath.Join(file, "sub", "out.csv"), file + " is not a directory"},
	} {
		err := Writable(c.path)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%s: %v, want nil", c.name, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	if left := leftovers(t, dir, "file"); len(left) > 0 {
		t.Errorf("Writable left %v behind, or created directories", left)
	}
}

// MkdirWritable creates the missing directories and leaves no probe behind; a file in the way is an error.
func TestMkdirWritable(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "a", "b")
	if err := MkdirWritable(sub); err != nil {
		t.Fatal(err)
	}
	if left := leftovers(t, sub); len(left) > 0 {
		t.Errorf("left %v behind", left)
	}
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := MkdirWritable(filepath.Join(file, "sub")); err == nil {
		t.Error("a file in the way: no error")
	}
}

// A directory no file can be created in is named with the reason, not with the probe's file name.
func TestWritableNamesTheDirectory(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root writes in a read-only directory")
	}
	dir := filepath.Join(t.TempDir(), "ro")
	if err := os.Mkdir(dir, 0o555); err != nil {
		t.Fatal(err)
	}
	err := Writable(filepath.Join(dir, "out.csv"))
	if err == nil || !strings.HasPrefix(err.Error(), "cannot write in "+dir+": ") || strings.Contains(err.Error(), "probe") {
		t.Errorf("Writable in a read-only directory: %v", err)
	}
}
