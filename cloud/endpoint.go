package cloud

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"
)

// EndpointAPI is the part of the SageMaker client that creates and removes an endpoint.
type EndpointAPI interface {
	CreateModel(ctx context.Context, in *sagemaker.CreateModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error)
	CreateEndpointConfig(ctx context.Context, in *sagemaker.CreateEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error)
	CreateEndpoint(ctx context.Context, in *sagemaker.CreateEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error)
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
	DeleteEndpoint(ctx context.Context, in *sagemaker.DeleteEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointOutput, error)
	DeleteEndpointConfig(ctx context.Context, in *sagemaker.DeleteEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error)
	DeleteModel(ctx context.Context, in *sagemaker.DeleteModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteModelOutput, error)
}

// EndpointSpec is one endpoint with its single variant: model, endpoint config and endpoint share Name.
type EndpointSpec struct {
	// Name names the endpoint, its endpoint config and its model.
	Name string
	// Variant is the production variant name.
	Variant string
	// Image is the container image the model records.
	Image string
	// Environment is the container environment.
	Environment map[string]string
	// InstanceType and InstanceCount size the variant.
	InstanceType  string
	InstanceCount int32
	// StartupHealthCheckTimeoutS bounds the time until /ping answers on a new instance.
	StartupHealthCheckTimeoutS int32
	// RoleARN is the execution role the model records.
	RoleARN string
}

// IsNotFound reports whether err says a SageMaker resource does not exist (SageMaker answers
// ValidationException "Could not find ...").
func IsNotFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" && strings.Contains(ae.ErrorMessage(), "Could not find")
}

// DeployEndpoint creates the model, endpoint config and endpoint of spec. An endpoint that already exists is
// left as it is; created says whether this call created it.
func DeployEndpoint(ctx context.Context, api EndpointAPI, spec EndpointSpec) (created bool, err error) {
	_, err = api.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(spec.Name)})
	if err == nil {
		return false, nil
	}
	if !IsNotFound(err) {
		return false, fmt.Errorf("describe endpoint %s: %w", spec.Name, err)
	}
	if _, err := api.CreateModel(ctx, &sagemaker.CreateModelInput{
		ModelName:        aws.String(spec.Name),
		PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String(spec.Image), Environment: spec.Environment},
		ExecutionRoleArn: aws.String(spec.RoleARN),
	}); err != nil && !alreadyExists(err) {
		return false, fmt.Errorf("create model %s: %w", spec.Name, err)
	}
	if _, err := api.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{
		EndpointConfigName: aws.String(spec.Name),
		ProductionVariants: []smtypes.ProductionVariant{{
			VariantName: aws.String(spec.Variant), ModelName: aws.String(spec.Name),
			InitialInstanceCount: aws.Int32(spec.InstanceCount), InstanceType: smtypes.ProductionVariantInstanceType(spec.InstanceType),
			ContainerStartupHealthCheckTimeoutInSeconds: aws.Int32(spec.StartupHealthCheckTimeoutS),
		}},
	}); err != nil && !alreadyExists(err) {
		return false, fmt.Errorf("create endpoint config %s: %w", spec.Name, err)
	}
	if _, err := api.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String(spec.Name), EndpointConfigName: aws.String(spec.Name)}); err != nil {
		return false, fmt.Errorf("create endpoint %s: %w", spec.Name, err)
	}
	return true, nil
}

func alreadyExists(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), "already existing")
}

// WaitInService waits until the endpoint is InService; it fails at once when the endpoint fails.
func WaitInService(ctx context.Context, api EndpointAPI, name string, timeout time.Duration) (*sagemaker.DescribeEndpointOutput, error) {
	deadline := time.Now().Add(timeout)
	for {
		d, err := api.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		if err != nil {
			return nil, fmt.Errorf("describe endpoint %s: %w", name, err)
		}
		switch d.EndpointStatus {
		case smtypes.EndpointStatusInService:
			return d, nil
		case smtypes.EndpointStatusFailed:
			return d, fmt.Errorf("endpoint %s failed: %s", name, aws.ToString(d.FailureReason))
		}
		if time.Now().After(deadline) {
			return d, fmt.Errorf("endpoint %s still %s after %s", name, d.EndpointStatus, timeout)
		}
		select {
		case <-ctx.Done():
			return d, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// DestroyEndpoint deletes the endpoint, its endpoint config and its model (all named name); missing ones are
// skipped. It reports whether anything was deleted.
func DestroyEndpoint(ctx context.Context, api EndpointAPI, name string) (bool, error) {
	deleted := false
	if _, err := api.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)}); err == nil {
		deleted = true
	} else if !IsNotFound(err) {
		return deleted, fmt.Errorf("delete endpoint %s: %w", name, err)
	}
	if _, err := api.DeleteEndpointConfig(ctx, &sagemaker.DeleteEndpointConfigInput{EndpointConfigName: aws.String(name)}); err == nil {
		deleted = true
	} else if !IsNotFound(err) {
		return deleted, fmt.Errorf("delete endpoint config %s: %w", name, err)
	}
	if _, err := api.DeleteModel(ctx, &sagemaker.DeleteModelInput{ModelName: aws.String(name)}); err == nil {
		deleted = true
	} else if !IsNotFound(err) {
		return deleted, fmt.Errorf("delete model %s: %w", name, err)
	}
	return deleted, nil
}
