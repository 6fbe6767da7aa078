package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// AppConfig is everything the app needs, resolved from context and environment by main.go.
type AppConfig struct {
	// Model is the catalog entry whose endpoint stack to synthesize.
	Model models.Model
	// Env is the target account and region; nil synthesizes environment-agnostic stacks.
	Env *awscdk.Environment
	// ContainerDir is the inference container's directory (default "container").
	ContainerDir string
	// ContainerDigest is capacity.SourceDigest of ContainerDir: the plan must have been measured against it.
	ContainerDigest string
	// ContainerNote names the untracked files ContainerDigest covers, for the gate's message.
	ContainerNote string
	// PlanPath is the plan the gate reads (default artifacts/<model>/plan.json).
	PlanPath string
	// InstanceType is -c instance_type: the instance type deployed instead of the catalog's (a type a
	// comparison found cheaper, docs/design.md "Instance types side by side"); "" deploys the catalog's.
	InstanceType string
	// AutoscalingOverride is -c autoscaling=true|false; nil leaves the catalog's choice.
	AutoscalingOverride *bool
	// ModuleDir is the Go module root the model-cache Lambda is built from (default ".", the repository root).
	ModuleDir string
	// HubEndpoint is the Hugging Face Hub (or mirror) the model-cache Lambda downloads from (default
	// DefaultHubEndpoint).
	HubEndpoint string
}

// App holds the stacks of one synthesis.
type App struct {
	// Foundation is the shared stack.
	Foundation *FoundationStack
	// ModelCache syncs the selected model's pinned weights; nil for engines without weights.
	ModelCache *ModelCacheStack
	// Endpoint is the selected model's endpoint stack.
	Endpoint *EndpointStack
}

// Build adds the speech-infra stacks for cfg to app and applies the cdk-nag AWS Solutions checks to all of them.
func Build(app awscdk.App, cfg AppConfig) *App {
	foundation := NewFoundationStack(app, FoundationStackName, &FoundationStackProps{
		StackProps: awscdk.StackProps{Env: cfg.Env},
	})
	planPath := cfg.PlanPath
	if planPath == "" {
		planPath = capacity.DefaultPlanPath(cfg.Model.ID)
	}
	instanceType := cfg.InstanceType
	if instanceType == "" {
		instanceType = cfg.Model.InstanceType
	}
	// The catalog entry stays as it is (the gate rebuilds the plan from it); only the deployed type changes.
	gate := capacity.Gate(capacity.Deployment{
		Model:               cfg.Model,
		InstanceType:        instanceType,
		ContainerDigest:     cfg.ContainerDigest,
		ContainerNote:       cfg.ContainerNote,
		AutoscalingOverride: cfg.AutoscalingOverride,
	}, planPath)
	endpoint := NewEndpointStack(app, EndpointStackName(cfg.Model.ID), &EndpointStackProps{
		Gate:          gate,
		StackProps:    awscdk.StackProps{Env: cfg.Env},
		Model:         cfg.Model,
		InstanceType:  instanceType,
		WeightsBucket: foundation.WeightsBucket,
		ExecutionRole: foundation.ExecutionRole,
		ContainerDir:  cfg.ContainerDir,
	})
	endpoint.AddStackDependency(foundation.Stack, jsii.String("the endpoint reads weights from the foundation bucket with the foundation role"))
	var cache *ModelCacheStack
	if cfg.Model.Source != nil {
		cache = NewModelCacheStack(app, ModelCacheStackName(cfg.Model.ID), &ModelCacheStackProps{
			StackProps:    awscdk.StackProps{Env: cfg.Env},
			Model:         cfg.Model,
			WeightsBucket: foundation.WeightsBucket,
			ModuleDir:     cfg.ModuleDir,
			HubEndpoint:   cfg.HubEndpoint,
		})
		cache.AddStackDependency(foundation.Stack, jsii.String("the weights are synced into the foundation bucket"))
		endpoint.AddStackDependency(cache.Stack, jsii.String("the endpoint starts only on the pinned, verified weights and their manifest.json"))
	}
	awscdk.Aspects_Of(app).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
	return &App{Foundation: foundation, ModelCache: cache, Endpoint: endpoint}
}
