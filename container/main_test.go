package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// binPath is the built speech-container binary the process tests run:
// $SPEECH_CONTAINER_BIN (make container-test sets it) or one built here.
var binPath string

func TestMain(m *testing.M) {
	binPath = os.Getenv("SPEECH_CONTAINER_BIN")
	if binPath == "" {
		dir, err := os.MkdirTemp("", "speech-container-test")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		binPath = filepath.Join(dir, "speech-container")
		build := exec.Command("go", "build", "-o", binPath, ".")
		build.Stdout, build.Stderr = os.Stderr, os.Stderr
		if err := build.Run(); err != nil {
			fmt.Fprintln(os.Stderr, "build speech-container:", err)
			os.Exit(1)
		}
		code := m.Run()
		os.RemoveAll(dir)
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// proc is a running speech-container.
type proc struct {
	cmd    *exec.Cmd
	port   int
	lines  chan string
	mu     sync.Mutex
	stdout []string
	stderr bytes.Buffer
	done   chan error
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func ortLib() string {
	if lib := os.Getenv("ONNXRUNTIME_LIB"); lib != "" {
		return lib
	}
	abs, _ := filepath.Abs("../.cache/onnxruntime/libonnxruntime.so.1")
	return abs
}

func start(t *testing.T, env map[string]string, args ...string) *proc {
	t.Helper()
	if len(args) == 0 {
		args = []string{"serve"}
	}
	p := &proc{port: freePort(t), lines: make(chan string, 1024), done: make(chan error, 1)}
	p.cmd = exec.Command(binPath, args...)
	p.cmd.Env = append(os.Environ(), "SAGEMAKER_BIND_TO_PORT="+strconv.Itoa(p.port), "INSTANCE_ID=proc-test", "ONNXRUNTIME_LIB="+ortLib())
	for k, v := range env {
		p.cmd.Env = append(p.cmd.Env, k+"="+v)
	}
	out, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = &lockedBuffer{p: p}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			p.mu.Lock()
			p.stdout = append(p.stdout, sc.Text())
			p.mu.Unlock()
			select {
			case p.lines <- sc.Text():
			default:
			}
		}
		close(p.lines)
		p.done <- p.cmd.Wait()
	}()
	t.Cleanup(func() {
		if p.cmd.ProcessState == nil {
			p.cmd.Process.Kill()
		}
	})
	return p
}

type lockedBuffer struct{ p *proc }

func (l *lockedBuffer) Write(b []byte) (int, error) {
	l.p.mu.Lock()
	defer l.p.mu.Unlock()
	return l.p.stderr.Write(b)
}

func (p *proc) errText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stderr.String()
}

func (p *proc) outLines() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.stdout...)
}

// waitLine waits for a stdout line containing s.
func (p *proc) waitLine(t *testing.T, s string) {
	t.Helper()
	timeout := time.After(30 * time.Second)
	for {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatalf("process ended before printing %q; stderr:\n%s", s, p.errText())
			}
			if strings.Contains(line, s) {
				return
			}
		case <-timeout:
			t.Fatalf("no %q line in 30s; stderr:\n%s", s, p.errText())
		}
	}
}

func (p *proc) wait(t *testing.T) int {
	t.Helper()
	select {
	case err := <-p.done:
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return ee.ExitCode()
		}
		if err != nil {
			t.Fatal(err)
		}
		return 0
	case <-time.After(40 * time.Second):
		t.Fatalf("process did not exit; stderr:\n%s", p.errText())
	}
	return -1
}

func (p *proc) url(path string) string { return fmt.Sprintf("http://127.0.0.1:%d%s", p.port, path) }

