package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/audio"
	"github.com/speech-infra/speech-infra/container/internal/encode"
	"github.com/speech-infra/speech-infra/container/internal/engine"
	"github.com/speech-infra/speech-infra/container/internal/segment"
)

// Options configure a Server.
type Options struct {
	// InstanceID is echoed in X-Amzn-SageMaker-Custom-Attributes.
	InstanceID string
	// QueueMaxDepth bounds admitted requests; 0 is unbounded.
	QueueMaxDepth int
	// Workers is the number of synthesis slots.
	Workers int
	// Scheduler is FirstChunk, FIFO or Deadline.
	Scheduler string
	// FirstAudioTarget is how soon after admission the Deadline policy
	// wants a request's first audio (FIRST_AUDIO_TARGET_MS).
	FirstAudioTarget time.Duration
	// FirstSegmentRunes is the length the Deadline policy cuts a long first
	// sentence near (segment.ShortenFirst); 0 leaves it whole.
	FirstSegmentRunes int
	// MaxTextChars bounds a request's text in characters.
	MaxTextChars int
	// MaxBodyBytes bounds a request body.
	MaxBodyBytes int64
	// SegmentTimeout bounds the engine time of one segment; 0 is no limit.
	SegmentTimeout time.Duration
	// BodyTimeout bounds reading a request's body, from the handler's start;
	// 0 is no limit.
	BodyTimeout time.Duration
	// StallTimeout bounds each write of a response: a client that reads
	// nothing for this long loses its stream (its buffered audio is freed).
	// 0 is no limit.
	StallTimeout time.Duration
	// ClientLagLimit is how far behind real-time playback a reader may fall
	// (CLIENT_LAG_LIMIT): a write not taken by the time a real-time player
	// would have needed its audio plus this bound cuts the stream. 0 is off.
	ClientLagLimit time.Duration
	// StreamBufferBytes bounds the synthesized audio held, over all
	// requests, for clients slower than synthesis (STREAM_BUFFER_BYTES);
	// past it the slowest stream is cut (streamBuffers). 0 is no bound.
	StreamBufferBytes int64
}

// DefaultClientLagLimit is CLIENT_LAG_LIMIT's default: 5 s of audio behind
// real time.
const DefaultClientLagLimit = 5 * time.Second

// Server serves the SageMaker inference contract. It answers /ping with 503
// until Attach and SetReady, and again once Drain starts.
type Server struct {
	opts Options
	log  *slog.Logger
	out  io.Writer
	gate *Gate
	be   atomic.Pointer[backend]

	ready    atomic.Bool
	draining atomic.Bool
	// streams counts admitted requests still in their handler, including
	// those that gave their gate place back and only drain to the client;
	// drainingStreams counts those alone (synthesized, still being written).
	streams         atomic.Int64
	drainingStreams atomic.Int64
	// buffers holds the audio synthesized ahead of each client.
	buffers *streamBuffers
	// heldAfterReturn is the heap held from the system after the last
	// ReturnIdleMemory.
	heldAfterReturn atomic.Uint64
	seq             atomic.Uint64
	idPrefix        string
}

// backend is what Attach fixes for every later request: the scheduler (and
// through it the engine), what a request is checked against, and the voice
// list.
type backend struct {
	sched  *Scheduler
	limits Limits
	voices []engine.VoiceInfo
}

// LockedWriter serializes writes so log, metric and stage lines from many
// goroutines never interleave.
type LockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

// NewLockedWriter wraps w.
func NewLockedWriter(w io.Writer) *LockedWriter { return &LockedWriter{w: w} }

