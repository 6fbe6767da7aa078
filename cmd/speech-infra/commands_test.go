package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/internal/cliflags/cliflagstest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./cmd/speech-infra -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (run go test ./cmd/speech-infra -update after checking the change):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// A boolean flag added to any speech-infra command (deploy, destroy, local status/stop/serve) works after the
// model argument with no other edit, and a value flag after it keeps its value.
func TestBoolFlagsAfterArgument(t *testing.T) {
	paths := cliflagstest.Paths(newApp(nil, nil))
	for _, want := range []string{"deploy", "destroy", "local status", "local stop", "local serve"} {
		found := false
		for _, p := range paths {
			found = found || strings.Join(p, " ") == want
		}
		if !found {
			t.Errorf("the walk misses %q: %q", want, paths)
		}
	}
	cliflagstest.CheckBoolFlagsAfterArgument(t, newApp)
}

// endpointDouble is a SageMaker client double with one function field per method.
type endpointDouble struct {
	listEndpoints    func(ctx context.Context, in *sagemaker.ListEndpointsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.ListEndpointsOutput, error)
	describeEndpoint func(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
}

func (d endpointDouble) ListEndpoints(ctx context.Context, in *sagemaker.ListEndpointsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.ListEndpointsOutput, error) {
	return d.listEndpoints(ctx, in, optFns...)
}

func (d endpointDouble) DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
	return d.describeEndpoint(ctx, in, optFns...)
}

var testEmulator = localEmulator{
	Info:  emulator.Info{PID: 4242, URL: "http://127.0.0.1:4599", Started: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC), Instance: "i", StateDir: "/state"},
	creds: cloud.LocalCredentials{AccessKeyID: "LOCALKEY", SecretAccessKey: "localsecret"},
}

// twoEndpoints answers as an emulator with two endpoints.
func twoEndpoints() endpointDouble {
	return endpointDouble{
		listEndpoints: func(context.Context, *sagemaker.ListEndpointsInput, ...func(*sagemaker.Options)) (*sagemaker.ListEndpointsOutput, error) {
			return &sagemaker.ListEndpointsOutput{Endpoints: []smtypes.EndpointSummary{{EndpointName: aws.String("speech-espeak-ng")}, {EndpointName: aws.String("speech-kokoro-82m")}}}, nil
		},
		describeEndpoint: func(_ context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
			n := map[string]int32{"speech-espeak-ng": 1, "speech-kokoro-82m": 2}[aws.ToString(in.EndpointName)]
			status := smtypes.EndpointStatusInService
			if n == 2 {
				status = smtypes.EndpointStatusUpdating
			}
			return &sagemaker.DescribeEndpointOutput{EndpointName: in.EndpointName, EndpointStatus: status, ProductionVariants: []smtypes.ProductionVariantSummary{
				{VariantName: aws.String("AllTraffic"), CurrentInstanceCount: aws.Int32(n), DesiredInstanceCount: aws.Int32(n + 1)},
			}}, nil
		},
	}
}

func statusFor(format string, running bool, sm endpointReader) (*statusOpts, *bytes.Buffer, *bytes.Buffer) {
	var stdout, stderr bytes.Buffer
	return &statusOpts{
		stateDir: "/state", format: format, stdout: &stdout, stderr: &stderr,
		locate: func(dir string) (localEmulator, bool, error) {
			if !running {
				return localEmulator{}, false, nil
			}
			return testEmulator, true, nil
		},
		clients: func(cfg aws.Config) endpointReader { return sm },
	}, &stdout, &stderr
}

// `eval "$(speech-infra local status)"` needs no grep: stdout is only export lines; the emulator and its
// endpoints are described on stderr. --format json carries all of it on stdout.
func TestStatusRendering(t *testing.T) {
	for _, tc := range []struct {
		name, format     string
		running          bool
		goldOut, goldErr string
	}{
		{"env running", "env", true, "status-env.stdout", "status-env.stderr"},
		{"json running", "json", true, "status.json", ""},
		{"env not running", "env", false, "", "status-not-running.stderr"},
		{"json not running", "json", false, "status-not-running.json", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, stdout, stderr := statusFor(tc.format, tc.running, twoEndpoints())
			if err := o.Validate(); err != nil {
				t.Fatal(err)
			}
			if err := o.Execute(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, g := range []struct {
				file string
				got  *bytes.Buffer
			}{{tc.goldOut, stdout}, {tc.goldErr, stderr}} {
				if g.file == "" {
					if g.got.Len() != 0 {
						t.Errorf("printed %q where nothing belongs", g.got)
					}
					continue
				}
				golden(t, g.file, g.got.String())
			}
			if tc.format == "env" && tc.running && !onlyExports(stdout.String()) {
				t.Errorf("stdout holds more than export lines:\n%s", stdout)
			}
		})
	}
}

