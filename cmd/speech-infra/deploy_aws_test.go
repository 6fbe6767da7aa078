package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	sqtypes "github.com/aws/aws-sdk-go-v2/service/servicequotas/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/cloudtest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

// recorder is the exec seam's double: the preflight's programs answer through Programs, and every streamed
// CDK command is recorded (and answered by streamErr).
type recorder struct {
	cloudtest.Programs
	streamErr error

	mu       sync.Mutex
	streamed []cdkCommand
}

func (r *recorder) Stream(_ context.Context, c cdkCommand, stdin io.Reader, stdout, _ io.Writer) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.streamed = append(r.streamed, c)
	fmtLine := "✅  " + strings.Join(c.Args[1:2], "") + "\n"
	io.WriteString(stdout, fmtLine)
	return r.streamErr
}

func newRecorder(dockerOK bool) *recorder {
	r := &recorder{}
	r.OutputFn = func(_ context.Context, _, name string, args ...string) ([]byte, error) {
		switch {
		case strings.HasSuffix(name, "cdk"):
			return []byte("2.1148.1 (build fcf5e34)\n"), nil
		case name == "go":
			return []byte("go version go1.26.8 linux/amd64\n"), nil
		case name == "docker" && dockerOK:
			return []byte("27.3.1\n"), nil
		case name == "docker":
			return []byte("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"), errors.New("exit status 1")
		}
		return nil, errors.New("unexpected program " + name)
	}
	return r
}

// goodAccount is a bootstrapped account with room for two g5 instances and no endpoint.
func goodAccount() cloud.PreflightClients {
	return cloud.PreflightClients{
		STS: &cloudtest.STS{GetCallerIdentityFn: func(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
			return &sts.GetCallerIdentityOutput{Account: aws.String("123456789012"), Arn: aws.String("arn:aws:iam::123456789012:user/dev")}, nil
		}},
		SSM: &cloudtest.SSM{GetParameterFn: func(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
			return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String("21")}}, nil
		}},
		Quotas: &cloudtest.Quotas{ListServiceQuotasFn: func(context.Context, *servicequotas.ListServiceQuotasInput, ...func(*servicequotas.Options)) (*servicequotas.ListServiceQuotasOutput, error) {
			return &servicequotas.ListServiceQuotasOutput{Quotas: []sqtypes.ServiceQuota{
				{QuotaName: aws.String("ml.g5.xlarge for endpoint usage"), QuotaCode: aws.String("L-1928E07B"), Value: aws.Float64(2)},
				{QuotaName: aws.String("ml.c5.large for endpoint usage"), QuotaCode: aws.String("L-C5"), Value: aws.Float64(2)}}}, nil
		}},
		SageMaker: &cloudtest.SageMaker{ListEndpointsFn: func(context.Context, *sagemaker.ListEndpointsInput, ...func(*sagemaker.Options)) (*sagemaker.ListEndpointsOutput, error) {
			return &sagemaker.ListEndpointsOutput{Endpoints: []smtypes.EndpointSummary{}}, nil
		}},
	}
}

// awsDeploy is a deploy to AWS against doubles, in a temporary app directory with cdk.json and the CLI.
func awsDeploy(t *testing.T, run *recorder, cl cloud.PreflightClients, region string, args ...string) (*deployOpts, *bytes.Buffer, *bytes.Buffer, *int) {
	t.Helper()
	cat, err := models.Default()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cdk.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "node_modules", ".bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "node_modules", ".bin", "cdk"), nil, 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	loads := new(int)
	o := &deployOpts{args: args, format: "text", catalog: cat, stdout: &out, stderr: &errOut, stdin: strings.NewReader(""),
		aws: awsSettings{appDir: dir}, runner: run, checkTimeout: 2 * time.Second,
		preflightEnv: func(context.Context, awsSettings, time.Duration) preflightEnv {
			*loads++
			return preflightEnv{clients: cl, region: region}
		}}
	return o, &out, &errOut, loads
}

