package bench

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sagemakerruntime"
	rttypes "github.com/aws/aws-sdk-go-v2/service/sagemakerruntime/types"
)

// stream is a hand-written EventStream: it delivers parts (one event each) and then ends with err; closed
// counts Close calls. With hold set the channel stays open after the parts (a stream that never ends).
type stream struct {
	parts  [][]byte
	err    error
	hold   bool
	closed int
	ch     chan rttypes.ResponseStream
}

func (s *stream) Events() <-chan rttypes.ResponseStream {
	if s.ch == nil {
		s.ch = make(chan rttypes.ResponseStream, len(s.parts)+1)
		s.ch <- &rttypes.UnknownUnionMember{Tag: "SomethingNew", Value: []byte("ignored")}
		for _, p := range s.parts {
			s.ch <- &rttypes.ResponseStreamMemberPayloadPart{Value: rttypes.PayloadPart{Bytes: p}}
		}
		if !s.hold {
			close(s.ch)
		}
	}
	return s.ch
}

func (s *stream) Close() error { s.closed++; return nil }
func (s *stream) Err() error   { return s.err }

// tick is a clock that advances one second per reading, starting at t0 + 1 s.
func tick() (func() time.Time, time.Time) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	t := t0
	return func() time.Time { t = t.Add(time.Second); return t }, t0
}

// wavHeader is the container's canonical 44-byte header: PCM16 mono at rate, streaming sizes.
func wavHeader(rate int) []byte {
	h := make([]byte, 0, 44)
	h = append(h, "RIFF"...)
	h = binary.LittleEndian.AppendUint32(h, 0xFFFFFFFF)
	h = append(h, "WAVEfmt "...)
	h = binary.LittleEndian.AppendUint32(h, 16)
	h = binary.LittleEndian.AppendUint16(h, 1) // PCM
	h = binary.LittleEndian.AppendUint16(h, 1) // mono
	h = binary.LittleEndian.AppendUint32(h, uint32(rate))
	h = binary.LittleEndian.AppendUint32(h, uint32(rate*2))
	h = binary.LittleEndian.AppendUint16(h, 2)
	h = binary.LittleEndian.AppendUint16(h, 16)
	h = append(h, "data"...)
	return binary.LittleEndian.AppendUint32(h, 0xFFFFFFFF)
}

//lint:ignore ST1008 the time comes last because every caller reads it after checking res and err
func read(t *testing.T, s *stream, opts StreamOptions) (StreamResult, error, time.Time) {
	t.Helper()
	now, t0 := tick()
	opts.Now = now
	res, err := ReadStream(context.Background(), s, opts)
	if s.closed != 1 {
		t.Errorf("Close called %d times, want once", s.closed)
	}
	return res, err, t0
}

func TestReadStreamCanonicalWAV(t *testing.T) {
	audio := bytes.Repeat([]byte{1, 0}, 100)
	s := &stream{parts: [][]byte{append(wavHeader(24000), audio[:60]...), audio[60:]}}
	res, err, t0 := read(t, s, StreamOptions{Keep: true})
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatWAV || res.HeaderBytes != 44 || res.AudioBytes != 200 || res.Samples != 100 || res.Bytes != 244 || res.Events != 2 {
		t.Errorf("result = %+v, want WAV, 44-byte header, 200 audio bytes, 100 samples, 244 bytes in 2 events", res)
	}
	if res.SampleRate != 24000 || res.Channels != 1 || res.BitsPerSample != 16 {
		t.Errorf("format = %d Hz, %d ch, %d bits; want 24000 Hz mono 16-bit", res.SampleRate, res.Channels, res.BitsPerSample)
	}
	if want := t0.Add(time.Second); !res.FirstAudio.Equal(want) || !res.FirstByte.Equal(want) {
		t.Errorf("first byte %v, first audio %v; want both at the first part %v", res.FirstByte, res.FirstAudio, want)
	}
	if want := append(wavHeader(24000), audio...); !bytes.Equal(res.Payload, want) {
		t.Errorf("kept payload differs from what was sent (%d bytes, want %d)", len(res.Payload), len(want))
	}
}

