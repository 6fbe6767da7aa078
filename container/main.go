// Command speech-container is the inference server measured and deployed by
// speech-infra: `speech-container serve` serves the SageMaker inference
// contract with the engine ENGINE names; `speech-container phonemize` prints
// the kokoro engine's phonemes for lines of text; `speech-container voices`
// prints the engine's voice list. See README.md.
//
// --help (or -h) prints the usage on stdout and exits 0, on the program and on each subcommand; --version
// prints the module version, VCS revision and its commit time from the build info.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
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
	if text, ok := helpOrVersion(os.Args[1:]); ok {
		fmt.Fprintln(os.Stdout, text)
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

// helpOrVersion answers --help, -h and help (the usage of the program or of its subcommand, on stdout,
// exit 0) and --version; ok is false for any other command line.
func helpOrVersion(args []string) (string, bool) {
	if len(args) == 0 {
		return "", false
	}
	help := func(a string) bool { return a == "-h" || a == "--help" || a == "-help" }
	switch {
	case args[0] == "--version" || args[0] == "-version" || args[0] == "version":
		return "speech-container " + version(), true
	case help(args[0]) || args[0] == "help":
		return app.Usage, true
	case len(args) > 1 && args[0] == "phonemize" && slices.ContainsFunc(args[1:], help):
		return app.PhonemizeUsage, true
	case len(args) > 1 && args[0] == "voices" && slices.ContainsFunc(args[1:], help):
		return app.VoicesUsage, true
	case len(args) > 1 && args[0] == "serve" && slices.ContainsFunc(args[1:], help):
		return app.Usage, true
	}
	return "", false
}

// version is the module version, the VCS revision ("+dirty" with uncommitted changes) and its commit time
// from the build info, as the speech-infra and tts-bench --version print them.
func version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build info)"
	}
	v := info.Main.Version
	if v == "" {
		v = "(devel)"
	}
	set := map[string]string{}
	for _, s := range info.Settings {
		set[s.Key] = s.Value
	}
	rev, when := set["vcs.revision"], set["vcs.time"]
	if rev == "" {
		return v + ", revision unknown, build time unknown (built without VCS stamping), " + info.GoVersion
	}
	if set["vcs.modified"] == "true" {
		rev += "+dirty"
	}
	if when == "" {
		when = "unknown"
	}
	return fmt.Sprintf("%s, revision %s, built from a commit of %s, %s", v, rev, when, info.GoVersion)
}
