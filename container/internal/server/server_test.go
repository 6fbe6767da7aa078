package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/audio"
	"github.com/speech-infra/speech-infra/container/internal/engine"
	"github.com/speech-infra/speech-infra/container/internal/segment"
)

// recorder wraps a real engine, records the segments it is asked for in
// order, and (while hold is open) keeps every call waiting so tests can line
// requests up deterministically.
type recorder struct {
	engine.Engine
	mu   sync.Mutex
	seen []string
	hold chan struct{}
}

func newRecorder(inner engine.Engine, held bool) *recorder {
	r := &recorder{Engine: inner}
	if held {
		r.hold = make(chan struct{})
	} else {
		r.hold = closedChan()
	}
	return r
}

func closedChan() chan struct{} { c := make(chan struct{}); close(c); return c }

func (r *recorder) release() { close(r.hold) }

func (r *recorder) Synthesize(ctx context.Context, seg engine.Segment, emit engine.Emit) error {
	r.mu.Lock()
	r.seen = append(r.seen, seg.Text)
	r.mu.Unlock()
	select {
	case <-r.hold:
	case <-ctx.Done():
		return ctx.Err()
	}
	return r.Engine.Synthesize(ctx, seg, emit)
}

func (r *recorder) order() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seen)
}

// syncBuffer is a bytes.Buffer safe for the server's log writes and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func defaultOptions() Options {
	return Options{InstanceID: "test-instance", Workers: 1, Scheduler: FirstChunk, MaxTextChars: 5000, MaxBodyBytes: 1 << 20}
}

func startServer(t testing.TB, opts Options, eng engine.Engine) (*Server, *httptest.Server, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	s := New(opts, logs)
	if err := s.Attach(eng); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ts.Close()
		s.Close()
	})
	return s, ts, logs
}

type response struct {
	status int
	header http.Header
	body   []byte
	err    error
}

func post(ctx context.Context, url, body string) response {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/invocations", strings.NewReader(body))
	if err != nil {
		return response{err: err}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b, err: err}
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func TestGateExactUnderConcurrency(t *testing.T) {
	const n, k = 12, 5
	rec := newRecorder(&engine.Calibration{}, true)
	opts := defaultOptions()
	opts.QueueMaxDepth, opts.Workers = n, 4
	s, ts, _ := startServer(t, opts, rec)

	results := make(chan response, n+k)
	var wg sync.WaitGroup
	for i := range n + k {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results <- post(context.Background(), ts.URL, fmt.Sprintf(`{"text":"request %d."}`, i))
		}()
	}
	// Every admitted request waits on the engine, so the k rejections must
	// have been answered before anything completes.
	rejected := 0
	for rejected < k {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.status != http.StatusServiceUnavailable {
			t.Fatalf("got status %d before release, want only 503s: %s", r.status, r.body)
		}
		want := fmt.Sprintf(`{"error":"queue_saturated","queue_depth":%d,"max_queue_depth":%d}`, n, n)
		if strings.TrimSpace(string(r.body)) != want {
			t.Errorf("503 body = %s, want %s", r.body, want)
		}
		rejected++
	}
	if d := s.Gate().Depth(); d != n {
		t.Fatalf("gate depth = %d, want %d", d, n)
	}
	rec.release()
	wg.Wait()
	close(results)
	ok := 0
	for r := range results {
		if r.status != http.StatusOK {
			t.Errorf("admitted request got %d: %s", r.status, r.body)
			continue
		}
		if len(r.body) <= audio.WAVHeaderSize {
			t.Errorf("admitted request got only %d bytes", len(r.body))
		}
		ok++
	}
	if ok != n {
		t.Errorf("%d requests completed, want %d", ok, n)
	}
	if d := s.Gate().Depth(); d != 0 {
		t.Errorf("gate depth after all finished = %d, want 0", d)
	}
}

// segmentsOf returns texts r<i> s<j>. for a request with segs segments.
func requestText(i, segs int) string {
	var parts []string
	for j := range segs {
		parts = append(parts, fmt.Sprintf("r%d s%d.", i, j))
	}
	return strings.Join(parts, " ")
}

// lineUp sends m requests of segs segments one after another, each admitted
// before the next is sent, while the engine holds the first segment.
func lineUp(t *testing.T, policy string, m, segs int) []string {
	opts := defaultOptions()
	opts.Scheduler = policy
	return lineUpWith(t, opts, m, segs)
}

