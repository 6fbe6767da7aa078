// Command speech-container is the inference server measured and deployed by
// speech-infra: `speech-container serve` serves the SageMaker inference
// contract with the engine ENGINE names; `speech-container phonemize` prints
// the kokoro engine's phonemes for lines of text; `speech-container voices`
// prints the engine's voice list. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/speech-infra/speech-infra/container/internal/app"
	"github.com/speech-infra/speech-infra/container/internal/espeak"
)

func main() {
	// The espeak engine re-executes this binary as its worker processes.
	if os.Getenv(espeak.RoleEnv) == espeak.RoleWorker {
		if err := espeak.RunWorker(os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "speech-container espeak worker:", err)
			os.Exit(1)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	var err error
	switch {
	case len(os.Args) > 1 && os.Args[1] == "phonemize":
		err = app.Phonemize(os.Args[2:], os.Stdin, os.Stdout, os.Getenv)
	case len(os.Args) > 1 && os.Args[1] == "voices":
		err = app.Voices(os.Args[2:], os.Stdout, os.Getenv)
	default:
		err = app.Run(ctx, os.Args[1:], os.Stdout, os.Stderr, os.Getenv)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "speech-container:", err)
	}
	os.Exit(app.ExitCode(err))
}
