// Package harness is the scaffolding of the benchmark programs under perf: their main (Main), the processes
// they run and stop (FreePort; StartProcess, which waits for a health URL; StartContainer, the real inference
// container on a free loopback port; StartEmulator, a private emulator, and Deploy, an endpoint on it),
// running a command while measuring its wall time and peak resident memory (the kernel's rusage, what
// /usr/bin/time -v prints as "Maximum resident set size"), reading a live process's memory from /proc, line
// and bar charts, and small statistics. It starts nothing it does not stop: every wait is bounded.
package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Tail returns the last n lines of the file at path ("" when it cannot be read).
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// Result is how one command went.
type Result struct {
	// Wall is its wall time; MaxRSSBytes its peak resident set (rusage ru_maxrss); ExitCode its exit status.
	Wall        time.Duration
	MaxRSSBytes int64
	ExitCode    int
	// Stdout and Stderr are its captured output.
	Stdout, Stderr []byte
}

// ErrExit is wrapped by Run's error when the command ran but exited with a status other than 0.
var ErrExit = errors.New("exited with a non-zero status")

// Run runs name with args in dir (the working directory when ""), env added to this process's environment,
// bounded by ctx, and returns its wall time, peak RSS and output. A non-zero exit comes back as a Result and
// an error wrapping ErrExit, so a caller that expects one (qmax exits 1 when no step passed) can go on.
func Run(ctx context.Context, dir string, env []string, name string, args ...string) (Result, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	cmd.WaitDelay = 5 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	res := Result{Wall: time.Since(start), Stdout: stdout.Bytes(), Stderr: stderr.Bytes(), ExitCode: -1}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
		if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			res.MaxRSSBytes = ru.Maxrss * 1024 // kilobytes on Linux
		}
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) && ctx.Err() == nil {
		return res, fmt.Errorf("%s %s: %w (%d): %s", name, strings.Join(args, " "), ErrExit, res.ExitCode, lastLine(stderr.String()))
	}
	if err != nil {
		return res, fmt.Errorf("%s %s: %w", name, strings.Join(args, " "), err)
	}
	return res, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// ProcMemory reads a live process's resident set (VmRSS) and its peak (VmHWM) from /proc/<pid>/status, in bytes.
func ProcMemory(pid int) (rss, peak int64, err error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, fmt.Errorf("read the memory of process %d: %w", pid, err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) < 2 {
			continue
		}
		kb, perr := strconv.ParseInt(f[1], 10, 64)
		if perr != nil {
			continue
		}
		switch f[0] {
		case "VmRSS:":
			rss = kb * 1024
		case "VmHWM:":
			peak = kb * 1024
		}
	}
	if rss == 0 || peak == 0 {
		return 0, 0, fmt.Errorf("read the memory of process %d: no VmRSS/VmHWM in /proc/%d/status", pid, pid)
	}
	return rss, peak, nil
}

// Children returns the process ids of pid's direct children (/proc/<pid>/task/*/children).
func Children(pid int) ([]int, error) {
	tasks, err := filepath.Glob("/proc/" + strconv.Itoa(pid) + "/task/*/children")
	if err != nil || len(tasks) == 0 {
		return nil, fmt.Errorf("list the children of process %d: no /proc/%d/task/*/children (Linux only)", pid, pid)
	}
	var out []int
	for _, t := range tasks {
		data, err := os.ReadFile(t)
		if err != nil {
			continue // a task that ended meanwhile
		}
		for _, f := range strings.Fields(string(data)) {
			if n, err := strconv.Atoi(f); err == nil {
				out = append(out, n)
			}
		}
	}
	return out, nil
}

// Median returns the median of xs (0 for none); xs is not changed.
func Median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// MiB formats bytes as mebibytes with one decimal.
func MiB(b int64) string { return strconv.FormatFloat(float64(b)/(1<<20), 'f', 1, 64) }

// BuildGo builds the main package pkg (e.g. ./cmd/tts-bench) of the repository at root into out and returns
// out; the build cache makes a repeat cheap.
func BuildGo(ctx context.Context, root, pkg, out string) (string, error) {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build -o %s %s: %w\n%s", out, pkg, err, b)
	}
	return out, nil
}

// LoadAverage is the 1-, 5- and 15-minute load averages from /proc/loadavg ("unknown" when unreadable).
func LoadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(data)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "unknown"
}
