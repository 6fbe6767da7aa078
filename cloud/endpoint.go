package cloud

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"
)

// EndpointAPI is the part of the SageMaker client that creates, updates and removes an endpoint.
type EndpointAPI interface {
	CreateModel(ctx context.Context, in *sagemaker.CreateModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateModelOutput, error)
	DescribeModel(ctx context.Context, in *sagemaker.DescribeModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error)
	CreateEndpointConfig(ctx context.Context, in *sagemaker.CreateEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointConfigOutput, error)
	DescribeEndpointConfig(ctx context.Context, in *sagemaker.DescribeEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error)
	CreateEndpoint(ctx context.Context, in *sagemaker.CreateEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.CreateEndpointOutput, error)
	UpdateEndpoint(ctx context.Context, in *sagemaker.UpdateEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.UpdateEndpointOutput, error)
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
	DeleteEndpoint(ctx context.Context, in *sagemaker.DeleteEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointOutput, error)
	DeleteEndpointConfig(ctx context.Context, in *sagemaker.DeleteEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteEndpointConfigOutput, error)
	DeleteModel(ctx context.Context, in *sagemaker.DeleteModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DeleteModelOutput, error)
}

// EndpointSpec is one endpoint with its single variant. The model and endpoint config are named
// VersionName: the endpoint name with a short hash of their contents, so that a changed spec gets new ones
// beside the old and an endpoint can move to them with UpdateEndpoint.
type EndpointSpec struct {
	// Name names the endpoint.
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

// VersionName is the name of the spec's model and endpoint config: "<endpoint>-<8 hex digits>", the digits
// from a SHA-256 of everything the model and endpoint config hold.
func (s EndpointSpec) VersionName() string {
	keys := make([]string, 0, len(s.Environment))
	for k := range s.Environment {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	h := sha256.New()
	fmt.Fprintf(h, "variant=%q\nimage=%q\ninstance=%q\ncount=%d\nstartup=%d\nrole=%q\n", s.Variant, s.Image, s.InstanceType, s.InstanceCount, s.StartupHealthCheckTimeoutS, s.RoleARN)
	for _, k := range keys {
		fmt.Fprintf(h, "env %q=%q\n", k, s.Environment[k])
	}
	return s.Name + "-" + hex.EncodeToString(h.Sum(nil))[:8]
}

// DeployAction says what DeployEndpoint did.
type DeployAction string

// What DeployEndpoint did with the endpoint.
const (
	// Created: the endpoint did not exist and was created.
	Created DeployAction = "created"
	// Updated: the endpoint existed with another model or config and moved to the spec's with UpdateEndpoint.
	Updated DeployAction = "updated"
	// Unchanged: the endpoint already runs what the spec asks for; nothing was changed.
	Unchanged DeployAction = "unchanged"
)

// DeployResult is what DeployEndpoint did and what the endpoint runs afterwards.
type DeployResult struct {
	// Action is what was done.
	Action DeployAction
	// ModelName and ConfigName are the model and endpoint config the endpoint runs now.
	ModelName, ConfigName string
	// OldModelName and OldConfigName are what an update replaced (and deleted); empty otherwise.
	OldModelName, OldConfigName string
	// Changes name each difference an update applied, e.g. "environment QUEUE_MAX_DEPTH: 0 → 16".
	Changes []string
	// Previous is the spec the endpoint ran before (nil when it was created).
	Previous *EndpointSpec
	// Endpoint is the endpoint's description once it is InService.
	Endpoint *sagemaker.DescribeEndpointOutput
}

// IsNotFound reports whether err says a SageMaker resource does not exist (SageMaker answers
// ValidationException "Could not find ...").
func IsNotFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" && strings.Contains(ae.ErrorMessage(), "Could not find")
}

// DeployEndpoint makes the endpoint run spec and waits (each phase as wait says) until it is InService.
//   - No endpoint: create the model and endpoint config (VersionName) and the endpoint.
//   - An endpoint whose model and endpoint config differ from spec: create the new model and endpoint config,
//     UpdateEndpoint (a blue/green swap: the new instances pass /ping before the old ones drain and stop),
//     then delete the old model and endpoint config. An update that fails is rolled back by SageMaker (the
//     endpoint is InService again on its previous endpoint config, with a FailureReason); the new model and
//     config are then deleted and the rollback is returned as an error that wraps ErrRolledBack, joined with
//     any error of that cleanup.
//   - An endpoint that already runs spec: nothing changes.
//
// On an error the result says what is known so far (Action, Previous); the new model and endpoint config of
// an UpdateEndpoint call that failed outright are left for the next deploy, which reuses them.
func DeployEndpoint(ctx context.Context, api EndpointAPI, spec EndpointSpec, wait WaitOptions) (DeployResult, error) {
	_, err := api.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(spec.Name)})
	if err != nil && !IsNotFound(err) {
		return DeployResult{}, fmt.Errorf("describe endpoint %s: %w", spec.Name, err)
	}
	version := spec.VersionName()
	if err != nil {
		if err := createVersion(ctx, api, spec, version); err != nil {
			return DeployResult{}, err
		}
		if _, err := api.CreateEndpoint(ctx, &sagemaker.CreateEndpointInput{EndpointName: aws.String(spec.Name), EndpointConfigName: aws.String(version)}); err != nil {
			return DeployResult{}, fmt.Errorf("create endpoint %s: %w", spec.Name, err)
		}
		d, err := WaitInService(ctx, api, spec.Name, wait)
		return DeployResult{Action: Created, ModelName: version, ConfigName: version, Endpoint: d}, err
	}

	// An endpoint still being created or updated is compared once it settles.
	d, err := WaitInService(ctx, api, spec.Name, wait)
	if err != nil {
		return DeployResult{}, fmt.Errorf("%w: destroy it (speech-infra destroy) and deploy again", err)
	}
	cur, modelName, err := DescribeDeployed(ctx, api, d)
	if err != nil {
		return DeployResult{}, err
	}
	changes := diffSpecs(cur, spec)
	res := DeployResult{Action: Unchanged, ModelName: modelName, ConfigName: aws.ToString(d.EndpointConfigName), Previous: &cur, Endpoint: d}
	if len(changes) == 0 || version == res.ConfigName {
		return res, nil
	}
	if err := createVersion(ctx, api, spec, version); err != nil {
		return res, err
	}
	if _, err := api.UpdateEndpoint(ctx, &sagemaker.UpdateEndpointInput{EndpointName: aws.String(spec.Name), EndpointConfigName: aws.String(version)}); err != nil {
		return res, fmt.Errorf("update endpoint %s to %s: %w", spec.Name, version, err)
	}
	d, err = WaitInService(ctx, api, spec.Name, wait)
	if err != nil {
		return res, err
	}
	if aws.ToString(d.EndpointConfigName) != version {
		res.Endpoint = d
		rolledBack := fmt.Errorf("%w: endpoint %s runs %s again instead of %s: %s: fix the cause and deploy again",
			ErrRolledBack, spec.Name, aws.ToString(d.EndpointConfigName), version, aws.ToString(d.FailureReason))
		if err := deleteVersion(ctx, api, version, version); err != nil {
			return res, errors.Join(rolledBack, fmt.Errorf("clean up after the rollback: %w: delete them by hand or deploy again", err))
		}
		return res, rolledBack
	}
	res = DeployResult{Action: Updated, ModelName: version, ConfigName: version, OldModelName: modelName, OldConfigName: res.ConfigName,
		Changes: changes, Previous: &cur, Endpoint: d}
	if err := deleteVersion(ctx, api, res.OldConfigName, res.OldModelName); err != nil {
		return res, err
	}
	return res, nil
}