// lineUpWith is lineUp with the server's options.
func lineUpWith(t *testing.T, opts Options, m, segs int) []string {
	rec := newRecorder(&engine.Calibration{}, true)
	s, ts, _ := startServer(t, opts, rec)
	var wg sync.WaitGroup
	for i := range m {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := post(context.Background(), ts.URL, fmt.Sprintf(`{"text":%q}`, requestText(i, segs)))
			if r.err != nil || r.status != 200 {
				t.Errorf("request %d: %v %d %s", i, r.err, r.status, r.body)
			}
		}()
		// Wait until the scheduler holds request i before sending i+1: the gate admits before the handler
		// submits, so waiting on the gate's depth alone lets a later request overtake under load.
		waitFor(t, fmt.Sprintf("request %d submitted", i), func() bool { return s.be.Load().sched.submitted.Load() == int64(i+1) })
	}
	rec.release()
	wg.Wait()
	return rec.order()
}

func TestFirstChunkServesEveryFirstSegmentFirst(t *testing.T) {
	const m, segs = 5, 3
	order := lineUp(t, FirstChunk, m, segs)
	if len(order) != m*segs {
		t.Fatalf("engine saw %d segments, want %d: %q", len(order), m*segs, order)
	}
	lastFirst, firstLater := -1, len(order)
	for i, s := range order {
		if strings.HasSuffix(s, "s0.") {
			lastFirst = i
		} else if i < firstLater {
			firstLater = i
		}
	}
	if lastFirst > firstLater {
		t.Errorf("a continuation segment ran before a waiting first segment: %q", order)
	}
	// Each request's own segments still run in order.
	for i := range m {
		prev := -1
		for j := range segs {
			at := slices.Index(order, fmt.Sprintf("r%d s%d.", i, j))
			if at < prev {
				t.Errorf("request %d segment %d ran out of order: %q", i, j, order)
			}
			prev = at
		}
	}
}

func TestFIFORunsWholeRequestsInArrivalOrder(t *testing.T) {
	const m, segs = 4, 3
	order := lineUp(t, FIFO, m, segs)
	var want []string
	for i := range m {
		for j := range segs {
			want = append(want, fmt.Sprintf("r%d s%d.", i, j))
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("fifo order = %q, want %q", order, want)
	}
}

// TestDeadlineOverHTTPFinishesStreamsBeforeDistantFirsts: with a first-audio
// target of an hour, every new request is due far later than any
// continuation (due within its first segment's audio), so the deadline
// policy runs each started request to its end before the next first
// segment: the fifo order, reached by deadlines.
func TestDeadlineOverHTTPFinishesStreamsBeforeDistantFirsts(t *testing.T) {
	const m, segs = 4, 3
	opts := defaultOptions()
	opts.Scheduler, opts.FirstAudioTarget = Deadline, time.Hour
	order := lineUpWith(t, opts, m, segs)
	var want []string
	for i := range m {
		for j := range segs {
			want = append(want, fmt.Sprintf("r%d s%d.", i, j))
		}
	}
	if !slices.Equal(order, want) {
		t.Errorf("deadline order with distant first deadlines = %q, want %q", order, want)
	}
}

// TestDeadlineShortensFirstSegmentAndLogsStall: under the deadline policy a
// long first sentence is cut near segment.FirstTargetRunes (the log counts
// one more segment than under first-chunk), the audio is the same, and the
// request log carries the server-side stall.
func TestDeadlineShortensFirstSegmentAndLogsStall(t *testing.T) {
	text := `{"text":"Please hold while I transfer your call to the billing department. Thank you."}`
	type logged struct {
		Segments int      `json:"segments"`
		Stall    *float64 `json:"stall_ms"`
		TTFAB    *float64 `json:"ttfab_ms"`
	}
	got := map[string]logged{}
	bodies := map[string][]byte{}
	for _, policy := range []string{FirstChunk, Deadline} {
		opts := defaultOptions()
		opts.Scheduler, opts.FirstAudioTarget, opts.FirstSegmentRunes = policy, 300*time.Millisecond, segment.FirstTargetRunes
		_, ts, logs := startServer(t, opts, &engine.Calibration{SegmentCompute: 20 * time.Millisecond})
		r := post(context.Background(), ts.URL, text)
		if r.err != nil || r.status != 200 {
			t.Fatalf("%s: %v %d %s", policy, r.err, r.status, r.body)
		}
		bodies[policy] = r.body
		var rec logged
		if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &rec); err != nil {
			t.Fatalf("%s: request log %q: %v", policy, logs.String(), err)
		}
		if rec.Stall == nil || rec.TTFAB == nil || *rec.Stall < 0 {
			t.Errorf("%s: request log lacks stall_ms or ttfab_ms: %s", policy, logs.String())
		}
		got[policy] = rec
	}
	if got[FirstChunk].Segments != 2 || got[Deadline].Segments != 3 {
		t.Errorf("segments first-chunk %d, deadline %d: want 2 and 3 (the first sentence cut in two)", got[FirstChunk].Segments, got[Deadline].Segments)
	}
	// The calibration engine makes 60 ms of audio per rune: the cut drops
	// the one space it was made at, nothing else.
	if oneRune := 60 * engine.CalibrationSampleRate / 1000 * 2; len(bodies[Deadline]) != len(bodies[FirstChunk])-oneRune {
		t.Errorf("audio bytes first-chunk %d, deadline %d: want one rune's %d fewer (the space at the cut)", len(bodies[FirstChunk]), len(bodies[Deadline]), oneRune)
	}
}

