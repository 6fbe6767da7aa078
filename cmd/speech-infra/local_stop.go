package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// stopTimeout bounds waiting for the signalled emulators to release the state directory.
const stopTimeout = 30 * time.Second

func localStopCommand() *cli.Command {
	return &cli.Command{
		Name:  "stop",
		Usage: "stop the emulator and its instances (the state stays; the next start restarts the instances)",
		Flags: []cli.Flag{stateDirFlag},
		Action: func(c *cli.Context) error {
			o := &stopOpts{
				stateDir: c.String(stateDirFlag.Name), args: c.Args().Slice(), stdout: c.App.Writer,
				locate: locateEmulator, signal: terminate, timeout: stopTimeout, poll: 100 * time.Millisecond,
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// terminate sends SIGTERM to pid; a process that is gone already is not an error.
func terminate(pid int) error {
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}

// stopOpts is one speech-infra local stop: the command line, and what it runs with.
type stopOpts struct {
	stateDir string
	args     []string

	stdout io.Writer
	// locate finds the emulator running on a state directory. It hands over the pid the emulator answered
	// itself at its health route, with the instance id and state directory it published: a discovery file
	// edited to name another process never gets that process signalled.
	locate func(dir string) (localEmulator, bool, error)
	// signal asks the process pid to stop.
	signal func(pid int) error
	// timeout bounds waiting for the directory to be released; poll is how often it is looked at.
	timeout, poll time.Duration
}

// Validate checks the command line and reports every problem at once as one usage error.
func (o *stopOpts) Validate() error {
	var errs []error
	if len(o.args) > 0 {
		errs = append(errs, fmt.Errorf("local stop takes no arguments, got %s: use --state-dir to name the emulator", quoteAll(o.args)))
	}
	errs = append(errs, emulatorSettings{stateDir: o.stateDir}.validate()...)
	return exitcode.Usage(errors.Join(errs...))
}

// Execute stops the emulator on the state directory and waits until no emulator holds it. An emulator
// started at the same moment as the stopped one may take the directory over once it is free; it is confirmed
// like the first, and stopped too. With no emulator running it says so and succeeds.
func (o *stopOpts) Execute(ctx context.Context) error {
	emu, running, err := o.locate(o.stateDir)
	if err != nil {
		return err
	}
	if !running {
		_, err := fmt.Fprintf(o.stdout, "no emulator runs on %s\n", o.stateDir)
		return err
	}
	stopped := []int{}
	stop := func(pid int) error {
		if err := o.signal(pid); err != nil {
			return fmt.Errorf("stop emulator (pid %d): %w", pid, err)
		}
		stopped = append(stopped, pid)
		return nil
	}
	if err := stop(emu.PID); err != nil {
		return err
	}
	deadline := time.Now().Add(o.timeout)
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the emulator (pid %s) to stop: %w", pids(stopped), ctx.Err())
		case <-time.After(o.poll):
		}
		next, running, err := o.locate(o.stateDir)
		if !running {
			_, err := fmt.Fprintf(o.stdout, "emulator stopped (pid %s)\n", pids(stopped))
			return err
		}
		if err == nil && next.PID != stopped[len(stopped)-1] {
			if err := stop(next.PID); err != nil {
				return err
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the emulator (pid %s) did not stop within %s", pids(stopped), o.timeout)
		}
	}
}

// pids lists process ids: "12" or "12, then 15".
func pids(ps []int) string {
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = fmt.Sprint(p)
	}
	return strings.Join(s, ", then ")
}
