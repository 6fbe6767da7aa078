package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"math"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/cloud/awsenv"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

// Gateway defaults.
const (
	defaultGatewayPort           = 8000
	defaultGatewayListen         = "127.0.0.1"
	defaultGatewayStreams        = 1024
	defaultGatewayGrace          = 25 * time.Second
	defaultGatewayHeaderTimeout  = 10 * time.Second
	defaultGatewayBodyTimeout    = 10 * time.Second
	defaultGatewayWriteStall     = 5 * time.Second
	defaultGatewayIdleTimeout    = 60 * time.Second
	defaultGatewayConnsPerClient = 256
	// minGatewayKey is the shortest bearer key a non-loopback gateway takes.
	minGatewayKey = 16
	// gatewayFileReserve is what the connection limit leaves of the descriptor limit for the process's own
	// files: stdio, the poller, the listener, the AWS configuration's files, and a connection accepted only
	// to be closed.
	gatewayFileReserve = 32
	// gatewayLimitsCategory is the --help heading of the limits and timeouts.
	gatewayLimitsCategory = "Limits and timeouts"
)

func gatewayCommand() *cli.Command {
	return &cli.Command{
		Name:      "gateway",
		Usage:     "serve OpenAI's speech API (/v1/audio/speech) in front of the model's SageMaker endpoint",
		ArgsUsage: "<model>",
		Description: "An OpenAI-compatible server for an agent's host: POST /v1/audio/speech (streamed through\n" +
			"InvokeEndpointWithResponseStream as the bytes arrive), GET /v1/audio/voices, GET /v1/models and\n" +
			"/v1/models/{model}. As OpenAI does, a request without response_format gets mp3, pcm is 24 kHz 16-bit mono\n" +
			"little-endian, and OpenAI's voice names (alloy, echo, ...) speak with one of the model's voices.\n" +
			"GET /metrics: request counts by route, format and status (Prometheus text format; the key as for the\n" +
			"API). GET /healthz (no key): 200 while DescribeEndpoint finds the endpoint InService (or updating), else\n" +
			"503 with the reason; it asks at most once per --health-cache, however often it is called, so the\n" +
			"credentials also need sagemaker:DescribeEndpoint. It signs with the caller's AWS credentials (or the\n" +
			"emulator's with --local). It listens on loopback by default; any other --listen address needs\n" +
			"--api-key-env NAME, the variable holding the bearer key clients send (surrounding whitespace is\n" +
			"trimmed; the scheme Bearer is matched in any case).\n" +
			"SIGTERM or SIGINT stops accepting and lets the requests in flight finish (--shutdown-grace).\n" +
			"\n" +
			"No client can hold the gateway: headers must arrive within --read-header-timeout and a speech\n" +
			"request's body within --body-timeout (else 408, connection closed). An answer given before the body\n" +
			"was read (401, 404, 405, 413, 429) closes the connection once the rest of the body arrives, or after\n" +
			gatewayDrainGrace.String() + ". Each write of an answer must progress within --write-stall-timeout: a client that stops reading\n" +
			"has its stream cut, its upstream invocation cancelled and its --max-streams slot freed. Connections\n" +
			"over --max-conns, or over --max-conns-per-client from one IP address, are closed as soon as they are\n" +
			"accepted; --max-conns stays below the process's descriptor limit (ulimit -n, read at start). Error\n" +
			"bodies name the failure and the fix; the cause (SageMaker's message, addresses) goes to the log only.",
		Flags: append(awsenv.Flags(),
			&cli.IntFlag{Name: "port", Value: defaultGatewayPort, Usage: "TCP port to listen on"},
			&cli.StringFlag{Name: "listen", Value: defaultGatewayListen, Usage: "IP address to listen on; a non-loopback address needs --api-key-env"},
			&cli.StringFlag{Name: "api-key-env", Usage: "name of the environment variable holding the bearer key clients must send (Authorization: Bearer <key>); the key is trimmed of surrounding whitespace and must be printable ASCII without spaces"},
			&cli.StringFlag{Name: "endpoint", Usage: "SageMaker endpoint name (default: the model's, speech-<model>)"},
			&cli.DurationFlag{Name: "shutdown-grace", Value: defaultGatewayGrace, Usage: "how long requests in flight may finish after SIGTERM"},
			&cli.IntFlag{Name: "max-streams", Value: defaultGatewayStreams, Category: gatewayLimitsCategory,
				Usage: "upstream invocations in flight at most (speech streams and voice lists, each on one upstream connection); one more gets 429"},
			&cli.IntFlag{Name: "max-conns", Category: gatewayLimitsCategory, DefaultText: "ulimit -n less the reserve",
				Usage: "client connections open at once at most; one more is closed as soon as it is accepted. The default is also the most accepted: ulimit -n (read at start) less " + strconv.Itoa(gatewayFileReserve) + " for the process's own files, less one upstream connection for each connection that may be invoking the endpoint (--max-streams of them, or half of what is left if --max-streams is more)"},
			&cli.IntFlag{Name: "max-conns-per-client", Value: defaultGatewayConnsPerClient, Category: gatewayLimitsCategory,
				Usage: "client connections one IP address may have open at once; one more is closed as soon as it is accepted (every client on this host is the one address 127.0.0.1)"},
			&cli.DurationFlag{Name: "read-header-timeout", Value: defaultGatewayHeaderTimeout, Category: gatewayLimitsCategory,
				Usage: "how long a client may take to send a request's headers; a slower one is disconnected"},
			&cli.DurationFlag{Name: "body-timeout", Value: defaultGatewayBodyTimeout, Category: gatewayLimitsCategory,
				Usage: "how long a client may take to send a speech request's body; a slower one gets 408 and its connection is closed"},
			&cli.DurationFlag{Name: "write-stall-timeout", Value: defaultGatewayWriteStall, Category: gatewayLimitsCategory,
				Usage: "how long one write of an answer may wait on a client that does not read; a speech stream is then cut, its upstream invocation cancelled and its --max-streams slot freed"},
			&cli.DurationFlag{Name: "idle-timeout", Value: defaultGatewayIdleTimeout, Category: gatewayLimitsCategory,
				Usage: "how long a keep-alive connection may sit idle between requests before it is closed"},
			&cli.DurationFlag{Name: "health-cache", Value: defaultGatewayHealthCache, Category: gatewayLimitsCategory,
				Usage: "how long GET /healthz answers from the last DescribeEndpoint before it calls it again (one call at a time, each within " + gatewayProbeTimeout.String() + ", whatever the number of /healthz requests)"},
		),
		Action: func(c *cli.Context) error {
			cat, err := models.Default()
			if err != nil {
				return err
			}
			o := &gatewayOpts{
				args: c.Args().Slice(), catalog: cat, settings: awsenv.FromContext(c),
				port: c.Int("port"), listen: c.String("listen"), keyEnv: c.String("api-key-env"), endpoint: c.String("endpoint"),
				maxStreams: c.Int("max-streams"), grace: c.Duration("shutdown-grace"),
				maxConns: c.Int("max-conns"), maxConnsPerClient: c.Int("max-conns-per-client"),
				headerTimeout: c.Duration("read-header-timeout"), bodyTimeout: c.Duration("body-timeout"),
				writeStall: c.Duration("write-stall-timeout"), idleTimeout: c.Duration("idle-timeout"),
				healthCache: c.Duration("health-cache"),
				getenv:      os.Getenv, stderr: c.App.ErrWriter,
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Execute(c.Context)
		},
	}
}

// gatewayOpts is one speech-infra gateway: the command line, and what it runs with.
type gatewayOpts struct {
	args       []string
	catalog    models.Catalog
	settings   awsenv.Settings
	port       int
	listen     string
	keyEnv     string
	endpoint   string
	maxStreams int
	grace      time.Duration
	// maxConns bounds the client connections open at once (0: the most the descriptor limit allows, set by
	// Validate); maxConnsPerClient those from one IP address.
	maxConns, maxConnsPerClient int
	// headerTimeout, bodyTimeout, writeStall and idleTimeout are the server's bounds (the flags of the same
	// names).
	headerTimeout, bodyTimeout, writeStall, idleTimeout time.Duration
	// healthCache is how long /healthz keeps a DescribeEndpoint result (--health-cache).
	healthCache time.Duration
	getenv      func(string) string
	stderr      io.Writer
	// nofile, when set, replaces reading the process's descriptor limit (tests).
	nofile func() (uint64, error)

	// Set by Validate.
	model models.Model
	key   []byte
	// ready, when set, receives the listener's address once it is open (tests, the benchmark).
	ready func(addr string)
}

// Validate checks the command line and reports every problem at once as one usage error. A non-loopback
// --listen without a key is refused: the gateway signs with the caller's AWS credentials, so an open port
// would lend them to the network.
func (o *gatewayOpts) Validate() error {
	var errs []error
	m, err := catalogModel(o.catalog, "gateway", o.args)
	if err != nil {
		errs = append(errs, err)
	}
	o.model = m
	if o.endpoint == "" && err == nil {
		o.endpoint = m.EndpointName()
	}
	if o.port < 0 || o.port > 65535 {
		errs = append(errs, fmt.Errorf("--port %d is not a TCP port: use 1-65535 (0 picks a free one)", o.port))
	}
	if o.maxStreams < 1 {
		errs = append(errs, fmt.Errorf("--max-streams %d: use at least 1", o.maxStreams))
	}
	if o.grace < 0 {
		errs = append(errs, fmt.Errorf("--shutdown-grace %s: use a duration >= 0", o.grace))
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"read-header-timeout", o.headerTimeout}, {"body-timeout", o.bodyTimeout}, {"write-stall-timeout", o.writeStall}, {"idle-timeout", o.idleTimeout}, {"health-cache", o.healthCache}} {
		if d.v <= 0 {
			errs = append(errs, fmt.Errorf("--%s %s: use a duration > 0", d.flag, d.v))
		}
	}
	if o.maxConnsPerClient < 1 {
		errs = append(errs, fmt.Errorf("--max-conns-per-client %d: use at least 1", o.maxConnsPerClient))
	}
	if err := o.limitConns(); err != nil {
		errs = append(errs, err)
	}
	ip := net.ParseIP(o.listen)
	if ip == nil {
		errs = append(errs, fmt.Errorf("--listen %q is not an IP address: use 127.0.0.1 (the default), ::1, or an interface's address", o.listen))
	}
	if o.keyEnv != "" {
		// HTTP drops the whitespace around a field value (RFC 9110 section 5.5), so a key ending in a newline
		// could never match: the key is the variable's value trimmed.
		k := strings.TrimSpace(o.getenv(o.keyEnv))
		switch {
		case k == "":
			errs = append(errs, fmt.Errorf("--api-key-env %s: the variable is unset, empty or only whitespace: export %s=<a random key of %d characters or more>", o.keyEnv, o.keyEnv, minGatewayKey))
		case strings.IndexFunc(k, func(r rune) bool { return r <= ' ' || r > '~' }) >= 0:
			errs = append(errs, fmt.Errorf("--api-key-env %s: the key holds a space, a control character or a non-ASCII one, which a bearer token cannot carry (RFC 6750 section 2.1): use printable ASCII (e.g. openssl rand -hex 24)", o.keyEnv))
		case len(k) < minGatewayKey:
			errs = append(errs, fmt.Errorf("--api-key-env %s: the key has %d characters, fewer than %d: use a random key (e.g. openssl rand -hex 24)", o.keyEnv, len(k), minGatewayKey))
		default:
			o.key = []byte(k)
		}
	} else if ip != nil && !ip.IsLoopback() {
		errs = append(errs, fmt.Errorf("--listen %s is not a loopback address: refusing to serve the endpoint (signed with your AWS credentials) to the network without a key: add --api-key-env NAME with the key in $NAME, or listen on 127.0.0.1", o.listen))
	}
	errs = append(errs, o.settings.Validate()...)
	return exitcode.Usage(errors.Join(errs...))
}

