package main

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/measure/measuretest"
)

// lineWait and signalWait bound the waits of the signal tests, for a progress line and for the exit after a
// signal: bounds against a hang, not measures. The first build simulates a quarter of a year of traces
// (seconds, ten times that under the race detector on a loaded machine); a stop takes milliseconds, while
// the search it interrupts runs for minutes.
const (
	lineWait   = 3 * time.Minute
	signalWait = 60 * time.Second
)

// writeMonthTraces writes n CSV traces of 31 days (the longest a trace may be) in 1-hour steps, each a
// daily cycle from 10 to 70 rps with its own phase, and returns their paths.
func writeMonthTraces(t *testing.T, dir string, n int) []string {
	t.Helper()
	var paths []string
	const step, days = 3600, 31
	for k := range n {
		var b bytes.Buffer
		b.WriteString("timestamp,rps\n")
		for at := 0; at < days*86400; at += step {
			rps := 10 + 60*(1+math.Cos(2*math.Pi*float64(at-14*3600-k*600)/86400))/2
			fmt.Fprintf(&b, "%d,%.3f\n", at, rps)
		}
		path := filepath.Join(dir, fmt.Sprintf("month-%d.csv", k))
		if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, path)
	}
	return paths
}

// planProcess is tts-bench plan running as a process of its own (this test binary running main, as startCLI
// does), with stdout and stderr apart; done is closed once it has exited and been waited for.
type planProcess struct {
	cmd            *exec.Cmd
	stdout, stderr *measuretest.SyncBuffer
	done           chan struct{}
}

func startPlan(t *testing.T, args ...string) *planProcess {
	t.Helper()
	p := &planProcess{cmd: exec.Command(os.Args[0], append([]string{"plan"}, args...)...), stdout: &measuretest.SyncBuffer{}, stderr: &measuretest.SyncBuffer{}, done: make(chan struct{})}
	p.cmd.Env = append(os.Environ(), runCLIEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		p.cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// waitLine waits for stderr to hold want, failing the test if the process exits first or lineWait passes.
func (p *planProcess) waitLine(t *testing.T, want string) {
	t.Helper()
	deadline := time.After(lineWait)
	for !strings.Contains(p.stderr.String(), want) {
		select {
		case <-deadline:
			t.Fatalf("no %q on stderr within %s:\n%s", want, lineWait, p.stderr)
		case <-p.done:
			if !strings.Contains(p.stderr.String(), want) {
				t.Fatalf("tts-bench plan ended (exit %d) before printing %q:\n%s", p.cmd.ProcessState.ExitCode(), want, p.stderr)
			}
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// waitExit waits for the process to exit and returns its exit code (-1 when a signal killed it), failing the
// test if it is still running signalWait after what was sent.
func (p *planProcess) waitExit(t *testing.T, sent any) int {
	t.Helper()
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	case <-time.After(signalWait):
		t.Fatalf("still running %s after %v:\nstderr:\n%s", signalWait, sent, p.stderr)
		return 0
	}
}

// leftIn lists what dir holds.
func leftIn(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// SIGINT and SIGTERM stop tts-bench plan while it simulates long user traces — in its first build or in the
// search for the cheapest passing configuration, which takes minutes with them — with exit 130 or 143, and
// the run writes nothing: no plan.json, no temporary file, and a plan already at --output stays as it was. A
// second signal changes nothing; kill -9 leaves no plan either (the plan is written last, atomically).
func TestPlanStopsOnSignals(t *testing.T) {
	traces := writeMonthTraces(t, t.TempDir(), 3)
	valid := filepath.Join(fixtures, "valid")
	args := func(out string) []string {
		// Peak 200 rps is past what the fixture's plan can carry: infeasible, so plan searches.
		a := []string{"--qmax", filepath.Join(valid, "qmax.json"), "--ttotal", filepath.Join(valid, "ttotal.json"),
			"--peak-rps", "200", "--trough-rps", "10", "--output", out}
		for _, tr := range traces {
			a = append(a, "--trace", tr)
		}
		return a
	}
	const building, searching = "plan: simulating the envelope with 3 user trace(s)", "searching surge ratio"
	for _, c := range []struct {
		name     string
		after    string
		signals  []syscall.Signal
		code     int
		existing bool
	}{
		{"SIGINT in the search", searching, []syscall.Signal{syscall.SIGINT}, 130, false},
		{"SIGTERM in the search", searching, []syscall.Signal{syscall.SIGTERM}, 143, false},
		{"SIGINT in the first build", building, []syscall.Signal{syscall.SIGINT}, 130, false},
		// Two signals of different kinds sent at once would race in the kernel (of two pending signals the
		// lower-numbered is delivered first), so the repeated signal is the same one.
		{"SIGINT twice over an existing plan", building, []syscall.Signal{syscall.SIGINT, syscall.SIGINT}, 130, true},
		{"kill -9 in the search", searching, []syscall.Signal{syscall.SIGKILL}, -1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			out := filepath.Join(dir, "plan.json")
			before := []byte("a plan written before this run\n")
			if c.existing {
				if err := os.WriteFile(out, before, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			p := startPlan(t, args(out)...)
			p.waitLine(t, c.after)
			for i, sig := range c.signals {
				// The second signal may find the process gone: only the first must be delivered.
				if err := p.cmd.Process.Signal(sig); err != nil && i == 0 {
					t.Fatal(err)
				}
			}
			stdout, stderr := p.stdout, p.stderr
			if got := p.waitExit(t, c.signals); got != c.code {
				t.Errorf("exit %d after %v, want %d; stderr:\n%s", got, c.signals, c.code, stderr)
			}
			if c.code > 0 && !strings.Contains(stderr.String(), "nothing written to "+out) {
				t.Errorf("stderr after %v does not say nothing was written to %s:\n%s", c.signals, out, stderr)
			}
			if strings.Contains(stderr.String(), "wrote ") || strings.Contains(stdout.String(), "CHEAPEST PASSING") {
				t.Errorf("a stopped run says it wrote or found something:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
			}
			want := []string(nil)
			if c.existing {
				want = []string{"plan.json"}
			}
			if got := leftIn(t, dir); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Errorf("the output directory holds %q after %v, want %q", got, c.signals, want)
			}
			if c.existing {
				if got, err := os.ReadFile(out); err != nil || !bytes.Equal(got, before) {
					t.Errorf("the plan already at --output changed after %v: %v\n%s", c.signals, err, got)
				}
			}
		})
	}
}
