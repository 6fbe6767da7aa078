package main

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/internal/cliflags"
)

// TestConventionsGolden is the CLI contract of every tts-bench command, one golden
// file each under testdata/conventions/ (go test ./cmd/tts-bench -run TestConventionsGolden -update
// rewrites them): `--version` prints the build's version (exit 0); a misspelt flag names the nearest one
// (exit 2); and a command that calls AWS, pointed at a closed port (AWS_ENDPOINT_URL, one attempt), exits 3
// with the one-line diagnosis. `--help` and `-h` print on stdout and exit 0.
func TestConventionsGolden(t *testing.T) {
	dir := t.TempDir()
	closed := closedAddr(t)
	awsEnv(t, "http://"+closed)
	qmaxPath := writeQMaxArtifact(t, dir, capacity.TransportSageMakerStream)
	jdir := filepath.Join(dir, "journals")
	out := func(name string) string { return filepath.Join(dir, name) }
	// The arguments that take each command to its first AWS call; nil for a command that makes none.
	calls := map[string][]string{
		"plan": nil,
		"compare": {"--model", "espeak-ng", "--instance-types", "ml.c5.large", "--trace", "diurnal", "--image", "speech-container:test",
			"--role", "arn:aws:iam::000000000000:role/test", "--journal-dir", jdir, "--container-dir", containerDir, "--artifacts", out("artifacts")},
		"qmax":     {"--model", "espeak-ng", "--journal-dir", jdir, "--container-dir", containerDir, "--output", out("qmax.json")},
		"ttotal":   {"--model", "espeak-ng", "--qmax", qmaxPath, "--journal-dir", jdir, "--container-dir", containerDir, "--probe-concurrency", "4", "--output", out("ttotal.json")},
		"drift":    {"--model", "espeak-ng", "--journal-dir", jdir},
		"thaw":     {"--model", "espeak-ng", "--journal-dir", jdir},
		"validate": {"--model", "kokoro-82m", "--plan", filepath.Join("testdata", "plan-measured.json")},
		"replay":   {"--model", "espeak-ng", "--trace", "step", "--peak-rps", "2", "--trough-rps", "1", "--duration", "10s", "--step", "1s", "--at", "2s", "--output", out("replay.jsonl.gz")},
		"report":   nil,
		"simulate": nil,
		"traffic":  {"fetch", "--endpoint", "speech-espeak-ng", "--since", "1h", "--output", out("history.csv")},
	}
	app := newApp(io.Discard, io.Discard)
	for _, c := range app.Commands {
		if _, ok := calls[c.Name]; !ok {
			t.Errorf("command %s has no case in TestConventionsGolden: add the arguments that reach its first AWS call (nil if none)", c.Name)
		}
	}
	for _, c := range app.Commands {
		t.Run(c.Name, func(t *testing.T) {
			var b strings.Builder
			transcript(t, &b, 0, c.Name, "--version")
			transcript(t, &b, 2, c.Name, misspelt(t, c))
			if args := calls[c.Name]; args != nil {
				transcript(t, &b, 3, append([]string{c.Name}, args...)...)
			} else {
				fmt.Fprintf(&b, "# %s makes no AWS or network call\n", c.Name)
			}
			for _, h := range []string{"--help", "-h"} {
				stdout, stderr, code := runCLI(t, c.Name, h)
				if code != 0 || !strings.Contains(stdout, "tts-bench "+c.Name) || stderr != "" {
					t.Errorf("%s %s: exit %d, stdout %d bytes, stderr %q; want the help on stdout and exit 0", c.Name, h, code, len(stdout), stderr)
				}
				for _, l := range strings.Split(stdout, "\n") {
					if l = strings.TrimSpace(l); strings.HasPrefix(l, "--") && strings.Count(l, "(default") > 1 {
						t.Errorf("%s: a flag's help names its default twice: %s", h, l)
					}
				}
			}
			got := strings.NewReplacer(cliflags.Version(), "<version>", closed, "127.0.0.1:<closed>", dir, "<tmp>").Replace(b.String())
			golden(t, filepath.Join("conventions", c.Name+".txt"), got)
		})
	}
	for _, args := range [][]string{{"--version"}, {"--help"}, {"-h"}} {
		if stdout, stderr, code := runCLI(t, args...); code != 0 || stdout == "" || stderr != "" {
			t.Errorf("tts-bench %s: exit %d, stderr %q; want stdout and exit 0", args[0], code, stderr)
		}
	}
	if _, stderr, code := runCLI(t, "qmx"); code != 2 || !strings.Contains(stderr, `unknown command "qmx": did you mean "qmax"?`) {
		t.Errorf("tts-bench qmx: exit %d\n%s", code, stderr)
	}
}