func (p *proc) post(body string) (int, []byte, error) {
	res, err := http.Post(p.url("/invocations"), "application/json", strings.NewReader(body))
	if err != nil {
		return 0, nil, err
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return res.StatusCode, b, err
}

func (p *proc) ping() int {
	res, err := http.Get(p.url("/ping"))
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

var stageRE = regexp.MustCompile(`^=== STAGE ([a-z_]+) t=(\S+) ===$`)

func TestStageLinesAndCleanExit(t *testing.T) {
	p := start(t, map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "5"})
	p.waitLine(t, "STAGE ready")
	if got := p.ping(); got != 200 {
		t.Errorf("ping after ready = %d", got)
	}
	var names []string
	var prev time.Time
	for _, line := range p.outLines() {
		m := stageRE.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		ts, err := time.Parse(time.RFC3339Nano, m[2])
		if err != nil || ts.Location() != time.UTC || !strings.HasSuffix(m[2], "Z") || !strings.Contains(m[2], ".") {
			t.Errorf("stage time %q is not RFC 3339 UTC with fractional seconds: %v", m[2], err)
		}
		if ts.Before(prev) {
			t.Errorf("stage %s at %s is before the previous stage", m[1], m[2])
		}
		prev = ts
		names = append(names, m[1])
	}
	want := []string{"container_started", "weights_verified", "engine_loaded", "warmup_done", "ready"}
	if strings.Join(names, ",") != strings.Join(want, ",") {
		t.Errorf("stages = %v, want %v", names, want)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	if code := p.wait(t); code != 0 {
		t.Errorf("exit status %d after SIGTERM, want 0", code)
	}
}

func TestManifestMismatchRefusesToStart(t *testing.T) {
	dir := t.TempDir()
	src := "testdata/tiny_kokoro"
	filepath.Walk(src, func(path string, info os.FileInfo, err error) error {
		rel, _ := filepath.Rel(src, path)
		if info.IsDir() {
			return os.MkdirAll(filepath.Join(dir, rel), 0o755)
		}
		b, _ := os.ReadFile(path)
		return os.WriteFile(filepath.Join(dir, rel), b, 0o644)
	})
	voice := filepath.Join(dir, "voices", "af_heart.bin")
	b, _ := os.ReadFile(voice)
	b[1000] ^= 0xFF // same size, different content
	os.WriteFile(voice, b, 0o644)

	p := start(t, map[string]string{"ENGINE": "kokoro", "MODEL_DIR": dir})
	code := p.wait(t)
	if code != 1 {
		t.Errorf("exit status %d, want 1", code)
	}
	if e := p.errText(); !strings.Contains(e, "voices/af_heart.bin") || !strings.Contains(e, "sha256") {
		t.Errorf("stderr does not name the file and the mismatch:\n%s", e)
	}
	for _, line := range p.outLines() {
		if strings.Contains(line, "weights_verified") || strings.Contains(line, "STAGE ready") {
			t.Errorf("printed %q despite the mismatch", line)
		}
	}
}

// emfDepth waits for an EMF line reporting QueueDepth n.
func (p *proc) waitDepth(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case line, ok := <-p.lines:
			if !ok {
				t.Fatal("process ended")
			}
			var m struct{ QueueDepth *int }
			if json.Unmarshal([]byte(line), &m) == nil && m.QueueDepth != nil && *m.QueueDepth == n {
				return
			}
		case <-time.After(time.Second):
		}
	}
	t.Fatalf("queue depth never reached %d", n)
}

func TestSIGTERMDrainsInFlightRequests(t *testing.T) {
	p := start(t, map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "1500", "ENGINE_WORKERS": "2",
		"METRICS_INTERVAL": "20ms", "SHUTDOWN_GRACE": "20s"})
	p.waitLine(t, "STAGE ready")
	type result struct {
		status int
		n      int
		err    error
	}
	results := make(chan result, 2)
	for range 2 {
		go func() {
			s, b, err := p.post(`{"text":"One sentence. Two sentences."}`)
			results <- result{s, len(b), err}
		}()
	}
	p.waitDepth(t, 2)
	p.cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(5 * time.Second)
	for p.ping() != 503 {
		if time.Now().After(deadline) {
			t.Fatal("/ping never turned 503 after SIGTERM")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if s, b, err := p.post(`{"text":"late."}`); err != nil || s != 503 || !strings.Contains(string(b), "shutting_down") {
		t.Errorf("request during drain: %d %s %v", s, b, err)
	}
	// 13 + 14 runes of calibration audio: 1440 samples each, 2 bytes, plus the header.
	want := 44 + (13+14)*1440*2
	for range 2 {
		r := <-results
		if r.err != nil || r.status != 200 || r.n != want {
			t.Errorf("in-flight request: status %d, %d bytes (want %d), err %v", r.status, r.n, want, r.err)
		}
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("exit status %d after drain, want 0", code)
	}
}

func TestQueueSaturationOnTheBinary(t *testing.T) {
	p := start(t, map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "4000", "ENGINE_WORKERS": "50", "QUEUE_MAX_DEPTH": "50"})
	p.waitLine(t, "STAGE ready")
	var wg sync.WaitGroup
	statuses := make(chan string, 51)
	for range 51 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, b, err := p.post(`{"text":"Slow."}`)
			if err != nil {
				statuses <- err.Error()
				return
			}
			if s == 503 {
				statuses <- strings.TrimSpace(string(b))
				return
			}
			statuses <- strconv.Itoa(s)
		}()
	}
	wg.Wait()
	close(statuses)
	counts := map[string]int{}
	for s := range statuses {
		counts[s]++
	}
	want := map[string]int{"200": 50, `{"error":"queue_saturated","queue_depth":50,"max_queue_depth":50}`: 1}
	if fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("outcomes = %v, want %v", counts, want)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t)
}

