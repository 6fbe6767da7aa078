package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/cliflags"
)

// A user reads the help, not the project's internal issue tracker: no help text cites an issue number ("issue"
// or "issues", then a number); it states the fact or rule instead. docs/ checks the Go source and the documents
// the same way (docs/noissue_test.go).

// issueRef is a reference to the issue tracker: the word issue or issues, in any case, then a number, with or
// without a "#" before it.
var issueRef = regexp.MustCompile(`(?i)\bissues? #?[0-9]`)

// helpIssueRefs prints the --help of the application mk builds and of every command and subcommand under it,
// each through cliflags.Run on an application of its own, as run does, and lists the help lines that cite an
// issue, naming the command line. ran are the command lines it printed the help of.
func helpIssueRefs(t *testing.T, mk func(stdout, stderr io.Writer) *cli.App) (refs, ran []string) {
	t.Helper()
	app := mk(io.Discard, io.Discard)
	paths := [][]string{{app.Name}}
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(slices.Clone(prefix), c.Name)
			paths = append(paths, p)
			walk(p, c.Subcommands)
		}
	}
	walk([]string{app.Name}, app.Commands)
	for _, p := range paths {
		args := append(slices.Clone(p), "--help")
		line := strings.Join(args, " ")
		var stdout, stderr bytes.Buffer
		if err := cliflags.Run(context.Background(), mk(&stdout, &stderr), args); err != nil || stdout.Len() == 0 {
			t.Errorf("%s: %v, %d bytes of help on stdout; want the help and no error", line, err, stdout.Len())
			continue
		}
		ran = append(ran, line)
		for n, l := range strings.Split(stdout.String()+stderr.String(), "\n") {
			if issueRef.MatchString(l) {
				refs = append(refs, fmt.Sprintf("%s: line %d: %s", line, n+1, strings.TrimSpace(l)))
			}
		}
	}
	return refs, ran
}

func TestHelpCitesNoIssueNumbers(t *testing.T) {
	refs, ran := helpIssueRefs(t, newApp)
	app := newApp(io.Discard, io.Discard)
	if len(ran) < len(app.Commands)+1 || !slices.Contains(ran, "speech-infra local serve --help") {
		t.Fatalf("printed the help of %v: want the application and each of its %d commands", ran, len(app.Commands))
	}
	for _, r := range refs {
		t.Errorf("%s: state the fact or rule the issue stands for", r)
	}
}

// helpIssueRefs on an application whose help cites issues: a command's description, a subcommand's and a
// flag's usage are caught, each naming its command line; the word without a number, or inside another word
// followed by one, is not.
func TestNoIssueHelpCheckCatchesAnIssueNumber(t *testing.T) {
	cite := strings.NewReplacer("№", "issue").Replace // № stands for the word, so this file cites no issue
	noop := func(*cli.Context) error { return nil }
	mk := func(stdout, stderr io.Writer) *cli.App {
		return &cli.App{Name: "x", Writer: stdout, ErrWriter: stderr, Commands: []*cli.Command{
			{Name: "clean", Usage: cite("files an № report, blows a t№ 5"), Action: noop},
			{Name: "described", Description: cite("Then the rate staircase (№ 7): one open-loop step"), Action: noop},
			{Name: "group", Subcommands: []*cli.Command{{Name: "sub", Description: cite("as № #7 asks"), Action: noop}}},
			{Name: "flagged", Flags: []cli.Flag{&cli.StringFlag{Name: "f", Usage: strings.ToUpper(cite("the format (№s 7 and 8)"))}}, Action: noop},
		}}
	}
	refs, ran := helpIssueRefs(t, mk)
	if want := []string{"x --help", "x clean --help", "x described --help", "x group --help", "x group sub --help", "x flagged --help"}; !slices.Equal(ran, want) {
		t.Errorf("printed the help of %q, want %q", ran, want)
	}
	if len(refs) != 3 {
		t.Fatalf("found %d, want 3 (described, group sub, flagged):\n%s", len(refs), strings.Join(refs, "\n"))
	}
	for i, want := range []string{"x described --help: ", "x group sub --help: ", "x flagged --help: "} {
		if !strings.HasPrefix(refs[i], want) {
			t.Errorf("reference %d = %q, want it under %q", i, refs[i], want)
		}
	}
}