func runDeploy(t *testing.T, o *deployOpts) int {
	t.Helper()
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	err := o.Execute(context.Background())
	if err != nil {
		o.stderr.Write([]byte("speech-infra: " + err.Error() + "\n"))
	}
	return exitcode.Code(err)
}

// deploy's refusal, against doubles: every failed precondition with its fix, the exact command, exit 1,
// nothing run. The app directory varies per test, so it is replaced by APPDIR in the golden.
func TestDeployDryRunFailing(t *testing.T) {
	cl := goodAccount()
	cl.STS = &cloudtest.STS{GetCallerIdentityFn: func(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
		return nil, errors.New("get credentials: failed to refresh cached credentials, no EC2 IMDS role found")
	}}
	run := newRecorder(false)
	o, out, errOut, _ := awsDeploy(t, run, cl, "", "kokoro-82m")
	o.dryRun = true
	code := runDeploy(t, o)
	if code != 1 {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	golden(t, "deploy-dry-run-failing.stdout", strings.ReplaceAll(out.String(), o.aws.appDir, "APPDIR"))
	if len(run.streamed) != 0 {
		t.Errorf("dry run ran %v", run.streamed)
	}
	if !strings.Contains(errOut.String(), "5 precondition(s) failed") {
		t.Errorf("stderr %q", errOut)
	}
}

func TestDeployDryRunPassing(t *testing.T) {
	run := newRecorder(true)
	o, out, errOut, _ := awsDeploy(t, run, goodAccount(), "eu-west-1", "kokoro-82m")
	o.dryRun, o.forMeasurement, o.yes, o.aws.region, o.aws.profile = true, true, true, "eu-west-1", "ml"
	off := false
	o.autoscaling = &off
	if code := runDeploy(t, o); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	golden(t, "deploy-dry-run-passing.stdout", strings.ReplaceAll(out.String(), o.aws.appDir, "APPDIR"))
	if len(run.streamed) != 0 || errOut.Len() != 0 {
		t.Errorf("dry run ran %v, stderr %q", run.streamed, errOut)
	}
}

// A real deploy: the preflight on stderr, the exact command streamed, the endpoint name alone on stdout and
// the next step on stderr.
func TestDeployRunsCDK(t *testing.T) {
	run := newRecorder(true)
	o, out, errOut, _ := awsDeploy(t, run, goodAccount(), "us-east-1", "espeak-ng")
	o.planPath = "artifacts/espeak-ng/plan.json"
	if code := runDeploy(t, o); code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if len(run.streamed) != 1 {
		t.Fatalf("streamed %v", run.streamed)
	}
	got := run.streamed[0]
	want := "deploy SpeechFoundationStack SpeechEndpointStack-espeak-ng -c model=espeak-ng -c plan=artifacts/espeak-ng/plan.json"
	if strings.Join(got.Args, " ") != want || got.Dir != o.aws.appDir || got.Path != filepath.Join("node_modules", ".bin", "cdk") || len(got.Env) != 0 {
		t.Errorf("command %+v, want args %q in %s", got, want, o.aws.appDir)
	}
	if out.String() != "speech-espeak-ng\n" {
		t.Errorf("stdout %q, want the endpoint name", out)
	}
	for _, w := range []string{"preflight: all 7 checks passed", "running: cd ", "✅  SpeechFoundationStack", "tts-bench drift --model espeak-ng"} {
		if !strings.Contains(errOut.String(), w) {
			t.Errorf("stderr lacks %q:\n%s", w, errOut)
		}
	}
}

// A failed precondition stops the deploy before CDK: it could not run (exit 3); --skip-preflight goes straight to CDK without loading
// any AWS configuration; a failing CDK is a failed command (exit 1) naming its output.
func TestDeployPreflightGatesCDK(t *testing.T) {
	run := newRecorder(false)
	o, out, errOut, _ := awsDeploy(t, run, goodAccount(), "us-east-1", "espeak-ng")
	if code := runDeploy(t, o); code != 3 || len(run.streamed) != 0 || out.Len() != 0 {
		t.Fatalf("exit %d, streamed %v, stdout %q", code, run.streamed, out)
	}
	if !strings.Contains(errOut.String(), "nothing was deployed") || !strings.Contains(errOut.String(), "fix: install Docker") {
		t.Errorf("stderr:\n%s", errOut)
	}

	run = newRecorder(false)
	o, _, errOut, loads := awsDeploy(t, run, cloud.PreflightClients{}, "", "espeak-ng")
	o.skipPreflight, o.yes = true, true
	if code := runDeploy(t, o); code != 0 || *loads != 0 || len(run.Calls()) != 0 || len(run.streamed) != 1 {
		t.Fatalf("exit %d, config loads %d, programs %v, streamed %v\n%s", code, *loads, run.Calls(), run.streamed, errOut)
	}
	if a := strings.Join(run.streamed[0].Args, " "); !strings.HasSuffix(a, "--require-approval never") {
		t.Errorf("--yes: args %q", a)
	}

	run = newRecorder(true)
	run.streamErr = errors.New("node_modules/.bin/cdk deploy: exit status 1")
	o, out, errOut, _ = awsDeploy(t, run, goodAccount(), "us-east-1", "espeak-ng")
	if code := runDeploy(t, o); code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), "CDK's output above says why") {
		t.Errorf("exit %d, stdout %q\n%s", code, out, errOut)
	}
}

