package emulator

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/applicationautoscaling"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatch"
	"github.com/aws/aws-sdk-go-v2/service/cloudwatchlogs"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"

	"github.com/speech-infra/speech-infra/cloud"
)

// containerBin is the inference container built in TestMain from ../container, or "" when it could not be
// built (the end-to-end tests then fail, saying why).
var containerBin, containerBuildErr = "", error(nil)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "emulator-test-")
	if err != nil {
		panic(err)
	}
	bin := filepath.Join(dir, "speech-container")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "container")
	if out, err := cmd.CombinedOutput(); err != nil {
		containerBuildErr = &buildError{out: string(out), err: err}
	} else {
		containerBin = bin
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type buildError struct {
	out string
	err error
}

func (e *buildError) Error() string { return "build ../container: " + e.err.Error() + "\n" + e.out }

// clients are the real SDK clients pointed at one emulator.
type clients struct {
	sm  *sagemaker.Client
	rt  *sagemakerruntime.Client
	aas *applicationautoscaling.Client
	cw  *cloudwatch.Client
	lg  *cloudwatchlogs.Client
}

// keys holds the access key of every emulator a test started, by URL: newClients signs with the key of the
// emulator it talks to.
var keys sync.Map

// keyFor returns the access key of the emulator a test started at url.
func keyFor(url string) cloud.LocalCredentials {
	k, ok := keys.Load(url)
	if !ok {
		panic("newClients: no emulator started by this test binary serves " + url + ": start it with start()")
	}
	return k.(cloud.LocalCredentials)
}

// newClients returns the SDK clients for the emulator a test started at url, signing with its access key.
func newClients(url string) clients {
	return newClientsWith(url, keyFor(url))
}

// newClientsWith returns the SDK clients for the emulator at url, signing with creds.
func newClientsWith(url string, creds cloud.LocalCredentials) clients {
	cfg := cloud.LocalConfig(url, creds)
	ep := aws.String(url)
	return clients{
		sm:  sagemaker.NewFromConfig(cfg, func(o *sagemaker.Options) { o.BaseEndpoint = ep }),
		rt:  sagemakerruntime.NewFromConfig(cfg, func(o *sagemakerruntime.Options) { o.BaseEndpoint = ep }),
		aas: applicationautoscaling.NewFromConfig(cfg, func(o *applicationautoscaling.Options) { o.BaseEndpoint = ep }),
		cw:  cloudwatch.NewFromConfig(cfg, func(o *cloudwatch.Options) { o.BaseEndpoint = ep }),
		lg:  cloudwatchlogs.NewFromConfig(cfg, func(o *cloudwatchlogs.Options) { o.BaseEndpoint = ep }),
	}
}

// sigV4Header is a SigV4 Authorization header naming akid, for raw HTTP requests (the emulator checks the
// access key id, not the signature).
func sigV4Header(akid, service string) string {
	return "AWS4-HMAC-SHA256 Credential=" + akid + "/" + time.Now().UTC().Format("20060102") + "/us-east-1/" + service +
		"/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature=" + strings.Repeat("0", 64)
}

// running is an emulator serving in the background of a test.
type running struct {
	emu    *Emulator
	cancel context.CancelFunc
	done   chan error
}

// start opens and runs an emulator on a free loopback port with a 1-second metric period.
func start(t *testing.T, dir, bin string) *running {
	t.Helper()
	return startWith(t, Options{StateDir: dir, Addr: "127.0.0.1:0", ContainerBin: bin, MetricPeriod: time.Second})
}

// startWith opens and runs an emulator with opts (diagnostics to testLog) and registers its access key for
// newClients.
func startWith(t *testing.T, opts Options) *running {
	t.Helper()
	opts.Log = testLog()
	emu, err := Open(opts)
	if err != nil {
		t.Fatalf("open emulator: %v", err)
	}
	keys.Store(emu.URL(), cloud.LocalCredentials(emu.Credentials()))
	ctx, cancel := context.WithCancel(context.Background())
	r := &running{emu: emu, cancel: cancel, done: make(chan error, 1)}
	go func() { r.done <- emu.Run(ctx) }()
	t.Cleanup(r.stop)
	eventually(t, 10*time.Second, "the emulator to publish and answer its identity", func() bool {
		_, ok, err := Running(opts.StateDir)
		return ok && err == nil
	})
	return r
}

// stop shuts the emulator down and waits for it (idempotent).
func (r *running) stop() {
	if r.cancel == nil {
		return
	}
	r.cancel()
	r.cancel = nil
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
	}
}

// testLog shows the emulator's diagnostics with go test -v only.
func testLog() io.Writer {
	if testing.Verbose() {
		return os.Stderr
	}
	return io.Discard
}

func ctxFor(t *testing.T, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// eventually polls cond every 100 ms until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", timeout, what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
