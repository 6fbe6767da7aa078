// Package exitcode is the exit-code contract of the speech-infra and tts-bench commands:
//
//	0 (CodeOK)          the command did what was asked
//	1 (CodeCheckFailed) a check failed (drift found, an infeasible plan, a validate mismatch) or the command
//	                    failed while doing its work
//	2 (CodeUsage)       a usage or input error: a bad flag or argument, an unreadable or invalid input file
//	3 (CodeCouldNotRun) the command could not run: an AWS or network error, a missing tool
//
// So a script can tell "the plan failed" (1) from "the call failed" (3).
//
// A command marks an error with Usage, CheckFailed or CouldNotRun where it arises; Code maps it to the exit
// code. An unmarked error is a failure of the command: exit 1, unless it is a network error or a missing
// executable (Classify), which could not run: exit 3. So every usage or input error must be marked with Usage
// (or Usagef) explicitly; a command that forgets to mark one exits 1, never 2 by accident. Marks survive
// wrapping with %w; when an error carries several marks the outermost one decides. AWS errors are marked
// where they are diagnosed (cloud.Diagnose), since this package imports no SDK.
package exitcode

import (
	"errors"
	"fmt"
	"io"
	"net"
	"os/exec"
)

// The exit codes.
const (
	// CodeOK means the command succeeded.
	CodeOK = 0
	// CodeCheckFailed means a check failed or the command failed; it is also the code of an unmarked error.
	CodeCheckFailed = 1
	// CodeUsage means a usage or input error.
	CodeUsage = 2
	// CodeCouldNotRun means the command could not run: an AWS or network error, a missing tool.
	CodeCouldNotRun = 3
)

// marked carries the exit code an error maps to.
type marked struct {
	code int
	err  error
}

// Error returns the wrapped error's message unchanged.
func (e *marked) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error, so errors.Is and errors.As see through the mark.
func (e *marked) Unwrap() error { return e.err }

// Usage marks err as a usage or input error (exit 2). Usage(nil) is nil.
func Usage(err error) error {
	if err == nil {
		return nil
	}
	return &marked{code: CodeUsage, err: err}
}

// Usagef is Usage(fmt.Errorf(format, args...)).
func Usagef(format string, args ...any) error { return Usage(fmt.Errorf(format, args...)) }

// CheckFailed marks err as a failed check (exit 1). CheckFailed(nil) is nil.
func CheckFailed(err error) error {
	if err == nil {
		return nil
	}
	return &marked{code: CodeCheckFailed, err: err}
}

// CheckFailedf is CheckFailed(fmt.Errorf(format, args...)).
func CheckFailedf(format string, args ...any) error { return CheckFailed(fmt.Errorf(format, args...)) }

// CouldNotRun marks err as a command that could not run (exit 3): an AWS or network error, a missing tool.
// CouldNotRun(nil) is nil.
func CouldNotRun(err error) error {
	if err == nil {
		return nil
	}
	return &marked{code: CodeCouldNotRun, err: err}
}

// CouldNotRunf is CouldNotRun(fmt.Errorf(format, args...)).
func CouldNotRunf(format string, args ...any) error { return CouldNotRun(fmt.Errorf(format, args...)) }

// Marked reports whether err carries a mark (Usage, CheckFailed, CouldNotRun, Interrupted).
func Marked(err error) bool {
	var m *marked
	return errors.As(err, &m)
}

// Classify marks an unmarked err that could not run, found by its type in the chain: a network error
// (*net.OpError: a refused or reset connection, a dial timeout; *net.DNSError) or a missing executable
// (exec.ErrNotFound, *exec.Error). Any other err, and a marked one, comes back unchanged.
func Classify(err error) error {
	if err == nil || Marked(err) {
		return err
	}
	var (
		op    *net.OpError
		dns   *net.DNSError
		execE *exec.Error
	)
	if errors.As(err, &op) || errors.As(err, &dns) || errors.As(err, &execE) || errors.Is(err, exec.ErrNotFound) {
		return CouldNotRun(err)
	}
	return err
}

// CodeInterrupted and CodeTerminated are the shell's codes for a process ended by SIGINT (128 + 2) and
// SIGTERM (128 + 15): a command that stops early on a signal, writing nothing, exits with them.
const (
	CodeInterrupted = 130
	CodeTerminated  = 143
)

// Interrupted marks err as the end of a run stopped by SIGINT (terminated false) or SIGTERM (true).
func Interrupted(err error, terminated bool) error {
	if err == nil {
		return nil
	}
	code := CodeInterrupted
	if terminated {
		code = CodeTerminated
	}
	return &marked{code: code, err: err}
}

// Code maps err to the process exit code: 0 for nil, the code of the outermost mark, 3 for an unmarked error
// Classify finds could not run, or 1 for any other unmarked error.
func Code(err error) int {
	if err == nil {
		return CodeOK
	}
	var m *marked
	if errors.As(Classify(err), &m) {
		return m.code
	}
	return CodeCheckFailed
}

// Report prints a non-nil err to stderr as "prog: err" and returns its exit code; main passes the result to
// os.Exit.
func Report(stderr io.Writer, prog string, err error) int {
	if err != nil {
		fmt.Fprintf(stderr, "%s: %v\n", prog, err)
	}
	return Code(err)
}
