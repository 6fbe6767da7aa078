package server

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/engine"
)

// testStream opens a stream on b whose cancel and abort are recorded.
type testStream struct {
	*stream
	ctx     context.Context
	aborted int
}

func openTest(b *streamBuffers) *testStream {
	ts := &testStream{}
	ctx, cancel := context.WithCancelCause(context.Background())
	ts.ctx = ctx
	ts.stream = b.open(cancel, func() { ts.aborted++ })
	return ts
}

// audioChunk is n bytes of audio (n/2 samples).
func audioChunk(n int) chunk { return chunk{samples: make([]int16, n/2)} }

// TestStreamBufferCutsTheSlowestFirst: past the bound, the stream whose
// write has waited longest past its audio's duration goes first, then the
// next slowest; a stream not in a write (its client takes what it is sent)
// goes only after every stream in one; a stream holding nothing is never
// cut; each cut frees its bytes at once, ends its request's context with the
// reason and aborts its write in progress.
func TestStreamBufferCutsTheSlowestFirst(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	b := newStreamBuffers(1000)
	b.now = clock.Now
	t0 := clock.t

	slow := openTest(b)   // in a write due 5 s ago
	slower := openTest(b) // in a write due 9 s ago
	fast := openTest(b)   // in a write due in 1 s
	idle := openTest(b)   // not in a write, holds the most
	empty := openTest(b)  // in a write due long ago, holds nothing
	for _, w := range []struct {
		st  *testStream
		due time.Time
	}{{slow, t0.Add(-5 * time.Second)}, {slower, t0.Add(-9 * time.Second)}, {fast, t0.Add(time.Second)}, {empty, t0.Add(-time.Hour)}} {
		if cut := w.st.beginWrite(w.due, func() {}); cut != nil {
			t.Fatal(cut)
		}
	}
	for _, p := range []struct {
		st *testStream
		n  int
	}{{slow, 200}, {slower, 200}, {fast, 200}, {idle, 300}} {
		if err := p.st.push(audioChunk(p.n)); err != nil {
			t.Fatalf("push within the bound: %v", err)
		}
	}
	if got := b.Bytes(); got != 900 {
		t.Fatalf("buffered %d bytes, want 900", got)
	}
	cutOrder := func() []string {
		var got []string
		for _, c := range []struct {
			name string
			st   *testStream
		}{{"slower", slower}, {"slow", slow}, {"fast", fast}, {"idle", idle}, {"empty", empty}} {
			if c.st.cutReason() != nil {
				got = append(got, c.name)
			}
		}
		return got
	}

	// 200 more: 1100 > 1000, one cut (the slowest, 200 bytes) is enough.
	if err := idle.push(audioChunk(200)); err != nil {
		t.Fatalf("the pushing stream was cut: %v", err)
	}
	if got := fmt.Sprint(cutOrder()); got != "[slower]" {
		t.Fatalf("cut %s, want [slower]", got)
	}
	if b.Bytes() != 900 {
		t.Errorf("buffered %d after the cut, want 900 (the cut stream's 200 freed)", b.Bytes())
	}
	var cut *bufferCut
	if !errors.As(context.Cause(slower.ctx), &cut) || !strings.Contains(cut.Error(), "STREAM_BUFFER_BYTES") || !strings.Contains(cut.Error(), "9s past") {
		t.Errorf("the cut stream's context ends with %v, want the reason naming STREAM_BUFFER_BYTES and its 9 s", context.Cause(slower.ctx))
	}
	if slower.aborted != 1 {
		t.Errorf("the cut stream's write in progress was aborted %d times, want 1", slower.aborted)
	}
	if err := slower.push(audioChunk(2)); !errors.As(err, &cut) {
		t.Errorf("a push to a cut stream: %v, want the cut (synthesis stops)", err)
	}
	if c := slower.beginWrite(t0, func() { t.Error("a cut stream's write deadline was set") }); c == nil {
		t.Error("a cut stream may begin a write")
	}

	// 400 more: 1300, then slow (1100), then fast (900).
	if err := idle.push(audioChunk(400)); err != nil {
		t.Fatalf("the pushing stream was cut: %v", err)
	}
	if got := fmt.Sprint(cutOrder()); got != "[slower slow fast]" {
		t.Fatalf("cut %s, want [slower slow fast]", got)
	}
	// Only idle is left with audio: past the bound it goes too, and the push
	// that made it go reports so.
	if err := idle.push(audioChunk(200)); !errors.As(err, &cut) || cut.writing {
		t.Errorf("idle's own push past the bound: %v, want its cut as a stream not in a write", err)
	}
	if idle.aborted != 0 {
		t.Error("a stream not in a write had a write aborted")
	}
	if got := fmt.Sprint(cutOrder()); got != "[slower slow fast idle]" || b.Bytes() != 0 {
		t.Errorf("cut %s with %d bytes left, want every stream holding audio cut and 0 left; empty holds nothing and stays", got, b.Bytes())
	}
	for _, st := range []*testStream{slow, slower, fast, idle, empty} {
		st.close()
	}
	if len(b.streams) != 0 || b.Bytes() != 0 {
		t.Errorf("%d streams, %d bytes after every stream closed", len(b.streams), b.Bytes())
	}
}

