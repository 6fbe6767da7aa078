// Command tts-bench measures a text-to-speech endpoint and turns the measurements into an autoscaling plan.
//
// main only wires: it runs the urfave/cli application and maps errors to exit codes — 0 ok, 1 a check
// failed (for example an infeasible plan), 2 a usage or input error.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/urfave/cli/v2"
)

// Exit codes.
const (
	exitOK          = 0
	exitCheckFailed = 1
	exitUsage       = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "tts-bench:", err)
	}
	os.Exit(exitCode(err))
}

// run builds the application and runs it with args (args[0] is the program name).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	app := &cli.App{
		Name:  "tts-bench",
		Usage: "measure a TTS endpoint (Q_max, T_total) and plan its autoscaling from the measurements",
		Description: "tts-bench replaces guessed autoscaling thresholds with measured ones: qmax measures the highest\n" +
			"per-instance concurrency that meets the latency SLO, ttotal measures how long one more instance takes\n" +
			"to serve, and plan turns both into thresholds, cooldowns and fleet bounds and says whether they are\n" +
			"feasible. Exit codes: 0 ok, 1 a check failed (e.g. an infeasible plan), 2 a usage or input error.",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Commands:        []*cli.Command{planCommand()},
		// Errors are returned to main, which alone decides the exit code.
		ExitErrHandler: func(*cli.Context, error) {},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError(fmt.Errorf("%w: see tts-bench --help", err))
		},
		Action: func(c *cli.Context) error {
			if c.Args().Present() {
				return usageError(fmt.Errorf("unknown command %q: see tts-bench --help", c.Args().First()))
			}
			return cli.ShowAppHelp(c)
		},
	}
	return app.RunContext(ctx, args)
}

// exitError carries the exit code an error maps to.
type exitError struct {
	code int
	err  error
}

// Error returns the wrapped error's message.
func (e *exitError) Error() string { return e.err.Error() }

// Unwrap returns the wrapped error.
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a usage or input error (exit 2).
func usageError(err error) error { return &exitError{code: exitUsage, err: err} }

// checkFailed marks err as a failed check (exit 1).
func checkFailed(err error) error { return &exitError{code: exitCheckFailed, err: err} }

// exitCode maps an error from run to the process exit code. Errors not marked otherwise (a file that cannot
// be read or written) are input errors.
func exitCode(err error) int {
	if err == nil {
		return exitOK
	}
	var e *exitError
	if errors.As(err, &e) {
		return e.code
	}
	return exitUsage
}
