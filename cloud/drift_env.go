package cloud

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
)

// Container environment variables drift and validate compare with the plan (docs/design.md, "Queue gate").
const (
	EnvQueueMaxDepth      = "QUEUE_MAX_DEPTH"
	EnvFirstAudioTargetMs = "FIRST_AUDIO_TARGET_MS"
	EnvScheduler          = "SCHEDULER"
)

// DefaultScheduler is the container's SCHEDULER when the variable is unset (container/internal/server.Deadline;
// the container is its own module, so the name is repeated here).
const DefaultScheduler = "deadline"

// Finding codes of the container environment.
const (
	// FindingShieldMissing: scaling (a scalable target, policies) is deployed while the container runs
	// without a queue shield (QUEUE_MAX_DEPTH 0 or unset): a surge the fleet has not yet scaled out for
	// queues without bound instead of being shed.
	FindingShieldMissing = "shield_missing"
	// FindingEnvironmentMismatch: a container variable differs from what the plan (or the measurement
	// configuration) deploys.
	FindingEnvironmentMismatch = "environment_mismatch"
)

// ContainerExpectation is what the container environment of a variant should hold.
type ContainerExpectation struct {
	// QueueMaxDepth is QUEUE_MAX_DEPTH: the plan's derived queue_max_depth when a plan is deployed, 0
	// (unbounded) for the measurement configuration.
	QueueMaxDepth int
	// FirstAudioTargetMs is FIRST_AUDIO_TARGET_MS (a third of the SLO's TTFAB bound).
	FirstAudioTargetMs int
	// Scheduler is SCHEDULER; "" means DefaultScheduler (which an unset variable also means).
	Scheduler string
}

// ContainerEnvAPI is the part of the SageMaker client that reads what a variant runs.
type ContainerEnvAPI interface {
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
	DescribeEndpointConfig(ctx context.Context, in *sagemaker.DescribeEndpointConfigInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointConfigOutput, error)
	DescribeModel(ctx context.Context, in *sagemaker.DescribeModelInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeModelOutput, error)
}

// ReadContainerEnvironment returns the container environment a variant runs: the endpoint's current
// endpoint config, the variant's model in it, and that model's primary container (or first container)
// environment. The emulator starts its instances with exactly this environment; on AWS it is what the
// instances run. It also returns the model's name.
func ReadContainerEnvironment(ctx context.Context, api ContainerEnvAPI, endpoint, variant string) (map[string]string, string, error) {
	d, err := api.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(endpoint)})
	if err != nil {
		return nil, "", fmt.Errorf("describe endpoint %s: %w", endpoint, err)
	}
	return environmentOf(ctx, api, endpoint, aws.ToString(d.EndpointConfigName), variant)
}

// environmentOf reads the environment of variant's model in the endpoint config.
func environmentOf(ctx context.Context, api ContainerEnvAPI, endpoint, config, variant string) (map[string]string, string, error) {
	c, err := api.DescribeEndpointConfig(ctx, &sagemaker.DescribeEndpointConfigInput{EndpointConfigName: aws.String(config)})
	if err != nil {
		return nil, "", fmt.Errorf("describe endpoint config %s of %s: %w", config, endpoint, err)
	}
	model := ""
	for _, v := range c.ProductionVariants {
		if aws.ToString(v.VariantName) == variant {
			model = aws.ToString(v.ModelName)
		}
	}
	if model == "" {
		return nil, "", fmt.Errorf("endpoint config %s of %s has no variant %s", config, endpoint, variant)
	}
	m, err := api.DescribeModel(ctx, &sagemaker.DescribeModelInput{ModelName: aws.String(model)})
	if err != nil {
		return nil, model, fmt.Errorf("describe model %s of %s: %w", model, endpoint, err)
	}
	var env map[string]string
	switch {
	case m.PrimaryContainer != nil:
		env = m.PrimaryContainer.Environment
	case len(m.Containers) > 0:
		env = m.Containers[0].Environment
	}
	if env == nil {
		env = map[string]string{}
	}
	return env, model, nil
}

// envValue renders a variable as a check shows it: its value, or "unset".
func envValue(env map[string]string, k string) (string, bool) {
	v, ok := env[k]
	if !ok {
		return "unset", false
	}
	return strconv.Quote(v), true
}

// shielded reports whether QUEUE_MAX_DEPTH bounds the queue (a positive integer), and the depth.
func shielded(env map[string]string) (int, bool) {
	v, ok := env[EnvQueueMaxDepth]
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	return n, err == nil && n > 0
}

// ContainerChecks compares a container environment with what should run. scaling says whether a scalable
// target is registered for the variant: scaling without a queue shield is a failed check of its own.
// Subject names the model the environment belongs to.
func ContainerChecks(subject string, env map[string]string, want ContainerExpectation, scaling bool) []Check {
	var checks []Check
	add := func(name, planned, deployed string, pass bool) {
		checks = append(checks, Check{Name: name, Subject: subject, Planned: planned, Deployed: deployed, Pass: pass})
	}
	intVar := func(k string, wantN int, def int) {
		got, set := envValue(env, k)
		n, err := def, error(nil)
		if set {
			n, err = strconv.Atoi(strings.TrimSpace(env[k]))
		}
		add("container "+k, strconv.Quote(strconv.Itoa(wantN)), got, err == nil && n == wantN)
	}
	if scaling {
		depth, ok := shielded(env)
		shown, _ := envValue(env, EnvQueueMaxDepth)
		got := "none (" + EnvQueueMaxDepth + " " + shown + ")"
		if ok {
			got = strconv.Itoa(depth)
		}
		add("queue shield under scaling", "a positive "+EnvQueueMaxDepth, got, ok)
	}
	intVar(EnvQueueMaxDepth, want.QueueMaxDepth, 0)
	intVar(EnvFirstAudioTargetMs, want.FirstAudioTargetMs, -1)
	ws := want.Scheduler
	if ws == "" {
		ws = DefaultScheduler
	}
	gs, set := envValue(env, EnvScheduler)
	add("container "+EnvScheduler, strconv.Quote(ws), gs, env[EnvScheduler] == ws || (!set && ws == DefaultScheduler))
	return checks
}

// ValidateContainer reads the variant's container environment (ReadContainerEnvironment) and checks it
// against want (ContainerChecks); scaling says whether the variant has a scalable target. A missing
// endpoint is one failed check.
func ValidateContainer(ctx context.Context, api ContainerEnvAPI, endpoint, variant string, want ContainerExpectation, scaling bool) ([]Check, error) {
	env, model, err := ReadContainerEnvironment(ctx, api, endpoint, variant)
	if IsNotFound(err) {
		return []Check{{Name: "endpoint", Subject: endpoint, Planned: "present", Deployed: absent}}, nil
	}
	if err != nil {
		return nil, err
	}
	return ContainerChecks("model "+model, env, want, scaling), nil
}