// ErrRolledBack says an UpdateEndpoint failed and SageMaker moved the endpoint back to its previous endpoint
// config.
var ErrRolledBack = errors.New("the update was rolled back")

// createVersion creates the model and endpoint config named version; existing ones (same name, hence the
// same contents) are kept.
func createVersion(ctx context.Context, api EndpointAPI, spec EndpointSpec, version string) error {
	if _, err := api.CreateModel(ctx, &sagemaker.CreateModelInput{
		ModelName:        aws.String(version),
		PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String(spec.Image), Environment: spec.Environment},
		ExecutionRoleArn: aws.String(spec.RoleARN),
	}); err != nil && !alreadyExists(err) {
		return fmt.Errorf("create model %s: %w", version, err)
	}
	if _, err := api.CreateEndpointConfig(ctx, &sagemaker.CreateEndpointConfigInput{
		EndpointConfigName: aws.String(version),
		ProductionVariants: []smtypes.ProductionVariant{{
			VariantName: aws.String(spec.Variant), ModelName: aws.String(version),
			InitialInstanceCount: aws.Int32(spec.InstanceCount), InstanceType: smtypes.ProductionVariantInstanceType(spec.InstanceType),
			ContainerStartupHealthCheckTimeoutInSeconds: aws.Int32(spec.StartupHealthCheckTimeoutS),
		}},
	}); err != nil && !alreadyExists(err) {
		return fmt.Errorf("create endpoint config %s: %w", version, err)
	}
	return nil
}

