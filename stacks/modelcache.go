package stacks

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3assets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsstepfunctions"
	"github.com/aws/aws-cdk-go/awscdk/v2/customresources"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/speech-infra/speech-infra/models"
)

// ModelCacheStackName returns the per-model weights cache stack name.
func ModelCacheStackName(modelID string) string { return "SpeechModelCacheStack-" + modelID }

// ModelCacheLambdaPackage is the Go package (relative to the module root) of the Lambda that syncs the files.
const ModelCacheLambdaPackage = "./lambda/modelcache"

// ModelCacheResourceType is the CloudFormation type of the custom resource that holds a synced revision.
const ModelCacheResourceType = "Custom::SpeechModelCache"

// DefaultHubEndpoint is the Hugging Face Hub the Lambda downloads from.
const DefaultHubEndpoint = "https://huggingface.co"

// Bounds of the asynchronous sync. One Lambda invocation syncs until SyncMargin before its own timeout and
// returns; the provider's isComplete handler then resumes the sync every ModelCacheQueryInterval until it is
// done or the total timeout (from the catalog, see ModelCacheTotalTimeout) has passed.
const (
	// ModelCacheLambdaTimeout is the sync Lambda's timeout, the most AWS Lambda allows.
	ModelCacheLambdaTimeout = 15 * time.Minute
	// ModelCacheQueryInterval is the time between two isComplete invocations.
	ModelCacheQueryInterval = 30 * time.Second
	// MaxModelCacheTotalTimeout is the provider framework's limit on its total timeout.
	MaxModelCacheTotalTimeout = time.Hour
	// MinModelCacheTotalTimeout leaves room for at least one full resumed invocation after the first.
	MinModelCacheTotalTimeout = ModelCacheLambdaTimeout + ModelCacheQueryInterval
	// GoBuildTimeout bounds the go build that bundles the Lambda during synthesis.
	GoBuildTimeout = 10 * time.Minute
)

// ModelCacheTotalTimeout is how long the provider keeps resuming a sync: the catalog's
// container.model_download_timeout_s (the time the model's files may take to reach an instance, the same
// bytes the cache moves), at least one resumed Lambda invocation and at most the provider's one hour.
func ModelCacheTotalTimeout(m models.Model) time.Duration {
	d := time.Duration(m.Container.ModelDownloadTimeoutS) * time.Second
	return min(max(d, MinModelCacheTotalTimeout), MaxModelCacheTotalTimeout)
}

// ModelCacheStackProps configures one model's weights cache.
type ModelCacheStackProps struct {
	awscdk.StackProps
	// Model is the catalog entry whose pinned files to sync; it must have a Source.
	Model models.Model
	// WeightsBucket is the foundation bucket; the files go under Model.WeightsPrefix().
	WeightsBucket awss3.IBucket
	// ModuleDir is the root of the Go module the Lambda is built from ("." when synthesizing from the
	// repository root, the default).
	ModuleDir string
	// HubEndpoint is the Hugging Face Hub (or a mirror) to download from; DefaultHubEndpoint when empty.
	HubEndpoint string
	// HubTokenSecret names the Secrets Manager secret (name or full ARN) holding a Hugging Face token for a
	// gated repository; when empty, the catalog's source.token_secret is used, and a model without one is a
	// public repository. The Lambda may read that one secret only.
	HubTokenSecret string
}

// ModelCacheStack syncs one model's pinned Hugging Face files into the weights bucket through a custom
// resource: Create and Update sync (resuming through the provider's isComplete handler), Delete leaves the
// objects in place.
type ModelCacheStack struct {
	awscdk.Stack
	// Function is the Go Lambda that runs the sync, as both onEvent and isComplete handler.
	Function awslambda.Function
	// Role is the Lambda's execution role, scoped to the model's prefix.
	Role awsiam.Role
	// Provider is the custom resource provider framework (with its waiter state machine).
	Provider customresources.Provider
	// Resource is the custom resource that stands for the synced revision.
	Resource awscdk.CustomResource
}

