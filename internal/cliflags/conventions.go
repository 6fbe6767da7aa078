package cliflags

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// VersionFlagName is the flag that prints Version on every command.
const VersionFlagName = "version"

// Version describes the running binary from its build info (runtime/debug.ReadBuildInfo): the main
// module's version ("(devel)" for a build of a work tree), the VCS revision it was built from ("+dirty"
// when the tree had uncommitted changes) and that revision's commit time, the only time build info holds.
// A binary built without VCS stamping (go run, go test, -buildvcs=false) says "revision unknown".
func Version() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown (no build info)"
	}
	return versionOf(info)
}

func versionOf(info *debug.BuildInfo) string {
	version := info.Main.Version
	if version == "" {
		version = "(devel)"
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	rev, when := settings["vcs.revision"], settings["vcs.time"]
	if rev == "" {
		return version + ", revision unknown, build time unknown (built without VCS stamping), " + info.GoVersion
	}
	if settings["vcs.modified"] == "true" {
		rev += "+dirty"
	}
	if when == "" {
		when = "unknown"
	}
	return fmt.Sprintf("%s, revision %s, built from a commit of %s, %s", version, rev, when, info.GoVersion)
}

// Conventions gives app the conventions every command of speech-infra and tts-bench follows:
//
//   - --version on the application and on every command prints "<app> <Version()>" on stdout, exit 0;
//   - a misspelt flag is a usage error (exit 2) that names the nearest flag ("did you mean --format?") and
//     the command's --help; an unknown command names the nearest command;
//   - --help and -h print on stdout (app.Writer) and exit 0, as urfave/cli does; so does the help command,
//     `help [command...]`, which Run gives the application (withHelp): it works even where the application
//     leaves it out of its command list (HideHelpCommand), and takes --version like every command;
//   - --catalog DIR on every command makes its run use the catalog files in DIR (catalog says how).
//
// Call it once the commands are in place; flags added to a command after it get the conventions too.
func Conventions(app *cli.App, catalog Catalog) {
	app.Version = Version()
	app.Suggest = true
	cli.SuggestDidYouMeanTemplate = "did you mean %q?"
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return usageError(app.Name, nil, app.Flags, err)
	}
	rootAction := app.Action
	app.Action = func(c *cli.Context) error {
		if c.Args().Present() {
			return exitcode.Usage(unknownCommand(app.Commands, c.Args().First(), app.Name))
		}
		if rootAction != nil {
			return rootAction(c)
		}
		return cli.ShowAppHelp(c)
	}
	cli.VersionPrinter = printVersion
	stringerOnce.Do(func() { cli.FlagStringer = oneDefault(cli.FlagStringer) })
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			conventions(app.Name, append(append([]string{}, path...), c.Name), c, catalog)
			walk(append(append([]string{}, path...), c.Name), c.Subcommands)
		}
	}
	walk(nil, app.Commands)
}

// stringerOnce installs oneDefault once per process (cli.FlagStringer is urfave/cli's global).
var stringerOnce sync.Once

// oneDefault wraps urfave/cli's flag stringer so that a flag whose usage says its default itself ("(default:
// the catalog's)") does not get urfave's "(default: 0)" after it: a flag's help names its default once.
func oneDefault(base cli.FlagStringFunc) cli.FlagStringFunc {
	return func(f cli.Flag) string {
		s := base(f)
		if b, ok := f.(*cli.BoolFlag); ok && !b.Value {
			// A switch is off unless given: "(default: false)" says nothing.
			s = strings.Replace(s, " (default: false)", "", 1)
		}
		df, ok := f.(cli.DocGenerationFlag)
		if !ok || !strings.Contains(df.GetUsage(), "(default") {
			return s
		}
		if d := df.GetDefaultText(); d != "" {
			s = strings.Replace(s, " (default: "+d+")", "", 1)
		}
		return s
	}
}

// CatalogFlagName is the flag that replaces the built-in model catalog with a directory (Catalog.Use).
const CatalogFlagName = "catalog"

// Catalog is the model catalog that --catalog replaces, as the models package provides it (models.CatalogEnv,
// models.UseDir, models.CatalogSource): the commands pass it in, so that this package does not import models.
type Catalog struct {
	// Env is the environment variable that gives the directory when the flag is not given.
	Env string
	// Use makes the catalog load the files in dir ("" goes back to Env, else the built-in catalog).
	Use func(dir string)
	// Source names the catalog in use, said on stderr by every run that replaces it.
	Source func() string
}

// conventions gives one command the --version and --catalog flags and the usage errors with a suggestion.
func conventions(appName string, path []string, c *cli.Command, catalog Catalog) {
	c.Flags = append(c.Flags, versionFlag(),
		&cli.StringFlag{Name: CatalogFlagName, EnvVars: []string{catalog.Env}, Usage: "a directory of model catalog files (<model-id>.json, e.g. the repository's models/) to use instead of the catalog built into this binary (default: the built-in one)"})
	c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return usageError(appName, path, c.Flags, err)
	}
	action := c.Action
	if action == nil && len(c.Subcommands) > 0 {
		action = cli.ShowSubcommandHelp
	}
	c.Action = func(ctx *cli.Context) error {
		if ctx.Bool(VersionFlagName) {
			printVersion(ctx)
			return nil
		}
		if action == nil {
			return nil
		}
		if dir := ctx.String(CatalogFlagName); dir != "" {
			// Said on every run that replaces it, so that an edited catalog is never used, or ignored, silently.
			catalog.Use(dir)
			defer catalog.Use("")
			fmt.Fprintf(ctx.App.ErrWriter, "%s: using %s\n", appName, catalog.Source())
		}
		return action(ctx)
	}
}