// deleteVersion deletes an endpoint config and a model; missing ones are skipped.
func deleteVersion(ctx context.Context, api EndpointAPI, config, model string) error {
	if config != "" {
		if _, err := api.DeleteEndpointConfig(ctx, &sagemaker.DeleteEndpointConfigInput{EndpointConfigName: aws.String(config)}); err != nil && !IsNotFound(err) {
			return fmt.Errorf("delete endpoint config %s: %w", config, err)
		}
	}
	if model != "" {
		if _, err := api.DeleteModel(ctx, &sagemaker.DeleteModelInput{ModelName: aws.String(model)}); err != nil && !IsNotFound(err) {
			return fmt.Errorf("delete model %s: %w", model, err)
		}
	}
	return nil
}

// DescribeDeployed reads back the spec an endpoint runs (its endpoint config's first variant and that
// variant's model) and the model's name.
func DescribeDeployed(ctx context.Context, api EndpointAPI, d *sagemaker.DescribeEndpointOutput) (EndpointSpec, string, error) {
	name, config := aws.ToString(d.EndpointName), aws.ToString(d.EndpointConfigName)
	c, err := api.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String(config)})
	if err != nil {
		return EndpointSpec{}, "", fmt.Errorf("describe endpoint config %s of %s: %w", config, name, err)
	}
	if len(c.ProductionVariants) == 0 {
		return EndpointSpec{}, "", fmt.Errorf("endpoint config %s of %s has no production variant", config, name)
	}
	v := c.ProductionVariants[0]
	model := aws.ToString(v.ModelName)
	m, err := api.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(model)})
	if err != nil {
		return EndpointSpec{}, "", fmt.Errorf("describe model %s of %s: %w", model, name, err)
	}
	spec := EndpointSpec{
		Name: name, Variant: aws.ToString(v.VariantName), InstanceType: string(v.InstanceType),
		InstanceCount: aws.ToInt32(v.InitialInstanceCount), StartupHealthCheckTimeoutS: aws.ToInt32(v.ContainerStartupHealthCheckTimeoutInSeconds),
		RoleARN: aws.ToString(m.ExecutionRoleArn),
	}
	if pc := m.PrimaryContainer; pc != nil {
		spec.Image, spec.Environment = aws.ToString(pc.Image), pc.Environment
	} else if len(m.Containers) > 0 {
		spec.Image, spec.Environment = aws.ToString(m.Containers[0].Image), m.Containers[0].Environment
	}
	return spec, model, nil
}