// NewModelCacheStack creates the weights cache stack for one model with weights. The Lambda is compiled with
// go build during synthesis (GoBuild); a failed build fails synthesis, Docker is never used. The stack is
// composed of construct functions, one per part: the sync function's role and logs (newSyncRole), the function
// (newSyncFunction), the custom resource provider framework (newSyncProvider) and the custom resource
// (newWeightsResource); each keeps its constructs' ids, so the logical IDs stay stable.
func NewModelCacheStack(scope constructs.Construct, id string, props *ModelCacheStackProps) *ModelCacheStack {
	m := props.Model
	if m.Source == nil {
		panic(fmt.Sprintf("%s: model %s has no source (engine %s needs no weights): create a model cache stack only for models with weights", id, m.ID, m.Engine))
	}
	if props.HubTokenSecret == "" {
		props.HubTokenSecret = m.Source.TokenSecret
	}
	sprops := props.StackProps
	if sprops.Description == nil {
		sprops.Description = jsii.String(fmt.Sprintf("speech-infra: pinned weights of %s (%s@%s) synced into the weights bucket", m.ID, m.Source.Repo, m.Source.Revision))
	}
	stack := awscdk.NewStack(scope, &id, &sprops)
	awscdk.Tags_Of(stack).Add(jsii.String("speech-infra:model"), jsii.String(m.ID), nil)

	moduleDir := props.ModuleDir
	if moduleDir == "" {
		moduleDir = "."
	}
	hub := props.HubEndpoint
	if hub == "" {
		hub = DefaultHubEndpoint
	}

	role, logGroup := newSyncRole(stack, m, props.WeightsBucket, props.HubTokenSecret)
	fn := newSyncFunction(stack, m, moduleDir, role, logGroup)
	provider := newSyncProvider(stack, m, fn)
	resource := newWeightsResource(stack, m, provider, props.WeightsBucket, hub, props.HubTokenSecret)

	awscdk.NewCfnOutput(stack, jsii.String("WeightsPrefix"), &awscdk.CfnOutputProps{Value: jsii.String(m.WeightsPrefix()), Description: jsii.String("Key prefix in the foundation weights bucket holding the verified files and manifest.json")})
	awscdk.NewCfnOutput(stack, jsii.String("SyncLogGroup"), &awscdk.CfnOutputProps{Value: logGroup.LogGroupName(), Description: jsii.String("Progress and verification logs of the sync")})

	return &ModelCacheStack{Stack: stack, Function: fn, Role: role, Provider: provider, Resource: resource}
}

// newSyncRole creates the sync Lambda's log group (SyncLogs) and execution role (SyncRole): it may write and
// list objects only under the model's prefix of the weights bucket, write its log group, and read the Hugging
// Face token secret when tokenSecret is set.
func newSyncRole(stack awscdk.Stack, m models.Model, bucket awss3.IBucket, tokenSecret string) (awsiam.Role, awslogs.LogGroup) {
	modelPrefix := ModelsPrefix + m.ID + "/"
	logGroup := awslogs.NewLogGroup(stack, jsii.String("SyncLogs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_ONE_YEAR,
	})
	role := awsiam.NewRole(stack, jsii.String("SyncRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("speech-infra model cache: write " + m.ID + "'s pinned files under " + modelPrefix + " of the weights bucket"),
	})
	statements := []awsiam.PolicyStatement{
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid: jsii.String("WriteModelFiles"),
			// PutObject authorizes PutObject and the multipart calls (create, upload part, complete);
			// AbortMultipartUpload discards a refused or interrupted upload; GetObject covers HeadObject, the
			// idempotent skip reading an object's recorded checksum; DeleteObject removes an older object at a
			// key that verification rejected, so the endpoint never reads it (the bucket keeps its versions).
			Actions:   jsii.Strings("s3:PutObject", "s3:AbortMultipartUpload", "s3:GetObject", "s3:DeleteObject"),
			Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(modelPrefix + "*"))),
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:        jsii.String("ListModelFiles"),
			Actions:    jsii.Strings("s3:ListBucket"),
			Resources:  jsii.Strings(*bucket.BucketArn()),
			Conditions: &map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": []string{modelPrefix + "*"}}},
		}),
		awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("WriteSyncLogs"),
			Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
			Resources: jsii.Strings(*logGroup.LogGroupArn()),
		}),
	}
	if tokenSecret != "" {
		// GetSecretValue takes the name or the full ARN as given; IAM needs the ARN, which for a secret named
		// without its ARN ends in Secrets Manager's random six-character suffix.
		secretArn := tokenSecret
		if !strings.HasPrefix(secretArn, "arn:") {
			secretArn = *awscdk.Fn_Sub(jsii.String("arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:"+tokenSecret+"-??????"), nil)
		}
		statements = append(statements, awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("ReadHubToken"),
			Actions:   jsii.Strings("secretsmanager:GetSecretValue"),
			Resources: jsii.Strings(secretArn),
		}))
	}
	for _, st := range statements {
		role.AddToPolicy(st)
	}
	cdknag.NagSuppressions_AddResourceSuppressions(role, &[]*cdknag.NagPackSuppression{{
		Id: jsii.String("AwsSolutions-IAM5"),
		Reason: jsii.String("Wildcards are scoped: objects under this model's models/" + m.ID + "/ prefix of the weights bucket only (the files of a revision are known only from the Hugging Face listing at run time); " +
			"a token secret named without its ARN matches only Secrets Manager's random six-character suffix (-??????)."),
		AppliesTo: &[]interface{}{
			// The bucket ARN is imported from the foundation stack; cdk-nag renders it either way.
			map[string]interface{}{"regex": `/^Resource::(<WeightsBucket[0-9A-F]{8}\.Arn>|SpeechFoundationStack:ExportsOutputFnGetAttWeightsBucket[0-9A-F]{8}Arn[0-9A-F]{8})\/models\/` + m.ID + `\/\*$/`},
			map[string]interface{}{"regex": `/^Resource::arn:<AWS::Partition>:secretsmanager:<AWS::Region>:<AWS::AccountId>:secret:.*-\?\?\?\?\?\?$/`},
		},
	}}, jsii.Bool(true))
	return role, logGroup
}

