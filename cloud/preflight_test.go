package cloud_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
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
)

// appDir is a CDK app directory with cdk.json and an installed CLI (an empty file: the runner double runs it).
func appDir(t *testing.T, withCLI bool) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "cdk.json"), []byte(`{"app":"go run ."}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if withCLI {
		if err := os.MkdirAll(filepath.Dir(cloud.CDKPath(dir)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(cloud.CDKPath(dir), nil, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// programs answers cdk --version, go version and docker info; dockerErr fails docker.
func programs(dockerErr error) *cloudtest.Programs {
	return &cloudtest.Programs{OutputFn: func(_ context.Context, _, name string, args ...string) ([]byte, error) {
		switch {
		case strings.HasSuffix(name, "cdk") && len(args) == 1 && args[0] == "--version":
			return []byte("2.1148.1 (build fcf5e34)\n"), nil
		case name == "go" && len(args) == 1 && args[0] == "version":
			return []byte("go version go1.26.8 linux/amd64\n"), nil
		case name == "docker" && len(args) > 0 && args[0] == "info":
			if dockerErr != nil {
				return []byte("Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"), dockerErr
			}
			return []byte("27.3.1\n"), nil
		}
		return nil, errors.New("unexpected program " + name)
	}}
}

// account is an account with the bootstrap at version v, the quota "ml.g5.xlarge for endpoint usage" at
// limit on the second page of quotas, and three endpoints: the model's own with one g5 instance, another
// g5 endpoint updating from 1 to 2 instances, a failed one and one of another type.
func account(v string, limit float64) cloud.PreflightClients {
	endpoints := map[string]struct {
		status          smtypes.EndpointStatus
		typ             smtypes.ProductionVariantInstanceType
		current, wanted int32
	}{
		"speech-kokoro-82m": {smtypes.EndpointStatusInService, "ml.g5.xlarge", 1, 1},
		"other-g5":          {smtypes.EndpointStatusUpdating, "ml.g5.xlarge", 1, 2},
		"failed-g5":         {smtypes.EndpointStatusFailed, "ml.g5.xlarge", 0, 1},
		"cpu":               {smtypes.EndpointStatusInService, "ml.c5.large", 3, 3},
	}
	sm := &cloudtest.SageMaker{
		ListEndpointsFn: func(_ context.Context, in *sagemaker.ListEndpointsInput, _ ...func(*sagemaker.Options)) (*sagemaker.ListEndpointsOutput, error) {
			if in.NextToken == nil {
				return &sagemaker.ListEndpointsOutput{NextToken: aws.String("p2"), Endpoints: []smtypes.EndpointSummary{
					{EndpointName: aws.String("speech-kokoro-82m"), EndpointStatus: endpoints["speech-kokoro-82m"].status},
					{EndpointName: aws.String("other-g5"), EndpointStatus: endpoints["other-g5"].status}}}, nil
			}
			return &sagemaker.ListEndpointsOutput{Endpoints: []smtypes.EndpointSummary{
				{EndpointName: aws.String("failed-g5"), EndpointStatus: endpoints["failed-g5"].status},
				{EndpointName: aws.String("cpu"), EndpointStatus: endpoints["cpu"].status}}}, nil
		},
		DescribeEndpointFn: func(_ context.Context, in *sagemaker.DescribeEndpointInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error) {
			e, ok := endpoints[aws.ToString(in.EndpointName)]
			if !ok || e.status == smtypes.EndpointStatusFailed {
				return nil, errors.New("describe of an endpoint that holds no instances")
			}
			return &sagemaker.DescribeEndpointOutput{EndpointName: in.EndpointName, EndpointConfigName: aws.String(aws.ToString(in.EndpointName) + "-cfg"),
				ProductionVariants: []smtypes.ProductionVariantSummary{{VariantName: aws.String("AllTraffic"), CurrentInstanceCount: aws.Int32(e.current), DesiredInstanceCount: aws.Int32(e.wanted)}}}, nil
		},
		DescribeEndpointConfigFn: func(_ context.Context, in *sagemaker.DescribeEndpointConfigInput, _ ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error) {
			e := endpoints[strings.TrimSuffix(aws.ToString(in.EndpointConfigName), "-cfg")]
			return &sagemaker.DescribeEndpointConfigOutput{ProductionVariants: []smtypes.ProductionVariant{{VariantName: aws.String("AllTraffic"), InstanceType: e.typ}}}, nil
		},
	}
	quotas := &cloudtest.Quotas{ListServiceQuotasFn: func(_ context.Context, in *servicequotas.ListServiceQuotasInput, _ ...func(*servicequotas.Options)) (*servicequotas.ListServiceQuotasOutput, error) {
		if aws.ToString(in.ServiceCode) != "sagemaker" {
			return nil, errors.New("service code " + aws.ToString(in.ServiceCode))
		}
		if in.NextToken == nil {
			return &servicequotas.ListServiceQuotasOutput{NextToken: aws.String("p2"), Quotas: []sqtypes.ServiceQuota{
				{QuotaName: aws.String("ml.g5.xlarge for training job usage"), QuotaCode: aws.String("L-TRAIN"), Value: aws.Float64(100)}}}, nil
		}
		return &servicequotas.ListServiceQuotasOutput{Quotas: []sqtypes.ServiceQuota{
			{QuotaName: aws.String("ml.g5.xlarge for endpoint usage"), QuotaCode: aws.String("L-1928E07B"), Value: aws.Float64(limit)}}}, nil
	}}
	return cloud.PreflightClients{
		STS: &cloudtest.STS{GetCallerIdentityFn: func(context.Context, *sts.GetCallerIdentityInput, ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
			return &sts.GetCallerIdentityOutput{Account: aws.String("123456789012"), Arn: aws.String("arn:aws:iam::123456789012:user/dev")}, nil
		}},
		SSM: &cloudtest.SSM{GetParameterFn: func(_ context.Context, in *ssm.GetParameterInput, _ ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
			if aws.ToString(in.Name) != cloud.BootstrapVersionParameter {
				return nil, errors.New("parameter " + aws.ToString(in.Name))
			}
			if v == "" {
				return nil, &ssmtypes.ParameterNotFound{Message: aws.String("not found")}
			}
			return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String(v)}}, nil
		}},
		Quotas: quotas, SageMaker: sm,
	}
}

func opts(dir string, free int) cloud.PreflightOptions {
	return cloud.PreflightOptions{AppDir: dir, Region: "us-east-1", InstanceType: "ml.g5.xlarge", Endpoint: "speech-kokoro-82m", FreeInstances: free, Timeout: 5 * time.Second}
}

func byName(t *testing.T, r cloud.PreflightReport) map[string]cloud.PreflightCheck {
	t.Helper()
	m := map[string]cloud.PreflightCheck{}
	for _, c := range r.Checks {
		m[c.Name] = c
	}
	return m
}

// In use: own 1 + updating max(1, 2) = 3; the failed and the CPU endpoints do not count.
func TestPreflightAllPass(t *testing.T) {
	dir := appDir(t, true)
	run := programs(nil)
	r := cloud.Preflight(context.Background(), run, account("21", 4), opts(dir, 1))
	if !r.OK() || r.Account != "123456789012" || len(r.Checks) != 7 {
		t.Fatalf("report %+v", r)
	}
	want := []string{cloud.CheckNameCDK, cloud.CheckNameGo, cloud.CheckNameDocker, cloud.CheckNameRegion, cloud.CheckNameIdentity, cloud.CheckNameBootstrap, cloud.CheckNameQuota}
	for i, c := range r.Checks {
		if c.Name != want[i] {
			t.Errorf("check %d is %s, want %s", i, c.Name, want[i])
		}
	}
	q := byName(t, r)[cloud.CheckNameQuota].Detail
	if !strings.Contains(q, "limit 4, in use 3 (1 of them speech-kokoro-82m's), free 1, need 1") || !strings.Contains(q, "L-1928E07B") {
		t.Errorf("quota detail %q", q)
	}
	if d := byName(t, r)[cloud.CheckNameBootstrap].Detail; d != "version 21 in aws://123456789012/us-east-1" {
		t.Errorf("bootstrap detail %q", d)
	}
	if calls := run.Calls(); len(calls) != 3 {
		t.Errorf("programs run %q, want cdk, go and docker once each", calls)
	}
}

// --for-measurement wants two free: with one free the quota fails with the increase to ask for.
func TestPreflightQuotaShort(t *testing.T) {
	r := cloud.Preflight(context.Background(), programs(nil), account("21", 4), opts(appDir(t, true), 2))
	c := byName(t, r)[cloud.CheckNameQuota]
	if r.OK() || r.Problems() != 1 || c.Status != cloud.PreflightFailed {
		t.Fatalf("report %+v", r)
	}
	if !strings.Contains(c.Fix, "--quota-code L-1928E07B --desired-value 5") {
		t.Errorf("fix %q", c.Fix)
	}
}

// Everything wrong at once: no CLI, no Docker, no region, no credentials; the account checks are skipped
// and make no call (their doubles would fail the check with an unexpected call).
func TestPreflightReportsEveryProblem(t *testing.T) {
	dir := appDir(t, false)
	cl := cloud.PreflightClients{STS: &cloudtest.STS{GetCallerIdentityFn: func(_ context.Context, _ *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
		var o sts.Options
		for _, f := range optFns {
			f(&o)
		}
		if o.Region != "us-east-1" {
			return nil, errors.New("no region given to STS")
		}
		return nil, errors.New("get credentials: no EC2 IMDS role found")
	}}, SSM: &cloudtest.SSM{}, Quotas: &cloudtest.Quotas{}, SageMaker: &cloudtest.SageMaker{}}
	o := opts(dir, 1)
	o.Region = ""
	r := cloud.Preflight(context.Background(), programs(errors.New("exit status 1")), cl, o)
	got := byName(t, r)
	for name, want := range map[string]struct {
		status    cloud.PreflightStatus
		fix, seen string
	}{
		cloud.CheckNameCDK:       {cloud.PreflightFailed, "npm ci", "not installed"},
		cloud.CheckNameGo:        {cloud.PreflightOK, "", "go1.26.8"},
		cloud.CheckNameDocker:    {cloud.PreflightFailed, "start its daemon", "Cannot connect to the Docker daemon"},
		cloud.CheckNameRegion:    {cloud.PreflightFailed, "--region", "no region"},
		cloud.CheckNameIdentity:  {cloud.PreflightFailed, "aws configure", "no EC2 IMDS role found"},
		cloud.CheckNameBootstrap: {cloud.PreflightSkipped, "AWS credentials", "needs AWS credentials"},
		cloud.CheckNameQuota:     {cloud.PreflightSkipped, "AWS credentials", "needs AWS credentials"},
	} {
		c := got[name]
		if c.Status != want.status || !strings.Contains(c.Fix, want.fix) || !strings.Contains(c.Detail, want.seen) {
			t.Errorf("%s: %+v, want %s with fix containing %q and detail %q", name, c, want.status, want.fix, want.seen)
		}
	}
	if r.Problems() != 6 {
		t.Errorf("%d problems, want 6", r.Problems())
	}
}

func TestPreflightBootstrap(t *testing.T) {
	for v, want := range map[string]string{"": "is not bootstrapped", "5": "bootstrap version 5, want at least 6", "x": `is "x", not a version number`} {
		c := byName(t, cloud.Preflight(context.Background(), programs(nil), account(v, 8), opts(appDir(t, true), 1)))[cloud.CheckNameBootstrap]
		if c.Status != cloud.PreflightFailed || !strings.Contains(c.Detail, want) || !strings.Contains(c.Fix, "npx cdk bootstrap aws://123456789012/us-east-1") {
			t.Errorf("version %q: %+v", v, c)
		}
	}
}

func TestPreflightQuotaMissingAndDenied(t *testing.T) {
	cl := account("21", 4)
	o := opts(appDir(t, true), 1)
	o.InstanceType = "ml.p5.48xlarge"
	c := byName(t, cloud.Preflight(context.Background(), programs(nil), cl, o))[cloud.CheckNameQuota]
	if c.Status != cloud.PreflightFailed || !strings.Contains(c.Detail, `no SageMaker quota named "ml.p5.48xlarge for endpoint usage"`) {
		t.Errorf("missing quota: %+v", c)
	}
	cl.Quotas = &cloudtest.Quotas{ListServiceQuotasFn: func(context.Context, *servicequotas.ListServiceQuotasInput, ...func(*servicequotas.Options)) (*servicequotas.ListServiceQuotasOutput, error) {
		return nil, errors.New("AccessDeniedException: not authorized to perform servicequotas:ListServiceQuotas")
	}}
	c = byName(t, cloud.Preflight(context.Background(), programs(nil), cl, opts(appDir(t, true), 1)))[cloud.CheckNameQuota]
	if c.Status != cloud.PreflightFailed || !strings.Contains(c.Fix, "servicequotas:ListServiceQuotas") {
		t.Errorf("denied: %+v", c)
	}
}

// A call that never answers (credentials from an unreachable metadata service) fails its check at the bound.
func TestPreflightBoundsEveryCall(t *testing.T) {
	cl := account("21", 4)
	cl.STS = &cloudtest.STS{GetCallerIdentityFn: func(ctx context.Context, _ *sts.GetCallerIdentityInput, _ ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	run := &cloudtest.Programs{OutputFn: func(ctx context.Context, _, name string, _ ...string) ([]byte, error) {
		<-ctx.Done()
		return nil, ctx.Err()
	}}
	o := opts(appDir(t, true), 1)
	o.Timeout = 200 * time.Millisecond
	start := time.Now()
	r := cloud.Preflight(context.Background(), run, cl, o)
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("preflight took %s with a 200 ms bound per check", took)
	}
	got := byName(t, r)
	if c := got[cloud.CheckNameIdentity]; c.Status != cloud.PreflightFailed || !strings.Contains(c.Detail, "no answer within 200ms") {
		t.Errorf("identity: %+v", c)
	}
	if c := got[cloud.CheckNameDocker]; c.Status != cloud.PreflightFailed || !strings.Contains(c.Detail, "did not answer within 200ms") {
		t.Errorf("docker: %+v", c)
	}
}

// A configuration that did not load (a missing profile) fails the credentials without a call.
func TestPreflightConfigError(t *testing.T) {
	o := opts(appDir(t, true), 1)
	o.ConfigErr = errors.New("failed to get shared config profile, nope")
	r := cloud.Preflight(context.Background(), programs(nil), cloud.PreflightClients{STS: &cloudtest.STS{}}, o)
	c := byName(t, r)[cloud.CheckNameIdentity]
	if c.Status != cloud.PreflightFailed || !strings.Contains(c.Detail, "profile, nope") || !strings.Contains(c.Fix, "profile name") {
		t.Errorf("identity: %+v", c)
	}
}

// Destroy's short preflight: tools and credentials only.
func TestPreflightSkips(t *testing.T) {
	o := cloud.PreflightOptions{AppDir: appDir(t, true), Region: "eu-west-1", SkipDocker: true, SkipAccount: true, Timeout: time.Second}
	cl := account("", 0)
	r := cloud.Preflight(context.Background(), programs(errors.New("no docker")), cl, o)
	if !r.OK() || len(r.Checks) != 4 {
		t.Errorf("report %+v", r)
	}
	// No cdk.json: run from the wrong directory.
	o.AppDir = t.TempDir()
	c := byName(t, cloud.Preflight(context.Background(), programs(nil), cl, o))[cloud.CheckNameCDK]
	if c.Status != cloud.PreflightFailed || !strings.Contains(c.Fix, "--app-dir") {
		t.Errorf("no cdk.json: %+v", c)
	}
}

// A missing app directory fails the CDK check and skips Go (it would only repeat the chdir error).
func TestPreflightMissingAppDir(t *testing.T) {
	o := cloud.PreflightOptions{AppDir: filepath.Join(t.TempDir(), "nope"), Region: "eu-west-1", SkipDocker: true, SkipAccount: true, Timeout: time.Second}
	got := byName(t, cloud.Preflight(context.Background(), programs(nil), account("21", 1), o))
	if got[cloud.CheckNameCDK].Status != cloud.PreflightFailed || got[cloud.CheckNameGo].Status != cloud.PreflightSkipped {
		t.Errorf("checks %+v", got)
	}
}
