package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/engine"
	"github.com/speech-infra/speech-infra/container/internal/espeak"
	"github.com/speech-infra/speech-infra/container/internal/kokoro"
	"github.com/speech-infra/speech-infra/container/internal/manifest"
	"github.com/speech-infra/speech-infra/container/internal/server"
)

// Stage names, in the order a starting container prints them.
const (
	StageContainerStarted = "container_started"
	StageWeightsVerified  = "weights_verified"
	StageEngineLoaded     = "engine_loaded"
	StageWarmupDone       = "warmup_done"
	StageReady            = "ready"
)

// StageTimeFormat is RFC 3339 in UTC with nanoseconds always written out.
const StageTimeFormat = "2006-01-02T15:04:05.000000000Z07:00"

// Stage writes the stage line `=== STAGE <name> t=<time> ===` to w.
func Stage(w io.Writer, name string) {
	fmt.Fprintf(w, "=== STAGE %s t=%s ===\n", name, time.Now().UTC().Format(StageTimeFormat))
}

// UsageError is a usage or input error: a command-line mistake, or a configuration from the environment that
// cannot be used. The exit codes are those of the root module's internal/exitcode, which this module cannot
// import: 0 ok, 1 a failure (an unmarked error, such as weights that fail verification), 2 a UsageError.
type UsageError struct{ Err error }

// Error returns the wrapped error's message.
func (e *UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e *UsageError) Unwrap() error { return e.Err }

// ExitCode maps an error from Run to the process exit code: 0 for nil, 2 for a UsageError, 1 otherwise.
func ExitCode(err error) int {
	var ue *UsageError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ue):
		return 2
	}
	return 1
}

// Usage is the command-line summary.
const Usage = `usage: speech-container serve
       speech-container phonemize [--voice NAME] < lines
       speech-container voices

Serves the SageMaker inference contract (GET /ping, POST /invocations) on
SAGEMAKER_BIND_TO_PORT (default 8080) of SAGEMAKER_BIND_TO_ADDRESS (an IP
address; default every interface). Configuration is by environment: ENGINE
(espeak|kokoro|calibration), MODEL_DIR, INSTANCE_ID, QUEUE_MAX_DEPTH,
ENGINE_WORKERS, SCHEDULER (deadline|first-chunk|fifo), FIRST_AUDIO_TARGET_MS,
FIRST_SEGMENT_RUNES, CALIBRATION_SEGMENT_MS, MAX_TEXT_CHARS, MAX_BODY_BYTES, SHUTDOWN_GRACE, ONNXRUNTIME_LIB, ONNX_PROVIDER
(cpu|cuda), METRICS_INTERVAL, HEADER_READ_TIMEOUT, BODY_READ_TIMEOUT,
WRITE_STALL_TIMEOUT, CLIENT_LAG_LIMIT, IDLE_TIMEOUT, SEGMENT_TIMEOUT,
MAX_CONNECTIONS, STREAM_BUFFER_BYTES (the audio held for clients slower than
synthesis, all requests together; default 268435456 = 256 MiB). See
container/README.md.`

