package cliflagstest

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

// IssueRef is a reference to the project's issue tracker, which users cannot read: the word issue or issues, in
// any case, then a number, with or without a "#" before it. Help, code and documents state the fact or rule
// instead (docs/noissue_test.go checks the Go source and the documents with it, the commands' tests their help).
var IssueRef = regexp.MustCompile(`(?i)\bissues? #?[0-9]`)

// HelpIssueRefs prints the --help of the application mk builds and of every command and subcommand under it,
// each through cliflags.Run on an application of its own, as the CLIs run, and lists the help lines that cite
// an issue, naming the command line. ran are the command lines it printed the help of.
func HelpIssueRefs(t testing.TB, mk func(stdout, stderr io.Writer) *cli.App) (refs, ran []string) {
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
			if IssueRef.MatchString(l) {
				refs = append(refs, fmt.Sprintf("%s: line %d: %s", line, n+1, strings.TrimSpace(l)))
			}
		}
	}
	return refs, ran
}

// CheckHelpCitesNoIssueNumbers fails t for every help line of the application mk builds that cites an issue,
// and when the help of the application, each of its commands and the command line mustRun were not all
// printed (the walk itself broken).
func CheckHelpCitesNoIssueNumbers(t testing.TB, mk func(stdout, stderr io.Writer) *cli.App, mustRun string) {
	t.Helper()
	refs, ran := HelpIssueRefs(t, mk)
	app := mk(io.Discard, io.Discard)
	if len(ran) < len(app.Commands)+1 || !slices.Contains(ran, mustRun) {
		t.Fatalf("printed the help of %v: want the application and each of its %d commands, %q among them", ran, len(app.Commands), mustRun)
	}
	for _, r := range refs {
		t.Errorf("%s: state the fact or rule the issue stands for", r)
	}
}
