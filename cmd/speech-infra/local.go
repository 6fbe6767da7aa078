package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
)

// The emulator's settings, shared by every --local command.
var (
	stateDirFlag = &cli.StringFlag{Name: "state-dir", Usage: "emulator state directory", Value: filepath.Join(".state", "emulator"), EnvVars: []string{"SPEECH_INFRA_STATE_DIR"}}
	portFlag     = &cli.IntFlag{Name: "port", Usage: "emulator port on 127.0.0.1", Value: emulator.DefaultPort, EnvVars: []string{"SPEECH_INFRA_PORT"}}
	containerBin = &cli.StringFlag{Name: "container-bin", Usage: "inference container binary the emulator runs per instance (default: speech-container next to this executable)", EnvVars: []string{"SPEECH_CONTAINER_BIN"}}
)

func localCommand() *cli.Command {
	return &cli.Command{
		Name:        "local",
		Usage:       "manage the local emulator",
		Subcommands: []*cli.Command{localStatusCommand(), localStopCommand(), localServeCommand()},
	}
}

// defaultContainerBin is bin/speech-container next to the running executable.
func defaultContainerBin() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	return filepath.Join(filepath.Dir(exe), "speech-container")
}

func resolveContainerBin(c *cli.Context) string {
	if b := c.String(containerBin.Name); b != "" {
		return b
	}
	return defaultContainerBin()
}

// localEmulator is a running emulator whose identity it confirmed itself, and the access key it accepts.
type localEmulator struct {
	emulator.Info
	creds cloud.LocalCredentials
}

// config is the SDK configuration for the emulator, signing with its access key.
func (l localEmulator) config() aws.Config { return cloud.LocalConfig(l.URL, l.creds) }

// attach reads the access key of the emulator of dir, confirmed as info.
func attach(dir string, info emulator.Info) (localEmulator, error) {
	creds, err := emulator.ReadCredentials(dir)
	if err != nil {
		return localEmulator{}, err
	}
	return localEmulator{Info: info, creds: cloud.LocalCredentials(creds)}, nil
}

// startTimeout bounds waiting for an emulator to answer: one this command started or one another command is
// starting.
const startTimeout = 30 * time.Second

// startAttempts is how many emulators ensureEmulator starts before it gives up: an emulator that exits at
// start because another holds the directory is followed by a new one when that other is gone too.
const startAttempts = 3

// ensureEmulator returns the emulator serving the state directory, starting it detached in the background
// (logs to <state dir>/emulator.log) when none runs. When another command starts one at the same time, it
// attaches to whichever holds the directory.
func ensureEmulator(ctx context.Context, c *cli.Context) (localEmulator, error) {
	dir := c.String(stateDirFlag.Name)
	deadline := time.Now().Add(startTimeout)
	info, ok, err := emulator.Running(dir)
	switch {
	case ok && err == nil:
		return attach(dir, info)
	case ok && errors.Is(err, emulator.ErrNotAnswering):
		// Another command is starting it: wait for it below.
	case err != nil:
		return localEmulator{}, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return localEmulator{}, fmt.Errorf("create state directory: %w", err)
	}
	bin := resolveContainerBin(c)
	if _, err := os.Stat(bin); err != nil {
		return localEmulator{}, usagef("the inference container binary %s is missing (%v): build it with `make container-build` or set SPEECH_CONTAINER_BIN / --container-bin", bin, err)
	}
	logPath := filepath.Join(dir, "emulator.log")
	for attempt := 1; ; attempt++ {
		var exited chan error
		if !ok {
			if exited, err = startEmulator(c, dir, bin, logPath); err != nil {
				return localEmulator{}, err
			}
		}
		childRunning := exited != nil
		var exitErr error
		for {
			select {
			case exitErr = <-exited:
				exited, childRunning = nil, false
				if exitErr == nil {
					exitErr = errors.New("exit status 0")
				}
			case <-ctx.Done():
				return localEmulator{}, ctx.Err()
			case <-time.After(100 * time.Millisecond):
			}
			info, ok, err = emulator.Running(dir)
			if ok && err == nil {
				return attach(dir, info)
			}
			if err != nil && !errors.Is(err, emulator.ErrNotAnswering) {
				return localEmulator{}, err
			}
			if !ok && !childRunning {
				// Neither an emulator this command started nor another one holds the directory (the one this
				// command started exited, perhaps because another held the directory, which is gone now too).
				break
			}
			if time.Now().After(deadline) {
				if err != nil {
					return localEmulator{}, fmt.Errorf("the emulator did not answer within %s: %w: see %s", startTimeout, err, logPath)
				}
				return localEmulator{}, fmt.Errorf("the emulator did not answer within %s: see %s", startTimeout, logPath)
			}
		}
		if attempt >= startAttempts || time.Now().After(deadline) {
			if exitErr == nil {
				return localEmulator{}, fmt.Errorf("the emulator another command started is gone and %d attempts to start one did not hold: see %s", attempt, logPath)
			}
			return localEmulator{}, fmt.Errorf("the emulator exited at start (%v): %s: see %s", exitErr, lastLine(logPath), logPath)
		}
	}
}

// startEmulator starts `speech-infra local serve` detached, its output appended to logPath, and returns a
// channel that receives its exit.
func startEmulator(c *cli.Context, dir, bin, logPath string) (chan error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find own executable: %w", err)
	}
	// The log names the access key: it is its owner's only, like the key file.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open emulator log: %w", err)
	}
	defer logFile.Close()
	if err := logFile.Chmod(0o600); err != nil {
		return nil, fmt.Errorf("restrict emulator log %s to its owner: %w", logPath, err)
	}
	cmd := exec.Command(exe, "local", "serve", "--state-dir", dir, "--port", strconv.Itoa(c.Int(portFlag.Name)), "--container-bin", bin)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the emulator: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited, nil
}

// lastLine is the last non-empty line of the file at path (at most its last 4 KiB), or a note that there is
// none.
func lastLine(path string) string {
	f, err := os.Open(path)
	if err != nil {
		return "no log"
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && fi.Size() > 4096 {
		f.Seek(fi.Size()-4096, io.SeekStart)
	}
	b, _ := io.ReadAll(io.LimitReader(f, 4096))
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if l := strings.TrimSpace(lines[len(lines)-1]); l != "" {
		return l
	}
	return "the log is empty"
}

// onRunningEmulator is the action of a command on the emulator running on --state-dir: act runs with the
// directory and the emulator, confirmed by its own answer; when none runs, the command prints notRunning (a
// format with the directory) and succeeds.
func onRunningEmulator(notRunning string, act func(c *cli.Context, dir string, emu localEmulator) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		dir := c.String(stateDirFlag.Name)
		info, ok, err := emulator.Running(dir)
		if !ok && err == nil {
			fmt.Fprintf(c.App.Writer, notRunning+"\n", dir)
			return nil
		}
		if err != nil {
			return err
		}
		emu, err := attach(dir, info)
		if err != nil {
			return err
		}
		return act(c, dir, emu)
	}
}

func printEnv(c *cli.Context, emu localEmulator) {
	w := c.App.Writer
	for _, kv := range cloud.LocalEnv(emu.URL, emu.creds) {
		fmt.Fprintf(w, "export %s=%s\n", kv[0], kv[1])
	}
}