// limitConns sets maxConns to the most the descriptor limit allows when it is 0, and refuses a larger one.
func (o *gatewayOpts) limitConns() error {
	if o.maxConns < 0 {
		return fmt.Errorf("--max-conns %d: use at least 1, or 0 for the most the descriptor limit allows", o.maxConns)
	}
	read := o.nofile
	if read == nil {
		read = nofileLimit
	}
	limit, err := read()
	if err != nil {
		return fmt.Errorf("--max-conns: the descriptor limit (RLIMIT_NOFILE) could not be read: %w", err)
	}
	ceiling := connCeiling(limit, o.maxStreams)
	switch {
	case ceiling < 1:
		return fmt.Errorf("the descriptor limit (ulimit -n) is %d: the gateway needs more than %d for its own files and one upstream connection per client connection: raise ulimit -n", limit, gatewayFileReserve+1)
	case o.maxConns == 0:
		o.maxConns = ceiling
	case o.maxConns > ceiling:
		return fmt.Errorf("--max-conns %d: the descriptor limit (ulimit -n) %d allows at most %d client connections with --max-streams %d (%d descriptors are kept for the process's own files, and one for each upstream connection): lower --max-conns (0 takes the most), lower --max-streams, or raise ulimit -n", o.maxConns, limit, ceiling, o.maxStreams, gatewayFileReserve)
	}
	return nil
}

