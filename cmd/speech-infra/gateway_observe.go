package main

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemaker"
	smtypes "github.com/aws/aws-sdk-go-v2/service/sagemaker/types"
	"github.com/aws/smithy-go"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Health probe defaults: a result is kept --health-cache before DescribeEndpoint is called again, and one
// call may take gatewayProbeTimeout.
const (
	defaultGatewayHealthCache = 5 * time.Second
	gatewayProbeTimeout       = 5 * time.Second
)

// endpointDescriber is what the health probe calls on the SageMaker control plane; *sagemaker.Client
// satisfies it.
type endpointDescriber interface {
	DescribeEndpoint(ctx context.Context, in *sagemaker.DescribeEndpointInput, optFns ...func(*sagemaker.Options)) (*sagemaker.DescribeEndpointOutput, error)
}

// gatewayMetrics are the counters GET /metrics shows, in a registry of the gateway's own (no process or Go
// runtime collectors: only what the gateway counts).
type gatewayMetrics struct {
	reg *prometheus.Registry
	// requests counts every answer by route and status; speech counts the speech answers by the format asked
	// for and status; probes counts the DescribeEndpoint calls of the health probe by their result.
	requests, speech, probes *prometheus.CounterVec
}

func newGatewayMetrics(inFlight func() float64) *gatewayMetrics {
	m := &gatewayMetrics{
		reg: prometheus.NewRegistry(),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "speech_infra_gateway_requests_total",
			Help: "HTTP requests answered, by route and status code.",
		}, []string{"route", "status"}),
		speech: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "speech_infra_gateway_speech_requests_total",
			Help: "POST /v1/audio/speech requests answered, by the response_format asked for (mp3 when none; unknown when the body was not read; other for a name outside OpenAI's and the container's) and status code.",
		}, []string{"format", "status"}),
		probes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "speech_infra_gateway_health_probes_total",
			Help: "DescribeEndpoint calls of the /healthz probe, by result (healthy, unhealthy, error).",
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.requests, m.speech, m.probes, prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "speech_infra_gateway_upstream_in_flight",
		Help: "Upstream invocations in flight (speech streams and voice lists), at most --max-streams.",
	}, inFlight))
	return m
}

// gatewayRoute is the route label of a path: the routes the gateway serves, and "other" for any other path,
// so that no client can grow the label set.
func gatewayRoute(path string) string {
	switch {
	case path == "/v1/audio/speech", path == "/v1/audio/voices", path == "/v1/models", path == "/healthz", path == "/metrics":
		return path
	case strings.HasPrefix(path, "/v1/models/"):
		return "/v1/models/{model}"
	}
	return "other"
}

func (m *gatewayMetrics) observe(route, format string, status int) {
	code := strconv.Itoa(status)
	m.requests.WithLabelValues(route, code).Inc()
	if route == "/v1/audio/speech" {
		m.speech.WithLabelValues(format, code).Inc()
	}
}

