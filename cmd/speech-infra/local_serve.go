package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

func localServeCommand() *cli.Command {
	period := &cli.DurationFlag{Name: "metric-period", Usage: "metric resolution and autoscaler period (default: 10s ÷ the CloudWatch compression of $" + emulator.EnvTimeScale + ")"}
	return &cli.Command{
		Name:   "serve",
		Usage:  "run the emulator in the foreground (deploy --local starts it in the background)",
		Hidden: true,
		Flags:  []cli.Flag{stateDirFlag, portFlag, containerBin, period},
		Action: func(c *cli.Context) error {
			o := &serveOpts{
				emulator: settingsFrom(c), metricPeriod: c.Duration(period.Name), metricPeriodSet: c.IsSet(period.Name), args: c.Args().Slice(),
				stderr: c.App.ErrWriter, open: openEmulator,
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// runner is an opened emulator: where it serves, its access key, and its run until ctx ends.
type runner interface {
	URL() string
	Credentials() emulator.Credentials
	Run(ctx context.Context) error
}

// openEmulator opens the real emulator.
func openEmulator(o emulator.Options) (runner, error) { return emulator.Open(o) }

// serveOpts is one speech-infra local serve: the command line, and what it runs with.
type serveOpts struct {
	emulator     emulatorSettings
	metricPeriod time.Duration
	// metricPeriodSet says --metric-period was given; without it the emulator derives the period from its time
	// scale.
	metricPeriodSet bool
	args            []string

	// stderr receives the emulator's diagnostics and the line that says where it serves (serve prints no
	// data: deploy --local starts it with both streams in the emulator log).
	stderr io.Writer
	// open opens the emulator.
	open func(emulator.Options) (runner, error)
}

// Validate checks the command line and reports every problem at once as one usage error.
func (o *serveOpts) Validate() error {
	var errs []error
	if len(o.args) > 0 {
		errs = append(errs, fmt.Errorf("local serve takes no arguments, got %s: use --state-dir, --port and --container-bin", quoteAll(o.args)))
	}
	if o.metricPeriodSet && o.metricPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--metric-period %s: want a positive duration, e.g. %s", o.metricPeriod, emulator.DefaultMetricPeriod))
	}
	errs = append(errs, o.emulator.validate()...)
	return exitcode.Usage(errors.Join(errs...))
}

// Execute opens the emulator and serves until ctx ends.
func (o *serveOpts) Execute(ctx context.Context) error {
	emu, err := o.open(emulator.Options{
		StateDir:     o.emulator.stateDir,
		Addr:         fmt.Sprintf("127.0.0.1:%d", o.emulator.port),
		ContainerBin: o.emulator.containerBin,
		MetricPeriod: o.metricPeriod,
		Log:          o.stderr,
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(o.stderr, "emulator serving %s on %s (loopback only), access key id %s (from %s)\n",
		o.emulator.stateDir, emu.URL(), emu.Credentials().AccessKeyID, filepath.Join(o.emulator.stateDir, emulator.CredentialsFile))
	return emu.Run(ctx)
}
