// Command demo is `make demo`: the whole measurement loop of speech-infra on the local emulator, in a few
// minutes, without an AWS account.
//
// It deploys espeak-ng on the emulator under the kokoro-g5 start-up profile (compressed by
// SPEECH_EMULATOR_TIME_SCALE), runs tts-bench drift, a short qmax, ttotal and plan, deploys again so that the plan
// passes the gate and the scaling policy is created, validates it, drives a load surge and shows the autoscaler
// adding an instance, lists the artifacts and charts, destroys the endpoint and stops the emulator. Every
// command is printed before it runs, so a newcomer can run it again by hand. The last lines are a summary
// (see summary.go) that tools/demo/check verifies in CI.
//
// Everything lives under -dir (default .demo/): the emulator's state, the journals and the artifacts, never
// the user's .state/ or artifacts/. The emulator listens on -port (default 4699). On SIGINT or SIGTERM the
// running command gets SIGINT (tts-bench restores what it froze), then the endpoint is destroyed and the
// emulator stopped, so nothing is left running.
//
// Usage (from the repository root, after make build):
//
//	go run ./tools/demo [-dir .demo] [-port 4699] [-time-scale 50] [-docs docs]
//	go run ./tools/demo -check demo.log   # the summary lines of a captured run exist and are sane (CI)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/speech-infra/speech-infra/internal/cliflags"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return // -h: the usage is printed, exit 0
		}
		os.Exit(exitcode.Report(os.Stderr, "demo", err))
	}
}

// run parses the flags and runs the demo.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	if helpRequested(args) {
		fs.SetOutput(stdout) // -h is what was asked for: the usage is the output, and main exits 0
	}
	o := defaultOptions()
	fs.StringVar(&o.Dir, "dir", o.Dir, "the demo's own directory: emulator state, journals, artifacts (wiped at start)")
	fs.IntVar(&o.Port, "port", o.Port, "the demo emulator's port on 127.0.0.1")
	fs.Float64Var(&o.TimeScale, "time-scale", o.TimeScale, "how many times faster than on AWS the kokoro-g5 start-up profile runs")
	fs.StringVar(&o.Bin, "bin", o.Bin, "directory of speech-infra, tts-bench and speech-container (make build)")
	fs.StringVar(&o.Docs, "docs", o.Docs, "when set, copy the staircase and waterfall charts into this directory (make docs)")
	check := fs.String("check", "", "instead of running: check the summary in this captured output of a run (- for stdin)")
	version := fs.Bool("version", false, "print the version (module, VCS revision, commit time) and exit")
	if err := fs.Parse(args); err != nil {
		return exitcode.Usage(err)
	}
	if *version {
		_, err := fmt.Fprintln(stdout, "demo", cliflags.Version())
		return err
	}
	if fs.NArg() > 0 {
		return exitcode.Usage(fmt.Errorf("unexpected argument %q: the demo takes flags only (see -h)", fs.Arg(0)))
	}
	if *check != "" {
		return runCheck(*check, stdout)
	}
	if errs := o.Validate(); len(errs) > 0 {
		return exitcode.Usage(errors.Join(errs...))
	}
	return o.Execute(ctx, stdout, stderr)
}

// helpRequested reports whether args ask for the usage (-h, -help, --help) before any "--".
func helpRequested(args []string) bool {
	for _, a := range args {
		switch a {
		case "--":
			return false
		case "-h", "-help", "--h", "--help":
			return true
		}
	}
	return false
}

// runCheck checks the summary of a captured run: exit 1 listing every problem, 2 when the file is unreadable.
func runCheck(path string, stdout io.Writer) error {
	var r io.Reader = os.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return exitcode.Usage(fmt.Errorf("-check %s: %w: give the file the demo's output was captured in", path, err))
		}
		defer f.Close()
		r = f
	}
	if errs := checkSummary(r); len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, e := range errs {
			msgs[i] = "  " + e.Error()
		}
		return fmt.Errorf("the demo's summary in %s is not sane:\n%s", path, strings.Join(msgs, "\n"))
	}
	fmt.Fprintf(stdout, "demo summary in %s: every line present and sane\n", path)
	return nil
}
