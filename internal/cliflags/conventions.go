package cliflags

import (
	"fmt"
	"regexp"
	"runtime/debug"
	"strings"
	"sync"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
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
//   - --help and -h print on stdout (app.Writer) and exit 0, as urfave/cli does.
//
// Call it once the commands are in place; flags added to a command after it get the conventions too.
func Conventions(app *cli.App) {
	app.Version = Version()
	app.Suggest = true
	cli.SuggestDidYouMeanTemplate = "did you mean %q?"
	app.OnUsageError = func(c *cli.Context, err error, _ bool) error {
		return usageError(app.Name, nil, app.Flags, err)
	}
	rootAction := app.Action
	app.Action = func(c *cli.Context) error {
		if c.Args().Present() {
			name := c.Args().First()
			return exitcode.Usagef("unknown command %q: %s see %s --help", name, cli.SuggestCommand(app.Commands, name), app.Name)
		}
		if rootAction != nil {
			return rootAction(c)
		}
		return cli.ShowAppHelp(c)
	}
	cli.VersionPrinter = func(c *cli.Context) { fmt.Fprintf(c.App.Writer, "%s %s\n", c.App.Name, c.App.Version) }
	stringerOnce.Do(func() { cli.FlagStringer = oneDefault(cli.FlagStringer) })
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			conventions(app.Name, append(append([]string{}, path...), c.Name), c)
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

// CatalogFlagName is the flag that replaces the built-in model catalog with a directory (models.UseDir).
const CatalogFlagName = "catalog"

// conventions gives one command the --version and --catalog flags and the usage errors with a suggestion.
func conventions(appName string, path []string, c *cli.Command) {
	c.Flags = append(c.Flags, &cli.BoolFlag{Name: VersionFlagName, Usage: "print the version and exit", DisableDefaultText: true},
		&cli.StringFlag{Name: CatalogFlagName, EnvVars: []string{models.CatalogEnv}, Usage: "a directory of model catalog files (<model-id>.json, e.g. the repository's models/) to use instead of the catalog built into this binary (default: the built-in one)"})
	c.OnUsageError = func(_ *cli.Context, err error, _ bool) error {
		return usageError(appName, path, c.Flags, err)
	}
	action := c.Action
	if action == nil && len(c.Subcommands) > 0 {
		action = cli.ShowSubcommandHelp
	}
	c.Action = func(ctx *cli.Context) error {
		if ctx.Bool(VersionFlagName) {
			fmt.Fprintf(ctx.App.Writer, "%s %s\n", ctx.App.Name, ctx.App.Version)
			return nil
		}
		if action == nil {
			return nil
		}
		if dir := ctx.String(CatalogFlagName); dir != "" {
			// Said on every run that replaces it, so that an edited catalog is never used, or ignored, silently.
			models.UseDir(dir)
			defer models.UseDir("")
			fmt.Fprintf(ctx.App.ErrWriter, "%s: using %s\n", appName, models.CatalogSource())
		}
		return action(ctx)
	}
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