// Split at every byte of the header: audio starts with the part that carries the first byte after the
// header, never with a part that only finishes the header.
func TestReadStreamHeaderSplitAnywhere(t *testing.T) {
	whole := append(wavHeader(22050), bytes.Repeat([]byte{7, 0}, 10)...)
	for cut := 1; cut < len(whole); cut++ {
		splits := [][][]byte{{whole[:cut], whole[cut:]}}
		if cut > 1 {
			splits = append(splits, [][]byte{whole[:cut/2], whole[cut/2 : cut], whole[cut:]})
		}
		for _, parts := range splits {
			s := &stream{parts: parts}
			res, err, t0 := read(t, s, StreamOptions{})
			if err != nil {
				t.Fatalf("cut %d: %v", cut, err)
			}
			// The part index (1-based) that holds byte 44, the first audio byte.
			n, first := 0, 0
			for i, p := range parts {
				n += len(p)
				if n > 44 && first == 0 {
					first = i + 1
				}
			}
			if want := t0.Add(time.Duration(first) * time.Second); !res.FirstAudio.Equal(want) {
				t.Errorf("cut %d into %d parts: first audio at part %v, want part %d", cut, len(parts), res.FirstAudio.Sub(t0), first)
			}
			if res.HeaderBytes != 44 || res.AudioBytes != 20 || res.Samples != 10 || !res.FirstByte.Equal(t0.Add(time.Second)) {
				t.Errorf("cut %d: %+v", cut, res)
			}
		}
	}
}

