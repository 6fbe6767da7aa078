package exitcode

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
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
	}
	for _, c := range cases {
		if got := Code(c.err); got != c.want {
			t.Errorf("%s: Code(%v) = %d, want %d", c.name, c.err, got, c.want)
		}
	}
}

func TestMarkKeepsMessageAndChain(t *testing.T) {
	base := fs.ErrPermission
	for _, err := range []error{Usage(base), CheckFailed(base)} {
		if err.Error() != base.Error() {
			t.Errorf("message %q, want %q unchanged", err.Error(), base.Error())
		}
		if !errors.Is(err, fs.ErrPermission) {
			t.Errorf("%v: errors.Is lost the wrapped error", err)
		}
	}
	if Usage(nil) != nil || CheckFailed(nil) != nil {
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
