//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// helperEnv makes the test binary, started again by TestFailedWriteLeavesOldFileAndNoTemporaryFile, write
// under a file size limit instead of running tests.
const helperEnv = "ATOMICFILE_TEST_WRITE_UNDER_FSIZE_LIMIT"

func TestMain(m *testing.M) {
	if path := os.Getenv(helperEnv); path != "" {
		os.Exit(writeUnderSizeLimit(path))
	}
	os.Exit(m.Run())
}

// writeUnderSizeLimit lowers RLIMIT_FSIZE to 1 KiB, so that writing more to a file fails with EFBIG (the Go
// runtime ignores SIGXFSZ), then writes 64 KiB to path through WriteFile. It prints the error and exits 0
// when the write failed that way.
func writeUnderSizeLimit(path string) int {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		os.Stderr.WriteString("getrlimit: " + err.Error() + "\n")
		return 3
	}
	lim.Cur = 1 << 10
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		os.Stderr.WriteString("setrlimit: " + err.Error() + "\n")
		return 3
	}
	err := WriteFile(path, make([]byte, 64<<10), 0o644)
	if err == nil {
		os.Stderr.WriteString("WriteFile of 64 KiB under a 1 KiB file size limit succeeded\n")
		return 4
	}
	os.Stdout.WriteString(err.Error())
	if !errors.Is(err, syscall.EFBIG) {
		return 5
	}
	return 0
}

func TestFailedWriteLeavesOldFileAndNoTemporaryFile(t *testing.T) {
	// GIVEN a file WHEN a process that may not write more than 1 KiB to a file replaces it with 64 KiB THEN
	// the write fails naming the file, the old file is intact and no temporary file is left.
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	if err := os.WriteFile(path, []byte("old state\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("helper: %v: %s (stdout %q)", err, stderr.String(), out)
	}
	if msg := string(out); !strings.HasPrefix(msg, "write "+path+": ") || !strings.Contains(msg, "file too large") {
		t.Fatalf("error = %q, want one naming %s and saying the file is too large", msg, path)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "old state\n" {
		t.Fatalf("old file reads %q, %v", b, err)
	}
	if left := leftovers(t, dir, "state.json"); len(left) > 0 {
		t.Fatalf("left behind: %v", left)
	}
}
