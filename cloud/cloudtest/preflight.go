package cloudtest

import (
	"context"
	"sync"

	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/servicequotas"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/speech-infra/speech-infra/cloud"
)

var (
	_ cloud.EndpointUsageAPI = (*SageMaker)(nil)
	_ cloud.IdentityAPI      = (*STS)(nil)
	_ cloud.ParameterAPI     = (*SSM)(nil)
	_ cloud.QuotaAPI         = (*Quotas)(nil)
	_ cloud.ProgramRunner    = (*Programs)(nil)
)

// ListEndpoints calls ListEndpointsFn.
func (d *SageMaker) ListEndpoints(ctx context.Context, in *sagemaker.ListEndpointsInput, optFns ...func(*sagemaker.Options)) (*sagemaker.ListEndpointsOutput, error) {
	if d.ListEndpointsFn == nil {
		return nil, unexpected("SageMaker.ListEndpoints")
	}
	return d.ListEndpointsFn(ctx, in, optFns...)
}

// STS is a double of the STS client: cloud.IdentityAPI.
type STS struct {
	// GetCallerIdentityFn answers GetCallerIdentity.
	GetCallerIdentityFn func(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error)
}

// GetCallerIdentity calls GetCallerIdentityFn.
func (d *STS) GetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.Options)) (*sts.GetCallerIdentityOutput, error) {
	if d.GetCallerIdentityFn == nil {
		return nil, unexpected("STS.GetCallerIdentity")
	}
	return d.GetCallerIdentityFn(ctx, in, optFns...)
}

// SSM is a double of the SSM client: cloud.ParameterAPI.
type SSM struct {
	// GetParameterFn answers GetParameter.
	GetParameterFn func(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
}

// GetParameter calls GetParameterFn.
func (d *SSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	if d.GetParameterFn == nil {
		return nil, unexpected("SSM.GetParameter")
	}
	return d.GetParameterFn(ctx, in, optFns...)
}

// Quotas is a double of the Service Quotas client: cloud.QuotaAPI.
type Quotas struct {
	// ListServiceQuotasFn answers ListServiceQuotas.
	ListServiceQuotasFn func(ctx context.Context, in *servicequotas.ListServiceQuotasInput, optFns ...func(*servicequotas.Options)) (*servicequotas.ListServiceQuotasOutput, error)
}

// ListServiceQuotas calls ListServiceQuotasFn.
func (d *Quotas) ListServiceQuotas(ctx context.Context, in *servicequotas.ListServiceQuotasInput, optFns ...func(*servicequotas.Options)) (*servicequotas.ListServiceQuotasOutput, error) {
	if d.ListServiceQuotasFn == nil {
		return nil, unexpected("Quotas.ListServiceQuotas")
	}
	return d.ListServiceQuotasFn(ctx, in, optFns...)
}

// Programs is a double of cloud.ProgramRunner that records every program it is asked to run.
type Programs struct {
	// OutputFn answers Output.
	OutputFn func(ctx context.Context, dir, name string, args ...string) ([]byte, error)

	mu    sync.Mutex
	calls [][]string
}

// Output records the call (name, then args) and calls OutputFn.
func (d *Programs) Output(ctx context.Context, dir, name string, args ...string) ([]byte, error) {
	d.mu.Lock()
	d.calls = append(d.calls, append([]string{name}, args...))
	d.mu.Unlock()
	if d.OutputFn == nil {
		return nil, unexpected("Programs.Output " + name)
	}
	return d.OutputFn(ctx, dir, name, args...)
}

// Calls returns the programs run so far, each as its name followed by its arguments.
func (d *Programs) Calls() [][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([][]string(nil), d.calls...)
}
