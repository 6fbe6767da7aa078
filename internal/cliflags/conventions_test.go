package cliflags

import (
	"bytes"
	"context"
	"runtime/debug"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

func TestVersionOf(t *testing.T) {
	stamped := &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Version: "v1.2.3"}, Settings: []debug.BuildSetting{
		{Key: "vcs.revision", Value: "abc123"}, {Key: "vcs.time", Value: "2026-11-30T10:00:00Z"}, {Key: "vcs.modified", Value: "true"}}}
	if got, want := versionOf(stamped), "v1.2.3, revision abc123+dirty, built from a commit of 2026-11-30T10:00:00Z, go1.26.0"; got != want {
		t.Errorf("versionOf(stamped) = %q, want %q", got, want)
	}
	bare := &debug.BuildInfo{GoVersion: "go1.26.0"}
	if got := versionOf(bare); !strings.HasPrefix(got, "(devel), revision unknown") {
		t.Errorf("versionOf(bare) = %q", got)
	}
}

// conventionsApp is a two-level application with the conventions, as speech-infra and tts-bench build theirs.
func conventionsApp(stdout, stderr *bytes.Buffer) *cli.App {
	app := &cli.App{Name: "tool", Writer: stdout, ErrWriter: stderr, ExitErrHandler: func(*cli.Context, error) {},
		Commands: []*cli.Command{
			{Name: "deploy", Flags: []cli.Flag{
				Format(""), Local("use the emulator"), StateDir("state"),
				&cli.IntFlag{Name: "min-instances", Usage: "fleet minimum (default: the catalog's)"},
			}, Action: func(*cli.Context) error { return nil }},
			{Name: "local", Subcommands: []*cli.Command{{Name: "status", Action: func(*cli.Context) error { return nil }}}},
		}}
	Conventions(app, Catalog{Env: "TOOL_CATALOG", Use: func(string) {}, Source: func() string { return "the test catalog" }})
	return app
}

func TestConventions(t *testing.T) {
	for _, tc := range []struct {
		args             []string
		code             int
		stdout, stderror string
	}{
		{[]string{"--version"}, 0, "tool " + Version() + "\n", ""},
		{[]string{"deploy", "--version"}, 0, "tool " + Version() + "\n", ""},
		{[]string{"local", "status", "--version"}, 0, "tool " + Version() + "\n", ""},
		{[]string{"deploy", "--formt", "json"}, 2, "", "flag provided but not defined: -formt: did you mean --format? (see tool deploy --help)"},
		{[]string{"local", "status", "--bogus"}, 2, "", "flag provided but not defined: -bogus"},
		{[]string{"deplyo"}, 2, "", `unknown command "deplyo": did you mean "deploy"? see tool --help`},
	} {
		var stdout, stderr bytes.Buffer
		err := Run(context.Background(), conventionsApp(&stdout, &stderr), append([]string{"tool"}, tc.args...))
		if code := exitcode.Code(err); code != tc.code {
			t.Errorf("%q: exit %d (%v), want %d", tc.args, code, err, tc.code)
		}
		if stdout.String() != tc.stdout {
			t.Errorf("%q: stdout %q, want %q", tc.args, stdout.String(), tc.stdout)
		}
		if tc.stderror != "" && (err == nil || !strings.Contains(err.Error(), tc.stderror)) {
			t.Errorf("%q: error %v, want it to contain %q", tc.args, err, tc.stderror)
		}
	}
	for _, args := range [][]string{{"--help"}, {"-h"}, {"deploy", "--help"}, {"deploy", "-h"}, {"local", "status", "-h"}} {
		var stdout, stderr bytes.Buffer
		err := Run(context.Background(), conventionsApp(&stdout, &stderr), append([]string{"tool"}, args...))
		if err != nil || stdout.Len() == 0 || stderr.Len() != 0 {
			t.Errorf("%q: %v, stdout %d bytes, stderr %q; want the help on stdout", args, err, stdout.Len(), stderr.String())
		}
		if args[0] == "deploy" {
			help := stdout.String()
			if strings.Contains(help, "(default: 0)") || strings.Contains(help, "(default: false)") {
				t.Errorf("deploy help doubles a default or names a switch's:\n%s", help)
			}
			for _, want := range []string{"fleet minimum (default: the catalog's)", CategoryLocal, `(default: "text")`} {
				if !strings.Contains(help, want) {
					t.Errorf("deploy help lacks %q:\n%s", want, help)
				}
			}
		}
	}
}