// nofileLimit is the process's soft RLIMIT_NOFILE. The os package has already raised it to the hard limit
// (Go's os/rlimit.go does so at start on Unix), so this is what the process may open.
func nofileLimit() (uint64, error) {
	var rl syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &rl); err != nil {
		return 0, err
	}
	return rl.Cur, nil
}

// connCeiling is the most client connections a process with the descriptor limit nofile can hold: the limit
// less gatewayFileReserve, less one upstream connection for each client connection that may be invoking the
// endpoint. Each client connection carries one request at a time (HTTP/1.1), and every invocation, a speech
// stream or a voice list, holds a --max-streams slot, so at most min(connections, maxStreams) upstream
// connections are busy; the SDK's pool keeps idle no more than were once busy at the same time.
func connCeiling(nofile uint64, maxStreams int) int {
	if nofile > math.MaxInt32 {
		nofile = math.MaxInt32
	}
	avail := int(nofile) - gatewayFileReserve
	if maxStreams < avail/2 {
		return avail - maxStreams
	}
	return avail / 2
}

// Execute serves until ctx ends (SIGTERM, SIGINT), then lets the requests in flight finish within the grace.
func (o *gatewayOpts) Execute(ctx context.Context) error {
	cfg, err := o.settings.Config(ctx)
	if err != nil {
		return err
	}
	where := awsenv.Where(o.settings, cfg)
	logf := func(format string, args ...any) { fmt.Fprintf(o.stderr, format+"\n", args...) }
	g := newGateway(gatewayConfig{
		model: o.model.ID, endpoint: o.endpoint, where: where, key: o.key, maxStreams: o.maxStreams,
		bodyTimeout: o.bodyTimeout, writeStall: o.writeStall,
		logf: logf, engine: o.model.Engine, healthCache: o.healthCache,
		// One DescribeEndpoint per probe, no SDK retries: a failed probe is a 503 for one --health-cache.
		describe: sagemaker.NewFromConfig(cfg, func(o *sagemaker.Options) { o.RetryMaxAttempts = 1 }),
		newClient: func() speechInvoker {
			// One client per stream in flight (a client is reused only after its stream ended): a client's
			// event-stream decoder races when several streams are open on it (aws/smithy-go#714). No SDK
			// retries: the agent's own client retries (the OpenAI SDKs retry 429 and 5xx), and a retried
			// attempt here would hide a 503 behind seconds of back-off.
			return sagemakerruntime.NewFromConfig(cfg, func(o *sagemakerruntime.Options) { o.RetryMaxAttempts = 1 })
		},
	})
	ln, err := net.Listen("tcp", net.JoinHostPort(o.listen, strconv.Itoa(o.port)))
	if err != nil {
		return fmt.Errorf("gateway: listen on %s port %d: %w", o.listen, o.port, err)
	}
	ln = newConnLimiter(ln, o.maxConns, o.maxConnsPerClient, logf)
	// The server's own bounds (net/http.Server): headers within ReadHeaderTimeout; the whole request within
	// ReadTimeout, of which the speech handler gives the body --body-timeout by a read deadline of its own and
	// lifts it once the body is complete (http.ResponseController.SetReadDeadline), so a stream may outlive
	// it; each answer written within WriteTimeout, which the handlers renew before each write (a stream,
	// before each chunk); an idle keep-alive connection closed after IdleTimeout.
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: o.headerTimeout,
		ReadTimeout:       o.headerTimeout + o.bodyTimeout,
		WriteTimeout:      o.writeStall,
		IdleTimeout:       o.idleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(o.stderr, "gateway: ", 0),
	}
	auth := "no key (loopback only)"
	if o.key != nil {
		auth = "bearer key from $" + o.keyEnv
	}
	fmt.Fprintf(o.stderr, "gateway: serving http://%s/v1 (OpenAI speech API, %s) → endpoint %s on %s; at most %d connections, %d per client address\n", ln.Addr(), auth, o.endpoint, where, o.maxConns, o.maxConnsPerClient)
	if o.ready != nil {
		o.ready(ln.Addr().String())
	}
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	select {
	case err := <-serveErr:
		return fmt.Errorf("gateway: %w", err)
	case <-ctx.Done():
	}
	fmt.Fprintf(o.stderr, "gateway: stopping: letting %d request(s) in flight finish (grace %s)\n", g.inFlight(), o.grace)
	sctx, cancel := context.WithTimeout(context.Background(), o.grace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
		return fmt.Errorf("gateway: requests still in flight after --shutdown-grace %s were cut: %w", o.grace, err)
	}
	fmt.Fprintln(o.stderr, "gateway: stopped")
	return nil
}