func TestClientGoneFreesPlaceAndSkipsQueuedWork(t *testing.T) {
	rec := newRecorder(&engine.Calibration{}, true)
	opts := defaultOptions()
	opts.QueueMaxDepth = 2
	s, ts, logs := startServer(t, opts, rec)

	aDone := make(chan response, 1)
	go func() { aDone <- post(context.Background(), ts.URL, `{"text":"running request."}`) }()
	waitFor(t, "A admitted", func() bool { return s.Gate().Depth() == 1 })
	ctx, cancel := context.WithCancel(context.Background())
	bDone := make(chan response, 1)
	go func() { bDone <- post(ctx, ts.URL, `{"text":"abandoned request."}`) }()
	waitFor(t, "B admitted", func() bool { return s.Gate().Depth() == 2 })
	cancel()
	if r := <-bDone; r.err == nil {
		t.Fatalf("abandoned request completed: %d", r.status)
	}
	waitFor(t, "B's place freed", func() bool { return s.Gate().Depth() == 1 })
	rec.release()
	if r := <-aDone; r.status != 200 {
		t.Fatalf("A: %d %s", r.status, r.body)
	}
	if r := post(context.Background(), ts.URL, `{"text":"after."}`); r.status != 200 {
		t.Fatalf("C: %d %s", r.status, r.body)
	}
	if slices.Contains(rec.order(), "abandoned request.") {
		t.Errorf("the abandoned request was synthesized: %q", rec.order())
	}
	waitFor(t, "client_gone logged", func() bool { return strings.Contains(logs.String(), `"outcome":"client_gone"`) })
}