func TestUsage(t *testing.T) {
	p := start(t, nil, "serve", "extra")
	if code := p.wait(t); code != 2 {
		t.Errorf("exit status %d for bad arguments, want 2", code)
	}
	if !strings.Contains(p.errText(), "usage: speech-container serve") {
		t.Errorf("stderr:\n%s", p.errText())
	}
}

// TestBindAddressOnTheBinary: SAGEMAKER_BIND_TO_ADDRESS=127.0.0.1 binds
// loopback only (the emulator's instances, whose /invocations takes no key);
// an invalid value stops the start with exit 2 naming the variable; an
// address not on this host stops it with exit 1 naming both variables.
func TestBindAddressOnTheBinary(t *testing.T) {
	p := start(t, map[string]string{"ENGINE": "calibration", "CALIBRATION_SEGMENT_MS": "5", "SAGEMAKER_BIND_TO_ADDRESS": "127.0.0.1"})
	p.waitLine(t, "STAGE ready")
	if p.ping() != 200 {
		t.Fatalf("/ping on 127.0.0.1: %d", p.ping())
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp6", p.cmd.Process.Pid))
	if err == nil && strings.Contains(string(b), fmt.Sprintf(":%04X 00000000000000000000000000000000:0000 0A", p.port)) {
		t.Errorf("the port %d is bound on :: as well", p.port)
	}
	b, err = os.ReadFile(fmt.Sprintf("/proc/%d/net/tcp", p.cmd.Process.Pid))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), fmt.Sprintf("0100007F:%04X 00000000:0000 0A", p.port)) || strings.Contains(string(b), fmt.Sprintf("00000000:%04X 00000000:0000 0A", p.port)) {
		t.Errorf("port %d is not listening on 127.0.0.1 alone:\n%s", p.port, b)
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	p.wait(t)

	for _, v := range []string{"localhost", "127.0.0.1:80", "[::1]"} {
		p := start(t, map[string]string{"ENGINE": "calibration", "SAGEMAKER_BIND_TO_ADDRESS": v})
		if code := p.wait(t); code != 2 || !strings.Contains(p.errText(), fmt.Sprintf("SAGEMAKER_BIND_TO_ADDRESS=%q: use an IP address", v)) {
			t.Errorf("SAGEMAKER_BIND_TO_ADDRESS=%q: exit %d, stderr %q; want exit 2 naming the variable", v, code, p.errText())
		}
	}
	// 192.0.2.1 (TEST-NET-1) is on no host.
	p = start(t, map[string]string{"ENGINE": "calibration", "SAGEMAKER_BIND_TO_ADDRESS": "192.0.2.1"})
	if code := p.wait(t); code != 1 || !strings.Contains(p.errText(), "SAGEMAKER_BIND_TO_ADDRESS") || !strings.Contains(p.errText(), "SAGEMAKER_BIND_TO_PORT") {
		t.Errorf("an address not on this host: exit %d, stderr %q; want exit 1 naming the variables", code, p.errText())
	}
}
