package main

import (
	"fmt"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/emulator"
)

func localStopCommand() *cli.Command {
	return &cli.Command{
		Name:  "stop",
		Usage: "stop the emulator and its instances (the state stays; the next start restarts the instances)",
		Flags: []cli.Flag{stateDirFlag},
		Action: onRunningEmulator("no emulator runs on %s", func(c *cli.Context, dir string, info emulator.Info) error {
			if info.PID == 0 {
				return fmt.Errorf("the emulator on %s has not published its pid yet: try again", dir)
			}
			if err := syscall.Kill(info.PID, syscall.SIGTERM); err != nil {
				return fmt.Errorf("stop emulator (pid %d): %w", info.PID, err)
			}
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, running, _ := emulator.Running(dir); !running {
					fmt.Fprintf(c.App.Writer, "emulator stopped (pid %d)\n", info.PID)
					return nil
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the emulator (pid %d) did not stop within 30 s", info.PID)
				}
				time.Sleep(100 * time.Millisecond)
			}
		}),
	}
}
