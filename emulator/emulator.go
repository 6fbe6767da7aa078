// Package emulator is a local emulator of the SageMaker inference subset speech-infra uses, speaking the AWS
// wire protocols so the aws-sdk-go-v2 clients (and the AWS CLI) talk to it unchanged: SageMaker (awsJson1_1),
// SageMaker Runtime (restJson1 with event-stream responses), Application Auto Scaling (awsJson1_1), CloudWatch
// (Smithy RPCv2 CBOR for the Go SDK, awsJson1_0 for botocore and the AWS CLI) and CloudWatch Logs
// (awsJson1_1), all on one URL.
//
// Endpoint instances are real container processes (the binary built from container/) on their own loopback
// ports. A router sends each request to the instance with the fewest outstanding requests and publishes
// ConcurrentRequestsPerModel; an autoscaler evaluates alarms and applies scaling policies with the Application
// Auto Scaling semantics. State lives in a directory on disk, guarded by a lock, so a second process sees what
// the first did and a restarted emulator restarts the instances it had.
package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/speech-infra/speech-infra/autoscale"
	"github.com/speech-infra/speech-infra/internal/atomicfile"
)

// DefaultPort is the loopback port the emulator listens on unless told otherwise.
const DefaultPort = 4599

// DefaultMetricPeriod is the resolution of the published metrics and the evaluation period of the autoscaler:
// SageMaker's high-resolution metrics are 10-second datapoints. An emulator with a time scale of 2 or more
// divides it by its CloudWatch compression (Options.TimeScale).
const DefaultMetricPeriod = autoscale.MetricPeriod

// ErrLocked says another emulator already serves the state directory.
var ErrLocked = errors.New("another emulator is already running on this state directory")

// Options configure an emulator.
type Options struct {
	// StateDir holds state.json, the lock, the log streams and the discovery file. Required.
	StateDir string
	// Addr is the listen address; DefaultPort on 127.0.0.1 when empty. Port 0 picks a free port.
	Addr string
	// ContainerBin is the inference container binary each instance runs (`<bin> serve`). Required to run
	// instances; control-plane operations work without it.
	ContainerBin string
	// MetricPeriod is the datapoint resolution and the autoscaler's evaluation period (when zero,
	// DefaultMetricPeriod ÷ the CloudWatch compression of TimeScale). Tests shorten it so scaling happens in
	// seconds.
	MetricPeriod time.Duration
	// Log receives the emulator's own diagnostics; io.Discard when nil.
	Log io.Writer
	// ReadTimeout bounds reading one request, headers and body (DefaultReadTimeout when zero). Responses have
	// no write timeout: a response stream lasts as long as the instance speaks.
	ReadTimeout time.Duration
	// InstanceQuota is how many instances of one instance type all endpoints together may run, the stand-in
	// for SageMaker's per-instance-type quota (DefaultInstanceQuota when zero). Asking for more is answered
	// with ResourceLimitExceeded.
	InstanceQuota int
	// HealthCheckInterval is how often each serving instance's /ping is checked (DefaultHealthCheckInterval
	// when zero). Tests shorten it so a hung instance is replaced in seconds.
	HealthCheckInterval time.Duration
	// Profile inserts named platform phases into every instance's start, so that instances take as long to
	// come up as on SageMaker (see Profile, BuiltinProfile); nil (the default) starts them as fast as their
	// process allows. When nil, $SPEECH_EMULATOR_PROFILE may name one (ParseProfile).
	Profile *Profile
	// TimeScale divides the profile's durations: 100 runs it a hundred times faster. When zero,
	// $SPEECH_EMULATOR_TIME_SCALE gives it, else 1. CloudWatch's and Application Auto Scaling's own durations
	// (the default metric period, the default cooldown) are divided by autoscale.Compression(TimeScale), at
	// most 10: this emulator's extension (docs/design.md, "Compressed CloudWatch time"). Requests are served
	// at real speed.
	TimeScale float64
	// Throttle sets the per-operation token buckets of the control plane (throttle.go). When nil,
	// $SPEECH_EMULATOR_THROTTLE gives it (ParseThrottle), else DefaultRates: throttling is on by default.
	Throttle *Throttle
	// Clock is the time the scheduler runs Application Auto Scaling scheduled actions by (scheduled.go): the
	// wall clock when nil. Tests set it to reach a schedule's instant without waiting for it.
	Clock func() time.Time
}

// DefaultReadTimeout bounds reading one request, headers and body: a client that sends part of a request and
// stalls loses its connection after it. The largest request, a 25 MB invocation payload, takes well under a
// second over loopback.
const DefaultReadTimeout = 30 * time.Second

