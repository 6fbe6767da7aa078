package emulator_test

import (
	"errors"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// TestShutdownWhileInstanceStarts stops the emulator while an instance is still starting (its container never
// answers /ping): Run must return only after that process is gone, without racing the goroutine that started it.
func TestShutdownWhileInstanceStarts(t *testing.T) {
	dir := t.TempDir()
	marker := filepath.Join(dir, "pid")
	bin := filepath.Join(dir, "never-ready")
	// The stand-in container records its pid and sleeps: it never serves /ping.
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho $$ > \"$NEVER_READY_PID\"\nexec sleep 600\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("NEVER_READY_PID", marker)
	r := emulatortest.Start(t, emulatortest.StateDir(filepath.Join(dir, "state")), emulatortest.ContainerBin(bin))
	emulatortest.Endpoint(t, r, "speech-never-ready", emulatortest.Instances(1))

	var pid int
	eventually(t, hangBound, "the instance process to start", func() bool {
		b, _ := os.ReadFile(marker) // an unreadable marker leaves b empty, which Atoi refuses
		var err error
		pid, err = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil
	})
	r.Stop()
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("instance process %d still exists after Run returned (kill -0: %v)", pid, err)
	}
	// Stopping is no failure of the endpoint: it is still Creating, and the next start resumes it.
	st, err := emulator.LoadState(filepath.Join(dir, "state"))
	if err != nil {
		t.Fatal(err)
	}
	if ep := st.Endpoints["speech-never-ready"]; ep == nil || ep.Status != emulator.StatusCreating || ep.FailureReason != "" {
		t.Errorf("endpoint after shutdown = %+v, want it still Creating without a failure", ep)
	}
}
