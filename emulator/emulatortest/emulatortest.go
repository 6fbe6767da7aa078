// Package emulatortest runs local SageMaker emulators for tests, in the spirit of net/http/httptest: Start
// serves a real emulator on a free loopback port in a temporary state directory and stops it when the test
// ends, ContainerBinary builds the real inference container once per test process, and Endpoint deploys an
// espeak endpoint through the real SDK clients.
package emulatortest

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/aws/smithy-go"

	"github.com/speech-infra/speech-infra/cloud"
	"github.com/speech-infra/speech-infra/emulator"
	"github.com/speech-infra/speech-infra/internal/containerbin"
)

// ContainerBinEnv names a prebuilt inference container binary; when it is set ContainerBinary uses it
// instead of building one (make test sets it to bin/speech-container).
const ContainerBinEnv = containerbin.Env

var container struct {
	once sync.Once
	bin  string
	err  error
}

// ContainerBinary returns the path of the inference container binary: $SPEECH_CONTAINER_BIN when set, else
// one built from the repository's container/ module (cgo) at most once per test process into
// .cache/emulatortest/. A failed build fails every test that asks, each with the build's output.
func ContainerBinary(t testing.TB) string {
	t.Helper()
	container.once.Do(func() { container.bin, container.err = buildContainer() })
	if container.err != nil {
		t.Fatalf("the inference container: %v", container.err)
	}
	return container.bin
}

func buildContainer() (string, error) { return containerbin.Path(context.Background(), "emulatortest") }

// Clients are the real SDK clients for one emulator, signing with its access key.
type Clients struct {
	SageMaker   *sagemaker.Client
	Runtime     *sagemakerruntime.Client
	AutoScaling *applicationautoscaling.Client
	CloudWatch  *cloudwatch.Client
	Logs        *cloudwatchlogs.Client
}

// NewClients returns new SDK clients for the emulator at url, signing with creds (cloud.LocalConfig).
//
// Each call builds new clients. Give every goroutine that opens response streams concurrently clients of its
// own: a client's event-stream decoder is shared by all its streams and races when several are open
// (aws/smithy-go#714).
func NewClients(url string, creds cloud.LocalCredentials) Clients {
	cfg := cloud.LocalConfig(url, creds)
	ep := aws.String(url)
	return Clients{
		SageMaker:   sagemaker.NewFromConfig(cfg, func(o *sagemaker.Options) { o.BaseEndpoint = ep }),
		Runtime:     sagemakerruntime.NewFromConfig(cfg, func(o *sagemakerruntime.Options) { o.BaseEndpoint = ep }),
		AutoScaling: applicationautoscaling.NewFromConfig(cfg, func(o *applicationautoscaling.Options) { o.BaseEndpoint = ep }),
		CloudWatch:  cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = ep }),
		Logs:        cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) { o.BaseEndpoint = ep }),
	}
}

// Emulator is an emulator serving in the background of one test.
type Emulator struct {
	// Emulator is the running emulator itself.
	*emulator.Emulator
	// URL is its base URL, http://127.0.0.1:<port>; StateDir its state directory.
	URL      string
	StateDir string
	// Key is its access key.
	Key cloud.LocalCredentials
	// Clients sign with Key. Give concurrent streams clients of their own (NewClients).
	Clients

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan error
}

// NewClients returns new SDK clients for e, for a goroutine that streams concurrently with others.
func (e *Emulator) NewClients() Clients { return NewClients(e.URL, e.Key) }

// Option changes the emulator.Options Start opens the emulator with.
type Option func(*emulator.Options)

// StateDir makes the emulator keep its state in dir (a restart in the same directory finds it there).
func StateDir(dir string) Option { return func(o *emulator.Options) { o.StateDir = dir } }

// ContainerBin makes the emulator's instances run bin; "" (the default) leaves them unable to start.
func ContainerBin(bin string) Option { return func(o *emulator.Options) { o.ContainerBin = bin } }