func (m *gatewayMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// statusRecorder keeps the status of the answer written through it; Unwrap lets http.ResponseController reach
// the connection's deadlines and Flush.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	if s.status == 0 {
		s.status = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusRecorder) Write(b []byte) (int, error) {
	if s.status == 0 {
		s.status = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusRecorder) Unwrap() http.ResponseWriter { return s.ResponseWriter }

// healthResult is what one DescribeEndpoint said of the endpoint.
type healthResult struct {
	healthy bool
	// status is the endpoint's EndpointStatus ("" when it does not exist or could not be read); reason says
	// why it is unhealthy, for the client: no account, address or SageMaker message.
	status, reason string
	at             time.Time
}

// healthProbe answers /healthz from DescribeEndpoint without letting a flood of /healthz reach the control
// plane: a result is kept for ttl; past it the next /healthz starts one probe, which every /healthz arriving
// meanwhile waits for; a probe takes at most timeout. So at most one DescribeEndpoint is in flight, and at
// most one starts per ttl, however many clients ask.
type healthProbe struct {
	describe     endpointDescriber
	endpoint     string
	ttl, timeout time.Duration
	// deployFix is what a 503 tells to do; count counts each call by its result; logf logs a failed one.
	deployFix string
	count     func(result string)
	logf      func(format string, args ...any)

	mu   sync.Mutex
	last *healthResult
	// running is closed when the probe in flight ends; nil when none is.
	running chan struct{}
}

// servingStatuses are the EndpointStatus values under which an endpoint takes invocations: InService, and
// the updates SageMaker makes while it keeps serving (an autoscaling change of the instance count is an
// Update; so are SageMaker's own maintenance updates).
var servingStatuses = map[smtypes.EndpointStatus]bool{
	smtypes.EndpointStatusInService: true, smtypes.EndpointStatusUpdating: true, smtypes.EndpointStatusSystemUpdating: true,
}

// check returns a result no older than ttl, probing once for all callers when there is none; a caller that
// leaves stops waiting (the probe goes on for the next).
func (p *healthProbe) check(ctx context.Context) (healthResult, bool) {
	p.mu.Lock()
	if p.last != nil && time.Since(p.last.at) < p.ttl {
		r := *p.last
		p.mu.Unlock()
		return r, true
	}
	if p.running == nil {
		p.running = make(chan struct{})
		go p.probe(p.running)
	}
	done := p.running
	p.mu.Unlock()
	select {
	case <-done:
	case <-ctx.Done():
		return healthResult{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return *p.last, true
}

func (p *healthProbe) probe(done chan struct{}) {
	ctx, cancel := context.WithTimeout(context.Background(), p.timeout)
	defer cancel()
	r := p.describeOnce(ctx)
	r.at = time.Now()
	p.mu.Lock()
	p.last, p.running = &r, nil
	p.mu.Unlock()
	close(done)
}

func (p *healthProbe) describeOnce(ctx context.Context) healthResult {
	if p.describe == nil {
		return healthResult{reason: "the gateway has no SageMaker control-plane client to read the endpoint's status with"}
	}
	out, err := p.describe.DescribeEndpoint(ctx, &sagemaker.DescribeEndpointInput{EndpointName: aws.String(p.endpoint)})
	if err != nil {
		var api smithy.APIError
		if errors.As(err, &api) && api.ErrorCode() == "ValidationException" && strings.Contains(api.ErrorMessage(), "Could not find") {
			p.count("unhealthy")
			return healthResult{reason: "the endpoint " + p.endpoint + " does not exist where the gateway points: " + p.deployFix}
		}
		p.count("error")
		if p.logf != nil {
			p.logf("gateway: /healthz: DescribeEndpoint %s failed: %v", p.endpoint, err)
		}
		return healthResult{reason: "the status of the endpoint " + p.endpoint + " could not be read (DescribeEndpoint failed: the gateway's credentials need sagemaker:DescribeEndpoint): the gateway's log has the cause"}
	}
	st := out.EndpointStatus
	if !servingStatuses[st] {
		p.count("unhealthy")
		return healthResult{status: string(st), reason: "the endpoint " + p.endpoint + " is " + string(st) + ", not InService: " + p.deployFix}
	}
	p.count("healthy")
	return healthResult{healthy: true, status: string(st)}
}

// health answers GET /healthz: 200 while the endpoint takes invocations, 503 with the reason otherwise.
func (g *gateway) health(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) {
	res, ok := g.probe.check(r.Context())
	if !ok {
		return // the client left
	}
	body := map[string]any{"endpoint": g.cfg.endpoint, "endpoint_status": nil, "checked_at": res.at.UTC().Format(time.RFC3339)}
	if res.status != "" {
		body["endpoint_status"] = res.status
	}
	status := http.StatusOK
	if res.healthy {
		body["status"] = "ok"
	} else {
		body["status"] = "unhealthy"
		body["reason"] = res.reason
		status = http.StatusServiceUnavailable
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	g.renewWrite(rc)
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
