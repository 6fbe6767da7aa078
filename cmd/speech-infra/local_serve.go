package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/emulator"
)

func localServeCommand() *cli.Command {
	period := &cli.DurationFlag{Name: "metric-period", Usage: "metric resolution and autoscaler period", Value: emulator.DefaultMetricPeriod}
	return &cli.Command{
		Name:   "serve",
		Usage:  "run the emulator in the foreground (deploy --local starts it in the background)",
		Hidden: true,
		Flags:  []cli.Flag{stateDirFlag, portFlag, containerBin, period},
		Action: func(c *cli.Context) error {
			emu, err := emulator.Open(emulator.Options{
				StateDir:     c.String(stateDirFlag.Name),
				Addr:         fmt.Sprintf("127.0.0.1:%d", c.Int(portFlag.Name)),
				ContainerBin: resolveContainerBin(c),
				MetricPeriod: c.Duration(period.Name),
				Log:          os.Stderr,
			})
			if err != nil {
				return err
			}
			fmt.Fprintf(c.App.Writer, "emulator serving %s on %s (loopback only), access key id %s (from %s)\n",
				c.String(stateDirFlag.Name), emu.URL(), emu.Credentials().AccessKeyID, filepath.Join(c.String(stateDirFlag.Name), emulator.CredentialsFile))
			return emu.Run(c.Context)
		},
	}
}
