package cliflagstest

import (
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"
)

// HelpIssueRefs on an application whose help cites issues: a command's description, a subcommand's and a
// flag's usage are caught, each naming its command line; the word without a number, or inside another word
// followed by one, is not.
func TestHelpIssueRefsCatchesAnIssueNumber(t *testing.T) {
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
	refs, ran := HelpIssueRefs(t, mk)
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
