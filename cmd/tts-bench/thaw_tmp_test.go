package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// kill -9 of qmax leaves its hidden temporary records file (.qmax.records…tmp). drift warns about it
// (the plan's directory is where qmax writes), thaw removes it, and drift is then silent about it.
func TestThawRemovesTheRecordsFileAKilledQMaxLeft(t *testing.T) {
	e, _ := frozenEndpoint(t, nil)
	dir := t.TempDir()
	jdir := filepath.Join(dir, "journals")
	journal := filepath.Join(jdir, "speech-espeak-ng.json")
	common := []string{"--model", "espeak-ng", "--local", "--state-dir", e.StateDir, "--journal-dir", jdir, "--container-dir", containerDir,
		"--plan", filepath.Join(dir, "plan.json")}
	cmd, out := startCLI(t, longRun(e, jdir, filepath.Join(dir, "qmax.json"))...)
	waitFile(t, journal, 60*time.Second, out)
	waitOutput(t, out, "step 1: concurrency 1", 60*time.Second)
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitExit(t, cmd, 10*time.Second, out)
	left, _ := filepath.Glob(filepath.Join(dir, ".qmax.records.jsonl.gz.tmp-*"))
	if len(left) != 1 {
		t.Fatalf("kill -9 left %v, want one hidden records file (the attack needs it)", left)
	}
	stdout, stderr, _ := runCLI(t, append([]string{"drift"}, common...)...)
	if !strings.Contains(stdout, "temp_file_left  "+left[0]) || !strings.Contains(stdout, "fix: tts-bench thaw") {
		t.Fatalf("drift does not report %s:\n%s%s", left[0], stdout, stderr)
	}
	stdout, stderr, code := runCLI(t, append([]string{"thaw"}, common...)...)
	if code != 0 || !strings.Contains(stdout, "removed the temporary file "+left[0]) {
		t.Fatalf("thaw: exit %d\n%s%s", code, stdout, stderr)
	}
	if _, err := os.Stat(left[0]); !os.IsNotExist(err) {
		t.Fatalf("%s is still there: %v", left[0], err)
	}
	if stdout, _, _ := runCLI(t, append([]string{"drift"}, common...)...); strings.Contains(stdout, "temp_file_left") {
		t.Fatalf("drift still reports a temporary file:\n%s", stdout)
	}
}