// transcript runs tts-bench with args, checks its exit code and appends the command line, the code and what
// it printed to b.
func transcript(t *testing.T, b *strings.Builder, want int, args ...string) {
	t.Helper()
	stdout, stderr, code := runCLI(t, args...)
	if code != want {
		t.Errorf("tts-bench %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, want, stdout, stderr)
	}
	fmt.Fprintf(b, "$ tts-bench %s\nexit %d\n", strings.Join(args, " "), code)
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

// TestAWSDiagnosis: drift, qmax, ttotal, replay and validate give an AWS failure outside
// the preflight the preflight's one line with the fix: an unknown region is refused before any call (exit 2),
// missing and expired credentials exit 3, and none prints the SDK's raw chain.
func TestAWSDiagnosis(t *testing.T) {
	dir := t.TempDir()
	qmaxPath := writeQMaxArtifact(t, dir, capacity.TransportSageMakerStream)
	jdir := filepath.Join(dir, "journals")
	commands := map[string][]string{
		"drift":    {"drift", "--model", "espeak-ng", "--journal-dir", jdir},
		"qmax":     {"qmax", "--model", "espeak-ng", "--journal-dir", jdir, "--container-dir", containerDir, "--output", filepath.Join(dir, "qmax-out.json")},
		"ttotal":   {"ttotal", "--model", "espeak-ng", "--qmax", qmaxPath, "--journal-dir", jdir, "--container-dir", containerDir, "--probe-concurrency", "4", "--output", filepath.Join(dir, "ttotal.json")},
		"replay":   {"replay", "--model", "espeak-ng", "--trace", "step", "--peak-rps", "2", "--trough-rps", "1", "--duration", "10s", "--step", "1s", "--at", "2s", "--output", filepath.Join(dir, "replay.jsonl.gz")},
		"validate": {"validate", "--model", "kokoro-82m", "--plan", filepath.Join("testdata", "plan-measured.json")},
	}
	// expired answers every call as AWS does once a session token has expired (the JSON protocols of
	// SageMaker and Application Auto Scaling).
	expired := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		w.Header().Set("X-Amzn-ErrorType", "ExpiredTokenException")
		w.WriteHeader(http.StatusBadRequest)
		io.WriteString(w, `{"__type":"ExpiredTokenException","message":"The security token included in the request is expired"}`)
	}))
	defer expired.Close()
	cases := []struct {
		name string
		env  map[string]string
		code int
		want string
	}{
		{"unknown region", map[string]string{"AWS_ENDPOINT_URL": "", "AWS_REGION": "eu-wset-1"}, 2,
			`tts-bench: unknown AWS region "eu-wset-1" (not in the SDK's partition list): did you mean eu-west-1? give a region such as us-east-1 with --region or AWS_REGION`},
		{"no credentials", map[string]string{"AWS_ACCESS_KEY_ID": "", "AWS_SECRET_ACCESS_KEY": ""}, 3,
			"no AWS credentials found: configure credentials: `aws configure`"},
		{"expired token", map[string]string{"AWS_ENDPOINT_URL": expired.URL}, 3,
			"the AWS credentials have expired (ExpiredTokenException): refresh them: `aws sso login --profile <p>`"},
	}
	for _, c := range cases {
		for _, name := range []string{"drift", "qmax", "ttotal", "replay", "validate"} {
			t.Run(c.name+"/"+name, func(t *testing.T) {
				awsEnv(t, "http://"+closedAddr(t))
				for k, v := range c.env {
					t.Setenv(k, v)
				}
				stdout, stderr, code := runCLI(t, commands[name]...)
				if code != c.code || !strings.Contains(stderr, c.want) {
					t.Errorf("exit %d, want %d; stderr\n%s\nwant it to contain\n%s\nstdout:\n%s", code, c.code, stderr, c.want, stdout)
				}
				if strings.Contains(stderr, "operation error") || strings.Contains(stderr, "https response error") {
					t.Errorf("stderr carries the SDK's raw chain:\n%s", stderr)
				}
			})
		}
	}
}
