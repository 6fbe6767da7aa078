package cliflags

import (
	"context"
	"io"
	"slices"
	"testing"

	"github.com/urfave/cli/v2"
)

func testCommands() []*cli.Command {
	return []*cli.Command{
		{Name: "deploy", Flags: []cli.Flag{
			&cli.BoolFlag{Name: "local", Aliases: []string{"l"}},
			&cli.StringFlag{Name: "plan", Aliases: []string{"p"}},
			&cli.IntFlag{Name: "port"},
		}},
		{Name: "local", Subcommands: []*cli.Command{
			{Name: "status", Aliases: []string{"st"}, Flags: []cli.Flag{&cli.StringFlag{Name: "format"}, &cli.BoolFlag{Name: "yes"}}},
		}},
		{Name: "quiet", HideHelp: true, Flags: []cli.Flag{&cli.DurationFlag{Name: "wait"}}},
	}
}

func TestReorder(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"bool after argument", []string{"p", "deploy", "m", "--local"}, []string{"p", "deploy", "--local", "m"}},
		{"alias and value flag after a bool", []string{"p", "deploy", "m", "-l", "--plan", "x.json"}, []string{"p", "deploy", "-l", "--plan", "x.json", "m"}},
		{"value flag keeps a value that looks like a flag", []string{"p", "deploy", "m", "--port", "-3", "--local"}, []string{"p", "deploy", "--port", "-3", "--local", "m"}},
		{"flag=value", []string{"p", "deploy", "m", "--plan=x", "--local=false"}, []string{"p", "deploy", "--plan=x", "--local=false", "m"}},
		{"help is a bool", []string{"p", "deploy", "m", "--help", "n"}, []string{"p", "deploy", "--help", "m", "n"}},
		{"-h is a bool", []string{"p", "deploy", "m", "-h", "n"}, []string{"p", "deploy", "-h", "m", "n"}},
		{"hidden help is not a known bool", []string{"p", "quiet", "m", "--help", "n"}, []string{"p", "quiet", "--help", "n", "m"}},
		{"terminator keeps what follows an argument", []string{"p", "deploy", "m", "--local", "--", "--plan", "x"}, []string{"p", "deploy", "--local", "m", "--", "--plan", "x"}},
		{"subcommand by alias", []string{"p", "local", "st", "extra", "--yes", "--format", "json"}, []string{"p", "local", "st", "--yes", "--format", "json", "extra"}},
		{"a lone dash is an argument", []string{"p", "deploy", "-", "--local"}, []string{"p", "deploy", "--local", "-"}},
		{"unknown command unchanged", []string{"p", "nope", "m", "--local"}, []string{"p", "nope", "m", "--local"}},
		{"app flag first unchanged", []string{"p", "--help", "deploy"}, []string{"p", "--help", "deploy"}},
		{"program only", []string{"p"}, []string{"p"}},
		{"value flag at the end", []string{"p", "deploy", "m", "--plan"}, []string{"p", "deploy", "--plan", "m"}},
	}
	for _, tt := range tests {
		if got := Reorder(testCommands(), tt.args); !slices.Equal(got, tt.want) {
			t.Errorf("%s: Reorder(%q) = %q, want %q", tt.name, tt.args, got, tt.want)
		}
	}
}

// A bool flag added to a command definition is known to Reorder with no other edit.
func TestNewBoolFlagNeedsNoEdit(t *testing.T) {
	cmds := testCommands()
	cmds[0].Flags = append(cmds[0].Flags, &cli.BoolFlag{Name: "yes", Aliases: []string{"y"}})
	for _, flag := range []string{"--yes", "-y", "--y"} {
		got := Reorder(cmds, []string{"p", "deploy", "m", flag, "--plan", "x"})
		if want := []string{"p", "deploy", flag, "--plan", "x", "m"}; !slices.Equal(got, want) {
			t.Errorf("Reorder with %s = %q, want %q", flag, got, want)
		}
	}
	if got := NoValueFlags(cmds[0]); !got["local"] || !got["l"] || !got["yes"] || !got["y"] || !got["help"] || !got["h"] || got["plan"] || got["port"] {
		t.Errorf("NoValueFlags(deploy) = %v", got)
	}
}

// Run parses the reordered command line: the action sees the flags and exactly the argument.
func TestRunParsesFlagsAfterTheArgument(t *testing.T) {
	var local bool
	var plan string
	var args []string
	cmds := testCommands()
	cmds[0].Action = func(c *cli.Context) error {
		local, plan, args = c.Bool("local"), c.String("plan"), c.Args().Slice()
		return nil
	}
	app := &cli.App{Name: "p", Commands: cmds, Writer: io.Discard, ErrWriter: io.Discard}
	if err := Run(context.Background(), app, []string{"p", "deploy", "m", "--local", "--plan", "x.json"}); err != nil {
		t.Fatal(err)
	}
	if !local || plan != "x.json" || !slices.Equal(args, []string{"m"}) {
		t.Errorf("parsed local %v, plan %q, args %q; want true, x.json, [m]", local, plan, args)
	}
}
