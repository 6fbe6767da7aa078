package cloud

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/speech-infra/speech-infra/internal/editdistance"
	"github.com/speech-infra/speech-infra/internal/exitcode"
)

// BootstrapVersionParameter is the SSM parameter the default CDK bootstrap stack (qualifier hnb659fds) writes
// its version to, in every account and region it bootstraps.
const BootstrapVersionParameter = "/cdk-bootstrap/hnb659fds/version"

// MinBootstrapVersion is the lowest bootstrap version the synthesized templates accept: CDK v2 templates carry
// a CheckBootstrapVersion rule that refuses versions 1 to 5.
const MinBootstrapVersion = 6

// DefaultCheckTimeout bounds each preflight check (one program run or one AWS call chain). Without
// credentials, the SDK's default chain ends with the EC2 instance metadata service, which off EC2 only fails
// after its connection attempts time out; the bound keeps the preflight from hanging on it.
// AWS_EC2_METADATA_DISABLED=true skips that lookup altogether off EC2.
const DefaultCheckTimeout = 15 * time.Second

// PreflightStatus is the outcome of one preflight check.
type PreflightStatus string

// PreflightCheck outcomes.
const (
	// PreflightOK: the precondition holds.
	PreflightOK PreflightStatus = "ok"
	// PreflightFailed: the precondition does not hold; Fix says what to do.
	PreflightFailed PreflightStatus = "FAIL"
	// PreflightSkipped: the precondition could not be checked because one it depends on failed.
	PreflightSkipped PreflightStatus = "skipped"
)

// PreflightCheck is one precondition of a deploy: what was checked, how it went, what was seen and how to fix it.
type PreflightCheck struct {
	// Name says what is checked, e.g. "Docker daemon".
	Name string
	// Status is ok, FAIL or skipped.
	Status PreflightStatus
	// Detail is what the check saw (a version, an account, an error).
	Detail string
	// Fix is what to do when Status is not ok.
	Fix string
}

// PreflightCheck names, in the order Preflight reports them.
const (
	CheckNameCDK       = "CDK CLI"
	CheckNameGo        = "Go toolchain"
	CheckNameDocker    = "Docker daemon"
	CheckNameRegion    = "AWS region"
	CheckNameIdentity  = "AWS credentials"
	CheckNameBootstrap = "CDK bootstrap"
	CheckNameQuota     = "endpoint instance quota"
)

// PreflightReport is every check of a preflight, in a fixed order.
type PreflightReport struct {
	// Checks are the results, in the order of the PreflightCheck names.
	Checks []PreflightCheck
	// Account is the account of the credentials ("" when they failed).
	Account string
	// Region is the region the deploy goes to ("" when none is configured).
	Region string
}

// OK reports whether every check passed.
func (r PreflightReport) OK() bool {
	for _, c := range r.Checks {
		if c.Status != PreflightOK {
			return false
		}
	}
	return len(r.Checks) > 0
}

// Problems is the number of checks that did not pass.
func (r PreflightReport) Problems() int {
	n := 0
	for _, c := range r.Checks {
		if c.Status != PreflightOK {
			n++
		}
	}
	return n
}

// ProgramRunner runs a local program and returns what it printed (stdout and stderr together). The CDK CLI
// seam of speech-infra satisfies it; tests record the calls.
type ProgramRunner interface {
	Output(ctx context.Context, dir, name string, args ...string) ([]byte, error)
}