// TestStreamPopAndClose: chunks come out in order with their bytes freed; a
// pop waits until a push or the context's end; close frees what is left and
// a later push is refused.
func TestStreamPopAndClose(t *testing.T) {
	b := newStreamBuffers(0)
	st := openTest(b)
	for i := 1; i <= 3; i++ {
		st.push(audioChunk(2 * i))
	}
	for i := 1; i <= 3; i++ {
		c, err := st.pop(context.Background())
		if err != nil || len(c.samples) != i {
			t.Fatalf("pop %d: %d samples, %v", i, len(c.samples), err)
		}
	}
	if b.Bytes() != 0 {
		t.Errorf("%d bytes after every chunk was taken", b.Bytes())
	}
	got := make(chan int, 1)
	go func() {
		c, _ := st.pop(context.Background())
		got <- len(c.samples)
	}()
	st.push(audioChunk(10))
	select {
	case n := <-got:
		if n != 5 {
			t.Errorf("waiting pop got %d samples, want 5", n)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a waiting pop did not see the push")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := st.pop(ctx); err == nil {
		t.Error("pop on an ended context returned a chunk")
	}
	st.push(audioChunk(100))
	st.close()
	if b.Bytes() != 0 {
		t.Errorf("%d bytes after close", b.Bytes())
	}
	if err := st.push(audioChunk(2)); err == nil {
		t.Error("push after close accepted")
	}
}

// dialSmallWindow connects to addr with a 4 KiB receive buffer, set before
// connect so the advertised window stays small: a client that does not read
// stalls the server's writes after little data.
func dialSmallWindow(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, Control: func(_, _ string, rc syscall.RawConn) error {
		var serr error
		rc.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return serr
	}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestNonReaderGivesItsPlaceBackOnceSynthesized: at QUEUE_MAX_DEPTH=1 a
// client that posts a long text and reads nothing takes the only place; its
// place comes back once its audio is synthesized (the engine never waits for
// it), while it is still connected, and the next request is admitted. Under
// each policy (fifo's worker used to wait for the reader too).
func TestNonReaderGivesItsPlaceBackOnceSynthesized(t *testing.T) {
	for _, policy := range []string{Deadline, FirstChunk, FIFO} {
		t.Run(policy, func(t *testing.T) {
			opts := defaultOptions()
			opts.Scheduler, opts.QueueMaxDepth = policy, 1
			opts.StreamBufferBytes = DefaultStreamBufferBytes
			// 500 segments "word." of calibration audio (60 ms a character):
			// 7.2 MB, far past the socket buffers.
			s, ts, logs := startServer(t, opts, &engine.Calibration{})
			c := dialSmallWindow(t, strings.TrimPrefix(ts.URL, "http://"))
			body := `{"text":"` + strings.Repeat("word. ", 500) + `"}`
			fmt.Fprintf(c, "POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
			waitFor(t, "the non-reader synthesized, its place given back", func() bool {
				return s.drainingStreams.Load() == 1 && s.Gate().Depth() == 0
			})
			if b := s.buffers.Bytes(); b < 1<<20 {
				t.Errorf("%d bytes buffered for the non-reader, want most of its 7.2 MB", b)
			}
			if r := post(context.Background(), ts.URL, `{"text":"Next."}`); r.status != 200 {
				t.Fatalf("the next request: %d %s, want 200 while the non-reader holds its audio", r.status, r.body)
			}
			if n := strings.Count(logs.String(), `"msg":"request"`); n != 1 {
				t.Errorf("%d request logs, want the next request's alone (the non-reader is still connected):\n%s", n, logs)
			}
			// The non-reader still gets its whole answer when it reads.
			c.SetReadDeadline(time.Now().Add(30 * time.Second))
			res, err := http.ReadResponse(bufio.NewReader(c), nil)
			if err != nil {
				t.Fatal(err)
			}
			n, err := io.Copy(io.Discard, res.Body)
			if want := int64(44 + 500*5*1440*2); err != nil || n != want {
				t.Errorf("the late reader got %d bytes (%v), want %d", n, err, want)
			}
			waitFor(t, "the buffer emptied", func() bool { return s.buffers.Bytes() == 0 && s.drainingStreams.Load() == 0 })
		})
	}
}

// TestStreamBufferBoundCutsANonReader: with the bound below one request's
// audio, a non-reader's stream is cut once it holds more than the bound:
// logged stream_buffer_full with the reason and the buffer freed; the client
// sees a 200 cut short, or a 503 stream_buffer_full if the cut came before
// the handler began its first write (synthesis can outrun it), or the
// connection closed if the cut came as that write began. The next request
// is served whole.
func TestStreamBufferBoundCutsANonReader(t *testing.T) {
	opts := defaultOptions()
	opts.Scheduler = Deadline
	opts.StreamBufferBytes = MinStreamBufferBytes
	s, ts, logs := startServer(t, opts, &engine.Calibration{})
	c := dialSmallWindow(t, strings.TrimPrefix(ts.URL, "http://"))
	body := `{"text":"` + strings.Repeat("word. ", 500) + `"}`
	fmt.Fprintf(c, "POST /invocations HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	waitFor(t, "the non-reader cut", func() bool { return strings.Contains(logs.String(), `"outcome":"stream_buffer_full"`) })
	if !strings.Contains(logs.String(), "STREAM_BUFFER_BYTES") {
		t.Errorf("the cut's log does not name the bound:\n%s", logs)
	}
	waitFor(t, "the buffer freed", func() bool { return s.buffers.Bytes() == 0 })
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	status, b := 0, []byte(nil)
	if err == nil {
		status = res.StatusCode
		b, err = io.ReadAll(res.Body)
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("the cut connection is still open, with no response")
	}
	switch status {
	case 0:
		// A cut that lands as the first write begins closes the connection
		// before the status line is out.
	case http.StatusOK:
		if err == nil {
			t.Errorf("the cut stream ended as a complete response (%d bytes)", len(b))
		} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
			t.Error("the cut connection is still open")
		}
	case http.StatusServiceUnavailable:
		if !strings.Contains(string(b), `"error":"stream_buffer_full"`) || !strings.Contains(string(b), "STREAM_BUFFER_BYTES") {
			t.Errorf("503 %s, want stream_buffer_full naming STREAM_BUFFER_BYTES", b)
		}
	default:
		t.Errorf("the cut stream: %d %.80s", status, b)
	}
	if r := post(context.Background(), ts.URL, `{"text":"`+strings.Repeat("word. ", 50)+`"}`); r.status != 200 || len(r.body) != 44+50*5*1440*2 {
		t.Errorf("the next request: %d, %d bytes, want 200 and all of it", r.status, len(r.body))
	}
}