func TestBadInput(t *testing.T) {
	opts := defaultOptions()
	opts.MaxTextChars = 20
	opts.MaxBodyBytes = 200
	_, ts, _ := startServer(t, opts, &engine.Calibration{})
	cases := []struct {
		name, body string
		status     int
		field      string
		mention    string
	}{
		{"missing text", `{"voice":"calibration"}`, 400, "text", "missing"},
		{"null text", `{"text":null}`, 400, "text", "not null"},
		// null and upper-case values are refused, not defaulted or folded.
		{"null voice", `{"text":"hi","voice":null}`, 400, "voice", "not null"},
		{"null speed", `{"text":"hi","speed":null}`, 400, "speed", "not null"},
		{"upper-case format", `{"text":"hi","format":"WAV"}`, 400, "format", `use "wav"`},
		{"upper-case response_format", `{"input":"hi","response_format":"Opus"}`, 400, "response_format", `use "opus"`},
		{"upper-case voice", `{"text":"hi","voice":"Calibration"}`, 400, "voice", "case-sensitive"},
		// The OpenAI shape.
		{"instructions", `{"input":"hi","instructions":"whisper"}`, 400, "instructions", "cannot follow"},
		{"text and input", `{"text":"hi","input":"hi"}`, 400, "input", "send one"},
		{"format and response_format", `{"input":"hi","format":"wav","response_format":"pcm"}`, 400, "response_format", "send one"},
		{"empty input", `{"input":" "}`, 400, "input", "empty"},
		{"model not a string", `{"input":"hi","model":1}`, 400, "model", "string"},
		{"sample_rate for opus", `{"input":"hi","response_format":"opus","sample_rate":16000}`, 400, "sample_rate", "not opus"},
		{"sample_rate odd", `{"text":"hi","format":"pcm","sample_rate":11025}`, 400, "sample_rate", "8000, 16000, 24000"},
		{"sample_rate mulaw", `{"text":"hi","format":"mulaw","sample_rate":16000}`, 400, "sample_rate", "8000"},
		{"sample_rate fraction", `{"text":"hi","format":"pcm","sample_rate":8000.5}`, 400, "sample_rate", "whole number"},
		{"stream not a boolean", `{"text":"hi","stream":"no"}`, 400, "stream", "boolean"},
		{"voices false", `{"voices":false}`, 400, "voices", "must be true"},
		{"stream_format sse", `{"input":"hi","stream_format":"sse"}`, 400, "stream_format", "not supported"},
		{"voices with text", `{"voices":true,"text":"hi"}`, 400, "text", "no other field"},
		{"mix on calibration", `{"text":"hi","voice":"calibration(2)+calibration(1)"}`, 400, "voice", "kokoro feature"},
		{"empty text", `{"text":"   "}`, 400, "text", "empty"},
		{"text too long", `{"text":"` + strings.Repeat("a", 21) + `"}`, 400, "text", "limit of 20"},
		{"unknown voice", `{"text":"hi","voice":"nobody"}`, 400, "voice", "calibration"},
		{"speed too slow", `{"text":"hi","speed":0.4}`, 400, "speed", "[0.5, 2]"},
		{"speed too fast", `{"text":"hi","speed":2.01}`, 400, "speed", "[0.5, 2]"},
		{"speed zero", `{"text":"hi","speed":0}`, 400, "speed", "[0.5, 2]"},
		{"speed not a number", `{"text":"hi","speed":"fast"}`, 400, "speed", "number"},
		{"text not a string", `{"text":5}`, 400, "text", "string"},
		{"unknown format", `{"text":"hi","format":"ogg"}`, 400, "format", "opus"},
		{"invalid JSON", `{"text":`, 400, "body", "JSON"},
		{"not an object", `["hi"]`, 400, "body", "object"},
		{"trailing data", `{"text":"hi"} {}`, 400, "body", "one JSON object"},
		{"unknown field", `{"text":"hi","txt":"x"}`, 400, "txt", "unknown field"},
		{"empty body", ``, 400, "body", "empty"},
		{"body too large", `{"text":"` + strings.Repeat("a", 300) + `"}`, 413, "body", "MAX_BODY_BYTES"},
		// Characters that cut or change the text.
		{"NUL in text", `{"text":"hello \u0000there"}`, 400, "text", "U+0000"},
		{"only NULs", `{"text":"\u0000\u0000"}`, 400, "text", "control character"},
		{"escape sequence", `{"text":"hi \u001b[2J"}`, 400, "text", "U+001B"},
		{"C1 control", `{"text":"hi \u0085 there"}`, 400, "text", "U+0085"},
		{"DEL", `{"text":"hi \u007f"}`, 400, "text", "U+007F"},
		{"unpaired surrogate", `{"text":"bad \ud800 here"}`, 400, "text", "surrogate"},
		{"invalid UTF-8", "{\"text\":\"bad \xff here\"}", 400, "body", "UTF-8"},
		{"only punctuation", `{"text":"... !?"}`, 400, "text", "no letters, digits or symbols"},
		{"only invisible", `{"text":"\u200b\u200d "}`, 400, "text", "no letters, digits or symbols"},
		{"cut after a value", `{"text":"a"`, 400, "body", "ends early"},
		{"cut after a key", `{"text"`, 400, "body", "ends early"},
		{"cut after the brace", `{`, 400, "body", "ends early"},
		{"NUL in voice", `{"text":"hi","voice":"calibration\u0000"}`, 400, "voice", "U+0000"},
		{"NUL in format", `{"text":"hi","format":"wav\u0000"}`, 400, "format", "U+0000"},
		{"control in key", `{"text":"hi","te\u0000xt":"x"}`, 400, "body", "unknown field"},
		// Duplicate and case-variant keys.
		{"duplicate text", `{"text":"hi","text":"there"}`, 400, "text", "more than once"},
		{"duplicate speed", `{"text":"hi","speed":1,"speed":2}`, 400, "speed", "more than once"},
		{"escaped duplicate", `{"text":"hi","t\u0065xt":"there"}`, 400, "text", "more than once"},
		{"upper-case key", `{"TEXT":"hello"}`, 400, "TEXT", "case-sensitive"},
		{"mixed-case key", `{"text":"hi","Voice":"calibration"}`, 400, "Voice", "case-sensitive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := post(context.Background(), ts.URL, c.body)
			if r.err != nil {
				t.Fatal(r.err)
			}
			if r.status != c.status {
				t.Fatalf("status %d, want %d: %s", r.status, c.status, r.body)
			}
			var e RequestError
			if err := json.Unmarshal(r.body, &e); err != nil {
				t.Fatalf("error body %s is not JSON: %v", r.body, err)
			}
			if e.Field != c.field || !strings.Contains(e.Message, c.mention) {
				t.Errorf("error = %+v, want field %q and a message mentioning %q", e, c.field, c.mention)
			}
		})
	}
	for _, c := range []struct {
		method, path string
		status       int
	}{
		{"GET", "/invocations", 405}, {"POST", "/ping", 405}, {"GET", "/nope", 404}, {"POST", "/", 404},
	} {
		req, _ := http.NewRequest(c.method, ts.URL+c.path, nil)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != c.status {
			t.Errorf("%s %s = %d, want %d", c.method, c.path, res.StatusCode, c.status)
		}
	}
}

// failing is an engine whose every segment fails or panics, as a broken
// model would, to show the failure stays inside its request.
type failing struct {
	engine.Calibration
	panics bool
}