// IdentityAPI is the STS call the preflight makes.
type IdentityAPI interface {
	GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// ParameterAPI is the SSM call the preflight makes.
type ParameterAPI interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// NewQuotaClients makes CheckQuota's SDK clients for cfg.
func NewQuotaClients(cfg aws.Config) (QuotaAPI, EndpointUsageAPI) {
	return servicequotas.NewFromConfig(cfg), sagemaker.NewFromConfig(cfg)
}

// QuotaAPI is the Service Quotas call the preflight makes (through its paginator).
type QuotaAPI interface {
	servicequotas.ListServiceQuotasAPIClient
}

// EndpointUsageAPI is the SageMaker calls that count the instances endpoints use.
type EndpointUsageAPI interface {
	sagemaker.ListEndpointsAPIClient
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
	DescribeEndpointConfig(ctx context.Context, in *sagemaker.DescribeEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error)
}

// PreflightClients are the AWS clients of a preflight; the SDK clients of one aws.Config satisfy them.
type PreflightClients struct {
	STS       IdentityAPI
	SSM       ParameterAPI
	Quotas    QuotaAPI
	SageMaker EndpointUsageAPI
}

// PreflightOptions say what a deploy needs.
type PreflightOptions struct {
	// AppDir is the directory of the CDK app (cdk.json, node_modules/.bin/cdk).
	AppDir string
	// Region is the region of the loaded AWS configuration ("" when none is configured).
	Region string
	// ConfigErr is the error of loading the AWS configuration (a missing profile, a broken config file);
	// the AWS checks then fail with it and make no call.
	ConfigErr error
	// InstanceType is the model's instance type, e.g. ml.g5.xlarge.
	InstanceType string
	// Endpoint is the model's endpoint name; its own instances count as in use.
	Endpoint string
	// FreeInstances is how many instances of InstanceType must be free above current use (1; 2 when a
	// T_total measurement will add one).
	FreeInstances int
	// SkipDocker leaves out the Docker check (destroy builds no image).
	SkipDocker bool
	// SkipAccount leaves out the bootstrap and quota checks (destroy needs neither).
	SkipAccount bool
	// Timeout bounds each check (DefaultCheckTimeout when zero).
	Timeout time.Duration
}

// Preflight checks what a CDK deploy of the model needs and reports every problem at once, each with its
// fix: the CDK CLI (npm ci done), the Go toolchain (the app runs with `go run .`), a reachable Docker daemon
// (the image asset is built during the deploy), the region, the credentials (STS GetCallerIdentity), the CDK
// bootstrap of that account and region (SSM BootstrapVersionParameter), and the Service Quotas limit "<type>
// for endpoint usage" with o.FreeInstances free above what the account's endpoints use. A check that needs a
// failed one (the bootstrap needs the credentials) is reported skipped, naming the check it waits for. Each
// check is bounded by o.Timeout; the local and the AWS checks run concurrently. Preflight changes nothing.
func Preflight(ctx context.Context, run ProgramRunner, cl PreflightClients, o PreflightOptions) PreflightReport {
	if o.Timeout <= 0 {
		o.Timeout = DefaultCheckTimeout
	}
	var (
		wg                sync.WaitGroup
		cdk, goTool, dock PreflightCheck
		region, identity  PreflightCheck
		bootstrap, quota  PreflightCheck
		account           string
	)
	wg.Add(3)
	go func() { defer wg.Done(); cdk = CheckCDK(ctx, run, o.AppDir, o.Timeout) }()
	go func() { defer wg.Done(); goTool = CheckGo(ctx, run, o.AppDir, o.Timeout) }()
	go func() {
		defer wg.Done()
		if !o.SkipDocker {
			dock = CheckDocker(ctx, run, o.Timeout)
		}
	}()
	region = CheckRegion(o.Region)
	identity, account = CheckIdentity(ctx, cl.STS, o.Region, o.ConfigErr, o.Timeout)
	if !o.SkipAccount {
		switch {
		case identity.Status != PreflightOK:
			bootstrap = skipped(CheckNameBootstrap, CheckNameIdentity)
			quota = skipped(CheckNameQuota, CheckNameIdentity)
		case region.Status != PreflightOK:
			bootstrap = skipped(CheckNameBootstrap, CheckNameRegion)
			quota = skipped(CheckNameQuota, CheckNameRegion)
		default:
			wg.Add(1)
			go func() { defer wg.Done(); bootstrap = CheckBootstrap(ctx, cl.SSM, account, o.Region, o.Timeout) }()
			quota = CheckQuota(ctx, cl.Quotas, cl.SageMaker, o.InstanceType, o.Endpoint, o.FreeInstances, o.Timeout)
		}
	}
	wg.Wait()
	r := PreflightReport{Account: account, Region: o.Region}
	r.Checks = append(r.Checks, cdk, goTool)
	if !o.SkipDocker {
		r.Checks = append(r.Checks, dock)
	}
	r.Checks = append(r.Checks, region, identity)
	if !o.SkipAccount {
		r.Checks = append(r.Checks, bootstrap, quota)
	}
	return r
}

func skipped(name, needs string) PreflightCheck {
	return PreflightCheck{Name: name, Status: PreflightSkipped, Detail: "not checked: needs " + needs, Fix: "fix " + needs + " first"}
}

// CDKPath is the CDK CLI that `npm ci` installs in an app directory.
func CDKPath(appDir string) string { return filepath.Join(appDir, "node_modules", ".bin", "cdk") }

// CheckCDK checks that appDir holds the CDK app (cdk.json) and the pinned CDK CLI that runs
// (node_modules/.bin/cdk --version).
func CheckCDK(ctx context.Context, run ProgramRunner, appDir string, timeout time.Duration) PreflightCheck {
	c := PreflightCheck{Name: CheckNameCDK}
	if _, err := os.Stat(filepath.Join(appDir, "cdk.json")); err != nil {
		c.Status, c.Detail = PreflightFailed, fmt.Sprintf("no cdk.json in %s", dirName(appDir))
		c.Fix = "run speech-infra from the repository root, or give it with --app-dir"
		return c
	}
	cdk := CDKPath(appDir)
	if _, err := os.Stat(cdk); err != nil {
		c.Status, c.Detail = PreflightFailed, fmt.Sprintf("%s not found: the pinned CDK CLI is not installed", cdk)
		c.Fix = "run `npm ci` (or `make deps`) in " + dirName(appDir)
		return c
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := run.Output(ctx, appDir, cdk, "--version")
	if err != nil {
		c.Status, c.Detail = PreflightFailed, fmt.Sprintf("%s --version: %v%s", cdk, err, tail(out))
		c.Fix = "reinstall with `npm ci` in " + dirName(appDir) + " (needs Node.js 20 or later on PATH)"
		return c
	}
	c.Status, c.Detail = PreflightOK, firstLine(out)
	return c
}

// CheckGo checks that the Go toolchain the CDK app runs with (cdk.json: `go run .`) is on PATH.
func CheckGo(ctx context.Context, run ProgramRunner, appDir string, timeout time.Duration) PreflightCheck {
	c := PreflightCheck{Name: CheckNameGo}
	if st, err := os.Stat(appDir); appDir != "" && (err != nil || !st.IsDir()) {
		return skipped(CheckNameGo, "the CDK app directory "+appDir)
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := run.Output(ctx, appDir, "go", "version")
	if err != nil {
		c.Status, c.Detail = PreflightFailed, fmt.Sprintf("go version: %v%s", err, tail(out))
		c.Fix = "install Go (the version go.mod names) and put it on PATH: the CDK app runs with `go run .`"
		return c
	}
	c.Status, c.Detail = PreflightOK, firstLine(out)
	return c
}

// CheckDocker checks that a Docker daemon answers (`docker info`): the deploy builds the container image
// asset locally and pushes it.
func CheckDocker(ctx context.Context, run ProgramRunner, timeout time.Duration) PreflightCheck {
	c := PreflightCheck{Name: CheckNameDocker}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := run.Output(ctx, "", "docker", "info", "--format", "{{.ServerVersion}}")
	switch {
	case err == nil && strings.TrimSpace(string(out)) != "":
		c.Status, c.Detail = PreflightOK, "server "+firstLine(out)
		return c
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		c.Detail = fmt.Sprintf("docker info did not answer within %s", timeout)
	case err == nil:
		c.Detail = "docker info printed no server version"
	default:
		c.Detail = fmt.Sprintf("docker info: %v%s", err, tail(out))
	}
	c.Status = PreflightFailed
	c.Fix = "install Docker and start its daemon (Docker Desktop, or `sudo systemctl start docker`); the deploy builds the container image locally"
	return c
}

// CheckRegion checks that a region is configured and is in the SDK's partition list (CheckRegionKnown).
func CheckRegion(region string) PreflightCheck {
	if region == "" {
		return PreflightCheck{Name: CheckNameRegion, Status: PreflightFailed, Detail: "no region configured",
			Fix: "pass --region, set AWS_REGION, or give your profile a region (aws configure set region us-east-1)"}
	}
	if err := CheckRegionKnown(region); err != nil {
		return PreflightCheck{Name: CheckNameRegion, Status: PreflightFailed, Detail: region + " is not in the SDK's partition list",
			Fix: "give a known region with --region or AWS_REGION: " + strings.TrimPrefix(err.Error(), fmt.Sprintf("unknown AWS region %q (not in the SDK's partition list): ", region))}
	}
	return PreflightCheck{Name: CheckNameRegion, Status: PreflightOK, Detail: region}
}

// CheckIdentity asks STS who the credentials are and returns the account. Without a region it asks
// us-east-1, so that the credentials are checked on their own. configErr (loading the configuration
// failed) fails the check without a call.
func CheckIdentity(ctx context.Context, api IdentityAPI, region string, configErr error, timeout time.Duration) (PreflightCheck, string) {
	c := PreflightCheck{Name: CheckNameIdentity, Status: PreflightFailed}
	const fix = "configure credentials: `aws configure`, `aws sso login --profile <p>` with --profile <p>, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
	if configErr != nil {
		c.Detail, c.Fix = configErr.Error(), "fix the AWS configuration (the profile name, ~/.aws/config), or "+fix
		return c, ""
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var opts []func(*sts.Options)
	if region == "" {
		opts = append(opts, func(o *sts.Options) { o.Region = "us-east-1" })
	}
	out, err := api.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, opts...)
	var send *smithyhttp.RequestSendError
	switch {
	case errors.As(err, &send) && ctx.Err() == nil:
		c.Detail = "sts GetCallerIdentity: cannot reach the endpoint: " + rootCause(send)
		c.Fix = "reach AWS from this machine: check the network, DNS and HTTPS_PROXY (the region's STS endpoint did not answer)"
		return c, ""
	case errors.As(err, &send):
		c.Detail = "sts GetCallerIdentity: " + callError(ctx, err, timeout)
		c.Fix = "reach AWS from this machine: check the network, DNS and HTTPS_PROXY (the region's STS endpoint did not answer)"
		return c, ""
	case err != nil:
		c.Detail, c.Fix = "sts GetCallerIdentity: "+callError(ctx, err, timeout), fix
		return c, ""
	}
	c.Status, c.Detail = PreflightOK, fmt.Sprintf("account %s as %s", aws.ToString(out.Account), aws.ToString(out.Arn))
	return c, aws.ToString(out.Account)
}

// CheckBootstrap checks that the account and region are CDK-bootstrapped with at least MinBootstrapVersion.
func CheckBootstrap(ctx context.Context, api ParameterAPI, account, region string, timeout time.Duration) PreflightCheck {
	c := PreflightCheck{Name: CheckNameBootstrap, Status: PreflightFailed}
	bootstrapCmd := fmt.Sprintf("`npx cdk bootstrap aws://%s/%s`", account, region)
	fix := "run " + bootstrapCmd + " once for this account and region"
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	out, err := api.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(BootstrapVersionParameter)})
	var notFound *ssmtypes.ParameterNotFound
	switch {
	case errors.As(err, &notFound):
		c.Detail, c.Fix = fmt.Sprintf("aws://%s/%s is not bootstrapped (no SSM parameter %s)", account, region, BootstrapVersionParameter), fix
		return c
	case err != nil:
		c.Detail = fmt.Sprintf("ssm GetParameter %s: %s", BootstrapVersionParameter, callError(ctx, err, timeout))
		c.Fix = "allow ssm:GetParameter on " + BootstrapVersionParameter + " for these credentials, or " + fix
		return c
	case out.Parameter == nil:
		c.Detail, c.Fix = "ssm GetParameter "+BootstrapVersionParameter+" returned no parameter", fix
		return c
	}
	v, err := strconv.Atoi(aws.ToString(out.Parameter.Value))
	if err != nil {
		c.Detail, c.Fix = fmt.Sprintf("%s is %q, not a version number", BootstrapVersionParameter, aws.ToString(out.Parameter.Value)), "re-run "+bootstrapCmd
		return c
	}
	if v < MinBootstrapVersion {
		c.Detail, c.Fix = fmt.Sprintf("bootstrap version %d, want at least %d", v, MinBootstrapVersion), "upgrade the bootstrap: run "+bootstrapCmd
		return c
	}
	c.Status, c.Detail = PreflightOK, fmt.Sprintf("version %d in aws://%s/%s", v, account, region)
	return c
}

// QuotaName is the Service Quotas name of the SageMaker limit on instances of a type for real-time endpoints.
func QuotaName(instanceType string) string { return instanceType + " for endpoint usage" }

// CheckQuota finds the SageMaker quota QuotaName(instanceType) (ListServiceQuotas, matched by name), counts
// the instances of that type the account's endpoints hold (every endpoint that holds or is acquiring
// instances: the larger of current and desired count of each variant whose endpoint config names the type),
// and checks that at least need are free. The model's own endpoint counts as in use: a redeploy that
// replaces its instances needs room for the new ones.
func CheckQuota(ctx context.Context, quotas QuotaAPI, sm EndpointUsageAPI, instanceType, endpoint string, need int, timeout time.Duration) PreflightCheck {
	c := PreflightCheck{Name: CheckNameQuota, Status: PreflightFailed}
	name := QuotaName(instanceType)
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	limit, code, err := findQuota(ctx, quotas, name)
	if err != nil {
		c.Detail = fmt.Sprintf("servicequotas ListServiceQuotas sagemaker: %s", callError(ctx, err, timeout))
		c.Fix = "allow servicequotas:ListServiceQuotas for these credentials, or check the quota \"" + name + "\" in the Service Quotas console"
		return c
	}
	if code == "" {
		c.Detail = fmt.Sprintf("no SageMaker quota named %q in this region", name)
		c.Fix = "pick a region that offers " + instanceType + " for real-time endpoints, or change instance_type in the model's catalog file"
		return c
	}
	used, own, err := endpointInstances(ctx, sm, instanceType, endpoint)
	if err != nil {
		c.Detail = "count the instances endpoints use: " + callError(ctx, err, timeout)
		c.Fix = "allow sagemaker:ListEndpoints, DescribeEndpoint and DescribeEndpointConfig for these credentials"
		return c
	}
	free := int(limit) - used
	c.Detail = fmt.Sprintf("%q (%s): limit %g, in use %d (%d of them %s's), free %d, need %d", name, code, limit, used, own, endpoint, free, need)
	if free < need {
		c.Fix = fmt.Sprintf("request an increase of quota %s to at least %d (aws service-quotas request-service-quota-increase --service-code sagemaker --quota-code %s --desired-value %d), or delete endpoints that use %s",
			code, used+need, code, used+need, instanceType)
		return c
	}
	c.Status = PreflightOK
	return c
}

// findQuota pages through the SageMaker quotas for the one named name: its value and code ("" when none).
func findQuota(ctx context.Context, api QuotaAPI, name string) (float64, string, error) {
	p := servicequotas.NewListServiceQuotasPaginator(api, &servicequotas.ListServiceQuotasInput{ServiceCode: aws.String("sagemaker")})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, "", err
		}
		for _, q := range page.Quotas {
			if aws.ToString(q.QuotaName) == name {
				return aws.ToFloat64(q.Value), aws.ToString(q.QuotaCode), nil
			}
		}
	}
	return 0, "", nil
}