// Header and idle bounds of the emulator's HTTP server.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 2 * time.Minute
)

// Emulator is one running emulator: a listener, the persisted state and the instance processes.
type Emulator struct {
	opts     Options
	log      *log.Logger
	lock     *os.File
	listener net.Listener
	server   *http.Server
	// creds is the access key every AWS request must name.
	creds Credentials
	// info is the identity the emulator publishes and answers at HealthPath.
	info Info

	mu     sync.Mutex
	st     *state
	fleets map[string]*fleet

	logs    *logStore
	metrics *metricStore

	wg   sync.WaitGroup
	done chan struct{}

	// requests counts the requests ServeHTTP received, health checks included (Requests).
	requests atomic.Int64
	// limiter throttles the control-plane operations (Options.Throttle).
	limiter *limiter
	// unprofiled holds the instance types without an instance-type profile the emulator has logged (once each).
	unprofiled sync.Map
}

// Requests is the number of HTTP requests the emulator has received, of every kind (AWS calls, invocations,
// health checks), since it opened: a test compares it before and after a command that must make no call.
func (e *Emulator) Requests() int64 { return e.requests.Load() }

// Open locks the state directory, loads the state and listens. It returns ErrLocked (wrapped) when another
// emulator holds the directory and a clear error when the port is taken. Call Run to serve.
func Open(opts Options) (*Emulator, error) {
	if opts.StateDir == "" {
		return nil, errors.New("emulator: no state directory given")
	}
	if opts.Addr == "" {
		opts.Addr = fmt.Sprintf("127.0.0.1:%d", DefaultPort)
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if err := profileFromEnv(&opts); err != nil {
		return nil, err
	}
	if opts.MetricPeriod <= 0 {
		opts.MetricPeriod = autoscale.Compress(DefaultMetricPeriod, autoscale.Compression(opts.TimeScale))
	}
	if err := throttleFromEnv(&opts); err != nil {
		return nil, err
	}
	// The state directory holds the access key: a new one is its owner's only.
	if err := os.MkdirAll(opts.StateDir, 0o700); err != nil {
		return nil, fmt.Errorf("create state directory: %w", err)
	}
	dir, err := canonicalDir(opts.StateDir)
	if err != nil {
		return nil, err
	}
	lock, err := acquireLock(opts.StateDir)
	if err != nil {
		return nil, err
	}
	creds, err := loadOrCreateCredentials(opts.StateDir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	st, err := loadState(opts.StateDir)
	if err != nil {
		lock.Close()
		return nil, err
	}
	logs, err := openLogStore(filepath.Join(opts.StateDir, "logs"))
	if err != nil {
		lock.Close()
		return nil, err
	}
	ln, err := net.Listen("tcp", opts.Addr)
	if err != nil {
		lock.Close()
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("emulator cannot listen on %s: the port is taken by another program; choose another with --port: %w", opts.Addr, err)
		}
		return nil, fmt.Errorf("emulator cannot listen on %s: %w", opts.Addr, err)
	}
	e := &Emulator{
		opts:     opts,
		log:      log.New(opts.Log, "emulator: ", log.LstdFlags|log.Lmicroseconds),
		lock:     lock,
		listener: ln,
		creds:    creds,
		st:       st,
		fleets:   map[string]*fleet{},
		logs:     logs,
		metrics:  newMetricStore(opts.MetricPeriod),
		done:     make(chan struct{}),
		limiter:  newLimiter(opts.Throttle),
	}
	e.info = Info{PID: os.Getpid(), URL: e.URL(), Instance: randomToken(26), StateDir: dir,
		TimeScale: opts.TimeScale, CloudWatchCompression: e.compression(), MetricPeriodS: opts.MetricPeriod.Seconds()}
	e.server = &http.Server{
		Handler:           e,
		ReadHeaderTimeout: min(readHeaderTimeout, opts.ReadTimeout),
		ReadTimeout:       opts.ReadTimeout,
		IdleTimeout:       idleTimeout,
		// No WriteTimeout: it would cut response streams, which last as long as the instance speaks.
	}
	return e, nil
}

// compression is the emulator's CloudWatch compression factor, autoscale.Compression of its time scale
// (docs/design.md, "Compressed CloudWatch time"): its default metric period, its default cooldown and the
// factor it publishes follow it. An explicit metric period changes the datapoints' resolution and the
// autoscaler's tick only (the tests' 1 s at time scale 1 is compression 1).
func (e *Emulator) compression() int { return autoscale.Compression(e.opts.TimeScale) }

// Credentials returns the access key the emulator accepts.
func (e *Emulator) Credentials() Credentials { return e.creds }

// Info returns the identity the emulator publishes.
func (e *Emulator) Info() Info { return e.info }

// acquireLock takes an exclusive, non-blocking flock on <dir>/emulator.lock. The kernel releases it when the
// process dies, so a crashed emulator never leaves a stale lock. Running probes the lock with a shared lock
// for an instant; a few retries within lockRetry ride over such a probe.
func acquireLock(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, "emulator.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open emulator lock: %w", err)
	}
	deadline := time.Now().Add(lockRetry)
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", dir, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, fmt.Errorf("%w (%s)", ErrLocked, dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// lockRetry is how long acquireLock retries a lock that another process holds.
const lockRetry = 100 * time.Millisecond

