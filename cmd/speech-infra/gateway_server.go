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
	// maxStreams bounds the speech requests in flight.
	maxStreams int
	// newClient makes a SageMaker Runtime client; the gateway keeps one per stream in flight.
	newClient func() speechInvoker
	// logf, when set, gets one line per failed request (the error as the client saw it, and its cause).
	logf func(format string, args ...any)
}

// gatewayBodyTimeout bounds reading a request body.
const gatewayBodyTimeout = 10 * time.Second

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
}

func newGateway(cfg gatewayConfig) *gateway {
	g := &gateway{cfg: cfg, free: make(chan speechInvoker, cfg.maxStreams), slots: make(chan struct{}, cfg.maxStreams)}
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

// failf writes an OpenAI error and logs it with its cause.
func (g *gateway) failf(w http.ResponseWriter, r *http.Request, cause error, status int, typ, code, param, format string, args ...any) {
	if g.cfg.logf != nil {
		g.cfg.logf("gateway: %s %s → %d %s: %v", r.Method, r.URL.Path, status, code, cause)
	}
	writeOpenAIError(w, status, typ, code, param, format, args...)
}

func writeOpenAIError(w http.ResponseWriter, status int, typ, code, param, format string, args ...any) {
	e := openAIError{Message: fmt.Sprintf(format, args...), Type: typ}
	if code != "" {
		e.Code = &code
	}
	if param != "" {
		e.Param = &param
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]openAIError{"error": e})
}

// authorized checks the bearer key in constant time: both sides are hashed first, so neither the compare nor
// its length check depends on how much of the key a guess got right.
func (g *gateway) authorized(r *http.Request) bool {
	if g.cfg.key == nil {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok {
		return false
	}
	h := sha256.Sum256([]byte(got))
	return subtle.ConstantTimeCompare(h[:], g.keyHash[:]) == 1
}

// ServeHTTP routes the three endpoints.
func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !g.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="speech-infra gateway"`)
		writeOpenAIError(w, http.StatusUnauthorized, "invalid_request_error", "invalid_api_key", "", "missing or wrong API key: send Authorization: Bearer <the key in the gateway's --api-key-env variable>")
		return
	}
	route := map[string]string{"/v1/audio/speech": http.MethodPost, "/v1/audio/voices": http.MethodGet, "/v1/models": http.MethodGet}
	method, ok := route[r.URL.Path]
	switch {
	case !ok:
		writeOpenAIError(w, http.StatusNotFound, "invalid_request_error", "not_found", "", "no route %s %s: this gateway serves POST /v1/audio/speech, GET /v1/audio/voices and GET /v1/models", r.Method, r.URL.Path)
	case r.Method != method:
		w.Header().Set("Allow", method)
		writeOpenAIError(w, http.StatusMethodNotAllowed, "invalid_request_error", "method_not_allowed", "", "use %s %s", method, r.URL.Path)
	case r.URL.Path == "/v1/audio/speech":
		g.speech(w, r)
	case r.URL.Path == "/v1/audio/voices":
		g.voices(w, r)
	default:
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []map[string]any{
			{"id": g.cfg.model, "object": "model", "created": 0, "owned_by": "speech-infra"},
		}})
	}
}

func (g *gateway) speech(w http.ResponseWriter, r *http.Request) {
	select {
	case g.slots <- struct{}{}:
		defer func() { <-g.slots }()
	default:
		w.Header().Set("Retry-After", "1")
		writeOpenAIError(w, http.StatusTooManyRequests, "rate_limit_error", "gateway_busy", "", "the gateway has %d requests in flight (--max-streams): retry shortly", g.cfg.maxStreams)
		return
	}
	g.inflight.Add(1)
	defer g.inflight.Add(-1)
	// The body must arrive within gatewayBodyTimeout; then the deadline is lifted, or net/http's background
	// read (which watches for the client leaving) would cancel a stream that outlives it.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(gatewayBodyTimeout))
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxGatewayBody))
	rc.SetReadDeadline(time.Time{})
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeOpenAIError(w, http.StatusRequestEntityTooLarge, "invalid_request_error", "body_too_large", "input", "the body is over %d bytes: send shorter input", maxGatewayBody)
			return
		}
		writeOpenAIError(w, http.StatusBadRequest, "invalid_request_error", "body_unreadable", "", "the body could not be read: %v", err)
		return
	}
	c := g.client()
	defer g.put(c)
	out, err := c.InvokeEndpointWithResponseStream(r.Context(), &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
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
		if _, err := w.Write(part.Value.Bytes); err != nil {
			return // the client left; closing the stream cancels the invocation
		}
		rc.Flush()
	}
	if err := stream.Err(); err != nil && r.Context().Err() == nil {
		// The status line is gone: cut the response so the client sees a truncated body, not a short clean one.
		panic(http.ErrAbortHandler)
	}
}

func (g *gateway) voices(w http.ResponseWriter, r *http.Request) {
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
// starting or draining to 503, an unreachable or missing endpoint to 502 with the fix.
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
			msg = aws.ToString(me.OriginalMessage)
		}
		switch {
		case status == http.StatusServiceUnavailable && ce.Error == "queue_saturated":
			w.Header().Set("Retry-After", "1")
			g.failf(w, r, err, http.StatusTooManyRequests, "rate_limit_error", "queue_saturated", "", "the endpoint %s is at its queue limit (the shield): retry shortly", g.cfg.endpoint)
		case status == http.StatusServiceUnavailable:
			w.Header().Set("Retry-After", "1")
			g.failf(w, r, err, http.StatusServiceUnavailable, "server_error", ce.Error, "", "the endpoint %s is not serving (%s): %s", g.cfg.endpoint, ce.Error, msg)
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
			g.failf(w, r, err, http.StatusTooManyRequests, "rate_limit_error", "throttled", "", "SageMaker throttled the invocation of %s: %s", g.cfg.endpoint, api.ErrorMessage())
			return
		case "ValidationError", "ValidationException":
			g.failf(w, r, err, http.StatusBadGateway, "server_error", "endpoint_unavailable", "", "the endpoint %s on %s refused the invocation: %s: deploy it (`speech-infra deploy %s`, with --local for the emulator) or name the right one with --endpoint", g.cfg.endpoint, g.cfg.where, api.ErrorMessage(), g.cfg.model)
			return
		}
	}
	g.failf(w, r, err, http.StatusBadGateway, "server_error", "endpoint_unreachable", "", "the endpoint %s on %s could not be reached: %v: check that it is deployed and InService (`speech-infra local status` for the emulator) and that the gateway's --local/--region point where it runs", g.cfg.endpoint, g.cfg.where, err)
}
