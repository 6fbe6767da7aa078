package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
)

// Formats of a streamed response, as ReadStream recognized them.
const (
	// FormatWAV is a RIFF/WAVE stream: a header (44 bytes for the container's canonical one) before the samples.
	FormatWAV = "wav"
	// FormatPCM is headerless PCM16 mono: every byte is audio.
	FormatPCM = "pcm"
)

// MaxWAVHeader bounds the WAV header ReadStream buffers while looking for the data chunk; a stream whose
// header is longer is refused rather than buffered without limit.
const MaxWAVHeader = 64 << 10

// ErrTruncatedHeader is returned (wrapped) when a stream ends before its WAV header does.
var ErrTruncatedHeader = errors.New("the stream ended inside the WAV header")

// EventStream is what ReadStream needs of an InvokeEndpointWithResponseStream response's event stream;
// *sagemakerruntime.InvokeEndpointWithResponseStreamEventStream (the output's GetStream()) satisfies it.
type EventStream interface {
	Events() <-chan rttypes.ResponseStream
	Close() error
	Err() error
}

// StreamInvoker is the one SageMaker Runtime call InvokeStream makes; *sagemakerruntime.Client satisfies it.
type StreamInvoker interface {
	InvokeEndpointWithResponseStream(ctx context.Context, in *sagemakerruntime.InvokeEndpointWithResponseStreamInput, optFns ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error)
}

// StreamOptions tune ReadStream. The zero value is ready to use.
type StreamOptions struct {
	// Now is the clock that stamps arrivals; time.Now when nil.
	Now func() time.Time
	// Keep keeps the whole payload (header included) in StreamResult.Payload.
	Keep bool
	// PCMSampleRate is the sample rate of a headerless PCM stream, which says nothing about it; 0 leaves
	// StreamResult.SampleRate and Stall unknown (zero) for such a stream. A WAV stream's header gives its own.
	PCMSampleRate int
	// Chunks keeps every audio arrival in StreamResult.Chunks (the stall is computed either way).
	Chunks bool
}

// StreamResult is what one streamed response delivered and when.
type StreamResult struct {
	// Format is FormatWAV or FormatPCM, or "" when the stream carried no payload.
	Format string
	// Bytes counts every payload byte, header included; Events counts the payload parts.
	Bytes  int64
	Events int
	// HeaderBytes is the length of the WAV header (0 for PCM); AudioBytes counts the bytes after it.
	HeaderBytes int
	AudioBytes  int64
	// Samples is AudioBytes in whole sample frames (channels × bits/8 bytes each; PCM16 mono for PCM).
	Samples int64
	// SampleRate, Channels and BitsPerSample come from the WAV header (PCM: StreamOptions.PCMSampleRate, 1, 16).
	SampleRate    int
	Channels      int
	BitsPerSample int
	// Sent is when InvokeStream sent the request (zero from ReadStream alone).
	Sent time.Time
	// FirstByte is when the first payload byte arrived, FirstAudio when the first byte after any WAV header
	// arrived (zero when no audio came), End when the stream ended.
	FirstByte  time.Time
	FirstAudio time.Time
	End        time.Time
	// Stall is how late the latest audio arrived for a real-time player that started at FirstAudio: the
	// largest (arrival − FirstAudio − audio before it ÷ rate) over the payload parts, never negative; zero
	// when the sample rate is unknown.
	Stall time.Duration
	// Payload is the whole payload, with StreamOptions.Keep only.
	Payload []byte
	// Chunks are the audio arrivals (offset from FirstAudio, audio bytes), with StreamOptions.Chunks only.
	// Stall(Chunks, SampleRate, frame bytes) equals Stall.
	Chunks []Chunk
}

// TTFAB is the time to first audio byte: from Sent to FirstAudio, or 0 when either is unknown.
func (r StreamResult) TTFAB() time.Duration {
	if r.Sent.IsZero() || r.FirstAudio.IsZero() {
		return 0
	}
	return r.FirstAudio.Sub(r.Sent)
}

// ModelStreamError is a ModelStreamError exception event that ended a stream: the model container failed
// after the stream had started. ErrorCode is StreamBroken or ModelInvocationTimeExceeded, the two codes
// SageMaker documents; a container that fails before streaming is a ModelError instead. It unwraps to the
// SDK's *types.ModelStreamError.
type ModelStreamError struct {
	ErrorCode string
	Message   string
	Err       error
}

func (e *ModelStreamError) Error() string {
	return fmt.Sprintf("model stream error %s: %s", e.ErrorCode, e.Message)
}

// Unwrap returns the SDK's error.
func (e *ModelStreamError) Unwrap() error { return e.Err }

