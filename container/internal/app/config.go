// Package app wires the container together: configuration from the
// environment, the engine, the stage lines, the HTTP server and the SIGTERM
// drain.
package app

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/segment"
	"github.com/speech-infra/speech-infra/container/internal/server"
)

// Engine names for ENGINE.
const (
	EngineEspeak      = "espeak"
	EngineKokoro      = "kokoro"
	EngineCalibration = "calibration"
)

// Config is the container's configuration, read from the environment.
type Config struct {
	Port               int           // SAGEMAKER_BIND_TO_PORT, default 8080
	BindAddress        string        // SAGEMAKER_BIND_TO_ADDRESS, default "" (every interface)
	Engine             string        // ENGINE: espeak (default), kokoro, calibration
	ModelDir           string        // MODEL_DIR, default /opt/ml/model
	InstanceID         string        // INSTANCE_ID, default the hostname
	QueueMaxDepth      int           // QUEUE_MAX_DEPTH, default 0 (unbounded)
	Workers            int           // ENGINE_WORKERS, default: espeak the CPU count, others 1
	Scheduler          string        // SCHEDULER: deadline (default), first-chunk or fifo
	FirstAudioTarget   time.Duration // FIRST_AUDIO_TARGET_MS, default server.DefaultFirstAudioTarget
	FirstSegmentRunes  int           // FIRST_SEGMENT_RUNES, default segment.FirstTargetRunes; 0 = off
	CalibrationSegment time.Duration // CALIBRATION_SEGMENT_MS, default 200
	MaxTextChars       int           // MAX_TEXT_CHARS, default 5000
	MaxBodyBytes       int64         // MAX_BODY_BYTES, default 1 MiB
	ShutdownGrace      time.Duration // SHUTDOWN_GRACE, default 25s
	ONNXRuntimeLib     string        // ONNXRUNTIME_LIB
	ONNXProvider       string        // ONNX_PROVIDER: cpu (default) or cuda
	MetricsInterval    time.Duration // METRICS_INTERVAL, default 10s
	HeaderTimeout      time.Duration // HEADER_READ_TIMEOUT, default 10s
	BodyTimeout        time.Duration // BODY_READ_TIMEOUT, default 10s
	StallTimeout       time.Duration // WRITE_STALL_TIMEOUT, default 30s
	IdleTimeout        time.Duration // IDLE_TIMEOUT, default 75s
	ClientLagLimit     time.Duration // CLIENT_LAG_LIMIT, default 5s; 0 = off
	SegmentTimeout     time.Duration // SEGMENT_TIMEOUT, default 30s
	MaxConnections     int           // MAX_CONNECTIONS, default 1024
	StreamBufferBytes  int64         // STREAM_BUFFER_BYTES, default server.DefaultStreamBufferBytes
}

// MaxFirstAudioTarget is the largest FIRST_AUDIO_TARGET_MS (an hour, the
// catalog's largest SLO).
const MaxFirstAudioTarget = time.Hour

// MaxWorkers is the largest ENGINE_WORKERS: espeak starts one process of about
// 15 MB per worker, so 100,000 exhaust a machine's memory before it is ready;
// 256 is far beyond any instance's cores or GPU streams.
const MaxWorkers = 256

// DefaultONNXRuntimeLib is where the image installs ONNX Runtime; outside the
// image set ONNXRUNTIME_LIB (scripts/install-onnxruntime.sh installs it at
// .cache/onnxruntime/libonnxruntime.so.1 in the repository).
const DefaultONNXRuntimeLib = "/opt/onnxruntime/lib/libonnxruntime.so.1"

