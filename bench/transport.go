package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
)

// Transport names, as artifacts record them.
const (
	// TransportSageMakerStream is InvokeEndpointWithResponseStream through the SDK.
	TransportSageMakerStream = "sagemaker-stream"
	// TransportHTTP is a direct POST to a container's /invocations.
	TransportHTTP = "http"
)

// Transport sends the requests of a step. Worker is called once per worker before the step starts, so that a
// transport can give each worker a client of its own.
type Transport interface {
	// Name is the transport's name (TransportSageMakerStream or TransportHTTP).
	Name() string
	// Worker returns the Sender worker i uses for the whole step.
	Worker(i int) (Sender, error)
}

// Sender sends one request and reads its whole response stream. The StreamResult carries Sent, the audio
// arrivals (Chunks), FirstAudio, End and the stall, also alongside an error for what arrived before it.
type Sender interface {
	Send(ctx context.Context, text string) (StreamResult, error)
}

// requestBody is the container's request (container/README.md, "Contract"); wav is its default format.
func requestBody(text string) ([]byte, error) {
	return json.Marshal(struct {
		Text string `json:"text"`
	}{text})
}

// SageMakerStream sends each request with InvokeEndpointWithResponseStream (through InvokeStream).
//
// NewClient is called once per worker: an SDK client's event-stream decoder is shared by every stream the
// client has open and races when several are (aws/smithy-go#714), so workers must not share one.
type SageMakerStream struct {
	// Endpoint is the endpoint name.
	Endpoint string
	// NewClient returns a new client (e.g. sagemakerruntime.NewFromConfig) for one worker.
	NewClient func() StreamInvoker
	// CustomAttributes, when set, is sent with every request (InvokeEndpointWithResponseStream's
	// CustomAttributes, forwarded verbatim to the container): WithCustomAttributes sets it.
	CustomAttributes string
}

// Name returns TransportSageMakerStream.
func (s *SageMakerStream) Name() string { return TransportSageMakerStream }

// Worker returns a Sender over a client of its own.
func (s *SageMakerStream) Worker(int) (Sender, error) {
	if s.Endpoint == "" {
		return nil, errors.New("sagemaker-stream transport: no endpoint name: set SageMakerStream.Endpoint")
	}
	if s.NewClient == nil {
		return nil, errors.New("sagemaker-stream transport: no client factory: set SageMakerStream.NewClient")
	}
	c := s.NewClient()
	if c == nil {
		return nil, errors.New("sagemaker-stream transport: the client factory returned nil: return a *sagemakerruntime.Client")
	}
	return &smSender{endpoint: s.Endpoint, client: c, newClient: s.NewClient, attrs: s.CustomAttributes}, nil
}

type smSender struct {
	endpoint  string
	client    StreamInvoker
	newClient func() StreamInvoker
	attrs     string
}

// Send sends one request over the worker's client. A request that failed may have left its stream's reader
// running: ReadStream closes a stream it stops reading (the request's deadline, a malformed part), but the
// SDK's reader goroutine can still be inside the client's shared event-stream decoder when the next request
// starts one of its own (aws/smithy-go#714, the race the race detector caught in a qmax step past Q_max). So
// after a failure the worker takes a new client; a stream read to its end has ended its reader.
func (s *smSender) Send(ctx context.Context, text string) (StreamResult, error) {
	body, err := requestBody(text)
	if err != nil {
		return StreamResult{}, fmt.Errorf("encode the request: %w", err)
	}
	in := &sagemakerruntime.InvokeEndpointWithResponseStreamInput{
		EndpointName: aws.String(s.endpoint),
		ContentType:  aws.String("application/json"),
		Accept:       aws.String("audio/wav"),
		Body:         body,
	}
	if s.attrs != "" {
		in.CustomAttributes = aws.String(s.attrs)
	}
	res, err := InvokeStream(ctx, s.client, in, StreamOptions{Chunks: true})
	if err != nil && s.newClient != nil {
		if c := s.newClient(); c != nil {
			s.client = c
		}
	}
	return res, err
}

// ShieldAttribute is the custom attribute with which one request asks the container to admit it only within a
// queue depth of its own (container/README.md, "queue gate"): it can tighten the shield, never widen it.
const ShieldAttribute = "queue-max-depth"

// ShieldAttributes is the custom attributes of a request admitted within depth.
func ShieldAttributes(depth int) string { return fmt.Sprintf("%s=%d", ShieldAttribute, depth) }

