package harness

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/speech-infra/speech-infra/internal/containerbin"
)

// ContainerBinary returns $SPEECH_CONTAINER_BIN when set, else builds the container (cgo) into
// .cache/bench/speech-container and returns that.
func ContainerBinary(ctx context.Context) (string, error) { return containerbin.Path(ctx, "bench") }

// PingTimeout bounds how long StartContainer waits for the container's /ping to answer 200.
const PingTimeout = 30 * time.Second

// ContainerOutput says where a container's output goes.
type ContainerOutput struct {
	// LogPath, when set, is the file its stdout and stderr go to (created, with its directory); the error of a
	// start that fails quotes the file's tail.
	LogPath string
	// Stderr, when LogPath is empty, is where its stderr goes (nil: nowhere).
	Stderr io.Writer
	// RequestLogs collects the JSON request log lines of its stdout (Container.Logs).
	RequestLogs bool
}

// RequestLog is the part of the container's JSON request log line (container/README.md) the rows use.
type RequestLog struct {
	Msg       string  `json:"msg"`
	Outcome   string  `json:"outcome"`
	Status    int     `json:"status"`
	TotalMs   float64 `json:"total_ms"`
	TTFABMs   float64 `json:"ttfab_ms"`
	QueueWait float64 `json:"queue_wait_ms"`
}

// Container is an inference container process serving on loopback.
type Container struct {
	// URL is its base URL, http://127.0.0.1:<port>.
	URL string
	// LogPath is where its stdout and stderr go ("" when they do not go to a file).
	LogPath string
	proc    *Process
	log     *os.File
	stdout  chan struct{} // closed when its stdout, read for RequestLogs, ends
	mu      sync.Mutex
	logs    []RequestLog
}

// StartContainer runs `bin serve` with env (KEY=VALUE, added to this process's environment) and
// SAGEMAKER_BIND_TO_PORT set to a free port, its output where out says, and returns once GET /ping answers 200
// (within PingTimeout and ctx). A container that exits or never answers is stopped, and the error says so.
func StartContainer(ctx context.Context, bin string, env []string, out ContainerOutput) (*Container, error) {
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("the inference container %s: %w: run `make container-build` first", bin, err)
	}
	port, err := FreePort()
	if err != nil {
		return nil, err
	}
	c := &Container{URL: "http://127.0.0.1:" + strconv.Itoa(port), LogPath: out.LogPath}
	cmd := exec.Command(bin, "serve")
	cmd.Env = append(append(os.Environ(), env...), "SAGEMAKER_BIND_TO_PORT="+strconv.Itoa(port))
	cmd.Stderr = out.Stderr
	if out.LogPath != "" {
		if err := os.MkdirAll(filepath.Dir(out.LogPath), 0o755); err != nil {
			return nil, fmt.Errorf("container log %s: %w", out.LogPath, err)
		}
		if c.log, err = os.Create(out.LogPath); err != nil {
			return nil, fmt.Errorf("container log %s: %w", out.LogPath, err)
		}
		cmd.Stdout, cmd.Stderr = c.log, c.log
	}
	if out.RequestLogs {
		r, w, err := os.Pipe()
		if err != nil {
			c.closeLog()
			return nil, fmt.Errorf("start the container: %w", err)
		}
		cmd.Stdout = w
		defer w.Close() // the container has its own copy: r ends when it exits
		c.stdout = make(chan struct{})
		go c.readRequestLogs(r)
	}
	proc, err := StartProcess(ctx, cmd, c.URL+"/ping", PingTimeout)
	if err != nil {
		c.closeLog()
		more := ""
		switch {
		case out.LogPath != "":
			more = "\n" + Tail(out.LogPath, 15)
		case out.Stderr != nil:
			more = ": see its stderr above"
		}
		return nil, fmt.Errorf("container %s (%s): %w%s", bin, strings.Join(env, " "), err, more)
	}
	c.proc = proc
	return c, nil
}

// readRequestLogs collects the request log lines of the container's stdout, each line also written to the log
// file when there is one, until it ends.
func (c *Container) readRequestLogs(r *os.File) {
	defer close(c.stdout)
	defer r.Close()
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if c.log != nil {
			c.log.Write(append(line, '\n'))
		}
		if len(line) == 0 || line[0] != '{' || !bytes.Contains(line, []byte(`"msg":"request"`)) {
			continue
		}
		var l RequestLog
		if json.Unmarshal(line, &l) == nil {
			c.mu.Lock()
			c.logs = append(c.logs, l)
			c.mu.Unlock()
		}
	}
	io.Copy(io.Discard, r)
}

func (c *Container) closeLog() {
	if c.log != nil {
		c.log.Close()
	}
}

// Stop stops the container (Process.Stop) and closes its log; it is safe to call twice.
func (c *Container) Stop() {
	c.proc.Stop()
	if c.stdout != nil {
		<-c.stdout
	}
	c.closeLog()
}

// LogCount is how many request logs have been collected.
func (c *Container) LogCount() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.logs)
}

// Logs returns the request logs collected from index from on.
func (c *Container) Logs(from int) []RequestLog {
	c.mu.Lock()
	defer c.mu.Unlock()
	if from > len(c.logs) {
		return nil
	}
	return append([]RequestLog(nil), c.logs[from:]...)
}

// WaitLogs waits up to 5 s until at least n request logs have been collected (the log line follows the
// response) and returns how many there are.
func (c *Container) WaitLogs(n int) int {
	deadline := time.Now().Add(5 * time.Second)
	for c.LogCount() < n && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	return c.LogCount()
}

// RaiseFDLimit raises the soft file-descriptor limit to the hard one and returns the soft limit now.
func RaiseFDLimit() uint64 {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return 0
	}
	if lim.Cur < lim.Max {
		lim.Cur = lim.Max
		_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
		_ = syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim)
	}
	return lim.Cur
}
