package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"

	"github.com/speech-infra/speech-infra/emulator"
)

// Waits of the private emulator, each bounded.
const (
	// EmulatorReadyWait bounds how long StartEmulator waits for the emulator to publish its identity.
	EmulatorReadyWait = 15 * time.Second
	// EmulatorStopWait bounds how long Emulator.Stop waits for the emulator to shut down.
	EmulatorStopWait = 30 * time.Second
	// InServiceWait bounds how long Deploy waits for the endpoint to be InService, unless told otherwise.
	InServiceWait = 2 * time.Minute
	// CallTimeout bounds each control-plane call of Deploy.
	CallTimeout = 15 * time.Second
)

// Emulator is a SageMaker emulator serving in this process on a free loopback port, its state in a temporary
// directory.
type Emulator struct {
	*emulator.Emulator
	// Dir is the temporary directory, removed by Stop; StateDir the emulator's state directory in it, and
	// LogPath its log.
	Dir, StateDir, LogPath string
	cancel                 context.CancelFunc
	done                   chan error
}

// StartEmulator opens and runs an emulator whose instances run bin, with no timing profile, its directory
// named after prefix, and returns once it has published its identity (within EmulatorReadyWait).
func StartEmulator(ctx context.Context, bin, prefix string) (*Emulator, error) {
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return nil, fmt.Errorf("create the emulator's state directory: %w: check $TMPDIR", err)
	}
	logPath := filepath.Join(dir, "emulator.log")
	lf, err := os.Create(logPath)
	if err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("create the emulator's log: %w", err)
	}
	stateDir := filepath.Join(dir, "state")
	emu, err := emulator.Open(emulator.Options{StateDir: stateDir, Addr: "127.0.0.1:0", ContainerBin: bin,
		Log: lf, Profile: &emulator.Profile{Name: "none"}, TimeScale: 1})
	if err != nil {
		lf.Close()
		os.RemoveAll(dir)
		return nil, fmt.Errorf("open the emulator: %w", err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	e := &Emulator{Emulator: emu, Dir: dir, StateDir: stateDir, LogPath: logPath, cancel: cancel, done: make(chan error, 1)}
	go func() {
		e.done <- emu.Run(runCtx)
		lf.Close()
	}()
	deadline := time.Now().Add(EmulatorReadyWait)
	for {
		if _, ok, err := emulator.Running(stateDir); ok && err == nil {
			return e, nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			e.Stop()
			return nil, fmt.Errorf("the emulator in %s did not publish its identity within %v", dir, EmulatorReadyWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts the emulator down (which stops its instances), waits up to EmulatorStopWait and removes its
// directory.
func (e *Emulator) Stop() {
	e.cancel()
	select {
	case <-e.done:
	case <-time.After(EmulatorStopWait):
	}
	os.RemoveAll(e.Dir)
}

// Endpoint is what Deploy creates: a model, an endpoint config and an endpoint, all named Name, the model
// running the container with Env.
type Endpoint struct {
	Name string
	Env  map[string]string
	// Instances is the initial instance count (0: 1).
	Instances int
	// StartupHealthCheck is the variant's ContainerStartupHealthCheckTimeoutInSeconds (0: 60 s).
	StartupHealthCheck time.Duration
	// InServiceWait bounds the wait for InService (0: InServiceWait).
	InServiceWait time.Duration
}

// Deploy creates e through the real SDK, each call within CallTimeout, and waits until it is InService.
func Deploy(ctx context.Context, sm *sagemaker.Client, e Endpoint) error {
	instances, health, wait := max(e.Instances, 1), e.StartupHealthCheck, e.InServiceWait
	if health == 0 {
		health = 60 * time.Second
	}
	if wait == 0 {
		wait = InServiceWait
	}
	call, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := sm.CreateModel(call, &sagemaker.CreateModelInput{ModelName: aws.String(e.Name), ExecutionRoleArn: aws.String("arn:aws:iam::000000000000:role/local"),
		PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String("local/speech-container"), Environment: e.Env}}); err != nil {
		return fmt.Errorf("CreateModel: %w", err)
	}
	if _, err := sm.CreateEndpointConfig(call, &sagemaker.CreateEndpointConfigInput{EndpointConfigName: aws.String(e.Name), ProductionVariants: []smtypes.ProductionVariant{{
		VariantName: aws.String("AllTraffic"), ModelName: aws.String(e.Name), InitialInstanceCount: aws.Int32(int32(instances)),
		InstanceType: smtypes.ProductionVariantInstanceType("local"), ContainerStartupHealthCheckTimeoutInSeconds: aws.Int32(int32(health / time.Second))}}}); err != nil {
		return fmt.Errorf("CreateEndpointConfig: %w", err)
	}
	if _, err := sm.CreateEndpoint(call, &sagemaker.CreateEndpointInput{EndpointName: aws.String(e.Name), EndpointConfigName: aws.String(e.Name)}); err != nil {
		return fmt.Errorf("CreateEndpoint: %w", err)
	}
	w := sagemaker.NewEndpointInServiceWaiter(sm, func(o *sagemaker.EndpointInServiceWaiterOptions) {
		o.MinDelay, o.MaxDelay = 200*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(e.Name)}, wait); err != nil {
		return fmt.Errorf("endpoint %s with %d instance(s) not InService within %v: %w", e.Name, instances, wait, err)
	}
	return nil
}
