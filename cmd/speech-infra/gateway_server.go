package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
	"github.com/aws/smithy-go"
)

// speechInvoker is what the gateway calls on SageMaker Runtime; *sagemakerruntime.Client satisfies it.
type speechInvoker interface {
	InvokeEndpointWithResponseStream(ctx context.Context, in *sagemakerruntime.InvokeEndpointWithResponseStreamInput, optFns ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error)
	InvokeEndpoint(ctx context.Context, in *sagemakerruntime.InvokeEndpointInput, optFns ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointOutput, error)
}

// gatewayConfig configures a gateway handler.
type gatewayConfig struct {
	// model is the catalog id GET /v1/models lists; endpoint the SageMaker endpoint; where says what the SDK
	// points at, for error messages.
	model, endpoint, where string
	// key is the bearer key clients must send; nil accepts any (loopback only, Validate sees to it).
	key []byte
	// maxStreams bounds the upstream invocations in flight (speech streams and voice lists).
	maxStreams int
	// bodyTimeout bounds reading a speech request's body (0: gatewayBodyTimeout); writeStall bounds each
	// write of an answer (0: gatewayWriteStall).
	bodyTimeout, writeStall time.Duration
	// newClient makes a SageMaker Runtime client; the gateway keeps one per stream in flight.
	newClient func() speechInvoker
	// engine is the model's engine (models.Model.Engine): which voices OpenAI's voice names map to.
	engine string
	// describe reads the endpoint's status for /healthz, at most once per healthCache (0:
	// defaultGatewayHealthCache); nil answers /healthz 503.
	describe    endpointDescriber
	healthCache time.Duration
	// logf, when set, gets one line per failed request (the error as the client saw it, and its cause).
	logf func(format string, args ...any)
}

// gatewayBodyTimeout and gatewayWriteStall are the bounds of a gatewayConfig that sets none (the flags'
// defaults).
const (
	gatewayBodyTimeout = defaultGatewayBodyTimeout
	gatewayWriteStall  = defaultGatewayWriteStall
)

// gatewayDrainGrace is how long the rest of a body the gateway answered without reading may take to arrive
// before the connection is closed: an honest client's body is already on its way and is read to its end
// (closing with it unread would reset the connection under the answer), a stalled one is cut.
const gatewayDrainGrace = time.Second

// maxGatewayBody bounds a request body (the container's own MAX_BODY_BYTES default).
const maxGatewayBody = 1 << 20

// gateway serves OpenAI's speech API in front of a SageMaker endpoint. Bodies go to the container as they
// are (it takes OpenAI's request shape and validates it); audio comes back part by part as the event stream
// delivers it, flushed at once, never gathered.
type gateway struct {
	cfg      gatewayConfig
	keyHash  [32]byte
	free     chan speechInvoker
	slots    chan struct{}
	inflight atomic.Int64
	metrics  *gatewayMetrics
	probe    *healthProbe
}

func newGateway(cfg gatewayConfig) *gateway {
	if cfg.bodyTimeout <= 0 {
		cfg.bodyTimeout = gatewayBodyTimeout
	}
	if cfg.writeStall <= 0 {
		cfg.writeStall = gatewayWriteStall
	}
	if cfg.healthCache <= 0 {
		cfg.healthCache = defaultGatewayHealthCache
	}
	g := &gateway{cfg: cfg, free: make(chan speechInvoker, cfg.maxStreams), slots: make(chan struct{}, cfg.maxStreams)}
	g.metrics = newGatewayMetrics(func() float64 { return float64(g.inflight.Load()) })
	g.probe = &healthProbe{describe: cfg.describe, endpoint: cfg.endpoint, ttl: cfg.healthCache, timeout: gatewayProbeTimeout,
		deployFix: fmt.Sprintf("deploy it (`speech-infra deploy %s`, with --local for the emulator) or name the right one with the gateway's --endpoint", cfg.model),
		count:     func(result string) { g.metrics.probes.WithLabelValues(result).Inc() }, logf: cfg.logf}
	if cfg.key != nil {
		g.keyHash = sha256.Sum256(cfg.key)
	}
	return g
}

func (g *gateway) inFlight() int64 { return g.inflight.Load() }

// client takes an idle client or makes one; put gives it back once its stream has ended. No two streams in
// flight share a client (aws/smithy-go#714).
func (g *gateway) client() speechInvoker {
	select {
	case c := <-g.free:
		return c
	default:
		return g.cfg.newClient()
	}
}

func (g *gateway) put(c speechInvoker) {
	select {
	case g.free <- c:
	default:
	}
}