func TestStatusErrors(t *testing.T) {
	o, _, _ := statusFor("yaml", true, twoEndpoints())
	o.args = []string{"extra"}
	o.stateDir = ""
	err := o.Validate()
	for _, want := range []string{`--format "yaml" is not a format: use text or json`, `local status takes no arguments, got ["extra"]`, "--state-dir is empty"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Validate() = %v, want it to contain %q", err, want)
		}
	}
	if exitcode.Code(err) != exitcode.CodeUsage {
		t.Errorf("exit %d, want %d", exitcode.Code(err), exitcode.CodeUsage)
	}
	// A failed read of the emulator is a failure (exit 1), nothing printed on stdout.
	broken := twoEndpoints()
	broken.describeEndpoint = func(context.Context, *sagemaker.DescribeEndpointInput, ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
		return nil, errors.New("connection refused")
	}
	o, stdout, _ := statusFor("env", true, broken)
	err = o.Execute(context.Background())
	if err == nil || !strings.Contains(err.Error(), "describe endpoint speech-espeak-ng: connection refused") || exitcode.Code(err) != 1 || stdout.Len() != 0 {
		t.Errorf("Execute with a failing DescribeEndpoint = %v (exit %d), stdout %q", err, exitcode.Code(err), stdout)
	}
}

func TestStatusFlagErrorsThroughTheCLI(t *testing.T) {
	_, stderr, code := invoke(t, "local", "status", "extra", "--format", "xml", "--state-dir", "")
	if code != 2 || !strings.Contains(stderr, `--format "xml"`) || !strings.Contains(stderr, `got ["extra"]`) || !strings.Contains(stderr, "--state-dir is empty") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}

// stopFor returns a local stop whose emulator answers with the pids of answers, one per look, then none.
func stopFor(answers []int, signalErr error) (*stopOpts, *[]int, *bytes.Buffer) {
	var signalled []int
	var stdout bytes.Buffer
	looks := 0
	return &stopOpts{
		stateDir: "/state", stdout: &stdout, timeout: time.Second, poll: time.Millisecond,
		locate: func(string) (localEmulator, bool, error) {
			defer func() { looks++ }()
			if looks >= len(answers) {
				return localEmulator{}, false, nil
			}
			e := testEmulator
			e.PID = answers[looks]
			return e, true, nil
		},
		signal: func(pid int) error { signalled = append(signalled, pid); return signalErr },
	}, &signalled, &stdout
}

