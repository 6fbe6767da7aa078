package cloud

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// ScalingClient is the part of the Application Auto Scaling client DeployModel uses: it reads the deployed
// scaling back and applies or removes it.
type ScalingClient interface {
	ScalingAPI
	ScalingReadAPI
}

// AlarmClient is the part of the CloudWatch client DeployModel uses: it reads the alarms back and puts or
// deletes them.
type AlarmClient interface {
	AlarmAPI
	AlarmReadAPI
}

// DeployClients are the clients DeployModel works through. The SDK's *sagemaker.Client,
// *applicationautoscaling.Client and *cloudwatch.Client satisfy them, pointed at AWS or at the local emulator;
// cloud/cloudtest has hand-written doubles.
type DeployClients struct {
	// SageMaker creates, updates and describes the endpoint, its endpoint config and its model.
	SageMaker EndpointAPI
	// AutoScaling holds the scalable target and its policies.
	AutoScaling ScalingClient
	// CloudWatch holds the alarms.
	CloudWatch AlarmClient
}

// NewDeployClients makes DeployModel's SDK clients for cfg (AWS, or the emulator's LocalConfig).
func NewDeployClients(cfg aws.Config) DeployClients {
	return DeployClients{SageMaker: sagemaker.NewFromConfig(cfg), AutoScaling: applicationautoscaling.NewFromConfig(cfg), CloudWatch: cloudwatch.NewFromConfig(cfg)}
}

// The image and execution role a model deployed on the local emulator records (speech-infra deploy --local,
// tts-bench compare --local): the emulator runs its own container binary whatever the image says, and has no
// IAM.
const (
	LocalImage = "speech-infra/speech-container:local"
	LocalRole  = "arn:aws:iam::000000000000:role/speech-infra-local"
)

// DeployOptions say what DeployModel deploys. Validate reports every problem at once.
type DeployOptions struct {
	// Model is the catalog entry to deploy.
	Model models.Model
	// InstanceType is the instance type of the variant (models.LocalInstanceType on the emulator).
	InstanceType string
	// Emulator is true when the clients point at the local emulator: the gate then accepts a plan measured
	// there (capacity.Deployment.Emulator).
	Emulator bool
	// CloudWatchCompression is the emulator's published CloudWatch compression (emulator.Info); 0 or 1 on AWS
	// (capacity.Deployment.CloudWatchCompression).
	CloudWatchCompression int
	// Image is the container image the SageMaker model records.
	Image string
	// RoleARN is the execution role the SageMaker model records.
	RoleARN string
	// ContainerDigest is capacity.SourceDigest of the container source being deployed; "" when it is unknown,
	// which no plan matches.
	ContainerDigest string
	// ContainerNote names the untracked files ContainerDigest covers (capacity.SourceFiles.UntrackedNote),
	// for the gate's message when the digest differs from the plan's.
	ContainerNote string
	// PlanPath is the plan the gate reads (capacity.DefaultPlanPath by default in the commands).
	PlanPath string
	// ModelDir is the directory with the model's weights the container reads (models with weights only).
	ModelDir string
	// AutoscalingOverride overrides the catalog's scaling.autoscaling when set; true makes a refused plan an
	// error wrapping ErrAutoscalingRefused.
	AutoscalingOverride *bool
	// Wait bounds each wait for the endpoint; a zero Timeout means the model's startup health check timeout
	// plus DeployWaitSlack (a new instance's health check plus draining the old ones in a blue/green update).
	Wait WaitOptions
}

// DeployWaitSlack is added to the model's startup health check timeout to bound each wait of a deploy.
const DeployWaitSlack = 90 * time.Second