// diffSpecs names every difference between what runs and what is wanted, environment variables by name.
func diffSpecs(cur, want EndpointSpec) []string {
	var out []string
	field := func(what string, a, b any) {
		if a != b {
			out = append(out, fmt.Sprintf("%s: %v → %v", what, a, b))
		}
	}
	field("variant", cur.Variant, want.Variant)
	field("image", cur.Image, want.Image)
	field("instance type", cur.InstanceType, want.InstanceType)
	field("initial instance count", cur.InstanceCount, want.InstanceCount)
	field("startup health check timeout (s)", cur.StartupHealthCheckTimeoutS, want.StartupHealthCheckTimeoutS)
	field("execution role", cur.RoleARN, want.RoleARN)
	keys := map[string]bool{}
	for k := range cur.Environment {
		keys[k] = true
	}
	for k := range want.Environment {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	show := func(env map[string]string, k string) string {
		if v, ok := env[k]; ok {
			return v
		}
		return "(unset)"
	}
	for _, k := range sorted {
		field("environment "+k, show(cur.Environment, k), show(want.Environment, k))
	}
	return out
}

func alreadyExists(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && strings.Contains(ae.ErrorMessage(), "already existing")
}

// Defaults of WaitOptions.
const (
	// DefaultWaitTimeout bounds one wait when WaitOptions.Timeout is zero.
	DefaultWaitTimeout = 30 * time.Minute
	// DefaultWaitMinDelay is the first delay between two DescribeEndpoint calls: the emulator settles in
	// seconds, so polling starts fast.
	DefaultWaitMinDelay = 500 * time.Millisecond
	// DefaultWaitMaxDelay is the longest delay between two DescribeEndpoint calls.
	DefaultWaitMaxDelay = 2 * time.Second
)

// WaitOptions bound waiting for an endpoint to be InService (the SDK's EndpointInServiceWaiter: delays grow
// exponentially with jitter from MinDelay to MaxDelay).
type WaitOptions struct {
	// Timeout bounds one wait; zero means DefaultWaitTimeout.
	Timeout time.Duration
	// MinDelay and MaxDelay bound the delay between two DescribeEndpoint calls; zero means
	// DefaultWaitMinDelay and DefaultWaitMaxDelay.
	MinDelay, MaxDelay time.Duration
}

// Validate reports every negative duration and a MaxDelay below MinDelay.
func (w WaitOptions) Validate() error {
	var errs []error
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"timeout", w.Timeout}, {"minimum delay", w.MinDelay}, {"maximum delay", w.MaxDelay}} {
		if d.v < 0 {
			errs = append(errs, fmt.Errorf("wait %s %s: negative: give a positive duration, or zero for the default", d.name, d.v))
		}
	}
	if w.MinDelay > 0 && w.MaxDelay > 0 && w.MaxDelay < w.MinDelay {
		errs = append(errs, fmt.Errorf("wait maximum delay %s: below the minimum delay %s: raise it to at least the minimum", w.MaxDelay, w.MinDelay))
	}
	return errors.Join(errs...)
}

// resolved fills in the defaults.
func (w WaitOptions) resolved() WaitOptions {
	if w.Timeout <= 0 {
		w.Timeout = DefaultWaitTimeout
	}
	if w.MinDelay <= 0 {
		w.MinDelay = DefaultWaitMinDelay
	}
	if w.MaxDelay <= 0 {
		w.MaxDelay = max(DefaultWaitMaxDelay, w.MinDelay)
	}
	w.MaxDelay = max(w.MaxDelay, w.MinDelay)
	return w
}