// WithCustomAttributes returns a copy of t that sends attrs with every request as the request's custom
// attributes (SageMaker's CustomAttributes, X-Amzn-SageMaker-Custom-Attributes on the container's side); t is
// unchanged. It fails for a transport that cannot send them.
func WithCustomAttributes(t Transport, attrs string) (Transport, error) {
	switch t := t.(type) {
	case *SageMakerStream:
		c := *t
		c.CustomAttributes = attrs
		return &c, nil
	case *HTTP:
		c := *t
		c.CustomAttributes = attrs
		return &c, nil
	}
	return nil, fmt.Errorf("the %s transport cannot send custom attributes: use sagemaker-stream or http", t.Name())
}

// HTTP posts each request to a container's /invocations and reads the chunked WAV stream as it arrives.
// Workers share Client (net/http's transport is safe for concurrent use and keeps one connection per
// in-flight request alive).
type HTTP struct {
	// URL is the container's base URL, e.g. http://127.0.0.1:8080 (/invocations is appended).
	URL string
	// Client sends the requests; NewHTTP sets one that keeps enough idle connections for any step.
	Client *http.Client
	// CustomAttributes, when set, is sent with every request as X-Amzn-SageMaker-Custom-Attributes, the header
	// SageMaker forwards CustomAttributes in: WithCustomAttributes sets it.
	CustomAttributes string
}

// NewHTTP returns an HTTP transport for the container at baseURL with a client of its own whose idle
// connection pool holds a connection per worker (net/http keeps only 2 per host by default, and a closed loop
// that reconnects on every request measures the handshake, not the server).
func NewHTTP(baseURL string) *HTTP {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConns = 0
	tr.MaxIdleConnsPerHost = 4096
	tr.DisableCompression = true // audio does not compress; a gzip layer would hide chunk arrival times
	return &HTTP{URL: strings.TrimRight(baseURL, "/"), Client: &http.Client{Transport: tr}}
}

// Name returns TransportHTTP.
func (h *HTTP) Name() string { return TransportHTTP }

// Worker returns a Sender over the shared client.
func (h *HTTP) Worker(int) (Sender, error) {
	if !strings.HasPrefix(h.URL, "http://") && !strings.HasPrefix(h.URL, "https://") {
		return nil, fmt.Errorf("http transport: URL %q is not an http(s) URL: give the container's base URL, e.g. http://127.0.0.1:8080", h.URL)
	}
	if h.Client == nil {
		return nil, errors.New("http transport: no client: build the transport with NewHTTP")
	}
	return h, nil
}

// StatusError is a container's non-200 answer on the http transport.
type StatusError struct {
	// StatusCode is the HTTP status; Body the start of the answer (at most 4 KiB).
	StatusCode int
	Body       string
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("the container answered %d: %s", e.StatusCode, e.Body)
}

// ErrStreamBroken is returned (wrapped) when an http response stream ends before its chunked body does:
// the container cut it after audio had started (container/README.md, "engine failure").
var ErrStreamBroken = errors.New("the response stream was cut before its end")

