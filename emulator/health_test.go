package emulator_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"

	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/emulator/emulatortest"
)

// startFleet runs an emulator with the state directory, container, quota and health-check interval of opts.
func startFleet(t *testing.T, opts emulator.Options) *emulatortest.Emulator {
	t.Helper()
	return emulatortest.Start(t, func(o *emulator.Options) {
		o.StateDir, o.ContainerBin, o.InstanceQuota, o.HealthCheckInterval = opts.StateDir, opts.ContainerBin, opts.InstanceQuota, opts.HealthCheckInterval
	})
}

// invokeText invokes the endpoint with InvokeEndpoint and returns the audio.
func invokeText(ctx context.Context, c emulatortest.Clients, name, text string) ([]byte, error) {
	out, err := c.Runtime.InvokeEndpoint(ctx, &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String(name), ContentType: aws.String("application/json"),
		Body: []byte(fmt.Sprintf(`{"text":%q,"format":"wav"}`, text)),
	})
	if err != nil {
		return nil, err
	}
	return out.Body, nil
}

// logStreams lists the endpoint's log stream names through CloudWatch Logs.
func logStreams(ctx context.Context, t *testing.T, c emulatortest.Clients, name string) []string {
	t.Helper()
	out, err := c.Logs.DescribeLogStreams(ctx, &cloudwatchlogs.DescribeLogStreamsInput{LogGroupName: aws.String(emulator.LogGroup(name))})
	if err != nil {
		t.Fatalf("DescribeLogStreams: %v", err)
	}
	var names []string
	for _, s := range out.LogStreams {
		names = append(names, aws.ToString(s.LogStreamName))
	}
	return names
}

// A hung instance (SIGSTOP: the process exists, /ping never answers) is noticed by the periodic health check,
// killed and replaced, and invokes succeed again. SageMaker's contract for /ping is in the Developer Guide
// section "How Your Container Should Respond to Health Check (Ping) Requests" (no sentence of it is quoted
// here: the periodic check, its timeout and threshold are the emulator's). The facts checked
// go through the public API: DescribeEndpoint's CurrentInstanceCount and the new instance's log stream.
func TestHungInstanceReplaced(t *testing.T) {
	r := startFleet(t, emulator.Options{StateDir: t.TempDir(), ContainerBin: emulatortest.ContainerBinary(t), HealthCheckInterval: 300 * time.Millisecond})
	c := r.Clients
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-hung"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1), emulatortest.InService())
	if _, err := invokeText(ctx, c, name, "before"); err != nil {
		t.Fatalf("invoke before the hang: %v", err)
	}
	pid, id := r.InstancePID(t, name)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP instance %s (pid %d): %v", id, pid, err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })

	// Replaced within a bounded time: three failed checks at 300 ms, the kill, and a new instance's startup.
	eventually(t, hangBound, "the hung instance to be replaced by a serving one", func() bool {
		ids := r.InstanceIDs(name)
		d := describe(ctx, t, c, name)
		return len(ids) == 1 && ids[0] != id && aws.ToInt32(d.ProductionVariants[0].CurrentInstanceCount) == 1 &&
			d.EndpointStatus == smtypes.EndpointStatusInService
	})
	// The stopped process was killed (SIGKILL reaches a stopped process) and reaped.
	eventually(t, hangBound, "the hung process to be gone", func() bool {
		return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
	})
	newID := r.InstanceIDs(name)[0]
	if streams := logStreams(ctx, t, c, name); !slices.Contains(streams, "AllTraffic/"+newID) {
		t.Errorf("log streams %v lack the replacement's AllTraffic/%s", streams, newID)
	}
	for i := range 3 {
		audio, err := invokeText(ctx, c, name, "after the replacement")
		if err != nil {
			t.Fatalf("invoke %d after the replacement: %v", i, err)
		}
		checkWAV(t, audio)
	}
}

// An invocation the container does not answer within the invocation timeout is answered as SageMaker does:
// InvokeEndpoint with ModelError, a response stream with a ModelStreamError event whose ErrorCode is
// ModelInvocationTimeExceeded. The timeout comes from the model's SAGEMAKER_MODEL_SERVER_TIMEOUT (the catalog's
// invocation_timeout_s), capped for InvokeEndpoint by AWS's 60 seconds.
//
// AWS docs, InvokeEndpoint: "A customer's model containers must respond to requests within 60 seconds."
// AWS docs, ResponseStream / ModelStreamError: "ModelInvocationTimeExceeded: The model failed to finish sending
// the response within the timeout period allowed by Amazon SageMaker AI."
func TestInvocationTimeout(t *testing.T) {
	// Health checks every hour: the hung instance stays routed, so the invocation timeout is what answers.
	r := startFleet(t, emulator.Options{StateDir: t.TempDir(), ContainerBin: emulatortest.ContainerBinary(t), HealthCheckInterval: time.Hour})
	c := r.Clients
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-slow"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1), emulatortest.Env(map[string]string{emulator.EnvInvocationTimeout: "2"}), emulatortest.InService())
	pid, _ := r.InstancePID(t, name)
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		t.Fatalf("SIGSTOP: %v", err)
	}
	t.Cleanup(func() { syscall.Kill(pid, syscall.SIGCONT) })

	// The client would wait 30 s; the emulator must answer after the 2-second timeout, well before.
	callCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	_, err := invokeText(callCtx, c, name, "never answered")
	var me *rttypes.ModelError
	if !errors.As(err, &me) || !strings.Contains(aws.ToString(me.Message), "timed out") || aws.ToInt32(me.OriginalStatusCode) != 0 {
		t.Fatalf("InvokeEndpoint on a hung instance: %v, want ModelError saying the invocation timed out", err)
	}
	_, err = stream(callCtx, c, name, "never answered either")
	var se *rttypes.ModelStreamError
	if !errors.As(err, &se) || aws.ToString(se.ErrorCode_) != "ModelInvocationTimeExceeded" {
		t.Fatalf("InvokeEndpointWithResponseStream on a hung instance: %v, want ModelStreamError ModelInvocationTimeExceeded", err)
	}

	// A model whose timeout the emulator cannot honour is refused, naming the variable.
	_, err = c.SageMaker.CreateModel(ctx, &sagemaker.CreateModelInput{
		ModelName: aws.String("bad-timeout"),
		PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String("local/speech-container"),
			Environment: map[string]string{"ENGINE": "espeak", emulator.EnvInvocationTimeout: "0"}},
	})
	if apiCode(err) != "ValidationException" || !strings.Contains(err.Error(), emulator.EnvInvocationTimeout) {
		t.Errorf("CreateModel with %s=0: %v, want ValidationException naming it", emulator.EnvInvocationTimeout, err)
	}
}

