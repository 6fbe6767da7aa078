package exitcode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os/exec"
	"testing"
)

func TestCode(t *testing.T) {
	base := errors.New("boom")
	cases := []struct {
		name string
		err  error
		want int
	}{
		{"nil", nil, 0},
		{"unmarked is a failure of the command", base, 1},
		{"unmarked file error is still a failure", fs.ErrNotExist, 1},
		{"usage", Usage(base), 2},
		{"usagef", Usagef("--x %d: too big", 3), 2},
		{"check failed", CheckFailed(base), 1},
		{"check failedf", CheckFailedf("plan %s: infeasible", "p"), 1},
		{"usage wrapped with %w keeps its mark", fmt.Errorf("deploy: %w", Usage(base)), 2},
		{"outermost mark wins", Usage(CheckFailed(base)), 2},
		{"outermost mark wins the other way", CheckFailed(Usage(base)), 1},
		{"joined: first marked", errors.Join(Usage(base), base), 2},
		{"context canceled unmarked", context.Canceled, 1},
		{"could not run", CouldNotRun(base), 3},
		{"could not runf", CouldNotRunf("sts: %w", base), 3},
		{"could not run wrapped keeps its mark", fmt.Errorf("drift: %w", CouldNotRun(base)), 3},
		{"usage outside could not run wins", Usage(CouldNotRun(base)), 2},
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.want {
			t.Errorf("%s: Code(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

// TestClassify checks that real network and missing-tool errors, unmarked, exit 3: a dial to a closed port,
// a lookup of a name that cannot resolve (.invalid, RFC 2606) and an executable that is not on PATH.
func TestClassify(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, dialErr := net.Dial("tcp", addr)
	if dialErr == nil {
		t.Fatalf("dial %s after closing its listener succeeded", addr)
	}
	_, dnsErr := net.LookupHost("no-such-host.invalid")
	if dnsErr == nil {
		t.Fatal("lookup of a .invalid name succeeded")
	}
	_, execErr := exec.LookPath("no-such-tool-speech-infra")
	if execErr == nil {
		t.Fatal("found no-such-tool-speech-infra on PATH")
	}
	for _, err := range []error{dialErr, dnsErr, execErr, fmt.Errorf("get endpoint: %w", dialErr)} {
		if got := Code(err); got != CodeCouldNotRun {
			t.Errorf("Code(%v) = %d, want %d", err, got, CodeCouldNotRun)
		}
		if got := Code(CheckFailed(err)); got != CodeCheckFailed {
			t.Errorf("Code(CheckFailed(%v)) = %d, want the mark's %d", err, got, CodeCheckFailed)
		}
	}
	if got := Classify(errors.New("boom")); Marked(got) {
		t.Errorf("Classify marked a plain error: %v", got)
	}
}

func TestMarkKeepsMessageAndChain(t *testing.T) {
	base := fs.ErrPermission
	for _, err := range []error{Usage(base), CheckFailed(base), CouldNotRun(base)} {
		if err.Error() != base.Error() {
			t.Errorf("message %q, want %q unchanged", err.Error(), base.Error())
		}
		if !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%v: errors.Is lost the wrapped error", err)
		}
	}
	if Usage(nil) != nil || CheckFailed(nil) != nil || CouldNotRun(nil) != nil {
		t.Error("marking nil must stay nil")
	}
}

func TestReport(t *testing.T) {
	var buf bytes.Buffer
	if code := Report(&buf, "tool", nil); code != 0 || buf.Len() != 0 {
		t.Errorf("Report(nil) = %d, printed %q; want 0 and nothing", code, buf.String())
	}
	if code := Report(&buf, "tool", Usagef("--n: not a number: pass an integer")); code != 2 {
		t.Errorf("Report(usage) = %d, want 2", code)
	}
	if got, want := buf.String(), "tool: --n: not a number: pass an integer\n"; got != want {
		t.Errorf("printed %q, want %q", got, want)
	}
}
