package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"syscall"
	"time"
)

// InfoFile is the discovery file in the state directory: the Info of the running emulator.
const InfoFile = "emulator.json"

// HealthPath is the emulator's unauthenticated route that answers its Info: who it is, not what it holds.
const HealthPath = "/_emulator/health"

// healthTimeout bounds one identity check against a published address.
const healthTimeout = 2 * time.Second

// ErrNotAnswering says an emulator holds the lock of a state directory but no published address answered
// with its identity: it is still starting, or it hangs.
var ErrNotAnswering = errors.New("an emulator holds the state directory but does not answer with its identity")

// Info is what a running emulator publishes about itself, in <state dir>/emulator.json, in its lock file and
// at its health route. Other processes trust it only once the emulator at URL answers the same identity.
type Info struct {
	// PID is the emulator's process id.
	PID int `json:"pid"`
	// URL is the base URL every AWS client points at.
	URL string `json:"url"`
	// Started is when the emulator started.
	Started time.Time `json:"started"`
	// Instance is a random id of this run of the emulator: a file that names another instance describes
	// another (or no) emulator.
	Instance string `json:"instance"`
	// StateDir is the state directory the emulator serves, absolute with symbolic links resolved.
	StateDir string `json:"state_dir"`
	// TimeScale is how many times faster than AWS the start-up profile runs (Options.TimeScale).
	TimeScale float64 `json:"time_scale,omitempty"`
	// CloudWatchCompression is how many times faster than AWS CloudWatch's and Application Auto Scaling's own
	// durations run (1, 2, 5 or 10; absent from an emulator that predates it: 1). A measurement records it,
	// and a plan made from that measurement deploys only to an emulator with the same factor.
	CloudWatchCompression int `json:"cloudwatch_compression,omitempty"`
	// MetricPeriodS is the emulator's metric period in seconds (Options.MetricPeriod).
	MetricPeriodS float64 `json:"metric_period_s,omitempty"`
}

// canonicalDir is dir absolute with symbolic links resolved, the form Info.StateDir holds.
func canonicalDir(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve state directory %s: %w", dir, err)
	}
	if real, err := filepath.EvalSymlinks(abs); err == nil {
		return real, nil
	}
	return abs, nil
}

// Running reports whether an emulator holds the lock of stateDir and, if so, its identity as the emulator
// itself answered it at its health route. The addresses it tries come from the discovery file and from the
// lock file, so either may be damaged; neither is trusted until the process listening there answers with the
// same instance id and this state directory. When the lock is held but no address answers, it returns true
// and an error wrapping ErrNotAnswering that says what it found.
func Running(stateDir string) (Info, bool, error) {
	f, err := os.OpenFile(filepath.Join(stateDir, "emulator.lock"), os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return Info{}, false, nil
	}
	if err != nil {
		return Info{}, false, fmt.Errorf("open emulator lock: %w", err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH|syscall.LOCK_NB); err == nil {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		return Info{}, false, nil
	}
	dir, err := canonicalDir(stateDir)
	if err != nil {
		return Info{}, true, err
	}
	var problems []string
	lockBody, _ := io.ReadAll(io.LimitReader(f, 64<<10))
	infoBody, err := readLimited(filepath.Join(stateDir, InfoFile), 64<<10)
	if err != nil {
		problems = append(problems, err.Error())
	}
	tried := map[string]bool{}
	for _, c := range []struct {
		source string
		body   []byte
	}{{filepath.Join(stateDir, InfoFile), infoBody}, {filepath.Join(stateDir, "emulator.lock"), lockBody}} {
		if len(bytes.TrimSpace(c.body)) == 0 {
			continue
		}
		var claimed Info
		if err := json.Unmarshal(c.body, &claimed); err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", c.source, err))
			continue
		}
		key := claimed.URL + " " + claimed.Instance
		if tried[key] {
			continue
		}
		tried[key] = true
		info, err := confirm(claimed, dir)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", c.source, err))
			continue
		}
		return info, true, nil
	}
	if len(problems) == 0 {
		problems = append(problems, "no address published yet")
	}
	return Info{}, true, fmt.Errorf("%w (%s): %v", ErrNotAnswering, stateDir, problems)
}

// readLimited reads at most limit bytes of path.
func readLimited(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(io.LimitReader(f, limit))
}

// confirm asks the emulator at claimed.URL who it is and returns its answer when it is the run claimed
// describes (same instance id) serving dir. Only loopback addresses are contacted.
func confirm(claimed Info, dir string) (Info, error) {
	if claimed.Instance == "" {
		return Info{}, errors.New("names no instance id")
	}
	u, err := url.Parse(claimed.URL)
	if err != nil || u.Scheme != "http" || u.Port() == "" || u.Path != "" || u.RawQuery != "" || u.User != nil {
		return Info{}, fmt.Errorf("url %q is not http://<loopback address>:<port>", claimed.URL)
	}
	if ip := net.ParseIP(u.Hostname()); ip == nil || !ip.IsLoopback() {
		return Info{}, fmt.Errorf("url %q is not on a loopback address: the emulator listens on loopback only", claimed.URL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), healthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, claimed.URL+HealthPath, nil)
	if err != nil {
		return Info{}, err
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return Info{}, fmt.Errorf("no emulator answers at %s: %w", claimed.URL, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if err != nil {
		return Info{}, fmt.Errorf("read the identity from %s: %w", claimed.URL, err)
	}
	if resp.StatusCode != http.StatusOK {
		return Info{}, fmt.Errorf("%s%s answered HTTP %d", claimed.URL, HealthPath, resp.StatusCode)
	}
	var got Info
	if err := json.Unmarshal(b, &got); err != nil {
		return Info{}, fmt.Errorf("%s%s is not the emulator's identity: %w", claimed.URL, HealthPath, err)
	}
	switch {
	case got.Instance != claimed.Instance:
		return Info{}, fmt.Errorf("the process at %s is emulator run %q, not %q", claimed.URL, got.Instance, claimed.Instance)
	case got.StateDir != dir:
		return Info{}, fmt.Errorf("the emulator at %s serves %s, not %s", claimed.URL, got.StateDir, dir)
	case got.PID <= 0:
		return Info{}, fmt.Errorf("the emulator at %s answered no pid", claimed.URL)
	}
	got.URL = claimed.URL
	return got, nil
}