// connLimiter is a listener that keeps at most max client connections open, and at most perClient from one
// IP address: a connection over either is closed as soon as it is accepted. Below the descriptor limit the
// process never fails to accept (accept4: too many open files) and runs out of nothing it needs for its
// upstream connections; no one address can take every place.
type connLimiter struct {
	net.Listener
	max, perClient int
	logf           func(format string, args ...any)

	mu       sync.Mutex
	open     int
	byClient map[string]int
	// refused counts the connections closed at once since the last log line, latest says why the latest
	// was; lastLog is that line's time; flushing says a line is due once a second has passed since it.
	refused  int
	latest   string
	lastLog  time.Time
	flushing bool
}

func newConnLimiter(ln net.Listener, max, perClient int, logf func(format string, args ...any)) *connLimiter {
	return &connLimiter{Listener: ln, max: max, perClient: perClient, logf: logf, byClient: map[string]int{}}
}

// Accept returns the next connection within the limits, closing every one over them on the way.
func (l *connLimiter) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		client := clientAddr(c.RemoteAddr())
		l.mu.Lock()
		var why string
		switch {
		case l.open >= l.max:
			why = fmt.Sprintf("%d connections open (--max-conns)", l.open)
		case l.byClient[client] >= l.perClient:
			why = fmt.Sprintf("%d connections open from %s (--max-conns-per-client)", l.byClient[client], client)
		default:
			l.open++
			l.byClient[client]++
			l.mu.Unlock()
			return &limitedConn{Conn: c, l: l, client: client}, nil
		}
		l.refused++
		l.latest = why
		l.logRefusals()
		l.mu.Unlock()
		c.Close()
	}
}

