package main

import (
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/emulator"
)

// stopTimeout bounds waiting for the signalled emulators to release the state directory.
const stopTimeout = 30 * time.Second

func localStopCommand() *cli.Command {
	return &cli.Command{
		Name:  "stop",
		Usage: "stop the emulator and its instances (the state stays; the next start restarts the instances)",
		Flags: []cli.Flag{stateDirFlag},
		// onRunningEmulator hands over the pid the emulator answered itself at its health route, with the
		// instance id and state directory it published: a discovery file edited to name another process
		// never gets that process signalled.
		Action: onRunningEmulator("no emulator runs on %s", func(c *cli.Context, dir string, emu localEmulator) error {
			stopped := []int{}
			signal := func(pid int) error {
				if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
					return fmt.Errorf("stop emulator (pid %d): %w", pid, err)
				}
				stopped = append(stopped, pid)
				return nil
			}
			if err := signal(emu.PID); err != nil {
				return err
			}
			deadline := time.Now().Add(stopTimeout)
			for {
				time.Sleep(100 * time.Millisecond)
				info, running, err := emulator.Running(dir)
				if !running {
					fmt.Fprintf(c.App.Writer, "emulator stopped (pid %s)\n", pids(stopped))
					return nil
				}
				// An emulator started at the same moment as the stopped one may take the directory over once it
				// is free; it is confirmed like the first, and stopped too.
				if err == nil && info.PID != stopped[len(stopped)-1] {
					if err := signal(info.PID); err != nil {
						return err
					}
				}
				if time.Now().After(deadline) {
					return fmt.Errorf("the emulator (pid %s) did not stop within %s", pids(stopped), stopTimeout)
				}
			}
		}),
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
