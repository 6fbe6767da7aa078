// Command tts-bench measures a text-to-speech endpoint and turns the measurements into an autoscaling plan.
//
// main only wires: it runs the urfave/cli application and maps errors to exit codes with internal/exitcode —
// 0 ok, 1 a check failed (for example an infeasible plan) or the command failed, 2 a usage or input error,
// 3 could not run (an AWS or network error, a missing tool; AWS errors get cloud.Diagnose's one line with the
// fix). Every command takes --version and --help, and a misspelt flag names the nearest one
// (cliflags.Conventions). The commands parse and check their command lines, print and wire; the measurements
// themselves (qmax, ttotal, replay, the report over shards, the charts) run in package measure.
package main

import (
	"context"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/speech-infra/speech-infra/models"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitcode.Report(os.Stderr, "tts-bench", err))
}

// run runs the application with args (args[0] is the program name); flags may follow a command's arguments.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return cloud.Diagnose(cliflags.Run(ctx, newApp(stdout, stderr), args))
}

// interrupted marks err as the end of a command that stopped because ctx, main's signal context, was done:
// exit 143 when SIGTERM stopped it, else 130 (SIGINT, or a caller's own cancel). signal.NotifyContext cancels
// ctx with a cause naming the signal ("terminated signal received" for SIGTERM).
func interrupted(ctx context.Context, err error) error {
	cause := context.Cause(ctx)
	return exitcode.Interrupted(err, cause != nil && strings.Contains(cause.Error(), syscall.SIGTERM.String()))
}

// modelFlag is --model of every tts-bench command: a catalog id, models.DefaultModel unless given, the same
// default on every command.
func modelFlag(usage string) cli.Flag {
	return &cli.StringFlag{Name: "model", Value: models.DefaultModel, Usage: usage}
}

// modelUnlessEndpoint is --model, or "" when the command names its endpoint with --endpoint instead and
// --model is not given (thaw): the default model then does not stand for the endpoint.
func modelUnlessEndpoint(c *cli.Context) string {
	if c.String("endpoint") != "" && !c.IsSet("model") {
		return ""
	}
	return c.String("model")
}

// command is what a tts-bench command builds from its command line: checked whole by Validate (every
// problem named, exit 2) before Execute does anything.
type command interface {
	Validate() error
	Execute(ctx context.Context) error
}

// catalogAction is the Action of a command whose options are built from the command line and the model
// catalog: build, Validate, then Execute with the signal context (SIGINT or SIGTERM ends it).
func catalogAction[O command](build func(*cli.Context, models.Catalog) O) cli.ActionFunc {
	return func(c *cli.Context) error {
		cat, err := models.Default()
		if err != nil {
			return err
		}
		return runWith(c, cat, build)
	}
}

// runWith builds the command's options from c and cat, validates them and executes them.
func runWith[O command](c *cli.Context, cat models.Catalog, build func(*cli.Context, models.Catalog) O) error {
	o := build(c, cat)
	if err := o.Validate(); err != nil {
		return err
	}
	return o.Execute(c.Context)
}

// newApp builds the application, writing data to stdout and diagnostics to stderr.
func newApp(stdout, stderr io.Writer) *cli.App {
	app := &cli.App{
		Name:  "tts-bench",
		Usage: "measure a TTS endpoint (Q_max, T_total) and plan its autoscaling from the measurements",
		Description: "tts-bench replaces guessed autoscaling thresholds with measured ones: qmax measures the highest\n" +
			"per-instance concurrency that meets the latency SLO, ttotal measures how long one more instance takes\n" +
			"to serve, and plan turns both into thresholds, cooldowns and fleet bounds and says whether they are\n" +
			"feasible. Exit codes: 0 ok, 1 a check failed (e.g. an infeasible plan), 2 a usage or input error,\n" +
			"3 could not run (an AWS or network error, a missing tool).",
		Writer:          stdout,
		ErrWriter:       stderr,
		HideHelpCommand: true,
		Commands:        []*cli.Command{compareCommand(), planCommand(), qmaxCommand(), ttotalCommand(), driftCommand(), thawCommand(), validateCommand(), replayCommand(), reportCommand(), simulateCommand(), trafficCommand()},
		// Errors are returned to main, which alone decides the exit code.
		ExitErrHandler: func(*cli.Context, error) {},
	}
	cliflags.Conventions(app, cliflags.Catalog{Env: models.CatalogEnv, Use: models.UseDir, Source: models.CatalogSource})
	return app
}

// processEnv is the Env of the process running c: the SDK's clients, SIGINT and SIGTERM, and the
// command line the application was run with (its name, then the root context's arguments: the command with
// its flags and arguments, as cliflags.Run passed them), not the process's os.Args.
func processEnv(c *cli.Context) measure.Env {
	// The application's context is the outermost with a command (urfave/cli puts a bare one around it).
	var root *cli.Context
	for _, l := range c.Lineage() {
		if l.Command != nil {
			root = l
		}
	}
	line := strings.Join(append([]string{c.App.Name}, root.Args().Slice()...), " ")
	return measure.Env{Clients: cloud.NewClients, Notify: measure.NotifySignals, CommandLine: line}
}