// newSyncFunction creates the Go Lambda that runs the sync (SyncFunction), built from moduleDir with GoBuild;
// its DependsOn is the role's policy only (dependOnPolicyOnly).
func newSyncFunction(stack awscdk.Stack, m models.Model, moduleDir string, role awsiam.Role, logGroup awslogs.LogGroup) awslambda.Function {
	fn := awslambda.NewFunction(stack, jsii.String("SyncFunction"), &awslambda.FunctionProps{
		Description:  jsii.String(fmt.Sprintf("Syncs %s@%s into %s of the weights bucket, verifying every file", m.Source.Repo, m.Source.Revision, m.WeightsPrefix())),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code: awslambda.Code_FromAsset(jsii.String(moduleDir), &awss3assets.AssetOptions{
			// The hash of the built binary (go build -trimpath is reproducible): the asset changes exactly when
			// the Lambda's code or its dependencies do, without hashing the whole repository.
			AssetHashType: awscdk.AssetHashType_OUTPUT,
			Bundling: &awscdk.BundlingOptions{
				// Required by the API, never run: GoBuild either builds or fails synthesis.
				Image: awscdk.DockerImage_FromRegistry(jsii.String("speech-infra/no-docker-bundling")),
				Local: &GoBuild{ModuleDir: moduleDir, Package: ModelCacheLambdaPackage},
			},
		}),
		Role:       role,
		LogGroup:   logGroup,
		MemorySize: jsii.Number(1024),
		Timeout:    awscdk.Duration_Seconds(jsii.Number(ModelCacheLambdaTimeout.Seconds())),
	})
	// The function already depends on its role through the GetAtt of the role's ARN; see dependOnPolicyOnly.
	dependOnPolicyOnly(fn, role)
	return fn
}

