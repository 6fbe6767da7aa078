package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// closedURL is the URL of a TCP port nothing listens on.
func closedURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

// stsAt is a real STS client at url with static credentials and one attempt.
func stsAt(url string) *sts.Client {
	return sts.New(sts.Options{
		Region: "us-east-1", BaseEndpoint: aws.String(url), RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "token"),
	})
}

// stsError serves one awsQuery error response, as STS sends it.
func stsError(t *testing.T, status int, code, message string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/xml")
		w.WriteHeader(status)
		fmt.Fprintf(w, `<ErrorResponse xmlns="https://sts.amazonaws.com/doc/2011-06-15/"><Error><Type>Sender</Type><Code>%s</Code><Message>%s</Message></Error><RequestId>r-1</RequestId></ErrorResponse>`, code, message)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestDiagnose calls real SDK clients into each failure and checks the one line each gets: the context
// the caller wrapped stays, the SDK chain is replaced by what happened and the fix, and the exit code is 3.
func TestDiagnose(t *testing.T) {
	ctx := context.Background()
	call := func(c *sts.Client) error {
		_, err := c.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
		if err == nil {
			t.Fatal("GetCallerIdentity succeeded")
		}
		return fmt.Errorf("drift speech-x on AWS (us-east-1): %w", err)
	}
	noCreds := func() error {
		t.Setenv("AWS_ACCESS_KEY_ID", "")
		t.Setenv("AWS_SECRET_ACCESS_KEY", "")
		t.Setenv("AWS_SESSION_TOKEN", "")
		t.Setenv("AWS_PROFILE", "")
		t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
		t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
		t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
		t.Setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "")
		t.Setenv("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "")
		t.Setenv("AWS_WEB_IDENTITY_TOKEN_FILE", "")
		cfg, err := config.LoadDefaultConfig(ctx, config.WithRegion("us-east-1"), config.WithBaseEndpoint(closedURL(t)), config.WithRetryMaxAttempts(1))
		if err != nil {
			t.Fatal(err)
		}
		return call(sts.NewFromConfig(cfg))
	}
	cases := []struct {
		name string
		err  func() error
		want string
	}{
		{"unreachable", func() error { return call(stsAt(closedURL(t))) },
			"drift speech-x on AWS (us-east-1): sts GetCallerIdentity: cannot reach the endpoint: dial tcp 127.0.0.1:"},
		{"expired token", func() error {
			return call(stsAt(stsError(t, 403, "ExpiredToken", "The security token included in the request is expired")))
		}, "drift speech-x on AWS (us-east-1): sts GetCallerIdentity: the AWS credentials have expired (ExpiredToken): refresh them: `aws sso login --profile <p>`"},
		{"invalid key", func() error {
			return call(stsAt(stsError(t, 403, "InvalidClientTokenId", "The security token included in the request is invalid.")))
		}, "sts GetCallerIdentity: AWS does not accept the credentials (InvalidClientTokenId): configure credentials: `aws configure`"},
		{"denied", func() error {
			return call(stsAt(stsError(t, 403, "AccessDenied", "not authorized")))
		}, "sts GetCallerIdentity: access denied (AccessDenied): allow sts:GetCallerIdentity for these credentials"},
		{"other API error", func() error {
			return call(stsAt(stsError(t, 400, "ValidationError", "Could not find endpoint speech-x")))
		}, "drift speech-x on AWS (us-east-1): sts GetCallerIdentity: ValidationError: Could not find endpoint speech-x"},
		{"no credentials", noCreds, "drift speech-x on AWS (us-east-1): sts GetCallerIdentity: no AWS credentials found: configure credentials:"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			raw := c.err()
			got := Diagnose(raw)
			t.Logf("%s", got)
			if code := exitcode.Code(got); code != exitcode.CodeCouldNotRun {
				t.Errorf("exit code %d, want %d", code, exitcode.CodeCouldNotRun)
			}
			if !strings.Contains(got.Error(), c.want) {
				t.Errorf("diagnosis\n%s\nwant it to contain\n%s", got, c.want)
			}
			if strings.Contains(got.Error(), "operation error") || strings.Contains(got.Error(), "\n") {
				t.Errorf("diagnosis keeps the SDK chain or spans lines: %s", got)
			}
			if !errors.Is(got, raw) && !errors.Is(got, errors.Unwrap(raw)) {
				t.Errorf("the diagnosis lost the SDK error from its chain")
			}
		})
	}
	plain := errors.New("plan infeasible")
	if got := Diagnose(plain); got != plain {
		t.Errorf("Diagnose changed a non-AWS error: %v", got)
	}
	usage := exitcode.Usagef("--x: bad")
	if got := Diagnose(usage); got != usage {
		t.Errorf("Diagnose changed a marked error: %v", got)
	}
}

func TestCheckRegionKnown(t *testing.T) {
	for _, r := range []string{"", "us-east-1", "eu-west-1", "cn-north-1", "us-gov-west-1"} {
		if err := CheckRegionKnown(r); err != nil {
			t.Errorf("CheckRegionKnown(%q) = %v, want nil", r, err)
		}
	}
	err := CheckRegionKnown("eu-wset-1")
	if exitcode.Code(err) != exitcode.CodeUsage {
		t.Fatalf("CheckRegionKnown(eu-wset-1) = %v (exit %d), want a usage error", err, exitcode.Code(err))
	}
	want := `unknown AWS region "eu-wset-1" (not in the SDK's partition list): did you mean eu-west-1? give a region such as us-east-1 with --region or AWS_REGION`
	if !strings.HasPrefix(err.Error(), want) {
		t.Errorf("got %q\nwant prefix %q", err, want)
	}
	if c := CheckRegion("eu-wset-1"); c.Status != PreflightFailed || !strings.Contains(c.Fix, "did you mean eu-west-1?") {
		t.Errorf("CheckRegion(eu-wset-1) = %+v, want FAIL naming eu-west-1", c)
	}
}

// TestKnownRegionsAreTheSDKs compares knownRegions with the partition list of the SDK version go.mod pins
// (its internal/endpoints/awsrulesfn/partitions.json, in the module cache).
func TestKnownRegionsAreTheSDKs(t *testing.T) {
	out, err := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", "github.com/aws/aws-sdk-go-v2").Output()
	if err != nil {
		t.Fatalf("go list -m github.com/aws/aws-sdk-go-v2: %v", err)
	}
	b, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(out)), "internal", "endpoints", "awsrulesfn", "partitions.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Partitions []struct {
			Regions map[string]json.RawMessage `json:"regions"`
		} `json:"partitions"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	var sdk []string
	for _, p := range doc.Partitions {
		for r := range p.Regions {
			if !strings.HasSuffix(r, "-global") {
				sdk = append(sdk, r)
			}
		}
	}
	slices.Sort(sdk)
	got := slices.Clone(knownRegions)
	slices.Sort(got)
	if !slices.Equal(got, sdk) {
		t.Errorf("knownRegions differ from the SDK's partition list:\n got %v\nwant %v", got, sdk)
	}
}
