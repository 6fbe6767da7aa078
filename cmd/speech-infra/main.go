// Command speech-infra deploys and removes the speech endpoints. With --local it runs them on the local
// emulator (started in the background when needed); `speech-infra local status` and `speech-infra local stop`
// manage the emulator.
//
// main only wires: it runs the urfave/cli application and maps errors to exit codes with internal/exitcode —
// 0 ok, 1 a check failed or the command failed, 2 a usage or input error, 3 could not run (an AWS or network
// error, a missing tool; AWS errors get cloud.Diagnose's one line with the fix). Data (the export lines,
// --format json) goes to stdout, everything else to stderr. Every command takes --version and --help, and a
// misspelt flag names the nearest one (cliflags.Conventions).
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitcode.Report(os.Stderr, "speech-infra", err))
}

// run runs the application with args (args[0] is the program name); flags may follow a command's model
// argument (`speech-infra deploy espeak-ng --local`).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cloud.Diagnose(cliflags.Run(ctx, newApp(stdout, stderr), args))
}

// newApp builds the application, writing data to stdout and diagnostics to stderr.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:      "speech-infra",
		Usage:     "deploy and remove speech endpoints (on AWS through the CDK app, or --local on the emulator)",
		Writer:    stdout,
		ErrWriter: stderr,
		Commands:  []*cli.Command{deployCommand(), destroyCommand(), cacheCommand(), localCommand(), gatewayCommand()},
		// Errors are returned to main, which alone decides the exit code.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	cliflags.Conventions(app, cliflags.Catalog{Env: models.CatalogEnv, Use: models.UseDir, Source: models.CatalogSource})
	return app
}

// catalogModel is the model the single argument of command names in cat.
func catalogModel(cat models.Catalog, command string, args []string) (models.Model, error) {
	if len(args) != 1 {
		return models.Model{}, fmt.Errorf("%s needs exactly one model id, got %d argument(s) %s: e.g. `speech-infra %s espeak-ng --local`", command, len(args), quoteAll(args), command)
	}
	return cat.Get(args[0])
}

// quoteAll quotes each argument: ["a" "b"].
func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return "[" + strings.Join(q, " ") + "]"
}