// A header with a LIST chunk (and an odd-sized chunk's pad byte) before data is not 44 bytes long.
func TestReadStreamLongerHeader(t *testing.T) {
	h := wavHeader(16000)
	var long []byte
	long = append(long, h[:36]...)
	long = append(long, "LIST"...)
	long = binary.LittleEndian.AppendUint32(long, 5)
	long = append(long, "INFOx\x00"...)
	long = append(long, h[36:]...)
	s := &stream{parts: [][]byte{long[:40], long[40:], {1, 2, 3, 4}}}
	res, err, t0 := read(t, s, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if res.HeaderBytes != 58 || res.AudioBytes != 4 || res.Samples != 2 || !res.FirstAudio.Equal(t0.Add(3*time.Second)) {
		t.Errorf("result = %+v, want a 58-byte header and audio from the third part", res)
	}
}

func TestReadStreamPCM(t *testing.T) {
	// "RI" could begin a WAV header; the next part shows it is PCM, which began with the first byte.
	s := &stream{parts: [][]byte{[]byte("RI"), []byte("ck"), bytes.Repeat([]byte{0, 1}, 8)}}
	res, err, t0 := read(t, s, StreamOptions{PCMSampleRate: 24000})
	if err != nil {
		t.Fatal(err)
	}
	if res.Format != FormatPCM || res.HeaderBytes != 0 || res.AudioBytes != 20 || res.Samples != 10 || res.SampleRate != 24000 {
		t.Errorf("result = %+v, want PCM, 20 audio bytes, 10 samples at 24000 Hz", res)
	}
	if want := t0.Add(time.Second); !res.FirstAudio.Equal(want) {
		t.Errorf("first audio at %v, want the first part's %v", res.FirstAudio.Sub(t0), want.Sub(t0))
	}
}

// Stall: a part due at 0.5 s of playback that arrives 3 s after the first audio is 2.5 s late.
func TestReadStreamStall(t *testing.T) {
	const rate = 1000
	half := make([]byte, rate) // 500 samples: 0.5 s
	s := &stream{parts: [][]byte{append(wavHeader(rate), half...), half, half}}
	res, err, _ := read(t, s, StreamOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Parts arrive at 1 s, 2 s, 3 s; they are due at 1 s, 1.5 s, 2 s: late by 0, 0.5 s, 1 s.
	if res.Stall != time.Second {
		t.Errorf("stall = %v, want 1s", res.Stall)
	}
	if got, _, _ := read(t, &stream{parts: [][]byte{half, half}}, StreamOptions{}); got.Stall != 0 {
		t.Errorf("PCM without a sample rate: stall = %v, want 0 (unknown)", got.Stall)
	}
}

func TestReadStreamModelStreamError(t *testing.T) {
	sdkErr := &rttypes.ModelStreamError{ErrorCode_: aws.String("400"), Message: aws.String("Received error (400) from the model container: no text")}
	s := &stream{parts: [][]byte{append(wavHeader(24000), 1, 0)}, err: sdkErr}
	res, err, _ := read(t, s, StreamOptions{})
	var mse *ModelStreamError
	if !errors.As(err, &mse) || mse.ErrorCode != "400" || !strings.Contains(mse.Message, "no text") {
		t.Fatalf("error = %v, want a *bench.ModelStreamError with code 400", err)
	}
	var sdk *rttypes.ModelStreamError
	if !errors.As(err, &sdk) || sdk != sdkErr {
		t.Errorf("error %v does not unwrap to the SDK's ModelStreamError", err)
	}
	if res.AudioBytes != 2 || res.FirstAudio.IsZero() {
		t.Errorf("what arrived before the error is lost: %+v", res)
	}
}

func TestReadStreamTruncatedOrBadHeader(t *testing.T) {
	h := wavHeader(24000)
	for name, tc := range map[string]struct {
		parts [][]byte
		want  string
	}{
		"ends inside the header":   {[][]byte{h[:20], h[20:30]}, "ended inside the WAV header after 30 bytes"},
		"ends after RI":            {[][]byte{[]byte("RI")}, "ended inside the WAV header after 2 bytes"},
		"not WAVE":                 {[][]byte{append([]byte("RIFF\xff\xff\xff\xffAVI "), h[12:]...)}, `form "AVI ", not WAVE`},
		"data before fmt":          {[][]byte{append([]byte("RIFF\xff\xff\xff\xffWAVE"), h[36:]...)}, "data chunk comes before any fmt chunk"},
		"header without an end":    {[][]byte{append(h[:36], append([]byte("junk\xff\xff\xff\x7f"), make([]byte, 100)...)...)}, "chunk before the WAV data chunk"},
		"fmt without a frame size": {[][]byte{append(append(h[:34:34], 0, 0), h[36:]...)}, "0 bits"},
	} {
		s := &stream{parts: tc.parts}
		_, err, _ := read(t, s, StreamOptions{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error = %v, want it to say %q", name, err, tc.want)
		}
		if name == "ends inside the header" && !errors.Is(err, ErrTruncatedHeader) {
			t.Errorf("%s: error %v is not ErrTruncatedHeader", name, err)
		}
	}
}

func TestReadStreamEmptyAndUnknownOnly(t *testing.T) {
	res, err, _ := read(t, &stream{}, StreamOptions{})
	if err != nil || res.Format != "" || res.Bytes != 0 || !res.FirstAudio.IsZero() || res.End.IsZero() {
		t.Errorf("empty stream: %+v, %v; want no format, no audio, an end time and no error", res, err)
	}
}

// A stream that never ends is abandoned (and closed) when ctx ends.
func TestReadStreamContextEnds(t *testing.T) {
	s := &stream{parts: [][]byte{wavHeader(24000)}, hold: true}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	res, err := ReadStream(ctx, s, StreamOptions{})
	if !errors.Is(err, context.DeadlineExceeded) || s.closed != 1 || res.HeaderBytes != 44 {
		t.Errorf("ReadStream = %+v, %v, closed %d times; want the deadline error, one Close and the header counted", res, err, s.closed)
	}
}

// invoker is a hand-written StreamInvoker.
type invoker struct {
	invoke func(ctx context.Context, in *sagemakerruntime.InvokeEndpointWithResponseStreamInput) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error)
}

func (i invoker) InvokeEndpointWithResponseStream(ctx context.Context, in *sagemakerruntime.InvokeEndpointWithResponseStreamInput, _ ...func(*sagemakerruntime.Options)) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error) {
	return i.invoke(ctx, in)
}

func TestInvokeStreamModelError(t *testing.T) {
	sdkErr := &rttypes.ModelError{Message: aws.String("Received server error (500)"), OriginalStatusCode: aws.Int32(500), OriginalMessage: aws.String("boom"), LogStreamArn: aws.String("arn:log")}
	now, t0 := tick()
	res, err := InvokeStream(context.Background(), invoker{func(context.Context, *sagemakerruntime.InvokeEndpointWithResponseStreamInput) (*sagemakerruntime.InvokeEndpointWithResponseStreamOutput, error) {
		return nil, sdkErr
	}}, &sagemakerruntime.InvokeEndpointWithResponseStreamInput{EndpointName: aws.String("speech-x")}, StreamOptions{Now: now})
	var me *ModelError
	if !errors.As(err, &me) || me.OriginalStatusCode != 500 || me.OriginalMessage != "boom" || me.LogStreamArn != "arn:log" {
		t.Fatalf("error = %v, want a *bench.ModelError with original status 500", err)
	}
	var sdk *rttypes.ModelError
	if !errors.As(err, &sdk) || !strings.Contains(err.Error(), "speech-x") {
		t.Errorf("error %v does not name the endpoint or unwrap to the SDK's ModelError", err)
	}
	if !res.Sent.Equal(t0.Add(time.Second)) || res.TTFAB() != 0 {
		t.Errorf("result = %+v, want Sent stamped and no TTFAB", res)
	}
}

func TestTTFAB(t *testing.T) {
	sent := time.Unix(100, 0)
	if got := (StreamResult{Sent: sent, FirstAudio: sent.Add(250 * time.Millisecond)}).TTFAB(); got != 250*time.Millisecond {
		t.Errorf("TTFAB = %v, want 250ms", got)
	}
}