// logRefusals logs the connections closed at once: one line a second at most, however fast they come, and
// none left out (a line is due a second after the last). l.mu is held.
func (l *connLimiter) logRefusals() {
	if l.refused == 0 || l.logf == nil {
		return
	}
	if wait := time.Second - time.Since(l.lastLog); wait > 0 {
		if !l.flushing {
			l.flushing = true
			time.AfterFunc(wait, func() {
				l.mu.Lock()
				defer l.mu.Unlock()
				l.flushing = false
				l.logRefusals()
			})
		}
		return
	}
	l.logf("gateway: closed %d connection(s) as soon as they were accepted, the latest at %s", l.refused, l.latest)
	l.refused, l.lastLog = 0, time.Now()
}

func (l *connLimiter) release(client string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.open--
	if l.byClient[client]--; l.byClient[client] <= 0 {
		delete(l.byClient, client)
	}
}

// clientAddr is the IP address a connection comes from (its port left out).
func clientAddr(a net.Addr) string {
	if t, ok := a.(*net.TCPAddr); ok {
		return t.IP.String()
	}
	if h, _, err := net.SplitHostPort(a.String()); err == nil {
		return h
	}
	return a.String()
}

// limitedConn gives its place back once, when it is closed.
type limitedConn struct {
	net.Conn
	l      *connLimiter
	client string
	once   sync.Once
}

func (c *limitedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.client) })
	return err
}

// CloseWrite passes on the half-close net/http sends before closing a connection whose request body it left
// unread, so that the client reads the answer before the close resets the connection.
func (c *limitedConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}