// holdsInstances says whether an endpoint in status s holds or is acquiring instances.
func holdsInstances(s smtypes.EndpointStatus) bool {
	switch s {
	case smtypes.EndpointStatusFailed, smtypes.EndpointStatusDeleting, smtypes.EndpointStatusOutOfService:
		return false
	}
	return true
}

// endpointInstances counts the instances of instanceType the account's endpoints hold, and how many of
// them the endpoint own holds.
func endpointInstances(ctx context.Context, sm EndpointUsageAPI, instanceType, own string) (used, ofOwn int, err error) {
	p := sagemaker.NewListEndpointsPaginator(sm, &sagemaker.ListEndpointsInput{})
	for p.HasMorePages() {
		page, err := p.NextPage(ctx)
		if err != nil {
			return 0, 0, err
		}
		for _, e := range page.Endpoints {
			if !holdsInstances(e.EndpointStatus) {
				continue
			}
			n, err := instancesOf(ctx, sm, aws.ToString(e.EndpointName), instanceType)
			if err != nil {
				return 0, 0, err
			}
			used += n
			if aws.ToString(e.EndpointName) == own {
				ofOwn += n
			}
		}
	}
	return used, ofOwn, nil
}

// instancesOf counts the instances of instanceType one endpoint holds.
func instancesOf(ctx context.Context, sm EndpointUsageAPI, endpoint, instanceType string) (int, error) {
	d, err := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(endpoint)})
	if err != nil {
		return 0, fmt.Errorf("describe endpoint %s: %w", endpoint, err)
	}
	cfg, err := sm.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: d.EndpointConfigName})
	if err != nil {
		return 0, fmt.Errorf("describe endpoint config %s of %s: %w", aws.ToString(d.EndpointConfigName), endpoint, err)
	}
	types := map[string]string{}
	for _, v := range cfg.ProductionVariants {
		types[aws.ToString(v.VariantName)] = string(v.InstanceType)
	}
	n := 0
	for _, v := range d.ProductionVariants {
		if types[aws.ToString(v.VariantName)] != instanceType {
			continue
		}
		n += int(max(aws.ToInt32(v.CurrentInstanceCount), aws.ToInt32(v.DesiredInstanceCount)))
	}
	return n, nil
}