// Send posts text and reads the response. TTFAB is measured from just before the request is handed to the
// client (http.Client.Do), as InvokeStream does for the SDK: on a kept-alive connection that is the write of
// the request; a new connection adds its dial to the first request, as it does for a real client.
func (h *HTTP) Send(ctx context.Context, text string) (StreamResult, error) {
	body, err := requestBody(text)
	if err != nil {
		return StreamResult{}, fmt.Errorf("encode the request: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, h.URL+"/invocations", bytes.NewReader(body))
	if err != nil {
		return StreamResult{}, fmt.Errorf("build the request to %s: %w", h.URL, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "audio/wav")
	if h.CustomAttributes != "" {
		req.Header.Set("X-Amzn-SageMaker-Custom-Attributes", h.CustomAttributes)
	}
	sent := time.Now()
	resp, err := h.Client.Do(req)
	if err != nil {
		return StreamResult{Sent: sent, End: time.Now()}, fmt.Errorf("POST %s/invocations: %w", h.URL, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		return StreamResult{Sent: sent, End: time.Now()}, fmt.Errorf("POST %s/invocations: %w", h.URL, &StatusError{StatusCode: resp.StatusCode, Body: strings.TrimSpace(string(msg))})
	}
	opts := StreamOptions{Chunks: true}
	if sr, err := strconv.Atoi(resp.Header.Get("X-Sample-Rate")); err == nil && sr > 0 {
		opts.PCMSampleRate = sr // only used when the stream turns out headerless
	}
	res, err := readBody(ctx, resp.Body, opts)
	res.Sent = sent
	if err != nil {
		return res, fmt.Errorf("POST %s/invocations: %w", h.URL, err)
	}
	return res, nil
}

// readBody folds an HTTP response body into a StreamResult, one arrival per Read.
func readBody(ctx context.Context, body io.Reader, opts StreamOptions) (StreamResult, error) {
	r := reader{opts: opts, now: time.Now}
	buf := make([]byte, 32<<10)
	for {
		n, err := body.Read(buf)
		if n > 0 {
			if aerr := r.add(buf[:n], r.now()); aerr != nil {
				r.res.End = r.now()
				return r.result(), aerr
			}
		}
		if err == nil {
			continue
		}
		r.res.End = r.now()
		if errors.Is(err, io.EOF) {
			if ferr := r.finish(); ferr != nil {
				return r.result(), ferr
			}
			return r.result(), nil
		}
		if ctx.Err() != nil {
			return r.result(), fmt.Errorf("read the response: %w", ctx.Err())
		}
		if errors.Is(err, io.ErrUnexpectedEOF) || isNetError(err) {
			return r.result(), fmt.Errorf("read the response: %w: %v", ErrStreamBroken, err)
		}
		return r.result(), fmt.Errorf("read the response: %w", err)
	}
}

// isNetError reports a network failure while reading the body (a reset connection): the stream was cut.
func isNetError(err error) bool {
	var ne *net.OpError
	return errors.As(err, &ne)
}

// Error classes of a record.
const (
	// ClassOK is a request that streamed its whole answer.
	ClassOK = "ok"
	// ClassShed is a request the container refused with 503 (queue_saturated, or not ready / draining): a
	// ModelError with OriginalStatusCode 503 on sagemaker-stream, a 503 StatusError on http.
	ClassShed = "shed"
	// ClassStreamBroken is a stream that failed after it started: a ModelStreamError, or a cut chunked body.
	ClassStreamBroken = "stream_broken"
	// ClassTimeout is a request that did not end within Config.RequestTimeout.
	ClassTimeout = "timeout"
	// ClassCanceled is a request cut because the run itself was canceled (SIGINT, the caller's context).
	ClassCanceled = "canceled"
	// ClassOther is any other failure (a 4xx/5xx answer, a refused connection, a stream that is not audio).
	ClassOther = "other"
)

// Classify returns the error class of a request's outcome, and the container's HTTP status when known (200
// for success, 0 when no answer came). runCtx is the context of the run (its end means canceled, not a
// timeout).
func Classify(runCtx context.Context, err error) (class string, status int) {
	if err == nil {
		return ClassOK, http.StatusOK
	}
	var me *ModelError
	var se *StatusError
	var mse *ModelStreamError
	switch {
	case errors.As(err, &mse):
		return ClassStreamBroken, http.StatusOK
	case errors.Is(err, ErrStreamBroken):
		return ClassStreamBroken, http.StatusOK
	case errors.As(err, &me):
		if me.OriginalStatusCode == http.StatusServiceUnavailable {
			return ClassShed, me.OriginalStatusCode
		}
		return ClassOther, me.OriginalStatusCode
	case errors.As(err, &se):
		if se.StatusCode == http.StatusServiceUnavailable {
			return ClassShed, se.StatusCode
		}
		return ClassOther, se.StatusCode
	case runCtx.Err() != nil:
		return ClassCanceled, 0
	case errors.Is(err, context.DeadlineExceeded):
		return ClassTimeout, 0
	}
	if st, ok := serviceStatus(err); ok {
		return ClassOther, st
	}
	return ClassOther, 0
}

// serviceStatus returns the HTTP status of an error SageMaker itself answered (ThrottlingException 400,
// ServiceUnavailable 503, InternalFailure 500, ...: not the container's answer, which is a ModelError): the
// request got an answer, from the service in front of the model.
func serviceStatus(err error) (int, bool) {
	var me *ModelError
	if errors.As(err, &me) {
		return 0, false
	}
	var re interface{ HTTPStatusCode() int }
	if errors.As(err, &re) && re.HTTPStatusCode() > 0 {
		return re.HTTPStatusCode(), true
	}
	return 0, false
}

// NoAnswer reports whether a request failed with no answer from the service or the model (refused, reset,
// unreachable), or with an answer SageMaker gave itself before reaching the model (throttling, unavailable):
// the closed loop pauses NoAnswerPause after one.
func NoAnswer(class string, status int, err error) bool {
	if class != ClassOther {
		return false
	}
	if status == 0 {
		return true
	}
	_, ok := serviceStatus(err)
	return ok
}