// versionFlag is --version of a command.
func versionFlag() cli.Flag {
	return &cli.BoolFlag{Name: VersionFlagName, Usage: "print the version and exit", DisableDefaultText: true}
}

// printVersion prints "<app> <version>" on stdout.
func printVersion(c *cli.Context) { fmt.Fprintf(c.App.Writer, "%s %s\n", c.App.Name, c.App.Version) }

// unknownCommand is the error for name, which none of cmds is called: it names the nearest of them and the
// help of helpOf, the command line whose commands cmds are ("tool local").
func unknownCommand(cmds []*cli.Command, name, helpOf string) error {
	if len(cmds) == 0 {
		return fmt.Errorf("unknown command %q: %s has no commands: see %s --help", name, helpOf, helpOf)
	}
	return fmt.Errorf("unknown command %q: %s see %s --help", name, cli.SuggestCommand(cmds, name), helpOf)
}

// The name and alias of urfave/cli's help command, which the help command of the conventions keeps.
const (
	helpName  = "help"
	helpAlias = "h"
)

// withHelp gives app, and each of its commands that has subcommands, the help command of the conventions
// instead of the one urfave/cli adds when it runs: `help [command...]` prints what `[command...] --help`
// prints (exit 0), `help --version` prints the version, and an unknown command after it is a usage error
// naming the nearest (exit 2). An application or command that hides its help command (HideHelpCommand)
// keeps it out of its command list, yet `help` works; one without help (HideHelp), or with a help command
// of its own, keeps what it has. A second call changes nothing.
func withHelp(app *cli.App) {
	if app.HideHelp || find(app.Commands, helpName) != nil {
		return
	}
	app.Commands = append(app.Commands, helpCommand(app, nil, app.HideHelpCommand))
	// urfave/cli adds the application's --help flag only together with its own help command.
	if cli.HelpFlag != nil && !slices.ContainsFunc(app.Flags, func(f cli.Flag) bool { return slices.Equal(f.Names(), cli.HelpFlag.Names()) }) {
		app.Flags = append(app.Flags, cli.HelpFlag)
	}
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			if len(c.Subcommands) == 0 {
				continue
			}
			p := append(slices.Clone(path), c.Name)
			walk(p, c.Subcommands)
			if !c.HideHelp && find(c.Subcommands, helpName) == nil {
				c.Subcommands = append(c.Subcommands, helpCommand(app, p, c.HideHelpCommand))
			}
		}
	}
	walk(nil, app.Commands)
}

// helpCommand is the help command of the command at path (nil: the application). It shows a command's help
// by running the command line with --help, so that the two print the same.
func helpCommand(app *cli.App, path []string, hidden bool) *cli.Command {
	self := append(slices.Clone(path), helpName)
	h := &cli.Command{
		Name:      helpName,
		Aliases:   []string{helpAlias},
		Usage:     "Shows a list of commands or help for one command",
		ArgsUsage: "[command]",
		Hidden:    hidden,
		Flags:     []cli.Flag{versionFlag()},
		OnUsageError: func(_ *cli.Context, err error, _ bool) error {
			return usageError(app.Name, self, []cli.Flag{versionFlag()}, err)
		},
	}
	h.Action = func(c *cli.Context) error {
		if c.Bool(VersionFlagName) {
			printVersion(c)
			return nil
		}
		target := slices.Clone(path)
		cmds := app.Commands
		for _, name := range path {
			cmds = find(cmds, name).Subcommands
		}
		for _, name := range c.Args().Slice() {
			next := find(cmds, name)
			if next == nil {
				err := unknownCommand(cmds, name, strings.Join(append([]string{app.Name}, target...), " "))
				return exitcode.Usagef("%s: %w", strings.Join(self, " "), err)
			}
			target = append(target, next.Name)
			cmds = next.Subcommands
		}
		return app.RunContext(c.Context, append(append([]string{app.Name}, target...), "--help"))
	}
	return h
}

// undefinedFlag is the flag package's error for a flag no command defines.
var undefinedFlag = regexp.MustCompile(`^flag provided but not defined: -+(.+)$`)

// usageError marks a flag parsing error of the command at path as a usage error, naming the nearest of
// flags when the flag is misspelt and the help to read.
func usageError(appName string, path []string, flags []cli.Flag, err error) error {
	help := strings.Join(append([]string{appName}, append(path, "--help")...), " ")
	if m := undefinedFlag.FindStringSubmatch(err.Error()); m != nil {
		if s := cli.SuggestFlag(flags, m[1], false); s != "" {
			return exitcode.Usagef("%w: did you mean %s? (see %s)", err, s, help)
		}
	}
	return exitcode.Usagef("%w: see %s", err, help)
}

// HelpWidth is the width WrapHelp fills a help paragraph to.
const HelpWidth = 108

// WrapHelp breaks a paragraph of a command's help into lines of at most HelpWidth runes, between words.
func WrapHelp(s string) string {
	var b strings.Builder
	n := 0
	for _, w := range strings.Fields(s) {
		l := len([]rune(w))
		switch {
		case n == 0:
		case n+1+l > HelpWidth:
			b.WriteByte('\n')
			n = 0
		default:
			b.WriteByte(' ')
			n++
		}
		b.WriteString(w)
		n += l
	}
	return b.String()
}
