package main

import (
	"fmt"
	"io"
	"net"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/cliflags"
)

// TestConventionsGolden is the CLI contract of every speech-infra command, one
// golden file each under testdata/conventions/ (go test ./cmd/speech-infra -run TestConventionsGolden
// -update rewrites them): `--version` prints the build's version (exit 0); a misspelt flag names the
// nearest one (exit 2); and a command that needs AWS or the network, pointed at a closed port
// (AWS_ENDPOINT_URL with one attempt, --hf-endpoint, a taken --port), could not run: exit 3. Of that step's
// stderr the golden keeps the error line and the preflight's credentials line (the other preflight lines
// depend on the machine: Docker, the CDK CLI). `--help` and `-h` print on stdout and exit 0.
func TestConventionsGolden(t *testing.T) {
	dir := t.TempDir()
	closed := closedAddr(t)
	awsEnv(t, "http://"+closed)
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := fmt.Sprint(taken.Addr().(*net.TCPAddr).Port)
	appDir := filepath.Join("..", "..")
	// The arguments that take each command to its first AWS or network call; nil for one that makes none
	// before it serves.
	calls := map[string][]string{
		"deploy":       {"espeak-ng", "--app-dir", appDir},
		"destroy":      {"espeak-ng", "--yes", "--app-dir", appDir, "--journal-dir", filepath.Join(dir, "journals")},
		"cache":        {"kokoro-82m", "--to", filepath.Join(dir, "cache"), "--hf-endpoint", "http://" + closed},
		"local status": nil,
		"local stop":   nil,
		"local serve":  {"--state-dir", filepath.Join(dir, "serve"), "--port", takenPort},
		"gateway":      nil, // it calls AWS per request: an unreachable endpoint is a 502 (gateway_test.go)
	}
	var paths [][]string
	var walk func(prefix []string, cmds []*cli.Command)
	walk = func(prefix []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(slices.Clone(prefix), c.Name)
			paths = append(paths, p)
			walk(p, c.Subcommands)
		}
	}
	app := newApp(io.Discard, io.Discard)
	walk(nil, app.Commands)
	keep := regexp.MustCompile(`^speech-infra: |AWS credentials`)
	for _, path := range paths {
		name := strings.Join(path, " ")
		t.Run(strings.ReplaceAll(name, " ", "-"), func(t *testing.T) {
			cmd := commandAt(app.Commands, path)
			var b strings.Builder
			transcript(&b, t, 0, nil, append(slices.Clone(path), "--version")...)
			if len(cmd.Subcommands) == 0 {
				transcript(&b, t, 2, nil, append(slices.Clone(path), misspelt(t, cmd))...)
				if args, ok := calls[name]; !ok {
					t.Errorf("command %s has no case in TestConventionsGolden: add the arguments that reach its first AWS or network call (nil if none)", name)
				} else if args != nil {
					transcript(&b, t, 3, keep, append(slices.Clone(path), args...)...)
				} else if name == "gateway" {
					fmt.Fprintf(&b, "# %s calls AWS per request, not at start: an unreachable endpoint is a 502 (gateway_test.go)\n", name)
				} else {
					fmt.Fprintf(&b, "# %s makes no AWS or network call\n", name)
				}
			}
			for _, h := range []string{"--help", "-h"} {
				stdout, stderr, code := invoke(t, append(slices.Clone(path), h)...)
				if code != 0 || !strings.Contains(stdout, "speech-infra "+name) || stderr != "" {
					t.Errorf("%s %s: exit %d, stdout %d bytes, stderr %q; want the help on stdout and exit 0", name, h, code, len(stdout), stderr)
				}
				for _, l := range strings.Split(stdout, "\n") {
					if l = strings.TrimSpace(l); strings.HasPrefix(l, "--") && strings.Count(l, "(default") > 1 {
						t.Errorf("%s: a flag's help names its default twice: %s", h, l)
					}
				}
			}
			got := strings.NewReplacer(cliflags.Version(), "<version>", closed, "127.0.0.1:<closed>", takenPort, "<taken>", dir, "<tmp>").Replace(b.String())
			got = regexp.MustCompile(`\d+ precondition\(s\)`).ReplaceAllString(got, "<n> precondition(s)")
			golden(t, filepath.Join("conventions", strings.ReplaceAll(name, " ", "-")+".txt"), got)
		})
	}
	for _, args := range [][]string{{"--version"}, {"--help"}, {"-h"}} {
		if stdout, stderr, code := invoke(t, args...); code != 0 || stdout == "" || stderr != "" {
			t.Errorf("speech-infra %s: exit %d, stderr %q; want stdout and exit 0", args[0], code, stderr)
		}
	}
	if _, stderr, code := invoke(t, "deplyo"); code != 2 || !strings.Contains(stderr, `unknown command "deplyo": did you mean "deploy"?`) {
		t.Errorf("speech-infra deplyo: exit %d\n%s", code, stderr)
	}
}