// Throttle gives the emulator's control plane the buckets of setting (emulator.ParseThrottle's syntax, e.g.
// "DescribeEndpoint=1/1"); Start turns throttling off otherwise.
func Throttle(t testing.TB, setting string) Option {
	t.Helper()
	th, err := emulator.ParseThrottle(setting)
	if err != nil {
		t.Fatalf("throttle setting: %v", err)
	}
	return func(o *emulator.Options) { o.Throttle = th }
}

// TimeScale runs the emulator at the time scale: its start-up profile that many times faster, and CloudWatch
// time compressed with it (the metric period 10 s ÷ autoscale.Compression(scale) instead of Start's 1 s), as
// SPEECH_EMULATOR_TIME_SCALE does (docs/design.md, "Compressed CloudWatch time").
func TimeScale(scale float64) Option {
	return func(o *emulator.Options) { o.TimeScale, o.MetricPeriod = scale, 0 }
}

// Container makes the emulator's instances run ContainerBinary(t).
func Container(t testing.TB) Option {
	t.Helper()
	return ContainerBin(ContainerBinary(t))
}

// Start opens and runs an emulator on a free loopback port with a 1-second metric period, its state in a new
// temporary directory and its diagnostics shown with go test -v only, changed by opts; it returns once the
// emulator has published and answers its identity, and stops it when the test ends.
func Start(t testing.TB, opts ...Option) *Emulator {
	t.Helper()
	// The emulator's log goes to stderr under -v; otherwise its tail is kept and printed only when the test
	// fails, so that a failure in CI shows what the emulator did (scaling decisions, endpoint states) before it.
	tail := &logTail{}
	o := emulator.Options{Addr: "127.0.0.1:0", MetricPeriod: time.Second, Log: tail}
	if testing.Verbose() {
		o.Log = os.Stderr
	} else {
		t.Cleanup(func() {
			if t.Failed() {
				t.Logf("the emulator's log, its last %d lines:\n%s", logTailLines, tail.String())
			}
		})
	}
	for _, opt := range opts {
		opt(&o)
	}
	// A developer's SPEECH_EMULATOR_PROFILE / SPEECH_EMULATOR_TIME_SCALE must not slow every test down: a test
	// that wants a timing profile asks for one in its options.
	if o.Profile == nil {
		o.Profile = &emulator.Profile{Name: "none"}
	}
	if o.TimeScale == 0 {
		o.TimeScale = 1
	}
	// Likewise throttling: on by default in the emulator, off in tests unless a test sets its buckets
	// (Throttle), so that tests polling every 100 ms are not slowed by the SDK's retries.
	if o.Throttle == nil {
		o.Throttle = &emulator.Throttle{Off: true}
	}
	if o.StateDir == "" {
		o.StateDir = t.TempDir()
	}
	emu, err := emulator.Open(o)
	if err != nil {
		t.Fatalf("open emulator: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	e := &Emulator{Emulator: emu, URL: emu.URL(), StateDir: o.StateDir, Key: cloud.LocalCredentials(emu.Credentials()), cancel: cancel, done: make(chan error, 1)}
	e.Clients = e.NewClients()
	go func() { e.done <- emu.Run(ctx) }()
	t.Cleanup(e.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, ok, err := emulator.Running(o.StateDir); ok && err == nil {
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("the emulator in %s did not publish and answer its identity within 10s", o.StateDir)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop shuts the emulator down and waits up to 30 s for it (idempotent; Start registers it as a cleanup).
func (e *Emulator) Stop() {
	e.mu.Lock()
	cancel := e.cancel
	e.cancel = nil
	e.mu.Unlock()
	if cancel == nil {
		return
	}
	cancel()
	select {
	case <-e.done:
	case <-time.After(30 * time.Second):
	}
}

// Stopped reports whether Stop was called.
func (e *Emulator) Stopped() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.cancel == nil
}

// Spec is what Endpoint, Version, Model and Config create; EndpointOptions change it.
type Spec struct {
	// Env is added to the model's container environment, over ENGINE=espeak and QUEUE_MAX_DEPTH=0.
	Env map[string]string
	// Instances is the endpoint config's initial instance count (1).
	Instances int32
	// StartupTimeout is the config's container startup health-check timeout (60 s).
	StartupTimeout time.Duration
	// InService makes Endpoint wait until the endpoint is InService.
	InService bool
	// InstanceType is the endpoint config's instance type ("local").
	InstanceType string
}

// EndpointOption changes a Spec.
type EndpointOption func(*Spec)

// Env adds env to the model's container environment (ENGINE, for one, replaces espeak).
func Env(env map[string]string) EndpointOption {
	return func(s *Spec) {
		for k, v := range env {
			s.Env[k] = v
		}
	}
}

// Instances sets the initial instance count.
func Instances(n int32) EndpointOption { return func(s *Spec) { s.Instances = n } }

// StartupTimeout sets the container startup health-check timeout.
func StartupTimeout(d time.Duration) EndpointOption {
	return func(s *Spec) { s.StartupTimeout = d }
}

// InService makes Endpoint wait until the endpoint is InService (WaitInService).
func InService() EndpointOption { return func(s *Spec) { s.InService = true } }

// InstanceType sets the endpoint config's instance type (an instance-type profile's, e.g. ml.g4dn.xlarge).
func InstanceType(t string) EndpointOption { return func(s *Spec) { s.InstanceType = t } }

func spec(opts []EndpointOption) Spec {
	s := Spec{Env: map[string]string{"ENGINE": "espeak", "QUEUE_MAX_DEPTH": "0"}, Instances: 1, StartupTimeout: 60 * time.Second, InstanceType: emulator.LocalInstanceType}
	for _, o := range opts {
		o(&s)
	}
	return s
}

func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// Model creates a model named name running the inference container with the Spec's environment.
func Model(t testing.TB, e *Emulator, name string, opts ...EndpointOption) {
	t.Helper()
	s := spec(opts)
	if _, err := e.SageMaker.CreateModel(ctxFor(t, 10*time.Second), &sagemaker.CreateModelInput{
		ModelName:        aws.String(name),
		PrimaryContainer: &smtypes.ContainerDefinition{Image: aws.String("local/speech-container"), Environment: s.Env},
		ExecutionRoleArn: aws.String("arn:aws:iam::000000000000:role/local"),
	}); err != nil {
		t.Fatalf("CreateModel %s: %v", name, err)
	}
}

// Config creates an endpoint config named config with one variant, AllTraffic, of model on the Spec's
// instance count of the Spec's instance type ("local" unless InstanceType says otherwise).
func Config(t testing.TB, e *Emulator, config, model string, opts ...EndpointOption) {
	t.Helper()
	s := spec(opts)
	if _, err := e.SageMaker.CreateEndpointConfig(ctxFor(t, 10*time.Second), &sagemaker.CreateEndpointConfigInput{
		EndpointConfigName: aws.String(config),
		ProductionVariants: []smtypes.ProductionVariant{{
			VariantName: aws.String("AllTraffic"), ModelName: aws.String(model),
			InitialInstanceCount: aws.Int32(s.Instances), InstanceType: smtypes.ProductionVariantInstanceType(s.InstanceType),
			ContainerStartupHealthCheckTimeoutInSeconds: aws.Int32(int32(s.StartupTimeout / time.Second)),
		}},
	}); err != nil {
		t.Fatalf("CreateEndpointConfig %s: %v", config, err)
	}
}

// Version creates a model and an endpoint config, both named name: a version an endpoint can be created
// with or updated to.
func Version(t testing.TB, e *Emulator, name string, opts ...EndpointOption) {
	t.Helper()
	Model(t, e, name, opts...)
	Config(t, e, name, name, opts...)
}

// Endpoint creates a model, an endpoint config and an endpoint, all named name, for the espeak engine (Spec
// has the defaults), optionally waits until it is InService, and deletes all three when the test ends unless
// the test deleted them or stopped the emulator first.
func Endpoint(t testing.TB, e *Emulator, name string, opts ...EndpointOption) {
	t.Helper()
	Version(t, e, name, opts...)
	if _, err := e.SageMaker.CreateEndpoint(ctxFor(t, 10*time.Second), &sagemaker.CreateEndpointInput{EndpointName: aws.String(name), EndpointConfigName: aws.String(name)}); err != nil {
		t.Fatalf("CreateEndpoint %s: %v", name, err)
	}
	t.Cleanup(func() {
		if e.Stopped() {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
		defer cancel()
		if err := deleteEndpoint(ctx, e, name); err != nil && !notFound(err) {
			t.Errorf("cleanup: DeleteEndpoint %s: %v", name, err)
		}
		if _, err := e.SageMaker.DeleteEndpointConfig(ctx, &sagemaker.DeleteEndpointConfigInput{EndpointConfigName: aws.String(name)}); err != nil && !notFound(err) {
			t.Errorf("cleanup: DeleteEndpointConfig %s: %v", name, err)
		}
		if _, err := e.SageMaker.DeleteModel(ctx, &sagemaker.DeleteModelInput{ModelName: aws.String(name)}); err != nil && !notFound(err) {
			t.Errorf("cleanup: DeleteModel %s: %v", name, err)
		}
	})
	if spec(opts).InService {
		WaitInService(ctxFor(t, 100*time.Second), t, e.SageMaker, name)
	}
}

// deleteEndpoint deletes the endpoint, waiting (within ctx) while it is Creating or Updating: SageMaker, and the
// emulator, refuse to delete an endpoint in progress.
func deleteEndpoint(ctx context.Context, e *Emulator, name string) error {
	for {
		_, err := e.SageMaker.DeleteEndpoint(ctx, &sagemaker.DeleteEndpointInput{EndpointName: aws.String(name)})
		var ae smithy.APIError
		if err == nil || !errors.As(err, &ae) || !strings.Contains(ae.ErrorMessage(), "in-progress") {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// notFound reports whether err is SageMaker's answer for a resource that does not exist (a ValidationException
// "Could not find ...").
func notFound(err error) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == "ValidationException" && strings.Contains(ae.ErrorMessage(), "Could not find")
}

// WaitInService waits up to 90 s (and within ctx) for the endpoint to be InService, polling every 200 ms to
// 1 s with the SDK's waiter, and fails the test with the endpoint's description otherwise.
func WaitInService(ctx context.Context, t testing.TB, sm *sagemaker.Client, name string) {
	t.Helper()
	w := sagemaker.NewEndpointInServiceWaiter(sm, func(o *sagemaker.EndpointInServiceWaiterOptions) {
		o.MinDelay, o.MaxDelay = 200*time.Millisecond, time.Second
	})
	if err := w.Wait(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)}, 90*time.Second); err != nil {
		d, _ := sm.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(name)})
		t.Fatalf("endpoint %s not InService: %v (%+v)", name, err, d)
	}
}

// logTailLines is how many of the emulator's last log lines a failed test prints.
const logTailLines = 200

// logTail keeps the last logTailLines lines written to it (the emulator logs from several goroutines).
type logTail struct {
	mu    sync.Mutex
	lines []string
	part  string
}

func (l *logTail) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := l.part + string(p)
	parts := strings.Split(s, "\n")
	l.part = parts[len(parts)-1]
	l.lines = append(l.lines, parts[:len(parts)-1]...)
	if over := len(l.lines) - logTailLines; over > 0 {
		l.lines = append(l.lines[:0], l.lines[over:]...)
	}
	return len(p), nil
}

func (l *logTail) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Join(append(append([]string(nil), l.lines...), l.part), "\n")
}
