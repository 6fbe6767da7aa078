package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// readyWait bounds how long an invocation waits for a serving instance, e.g. while a restarted emulator brings
// its instances back.
const readyWait = 30 * time.Second

// pick returns the ready, healthy, non-draining instance of an endpoint with the fewest outstanding requests,
// other than those in skip, and counts the request against it; the caller must release it.
func (e *Emulator) pick(ctx context.Context, name string, skip []*instance) (*instance, *endpointRec, *apiError) {
	deadline := time.Now().Add(readyWait)
	for {
		e.mu.Lock()
		ep := e.st.Endpoints[name]
		if ep == nil {
			e.mu.Unlock()
			return nil, nil, errorf("ValidationError", http.StatusBadRequest, "Endpoint %s of account %s not found.", name, account)
		}
		if ep.Status != statusInService && ep.Status != statusUpdating {
			e.mu.Unlock()
			return nil, nil, errorf("ValidationError", http.StatusBadRequest, "Endpoint %s is not in service (status %s).", name, ep.Status)
		}
		var best *instance
		if f := e.fleets[name]; f != nil {
			for _, in := range f.instances {
				if !in.ready.Load() || in.draining.Load() || in.unhealthy.Load() || slices.Contains(skip, in) {
					continue
				}
				if best == nil || in.outstanding.Load() < best.outstanding.Load() {
					best = in
				}
			}
		}
		if best != nil {
			best.acquire()
			rec := *ep
			e.mu.Unlock()
			return best, &rec, nil
		}
		e.mu.Unlock()
		if time.Now().After(deadline) {
			return nil, nil, errorf("ServiceUnavailable", http.StatusServiceUnavailable, "Endpoint %s has no instance ready to serve.", name)
		}
		select {
		case <-ctx.Done():
			return nil, nil, errorf("ServiceUnavailable", http.StatusServiceUnavailable, "request cancelled while waiting for an instance of %s", name)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// statusClientGone is record's status for an invocation whose client went away before the model answered it:
// an invocation, but neither a 4XX nor a 5XX. SageMaker's documentation defines those by the model's answer
// (https://docs.aws.amazon.com/sagemaker/latest/dg/monitoring-cloudwatch.html): Invocation5XXErrors is "The
// number of InvokeEndpoint requests where the model returned a 5xx HTTP response code. For each 5xx response, 1
// is sent; otherwise, 0 is sent.", and Invocation4XXErrors the same of a 4xx; a client that hangs up is neither.
// (A load generator that cancels its requests in flight when it stops, as tts-bench ttotal's probe does, would
// otherwise leave 5XX errors behind it, and a queue saturation alarm on them.)
const statusClientGone = 0

// clientGone reports whether the invocation's client went away (its request's context ended): what the
// emulator records then is statusClientGone, whatever the dispatch or the stream failed with after it.
func clientGone(r *http.Request) bool { return r.Context().Err() != nil }

// record publishes the per-invocation metrics: status is the model's HTTP status (500 when the model did not
// answer), or statusClientGone.
func (e *Emulator) record(ep *endpointRec, started time.Time, status int) {
	dims := endpointDims(ep.Name, ep.Variant)
	now := time.Now()
	e.metrics.add(namespaceSageMaker, metricInvocations, dims, now, 1)
	e.metrics.add(namespaceSageMaker, metricModelLatency, dims, now, float64(now.Sub(started).Microseconds()))
	five, four := 0.0, 0.0
	if status >= 500 {
		five = 1
	} else if status >= 400 {
		four = 1
	}
	e.metrics.add(namespaceSageMaker, metricInvocation5XX, dims, now, five)
	e.metrics.add(namespaceSageMaker, metricInvocation4XX, dims, now, four)
}

// maxErrorBody bounds how much of a container's error answer becomes a ModelError's OriginalMessage.
const maxErrorBody = 64 << 10

// maxPayload is SageMaker's limit on an invocation's request payload, the same for InvokeEndpoint and
// InvokeEndpointWithResponseStream: the Body of both is the service model's BodyBlob, at most 6291456 bytes.
const maxPayload = 6291456

// drainLimit bounds how much of an oversized payload is read (and dropped) before answering, so a client still
// writing its body reads the error rather than a reset; a larger body has its connection closed.
const drainLimit = 64 << 20

// Invocation timeouts. SageMaker gives a container 60 seconds to answer InvokeEndpoint; a model's
// SAGEMAKER_MODEL_SERVER_TIMEOUT (the catalog's invocation_timeout_s, 1 to 3600 seconds) shortens that, and
// bounds a response stream, which otherwise gets the same 60 seconds.
const (
	envInvocationTimeout   = "SAGEMAKER_MODEL_SERVER_TIMEOUT"
	invokeTimeoutLimit     = 60 * time.Second
	maxInvocationTimeoutS  = 3600
	defaultInvocationLimit = 60 * time.Second
)

// parseInvocationTimeout reads a SAGEMAKER_MODEL_SERVER_TIMEOUT value: whole seconds from 1 to 3600.
func parseInvocationTimeout(v string) (time.Duration, error) {
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxInvocationTimeoutS {
		return 0, fmt.Errorf("is %q: want whole seconds from 1 to %d", v, maxInvocationTimeoutS)
	}
	return time.Duration(n) * time.Second, nil
}

// invocationTimeout is how long one invocation of the endpoint may take: for InvokeEndpoint the whole
// response, for a stream the whole stream.
func invocationTimeout(ep *endpointRec, streaming bool) time.Duration {
	d := defaultInvocationLimit
	if ep.Model != nil {
		if v, ok := ep.Model.Container.Environment[envInvocationTimeout]; ok {
			if t, err := parseInvocationTimeout(v); err == nil {
				d = t
			}
		}
	}
	if !streaming {
		d = min(d, invokeTimeoutLimit)
	}
	return d
}

// validateRuntime checks a runtime invocation's endpoint name (from the path) and header members against the
// service model's input shape of op, as SageMaker Runtime does before anything else (for example a
// CustomAttributes header longer than 1,024 characters). The body's length is readPayload's.
func validateRuntime(op string, r *http.Request, name string) *apiError {
	m := serviceModels["SageMakerRuntime"]
	in := m.Shapes[m.Inputs[op]]
	v := map[string]any{"EndpointName": name, "Body": ""}
	for member, mm := range in.Members {
		if mm.Location != "header" {
			continue
		}
		if h, ok := r.Header[http.CanonicalHeaderKey(mm.LocationName)]; ok && len(h) > 0 {
			v[member] = h[0]
		}
	}
	return validateInput("SageMakerRuntime", op, v)
}

// readPayload reads the invocation's request payload in full, or answers ValidationError, as SageMaker does,
// when it is longer than maxPayload. Reading it first lets a request be sent again to another instance, and a
// container answering before it consumed the body cannot tear the connection down under a half-written request.
func readPayload(r *http.Request) ([]byte, *apiError) {
	tooLarge := func(n string) *apiError {
		io.Copy(io.Discard, io.LimitReader(r.Body, drainLimit))
		return errorf("ValidationError", http.StatusBadRequest,
			"1 validation error detected: Value at 'body' failed to satisfy constraint: Member must have length less than or equal to %d (the payload is %s bytes)", maxPayload, n)
	}
	if r.ContentLength > maxPayload {
		return nil, tooLarge(strconv.FormatInt(r.ContentLength, 10))
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload+1))
	if err != nil {
		return nil, errorf("ValidationError", http.StatusBadRequest, "could not read the request payload: %v", err)
	}
	if len(body) > maxPayload {
		return nil, tooLarge("more than " + strconv.Itoa(maxPayload))
	}
	return body, nil
}

// containerClient talks to the instances; loopback only, so connections are kept generously. It has no
// overall timeout: each invocation's context carries the endpoint's invocation timeout.
var containerClient = &http.Client{Transport: &http.Transport{
	MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second,
	DialContext: (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
}}

// maxAttempts bounds how many instances one invocation is offered to when connections are refused.
const maxAttempts = 3

// dispatched is an invocation posted to an instance: the instance (the caller releases it), its endpoint, the
// container's response or err, the instance's own failure, and the context carrying the invocation timeout
// (the caller releases it with cancel once the response is read).
type dispatched struct {
	in     *instance
	ep     *endpointRec
	resp   *http.Response
	err    error
	ctx    context.Context
	cancel context.CancelFunc
}

// dispatch picks an instance of the endpoint and posts the payload to its /invocations. When the connection to
// the instance cannot be made (the request provably never reached it, e.g. its process died), the instance is
// taken out of routing and the request goes to another one, up to maxAttempts instances; after any byte was
// sent it is never repeated. apiErr is an answer in AWS's shape, to write back at once (no instance is held).
func (e *Emulator) dispatch(r *http.Request, name string, body []byte, accept string, streaming bool) (*dispatched, *apiError) {
	var tried []*instance
	var ctx context.Context
	var cancel context.CancelFunc
	for {
		in, ep, apiErr := e.pick(r.Context(), name, tried)
		if apiErr != nil {
			if cancel != nil {
				cancel()
			}
			return nil, apiErr
		}
		if ctx == nil {
			ctx, cancel = context.WithTimeout(r.Context(), invocationTimeout(ep, streaming))
		}
		resp, err := post(ctx, r, in, body, accept)
		if err != nil && notDelivered(err) && len(tried)+1 < maxAttempts && ctx.Err() == nil {
			e.log.Printf("endpoint %s: instance %s refused the connection (%v); taking it out of routing and sending the request to another instance", name, in.id, err)
			in.unhealthy.Store(true)
			in.release()
			tried = append(tried, in)
			continue
		}
		return &dispatched{in: in, ep: ep, resp: resp, err: err, ctx: ctx, cancel: cancel}, nil
	}
}

// begin is what InvokeEndpoint and InvokeEndpointWithResponseStream do first: validate the request as op,
// read its payload and dispatch it (Accept from the header accept names). ok is false when an error was
// written back; otherwise the caller releases d.in and calls d.cancel.
func (e *Emulator) begin(w http.ResponseWriter, r *http.Request, op, name, accept string, streaming bool) (d *dispatched, started time.Time, ok bool) {
	if apiErr := validateRuntime(op, r, name); apiErr != nil {
		writeJSONError(w, apiErr)
		return nil, time.Time{}, false
	}
	payload, apiErr := readPayload(r)
	if apiErr != nil {
		writeJSONError(w, apiErr)
		return nil, time.Time{}, false
	}
	started = time.Now()
	d, apiErr = e.dispatch(r, name, payload, r.Header.Get(accept), streaming)
	if apiErr != nil {
		writeJSONError(w, apiErr)
		return nil, started, false
	}
	return d, started, true
}

// notDelivered reports whether a request failed before any of it reached the instance: the connection could
// not be made (refused, or no listener), so sending it again elsewhere cannot run it twice.
func notDelivered(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// post sends the payload to the instance's /invocations.
func post(ctx context.Context, r *http.Request, in *instance, body []byte, accept string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/invocations", in.port.Load()), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", r.Header.Get("Content-Type"))
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	if v := r.Header.Get("X-Amzn-SageMaker-Custom-Attributes"); v != "" {
		req.Header.Set("X-Amzn-SageMaker-Custom-Attributes", v)
	}
	return containerClient.Do(req)
}

// timedOut reports whether the invocation ended because its timeout passed (not because the client left).
func timedOut(ctx context.Context, r *http.Request) bool {
	return errors.Is(ctx.Err(), context.DeadlineExceeded) && r.Context().Err() == nil
}

// invoke serves InvokeEndpoint (restJson1): the container's response body becomes the payload; a container
// error becomes ModelError with the original status and message, and a container that does not answer within
// the invocation timeout a ModelError saying so, as SageMaker answers.
func (e *Emulator) invoke(w http.ResponseWriter, r *http.Request, name string) {
	d, started, ok := e.begin(w, r, "InvokeEndpoint", name, "Accept", false)
	if !ok {
		return
	}
	defer d.cancel()
	defer d.in.release()
	in, ep, resp, ctx, err := d.in, d.ep, d.resp, d.ctx, d.err
	var body []byte
	if err == nil {
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			err = fmt.Errorf("reading the container response: %w", err)
		}
	}
	if err != nil {
		if clientGone(r) {
			e.record(ep, started, statusClientGone)
			return
		}
		e.record(ep, started, 500)
		if timedOut(ctx, r) {
			writeJSONError(w, modelError(ep, in, 0, fmt.Sprintf("Your invocation timed out while waiting for a response from container primary after %s. Review the latency metrics for each container in Amazon CloudWatch, resolve the issue, and try again.", invocationTimeout(ep, false))))
			return
		}
		writeJSONError(w, modelError(ep, in, 500, err.Error()))
		return
	}
	e.record(ep, started, resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		writeJSONError(w, modelError(ep, in, resp.StatusCode, string(body)))
		return
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.Header().Set("X-Amzn-Invoked-Production-Variant", ep.Variant)
	passCustomAttributes(w, resp)
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

// passCustomAttributes passes the container's X-Amzn-SageMaker-Custom-Attributes back to the caller, as
// SageMaker Runtime does (InvokeEndpoint's and InvokeEndpointWithResponseStream's CustomAttributes output
// member): the container names its instance there (instance-id=…), which is how tts-bench ttotal sees a new
// instance serve.
func passCustomAttributes(w http.ResponseWriter, resp *http.Response) {
	if v := resp.Header.Get("X-Amzn-SageMaker-Custom-Attributes"); v != "" {
		w.Header().Set("X-Amzn-SageMaker-Custom-Attributes", v)
	}
}

// modelError is SageMaker's ModelError (HTTP 424) for a container that answered status with msg (status 0: it
// did not answer in time). The message has the form SageMaker's has: "Received client error (400) from primary
// with message "...". See <the log group in the CloudWatch console> in account <account> for more information."
// (client for a 4xx, server otherwise).
func modelError(ep *endpointRec, in *instance, status int, msg string) *apiError {
	kind := "server"
	if status >= 400 && status < 500 {
		kind = "client"
	}
	msgText := fmt.Sprintf("Received %s error (%d) from primary with message \"%s\". See https://%s.console.aws.amazon.com/cloudwatch/home?region=%s#logEventViewer:group=%s in account %s for more information.",
		kind, status, msg, region, region, logGroup(ep.Name), account)
	return &apiError{
		Code: "ModelError", Status: http.StatusFailedDependency, Message: msgText,
		// The shape's members by their modeled names; Message too, which botocore reads only so.
		Extra: map[string]any{
			"Message":            msgText,
			"OriginalStatusCode": status,
			"OriginalMessage":    msg,
			"LogStreamArn":       arn("logs", "log-group:"+logGroup(ep.Name)+":log-stream:"+in.stream),
		},
	}
}

// invokeStream serves InvokeEndpointWithResponseStream (restJson1 with an application/vnd.amazon.eventstream
// body): each chunk the container writes becomes a PayloadPart event as soon as it arrives. A container that
// answers an error status before streaming (a 400, the queue gate's 503 queue_saturated) is answered as
// SageMaker does, with ModelError (HTTP 424, OriginalStatusCode, OriginalMessage, LogStreamArn) and no stream;
// once streaming, a failure becomes a ModelStreamError exception event with one of its two codes,
// ModelInvocationTimeExceeded (the invocation timeout passed) or StreamBroken (the connection to the container
// broke or could not be made). qmax tells a shed request (ModelError 503) from a broken stream this way.
func (e *Emulator) invokeStream(w http.ResponseWriter, r *http.Request, name string) {
	d, started, ok := e.begin(w, r, "InvokeEndpointWithResponseStream", name, "X-Amzn-SageMaker-Accept", true)
	if !ok {
		return
	}
	defer d.cancel()
	defer d.in.release()
	in, ep, resp, ctx, err := d.in, d.ep, d.resp, d.ctx, d.err
	timeoutMsg := fmt.Sprintf("Your model primary did not complete sending the inference response in the allotted time (%s).", invocationTimeout(ep, true))
	if err == nil {
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			// The container refused before streaming: ModelError, as InvokeEndpoint answers.
			body, rerr := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
			e.record(ep, started, resp.StatusCode)
			if rerr != nil && len(body) == 0 {
				body = []byte(rerr.Error())
			}
			writeJSONError(w, modelError(ep, in, resp.StatusCode, string(bytes.TrimSpace(body))))
			return
		}
	}

	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Invoked-Production-Variant", ep.Variant)
	if err == nil {
		w.Header().Set("X-Amzn-SageMaker-Content-Type", resp.Header.Get("Content-Type"))
		passCustomAttributes(w, resp)
	}
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	enc := eventstream.NewEncoder()
	exception := func(code, msg string) {
		payload, _ := json.Marshal(map[string]string{"Message": msg, "ErrorCode": code})
		var m eventstream.Message
		m.Headers.Set(":message-type", eventstream.StringValue("exception"))
		m.Headers.Set(":exception-type", eventstream.StringValue("ModelStreamError"))
		m.Headers.Set(":content-type", eventstream.StringValue("application/json"))
		m.Payload = payload
		enc.Encode(w, m)
		if flusher != nil {
			flusher.Flush()
		}
	}
	if err != nil {
		if clientGone(r) {
			e.record(ep, started, statusClientGone)
			return
		}
		e.record(ep, started, 500)
		if timedOut(ctx, r) {
			exception("ModelInvocationTimeExceeded", timeoutMsg)
			return
		}
		exception("StreamBroken", "the container did not answer: "+err.Error())
		return
	}
	buf := make([]byte, 32<<10)
	for {
		n, rerr := resp.Body.Read(buf)
		if n > 0 {
			var m eventstream.Message
			m.Headers.Set(":message-type", eventstream.StringValue("event"))
			m.Headers.Set(":event-type", eventstream.StringValue("PayloadPart"))
			m.Headers.Set(":content-type", eventstream.StringValue("application/octet-stream"))
			m.Payload = append([]byte(nil), buf[:n]...)
			if err := enc.Encode(w, m); err != nil {
				// The client went away; stop reading from the container too.
				e.record(ep, started, statusClientGone)
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
		}
		if rerr == io.EOF {
			e.record(ep, started, http.StatusOK)
			return
		}
		if rerr != nil {
			if clientGone(r) {
				e.record(ep, started, statusClientGone)
				return
			}
			e.record(ep, started, 500)
			if timedOut(ctx, r) {
				exception("ModelInvocationTimeExceeded", timeoutMsg)
				return
			}
			exception("StreamBroken", "the model container stream broke: "+rerr.Error())
			return
		}
	}
}
