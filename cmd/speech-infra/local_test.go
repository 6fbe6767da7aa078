package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/emulator"
)

// victim starts an unrelated long-running process (sleep) and returns its pid; the test fails if it is gone
// at the end.
func victim(t *testing.T) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		select {
		case <-exited:
			t.Errorf("the unrelated process %d was killed", cmd.Process.Pid)
		default:
			cmd.Process.Kill()
			<-exited
		}
	})
	return cmd.Process.Pid
}

// localEnvFor points the speech-infra commands of this test at state (and a free port), with a container
// binary that exists (no instance is started in these tests).
func localEnvFor(t *testing.T, state string) string {
	t.Helper()
	port := freePort(t)
	t.Setenv("SPEECH_INFRA_STATE_DIR", state)
	t.Setenv("SPEECH_INFRA_PORT", port)
	bin, err := exec.LookPath("true")
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("SPEECH_CONTAINER_BIN", bin)
	return port
}

// A discovery file is not trusted: with the state directory locked by something that does not answer as the
// emulator, and the file naming an unrelated process, `local stop` signals nothing and says why, and `local
// status` fails rather than report a stranger.
func TestStopRefusesUnconfirmedProcess(t *testing.T) {
	state := t.TempDir()
	localEnvFor(t, state)
	pid := victim(t)
	// Something answers on loopback, but not with the emulator's identity.
	stranger := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{"pid":1,"url":"http://127.0.0.1:1","instance":"other"}`))
	}))
	defer stranger.Close()
	lock, err := os.OpenFile(filepath.Join(state, "emulator.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	for _, forged := range []emulator.Info{
		{PID: pid, URL: stranger.URL, Instance: "forged", StateDir: state},
		{PID: pid, URL: "http://127.0.0.1:1", Instance: "forged", StateDir: state},
		{PID: pid, URL: "http://198.51.100.7:4599", Instance: "forged", StateDir: state},
	} {
		b, _ := json.Marshal(forged)
		if err := os.WriteFile(filepath.Join(state, emulator.InfoFile), b, 0o644); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := invoke(t, "local", "stop")
		if code == 0 || !strings.Contains(stderr, "does not answer with its identity") {
			t.Errorf("local stop with %s naming pid %d at %s: exit %d\n%s%s; want a refusal that says the emulator does not answer", emulator.InfoFile, pid, forged.URL, code, out, stderr)
		}
		if out, stderr, code := invoke(t, "local", "status"); code == 0 {
			t.Errorf("local status with a forged %s: exit 0\n%s%s", emulator.InfoFile, out, stderr)
		}
	}
	// Unlocked: nothing runs, whatever the file says.
	syscall.Flock(int(lock.Fd()), syscall.LOCK_UN)
	if out, stderr, code := invoke(t, "local", "stop"); code != 0 || !strings.Contains(out, "no emulator runs") {
		t.Errorf("local stop with no emulator and a forged file: exit %d\n%s%s", code, out, stderr)
	}
}

// A running emulator survives a damaged discovery file: `local status` still finds it (its lock file holds
// a second copy, and the emulator restores the first), and `local stop` with a file naming an unrelated pid
// stops the emulator, the pid it answered itself, not that process.
func TestDamagedDiscoveryFile(t *testing.T) {
	state := t.TempDir()
	localEnvFor(t, state)
	t.Cleanup(func() { invoke(t, "local", "stop") })
	pid := victim(t)
	startEmulatorFor(t, state)
	infoPath := filepath.Join(state, emulator.InfoFile)
	good, err := os.ReadFile(infoPath)
	if err != nil {
		t.Fatal(err)
	}
	var emu emulator.Info
	if err := json.Unmarshal(good, &emu); err != nil {
		t.Fatal(err)
	}
	creds, err := emulator.ReadCredentials(state)
	if err != nil {
		t.Fatal(err)
	}

	for name, damage := range map[string][]byte{"truncated": good[:len(good)/3], "empty": nil, "garbage": []byte("\x00\xff{")} {
		if err := os.WriteFile(infoPath, damage, 0o644); err != nil {
			t.Fatal(err)
		}
		out, stderr, code := invoke(t, "local", "status")
		if code != 0 || !strings.Contains(out, "export AWS_ENDPOINT_URL="+emu.URL+"\n") || !strings.Contains(stderr, "emulator   "+emu.URL) ||
			!strings.Contains(out, "export AWS_ACCESS_KEY_ID="+creds.AccessKeyID+"\n") || !onlyExports(out) {
			t.Errorf("local status with a %s discovery file: exit %d\n%s%s; want the emulator at %s and its key", name, code, out, stderr, emu.URL)
		}
	}

	forged := strings.Replace(string(good), `"pid":`, `"pid":`+strconv.Itoa(pid)+`,"was":`, 1)
	if err := os.WriteFile(infoPath, []byte(forged), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := invoke(t, "local", "stop")
	if code != 0 || !strings.Contains(out, "emulator stopped (pid "+strconv.Itoa(emu.PID)+")") {
		t.Errorf("local stop with a discovery file naming pid %d: exit %d\n%s%s; want the emulator, pid %d, stopped", pid, code, out, stderr, emu.PID)
	}
	if _, stderr, _ := invoke(t, "local", "status"); !strings.Contains(stderr, "not running") {
		t.Errorf("status after stop:\n%s", stderr)
	}
}

// startEmulatorFor starts the emulator of state in the background the way deploy --local does
// (connectEmulator: this test binary re-executed as `local serve`); destroy --local no longer starts one.
func startEmulatorFor(t *testing.T, state string) localEmulator {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	port, err := strconv.Atoi(os.Getenv("SPEECH_INFRA_PORT"))
	if err != nil {
		t.Fatal(err)
	}
	emu, err := connectEmulator(ctx, emulatorSettings{stateDir: state, port: port, containerBin: os.Getenv("SPEECH_CONTAINER_BIN")})
	if err != nil {
		t.Fatalf("start the emulator of %s: %v", state, err)
	}
	return emu
}

// Starts of the emulator made together with none running (connectEmulator, as concurrent deploy --local
// commands make them) all attach to the one emulator that wins the state directory; none fails with "the
// emulator exited at start". Each start runs an emulator process of its own.
func TestConcurrentStartsAttach(t *testing.T) {
	state := t.TempDir()
	localEnvFor(t, state)
	t.Cleanup(func() { invoke(t, "local", "stop") })
	const n = 4
	var wg sync.WaitGroup
	emus := make([]localEmulator, n)
	errs := make([]error, n)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	port, err := strconv.Atoi(os.Getenv("SPEECH_INFRA_PORT"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			emus[i], errs[i] = connectEmulator(ctx, emulatorSettings{stateDir: state, port: port, containerBin: os.Getenv("SPEECH_CONTAINER_BIN")})
		}()
	}
	wg.Wait()
	urls := map[string]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Errorf("start %d: %v", i, errs[i])
			continue
		}
		urls[emus[i].URL] = true
	}
	if len(urls) > 1 {
		t.Errorf("the commands attached to %d emulators: %v", len(urls), urls)
	}
	if out, stderr, code := invoke(t, "local", "status"); code != 0 || !strings.Contains(stderr, "emulator   http://") || !onlyExports(out) {
		t.Errorf("local status: exit %d\n%s%s", code, out, stderr)
	}
	// Stopping right away stops whichever emulator holds the directory, also one that took it over from the
	// first as it stopped.
	if out, stderr, code := invoke(t, "local", "stop"); code != 0 || !strings.Contains(out, "emulator stopped") {
		t.Errorf("local stop: exit %d\n%s%s", code, out, stderr)
	}
	if _, stderr, _ := invoke(t, "local", "status"); !strings.Contains(stderr, "not running") {
		t.Errorf("status after stop:\n%s", stderr)
	}
}

// destroy --local on a fresh state directory says there is nothing to remove and starts no emulator: the
// command runs as its own process of the CLI (this test binary re-executed as the CLI), and afterwards the
// directory holds no lock, discovery or state file and no process names the directory.
func TestDestroyLocalStartsNothing(t *testing.T) {
	state := filepath.Join(t.TempDir(), "fresh")
	localEnvFor(t, state)
	t.Setenv("SPEECH_INFRA_TEST_RUN_CLI", "1")
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "destroy", "espeak-ng", "--local", "--state-dir", state)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		t.Fatalf("destroy --local on a fresh state directory: %v\n%s%s", err, out.String(), errOut.String())
	}
	want := "no emulator runs on " + state + " and its state holds no endpoint speech-espeak-ng: nothing to remove\n"
	if out.String() != want {
		t.Errorf("stdout %q, want %q", out.String(), want)
	}
	for _, f := range []string{"emulator.lock", emulator.InfoFile, "state.json", "emulator.log"} {
		if _, err := os.Stat(filepath.Join(state, f)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v, want no such file: something started an emulator", f, err)
		}
	}
	if _, ok, err := emulator.Running(state); ok || err != nil {
		t.Errorf("emulator.Running(%s) = %v, %v: an emulator runs", state, ok, err)
	}
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil {
			continue // the process ended meanwhile
		}
		if args := strings.Split(string(b), "\x00"); slices.Contains(args, "serve") && strings.Contains(string(b), state) {
			t.Errorf("%s: a process serves %s: %q", p, state, args)
		}
	}
}

// destroy --local with a stopped emulator whose state holds the endpoint refuses (exit 1) without starting
// one, saying how to remove it; a state without the endpoint has nothing to remove (exit 0).
func TestDestroyLocalStoppedState(t *testing.T) {
	state := t.TempDir()
	localEnvFor(t, state)
	if err := os.WriteFile(filepath.Join(state, "state.json"), []byte(`{"endpoints":{"speech-espeak-ng":{}}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := invoke(t, "destroy", "espeak-ng", "--local")
	if code != 1 || !strings.Contains(stderr, "no emulator runs on "+state+", and its state holds endpoint speech-espeak-ng") || !strings.Contains(stderr, "speech-infra local serve --state-dir "+state) {
		t.Errorf("destroy --local with the endpoint in a stopped state: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = invoke(t, "destroy", "kokoro-82m", "--local")
	if code != 0 || !strings.Contains(out, "holds no endpoint speech-kokoro-82m: nothing to remove") {
		t.Errorf("destroy --local of an endpoint the state does not hold: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(filepath.Join(state, "emulator.lock")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("emulator.lock: %v: destroy started an emulator", err)
	}
}