// WaitInService waits with the SDK's EndpointInServiceWaiter until the endpoint is InService. It fails at
// once when the endpoint is Failed (the error names its FailureReason) or DescribeEndpoint fails (a throttled
// DescribeEndpoint is asked again after the waiter's back-off), and after wait.Timeout with the last status
// seen. The last description is returned with an error when there is one.
func WaitInService(ctx context.Context, api sagemaker.DescribeEndpointAPIClient, name string, wait WaitOptions) (*sagemaker.DescribeEndpointOutput, error) {
	wait = wait.resolved()
	var (
		last    *sagemaker.DescribeEndpointOutput
		decided bool // the endpoint or DescribeEndpoint ended the wait, rather than the clock
	)
	retryable := func(wctx context.Context, _ *sagemaker.DescribeEndpointInput, out *sagemaker.DescribeEndpointOutput, err error) (bool, error) {
		if err != nil {
			if wctx.Err() != nil && ctx.Err() == nil {
				// The waiter's own deadline cut the call short: a timeout, reported below.
				return false, err
			}
			if IsThrottled(err) && ctx.Err() == nil {
				// Throttled (after the client's own retries): the waiter backs off, up to MaxDelay, and asks
				// again; the endpoint's status is what decides (throttle.go).
				return true, nil
			}
			decided = true
			return false, fmt.Errorf("describe endpoint %s: %w", name, err)
		}
		last = out
		switch out.EndpointStatus {
		case smtypes.EndpointStatusInService:
			return false, nil
		case smtypes.EndpointStatusFailed:
			decided = true
			return false, fmt.Errorf("endpoint %s failed: %s", name, aws.ToString(out.FailureReason))
		}
		return true, nil
	}
	waiter := sagemaker.NewEndpointInServiceWaiter(api, func(o *sagemaker.EndpointInServiceWaiterOptions) {
		o.MinDelay, o.MaxDelay, o.Retryable = wait.MinDelay, wait.MaxDelay, retryable
	})
	d, err := waiter.WaitForOutput(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)}, wait.Timeout)
	switch {
	case err == nil:
		return d, nil
	case decided:
		return last, err
	case ctx.Err() != nil:
		return last, fmt.Errorf("wait for endpoint %s: %w", name, ctx.Err())
	case last == nil:
		return nil, fmt.Errorf("endpoint %s: no answer from DescribeEndpoint within %s (%v)", name, wait.Timeout, err)
	}
	return last, fmt.Errorf("endpoint %s still %s after %s", name, last.EndpointStatus, wait.Timeout)
}

// DestroyEndpoint deletes the endpoint, the endpoint config it runs and that config's model, and the model
// and endpoint config named like the endpoint (as older deploys named them); missing ones are skipped. It
// reports whether anything was deleted.
func DestroyEndpoint(ctx context.Context, api EndpointAPI, name string) (bool, error) {
	configs, models := []string{name}, []string{name}
	if d, err := api.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)}); err == nil {
		config := aws.ToString(d.EndpointConfigName)
		configs = append(configs, config)
		if c, err := api.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String(config)}); err == nil {
			for _, v := range c.ProductionVariants {
				models = append(models, aws.ToString(v.ModelName))
			}
		} else if !IsNotFound(err) {
			return false, fmt.Errorf("describe endpoint config %s: %w", config, err)
		}
	} else if !IsNotFound(err) {
		return false, fmt.Errorf("describe endpoint %s: %w", name, err)
	}
	deleted := false
	if _, err := api.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)}); err == nil {
		deleted = true
	} else if !IsNotFound(err) {
		return deleted, fmt.Errorf("delete endpoint %s: %w", name, err)
	}
	for _, c := range slices.Compact(configs) {
		if _, err := api.DeleteEndpointConfig(ctx, &sagemaker.DeleteEndpointConfigInput{EndpointConfigName: aws.String(c)}); err == nil {
			deleted = true
		} else if !IsNotFound(err) {
			return deleted, fmt.Errorf("delete endpoint config %s: %w", c, err)
		}
	}
	for _, m := range slices.Compact(models) {
		if _, err := api.DeleteModel(ctx, &sagemaker.DeleteModelInput{ModelName: aws.String(m)}); err == nil {
			deleted = true
		} else if !IsNotFound(err) {
			return deleted, fmt.Errorf("delete model %s: %w", m, err)
		}
	}
	return deleted, nil
}