// Write implements io.Writer.
func (l *LockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// New returns a server that writes its request logs and metrics to out (one
// JSON object per line; wrap out in a LockedWriter if others write to it).
func New(opts Options, out io.Writer) *Server {
	b := make([]byte, 4)
	rand.Read(b)
	return &Server{
		opts:     opts,
		out:      out,
		log:      slog.New(slog.NewJSONHandler(out, nil)),
		gate:     NewGate(opts.QueueMaxDepth),
		buffers:  newStreamBuffers(opts.StreamBufferBytes),
		idPrefix: hex.EncodeToString(b),
	}
}

// Gate returns the server's queue gate.
func (s *Server) Gate() *Gate { return s.gate }

// Attach starts the scheduler's workers on eng. Requests get 503 until then.
func (s *Server) Attach(eng engine.Engine) error {
	sched, err := NewScheduler(eng, s.opts.Scheduler, s.opts.Workers, s.opts.SegmentTimeout, s.opts.FirstAudioTarget)
	if err != nil {
		return err
	}
	lim := Limits{MaxTextChars: s.opts.MaxTextChars, Voices: eng.Voices(), DefaultVoice: eng.DefaultVoice(), NativeRate: eng.SampleRate()}
	if m, ok := eng.(engine.VoiceMixer); ok {
		lim.CheckVoice = m.CheckVoice
	}
	s.be.Store(&backend{sched: sched, limits: lim, voices: engine.ListVoices(eng)})
	return nil
}

// SetReady makes /ping answer 200 (until Drain).
func (s *Server) SetReady() { s.ready.Store(true) }

// Drain stops admitting requests (and /ping turns 503), then waits until every
// admitted request has finished or ctx ends. It returns the number still in
// flight when it returned.
func (s *Server) Drain(ctx context.Context) int {
	s.draining.Store(true)
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for s.streams.Load() > 0 {
		select {
		case <-ctx.Done():
			return int(s.streams.Load())
		case <-t.C:
		}
	}
	return 0
}

// Close stops the scheduler's workers.
func (s *Server) Close() {
	if be := s.be.Load(); be != nil {
		be.sched.Close()
	}
}

// ServeHTTP routes /ping and /invocations; anything else is 404, a wrong
// method 405.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("X-Amzn-SageMaker-Custom-Attributes", "instance-id="+s.opts.InstanceID)
	switch r.URL.Path {
	case "/ping":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method_not_allowed", "message": "use GET /ping"})
			return
		}
		s.ping(w, r)
	case "/invocations":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", "POST")
			writeJSON(w, http.StatusMethodNotAllowed, map[string]string{"error": "method_not_allowed", "message": "use POST /invocations"})
			return
		}
		s.invoke(w, r)
	default:
		writeJSON(w, http.StatusNotFound, map[string]string{"error": "not_found", "message": "this server serves GET /ping and POST /invocations"})
	}
}

func (s *Server) ping(w http.ResponseWriter, r *http.Request) {
	s.setWriteDeadline(http.NewResponseController(w))
	status, body := s.PingAnswer()
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(body)
}

