package emulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// readyWait bounds how long an invocation waits for a serving instance, e.g. while a restarted emulator brings
// its instances back.
const readyWait = 30 * time.Second

// pick returns the ready, non-draining instance of an endpoint with the fewest outstanding requests and counts
// the request against it; the caller must release it.
func (e *Emulator) pick(ctx context.Context, name string) (*instance, *endpointRec, *apiError) {
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
				if !in.ready.Load() || in.draining.Load() {
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

// record publishes the per-invocation metrics.
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

// maxPayload is SageMaker's limit on an invocation's request payload.
const maxPayload = 25 << 20

// containerClient talks to the instances; loopback only, so connections are kept generously.
var containerClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}}

// forward sends the invocation to the instance's /invocations. The request body is read in full first: a
// payload is small, and a container answering before it consumed the body must not tear the connection down
// under a half-written request.
func forward(ctx context.Context, r *http.Request, in *instance, accept string) (*http.Response, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxPayload))
	if err != nil {
		return nil, fmt.Errorf("read the request payload: %w", err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, fmt.Sprintf("http://127.0.0.1:%d/invocations", in.port), bytes.NewReader(body))
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

// invoke serves InvokeEndpoint (restJson1): the container's response body becomes the payload; a container
// error becomes ModelError with the original status and message.
func (e *Emulator) invoke(w http.ResponseWriter, r *http.Request, name string) {
	in, ep, apiErr := e.pick(r.Context(), name)
	if apiErr != nil {
		writeJSONError(w, apiErr)
		return
	}
	defer in.release()
	started := time.Now()
	resp, err := forward(r.Context(), r, in, r.Header.Get("Accept"))
	if err != nil {
		e.record(ep, started, 500)
		writeJSONError(w, modelError(ep, in, 500, err.Error()))
		return
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		e.record(ep, started, 500)
		writeJSONError(w, modelError(ep, in, 500, "reading the container response: "+err.Error()))
		return
	}
	e.record(ep, started, resp.StatusCode)
	if resp.StatusCode != http.StatusOK {
		writeJSONError(w, modelError(ep, in, resp.StatusCode, string(body)))
		return
	}
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.Header().Set("X-Amzn-Invoked-Production-Variant", ep.Variant)
	w.WriteHeader(http.StatusOK)
	w.Write(body)
}

func modelError(ep *endpointRec, in *instance, status int, msg string) *apiError {
	return &apiError{
		Code: "ModelError", Status: http.StatusFailedDependency,
		Message: fmt.Sprintf("Received server error (%d) from primary with message \"%s\". See %s in account %s for more information.",
			status, msg, logGroup(ep.Name), account),
		Extra: map[string]any{
			"OriginalStatusCode": status,
			"OriginalMessage":    msg,
			"LogStreamArn":       arn("logs", "log-group:"+logGroup(ep.Name)+":log-stream:"+in.stream),
		},
	}
}

// invokeStream serves InvokeEndpointWithResponseStream (restJson1 with an application/vnd.amazon.eventstream
// body): each chunk the container writes becomes a PayloadPart event as soon as it arrives; a container error,
// before or during the stream, becomes a ModelStreamError exception event.
func (e *Emulator) invokeStream(w http.ResponseWriter, r *http.Request, name string) {
	in, ep, apiErr := e.pick(r.Context(), name)
	if apiErr != nil {
		writeJSONError(w, apiErr)
		return
	}
	defer in.release()
	started := time.Now()
	resp, err := forward(r.Context(), r, in, r.Header.Get("X-Amzn-SageMaker-Accept"))
	status := http.StatusOK
	if err == nil {
		defer resp.Body.Close()
		status = resp.StatusCode
	}

	w.Header().Set("Content-Type", "application/vnd.amazon.eventstream")
	w.Header().Set("X-Amzn-Invoked-Production-Variant", ep.Variant)
	if err == nil && status == http.StatusOK {
		w.Header().Set("X-Amzn-SageMaker-Content-Type", resp.Header.Get("Content-Type"))
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
		e.record(ep, started, 500)
		exception("ModelStreamError", "the container did not answer: "+err.Error())
		return
	}
	if status != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		e.record(ep, started, status)
		exception(strconv.Itoa(status), fmt.Sprintf("Received error (%d) from the model container: %s", status, bytes.TrimSpace(body)))
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
				e.record(ep, started, 499)
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
			e.record(ep, started, 500)
			exception("ModelStreamError", "the model container stream broke: "+rerr.Error())
			return
		}
	}
}