// A request routed to an instance that refuses the connection never reached it, so it is sent to a healthy
// instance instead of failing with 424; the refusing instance gets no further requests.
func TestRefusedConnectionRetried(t *testing.T) {
	r := startFleet(t, emulator.Options{StateDir: t.TempDir(), ContainerBin: emulatortest.ContainerBinary(t), HealthCheckInterval: time.Hour})
	c := r.Clients
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-retry"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(2), emulatortest.InService())

	// Point the instance the router tries first (all idle: the first in the fleet) at a port nobody listens
	// on: to the router it is now an instance whose process died, every connection refused.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := int32(ln.Addr().(*net.TCPAddr).Port)
	ln.Close()
	firstID, firstUnhealthy := r.SetFirstInstancePort(name, dead)

	for i := range 6 {
		audio, err := invokeText(ctx, c, name, "retried elsewhere")
		if err != nil {
			t.Fatalf("invoke %d with one instance refusing connections: %v", i, err)
		}
		checkWAV(t, audio)
		if _, err := stream(ctx, c, name, "streamed elsewhere"); err != nil {
			t.Fatalf("stream %d with one instance refusing connections: %v", i, err)
		}
	}
	if !firstUnhealthy() {
		t.Errorf("the refusing instance %s is still routed", firstID)
	}
}

// An endpoint keeps the model definition it was created from: after DeleteModel and DeleteEndpointConfig
// (both accepted while the endpoint runs, as SageMaker accepts them), a killed instance is still replaced and
// invokes work, also after the emulator restarts from its state file.
func TestDeletedModelEndpointHeals(t *testing.T) {
	dir := t.TempDir()
	r := startFleet(t, emulator.Options{StateDir: dir, ContainerBin: emulatortest.ContainerBinary(t)})
	c := r.Clients
	ctx := ctxFor(t, 3*time.Minute)
	const name = "speech-orphan"
	emulatortest.Endpoint(t, r, name, emulatortest.Instances(1), emulatortest.InService())
	if _, err := c.SageMaker.DeleteModel(ctx, &sagemaker.DeleteModelInput{ModelName: aws.String(name)}); err != nil {
		t.Fatalf("DeleteModel of a model in use: %v (SageMaker accepts it)", err)
	}
	if _, err := c.SageMaker.DeleteEndpointConfig(ctx, &sagemaker.DeleteEndpointConfigInput{EndpointConfigName: aws.String(name)}); err != nil {
		t.Fatalf("DeleteEndpointConfig of a config in use: %v", err)
	}
	pid, id := r.InstancePID(t, name)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, hangBound, "the killed instance to be replaced", func() bool {
		ids := r.InstanceIDs(name)
		return len(ids) == 1 && ids[0] != id && aws.ToInt32(describe(ctx, t, c, name).ProductionVariants[0].CurrentInstanceCount) == 1
	})
	d := describe(ctx, t, c, name)
	if d.EndpointStatus != smtypes.EndpointStatusInService || d.FailureReason != nil {
		t.Errorf("endpoint after the replacement: %s, %q; want InService without a failure", d.EndpointStatus, aws.ToString(d.FailureReason))
	}
	if img := aws.ToString(d.ProductionVariants[0].DeployedImages[0].SpecifiedImage); img != "local/speech-container" {
		t.Errorf("deployed image %q, want the captured model's local/speech-container", img)
	}
	if _, err := invokeText(ctx, c, name, "the model is gone but the endpoint is not"); err != nil {
		t.Fatalf("invoke after the replacement: %v", err)
	}

	// The captured definition is in the state file: a restarted emulator brings the endpoint back.
	r.Stop()
	r = startFleet(t, emulator.Options{StateDir: dir, ContainerBin: emulatortest.ContainerBinary(t)})
	c = r.Clients
	eventually(t, hangBound, "the endpoint to serve again after a restart", func() bool {
		return len(r.InstanceIDs(name)) == 1
	})
	if _, err := invokeText(ctx, c, name, "after a restart"); err != nil {
		t.Fatalf("invoke after a restart: %v", err)
	}
}