// Validate reports every problem of the options at once, each as "{what}: {why}: {fix}".
func (o DeployOptions) Validate() error {
	var errs []error
	if o.Model.ID == "" {
		errs = append(errs, errors.New("model: none given: pick a model id from the catalog (models/)"))
	}
	if o.InstanceType == "" {
		errs = append(errs, errors.New("instance type: none given: use the catalog's instance type, or \""+models.LocalInstanceType+"\" on the local emulator"))
	}
	if o.Image == "" {
		errs = append(errs, errors.New("image: none given: name the container image the model runs"))
	}
	if o.RoleARN == "" {
		errs = append(errs, errors.New("execution role: none given: name the role ARN the model runs as"))
	}
	if o.PlanPath == "" {
		errs = append(errs, errors.New("plan path: none given: use capacity.DefaultPlanPath(model) (artifacts/<model>/plan.json)"))
	}
	if o.Model.Source != nil && o.ModelDir == "" {
		errs = append(errs, fmt.Errorf("model directory: %s needs its weights and none was given: pass the directory with the files of %s at %s",
			o.Model.ID, o.Model.Source.Repo, o.Model.Source.Revision))
	}
	if err := o.Wait.Validate(); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// ErrAutoscalingRefused says autoscaling was asked for explicitly (DeployOptions.AutoscalingOverride true) and
// the gate refused the plan: a failed check. The endpoint is deployed without scaling all the same, as a
// deploy with autoscaling off would be, and the result is complete.
var ErrAutoscalingRefused = errors.New("autoscaling was asked for but the gate refused the plan")

// ScalingAction says what DeployModel did with the endpoint's scaling.
type ScalingAction string

// What DeployModel did with the scaling.
const (
	// ScalingApplied: the gate accepted the plan and the deployed scaling differed from it (or was missing);
	// the plan's target, policies and alarms were put.
	ScalingApplied ScalingAction = "applied"
	// ScalingUnchanged: the gate accepted the plan and the deployed scaling already matches it.
	ScalingUnchanged ScalingAction = "unchanged"
	// ScalingRemoved: the gate refused (or autoscaling is off) and scaling from an earlier plan was removed.
	ScalingRemoved ScalingAction = "removed"
	// ScalingOff: the gate refused (or autoscaling is off) and there was no scaling to remove.
	ScalingOff ScalingAction = "off"
)

// QueueShield is the container's queue shield (QUEUE_MAX_DEPTH) before and after a deploy.
type QueueShield struct {
	// Before is QUEUE_MAX_DEPTH the endpoint ran before ("" when it was created or did not set it).
	Before string
	// Now is QUEUE_MAX_DEPTH the endpoint runs now: the plan's depth, or "0" (unbounded, the measurement
	// configuration) when the gate refused.
	Now string
	// Changed is true when this deploy moved the endpoint from Before to Now.
	Changed bool
}

// DeployModelResult is what DeployModel decided and did.
type DeployModelResult struct {
	// Endpoint and Variant name the endpoint and its production variant.
	Endpoint, Variant string
	// PlanPath is the plan the gate read.
	PlanPath string
	// Gate is the gate's decision: Enabled with the accepted plan, or the reasons it refused.
	Gate capacity.Decision
	// Environment is the container environment deployed.
	Environment map[string]string
	// Deployed is what DeployEndpoint did (created, updated, unchanged) and the endpoint's description.
	Deployed DeployResult
	// QueueShield is the queue shield before and after.
	QueueShield QueueShield
	// Scaling is what was done with the scaling.
	Scaling ScalingAction
	// ScalingSpec is the plan's scaling (when the gate accepted it); nil otherwise.
	ScalingSpec *capacity.ScalingSpec
	// ScalingDiffs name what differed between the deployed scaling and the plan before it was applied.
	ScalingDiffs []string
}

// DeployModel runs the deploy sequence that speech-infra deploy (local and AWS) runs, and that validate and
// drift can reuse:
//
//  1. the gate (capacity.Gate, the same as the endpoint stack's) decides on the plan at PlanPath;
//  2. the container environment follows from it (the plan's queue shield, or the measurement configuration);
//  3. DeployEndpoint creates the endpoint or moves it blue/green to that environment;
//  4. with the gate's accept, the plan's scaling is applied when the deployed scaling differs from it;
//     otherwise any scaling from an earlier plan is removed, as a stack synthesized without scaling would.
//
// Options are validated first; invalid options deploy nothing. An error of a step ends the sequence and the
// result says what was done until then. When autoscaling was asked for explicitly and the gate refused, the
// sequence runs to its end (without scaling) and the error wraps ErrAutoscalingRefused.
func DeployModel(ctx context.Context, cl DeployClients, o DeployOptions) (DeployModelResult, error) {
	if err := o.Validate(); err != nil {
		return DeployModelResult{}, err
	}
	m := o.Model
	res := DeployModelResult{Endpoint: m.EndpointName(), Variant: models.VariantName, PlanPath: o.PlanPath}
	res.Gate = capacity.GateContext(ctx, capacity.Deployment{
		Model: m, InstanceType: o.InstanceType, Emulator: o.Emulator, CloudWatchCompression: o.CloudWatchCompression, ContainerDigest: o.ContainerDigest, ContainerNote: o.ContainerNote, AutoscalingOverride: o.AutoscalingOverride,
	}, o.PlanPath)
	if err := ctx.Err(); err != nil {
		// Stopped while the gate re-ran the plan's simulations: nothing was deployed, not even without scaling.
		return res, fmt.Errorf("stopped before anything was deployed: %w", context.Cause(ctx))
	}
	res.Environment = m.ContainerEnvironment(o.ModelDir, res.Gate.QueueMaxDepth())

	wait := o.Wait
	if wait.Timeout == 0 {
		wait.Timeout = time.Duration(m.Container.StartupHealthCheckTimeoutS)*time.Second + DeployWaitSlack
	}
	dep, err := DeployEndpoint(ctx, cl.SageMaker, EndpointSpec{
		Name: res.Endpoint, Variant: res.Variant, Image: o.Image, Environment: res.Environment,
		InstanceType: o.InstanceType, InstanceCount: int32(m.InitialInstanceCount),
		StartupHealthCheckTimeoutS: int32(m.Container.StartupHealthCheckTimeoutS), RoleARN: o.RoleARN,
	}, wait)
	res.Deployed = dep
	if err != nil {
		return res, err
	}
	res.QueueShield = QueueShield{Now: res.Environment["QUEUE_MAX_DEPTH"]}
	if dep.Previous != nil {
		res.QueueShield.Before = dep.Previous.Environment["QUEUE_MAX_DEPTH"]
	}
	res.QueueShield.Changed = dep.Action == Updated && res.QueueShield.Before != res.QueueShield.Now

	if res.Gate.Enabled {
		spec := capacity.ScalingSpecFor(res.Endpoint, res.Variant, res.Gate.Plan)
		res.ScalingSpec = &spec
		diffs, err := ScalingDiff(ctx, cl.AutoScaling, cl.CloudWatch, spec)
		if err != nil {
			return res, err
		}
		res.ScalingDiffs = diffs
		if len(diffs) == 0 {
			res.Scaling = ScalingUnchanged
			return res, nil
		}
		if err := ApplyScaling(ctx, cl.AutoScaling, cl.CloudWatch, spec); err != nil {
			return res, err
		}
		res.Scaling = ScalingApplied
		return res, nil
	}
	removed, err := RemoveScaling(ctx, cl.AutoScaling, cl.CloudWatch, res.Endpoint, res.Variant)
	if err != nil {
		return res, err
	}
	res.Scaling = ScalingOff
	if removed {
		res.Scaling = ScalingRemoved
	}
	if res.Gate.Explicit {
		return res, fmt.Errorf("%w for %s: fix what the gate says or deploy without asking for autoscaling", ErrAutoscalingRefused, res.Endpoint)
	}
	return res, nil
}
