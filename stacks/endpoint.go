package stacks

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsecrassets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssagemaker"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/speech-infra/speech-infra/capacity"
	"github.com/speech-infra/speech-infra/models"
)

// ContainerModelDir is where SageMaker places the uncompressed ModelDataSource files inside the container.
const ContainerModelDir = "/opt/ml/model"

// EndpointStackName returns the per-model endpoint stack name; several models live side by side.
func EndpointStackName(modelID string) string { return "SpeechEndpointStack-" + modelID }

// EndpointStackProps configures one model's endpoint.
type EndpointStackProps struct {
	awscdk.StackProps
	// Model is the catalog entry to serve.
	Model models.Model
	// InstanceType is the variant's instance type; "" deploys the catalog's (Model.InstanceType).
	InstanceType string
	// WeightsBucket holds the model's files under Model.WeightsPrefix().
	WeightsBucket awss3.IBucket
	// ExecutionRole is the SageMaker execution role from the foundation stack.
	ExecutionRole awsiam.IRole
	// ContainerDir is the directory of the inference container's Dockerfile (normally "container").
	ContainerDir string
	// Gate is the plan gate's decision: scaling, alarms, dashboard and the queue shield are created only when
	// it is Enabled; otherwise its reasons become an annotation (an error when autoscaling was asked for).
	Gate capacity.Decision
}

// EndpointStack is one model's SageMaker model, endpoint config and endpoint.
type EndpointStack struct {
	awscdk.Stack
	// Endpoint is the SageMaker endpoint named speech-<model>.
	Endpoint awssagemaker.CfnEndpoint
	// EndpointConfig is the endpoint's configuration with the single AllTraffic variant.
	EndpointConfig awssagemaker.CfnEndpointConfig
	// Model is the SageMaker model.
	Model awssagemaker.CfnModel
	// Scaling is what the scaling constructs were rendered from, nil when the gate refused.
	Scaling *capacity.ScalingSpec
}