// PingAnswer is /ping's status and JSON body (with its newline): also what
// the connection limiter answers a /ping over MAX_CONNECTIONS with, so the
// health check stays answerable when idle connections fill the limit.
func (s *Server) PingAnswer() (int, []byte) {
	be := s.be.Load()
	var status int
	var v any
	switch {
	case s.draining.Load():
		status, v = http.StatusServiceUnavailable, map[string]string{"status": "draining"}
	case !s.ready.Load() || be == nil:
		status, v = http.StatusServiceUnavailable, map[string]string{"status": "starting"}
	case be.sched.Stuck() >= be.sched.Workers():
		// Every slot is in an engine call past SEGMENT_TIMEOUT: nothing can
		// make progress, so say so and let the platform replace the instance
		// if it does not recover.
		status, v = http.StatusServiceUnavailable, map[string]any{"status": "engine_stuck", "stuck_slots": be.sched.Stuck(), "slots": be.sched.Workers()}
	default:
		status, v = http.StatusOK, map[string]string{"status": "ready"}
	}
	b, _ := json.Marshal(v)
	return status, append(b, '\n')
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// requestLog is one request's structured log record.
type requestLog struct {
	id          string
	engine      string
	outcome     string
	status      int
	queueDepth  int
	queueWait   time.Duration
	ttfab       time.Duration
	total       time.Duration
	bytes       int64
	segments    int
	chars       int
	voice       string
	format      string
	sampleRate  int
	buffered    bool
	model       string
	err         string
	firstSample bool
	// stall is the server-side playback stall (see stallMeter).
	stall time.Duration
}

func (s *Server) logRequest(l *requestLog) {
	ms := func(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
	attrs := []any{
		"id", l.id, "outcome", l.outcome, "status", l.status, "queue_depth", l.queueDepth,
		"queue_wait_ms", ms(l.queueWait), "total_ms", ms(l.total), "bytes", l.bytes,
		"segments", l.segments, "chars", l.chars,
	}
	if l.firstSample {
		attrs = append(attrs, "ttfab_ms", ms(l.ttfab), "stall_ms", ms(l.stall))
	}
	if l.engine != "" {
		attrs = append(attrs, "engine", l.engine)
	}
	if l.voice != "" {
		attrs = append(attrs, "voice", l.voice, "format", l.format, "sample_rate", l.sampleRate)
		if l.buffered {
			attrs = append(attrs, "stream", false)
		}
	}
	if l.model != "" {
		attrs = append(attrs, "model", l.model)
	}
	if l.err != "" {
		attrs = append(attrs, "error", l.err)
	}
	s.log.Info("request", attrs...)
}

func (s *Server) invoke(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	l := &requestLog{id: s.requestID(r)}
	w.Header().Set("X-Request-Id", l.id)
	defer func() {
		l.total = time.Since(start)
		s.logRequest(l)
	}()
	fail := func(status int, outcome string, v any) {
		l.status, l.outcome = status, outcome
		writeJSON(w, status, v)
	}
	be := s.be.Load()
	if be != nil {
		l.engine = be.sched.eng.Name()
	}
	shuttingDown := func() {
		fail(http.StatusServiceUnavailable, "shutting_down", map[string]string{"error": "shutting_down", "message": "this instance is draining; retry on another"})
	}
	switch {
	case s.draining.Load():
		shuttingDown()
		return
	case be == nil || !s.ready.Load():
		fail(http.StatusServiceUnavailable, "not_ready", map[string]string{"error": "not_ready", "message": "the engine is still loading; retry when /ping answers 200"})
		return
	}
	eng := be.sched.eng
	rc := http.NewResponseController(w)
	s.setWriteDeadline(rc)
	// The whole body must arrive within BodyTimeout of the handler's start
	// (the headers are bounded by the http.Server's ReadHeaderTimeout).
	if s.opts.BodyTimeout > 0 {
		rc.SetReadDeadline(time.Now().Add(s.opts.BodyTimeout))
	}
	body := http.MaxBytesReader(w, r.Body, s.opts.MaxBodyBytes)
	req, rerr := DecodeRequest(body, be.limits)
	if rerr != nil {
		l.err = rerr.Error()
		outcome := "bad_request"
		if rerr.Status == http.StatusRequestTimeout {
			outcome = "body_timeout"
			rerr.Message = fmt.Sprintf("the body did not arrive within %s (BODY_READ_TIMEOUT): send the whole body at once", s.opts.BodyTimeout)
			l.err = rerr.Error()
		}
		// The connection cannot be reused after an unread or timed-out body.
		w.Header().Set("Connection", "close")
		s.setWriteDeadline(rc)
		fail(rerr.Status, outcome, rerr)
		return
	}
	// The body is read: lift the read deadline, or net/http's background
	// read (which watches for the client leaving) would end the request
	// when it passes.
	if s.opts.BodyTimeout > 0 {
		rc.SetReadDeadline(time.Time{})
	}
	// A request may carry its own, tighter queue depth (ShieldAttribute); a malformed one is the client's error.
	limit, aerr := shieldLimit(r.Header.Get("X-Amzn-SageMaker-Custom-Attributes"))
	if aerr != nil {
		rerr := badRequest("X-Amzn-SageMaker-Custom-Attributes", "%v", aerr)
		l.err = rerr.Error()
		fail(rerr.Status, "bad_request", rerr)
		return
	}
	if req.Voices {
		l.status, l.outcome = http.StatusOK, "voices"
		writeJSON(w, http.StatusOK, VoiceList{Engine: l.engine, Default: be.limits.DefaultVoice, Voices: be.voices})
		return
	}
	spec := encode.Spec{Format: req.Format, NativeRate: eng.SampleRate(), SampleRate: req.SampleRate}
	l.voice, l.format, l.chars, l.model = req.Voice, req.Format, len([]rune(req.Text)), req.Model
	l.sampleRate, l.buffered = encode.OutputRate(spec), !req.Stream
	enc, err := encode.New(spec)
	if err != nil {
		l.err = err.Error()
		fail(http.StatusInternalServerError, "encoder_failure", map[string]string{"error": "encoder_failure", "message": err.Error()})
		return
	}
	defer enc.Close()
	depth, ok := s.gate.AcquireWithin(limit)
	admitted := time.Now()
	l.queueDepth = depth
	if !ok {
		fail(http.StatusServiceUnavailable, "queue_saturated", struct {
			Error         string `json:"error"`
			QueueDepth    int    `json:"queue_depth"`
			MaxQueueDepth int    `json:"max_queue_depth"`
		}{"queue_saturated", depth, s.gate.Within(limit)})
		return
	}
	// The gate place is given back as soon as the request no longer needs
	// the engine (its last segment is synthesized), not when its client has
	// read everything: the shield counts requests waiting for or running on
	// the engine (docs/design.md, "Queue gate": "waiting + running"), not
	// clients. Synthesis never waits for the reader (streamBuffers),
	// so a client that reads slowly or not at all cannot hold a place beyond
	// its request's engine time; its audio waits in the stream buffer
	// (STREAM_BUFFER_BYTES bounds them all) and CLIENT_LAG_LIMIT bounds how
	// long it may drain. streams still counts it, so Drain waits for it.
	s.streams.Add(1)
	defer s.streams.Add(-1)
	var releaseOnce sync.Once
	release := func() { releaseOnce.Do(s.gate.Release) }
	defer release()
	// Drain sets draining before it reads the depth, and this request took its
	// place before reading draining: either Drain waits for this request or
	// the request sees draining here. Without this second look a request
	// decoded while Drain ran could be admitted after Drain reported none.
	if s.draining.Load() {
		shuttingDown()
		return
	}

	ctx, cancel := context.WithCancelCause(r.Context())
	defer cancel(nil)
	segs := segment.Split(req.Text)
	if s.opts.Scheduler == Deadline && s.opts.FirstSegmentRunes > 0 {
		segs = segment.ShortenFirst(segs, s.opts.FirstSegmentRunes)
	}
	l.segments = len(segs)
	// A cut aborts the write in progress: its deadline moves to now.
	st := s.buffers.open(cancel, func() { rc.SetWriteDeadline(time.Now()) })
	defer st.close()
	j := &job{ctx: ctx, segs: segs, voice: req.Voice, speed: req.Speed, st: st, admitted: admitted, synthDone: make(chan struct{})}
	// draining is set by whichever comes first: synthesis done (the request
	// then counts as draining until its handler ends) or the handler's end.
	var draining atomic.Bool
	defer func() {
		if !draining.CompareAndSwap(false, true) {
			s.drainingStreams.Add(-1)
		}
	}()
	go func() {
		select {
		case <-j.synthDone:
			release()
			if draining.CompareAndSwap(false, true) {
				s.drainingStreams.Add(1)
			}
		case <-ctx.Done():
		}
	}()
	be.sched.submit(j)
	stall := stallMeter{rate: eng.SampleRate()}

	started := false
	var whole []byte // stream false: the answer until it is complete
	begin := func() {
		started = true
		h := w.Header()
		h.Set("X-Sample-Rate", strconv.Itoa(l.sampleRate))
		h.Set("X-Engine", l.engine)
		h.Set("Content-Type", encode.ContentType(req.Format))
		switch req.Format {
		case FormatPCM:
			h.Set("X-Audio-Format", "pcm_s16le; channels=1")
		case FormatMuLaw:
			h.Set("X-Audio-Format", "mulaw; rate=8000; channels=1")
		}
		if !req.Stream {
			h.Set("Content-Length", strconv.Itoa(len(whole)))
		}
		w.WriteHeader(http.StatusOK)
	}
	// endCut ends a request whose stream the buffer bound cut: a 503 if
	// nothing was sent yet (another instance can serve it), else the stream
	// is cut short.
	endCut := func(cut *bufferCut) {
		l.err = cut.Error()
		if !started {
			s.setWriteDeadline(rc)
			fail(http.StatusServiceUnavailable, "stream_buffer_full", map[string]string{"error": "stream_buffer_full",
				"message": "this instance holds as much audio for slow clients as STREAM_BUFFER_BYTES allows; retry, or on another instance"})
			return
		}
		l.status, l.outcome = http.StatusOK, "stream_buffer_full"
		panic(http.ErrAbortHandler)
	}
	var buf []byte
	var samples int64 // synthesized so far
	for {
		c, err := st.pop(ctx)
		if err != nil {
			if cut, ok := context.Cause(ctx).(*bufferCut); ok {
				endCut(cut)
				return
			}
			l.status, l.outcome, l.err = 499, "client_gone", "the client closed the connection"
			if started {
				l.status = http.StatusOK
			}
			return
		}
		if c.err != nil {
			l.err = c.err.Error()
			outcome, code := "engine_error", "engine_failure"
			if c.timeout {
				outcome, code = "engine_timeout", "engine_timeout"
			}
			if !started {
				s.setWriteDeadline(rc)
				fail(http.StatusInternalServerError, outcome, map[string]string{"error": code, "message": c.err.Error()})
				return
			}
			// The status line is gone already: cut the stream so the client
			// sees a truncated response instead of a short but clean one.
			// The deferred log still runs while the panic unwinds.
			l.status, l.outcome = http.StatusOK, outcome+"_midstream"
			panic(http.ErrAbortHandler)
		}
		if len(c.samples) > 0 && !l.firstSample {
			l.firstSample = true
			l.queueWait = j.started.Sub(admitted)
		}
		samples += int64(len(c.samples))
		buf, err = enc.Encode(buf[:0], c.samples)
		if err == nil && c.end {
			buf, err = enc.Finish(buf)
		}
		if err != nil {
			l.err = "encode " + req.Format + ": " + err.Error()
			if !started {
				fail(http.StatusInternalServerError, "encoder_failure", map[string]string{"error": "encoder_failure", "message": l.err})
				return
			}
			l.status, l.outcome = http.StatusOK, "encoder_failure_midstream"
			panic(http.ErrAbortHandler)
		}
		if !req.Stream {
			// The whole answer, then its exact length (and for wav the
			// exact RIFF and data sizes) in one write.
			whole = append(whole, buf...)
			if cut := st.hold(len(buf)); cut != nil {
				endCut(cut)
				return
			}
			if !c.end {
				continue
			}
			if req.Format == FormatWAV {
				audio.SetWAVSizes(whole)
			}
			buf = whole
		}
		if !started && len(buf) == 0 {
			begin()
		}
		if l.firstSample && l.ttfab == 0 && len(buf) > 0 {
			now := time.Now()
			l.ttfab = now.Sub(start)
			j.firstSent.Store(int64(max(now.Sub(admitted), 1)))
		}
		before := stall.before
		if len(c.samples) > 0 {
			l.stall = stall.add(time.Now(), len(c.samples))
		}
		meter, n := stall, len(c.samples)
		if !req.Stream {
			// The whole answer in one write, read at real time from now.
			meter, before, n = stallMeter{rate: stall.rate, first: time.Now()}, 0, int(samples)
		}
		if len(buf) > 0 {
			// Each write gets StallTimeout: a client that stops reading
			// fills the socket buffers, the write blocks, and the deadline
			// ends the request and frees its buffered audio. A client
			// further behind real time than ClientLagLimit is cut sooner,
			// and the stream buffer's bound (STREAM_BUFFER_BYTES) cuts the
			// stream whose write is furthest past due first.
			now := time.Now()
			due, playing := meter.takenBy(before, n, now)
			var lagCut bool
			// The status line is decided under the cut's lock too: a cut
			// before the first write still answers 503.
			if cut := st.beginWrite(now.Add(meter.duration(int64(n))), func() {
				if !started {
					begin()
				}
				lagCut = s.setStreamWriteDeadline(rc, now, due, playing)
			}); cut != nil {
				endCut(cut)
				return
			}
			written, err := w.Write(buf)
			l.bytes += int64(written)
			if err == nil {
				err = rc.Flush()
			}
			st.endWrite()
			if err != nil {
				if cut := st.cutReason(); cut != nil {
					endCut(cut)
					return
				}
				l.status, l.outcome, l.err = http.StatusOK, "client_gone", err.Error()
				if errors.Is(err, os.ErrDeadlineExceeded) {
					l.outcome = "client_stalled"
					l.err = fmt.Sprintf("the client read nothing for %s (WRITE_STALL_TIMEOUT): the stream is cut", s.opts.StallTimeout)
					if lagCut {
						l.outcome = "client_too_slow"
						l.err = fmt.Sprintf("the client fell more than %s behind real-time playback (CLIENT_LAG_LIMIT): the stream is cut", s.opts.ClientLagLimit)
					}
				}
				// Do not let net/http try to finish the response on a
				// connection that is not draining.
				panic(http.ErrAbortHandler)
			}
		}
		if c.end {
			l.status, l.outcome = http.StatusOK, "ok"
			return
		}
	}
}

// VoiceList is the answer to {"voices": true}.
type VoiceList struct {
	Engine  string             `json:"engine"`
	Default string             `json:"default"`
	Voices  []engine.VoiceInfo `json:"voices"`
}

// stallMeter computes a response's playback stall from the server's own
// send times, by bench.Stall's definition: a real-time player starts at the
// first audio sent; a chunk whose first sample is needed at (samples before
// it ÷ rate) after that and is sent at t is late by t minus that; the stall
// is the largest lateness so far, never negative. It is the server's view
// (write times, not arrivals), so a client's stall is this plus the
// network's jitter.
type stallMeter struct {
	rate   int
	first  time.Time
	before int64
	worst  time.Duration
}

// add accounts n samples sent at t and returns the stall so far.
func (m *stallMeter) add(t time.Time, n int) time.Duration {
	if m.first.IsZero() {
		m.first = t
	}
	if m.rate > 0 {
		due := time.Duration(float64(m.before) / float64(m.rate) * float64(time.Second))
		m.worst = max(m.worst, t.Sub(m.first)-due)
	}
	m.before += int64(n)
	return m.worst
}

// takenBy is when a real-time player that started at the first audio would
// have taken all of a write of n samples with before samples ahead of them:
// max(when the player needs them, now) + their duration. playing is false
// before the first audio (no player has started; the time is then now plus
// their duration).
func (m stallMeter) takenBy(before int64, n int, now time.Time) (due time.Time, playing bool) {
	if m.rate <= 0 {
		return now, false
	}
	need := now
	if playing = !m.first.IsZero(); playing {
		need = m.first.Add(m.duration(before))
		if need.Before(now) {
			need = now
		}
	}
	return need.Add(m.duration(int64(n))), playing
}

// duration is how long n samples play (0 without a rate).
func (m stallMeter) duration(n int64) time.Duration {
	if m.rate <= 0 {
		return 0
	}
	return time.Duration(float64(n) / float64(m.rate) * float64(time.Second))
}

// setStreamWriteDeadline sets the deadline of an audio write started at now:
// StallTimeout from now, or sooner the moment the client is ClientLagLimit
// behind a real-time player that started at the first audio, that is
// ClientLagLimit after due (stallMeter.takenBy) once the player plays. Socket
// buffers (the 256 KiB send buffer, the client's receive window) count as
// read, so a client that reads nothing is cut after about their worth of
// audio plus the bound. It reports whether the lag bound is the sooner one.
func (s *Server) setStreamWriteDeadline(rc *http.ResponseController, now, due time.Time, playing bool) bool {
	var deadline time.Time
	if s.opts.StallTimeout > 0 {
		deadline = now.Add(s.opts.StallTimeout)
	}
	lag := false
	if s.opts.ClientLagLimit > 0 && playing {
		d := due.Add(s.opts.ClientLagLimit)
		if deadline.IsZero() || d.Before(deadline) {
			deadline, lag = d, true
		}
	}
	if !deadline.IsZero() {
		rc.SetWriteDeadline(deadline)
	}
	return lag
}

// setWriteDeadline gives the next writes StallTimeout from now.
func (s *Server) setWriteDeadline(rc *http.ResponseController) {
	if s.opts.StallTimeout > 0 {
		rc.SetWriteDeadline(time.Now().Add(s.opts.StallTimeout))
	}
}

// requestID is the request's id: X-Amzn-SageMaker-Inference-Id when it is
// one InvokeEndpoint could have sent (its InferenceId: 1 to 64 printable
// ASCII characters, the first not a space; SageMaker Runtime API reference),
// else an id of the server's own. A header that is not one is not echoed into
// the logs and the X-Request-Id header.
func (s *Server) requestID(r *http.Request) string {
	if id := r.Header.Get("X-Amzn-SageMaker-Inference-Id"); validInferenceID(id) {
		return id
	}
	return fmt.Sprintf("%s-%d", s.idPrefix, s.seq.Add(1))
}

// validInferenceID reports whether id fits InvokeEndpoint's InferenceId:
// length 1 to 64, pattern \A\S[\p{Print}]*\z over printable ASCII.
func validInferenceID(id string) bool {
	if len(id) == 0 || len(id) > 64 || id[0] == ' ' {
		return false
	}
	for i := 0; i < len(id); i++ {
		if id[i] < 0x20 || id[i] > 0x7e {
			return false
		}
	}
	return true
}

// EmitMetrics writes one CloudWatch embedded-metric-format line with the
// current queue depth, the peak depth and the rejections since the last line
// as metrics, and two properties that are logged, not published as metrics:
// DrainingStreams, the requests whose audio is all synthesized (their queue
// place given back) still being written to their clients, and
// BufferedAudioBytes, the audio held for clients slower than synthesis
// (bounded by STREAM_BUFFER_BYTES).
func (s *Server) EmitMetrics() {
	line := map[string]any{
		"_aws": map[string]any{
			"Timestamp": time.Now().UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  MetricsNamespace,
				"Dimensions": [][]string{{"InstanceId"}},
				"Metrics": []map[string]string{
					{"Name": "QueueDepth", "Unit": "Count"},
					{"Name": "QueueDepthPeak", "Unit": "Count"},
					{"Name": "QueueRejections", "Unit": "Count"},
				},
			}},
		},
		"InstanceId":      s.opts.InstanceID,
		"QueueDepth":      s.gate.Depth(),
		"QueueDepthPeak":  s.gate.TakePeak(),
		"QueueRejections": s.gate.TakeRejected(),
		// Properties only (not in CloudWatchMetrics above).
		"DrainingStreams":    s.drainingStreams.Load(),
		"BufferedAudioBytes": s.buffers.Bytes(),
	}
	b, _ := json.Marshal(line)
	s.out.Write(append(b, '\n'))
}