func (f *failing) Synthesize(ctx context.Context, seg engine.Segment, emit engine.Emit) error {
	if seg.Text == "ok." {
		return f.Calibration.Synthesize(ctx, seg, emit)
	}
	if f.panics {
		panic("model exploded")
	}
	return errors.New("model exploded")
}

func TestEngineFailureFailsOnlyThatRequest(t *testing.T) {
	for _, panics := range []bool{false, true} {
		_, ts, logs := startServer(t, defaultOptions(), &failing{panics: panics})
		r := post(context.Background(), ts.URL, `{"text":"boom."}`)
		if r.status != 500 || !strings.Contains(string(r.body), "model exploded") {
			t.Errorf("panics=%v: failing request got %d %s, want 500 naming the failure", panics, r.status, r.body)
		}
		if r := post(context.Background(), ts.URL, `{"text":"ok."}`); r.status != 200 {
			t.Errorf("panics=%v: next request got %d", panics, r.status)
		}
		// A failure after audio has started cuts the stream.
		r = post(context.Background(), ts.URL, `{"text":"ok. boom."}`)
		if r.err == nil {
			t.Errorf("panics=%v: a mid-stream failure ended as a clean response", panics)
		}
		if n := strings.Count(logs.String(), `"outcome":"engine_error_midstream"`); n != 1 {
			t.Errorf("panics=%v: %d engine_error_midstream log lines, want 1:\n%s", panics, n, logs)
		}
	}
}

// hanging is an engine whose segments named "hang." block, ignoring ctx, until
// released, as a wedged model call (an ONNX run that never returns) would.
type hanging struct {
	engine.Calibration
	release chan struct{}
}

func (h *hanging) Synthesize(ctx context.Context, seg engine.Segment, emit engine.Emit) error {
	if seg.Text == "hang." {
		<-h.release
		return nil
	}
	return h.Calibration.Synthesize(ctx, seg, emit)
}

