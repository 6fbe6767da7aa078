// Package stacks holds the CDK stacks of speech-infra: the shared foundation (weights bucket, SageMaker
// execution role), the per-model weights cache and the per-model endpoint. Stacks get typed props; only
// main.go reads context and environment.
package stacks

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// FoundationStackName is the name of the stack shared by all models.
const FoundationStackName = "SpeechFoundationStack"

// ModelsPrefix is the key prefix in the weights bucket under which every model's files live, as
// models/<model-id>/<revision>/<file>. The execution role may read nothing else.
const ModelsPrefix = "models/"

// FoundationStackProps configures the shared foundation.
type FoundationStackProps struct {
	awscdk.StackProps
}

// FoundationStack is the shared foundation: the encrypted weights bucket and the SageMaker execution role.
type FoundationStack struct {
	awscdk.Stack
	// WeightsBucket holds every model's pinned files under ModelsPrefix.
	WeightsBucket awss3.Bucket
	// ExecutionRole is assumed by SageMaker to pull the image, read the weights and write logs and metrics.
	ExecutionRole awsiam.Role
}

// NewFoundationStack creates the shared foundation stack. Its stateful resources have stable logical IDs and
// are retained when the stack is deleted.
func NewFoundationStack(scope constructs.Construct, id string, props *FoundationStackProps) *FoundationStack {
	var sprops awscdk.StackProps
	if props != nil {
		sprops = props.StackProps
	}
	if sprops.Description == nil {
		sprops.Description = jsii.String("speech-infra: shared weights bucket and SageMaker execution role")
	}
	stack := awscdk.NewStack(scope, &id, &sprops)

	logs := awss3.NewBucket(stack, jsii.String("AccessLogsBucket"), &awss3.BucketProps{
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_PREFERRED,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		LifecycleRules: &[]*awss3.LifecycleRule{{
			Id:         jsii.String("expire-access-logs"),
			Expiration: awscdk.Duration_Days(jsii.Number(365)),
		}},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(logs, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-S1"),
		Reason: jsii.String("This is the server access log bucket of the weights bucket; logging it into itself would loop and into another bucket would only move the question."),
	}}, jsii.Bool(true))

	bucket := awss3.NewBucket(stack, jsii.String("WeightsBucket"), &awss3.BucketProps{
		Encryption:             awss3.BucketEncryption_S3_MANAGED,
		BlockPublicAccess:      awss3.BlockPublicAccess_BLOCK_ALL(),
		EnforceSSL:             jsii.Bool(true),
		Versioned:              jsii.Bool(true),
		RemovalPolicy:          awscdk.RemovalPolicy_RETAIN,
		ServerAccessLogsBucket: logs,
		ServerAccessLogsPrefix: jsii.String("weights/"),
	})

	role := awsiam.NewRole(stack, jsii.String("SageMakerExecutionRole"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("sagemaker.amazonaws.com"), nil),
		Description: jsii.String("speech-infra endpoints: read model weights, pull the inference image, write logs and metrics"),
	})
	policy := awsiam.NewPolicy(stack, jsii.String("SageMakerExecutionPolicy"), &awsiam.PolicyProps{
		Roles: &[]awsiam.IRole{role},
		Statements: &[]awsiam.PolicyStatement{
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("ReadModelWeights"),
				Actions:   jsii.Strings("s3:GetObject"),
				Resources: jsii.Strings(*bucket.ArnForObjects(jsii.String(ModelsPrefix + "*"))),
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:        jsii.String("ListModelWeights"),
				Actions:    jsii.Strings("s3:ListBucket"),
				Resources:  jsii.Strings(*bucket.BucketArn()),
				Conditions: &map[string]interface{}{"StringLike": map[string]interface{}{"s3:prefix": []string{ModelsPrefix + "*"}}},
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("PullInferenceImage"),
				Actions:   jsii.Strings("ecr:BatchCheckLayerAvailability", "ecr:BatchGetImage", "ecr:GetDownloadUrlForLayer"),
				Resources: jsii.Strings(*awscdk.Fn_Sub(jsii.String("arn:${AWS::Partition}:ecr:${AWS::Region}:${AWS::AccountId}:repository/cdk-*-container-assets-${AWS::AccountId}-${AWS::Region}"), nil)),
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("EcrAuthorizationToken"),
				Actions:   jsii.Strings("ecr:GetAuthorizationToken"),
				Resources: jsii.Strings("*"),
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:       jsii.String("WriteEndpointLogs"),
				Actions:   jsii.Strings("logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents", "logs:DescribeLogStreams"),
				Resources: jsii.Strings(*awscdk.Fn_Sub(jsii.String("arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:/aws/sagemaker/Endpoints/speech-*"), nil)),
			}),
			awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
				Sid:        jsii.String("PutEndpointMetrics"),
				Actions:    jsii.Strings("cloudwatch:PutMetricData"),
				Resources:  jsii.Strings("*"),
				Conditions: &map[string]interface{}{"StringEquals": map[string]interface{}{"cloudwatch:namespace": []string{"/aws/sagemaker/Endpoints", "SpeechInfra/Container"}}},
			}),
		},
	})
	cdknag.NagSuppressions_AddResourceSuppressions(policy, &[]*cdknag.NagPackSuppression{{
		Id:     jsii.String("AwsSolutions-IAM5"),
		Reason: jsii.String("Wildcards are scoped: objects under the models/ prefix of the weights bucket only; the CDK container-asset repositories of this account and region; the speech-* endpoint log groups. ecr:GetAuthorizationToken and cloudwatch:PutMetricData support no resource-level permissions (AWS requires Resource *); PutMetricData is limited by a cloudwatch:namespace condition."),
		AppliesTo: &[]interface{}{
			map[string]interface{}{"regex": `/^Resource::<WeightsBucket[0-9A-F]{8}\.Arn>\/models\/\*$/`},
			"Resource::arn:<AWS::Partition>:ecr:<AWS::Region>:<AWS::AccountId>:repository/cdk-*-container-assets-<AWS::AccountId>-<AWS::Region>",
			"Resource::arn:<AWS::Partition>:logs:<AWS::Region>:<AWS::AccountId>:log-group:/aws/sagemaker/Endpoints/speech-*",
			"Resource::*",
		},
	}}, jsii.Bool(true))

	awscdk.NewCfnOutput(stack, jsii.String("WeightsBucketName"), &awscdk.CfnOutputProps{Value: bucket.BucketName(), Description: jsii.String("Bucket holding models/<model>/<revision>/ weights")})
	awscdk.NewCfnOutput(stack, jsii.String("ExecutionRoleArn"), &awscdk.CfnOutputProps{Value: role.RoleArn()})

	return &FoundationStack{Stack: stack, WeightsBucket: bucket, ExecutionRole: role}
}
