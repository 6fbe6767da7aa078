// Package cliflagstest checks, for tests, that every command of a urfave/cli/v2 application accepts its
// boolean flags after its argument through cliflags.Run, with no list of flags kept anywhere.
package cliflagstest

import (
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/cliflags"
)

// Fake flags the check adds to every command, as a developer would add a new flag: no other edit.
const (
	FakeBool  = "zz-added-bool"
	FakeAlias = "zz-b"
	FakeValue = "zz-added-value"
)

// Paths lists the command path (e.g. ["local", "status"]) of every command of app that runs an action:
// every command without subcommands, hidden ones included.
func Paths(app *cli.App) [][]string {
	var paths [][]string
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(slices.Clone(prefix), c.Name)
			if len(c.Subcommands) > 0 {
				walk(p, c.Subcommands)
				continue
			}
			paths = append(paths, p)
		}
	}
	walk(nil, app.Commands)
	return paths
}

// lookup returns the command of app at path.
func lookup(app *cli.App, path []string) *cli.Command {
	cmds := app.Commands
	var cmd *cli.Command
	for _, name := range path {
		cmd = nil
		for _, c := range cmds {
			if c.HasName(name) {
				cmd = c
			}
		}
		if cmd == nil {
			return nil
		}
		cmds = cmd.Subcommands
	}
	return cmd
}

// CheckBoolFlagsAfterArgument proves, for every command of the application newApp builds, that each of its
// boolean flags (every name and alias) and a boolean flag the check adds itself parse when they follow the
// command's argument, and that a value flag after a boolean one keeps its value. The command's action is
// replaced by one that records what it parsed; newApp must return a new application on each call.
func CheckBoolFlagsAfterArgument(t *testing.T, newApp func(stdout, stderr io.Writer) *cli.App) {
	t.Helper()
	paths := Paths(newApp(io.Discard, io.Discard))
	if len(paths) == 0 {
		t.Fatal("the application has no commands")
	}
	for _, path := range paths {
		t.Run(strings.Join(path, " "), func(t *testing.T) {
			// Every boolean flag the command defines, by each of its names, and the added one.
			names := []string{FakeBool, FakeAlias}
			for _, f := range lookup(newApp(io.Discard, io.Discard), path).Flags {
				if b, ok := f.(*cli.BoolFlag); ok {
					names = append(names, b.Names()...)
				}
			}
			for _, name := range names {
				app := newApp(io.Discard, io.Discard)
				cmd := lookup(app, path)
				cmd.Flags = append(cmd.Flags,
					&cli.BoolFlag{Name: FakeBool, Aliases: []string{FakeAlias}},
					&cli.StringFlag{Name: FakeValue})
				var ran bool
				var args []string
				var isSet bool
				var value string
				cmd.Action = func(c *cli.Context) error {
					ran, args, isSet, value = true, c.Args().Slice(), c.Bool(name), c.String(FakeValue)
					return nil
				}
				cmd.Before = nil
				argv := append(append([]string{app.Name}, path...), "the-argument", "--"+name, "--"+FakeValue, "v")
				if err := cliflags.Run(context.Background(), app, argv); err != nil {
					t.Errorf("%q: %v", argv, err)
					continue
				}
				if !ran || !isSet || !slices.Equal(args, []string{"the-argument"}) || value != "v" {
					t.Errorf("%q: action ran %v with --%s %v, arguments %q, --%s %q; want --%s true, arguments [the-argument], --%s v",
						argv, ran, name, isSet, args, FakeValue, value, name, FakeValue)
				}
			}
		})
	}
}