func TestStop(t *testing.T) {
	t.Run("stops the pid the emulator answered", func(t *testing.T) {
		o, signalled, stdout := stopFor([]int{4242, 4242}, nil)
		if err := o.Execute(context.Background()); err != nil || stdout.String() != "emulator stopped (pid 4242)\n" || len(*signalled) != 1 || (*signalled)[0] != 4242 {
			t.Errorf("Execute = %v, stdout %q, signalled %v", err, stdout, *signalled)
		}
	})
	t.Run("stops one that takes the directory over", func(t *testing.T) {
		o, signalled, stdout := stopFor([]int{4242, 4242, 5151, 5151}, nil)
		if err := o.Execute(context.Background()); err != nil || stdout.String() != "emulator stopped (pid 4242, then 5151)\n" || len(*signalled) != 2 {
			t.Errorf("Execute = %v, stdout %q, signalled %v", err, stdout, *signalled)
		}
	})
	t.Run("none running", func(t *testing.T) {
		o, signalled, stdout := stopFor(nil, nil)
		if err := o.Execute(context.Background()); err != nil || stdout.String() != "no emulator runs on /state\n" || len(*signalled) != 0 {
			t.Errorf("Execute = %v, stdout %q, signalled %v", err, stdout, *signalled)
		}
	})
	t.Run("does not stop in time", func(t *testing.T) {
		forever := make([]int, 100000)
		for i := range forever {
			forever[i] = 4242
		}
		o, _, _ := stopFor(forever, nil)
		o.timeout = 20 * time.Millisecond
		err := o.Execute(context.Background())
		if err == nil || !strings.Contains(err.Error(), "the emulator (pid 4242) did not stop within 20ms") || exitcode.Code(err) != 1 {
			t.Errorf("Execute = %v", err)
		}
	})
	t.Run("signal refused", func(t *testing.T) {
		o, _, _ := stopFor([]int{4242}, errors.New("operation not permitted"))
		if err := o.Execute(context.Background()); err == nil || err.Error() != "stop emulator (pid 4242): operation not permitted" {
			t.Errorf("Execute = %v", err)
		}
	})
	t.Run("unconfirmed emulator", func(t *testing.T) {
		o, signalled, _ := stopFor(nil, nil)
		o.locate = func(string) (localEmulator, bool, error) { return localEmulator{}, true, emulator.ErrNotAnswering }
		if err := o.Execute(context.Background()); !errors.Is(err, emulator.ErrNotAnswering) || len(*signalled) != 0 {
			t.Errorf("Execute = %v, signalled %v", err, *signalled)
		}
	})
}

// runnerDouble is an opened emulator double.
type runnerDouble struct {
	url string
	run func(ctx context.Context) error
}

func (r runnerDouble) URL() string { return r.url }
func (r runnerDouble) Credentials() emulator.Credentials {
	return emulator.Credentials{AccessKeyID: "LOCALKEY"}
}
func (r runnerDouble) Run(ctx context.Context) error { return r.run(ctx) }

func TestServe(t *testing.T) {
	var stderr bytes.Buffer
	var opened emulator.Options
	o := &serveOpts{
		emulator: emulatorSettings{stateDir: "/state", port: 4599, containerBin: "/bin/c"}, metricPeriod: 10 * time.Second, stderr: &stderr,
		open: func(opts emulator.Options) (runner, error) {
			opened = opts
			return runnerDouble{url: "http://127.0.0.1:4599", run: func(context.Context) error { return nil }}, nil
		},
	}
	if err := o.Validate(); err != nil {
		t.Fatal(err)
	}
	if err := o.Execute(context.Background()); err != nil {
		t.Fatal(err)
	}
	if opened.StateDir != "/state" || opened.Addr != "127.0.0.1:4599" || opened.ContainerBin != "/bin/c" || opened.MetricPeriod != 10*time.Second || opened.Log != &stderr {
		t.Errorf("opened with %+v", opened)
	}
	if want := "emulator serving /state on http://127.0.0.1:4599 (loopback only), access key id LOCALKEY (from /state/credentials.json)\n"; stderr.String() != strings.Replace(want, "credentials.json", emulator.CredentialsFile, 1) {
		t.Errorf("stderr %q", stderr.String())
	}

	_, errOut, code := invoke(t, "local", "serve", "extra", "--metric-period", "0s", "--port", "70000")
	for _, want := range []string{`local serve takes no arguments, got ["extra"]`, "--metric-period 0s: want a positive duration", "--port 70000: not a TCP port"} {
		if code != 2 || !strings.Contains(errOut, want) {
			t.Errorf("exit %d, stderr does not contain %q:\n%s", code, want, errOut)
		}
	}
}

func TestDestroyReportsEveryProblemAtOnce(t *testing.T) {
	_, stderr, code := invoke(t, "destroy", "espeak-ng", "kokoro-82m", "--local", "--yes", "--port", "-1")
	for _, want := range []string{`destroy needs exactly one model id, got 2 argument(s) ["espeak-ng" "kokoro-82m"]`, "--yes is for a destroy on AWS", "--port -1: not a TCP port"} {
		if code != 2 || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, stderr does not contain %q:\n%s", code, want, stderr)
		}
	}
	_, stderr, code = invoke(t, "destroy", "nope", "--local")
	if code != 2 || !strings.Contains(stderr, `unknown model "nope"`) {
		t.Errorf("exit %d:\n%s", code, stderr)
	}
}
