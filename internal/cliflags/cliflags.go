// Package cliflags is the command-line kit of speech-infra and tts-bench (cli/cli's cmdutil): the conventions
// every command follows (Conventions: --version, suggestions for misspelt flags and commands, one default per
// flag in help), the flags several commands share (shared.go: --state-dir, --container-dir, --journal-dir,
// --output, --dry-run, --force, --format, --local, and the AWS and --local help categories), and flag order.
//
// Run lets the flags of a urfave/cli/v2 command follow its arguments, as in
// `speech-infra deploy espeak-ng --local`: urfave/cli stops parsing flags at the first argument, so Reorder
// moves the flags of the command line before its arguments. Which flags take no value (and so must not
// swallow the argument after them) comes from the commands' own flag definitions: a new boolean flag needs
// no other edit.
package cliflags

import (
	"context"
	"strings"

	"github.com/urfave/cli/v2"
)

// Run runs app with args (args[0] is the program name), the flags of the command line moved before its
// arguments by Reorder, with the help command of the conventions (withHelp).
func Run(ctx context.Context, app *cli.App, args []string) error {
	withHelp(app)
	return app.RunContext(ctx, Reorder(app.Commands, args))
}

// Reorder returns args with the flags after the command path (a command and its subcommands, e.g.
// `local status`) moved before the arguments, keeping each value flag's value with it and the order within
// flags and within arguments. Everything after "--" stays an argument. A command line that names no command
// of cmds, or names a command without ever giving a flag after an argument, comes back unchanged.
func Reorder(cmds []*cli.Command, args []string) []string {
	if len(args) < 2 {
		return args
	}
	i := 1
	var cmd *cli.Command
	for i < len(args) {
		next := find(cmds, args[i])
		if next == nil {
			break
		}
		cmd, cmds = next, next.Subcommands
		i++
	}
	if cmd == nil {
		return args
	}
	noValue := NoValueFlags(cmd)
	var flags, positional []string
	rest := args[i:]
	for j := 0; j < len(rest); j++ {
		a := rest[j]
		if a == "--" {
			// Keep the terminator: what follows stays an argument even when it starts with '-'.
			positional = append(positional, rest[j:]...)
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if !strings.Contains(name, "=") && !noValue[name] && j+1 < len(rest) {
			flags = append(flags, rest[j+1])
			j++
		}
	}
	out := append(append([]string{}, args[:i]...), flags...)
	return append(out, positional...)
}

// find returns the command of cmds named or aliased name, or nil.
func find(cmds []*cli.Command, name string) *cli.Command {
	for _, c := range cmds {
		if c.HasName(name) {
			return c
		}
	}
	return nil
}

// NoValueFlags is the set of names and aliases of cmd's flags that take no value: every flag whose
// definition says it takes none (*cli.BoolFlag and any flag with TakesValue() false), and the help flag
// urfave/cli adds unless the command hides it.
func NoValueFlags(cmd *cli.Command) map[string]bool {
	set := map[string]bool{}
	add := func(f cli.Flag) {
		if f == nil || takesValue(f) {
			return
		}
		for _, n := range f.Names() {
			set[n] = true
		}
	}
	for _, f := range cmd.Flags {
		add(f)
	}
	if !cmd.HideHelp {
		add(cli.HelpFlag)
	}
	return set
}

// takesValue says whether f needs a value after it. A flag that does not say is taken to need one, as urfave/cli
// parses it.
func takesValue(f cli.Flag) bool {
	if _, ok := f.(*cli.BoolFlag); ok {
		return false
	}
	if v, ok := f.(interface{ TakesValue() bool }); ok {
		return v.TakesValue()
	}
	return true
}