// ModelError is the ModelError a response-stream invocation was refused with: the model container answered
// OriginalStatusCode with OriginalMessage. It unwraps to the SDK's *types.ModelError.
type ModelError struct {
	OriginalStatusCode int
	OriginalMessage    string
	Message            string
	LogStreamArn       string
	Err                error
}

func (e *ModelError) Error() string {
	return fmt.Sprintf("model error: the container answered %d: %s", e.OriginalStatusCode, e.OriginalMessage)
}

// Unwrap returns the SDK's error.
func (e *ModelError) Unwrap() error { return e.Err }

// typed turns the SDK's model errors into ModelError and ModelStreamError; other errors come back as they are.
func typed(err error) error {
	var mse *rttypes.ModelStreamError
	if errors.As(err, &mse) {
		return &ModelStreamError{ErrorCode: aws.ToString(mse.ErrorCode_), Message: aws.ToString(mse.Message), Err: err}
	}
	var me *rttypes.ModelError
	if errors.As(err, &me) {
		return &ModelError{OriginalStatusCode: int(aws.ToInt32(me.OriginalStatusCode)), OriginalMessage: aws.ToString(me.OriginalMessage),
			Message: aws.ToString(me.Message), LogStreamArn: aws.ToString(me.LogStreamArn), Err: err}
	}
	return err
}

// InvokeStream calls InvokeEndpointWithResponseStream and reads the response with ReadStream, stamping Sent
// just before the call so that StreamResult.TTFAB is the time to first audio byte. A refused call returns a
// *ModelError when the container refused it.
func InvokeStream(ctx context.Context, c StreamInvoker, in *sagemakerruntime.InvokeEndpointWithResponseStreamInput, opts StreamOptions) (StreamResult, error) {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	sent := now()
	out, err := c.InvokeEndpointWithResponseStream(ctx, in)
	if err != nil {
		return StreamResult{Sent: sent}, fmt.Errorf("invoke %s with a response stream: %w", aws.ToString(in.EndpointName), typed(err))
	}
	res, err := ReadStream(ctx, out.GetStream(), opts)
	res.Sent = sent
	if err != nil {
		return res, fmt.Errorf("stream from %s: %w", aws.ToString(in.EndpointName), err)
	}
	return res, nil
}

// ReadStream reads s to its end and always closes it, also when ctx ends first or the stream fails. It
// returns what arrived so far together with any error: a *ModelStreamError for a ModelStreamError event,
// ErrTruncatedHeader when the stream ends inside a WAV header, ctx's error when ctx ends first.
//
// A stream that starts with "RIFF" is WAV: its header is parsed across payload parts (it may be split
// anywhere) up to the data chunk, and audio starts after it. Anything else is headerless PCM16 mono.
func ReadStream(ctx context.Context, s EventStream, opts StreamOptions) (res StreamResult, err error) {
	defer func() {
		if cerr := s.Close(); cerr != nil && err == nil {
			err = fmt.Errorf("close the response stream: %w", cerr)
		}
	}()
	r := reader{opts: opts, now: opts.Now}
	if r.now == nil {
		r.now = time.Now
	}
	events := s.Events()
	for {
		select {
		case <-ctx.Done():
			r.res.End = r.now()
			return r.result(), fmt.Errorf("read the response stream: %w", ctx.Err())
		case ev, ok := <-events:
			if !ok {
				r.res.End = r.now()
				if err := s.Err(); err != nil {
					return r.result(), fmt.Errorf("read the response stream: %w", typed(err))
				}
				if err := r.finish(); err != nil {
					return r.result(), err
				}
				return r.result(), nil
			}
			part, isPart := ev.(*rttypes.ResponseStreamMemberPayloadPart)
			if !isPart || len(part.Value.Bytes) == 0 {
				continue // unknown members carry no payload
			}
			if err := r.add(part.Value.Bytes, r.now()); err != nil {
				r.res.End = r.now()
				return r.result(), err
			}
		}
	}
}

// reader folds payload parts into a StreamResult.
type reader struct {
	opts    StreamOptions
	now     func() time.Time
	res     StreamResult
	header  []byte // the payload so far while the format or the WAV header is still undecided
	inAudio bool   // the header (if any) is behind us: every further byte is audio
	frame   int    // bytes per sample frame
}

func (r *reader) result() StreamResult {
	res := r.res
	if r.frame > 0 {
		res.Samples = res.AudioBytes / int64(r.frame)
	}
	return res
}