// The AWS flags make no sense with --local, --format json none without it: usage errors, all at once.
func TestDeployAWSFlagsValidate(t *testing.T) {
	o, _, _, _ := awsDeploy(t, newRecorder(true), goodAccount(), "", "espeak-ng")
	o.format = "json"
	o.aws.appDir = ""
	err := o.Validate()
	for _, w := range []string{"--format json: a deploy to AWS streams CDK's output", "--app-dir is empty"} {
		if exitcode.Code(err) != 2 || err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate = %v, want a usage error containing %q", err, w)
		}
	}
	o, _, _, _ = awsDeploy(t, newRecorder(true), goodAccount(), "", "espeak-ng")
	o.local, o.dryRun, o.skipPreflight, o.forMeasurement, o.aws.region = true, true, true, true, "us-east-1"
	o.emulator = emulatorSettings{stateDir: t.TempDir(), port: 4599}
	err = o.Validate()
	for _, w := range []string{"--dry-run is for a deploy to AWS", "--skip-preflight is for", "--for-measurement is for", "--region is for"} {
		if exitcode.Code(err) != 2 || err == nil || !strings.Contains(err.Error(), w) {
			t.Errorf("Validate = %v, want a usage error containing %q", err, w)
		}
	}
}

// The command line as printed can be pasted into a shell: odd characters are quoted.
func TestCDKCommandString(t *testing.T) {
	c := cdkCommand{Dir: "/my app", Path: "node_modules/.bin/cdk", Args: []string{"deploy", "-c", "plan=it's here.json"}, Env: []string{"AWS_REGION=eu-west-1"}}
	want := `cd '/my app' && AWS_REGION=eu-west-1 node_modules/.bin/cdk deploy -c 'plan=it'\''s here.json'`
	if c.String() != want {
		t.Errorf("String = %s\nwant     %s", c, want)
	}
}

// An explicit --plan that does not exist is a usage error before anything runs.
func TestDeployMissingPlan(t *testing.T) {
	o, _, _, _ := awsDeploy(t, newRecorder(true), goodAccount(), "", "espeak-ng")
	o.planPath, o.planSet = filepath.Join(t.TempDir(), "plan.json"), true
	if err := o.Validate(); exitcode.Code(err) != 2 || !strings.Contains(err.Error(), "--plan "+o.planPath) {
		t.Errorf("Validate = %v", err)
	}
}