// newSyncProvider creates the custom resource provider framework (SyncProvider) around fn, as both onEvent and
// isComplete handler, resuming every ModelCacheQueryInterval for ModelCacheTotalTimeout(m): its log groups
// (ProviderLogs, WaiterLogs), least-privilege roles for the framework's functions and the cdk-nag
// suppressions, each with its reason.
func newSyncProvider(stack awscdk.Stack, m models.Model, fn awslambda.Function) customresources.Provider {
	frameworkLogs := awslogs.NewLogGroup(stack, jsii.String("ProviderLogs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_ONE_YEAR,
	})
	// The provider framework's own functions get roles that may write only their log group (instead of the
	// AWSLambdaBasicExecutionRole managed policy); the provider adds what they invoke and start.
	frameworkRole := func(id, what string) awsiam.Role {
		r := awsiam.NewRole(stack, jsii.String(id), &awsiam.RoleProps{
			AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
			Description: jsii.String("speech-infra model cache: custom resource provider framework, " + what),
		})
		r.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Sid:       jsii.String("WriteProviderLogs"),
			Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
			Resources: jsii.Strings(*frameworkLogs.LogGroupArn()),
		}))
		return r
	}
	onEventRole := frameworkRole("ProviderOnEventRole", "onEvent")
	completeRole := frameworkRole("ProviderCompleteRole", "isComplete and onTimeout")
	waiterLogs := awslogs.NewLogGroup(stack, jsii.String("WaiterLogs"), &awslogs.LogGroupProps{
		Retention: awslogs.RetentionDays_ONE_YEAR,
	})
	provider := customresources.NewProvider(stack, jsii.String("SyncProvider"), &customresources.ProviderProps{
		OnEventHandler:                   fn,
		IsCompleteHandler:                fn,
		QueryInterval:                    awscdk.Duration_Seconds(jsii.Number(ModelCacheQueryInterval.Seconds())),
		TotalTimeout:                     awscdk.Duration_Seconds(jsii.Number(ModelCacheTotalTimeout(m).Seconds())),
		LogGroup:                         frameworkLogs,
		FrameworkOnEventRole:             onEventRole,
		FrameworkCompleteAndTimeoutRole:  completeRole,
		DisableWaiterStateMachineLogging: jsii.Bool(false),
		WaiterStateMachineLogOptions: &customresources.LogOptions{
			Destination:          waiterLogs,
			Level:                awsstepfunctions.LogLevel_ALL,
			IncludeExecutionData: jsii.Bool(false),
		},
	})

	invokeReason := "lambda:InvokeFunction on a function ARN with :* covers that one function's versions and aliases, as the provider framework grants it; the function is named by its logical id."
	for _, c := range []constructs.IConstruct{onEventRole, completeRole, provider} {
		cdknag.NagSuppressions_AddResourceSuppressions(c, &[]*cdknag.NagPackSuppression{{
			Id:     jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String(invokeReason),
			AppliesTo: &[]interface{}{
				map[string]interface{}{"regex": `/^Resource::<SyncFunction[0-9A-F]{8}\.Arn>:\*$/`},
				map[string]interface{}{"regex": `/^Resource::<SyncProviderframework(isComplete|onTimeout)[0-9A-F]{8}\.Arn>:\*$/`},
			},
		}}, jsii.Bool(true))
	}
	waiter := provider.Node().FindChild(jsii.String("waiter-state-machine"))
	cdknag.NagSuppressions_AddResourceSuppressions(waiter, &[]*cdknag.NagPackSuppression{
		{
			Id: jsii.String("AwsSolutions-IAM5"),
			Reason: jsii.String("The waiter state machine's log delivery to CloudWatch Logs needs logs:CreateLogDelivery, GetLogDelivery, UpdateLogDelivery, DeleteLogDelivery, ListLogDeliveries, PutResourcePolicy, DescribeResourcePolicies and DescribeLogGroups on Resource *: " +
				"AWS supports no resource-level permissions for them (Step Functions developer guide, IAM policies for logging to CloudWatch Logs); CDK's grant for state machine logging puts logs:CreateLogStream and logs:PutLogEvents into the same statement."),
			AppliesTo: &[]interface{}{"Resource::*"},
		},
		{
			Id:     jsii.String("AwsSolutions-SF2"),
			Reason: jsii.String("The waiter only calls the provider's isComplete function on a timer until the sync is done; its executions are logged at level ALL, and X-Ray tracing would add Resource * permissions for no insight the logs lack."),
		},
	}, jsii.Bool(true))

	// The framework's functions and the waiter already depend on their roles through the GetAtt of the role's
	// ARN; see dependOnPolicyOnly.
	dependOnPolicyOnly(provider.Node().FindChild(jsii.String("framework-onEvent")), onEventRole)
	dependOnPolicyOnly(provider.Node().FindChild(jsii.String("framework-isComplete")), completeRole)
	dependOnPolicyOnly(provider.Node().FindChild(jsii.String("framework-onTimeout")), completeRole)
	dependOnPolicyOnly(waiter, waiter.Node().FindChild(jsii.String("Role")))
	return provider
}

// newWeightsResource creates the custom resource that stands for the synced revision (Weights): the model's
// repo, revision, file patterns, bucket, prefix, hub and token secret are its properties, so a change to any
// of them syncs again. It is retained on delete (the handler's Delete is a no-op).
func newWeightsResource(stack awscdk.Stack, m models.Model, provider customresources.Provider, bucket awss3.IBucket, hub, tokenSecret string) awscdk.CustomResource {
	properties := map[string]interface{}{
		"ModelId":     m.ID,
		"Repo":        m.Source.Repo,
		"Revision":    m.Source.Revision,
		"Files":       m.Source.Files,
		"Bucket":      bucket.BucketName(),
		"Prefix":      m.WeightsPrefix(),
		"HubEndpoint": hub,
	}
	if tokenSecret != "" {
		properties["TokenSecret"] = tokenSecret
	}
	return awscdk.NewCustomResource(stack, jsii.String("Weights"), &awscdk.CustomResourceProps{
		ServiceToken: provider.ServiceToken(),
		ResourceType: jsii.String(ModelCacheResourceType),
		Properties:   &properties,
		// Delete is a no-op in the handler; retaining also keeps CloudFormation from asking.
		RemovalPolicy: awscdk.RemovalPolicy_RETAIN,
	})
}

