package main

import (
	"context"
	"testing"

	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/measure"
	"github.com/urfave/cli/v2"
)

// The journal records the command line the application was run with, not the process's os.Args (a
// test running the command in process must not record the test binary's flags).
func TestProcessEnvRecordsTheCommandLineRunWasGiven(t *testing.T) {
	var got measure.Env
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
	if want := "tts-bench qmax --model espeak-ng"; got.CommandLine != want {
		t.Errorf("command line = %q, want %q", got.CommandLine, want)
	}
	if got.Clients == nil || got.Notify == nil {
		t.Error("processEnv left the client factory or the signals unset")
	}
}
