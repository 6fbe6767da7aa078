package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	"github.com/urfave/cli/v2"

	"github.com/speech-infra/speech-infra/internal/awsenv"
	"github.com/speech-infra/speech-infra/internal/exitcode"
	"github.com/speech-infra/speech-infra/models"
)

// Gateway defaults.
const (
	defaultGatewayPort    = 8000
	defaultGatewayListen  = "127.0.0.1"
	defaultGatewayStreams = 1024
	defaultGatewayGrace   = 25 * time.Second
	// minGatewayKey is the shortest bearer key a non-loopback gateway takes.
	minGatewayKey = 16
)

func gatewayCommand() *cli.Command {
	return &cli.Command{
		Name:      "gateway",
		Usage:     "serve OpenAI's speech API (/v1/audio/speech) in front of the model's SageMaker endpoint",
		ArgsUsage: "<model>",
		Description: "An OpenAI-compatible server for an agent's host: POST /v1/audio/speech (streamed through\n" +
			"InvokeEndpointWithResponseStream as the bytes arrive), GET /v1/audio/voices, GET /v1/models. It signs\n" +
			"with the caller's AWS credentials (or the emulator's with --local). It listens on loopback by default;\n" +
			"any other --listen address needs --api-key-env NAME, the variable holding the bearer key clients send.\n" +
			"SIGTERM or SIGINT stops accepting and lets the requests in flight finish (--shutdown-grace).",
		Flags: append(awsenv.Flags(),
			&cli.IntFlag{Name: "port", Value: defaultGatewayPort, Usage: "TCP port to listen on"},
			&cli.StringFlag{Name: "listen", Value: defaultGatewayListen, Usage: "IP address to listen on; a non-loopback address needs --api-key-env"},
			&cli.StringFlag{Name: "api-key-env", Usage: "name of the environment variable holding the bearer key clients must send (Authorization: Bearer <key>)"},
			&cli.StringFlag{Name: "endpoint", Usage: "SageMaker endpoint name (default: the model's, speech-<model>)"},
			&cli.IntFlag{Name: "max-streams", Value: defaultGatewayStreams, Usage: "speech requests in flight at most; one more gets 429"},
			&cli.DurationFlag{Name: "shutdown-grace", Value: defaultGatewayGrace, Usage: "how long requests in flight may finish after SIGTERM"},
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
				getenv: os.Getenv, stderr: c.App.ErrWriter,
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
	getenv     func(string) string
	stderr     io.Writer

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
	ip := net.ParseIP(o.listen)
	if ip == nil {
		errs = append(errs, fmt.Errorf("--listen %q is not an IP address: use 127.0.0.1 (the default), ::1, or an interface's address", o.listen))
	}
	if o.keyEnv != "" {
		k := o.getenv(o.keyEnv)
		switch {
		case k == "":
			errs = append(errs, fmt.Errorf("--api-key-env %s: the variable is unset or empty: export %s=<a random key of %d characters or more>", o.keyEnv, o.keyEnv, minGatewayKey))
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

// Execute serves until ctx ends (SIGTERM, SIGINT), then lets the requests in flight finish within the grace.
func (o *gatewayOpts) Execute(ctx context.Context) error {
	cfg, err := o.settings.Config(ctx)
	if err != nil {
		return err
	}
	where := awsenv.Where(o.settings, cfg)
	g := newGateway(gatewayConfig{
		model: o.model.ID, endpoint: o.endpoint, where: where, key: o.key, maxStreams: o.maxStreams,
		logf: func(format string, args ...any) { fmt.Fprintf(o.stderr, format+"\n", args...) },
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
	srv := &http.Server{
		Handler:           g,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
	}
	auth := "no key (loopback only)"
	if o.key != nil {
		auth = "bearer key from $" + o.keyEnv
	}
	fmt.Fprintf(o.stderr, "gateway: serving http://%s/v1 (OpenAI speech API, %s) → endpoint %s on %s\n", ln.Addr(), auth, o.endpoint, where)
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