func TestCheckFormat(t *testing.T) {
	for _, f := range []string{"text", "json", "table", "env"} {
		if err := CheckFormat(f); err != nil {
			t.Errorf("CheckFormat(%q) = %v", f, err)
		}
	}
	err := CheckFormat("yaml")
	if exitcode.Code(err) != exitcode.CodeUsage || err.Error() != `--format "yaml" is not a format: use text or json` {
		t.Errorf("CheckFormat(yaml) = %v (exit %d)", err, exitcode.Code(err))
	}
}

// `help [command...]` prints what `[command...] --help` prints (exit 0) and takes --version like every command,
// whether the application lists its help command or hides it (HideHelpCommand); an unknown command after it is
// a usage error (exit 2) naming the nearest.
func TestConventionsHelpCommand(t *testing.T) {
	run := func(hide bool, args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		app := conventionsApp(&stdout, &stderr)
		app.HideHelpCommand = hide
		err := Run(context.Background(), app, append([]string{"tool"}, args...))
		return stdout.String(), stderr.String(), err
	}
	for _, hide := range []bool{false, true} {
		for _, tc := range []struct{ help, same []string }{
			{[]string{"help"}, []string{"--help"}},
			{[]string{"h"}, []string{"-h"}},
			{[]string{"help", "deploy"}, []string{"deploy", "--help"}},
			{[]string{"help", "local", "status"}, []string{"local", "status", "--help"}},
			{[]string{"local", "help"}, []string{"local", "--help"}},
			{[]string{"local", "help", "status"}, []string{"local", "status", "--help"}},
		} {
			want, _, _ := run(hide, tc.same...)
			got, stderr, err := run(hide, tc.help...)
			if err != nil || stderr != "" || got != want || want == "" {
				t.Errorf("hide %v, %q: %v, stderr %q, stdout:\n%s\nwant what %q prints:\n%s", hide, tc.help, err, stderr, got, tc.same, want)
			}
		}
		if help, _, _ := run(hide, "--help"); strings.Contains(help, "help, h") == hide {
			t.Errorf("hide %v: the help command listed %v:\n%s", hide, !hide, help)
		}
		for _, args := range [][]string{{"help", "--version"}, {"help", "deploy", "--version"}, {"local", "help", "--version"}} {
			if stdout, _, err := run(hide, args...); err != nil || stdout != "tool "+Version()+"\n" {
				t.Errorf("hide %v, %q: %v, stdout %q; want the version", hide, args, err, stdout)
			}
		}
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"help", "deplyo"}, `help: unknown command "deplyo": did you mean "deploy"? see tool --help`},
			{[]string{"help", "local", "stauts"}, `help: unknown command "stauts": did you mean "status"? see tool local --help`},
			{[]string{"help", "deploy", "now"}, `help: unknown command "now": tool deploy has no commands: see tool deploy --help`},
			{[]string{"help", "--versoin"}, `flag provided but not defined: -versoin: did you mean --version? (see tool help --help)`},
		} {
			if _, _, err := run(hide, tc.args...); exitcode.Code(err) != exitcode.CodeUsage || err.Error() != tc.want {
				t.Errorf("hide %v, %q: %v (exit %d), want exit 2 and %q", hide, tc.args, err, exitcode.Code(err), tc.want)
			}
		}
	}
}

// WrapHelp fills lines up to HelpWidth runes between words, counting runes, not bytes.
func TestWrapHelp(t *testing.T) {
	word := strings.Repeat("é", 50)
	got := WrapHelp(word + " " + word + " " + word + "  x")
	want := word + " " + word + "\n" + word + " x"
	if got != want {
		t.Errorf("WrapHelp = %q, want %q", got, want)
	}
	if WrapHelp("") != "" {
		t.Error("an empty paragraph is not empty")
	}
}