// MetricsNamespace is the CloudWatch namespace of the container's metrics.
const MetricsNamespace = "SpeechInfra/Container"

// RunMetrics calls EmitMetrics every interval until ctx ends, and when no
// request is in flight gives memory back to the system (ReturnIdleMemory).
func (s *Server) RunMetrics(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			s.EmitMetrics()
			s.ReturnIdleMemory()
		}
	}
}

// IdleMemoryToReturn is how much freed heap an idle server keeps before it
// hands memory back to the system.
const IdleMemoryToReturn = 16 << 20

// ReturnIdleMemory runs a collection and returns freed memory to the system
// when no request is in flight and more than IdleMemoryToReturn could be
// returned. Without it the memory of a burst (1,000 non-reading clients
// holding their buffered audio: 1.68 GB) stays with the process: nothing
// allocates once the burst has gone, so no collection frees it until Go's
// two-minute forced one, and the scavenger then returns it slowly. It
// reports whether it returned memory.
func (s *Server) ReturnIdleMemory() bool {
	if s.streams.Load() > 0 {
		return false
	}
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	// The heap memory held from the system, against what it was after the
	// last return (live data stays: a large live heap is not returned again
	// and again).
	held := m.HeapInuse + m.HeapIdle - m.HeapReleased
	if held < s.heldAfterReturn.Load()+IdleMemoryToReturn {
		return false
	}
	debug.FreeOSMemory()
	runtime.ReadMemStats(&m)
	s.heldAfterReturn.Store(m.HeapInuse + m.HeapIdle - m.HeapReleased)
	return true
}