// TestSegmentTimeoutFailsTheRequestAndPing: a segment whose engine call
// passes SegmentTimeout fails its request with 500 engine_timeout at the
// bound, /ping answers 503 engine_stuck while every slot is stuck, and turns
// 200 again once the call returns.
func TestSegmentTimeoutFailsTheRequestAndPing(t *testing.T) {
	h := &hanging{release: make(chan struct{})}
	opts := defaultOptions()
	opts.Workers = 1
	opts.SegmentTimeout = 300 * time.Millisecond
	_, ts, logs := startServer(t, opts, h)
	ping := func() (int, string) {
		res, err := http.Get(ts.URL + "/ping")
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	t0 := time.Now()
	r := post(context.Background(), ts.URL, `{"text":"hang."}`)
	if r.status != 500 || !strings.Contains(string(r.body), `"error":"engine_timeout"`) {
		t.Fatalf("hung segment: %d %s, want 500 engine_timeout", r.status, r.body)
	}
	if took := time.Since(t0); took > 5*time.Second {
		t.Errorf("hung segment failed after %s, want about 300ms", took)
	}
	if s, b := ping(); s != 503 || !strings.Contains(b, "engine_stuck") {
		t.Errorf("/ping with the only slot stuck = %d %s, want 503 engine_stuck", s, b)
	}
	close(h.release)
	waitFor(t, "/ping 200 after the engine returned", func() bool { s, _ := ping(); return s == 200 })
	if r := post(context.Background(), ts.URL, `{"text":"ok."}`); r.status != 200 {
		t.Errorf("after recovery: %d %s", r.status, r.body)
	}
	if !strings.Contains(logs.String(), `"outcome":"engine_timeout"`) {
		t.Errorf("no engine_timeout log:\n%s", logs)
	}
}

// TestSegmentTimeoutExcludesTimeWaitingForTheClient: the limit counts engine
// time only; a segment whose audio waits on a slow reader is not timed out.
func TestSegmentTimeoutExcludesTimeWaitingForTheClient(t *testing.T) {
	opts := defaultOptions()
	opts.SegmentTimeout = 200 * time.Millisecond
	_, ts, _ := startServer(t, opts, &engine.Calibration{})
	req, _ := http.NewRequest(http.MethodPost, ts.URL+"/invocations", strings.NewReader(`{"text":"`+strings.Repeat("a", 3000)+`"}`))
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	// Read slowly: 64 KiB every 50 ms, 8.6 MB of audio in all, far past 200 ms.
	n := 0
	buf := make([]byte, 64<<10)
	for {
		m, err := io.ReadFull(res.Body, buf)
		n += m
		if err != nil {
			break
		}
		if n < 1<<20 {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if want := 44 + 3000*1440*2; n != want {
		t.Errorf("slow reader got %d bytes, want %d", n, want)
	}
}

func TestPingFollowsReadinessAndDrain(t *testing.T) {
	s := New(defaultOptions(), io.Discard)
	ts := httptest.NewServer(s)
	defer ts.Close()
	ping := func() int {
		res, err := http.Get(ts.URL + "/ping")
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if got := res.Header.Get("X-Amzn-SageMaker-Custom-Attributes"); got != "instance-id=test-instance" {
			t.Errorf("custom attributes = %q", got)
		}
		return res.StatusCode
	}
	if got := ping(); got != 503 {
		t.Errorf("ping before load = %d, want 503", got)
	}
	if r := post(context.Background(), ts.URL, `{"text":"hi"}`); r.status != 503 || !strings.Contains(string(r.body), "not_ready") {
		t.Errorf("invocation before ready = %d %s", r.status, r.body)
	}
	s.Attach(&engine.Calibration{})
	defer s.Close()
	s.SetReady()
	if got := ping(); got != 200 {
		t.Errorf("ping when ready = %d, want 200", got)
	}
	if left := s.Drain(context.Background()); left != 0 {
		t.Errorf("drain left %d", left)
	}
	if got := ping(); got != 503 {
		t.Errorf("ping while draining = %d, want 503", got)
	}
	if r := post(context.Background(), ts.URL, `{"text":"hi"}`); r.status != 503 || !strings.Contains(string(r.body), "shutting_down") {
		t.Errorf("invocation while draining = %d %s", r.status, r.body)
	}
}

func TestStreamHeadersFormatsAndLogs(t *testing.T) {
	_, ts, logs := startServer(t, defaultOptions(), &engine.Calibration{})
	wav := post(context.Background(), ts.URL, `{"text":"Hello there. General Kenobi.","speed":1.5}`)
	if wav.status != 200 {
		t.Fatalf("%d %s", wav.status, wav.body)
	}
	h := wav.header
	if h.Get("X-Sample-Rate") != "24000" || h.Get("X-Engine") != "calibration" || h.Get("Content-Type") != "audio/wav" {
		t.Errorf("headers = %v", h)
	}
	if string(wav.body[:4]) != "RIFF" || binary.LittleEndian.Uint32(wav.body[24:]) != 24000 {
		t.Errorf("body does not start with a 24 kHz WAV header")
	}
	// 12 + 15 runes at 60 ms per rune, 1.5x speed, 24 kHz, 2 bytes per sample.
	wantSamples := 12*1440*2/3 + 15*1440*2/3
	if got := (len(wav.body) - audio.WAVHeaderSize) / 2; got != wantSamples {
		t.Errorf("got %d samples, want %d", got, wantSamples)
	}
	pcm := post(context.Background(), ts.URL, `{"text":"Hello there. General Kenobi.","format":"pcm","speed":1.5}`)
	if pcm.status != 200 || pcm.header.Get("Content-Type") != "audio/pcm" || !bytes.Equal(pcm.body, wav.body[audio.WAVHeaderSize:]) {
		t.Errorf("pcm body differs from the wav body's samples (status %d, %d bytes)", pcm.status, len(pcm.body))
	}
	var rec map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q is not JSON: %v", line, err)
		}
	}
	for _, k := range []string{"id", "queue_wait_ms", "ttfab_ms", "total_ms", "bytes", "outcome"} {
		if _, ok := rec[k]; !ok {
			t.Errorf("request log lacks %s: %v", k, rec)
		}
	}
	if rec["outcome"] != "ok" || rec["bytes"] != float64(len(pcm.body)) {
		t.Errorf("request log = %v", rec)
	}
}

// TestWAVHeaderTravelsWithFirstSamples reads the raw chunked response: the
// first chunk on the wire carries the header and audio together.
func TestWAVHeaderTravelsWithFirstSamples(t *testing.T) {
	_, ts, _ := startServer(t, defaultOptions(), &engine.Calibration{})
	conn, err := net.Dial("tcp", strings.TrimPrefix(ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"text":"First part. Second part."}`
	fmt.Fprintf(conn, "POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", len(body), body)
	br := bufio.NewReader(conn)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if line == "\r\n" {
			break
		}
	}
	sizeLine, err := br.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	size, err := strconv.ParseInt(strings.TrimSpace(sizeLine), 16, 64)
	if err != nil {
		t.Fatalf("first chunk size %q: %v", sizeLine, err)
	}
	if size <= audio.WAVHeaderSize {
		t.Fatalf("first chunk is %d bytes: the header went out without samples", size)
	}
	first := make([]byte, audio.WAVHeaderSize)
	io.ReadFull(br, first)
	if string(first[:4]) != "RIFF" {
		t.Errorf("first chunk starts with %q", first[:4])
	}
}

func TestEmitMetricsEMF(t *testing.T) {
	opts := defaultOptions()
	opts.QueueMaxDepth = 1
	s, _, logs := startServer(t, opts, &engine.Calibration{})
	s.Gate().Acquire()
	s.Gate().Acquire() // rejected
	s.EmitMetrics()
	s.Gate().Release()
	var m struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		InstanceID      string `json:"InstanceId"`
		QueueDepth      int
		QueueDepthPeak  int
		QueueRejections int
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &m); err != nil {
		t.Fatalf("EMF line %q: %v", logs.String(), err)
	}
	if m.AWS.Timestamp == 0 || len(m.AWS.CloudWatchMetrics) != 1 || m.AWS.CloudWatchMetrics[0].Namespace != MetricsNamespace {
		t.Errorf("EMF envelope = %+v", m.AWS)
	}
	if m.InstanceID != "test-instance" || m.QueueDepth != 1 || m.QueueDepthPeak != 1 || m.QueueRejections != 1 {
		t.Errorf("EMF values = %+v", m)
	}
	for _, d := range m.AWS.CloudWatchMetrics[0].Metrics {
		var v any
		json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &v)
		if _, ok := v.(map[string]any)[d.Name]; !ok {
			t.Errorf("metric %s declared but has no value", d.Name)
		}
	}
}

// signalOnRead closes started on its first Read: the handler has passed its
// draining check and is decoding the body.
type signalOnRead struct {
	io.ReadCloser
	once    sync.Once
	started chan struct{}
}

func (b *signalOnRead) Read(p []byte) (int, error) {
	b.once.Do(func() { close(b.started) })
	return b.ReadCloser.Read(p)
}

// TestDrainAdmitsNothingAfterItReturns holds a request in body decoding (past
// the draining check, not yet admitted) while Drain runs: once Drain has
// reported nothing in flight, that request must not be admitted.
func TestDrainAdmitsNothingAfterItReturns(t *testing.T) {
	s := New(defaultOptions(), io.Discard)
	if err := s.Attach(&engine.Calibration{}); err != nil {
		t.Fatal(err)
	}
	s.SetReady()
	started := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Body = &signalOnRead{ReadCloser: r.Body, started: started}
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { ts.Close(); s.Close() })

	pr, pw := io.Pipe()
	done := make(chan response, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodPost, ts.URL+"/invocations", pr)
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- response{err: err}
			return
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		done <- response{status: res.StatusCode, body: b, err: err}
	}()
	io.WriteString(pw, `{"text":`)
	<-started
	if left := s.Drain(context.Background()); left != 0 {
		t.Fatalf("drain left %d", left)
	}
	io.WriteString(pw, `"hi"}`)
	pw.Close()
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	if r.status != http.StatusServiceUnavailable || !strings.Contains(string(r.body), "shutting_down") {
		t.Errorf("request admitted after Drain returned: status %d, %d bytes", r.status, len(r.body))
	}
	if d := s.Gate().Depth(); d != 0 {
		t.Errorf("gate depth = %d after the request ended, want 0", d)
	}
}

// TestQueueWaitCountsFromAdmission sends a body slowly: the time spent
// reading it is before admission, so it is in ttfab_ms but not in
// queue_wait_ms. The server's clock starts when the request's headers reach
// it, a little after the client's pause began, so neither figure can be
// compared with the pause exactly: the test tells which clock each figure
// uses by which side of half the pause it falls on (a second apart).
func TestQueueWaitCountsFromAdmission(t *testing.T) {
	_, ts, logs := startServer(t, defaultOptions(), &engine.Calibration{})
	const slow = time.Second
	pr, pw := io.Pipe()
	go func() {
		io.WriteString(pw, `{"text":`)
		time.Sleep(slow)
		io.WriteString(pw, `"hi."}`)
		pw.Close()
	}()
	res, err := http.Post(ts.URL+"/invocations", "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, res.Body)
	res.Body.Close()
	var rec struct {
		QueueWait float64 `json:"queue_wait_ms"`
		TTFAB     float64 `json:"ttfab_ms"`
	}
	if err := json.Unmarshal([]byte(strings.TrimSpace(logs.String())), &rec); err != nil {
		t.Fatalf("request log %q: %v", logs.String(), err)
	}
	if rec.TTFAB < float64(slow.Milliseconds())/2 {
		t.Errorf("ttfab_ms %v leaves out most of the %v the body took", rec.TTFAB, slow)
	}
	if rec.QueueWait >= float64(slow.Milliseconds())/2 {
		t.Errorf("queue_wait_ms %v includes reading the body (%v); it counts from admission", rec.QueueWait, slow)
	}
}

// ReturnIdleMemory gives a burst's memory back once nothing is in flight,
// and not while a request is.
func TestReturnIdleMemory(t *testing.T) {
	s := New(defaultOptions(), io.Discard)
	burst := make([][]byte, 0, 200)
	for range 200 {
		burst = append(burst, make([]byte, 1<<20))
	}
	burst[0][0] = 1
	burst = nil
	s.streams.Add(1)
	if s.ReturnIdleMemory() {
		t.Error("returned memory with a request in flight")
	}
	s.streams.Add(-1)
	if !s.ReturnIdleMemory() {
		t.Error("an idle server kept a 200 MB burst")
	}
	if s.ReturnIdleMemory() {
		t.Error("returned again with nothing new to return")
	}
}

func postAttrs(ctx context.Context, url, attrs, body string) response {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/invocations", strings.NewReader(body))
	if err != nil {
		return response{err: err}
	}
	req.Header.Set("X-Amzn-SageMaker-Custom-Attributes", attrs)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return response{err: err}
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	return response{status: res.StatusCode, header: res.Header, body: b, err: err}
}

// TestShieldAttributeTightensNeverWidens: a request's queue-max-depth custom attribute admits it only within
// that depth (a measurement on an unbounded endpoint sheds as the deployed shield would), never beyond
// QUEUE_MAX_DEPTH; a request without it is bounded by QUEUE_MAX_DEPTH alone; a malformed one is a 400 naming the
// header and the fix. Every admitted request waits on the engine until released, so the depths are exact.
func TestShieldAttributeTightensNeverWidens(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured int
		attrs      string
		// admitted is how many of 8 concurrent requests with attrs are admitted; max is the 503's max_queue_depth.
		admitted, max int
	}{
		{"unbounded endpoint, request depth 3", 0, "queue-max-depth=3", 3, 3},
		{"other attributes around it", 0, "trace=abc; queue-max-depth=2, x=y", 2, 2},
		{"configured 4, request asks for 6", 4, "queue-max-depth=6", 4, 4},
		{"configured 4, request asks for 2", 4, "queue-max-depth=2", 2, 2},
		{"configured 5, no attribute", 5, "", 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			const n = 8
			rec := newRecorder(&engine.Calibration{}, true)
			opts := defaultOptions()
			opts.QueueMaxDepth, opts.Workers = tc.configured, n
			s, ts, _ := startServer(t, opts, rec)
			// Released at the end, or by the cleanup when the test fails first (before the server's Close, which
			// waits for the held requests).
			release := sync.OnceFunc(rec.release)
			t.Cleanup(release)
			results := make(chan response, n+1)
			var wg sync.WaitGroup
			for i := range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					results <- postAttrs(context.Background(), ts.URL, tc.attrs, fmt.Sprintf(`{"text":"request %d."}`, i))
				}()
			}
			for range n - tc.admitted {
				var r response
				select {
				case r = <-results:
				case <-time.After(10 * time.Second): // only a gate that admitted too many reaches it
					t.Fatalf("%d of the %d requests beyond depth %d were not refused: the gate admitted them (depth %d)", n-tc.admitted, n-tc.admitted, tc.admitted, s.Gate().Depth())
				}
				if r.err != nil {
					t.Fatal(r.err)
				}
				want := fmt.Sprintf(`{"error":"queue_saturated","queue_depth":%d,"max_queue_depth":%d}`, tc.admitted, tc.max)
				if r.status != http.StatusServiceUnavailable || strings.TrimSpace(string(r.body)) != want {
					t.Fatalf("before release: %d %s, want 503 %s", r.status, r.body, want)
				}
			}
			waitFor(t, "the admitted requests", func() bool { return s.Gate().Depth() == tc.admitted })
			if tc.configured == 0 {
				// The shield a request asked for is its own: one without the attribute is still admitted.
				wg.Add(1)
				go func() {
					defer wg.Done()
					results <- post(context.Background(), ts.URL, `{"text":"unshielded."}`)
				}()
				waitFor(t, "the request without the attribute to be admitted", func() bool { return s.Gate().Depth() == tc.admitted+1 })
			}
			release()
			wg.Wait()
			close(results)
			for r := range results {
				if r.status != http.StatusOK {
					t.Errorf("admitted request got %d: %s", r.status, r.body)
				}
			}
		})
	}
}

func TestShieldAttributeMalformed(t *testing.T) {
	rec := newRecorder(&engine.Calibration{}, false)
	_, ts, _ := startServer(t, defaultOptions(), rec)
	for _, attrs := range []string{"queue-max-depth=0", "queue-max-depth=-1", "queue-max-depth=ten", "queue-max-depth=99999999999", "queue-max-depth=2,queue-max-depth=3"} {
		r := postAttrs(context.Background(), ts.URL, attrs, `{"text":"hello."}`)
		if r.err != nil {
			t.Fatal(r.err)
		}
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), "X-Amzn-SageMaker-Custom-Attributes") || !strings.Contains(string(r.body), "queue-max-depth") {
			t.Errorf("%q: %d %s, want 400 naming the header and the attribute", attrs, r.status, r.body)
		}
	}
}