// ConfigFromEnv reads the configuration through getenv and returns every
// problem at once, each naming its variable and the values it takes.
func ConfigFromEnv(getenv func(string) string) (Config, error) {
	var errs []error
	str := func(name, def string) string {
		if v := getenv(name); v != "" {
			return v
		}
		return def
	}
	num := func(name string, def, lo int) int {
		v := getenv(name)
		if v == "" {
			return def
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < lo {
			errs = append(errs, fmt.Errorf("%s=%q: use a whole number >= %d", name, v, lo))
			return def
		}
		return n
	}
	dur := func(name string, def time.Duration) time.Duration {
		v := getenv(name)
		if v == "" {
			return def
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			if n, nerr := strconv.Atoi(v); nerr == nil {
				d, err = time.Duration(n)*time.Second, nil
			}
		}
		if err != nil || d < 0 {
			errs = append(errs, fmt.Errorf("%s=%q: use a duration such as 25s", name, v))
			return def
		}
		return d
	}
	host, _ := os.Hostname()
	c := Config{
		Port:            num("SAGEMAKER_BIND_TO_PORT", 8080, 1),
		Engine:          str("ENGINE", EngineEspeak),
		ModelDir:        str("MODEL_DIR", "/opt/ml/model"),
		InstanceID:      str("INSTANCE_ID", host),
		QueueMaxDepth:   num("QUEUE_MAX_DEPTH", 0, 0),
		Scheduler:       str("SCHEDULER", server.Deadline),
		MaxTextChars:    num("MAX_TEXT_CHARS", 5000, 1),
		MaxBodyBytes:    int64(num("MAX_BODY_BYTES", 1<<20, 1)),
		ShutdownGrace:   dur("SHUTDOWN_GRACE", 25*time.Second),
		ONNXRuntimeLib:  str("ONNXRUNTIME_LIB", DefaultONNXRuntimeLib),
		ONNXProvider:    str("ONNX_PROVIDER", "cpu"),
		MetricsInterval: dur("METRICS_INTERVAL", 10*time.Second),
		HeaderTimeout:   dur("HEADER_READ_TIMEOUT", 10*time.Second),
		BodyTimeout:     dur("BODY_READ_TIMEOUT", 10*time.Second),
		StallTimeout:    dur("WRITE_STALL_TIMEOUT", 30*time.Second),
		ClientLagLimit:  dur("CLIENT_LAG_LIMIT", server.DefaultClientLagLimit),
		IdleTimeout:     dur("IDLE_TIMEOUT", 75*time.Second),
		SegmentTimeout:  dur("SEGMENT_TIMEOUT", 30*time.Second),
		MaxConnections:  num("MAX_CONNECTIONS", 1024, 1),
	}
	c.StreamBufferBytes = int64(num("STREAM_BUFFER_BYTES", server.DefaultStreamBufferBytes, server.MinStreamBufferBytes))
	// SageMaker's container contract: the container answers /invocations
	// and /ping on port 8080 of the interface SageMaker reaches it on
	// (developer guide, "Custom Inference Code with Hosting Services"), so
	// the default binds every interface. SAGEMAKER_BIND_TO_ADDRESS is this
	// container's own (SageMaker does not set it): the local emulator sets
	// 127.0.0.1 so that its instances, whose /invocations takes no key, are
	// reachable from this host only (docs/design.md, "The local emulator").
	if v := getenv("SAGEMAKER_BIND_TO_ADDRESS"); v != "" {
		if a, err := netip.ParseAddr(v); err != nil {
			errs = append(errs, fmt.Errorf("SAGEMAKER_BIND_TO_ADDRESS=%q: use an IP address without brackets or port, such as 127.0.0.1 or ::1 (this host only) or 0.0.0.0 or :: (every interface); unset, every interface", v))
		} else {
			c.BindAddress = a.String()
		}
	}
	c.CalibrationSegment = time.Duration(num("CALIBRATION_SEGMENT_MS", 200, 0)) * time.Millisecond
	c.FirstAudioTarget = time.Duration(num("FIRST_AUDIO_TARGET_MS", int(server.DefaultFirstAudioTarget/time.Millisecond), 0)) * time.Millisecond
	c.FirstSegmentRunes = num("FIRST_SEGMENT_RUNES", segment.FirstTargetRunes, 0)
	if c.FirstSegmentRunes > segment.MaxRunes {
		errs = append(errs, fmt.Errorf("FIRST_SEGMENT_RUNES=%d: use 0 (off) to %d (a segment's longest)", c.FirstSegmentRunes, segment.MaxRunes))
	}
	if c.FirstAudioTarget > MaxFirstAudioTarget {
		errs = append(errs, fmt.Errorf("FIRST_AUDIO_TARGET_MS=%q: use at most %d (an hour; the catalog passes a third of the TTFAB SLO)", getenv("FIRST_AUDIO_TARGET_MS"), MaxFirstAudioTarget.Milliseconds()))
	}
	defWorkers := 1
	if c.Engine == EngineEspeak {
		defWorkers = min(runtime.NumCPU(), MaxWorkers)
	}
	c.Workers = num("ENGINE_WORKERS", defWorkers, 1)
	if c.Workers > MaxWorkers {
		errs = append(errs, fmt.Errorf("ENGINE_WORKERS=%d: use 1 to %d (espeak: one process each; the instance's cores are the useful number)", c.Workers, MaxWorkers))
	}
	if c.Port > 65535 {
		errs = append(errs, fmt.Errorf("SAGEMAKER_BIND_TO_PORT=%d: use a port in 1-65535", c.Port))
	}
	switch c.Engine {
	case EngineEspeak, EngineKokoro, EngineCalibration:
	default:
		errs = append(errs, fmt.Errorf("ENGINE=%q: use espeak, kokoro or calibration", c.Engine))
	}
	switch c.Scheduler {
	case server.FirstChunk, server.FIFO, server.Deadline:
	default:
		errs = append(errs, fmt.Errorf("SCHEDULER=%q: use %s", c.Scheduler, server.Policies))
	}
	if c.ONNXProvider != "cpu" && c.ONNXProvider != "cuda" {
		errs = append(errs, fmt.Errorf("ONNX_PROVIDER=%q: use cpu or cuda", c.ONNXProvider))
	}
	if c.MetricsInterval <= 0 {
		errs = append(errs, fmt.Errorf("METRICS_INTERVAL must be positive"))
	}
	for _, d := range []struct {
		name string
		v    time.Duration
	}{{"HEADER_READ_TIMEOUT", c.HeaderTimeout}, {"BODY_READ_TIMEOUT", c.BodyTimeout}, {"WRITE_STALL_TIMEOUT", c.StallTimeout},
		{"IDLE_TIMEOUT", c.IdleTimeout}, {"SEGMENT_TIMEOUT", c.SegmentTimeout}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("%s=%q: use a positive duration such as 30s (every bound is required)", d.name, getenv(d.name)))
		}
	}
	if c.Engine == EngineCalibration && c.SegmentTimeout > 0 && c.CalibrationSegment >= c.SegmentTimeout {
		errs = append(errs, fmt.Errorf("CALIBRATION_SEGMENT_MS=%d is not below SEGMENT_TIMEOUT=%s: every segment would time out; raise SEGMENT_TIMEOUT or lower CALIBRATION_SEGMENT_MS",
			c.CalibrationSegment.Milliseconds(), c.SegmentTimeout))
	}
	if c.InstanceID == "" {
		c.InstanceID = "unknown"
	}
	c.ModelDir = filepath.Clean(c.ModelDir)
	return c, errors.Join(errs...)
}
