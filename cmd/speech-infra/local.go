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
	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// The emulator's settings, shared by every --local command.
var (
	stateDirFlag = cliflags.StateDir("emulator state directory")
	portFlag     = &cli.IntFlag{Name: "port", Usage: "emulator port on 127.0.0.1", Value: emulator.DefaultPort, EnvVars: []string{"SPEECH_INFRA_PORT"}, Category: cliflags.CategoryLocal}
	containerBin = &cli.StringFlag{Name: "container-bin", Usage: "inference container binary the emulator runs per instance (default: speech-container next to this executable)", EnvVars: []string{"SPEECH_CONTAINER_BIN"}, Category: cliflags.CategoryLocal}
)

// emulatorSettings are the --state-dir, --port and --container-bin of a --local command.
type emulatorSettings struct {
	stateDir     string
	port         int
	containerBin string
}

// settingsFrom reads the emulator flags of c; the container binary defaults to the one next to this
// executable.
func settingsFrom(c *cli.Context) emulatorSettings {
	return emulatorSettings{stateDir: c.String(stateDirFlag.Name), port: c.Int(portFlag.Name), containerBin: resolveContainerBin(c)}
}

// validate lists what is wrong with the settings.
func (s emulatorSettings) validate() []error {
	var errs []error
	if s.stateDir == "" {
		errs = append(errs, errors.New("--state-dir is empty: give the emulator's state directory or leave the flag out (default .state/emulator)"))
	}
	if s.port < 0 || s.port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d: not a TCP port: use 1 to 65535 (default %d), or 0 for any free port", s.port, emulator.DefaultPort))
	}
	return errs
}

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

// startAttempts is how many emulators connectEmulator starts before it gives up: an emulator that exits at
// start because another holds the directory is followed by a new one when that other is gone too.
const startAttempts = 3

// connectEmulator returns the emulator serving the state directory of s, starting it detached in the
// background (logs to <state dir>/emulator.log) when none runs. When another command starts one at the same
// time, it attaches to whichever holds the directory.
func connectEmulator(ctx context.Context, s emulatorSettings) (localEmulator, error) {
	dir := s.stateDir
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
	bin := s.containerBin
	if _, err := os.Stat(bin); err != nil {
		return localEmulator{}, exitcode.Usagef("the inference container binary %s is missing (%v): build it with `make container-build` or set SPEECH_CONTAINER_BIN / --container-bin", bin, err)
	}
	logPath := filepath.Join(dir, "emulator.log")
	for attempt := 1; ; attempt++ {
		var (
			exited chan error
			child  *os.Process
		)
		if !ok {
			if child, exited, err = startEmulator(dir, s.port, bin, logPath); err != nil {
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
				if childRunning && info.PID != child.Pid {
					// Another command's emulator holds the directory: the one this command started is not
					// needed, and left alone it could take the directory over once that one stops, serving
					// with nobody to stop it.
					stopChild(child, exited)
				}
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

// childStopGrace bounds the wait for an emulator this command started and no longer needs to stop on
// SIGTERM, before it is killed.
const childStopGrace = 10 * time.Second

// stopChild stops an emulator this command started (SIGTERM, then SIGKILL after childStopGrace) and waits for
// its exit on exited.
func stopChild(p *os.Process, exited <-chan error) {
	_ = p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
		return
	case <-time.After(childStopGrace):
	}
	_ = p.Kill()
	<-exited
}

// startEmulator starts `speech-infra local serve` detached, its output appended to logPath, and returns its
// process and a channel that receives its exit.
func startEmulator(dir string, port int, bin, logPath string) (*os.Process, chan error, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, nil, fmt.Errorf("find own executable: %w", err)
	}
	// The log names the access key: it is its owner's only, like the key file.
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open emulator log: %w", err)
	}
	defer logFile.Close()
	if err := logFile.Chmod(0o600); err != nil {
		return nil, nil, fmt.Errorf("restrict emulator log %s to its owner: %w", logPath, err)
	}
	cmd := exec.Command(exe, "local", "serve", "--state-dir", dir, "--port", strconv.Itoa(port), "--container-bin", bin)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return nil, nil, fmt.Errorf("start the emulator: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return cmd.Process, exited, nil
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

// locateEmulator returns the emulator running on dir, confirmed by its own answer, with its access key;
// false when none runs.
func locateEmulator(dir string) (localEmulator, bool, error) {
	info, ok, err := emulator.Running(dir)
	if !ok && err == nil {
		return localEmulator{}, false, nil
	}
	if err != nil {
		return localEmulator{}, ok, err
	}
	emu, err := attach(dir, info)
	if err != nil {
		return localEmulator{}, true, err
	}
	return emu, true, nil
}

// envOf lists the variables that point the SDK and the AWS CLI at emu, in export order.
func envOf(emu localEmulator) []envVar {
	var env []envVar
	for _, kv := range cloud.LocalEnv(emu.URL, emu.creds) {
		env = append(env, envVar{kv[0], kv[1]})
	}
	return env
}

// writeExports writes one `export NAME=value` line per variable.
func writeExports(w io.Writer, env []envVar) error {
	for _, kv := range env {
		if _, err := fmt.Fprintf(w, "export %s=%s\n", kv.Name, kv.Value); err != nil {
			return err
		}
	}
	return nil
}
