package main

import (
	"context"
	"os"
	"syscall"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/cliflags"
)

// The journal records the command line the application was run with, not the process's os.Args (issue 26:
// a test running the command in process must not record the test binary's flags).
func TestProcessEnvRecordsTheCommandLineRunWasGiven(t *testing.T) {
	var got runEnv
	app := &cli.App{Name: "tts-bench", Commands: []*cli.Command{{
		Name:  "qmax",
		Flags: []cli.Flag{&cli.StringFlag{Name: "model"}},
		Action: func(c *cli.Context) error {
			got = processEnv(c)
			return nil
		},
	}}}
	if err := cliflags.Run(context.Background(), app, []string{"/somewhere/bin/tts-bench", "qmax", "--model", "espeak-ng"}); err != nil {
		t.Fatal(err)
	}
	if want := "tts-bench qmax --model espeak-ng"; got.commandLine != want {
		t.Errorf("command line = %q, want %q", got.commandLine, want)
	}
	if got.clients == nil || got.notify == nil {
		t.Error("processEnv left the client factory or the signals unset")
	}
}

// notifySignals relays SIGTERM until stopped.
func TestNotifySignalsRelaysSIGTERM(t *testing.T) {
	c := make(chan os.Signal, 1)
	stop := notifySignals(c)
	defer stop()
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if s := <-c; s != syscall.SIGTERM {
		t.Errorf("got %v, want SIGTERM", s)
	}
}
