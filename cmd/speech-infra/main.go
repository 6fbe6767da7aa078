// Command speech-infra deploys and removes the speech endpoints. With --local it runs them on the local
// emulator (started in the background when needed); `speech-infra local status` and `speech-infra local stop`
// manage the emulator.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"
)

// usageError marks a usage or input problem: exit code 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and maps it to the exit code: 0 ok, 2 usage or input error, 1 anything else.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, "speech-infra:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	app := &cli.App{
		Name:      "speech-infra",
		Usage:     "deploy and remove speech endpoints (on AWS through the CDK app, or --local on the emulator)",
		Writer:    stdout,
		ErrWriter: stderr,
		Commands:  []*cli.Command{deployCommand(), destroyCommand(), localCommand()},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError{err}
		},
		ExitErrHandler: func(*cli.Context, error) {},
	}
	markUsageErrors(app.Commands)
	return app.RunContext(ctx, flagsFirst(args))
}

// markUsageErrors makes flag parsing errors of every (sub)command usage errors.
func markUsageErrors(cmds []*cli.Command) {
	for _, c := range cmds {
		c.OnUsageError = func(_ *cli.Context, err error, _ bool) error { return usageError{err} }
		markUsageErrors(c.Subcommands)
	}
}

// boolFlags are the flags that take no value.
var boolFlags = map[string]bool{"local": true, "help": true, "h": true}

// flagsFirst moves the flags of a deploy or destroy command line before its model argument, so that
// `speech-infra deploy espeak-ng --local` works: urfave/cli stops parsing flags at the first argument.
func flagsFirst(args []string) []string {
	if len(args) < 3 || (args[1] != "deploy" && args[1] != "destroy") {
		return args
	}
	var flags, positional []string
	rest := args[2:]
	for i := 0; i < len(rest); i++ {
		a := rest[i]
		if a == "--" {
			positional = append(positional, rest[i+1:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && !boolFlags[name] && i+1 < len(rest) {
			flags = append(flags, rest[i+1])
			i++
		}
	}
	out := append([]string{args[0], args[1]}, flags...)
	return append(out, positional...)
}