// publish writes the emulator's identity to the discovery file and into the lock file, the second place a
// client finds it when the first is damaged.
func (e *Emulator) publish(b []byte) error {
	if err := atomicfile.WriteFile(filepath.Join(e.opts.StateDir, InfoFile), b, 0o644); err != nil {
		return fmt.Errorf("publish emulator info: %w", err)
	}
	return e.publishLock(b)
}

// publishLock writes the identity into the lock file (which cannot be replaced by a rename: it holds the flock).
// It writes first and cuts the tail after, so a reader never finds the file empty while the identity is being
// written again (a client that read an empty lock file beside a damaged discovery file took a running emulator
// for one that does not answer).
func (e *Emulator) publishLock(b []byte) error {
	if _, err := e.lock.WriteAt(b, 0); err != nil {
		return fmt.Errorf("publish emulator info in the lock file: %w", err)
	}
	if err := e.lock.Truncate(int64(len(b))); err != nil {
		return fmt.Errorf("publish emulator info in the lock file: %w", err)
	}
	return nil
}

// republishLoop restores the discovery file and the lock file's copy when something damaged or replaced
// them while the emulator runs.
func (e *Emulator) republishLoop(b []byte) {
	t := time.NewTicker(republishPeriod)
	defer t.Stop()
	for {
		select {
		case <-e.done:
			return
		case <-t.C:
		}
		info, _ := readLimited(filepath.Join(e.opts.StateDir, InfoFile), int64(len(b))+1)
		lock := make([]byte, len(b)+1)
		n, _ := e.lock.ReadAt(lock, 0)
		// Each copy is written again only when it changed, so the intact one stays readable meanwhile.
		if !bytes.Equal(info, b) {
			e.log.Printf("the discovery file changed: writing it again")
			if err := atomicfile.WriteFile(filepath.Join(e.opts.StateDir, InfoFile), b, 0o644); err != nil {
				e.log.Printf("publish emulator info: %v", err)
			}
		}
		if !bytes.Equal(lock[:n], b) {
			e.log.Printf("the lock file's copy of the discovery file changed: writing it again")
			if err := e.publishLock(b); err != nil {
				e.log.Print(err)
			}
		}
	}
}

// republishPeriod is how often the emulator checks its discovery files.
const republishPeriod = time.Second

// URL is the base URL of the emulator, e.g. http://127.0.0.1:4599.
func (e *Emulator) URL() string { return "http://" + e.listener.Addr().String() }