// Run runs the command line args (without the program name). It serves until
// ctx ends (SIGTERM), then drains and returns nil.
func Run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	if len(args) != 1 || args[0] != "serve" {
		//lint:ignore ST1005 the error is the usage text, printed as it is
		return &UsageError{Err: errors.New(Usage)}
	}
	out := server.NewLockedWriter(stdout)
	Stage(out, StageContainerStarted)
	cfg, err := ConfigFromEnv(getenv)
	if err != nil {
		return &UsageError{Err: fmt.Errorf("configuration: %w", err)}
	}
	logf := func(format string, args ...any) { fmt.Fprintf(stderr, "speech-container: "+format+"\n", args...) }

	srv := server.New(server.Options{
		InstanceID: cfg.InstanceID, QueueMaxDepth: cfg.QueueMaxDepth, Workers: cfg.Workers,
		Scheduler: cfg.Scheduler, FirstAudioTarget: cfg.FirstAudioTarget, FirstSegmentRunes: cfg.FirstSegmentRunes, MaxTextChars: cfg.MaxTextChars, MaxBodyBytes: cfg.MaxBodyBytes,
		SegmentTimeout: cfg.SegmentTimeout, BodyTimeout: cfg.BodyTimeout, StallTimeout: cfg.StallTimeout, ClientLagLimit: cfg.ClientLagLimit,
		StreamBufferBytes: cfg.StreamBufferBytes,
	}, out)
	addr := net.JoinHostPort(cfg.BindAddress, strconv.Itoa(cfg.Port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen on %s (SAGEMAKER_BIND_TO_ADDRESS %q, SAGEMAKER_BIND_TO_PORT %d): %w", addr, cfg.BindAddress, cfg.Port, err)
	}
	hs := NewHTTPServer(cfg, srv)
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(LimitListener(ln, cfg.MaxConnections, logf, srv.PingAnswer)) }()
	defer hs.Close()

	// /ping answers 503 while the weights are checked and the engine loads.
	if err := verifyWeights(cfg, logf); err != nil {
		return err
	}
	Stage(out, StageWeightsVerified)
	eng, err := LoadEngine(cfg, logf)
	if err != nil {
		return fmt.Errorf("load engine %s: %w", cfg.Engine, err)
	}
	defer eng.Close()
	if k, ok := eng.(*kokoro.Engine); ok {
		sig := k.Signature()
		logf("kokoro: execution provider %s; model inputs %s, %s, %s (int32 speed: %v), output %s", k.Provider(), sig.IDs, sig.Style, sig.Speed, sig.SpeedInt32, sig.Output)
	}
	Stage(out, StageEngineLoaded)
	wctx, wcancel := context.WithTimeout(ctx, cfg.SegmentTimeout)
	err = Warmup(wctx, eng)
	wcancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("warm up engine %s: no audio within SEGMENT_TIMEOUT=%s: %w", cfg.Engine, cfg.SegmentTimeout, err)
		}
		return fmt.Errorf("warm up engine %s: %w", cfg.Engine, err)
	}
	Stage(out, StageWarmupDone)
	if err := srv.Attach(eng); err != nil {
		return err
	}
	defer srv.Close()
	srv.SetReady()
	Stage(out, StageReady)
	logf("serving engine %s on %s (workers %d, scheduler %s, queue max depth %d)", eng.Name(), ln.Addr(), cfg.Workers, cfg.Scheduler, cfg.QueueMaxDepth)

	mctx, stopMetrics := context.WithCancel(context.Background())
	defer stopMetrics()
	go srv.RunMetrics(mctx, cfg.MetricsInterval)

	select {
	case err := <-serveErr:
		return fmt.Errorf("http server: %w", err)
	case <-ctx.Done():
	}
	logf("shutting down: draining in-flight requests (grace %s)", cfg.ShutdownGrace)
	gctx, cancel := context.WithTimeout(context.Background(), cfg.ShutdownGrace)
	defer cancel()
	if left := srv.Drain(gctx); left > 0 {
		logf("grace period over with %d requests in flight; closing them", left)
		hs.Close()
	} else {
		sctx, scancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer scancel()
		hs.Shutdown(sctx)
	}
	srv.EmitMetrics()
	logf("stopped")
	return nil
}

// verifyWeights checks MODEL_DIR against its manifest: required for kokoro,
// whose every file the manifest must list, and done when a manifest is
// present for the other engines.
func verifyWeights(cfg Config, logf func(string, ...any)) error {
	var required []string
	if cfg.Engine == EngineKokoro {
		files, err := kokoro.Files(cfg.ModelDir)
		if err != nil {
			return fmt.Errorf("refusing to start: list the kokoro model files in %s: %w", cfg.ModelDir, err)
		}
		required = files
	} else if _, err := os.Stat(filepath.Join(cfg.ModelDir, manifest.FileName)); errors.Is(err, os.ErrNotExist) {
		logf("engine %s has no model weights to verify", cfg.Engine)
		return nil
	}
	m, err := manifest.Verify(cfg.ModelDir, required...)
	if err != nil {
		return fmt.Errorf("refusing to start: %w", err)
	}
	logf("verified %d model files in %s", len(m.Files), cfg.ModelDir)
	return nil
}

// LoadEngine builds the engine cfg names.
func LoadEngine(cfg Config, logf func(string, ...any)) (engine.Engine, error) {
	switch cfg.Engine {
	case EngineCalibration:
		return &engine.Calibration{SegmentCompute: cfg.CalibrationSegment}, nil
	case EngineEspeak:
		exe, err := os.Executable()
		if err != nil {
			return nil, err
		}
		return espeak.NewPool(exe, nil, cfg.Workers)
	case EngineKokoro:
		return kokoro.Load(kokoro.Config{ModelDir: cfg.ModelDir, LibPath: cfg.ONNXRuntimeLib, Provider: cfg.ONNXProvider, Logf: logf})
	}
	return nil, fmt.Errorf("unknown engine %q", cfg.Engine)
}

// Warmup synthesizes one short sentence so the first real request does not
// pay for lazy initialization, and checks that it produced audio.
func Warmup(ctx context.Context, eng engine.Engine) error {
	n := 0
	err := eng.Synthesize(ctx, engine.Segment{Text: "Hello.", Voice: eng.DefaultVoice(), Speed: 1}, func(s []int16) error {
		n += len(s)
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		return errors.New("warm-up produced no audio")
	}
	return nil
}