// commandAt is the command at path.
func commandAt(cmds []*cli.Command, path []string) *cli.Command {
	var c *cli.Command
	for _, name := range path {
		for _, x := range cmds {
			if x.Name == name {
				c, cmds = x, x.Subcommands
			}
		}
	}
	return c
}

// transcript runs speech-infra with args, checks its exit code and appends the command line, the code and
// what it printed to b; with keep, only the stderr lines it matches, and no stdout.
func transcript(b *strings.Builder, t *testing.T, want int, keep *regexp.Regexp, args ...string) {
	t.Helper()
	stdout, stderr, code := invoke(t, args...)
	if code != want {
		t.Errorf("speech-infra %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	fmt.Fprintf(b, "$ speech-infra %s\nexit %d\n", strings.Join(args, " "), code)
	if keep != nil {
		var kept []string
		for _, l := range strings.Split(strings.TrimSuffix(stderr, "\n"), "\n") {
			if keep.MatchString(l) {
				kept = append(kept, strings.TrimSpace(l))
			}
		}
		stdout, stderr = "", strings.Join(kept, "\n")+"\n"
	}
	if stdout != "" {
		fmt.Fprintf(b, "--- stdout\n%s", stdout)
	}
	if stderr != "" {
		fmt.Fprintf(b, "--- stderr\n%s", stderr)
	}
}

// misspelt is c's first flag of four letters or more with its last letter dropped, as a user types it.
func misspelt(t *testing.T, c *cli.Command) string {
	t.Helper()
	for _, f := range c.Flags {
		name := f.Names()[0]
		if len(name) >= 4 && !slices.Contains([]string{"help", cliflags.VersionFlagName}, name) {
			return "--" + name[:len(name)-1]
		}
	}
	t.Fatalf("%s has no flag to misspell", c.Name)
	return ""
}

// closedAddr is a loopback TCP address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// awsEnv points the SDK's standard chain at url with static credentials and one attempt per call, and
// nothing else from this machine's AWS configuration.
func awsEnv(t *testing.T, url string) {
	t.Helper()
	for k, v := range map[string]string{
		"AWS_ENDPOINT_URL": url, "AWS_REGION": "us-east-1", "AWS_DEFAULT_REGION": "", "AWS_PROFILE": "",
		"AWS_ACCESS_KEY_ID": "AKIDCONVENTIONS", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "",
		"AWS_MAX_ATTEMPTS": "1", "AWS_RETRY_MODE": "standard", "AWS_EC2_METADATA_DISABLED": "true",
		"AWS_CONFIG_FILE": filepath.Join(t.TempDir(), "none"), "AWS_SHARED_CREDENTIALS_FILE": filepath.Join(t.TempDir(), "none"),
		"SPEECH_INFRA_STATE_DIR": filepath.Join(t.TempDir(), "state"),
	} {
		t.Setenv(k, v)
	}
}