// openAIError is OpenAI's error body: {"error": {"message", "type", "param", "code"}}.
type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// failf writes an OpenAI error and logs it with its cause. The cause (SageMaker's message, the SDK's error
// with the endpoint's URL and socket addresses, the account) goes to the log only: the body names the
// failure and the fix.
func (g *gateway) failf(w http.ResponseWriter, r *http.Request, cause error, status int, typ, code, param, format string, args ...any) {
	if g.cfg.logf != nil {
		g.cfg.logf("gateway: %s %s from %s → %d %s (endpoint %s on %s): %v", r.Method, r.URL.Path, r.RemoteAddr, status, code, g.cfg.endpoint, g.cfg.where, cause)
	}
	g.writeError(w, status, typ, code, param, format, args...)
}

// writeError writes an OpenAI error, renewing the write deadline first.
func (g *gateway) writeError(w http.ResponseWriter, status int, typ, code, param, format string, args ...any) {
	e := openAIError{Message: fmt.Sprintf(format, args...), Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	w.Header().Set("Content-Type", "application/json")
	g.renewWrite(http.NewResponseController(w))
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]openAIError{"error": e})
}

// renewWrite gives the next write writeStall to complete: a client that stops reading holds the gateway no
// longer than that (http.ResponseController.SetWriteDeadline; a recorder, which has no deadline, is left
// as it is).
func (g *gateway) renewWrite(rc *http.ResponseController) {
	rc.SetWriteDeadline(time.Now().Add(g.cfg.writeStall))
}

