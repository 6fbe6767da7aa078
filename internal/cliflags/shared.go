package cliflags

import (
	"fmt"
	"path/filepath"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// The shared flag kit (after cli/cli's cmdutil): the flags several commands take are defined
// here once, each command giving only the help text that says what the flag means to it.

// Names of the shared flags.
const (
	StateDirName     = "state-dir"
	ContainerDirName = "container-dir"
	JournalDirName   = "journal-dir"
	OutputName       = "output"
	DryRunName       = "dry-run"
	ForceName        = "force"
	FormatName       = "format"
	LocalName        = "local"
)

// Flag categories: urfave/cli lists a command's flags under these headings in --help.
const (
	CategoryAWS   = "AWS"
	CategoryLocal = "--local (the emulator)"
)

// DefaultStateDir is the emulator state directory speech-infra and tts-bench use by default.
var DefaultStateDir = filepath.Join(".state", "emulator")

// DefaultContainerDir is the container source tree whose digest the plan and the gate compare.
const DefaultContainerDir = "container"

// StateDir is --state-dir: the local emulator's state directory ($SPEECH_INFRA_STATE_DIR).
func StateDir(usage string) *cli.StringFlag {
	return &cli.StringFlag{Name: StateDirName, Value: DefaultStateDir, EnvVars: []string{"SPEECH_INFRA_STATE_DIR"}, Usage: usage, Category: CategoryLocal}
}

// ContainerDir is --container-dir, the container source tree (default DefaultContainerDir).
func ContainerDir(usage string) *cli.StringFlag {
	return &cli.StringFlag{Name: ContainerDirName, Value: DefaultContainerDir, Usage: usage}
}

// JournalDir is --journal-dir, the directory of the freeze journals, defaulting to dir (cloud.DefaultJournalDir;
// this leaf package does not import cloud).
func JournalDir(dir, usage string) *cli.StringFlag {
	return &cli.StringFlag{Name: JournalDirName, Value: dir, Usage: usage}
}

// Output is --output: where an artifact is written; usage names the default.
func Output(usage string) *cli.StringFlag {
	return &cli.StringFlag{Name: OutputName, Usage: usage}
}

// DryRun is --dry-run.
func DryRun(usage string) *cli.BoolFlag { return &cli.BoolFlag{Name: DryRunName, Usage: usage} }

// Force is --force.
func Force(usage string) *cli.BoolFlag { return &cli.BoolFlag{Name: ForceName, Usage: usage} }

// Local is --local: run against the local emulator of --state-dir instead of AWS.
func Local(usage string) *cli.BoolFlag {
	return &cli.BoolFlag{Name: LocalName, Usage: usage, Category: CategoryLocal}
}

// The --format vocabulary of every command that prints results.
const (
	FormatText = "text"
	FormatJSON = "json"
)

// Format is --format text|json (default text); usage says what each prints, or "" for the plain wording.
func Format(usage string) *cli.StringFlag {
	if usage == "" {
		usage = "what to print on stdout: text or json"
	}
	return &cli.StringFlag{Name: FormatName, Value: FormatText, Usage: usage}
}

// CheckFormat accepts --format text or json, and the names earlier versions used for text (table; env for
// speech-infra local status) so scripts keep working; anything else is a usage error naming the two.
func CheckFormat(f string) error {
	switch f {
	case FormatText, FormatJSON, "table", "env":
		return nil
	}
	return exitcode.Usagef("--%s %q is not a format: use %s or %s", FormatName, f, FormatText, FormatJSON)
}

// InCategory puts flags in a --help category (CategoryAWS, CategoryLocal) and returns them.
func InCategory(category string, flags ...cli.Flag) []cli.Flag {
	for _, f := range flags {
		switch f := f.(type) {
		case *cli.StringFlag:
			f.Category = category
		case *cli.BoolFlag:
			f.Category = category
		case *cli.IntFlag:
			f.Category = category
		case *cli.DurationFlag:
			f.Category = category
		default:
			panic(fmt.Sprintf("cliflags.InCategory: add %T", f))
		}
	}
	return flags
}

// PricePerHourName is the name of the shared --price-per-hour flag.
const PricePerHourName = "price-per-hour"

// PricePerHour is --price-per-hour, repeatable: a bare USD for the model's instance type, or TYPE=USD (parsed
// by models.ParsePriceOverrides, priced by models.Model.ResolvePrice), so that tts-bench simulate and tts-bench
// compare price instance-hours alike.
func PricePerHour() cli.Flag {
	return &cli.StringSliceFlag{Name: PricePerHourName,
		Usage: "US dollars per instance-hour: USD for the model's instance type, or TYPE=USD; repeat for more types (default: the catalog's prices)"}
}