// Run serves until ctx is done, then stops every instance process, releases the lock and returns. Endpoints
// found in the state are brought back to their instance count first.
func (e *Emulator) Run(ctx context.Context) error {
	// The lock is released last, once the discovery file is gone: a process that finds the lock free may start
	// the next emulator at once, and this one must not remove that emulator's discovery file.
	defer e.lock.Close()
	e.info.Started = time.Now().UTC()
	b, _ := json.Marshal(e.info)
	infoPath := filepath.Join(e.opts.StateDir, InfoFile)
	if err := e.publish(b); err != nil {
		e.listener.Close()
		return err
	}
	// The lock file's copy goes too: a stale identity there names a run that is over.
	defer e.lock.Truncate(0)
	defer os.Remove(infoPath)

	e.mu.Lock()
	for name := range e.st.Endpoints {
		e.fleetLocked(name)
	}
	e.mu.Unlock()

	e.wg.Add(4)
	go func() { defer e.wg.Done(); e.sampleLoop() }()
	go func() { defer e.wg.Done(); e.scaleLoop() }()
	go func() { defer e.wg.Done(); e.scheduleLoop() }()
	go func() { defer e.wg.Done(); e.republishLoop(b) }()

	serveErr := make(chan error, 1)
	go func() { serveErr <- e.server.Serve(e.listener) }()
	e.log.Printf("listening on %s, state in %s, access key id %s (in %s)", e.URL(), e.opts.StateDir, e.creds.AccessKeyID, filepath.Join(e.opts.StateDir, CredentialsFile))

	var err error
	select {
	case <-ctx.Done():
	case err = <-serveErr:
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	e.server.Shutdown(shutdownCtx)
	close(e.done)
	// The fleet loops finish first, so no instance is still being started (or its process handle written)
	// while every instance is stopped.
	e.wg.Wait()
	e.stopFleets()
	e.logs.close()
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

// service is one AWS service the emulator speaks over one protocol: its operations by name.
type service struct {
	name  string
	ops   map[string]operation
	proto protocol
}

// targetServices are the services addressed by X-Amz-Target <prefix>.<op> (the awsJson protocols), by prefix.
var targetServices = map[string]service{
	"SageMaker":                     {"SageMaker", sagemakerOps, awsJSON11},
	"AnyScaleFrontendService":       {"AnyScaleFrontendService", autoscalingOps, awsJSON11},
	"Logs_20140328":                 {"Logs_20140328", logsOps, awsJSON11},
	"GraniteServiceVersion20100801": {"GraniteServiceVersion20100801", cloudwatchOps, queryJSON10},
}

// cloudwatchCBOR is CloudWatch over rpcv2Cbor, at /service/GraniteServiceVersion20100801/operation/<op>.
var cloudwatchCBOR = service{"GraniteServiceVersion20100801", cloudwatchOps, rpcv2CBOR}

// serve runs the named operation, or answers UnknownOperationException in the service's protocol.
func (s service) serve(e *Emulator, w http.ResponseWriter, r *http.Request, op string) {
	if err := e.authorize(r); err != nil {
		s.proto.writeError(w, err)
		return
	}
	o, ok := s.ops[op]
	if !ok {
		s.proto.writeError(w, errorf("UnknownOperationException", http.StatusBadRequest, "the emulator does not implement %s.%s", s.name, op))
		return
	}
	if !e.limiter.allow(op) {
		s.proto.writeError(w, throttled(s.name))
		return
	}
	s.proto.serve(e, w, r, modelChecked(s.name, op, o))
}

// modelChecked is the operation o of the service, preceded by the service model's input validation
// (validateInput), as AWS's services check the model's constraints before anything else.
func modelChecked(service, op string, o operation) operation {
	return func(e *Emulator, dec decoder) (any, *apiError) {
		var raw any
		if err := dec(&raw); err != nil {
			return nil, err
		}
		if err := validateInput(service, op, raw); err != nil {
			return nil, err
		}
		return o(e, dec)
	}
}

// ServeHTTP routes a request to a service by its protocol markers: the X-Amz-Target header (awsJson1_0 and
// awsJson1_1), the /service/<service>/operation/<op> path (rpcv2Cbor) or the /endpoints/<name>/ path
// (restJson1). Every AWS request must carry a SigV4 Authorization header with the emulator's access key id;
// only HealthPath answers without one, and it tells who the emulator is, never its key. Every answer carries
// a request id (x-amzn-RequestId), as AWS's do.
func (e *Emulator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	e.requests.Add(1)
	setRequestID(w)
	if target := r.Header.Get("X-Amz-Target"); target != "" {
		prefix, op, _ := strings.Cut(target, ".")
		s, ok := targetServices[prefix]
		if !ok {
			if err := e.authorize(r); err != nil {
				writeJSONError(w, err)
				return
			}
			writeJSONError(w, errorf("UnknownOperationException", 400, "unknown service in X-Amz-Target %q", target))
			return
		}
		s.serve(e, w, r, op)
		return
	}
	if op, ok := strings.CutPrefix(r.URL.Path, "/service/"+cloudwatchCBOR.name+"/operation/"); ok {
		cloudwatchCBOR.serve(e, w, r, op)
		return
	}
	if r.URL.Path == HealthPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		writeJSON(w, e.info)
		return
	}
	if err := e.authorize(r); err != nil {
		writeJSONError(w, err)
		return
	}
	if rest, ok := strings.CutPrefix(r.URL.Path, "/endpoints/"); ok && r.Method == http.MethodPost {
		name, action, _ := strings.Cut(rest, "/")
		switch action {
		case "invocations":
			e.invoke(w, r, name)
			return
		case "invocations-response-stream":
			e.invokeStream(w, r, name)
			return
		}
	}
	writeJSONError(w, errorf("UnknownOperationException", 404, "the emulator does not implement %s %s", r.Method, r.URL.Path))
}

// saveLocked persists the state; e.mu must be held. A failed write is logged: the in-memory state stays
// authoritative and the next mutation tries again.
func (e *Emulator) saveLocked() {
	if err := e.st.save(e.opts.StateDir); err != nil {
		e.log.Print(err)
	}
}

func arn(service, resource string) string {
	return fmt.Sprintf("arn:aws:%s:%s:%s:%s", service, region, account, resource)
}