// authorized checks the bearer key in constant time: both sides are hashed first, so neither the compare nor
// its length check depends on how much of the key a guess got right. The credentials are the auth-scheme,
// matched without regard to case, then one or more spaces and the token (RFC 9110 sections 11.1 and 11.4,
// formerly RFC 7235 section 2.1; the Bearer scheme: RFC 6750 section 2.1).
func (g *gateway) authorized(r *http.Request) bool {
	if g.cfg.key == nil {
		return true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	h := sha256.Sum256([]byte(strings.TrimLeft(token, " ")))
	return subtle.ConstantTimeCompare(h[:], g.keyHash[:]) == 1
}

// ServeHTTP routes the endpoints: OpenAI's (speech, voices, models), /healthz and /metrics. Every answer is
// counted for /metrics by route and status (speech answers also by format).
//
// A request with a body is answered with Connection: close unless the handler read the body to its end (the
// speech handler, which then removes it): the rest of a body answered early is read for at most
// gatewayDrainGrace, never without a deadline, and the connection is closed (RFC 9112 section 9.6). A
// request without one has nothing left to read: its read deadline is lifted, or net/http's background read,
// which watches for the client leaving, would cancel the request at the server's ReadTimeout.
func (g *gateway) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w := &statusRecorder{ResponseWriter: rw}
	rc := http.NewResponseController(w)
	ex := &exchange{bodyDone: r.ContentLength == 0, format: "unknown"}
	route := gatewayRoute(r.URL.Path)
	defer func() {
		status := w.status
		if status == 0 {
			status = http.StatusOK
		}
		g.metrics.observe(route, ex.format, status)
	}()
	if ex.bodyDone {
		rc.SetReadDeadline(time.Time{})
	} else {
		w.Header().Set("Connection", "close")
		defer func() {
			if !ex.bodyDone && !ex.bodyFailed {
				// net/http reads what is left of the body after the handler (to look for its end); the answer is
				// sent first, as the connection closes after it.
				rc.SetReadDeadline(time.Now().Add(gatewayDrainGrace))
			}
		}()
	}
	// /healthz takes no key: a load balancer's health check sends no header. It tells only the endpoint's
	// name and status, and however often it is asked, DescribeEndpoint runs at most once per --health-cache.
	if route != "/healthz" && !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="speech-infra gateway"`)
		g.writeError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "", "missing or wrong API key: send Authorization: Bearer <the key in the gateway's --api-key-env variable>")
		return
	}
	methods := map[string]string{"/v1/audio/speech": http.MethodPost, "/v1/audio/voices": http.MethodGet, "/v1/models": http.MethodGet,
		"/v1/models/{model}": http.MethodGet, "/healthz": http.MethodGet, "/metrics": http.MethodGet}
	method, ok := methods[route]
	switch {
	case !ok:
		g.writeError(w, http.StatusNotFound, "invalid_request_error", "not_found", "", "no route %s %s: this gateway serves POST /v1/audio/speech, GET /v1/audio/voices, GET /v1/models, GET /v1/models/{model}, GET /healthz and GET /metrics", r.Method, r.URL.Path)
	case r.Method != method:
		w.Header().Set("Allow", method)
		g.writeError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", "use %s %s", method, r.URL.Path)
	case route == "/v1/audio/speech":
		g.speech(w, r, rc, ex)
	case route == "/v1/audio/voices":
		g.voices(w, r, rc)
	case route == "/healthz":
		g.health(w, r, rc)
	case route == "/metrics":
		g.renewWrite(rc)
		g.metrics.handler().ServeHTTP(w, r)
	case route == "/v1/models/{model}" && strings.TrimPrefix(r.URL.Path, "/v1/models/") != g.cfg.model:
		g.writeError(w, http.StatusNotFound, "invalid_request_error", "model_not_found", "model", "the model %q does not exist here: this gateway serves %s", strings.TrimPrefix(r.URL.Path, "/v1/models/"), g.cfg.model)
	case route == "/v1/models/{model}":
		w.Header().Set("Content-Type", "application/json")
		g.renewWrite(rc)
		json.NewEncoder(w).Encode(g.modelObject())
	default:
		w.Header().Set("Content-Type", "application/json")
		g.renewWrite(rc)
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{g.modelObject()}})
	}
}

// modelObject is OpenAI's Model object for the gateway's model.
func (g *gateway) modelObject() map[string]any {
	return map[string]any{"id": g.cfg.model, "object": "model", "created": 0, "owned_by": "speech-infra"}
}

// exchange is what ServeHTTP needs to know of how a handler left the request body.
type exchange struct {
	// bodyDone: the body was read to its end (or there was none). bodyFailed: reading it failed (its
	// deadline passed, the client left): nothing more is read from the connection.
	bodyDone, bodyFailed bool
	// format is the response format a speech request asks for, for the metrics ("unknown" until its body is
	// read).
	format string
}

// acquire takes an invocation slot, or answers 429 and reports false.
func (g *gateway) acquire(w http.ResponseWriter) bool {
	select {
	case g.slots <- struct{}{}:
		g.inflight.Add(1)
		return true
	default:
		w.Header().Set("Retry-After", "1")
		g.writeError(w, http.StatusTooManyRequests, "rate_limit_error", "gateway_busy", "", "the gateway has %d requests in flight (--max-streams): retry shortly", g.cfg.maxStreams)
		return false
	}
}

func (g *gateway) release() {
	g.inflight.Add(-1)
	<-g.slots
}

func (g *gateway) speech(w http.ResponseWriter, r *http.Request, rc *http.ResponseController, ex *exchange) {
	if r.ContentLength > maxGatewayBody {
		g.writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large", "input", "the body is over %d bytes: send shorter input", maxGatewayBody)
		return
	}
	if !g.acquire(w) {
		return
	}
	defer g.release()
	// The body must arrive within bodyTimeout. The deadline is lifted only once the body is complete (or
	// net/http's background read, which watches for the client leaving, would cancel a stream that outlives
	// it); after a failed read it stays, so nothing waits on the client again.
	rc.SetReadDeadline(time.Now().Add(g.cfg.bodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxGatewayBody))
	if err != nil {
		ex.bodyFailed = true
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			g.writeError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large", "input", "the body is over %d bytes: send shorter input", maxGatewayBody)
		case errors.Is(err, os.ErrDeadlineExceeded):
			// 408, with the connection closed (RFC 9110 section 15.5.9).
			g.failf(w, r, err, http.StatusRequestTimeout, "invalid_request_error", "body_timeout", "", "the request body did not arrive within %s: send the whole body at once", g.cfg.bodyTimeout)
		default:
			g.failf(w, r, err, http.StatusBadRequest, "invalid_request_error", "body_unreadable", "", "the request body could not be read (cut short, or a malformed chunked encoding): send the whole body")
		}
		return
	}
	ex.bodyDone = true
	w.Header().Del("Connection")
	rc.SetReadDeadline(time.Time{})
	body, ex.format = openAIRequest(body, g.cfg.engine)

	// ctx ends the invocation when the client leaves (net/http cancels the request's context), when a write
	// to the client fails, and when the handler returns.
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	c := g.client()
	defer g.put(c)
	out, err := c.InvokeEndpointWithResponseStream(ctx, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String(g.cfg.endpoint),
		ContentType:  aws.String("application/json"),
		Accept:       aws.String("*/*"),
		Body:         body,
	})
	if err != nil {
		g.fail(w, r, err)
		return
	}
	stream := out.GetStream()
	defer stream.Close()
	ct := aws.ToString(out.ContentType)
	if ct == "" {
		ct = "application/octet-stream"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	for ev := range stream.Events() {
		part, ok := ev.(*rttypes.ResponseStreamMemberPayloadPart)
		if !ok || len(part.Value.Bytes) == 0 {
			continue
		}
		// Each chunk, the status line with the first, gets writeStall to reach the client's socket.
		g.renewWrite(rc)
		_, err := w.Write(part.Value.Bytes)
		if err == nil {
			err = rc.Flush()
		}
		if err != nil {
			// The client left or stopped reading: end the invocation now, and give the slot back.
			cancel()
			if errors.Is(err, os.ErrDeadlineExceeded) && g.cfg.logf != nil {
				g.cfg.logf("gateway: %s %s from %s: the client stopped reading: a write made no progress within %s (--write-stall-timeout): stream cut, upstream invocation cancelled", r.Method, r.URL.Path, r.RemoteAddr, g.cfg.writeStall)
			}
			return
		}
	}
	if err := stream.Err(); err != nil && r.Context().Err() == nil {
		// The status line is gone: cut the response so the client sees a truncated body, not a short clean one.
		if g.cfg.logf != nil {
			g.cfg.logf("gateway: %s %s from %s: the stream from endpoint %s on %s failed midway, response cut: %v", r.Method, r.URL.Path, r.RemoteAddr, g.cfg.endpoint, g.cfg.where, err)
		}
		panic(http.ErrAbortHandler)
	}
	// net/http writes the last chunk after the handler returns.
	g.renewWrite(rc)
}

// voices answers the container's voice list. The invocation holds a slot as a stream does: each holds an
// upstream connection, and the connection limit counts on --max-streams of them at most.
func (g *gateway) voices(w http.ResponseWriter, r *http.Request, rc *http.ResponseController) {
	if !g.acquire(w) {
		return
	}
	defer g.release()
	c := g.client()
	defer g.put(c)
	out, err := c.InvokeEndpoint(r.Context(), &sagemakerruntime.InvokeEndpointInput{
		EndpointName: aws.String(g.cfg.endpoint),
		ContentType:  aws.String("application/json"),
		Body:         []byte(`{"voices":true}`),
	})
	if err != nil {
		g.fail(w, r, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	g.renewWrite(rc)
	w.Write(out.Body)
}

// containerError is the container's error body (container/README.md, "Contract").
type containerError struct {
	Error   string `json:"error"`
	Field   string `json:"field"`
	Message string `json:"message"`
}

// fail maps an invocation error to OpenAI's error shape: the container's validation error to 400 naming the
// parameter, the queue shield's 503 to 429 with Retry-After, SageMaker throttling to 429, a container that is
// starting or draining to 503, an unreachable or missing endpoint to 502 with the fix. The container's own
// messages (its JSON error body, written for clients) pass through; SageMaker's and the SDK's stay in the log.
func (g *gateway) fail(w http.ResponseWriter, r *http.Request, err error) {
	if r.Context().Err() != nil {
		return // the client left
	}
	var me *rttypes.ModelError
	if errors.As(err, &me) {
		status := int(aws.ToInt32(me.OriginalStatusCode))
		var ce containerError
		json.Unmarshal([]byte(aws.ToString(me.OriginalMessage)), &ce)
		msg := ce.Message
		if msg == "" {
			msg = "no message"
		}
		switch {
		case status == http.StatusServiceUnavailable && ce.Error == "queue_saturated":
			w.Header().Set("Retry-After", "1")
			g.failf(w, r, err, http.StatusTooManyRequests, "rate_limit_error", "queue_saturated", "", "the endpoint %s is at its queue limit (the shield): retry shortly", g.cfg.endpoint)
		case status == http.StatusServiceUnavailable:
			w.Header().Set("Retry-After", "1")
			g.failf(w, r, err, http.StatusServiceUnavailable, "server_error", ce.Error, "", "the endpoint %s is not serving (%s): %s: retry shortly", g.cfg.endpoint, ce.Error, msg)
		case status == http.StatusRequestEntityTooLarge:
			g.failf(w, r, err, status, "invalid_request_error", ce.Error, "input", "%s", msg)
		case status >= 400 && status < 500:
			g.failf(w, r, err, http.StatusBadRequest, "invalid_request_error", ce.Error, ce.Field, "%s", msg)
		default:
			g.failf(w, r, err, http.StatusInternalServerError, "server_error", ce.Error, "", "the model container failed (%d): %s", status, msg)
		}
		return
	}
	var api smithy.APIError
	if errors.As(err, &api) {
		switch api.ErrorCode() {
		case "ThrottlingException":
			w.Header().Set("Retry-After", "1")
			g.failf(w, r, err, http.StatusTooManyRequests, "rate_limit_error", "throttled", "", "SageMaker throttled the invocation of %s: retry shortly", g.cfg.endpoint)
			return
		case "ValidationError", "ValidationException":
			g.failf(w, r, err, http.StatusBadGateway, "server_error", "endpoint_unavailable", "", "the endpoint %s refused the invocation: it does not exist or is not InService where the gateway points: deploy it (`speech-infra deploy %s`, with --local for the emulator) or name the right one with the gateway's --endpoint; the gateway's log has SageMaker's message", g.cfg.endpoint, g.cfg.model)
			return
		}
	}
	g.failf(w, r, err, http.StatusBadGateway, "server_error", "endpoint_unreachable", "", "the endpoint %s could not be reached: check that it is deployed and InService (`speech-infra local status` for the emulator) and that the gateway's --local/--region point where it runs; the gateway's log has the cause", g.cfg.endpoint)
}
