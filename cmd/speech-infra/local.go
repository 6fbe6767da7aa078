package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

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

// ensureEmulator returns the URL of the emulator serving the state directory, starting it detached in the
// background (logs to <state dir>/emulator.log) when none runs.
func ensureEmulator(ctx context.Context, c *cli.Context) (string, error) {
	dir := c.String(stateDirFlag.Name)
	if info, ok, err := emulator.Running(dir); err != nil {
		return "", err
	} else if ok && info.URL != "" {
		return info.URL, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create state directory: %w", err)
	}
	bin := resolveContainerBin(c)
	if _, err := os.Stat(bin); err != nil {
		return "", usagef("the inference container binary %s is missing (%v): build it with `make container-build` or set SPEECH_CONTAINER_BIN / --container-bin", bin, err)
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("find own executable: %w", err)
	}
	logPath := filepath.Join(dir, "emulator.log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return "", fmt.Errorf("open emulator log: %w", err)
	}
	defer logFile.Close()
	cmd := exec.Command(exe, "local", "serve", "--state-dir", dir, "--port", strconv.Itoa(c.Int(portFlag.Name)), "--container-bin", bin)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return "", fmt.Errorf("start the emulator: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(20 * time.Second)
	for {
		select {
		case err := <-exited:
			return "", fmt.Errorf("the emulator exited at start (%v): see %s", err, logPath)
		case <-ctx.Done():
			return "", ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if info, ok, _ := emulator.Running(dir); ok && info.URL != "" {
			if resp, err := http.Get(info.URL + "/_emulator/health"); err == nil {
				resp.Body.Close()
				cmd.Process.Release()
				return info.URL, nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("the emulator did not come up within 20 s: see %s", logPath)
		}
	}
}

// runningEmulator returns the URL of the running emulator, or an error that says how to start one.
func runningEmulator(c *cli.Context) (string, error) {
	dir := c.String(stateDirFlag.Name)
	info, ok, err := emulator.Running(dir)
	if err != nil {
		return "", err
	}
	if !ok || info.URL == "" {
		return "", errors.New("no emulator runs on " + dir + ": `speech-infra deploy <model> --local` starts one")
	}
	return info.URL, nil
}

// onRunningEmulator is the action of a command on the emulator running on --state-dir: act runs with the
// directory and what the emulator published; when none runs, the command prints notRunning (a format with
// the directory) and succeeds.
func onRunningEmulator(notRunning string, act func(c *cli.Context, dir string, info emulator.Info) error) cli.ActionFunc {
	return func(c *cli.Context) error {
		dir := c.String(stateDirFlag.Name)
		info, ok, err := emulator.Running(dir)
		if err != nil {
			return err
		}
		if !ok {
			fmt.Fprintf(c.App.Writer, notRunning+"\n", dir)
			return nil
		}
		return act(c, dir, info)
	}
}

func printEnv(c *cli.Context, url string) {
	w := c.App.Writer
	for _, kv := range cloud.LocalEnv(url) {
		fmt.Fprintf(w, "export %s=%s\n", kv[0], kv[1])
	}
}