// add takes one payload part that arrived at t.
func (r *reader) add(b []byte, t time.Time) error {
	r.res.Events++
	r.res.Bytes += int64(len(b))
	if r.opts.Keep {
		r.res.Payload = append(r.res.Payload, b...)
	}
	if r.res.FirstByte.IsZero() {
		r.res.FirstByte = t
	}
	if r.inAudio {
		r.audio(len(b), t)
		return nil
	}
	r.header = append(r.header, b...)
	riff := []byte("RIFF")
	if n := min(len(r.header), len(riff)); !bytes.Equal(r.header[:n], riff[:n]) {
		// Headerless PCM: everything so far is audio, and it began with the first byte.
		r.res.Format, r.res.SampleRate, r.res.Channels, r.res.BitsPerSample = FormatPCM, r.opts.PCMSampleRate, 1, 16
		r.frame, r.inAudio = 2, true
		n := len(r.header)
		r.header = nil
		r.audio(n, r.res.FirstByte)
		return nil
	}
	if len(r.header) < len(riff) {
		return nil
	}
	r.res.Format = FormatWAV
	hlen, done, err := r.parseWAV()
	if err != nil {
		return err
	}
	if !done {
		if len(r.header) > MaxWAVHeader {
			return fmt.Errorf("read the response stream: the WAV header is longer than %d bytes without a data chunk: the stream is not the container's audio", MaxWAVHeader)
		}
		return nil
	}
	rest := len(r.header) - hlen
	r.res.HeaderBytes, r.inAudio, r.header = hlen, true, nil
	if rest > 0 {
		r.audio(rest, t)
	}
	return nil
}

// audio accounts n audio bytes that arrived at t.
func (r *reader) audio(n int, t time.Time) {
	if r.res.FirstAudio.IsZero() {
		r.res.FirstAudio = t
	}
	// A real-time player started at FirstAudio needs the first sample of this part at its due time (Stall).
	at := t.Sub(r.res.FirstAudio)
	if late := lateness(at, r.res.AudioBytes, r.res.SampleRate, r.frame); late > r.res.Stall {
		r.res.Stall = late
	}
	if r.opts.Chunks {
		r.res.Chunks = append(r.res.Chunks, Chunk{At: at, Bytes: int64(n)})
	}
	r.res.AudioBytes += int64(n)
}

// parseWAV walks the RIFF chunks buffered so far. It returns the header's length (up to and including the
// data chunk's 8-byte header) once the data chunk has begun, or done=false while more bytes are needed.
func (r *reader) parseWAV() (hlen int, done bool, err error) {
	h := r.header
	if len(h) < 12 {
		return 0, false, nil
	}
	if string(h[8:12]) != "WAVE" {
		return 0, false, fmt.Errorf("read the response stream: a RIFF stream of form %q, not WAVE: the stream is not WAV audio", h[8:12])
	}
	pos := 12
	for {
		if len(h) < pos+8 {
			return 0, false, nil
		}
		id, size := string(h[pos:pos+4]), int(binary.LittleEndian.Uint32(h[pos+4:pos+8]))
		switch id {
		case "data":
			if r.frame == 0 {
				return 0, false, errors.New("read the response stream: the WAV data chunk comes before any fmt chunk: the stream is not playable WAV")
			}
			return pos + 8, true, nil
		case "fmt ":
			if size < 16 {
				return 0, false, fmt.Errorf("read the response stream: a WAV fmt chunk of %d bytes, want at least 16: the stream is not playable WAV", size)
			}
			if len(h) < pos+8+16 {
				return 0, false, nil
			}
			f := h[pos+8:]
			r.res.Channels = int(binary.LittleEndian.Uint16(f[2:4]))
			r.res.SampleRate = int(binary.LittleEndian.Uint32(f[4:8]))
			r.res.BitsPerSample = int(binary.LittleEndian.Uint16(f[14:16]))
			r.frame = r.res.Channels * ((r.res.BitsPerSample + 7) / 8)
			if r.frame <= 0 {
				return 0, false, fmt.Errorf("read the response stream: a WAV fmt chunk with %d channels of %d bits: the stream is not playable WAV", r.res.Channels, r.res.BitsPerSample)
			}
		}
		if size > MaxWAVHeader {
			return 0, false, fmt.Errorf("read the response stream: a %d-byte %q chunk before the WAV data chunk: the stream is not the container's audio", size, id)
		}
		pos += 8 + size + size&1 // chunks are padded to even lengths
	}
}

// finish checks the stream's end: it may not end inside a WAV header.
func (r *reader) finish() error {
	if r.inAudio || len(r.header) == 0 {
		return nil
	}
	if r.res.Format == "" {
		r.res.Format = FormatWAV // a prefix of "RIFF" and nothing more
	}
	return fmt.Errorf("read the response stream: %w after %d bytes: the container stopped before sending audio", ErrTruncatedHeader, len(r.header))
}
