package awsenv_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// clearAWS removes every AWS variable a developer's shell may carry, and points the shared files at nothing.
func clearAWS(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "AWS_") {
			t.Setenv(name, "")
			os.Unsetenv(name)
		}
	}
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("AWS_CONFIG_FILE", none)
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", none)
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// --local finds the running emulator of the state directory and signs with its key; the standard chain
// reaches the same emulator through AWS_ENDPOINT_URL_SAGEMAKER and the key in the environment, with --region.
func TestConfigReachesEmulator(t *testing.T) {
	clearAWS(t)
	e := emulatortest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	describe := func(cfg aws.Config) error {
		_, err := sagemaker.NewFromConfig(cfg).DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String("speech-none")})
		return err
	}

	cfg, err := awsenv.Settings{Local: true, StateDir: e.StateDir}.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := describe(cfg); !cloud.IsNotFound(err) {
		t.Fatalf("DescribeEndpoint via --local = %v, want the emulator's not-found answer", err)
	}
	if got := awsenv.Where(awsenv.Settings{Local: true}, cfg); got != "the local emulator at "+e.URL {
		t.Fatalf("Where = %q", got)
	}

	t.Setenv("AWS_ENDPOINT_URL_SAGEMAKER", e.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", e.Key.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", e.Key.SecretAccessKey)
	cfg, err = awsenv.Settings{Region: "eu-west-1"}.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Region != "eu-west-1" {
		t.Fatalf("region = %q", cfg.Region)
	}
	if err := describe(cfg); !cloud.IsNotFound(err) {
		t.Fatalf("DescribeEndpoint via AWS_ENDPOINT_URL_SAGEMAKER = %v, want the emulator's not-found answer", err)
	}
	// A wrong key reaches the emulator too, and is refused by it: the variables, not a fallback, decide.
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDOTHER")
	cfg, err = awsenv.Settings{Region: "eu-west-1"}.Config(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := describe(cfg); err == nil || !strings.Contains(err.Error(), "InvalidClientTokenId") {
		t.Fatalf("DescribeEndpoint with another key = %v, want InvalidClientTokenId", err)
	}
}

// No emulator, no region, a profile that does not exist, and --region or --profile with --local are refused,
// each naming the fix; usage problems exit 2.
func TestConfigRefusals(t *testing.T) {
	clearAWS(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		s    awsenv.Settings
		want string
		code int
	}{
		{"no emulator", awsenv.Settings{Local: true, StateDir: t.TempDir()}, "speech-infra deploy <model> --local", exitcode.CodeCheckFailed},
		{"empty state dir", awsenv.Settings{Local: true}, "--state-dir is empty", exitcode.CodeUsage},
		{"region with local", awsenv.Settings{Local: true, StateDir: "x", Region: "eu-west-1"}, "leave --region out", exitcode.CodeUsage},
		{"profile with local", awsenv.Settings{Local: true, StateDir: "x", Profile: "p"}, "leave --profile out", exitcode.CodeUsage},
		{"no region", awsenv.Settings{}, "give --region", exitcode.CodeUsage},
		{"unknown profile", awsenv.Settings{Profile: "nobody", Region: "us-east-1"}, "--profile nobody", exitcode.CodeUsage},
	} {
		_, err := tc.s.Config(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) || exitcode.Code(err) != tc.code {
			t.Errorf("%s: Config = %v (exit %d), want %q (exit %d)", tc.name, err, exitcode.Code(err), tc.want, tc.code)
		}
	}
}

// Args point another command where the settings point: the emulator of the state directory, or the region and
// profile given.
func TestSettingsArgs(t *testing.T) {
	for _, c := range []struct {
		s    awsenv.Settings
		want []string
	}{
		{awsenv.Settings{Local: true, StateDir: ".state", Region: "us-east-1"}, []string{"--local", "--state-dir", ".state"}},
		{awsenv.Settings{Region: "eu-west-1", Profile: "p"}, []string{"--region", "eu-west-1", "--profile", "p"}},
		{awsenv.Settings{StateDir: ".state"}, nil},
	} {
		if got := c.s.Args(); !slices.Equal(got, c.want) {
			t.Errorf("%+v: Args() = %q, want %q", c.s, got, c.want)
		}
	}
}