// NewEndpointStack creates the endpoint stack for one model.
func NewEndpointStack(scope constructs.Construct, id string, props *EndpointStackProps) *EndpointStack {
	m := props.Model
	instanceType := props.InstanceType
	if instanceType == "" {
		instanceType = m.InstanceType
	}
	sprops := props.StackProps
	if sprops.Description == nil {
		sprops.Description = jsii.String(fmt.Sprintf("speech-infra: SageMaker real-time endpoint %s (%s on %s)", m.EndpointName(), m.ID, instanceType))
	}
	stack := awscdk.NewStack(scope, &id, &sprops)
	// Scalable targets and dashboards take no Tags in the CloudFormation resource schema cfn-lint checks against.
	awscdk.Tags_Of(stack).Add(jsii.String("speech-infra:model"), jsii.String(m.ID), &awscdk.TagProps{
		ExcludeResourceTypes: jsii.Strings("AWS::ApplicationAutoScaling::ScalableTarget", "AWS::CloudWatch::Dashboard"),
	})

	containerDir := props.ContainerDir
	if containerDir == "" {
		containerDir = "container"
	}
	image := awsecrassets.NewDockerImageAsset(stack, jsii.String("InferenceImage"), &awsecrassets.DockerImageAssetProps{
		Directory: jsii.String(containerDir),
		Platform:  awsecrassets.Platform_LINUX_AMD64(),
		Exclude:   jsii.Strings("**/*_test.go", "testdata", "README.md"),
	})

	// Until a plan passes the gate the queue is unbounded (QUEUE_MAX_DEPTH=0), so that qmax can measure the
	// instance rather than the shield; a passing plan sets the shield depth.
	env := map[string]*string{}
	for k, v := range m.ContainerEnvironment(ContainerModelDir, props.Gate.QueueMaxDepth()) {
		env[k] = jsii.String(v)
	}
	var scaling *capacity.ScalingSpec
	if props.Gate.Enabled && props.Gate.Plan != nil {
		spec := capacity.ScalingSpecFor(m.EndpointName(), models.VariantName, props.Gate.Plan)
		scaling = &spec
	}
	container := &awssagemaker.CfnModel_ContainerDefinitionProperty{
		Image:       image.ImageUri(),
		Environment: &env,
	}
	if m.Source != nil {
		container.ModelDataSource = &awssagemaker.CfnModel_ModelDataSourceProperty{
			S3DataSource: &awssagemaker.CfnModel_S3DataSourceProperty{
				S3Uri:           jsii.String(fmt.Sprintf("s3://%s/%s", *props.WeightsBucket.BucketName(), m.WeightsPrefix())),
				S3DataType:      jsii.String("S3Prefix"),
				CompressionType: jsii.String("None"),
			},
		}
	}
	model := awssagemaker.NewCfnModel(stack, jsii.String("Model"), &awssagemaker.CfnModelProps{
		ExecutionRoleArn: props.ExecutionRole.RoleArn(),
		PrimaryContainer: container,
	})

	variant := &awssagemaker.CfnEndpointConfig_ProductionVariantProperty{
		VariantName:          jsii.String(models.VariantName),
		ModelName:            model.AttrModelName(),
		InstanceType:         jsii.String(instanceType),
		InitialInstanceCount: jsii.Number(float64(m.InitialInstanceCount)),
		InitialVariantWeight: jsii.Number(1),
		ContainerStartupHealthCheckTimeoutInSeconds: jsii.Number(float64(m.Container.StartupHealthCheckTimeoutS)),
		ModelDataDownloadTimeoutInSeconds:           jsii.Number(float64(m.Container.ModelDownloadTimeoutS)),
		RoutingConfig: &awssagemaker.CfnEndpointConfig_RoutingConfigProperty{
			RoutingStrategy: jsii.String("LEAST_OUTSTANDING_REQUESTS"),
		},
	}
	configProps := &awssagemaker.CfnEndpointConfigProps{ProductionVariants: &[]interface{}{variant}}
	// SageMaker rejects a KmsKeyId for instance types with local NVMe storage: that storage is encrypted in
	// hardware (XTS-AES-256) and no key can be attached. Other instance types get a rotated customer key.
	if !HasInstanceStorage(instanceType) {
		key := awskms.NewKey(stack, jsii.String("EndpointStorageKey"), &awskms.KeyProps{
			EnableKeyRotation: jsii.Bool(true),
			Description:       jsii.String("Encrypts the ML storage volume of " + m.EndpointName()),
			RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
			PendingWindow:     awscdk.Duration_Days(jsii.Number(7)),
		})
		configProps.KmsKeyId = key.KeyArn()
	}
	config := awssagemaker.NewCfnEndpointConfig(stack, jsii.String("EndpointConfig"), configProps)

	endpoint := awssagemaker.NewCfnEndpoint(stack, jsii.String("Endpoint"), &awssagemaker.CfnEndpointProps{
		EndpointName:       jsii.String(m.EndpointName()),
		EndpointConfigName: config.AttrEndpointConfigName(),
	})

	if scaling != nil {
		addScaling(stack, endpoint, *scaling)
		awscdk.NewCfnOutput(stack, jsii.String("ScalingPlan"), &awscdk.CfnOutputProps{
			Value:       jsii.String(fmt.Sprintf("target %g, fleet %d-%d, queue depth %d, plan %s", scaling.ScaleOut.TargetValue, scaling.MinInstances, scaling.MaxInstances, scaling.QueueMaxDepth, props.Gate.PlanSHA256)),
			Description: jsii.String("The measured plan the autoscaling was synthesized from"),
		})
	} else {
		msg := fmt.Sprintf("%s: autoscaling, alarms and dashboard not synthesized, the endpoint runs in measurement configuration (QUEUE_MAX_DEPTH=0): %s",
			m.EndpointName(), strings.Join(props.Gate.Reasons, "; "))
		if props.Gate.Explicit {
			awscdk.Annotations_Of(stack).AddError(jsii.String(msg))
		} else {
			awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("speech-infra:planGate"), jsii.String(msg), nil)
		}
	}

	awscdk.NewCfnOutput(stack, jsii.String("EndpointName"), &awscdk.CfnOutputProps{Value: endpoint.AttrEndpointName(), Description: jsii.String("SageMaker endpoint to invoke")})
	awscdk.NewCfnOutput(stack, jsii.String("VariantName"), &awscdk.CfnOutputProps{Value: jsii.String(models.VariantName), Description: jsii.String("Production variant that scaling targets")})
	weightsDesc := "Key prefix in the foundation weights bucket; this model's engine needs no weights"
	if m.Source != nil {
		weightsDesc = "Key prefix in the foundation weights bucket the endpoint reads; " + ModelCacheStackName(m.ID) + " syncs and verifies the files there before this stack deploys"
	}
	awscdk.NewCfnOutput(stack, jsii.String("WeightsPrefix"), &awscdk.CfnOutputProps{Value: jsii.String(m.WeightsPrefix()), Description: jsii.String(weightsDesc)})

	return &EndpointStack{Stack: stack, Endpoint: endpoint, EndpointConfig: config, Model: model, Scaling: scaling}
}

// HasInstanceStorage reports whether a SageMaker instance type comes with local NVMe instance storage (the
// families ending in "d" such as c5d or m5d, and the GPU families g4dn, g5, g6, p3dn, p4d, p5 and their
// relatives). Such instances reject a KmsKeyId on the endpoint config.
func HasInstanceStorage(instanceType string) bool {
	parts := strings.Split(instanceType, ".")
	if len(parts) != 3 {
		return false
	}
	family := parts[1]
	for _, p := range []string{"g4dn", "g5", "g6", "g6e", "gr6", "p3dn", "p4d", "p4de", "p5", "p5e", "trn1"} {
		if family == p {
			return true
		}
	}
	// Families like c5d, m5d, r5d, m6id: generation digit, optional letters, then a trailing "d".
	if strings.HasSuffix(family, "d") && len(family) > 2 {
		if _, err := strconv.Atoi(family[1:2]); err == nil {
			return true
		}
	}
	return false
}