// dependOnPolicyOnly sets the DependsOn of res's CloudFormation resource to the default policy of role. A
// function (or the waiter) already depends on its role through the GetAtt of the role's ARN; CDK adds an
// explicit DependsOn on the role as well, which cfn-lint reports as redundant (W3005). Only the dependency
// that matters stays: the role's policy must exist before the function runs.
func dependOnPolicyOnly(res, role constructs.IConstruct) {
	cfn, ok := res.Node().DefaultChild().(awscdk.CfnResource)
	if !ok {
		panic(fmt.Sprintf("%s: no CloudFormation resource to set DependsOn on", *res.Node().Path()))
	}
	policy := role.Node().TryFindChild(jsii.String("DefaultPolicy"))
	if policy == nil {
		panic(fmt.Sprintf("%s: the role has no default policy: nothing grants the function its permissions", *role.Node().Path()))
	}
	pcfn, ok := policy.Node().DefaultChild().(awscdk.CfnResource)
	if !ok {
		panic(fmt.Sprintf("%s: no CloudFormation policy resource", *policy.Node().Path()))
	}
	cfn.AddOverride(jsii.String("DependsOn"), []*string{pcfn.LogicalId()})
}

// GoBuild bundles a Go Lambda with the local Go toolchain (awscdk.ILocalBundling): it cross-compiles Package
// for linux/arm64 (provided.al2023) into <outputDir>/bootstrap. It never declines: a failed build panics with
// the compiler's output and the fix, which the jsii runtime turns into a synthesis error, so the Docker
// fallback of CDK bundling is never used.
type GoBuild struct {
	// ModuleDir is the Go module root to build in.
	ModuleDir string
	// Package is the main package, relative to ModuleDir ("./lambda/modelcache").
	Package string
}

// TryBundle runs `GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o <outputDir>/bootstrap`
// and returns true, or panics naming the fix.
func (g *GoBuild) TryBundle(outputDir *string, _ *awscdk.BundlingOptions) *bool {
	if err := g.Build(context.Background(), *outputDir); err != nil {
		panic(err)
	}
	return jsii.Bool(true)
}

// Build compiles the Lambda into outDir/bootstrap within GoBuildTimeout.
func (g *GoBuild) Build(ctx context.Context, outDir string) error {
	if _, err := os.Stat(filepath.Join(g.ModuleDir, "go.mod")); err != nil {
		return fmt.Errorf("build the %s Lambda: no go.mod in %s: synthesize from the repository root (npx cdk synth) so that the Lambda can be built with go build", g.Package, g.ModuleDir)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		return fmt.Errorf("build the %s Lambda: the go command is not on PATH: install Go (see go.mod for the version) and re-run synthesis; Docker bundling is not used", g.Package)
	}
	ctx, cancel := context.WithTimeout(ctx, GoBuildTimeout)
	defer cancel()
	out, err := filepath.Abs(filepath.Join(outDir, "bootstrap"))
	if err != nil {
		return fmt.Errorf("build the %s Lambda: output path: %w", g.Package, err)
	}
	cmd := exec.CommandContext(ctx, goBin, "build", "-trimpath", "-buildvcs=false", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", out, g.Package)
	cmd.Dir = g.ModuleDir
	cmd.Env = append(os.Environ(), "GOOS=linux", "GOARCH=arm64", "CGO_ENABLED=0")
	output, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return fmt.Errorf("build the %s Lambda: go build did not finish within %s: check that the Go module proxy is reachable (or the module cache is warm: go mod download) and re-run synthesis", g.Package, GoBuildTimeout)
	}
	if err != nil {
		return fmt.Errorf("build the %s Lambda: GOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build in %s: %w:\n%s\nfix the error above and re-run synthesis; Docker bundling is not used", g.Package, g.ModuleDir, err, strings.TrimSpace(string(output)))
	}
	return nil
}