// callError describes a failed call; a call cut by the check's bound says so.
func callError(ctx context.Context, err error, timeout time.Duration) string {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Sprintf("no answer within %s (%v)", timeout, err)
	}
	return err.Error()
}

func firstLine(b []byte) string {
	s := strings.TrimSpace(string(b))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// tail is the last line a failed program printed, as ": <line>", or "".
func tail(b []byte) string {
	s := strings.TrimSpace(string(b))
	if s == "" {
		return ""
	}
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return ": " + s
}

func dirName(dir string) string {
	if dir == "" || dir == "." {
		return "the current directory"
	}
	return dir
}

// The regions of the SDK's partition list (aws-sdk-go-v2 internal/endpoints/awsrulesfn/partitions.json, the
// "regions" of every partition, without the *-global pseudo-regions). The SDK accepts any name that matches
// a partition's pattern, so a typo such as eu-wset-1 reaches DNS and fails there, blamed on the network;
// CheckRegionKnown refuses it up front. TestKnownRegionsAreTheSDKs compares the list with the SDK's file of
// the version go.mod pins, so an SDK upgrade that adds a region fails that test until it is added here.
var knownRegions = []string{
	"af-south-1", "ap-east-1", "ap-east-2", "ap-northeast-1", "ap-northeast-2", "ap-northeast-3", "ap-south-1",
	"ap-south-2", "ap-southeast-1", "ap-southeast-2", "ap-southeast-3", "ap-southeast-4", "ap-southeast-5",
	"ap-southeast-6", "ap-southeast-7", "ca-central-1", "ca-west-1", "eu-central-1", "eu-central-2",
	"eu-north-1", "eu-south-1", "eu-south-2", "eu-west-1", "eu-west-2", "eu-west-3", "il-central-1",
	"me-central-1", "me-south-1", "me-west-1", "mx-central-1", "sa-east-1", "sa-west-1", "us-east-1",
	"us-east-2", "us-west-1", "us-west-2",
	"cn-north-1", "cn-northwest-1",
	"eusc-de-east-1",
	"us-iso-east-1", "us-iso-west-1",
	"us-isob-east-1", "us-isob-west-1",
	"eu-isoe-west-1",
	"us-isof-east-1", "us-isof-south-1",
	"us-gov-east-1", "us-gov-west-1",
}

// CheckRegionKnown refuses a region that is not in the SDK's partition list, naming the nearest known one:
// a usage error (exit 2), found before any call. "" passes (a missing region is CheckRegion's to report).
func CheckRegionKnown(region string) error {
	if region == "" || slices.Contains(knownRegions, region) {
		return nil
	}
	best, bestD := "", -1
	for _, r := range knownRegions {
		if d := editdistance.Levenshtein(region, r); bestD < 0 || d < bestD {
			best, bestD = r, d
		}
	}
	hint := ""
	if bestD <= 3 {
		hint = fmt.Sprintf("did you mean %s? ", best)
	}
	return exitcode.Usagef("unknown AWS region %q (not in the SDK's partition list): %sgive a region such as us-east-1 with --region or AWS_REGION (aws ec2 describe-regions lists yours)", region, hint)
}

// API error codes of expired and of invalid credentials (STS, SageMaker, CloudWatch, S3, SSO).
var (
	expiredCodes = []string{"ExpiredToken", "ExpiredTokenException", "RequestExpired", "TokenRefreshRequired"}
	invalidCodes = []string{"InvalidClientTokenId", "UnrecognizedClientException", "SignatureDoesNotMatch", "InvalidSignatureException", "InvalidAccessKeyId", "AuthFailure"}
	deniedCodes  = []string{"AccessDenied", "AccessDeniedException", "UnauthorizedOperation"}
)

// Diagnose turns an AWS error anywhere in err's chain into the preflight's diagnosis: one line saying what
// went wrong and how to fix it, in place of the SDK's raw chain (the context err's wrappers added stays),
// marked exitcode.CouldNotRun (exit 3). It knows missing credentials, expired and invalid credentials, a
// denied call, and an endpoint that cannot be reached (refused, DNS, timeout); any other AWS API error is
// told by its code and message, and marked CouldNotRun too. Unmarked network errors outside the SDK are classified by
// exitcode.Classify. nil, an already marked error and an error without an AWS call in its chain come back
// unchanged (the last classified).
func Diagnose(err error) error {
	if err == nil || exitcode.Marked(err) {
		return err
	}
	var op *smithy.OperationError
	if !errors.As(err, &op) {
		return exitcode.Classify(err)
	}
	call := strings.ToLower(op.ServiceID) + " " + op.OperationName
	line := diagnosis(op, call)
	msg := err.Error()
	if line != "" {
		msg = strings.Replace(msg, op.Error(), line, 1)
	}
	return exitcode.CouldNotRun(&diagnosed{msg: msg, err: err})
}

// diagnosed is an error whose message is the diagnosis, wrapping the SDK error for errors.Is and errors.As.
type diagnosed struct {
	msg string
	err error
}

func (d *diagnosed) Error() string { return d.msg }
func (d *diagnosed) Unwrap() error { return d.err }

// credentialsFix is the fix for missing or invalid credentials.
const credentialsFix = "configure credentials: `aws configure`, `aws sso login --profile <p>` with --profile <p>, or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"

// diagnosis is the one line for op, or "" to keep the SDK's message.
func diagnosis(op *smithy.OperationError, call string) string {
	var (
		api  smithy.APIError
		send *smithyhttp.RequestSendError
		dns  *net.DNSError
		sign *v4.SigningError
	)
	switch {
	case errors.As(op, &api) && slices.Contains(expiredCodes, api.ErrorCode()):
		return fmt.Sprintf("%s: the AWS credentials have expired (%s): refresh them: `aws sso login --profile <p>`, or export a new AWS_SESSION_TOKEN with its key pair", call, api.ErrorCode())
	case errors.As(op, &api) && slices.Contains(invalidCodes, api.ErrorCode()):
		return fmt.Sprintf("%s: AWS does not accept the credentials (%s): %s", call, api.ErrorCode(), credentialsFix)
	case errors.As(op, &api) && slices.Contains(deniedCodes, api.ErrorCode()):
		return fmt.Sprintf("%s: access denied (%s): allow %s:%s for these credentials, or use a profile that has it", call, api.ErrorCode(), iamService(op.ServiceID), op.OperationName)
	case errors.As(op, &sign) || strings.Contains(op.Error(), "get identity:") || strings.Contains(op.Error(), "failed to retrieve credentials"):
		return fmt.Sprintf("%s: no AWS credentials found: %s", call, credentialsFix)
	case errors.As(op, &dns):
		return fmt.Sprintf("%s: cannot resolve %s: check the region (--region, AWS_REGION), DNS and the network", call, dns.Name)
	case errors.As(op, &send):
		return fmt.Sprintf("%s: cannot reach the endpoint: %s: check the network, HTTPS_PROXY and AWS_ENDPOINT_URL*", call, rootCause(send))
	case errors.Is(op, context.DeadlineExceeded):
		return fmt.Sprintf("%s: no answer in time: check the network and HTTPS_PROXY", call)
	case errors.As(op, &api):
		// Any other answer of AWS: its code and message, without the SDK's layers (status, request id).
		return fmt.Sprintf("%s: %s: %s", call, api.ErrorCode(), api.ErrorMessage())
	}
	return ""
}

// iamService is the IAM action prefix of an SDK service id.
func iamService(serviceID string) string {
	switch serviceID {
	case "CloudWatch":
		return "cloudwatch"
	case "CloudWatch Logs":
		return "logs"
	case "Application Auto Scaling":
		return "application-autoscaling"
	case "SageMaker Runtime":
		return "sagemaker"
	}
	return strings.ToLower(strings.ReplaceAll(serviceID, " ", ""))
}

// rootCause is the innermost error of err's chain (e.g. "dial tcp 127.0.0.1:1: connect: connection refused"
// for a *net.OpError), so a diagnosis names the cause without the layers above it.
func rootCause(err error) string {
	var op *net.OpError
	if errors.As(err, &op) {
		return op.Error()
	}
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}
