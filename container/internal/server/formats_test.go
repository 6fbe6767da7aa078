package server

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/speech-infra/speech-infra/container/internal/audio"
	"github.com/speech-infra/speech-infra/container/internal/encode"
	"github.com/speech-infra/speech-infra/container/internal/engine"
)

// gated is the calibration engine with every segment after the first held
// until release closes: what arrives before release is what the first
// segment alone produced.
type gated struct {
	engine.Calibration
	release chan struct{}
	calls   atomic.Int32
}

func (g *gated) Synthesize(ctx context.Context, seg engine.Segment, emit engine.Emit) error {
	if g.calls.Add(1) > 1 {
		select {
		case <-g.release:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return g.Calibration.Synthesize(ctx, seg, emit)
}

// firstSegmentBytes is what the encoder produces for text's first segment,
// fed in the calibration engine's chunks, before Finish.
func firstSegmentBytes(t *testing.T, format, first string) []byte {
	t.Helper()
	enc, err := encode.New(encode.Spec{Format: format, NativeRate: engine.CalibrationSampleRate})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	var out []byte
	(&engine.Calibration{}).Synthesize(context.Background(), engine.Segment{Text: first, Speed: 1}, func(s []int16) error {
		out, err = enc.Encode(out, s)
		return err
	})
	return out
}

// TestEveryFormatStreamsAfterTheFirstSegment is the TTFAB test per format:
// the bytes the first segment encodes to reach the client while the second
// segment has not been synthesized yet, and they carry audio (more than any
// header).
func TestEveryFormatStreamsAfterTheFirstSegment(t *testing.T) {
	const text = "First part here. Second part follows."
	headerOnly := map[string]int{FormatWAV: audio.WAVHeaderSize, FormatPCM: 0, FormatMuLaw: 0, FormatOpus: opusHeaderPagesLen(t), FormatMP3: 0, FormatFLAC: 42}
	for _, format := range Formats {
		t.Run(format, func(t *testing.T) {
			ref := firstSegmentBytes(t, format, "First part here.")
			if len(ref) <= headerOnly[format] {
				t.Fatalf("the first segment encodes to %d bytes, no audio past the %d-byte header", len(ref), headerOnly[format])
			}
			eng := &gated{release: make(chan struct{})}
			_, ts, _ := startServer(t, defaultOptions(), eng)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			body := `{"input":"` + text + `","response_format":"` + format + `","model":"tts-1"}`
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, ts.URL+"/invocations", strings.NewReader(body))
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			if res.StatusCode != 200 {
				b, _ := io.ReadAll(res.Body)
				t.Fatalf("%d %s", res.StatusCode, b)
			}
			if got, want := res.Header.Get("Content-Type"), encode.ContentType(format); got != want {
				t.Errorf("Content-Type %q, want %q", got, want)
			}
			early := make([]byte, len(ref))
			if _, err := io.ReadFull(res.Body, early); err != nil {
				t.Fatalf("the first segment's %d bytes did not arrive before the second segment: %v", len(ref), err)
			}
			if eng.calls.Load() > 2 {
				t.Fatalf("engine ran %d segments before release", eng.calls.Load())
			}
			close(eng.release)
			rest, err := io.ReadAll(res.Body)
			if err != nil {
				t.Fatal(err)
			}
			whole := append(early, rest...)
			checkDecodes(t, format, whole, samplesOf(text))
		})
	}
}

// samplesOf is the calibration engine's sample count for text at speed 1.
func samplesOf(text string) int {
	n := 0
	for _, seg := range []string{"First part here.", "Second part follows."} {
		if strings.Contains(text, seg) {
			n += len([]rune(seg)) * 1440
		}
	}
	return n
}

func opusHeaderPagesLen(t *testing.T) int {
	enc, err := encode.New(encode.Spec{Format: FormatOpus, NativeRate: 24000})
	if err != nil {
		t.Fatal(err)
	}
	defer enc.Close()
	b, _ := enc.Encode(nil, nil)
	return len(b)
}

// checkDecodes checks a whole answer's length in its own terms: wav and pcm
// exact, mulaw at 8 kHz, Ogg Opus's final granule minus pre-skip exact, and
// with real decoders where installed (opusinfo, sox, flac).
func checkDecodes(t *testing.T, format string, b []byte, samples24k int) {
	t.Helper()
	switch format {
	case FormatWAV:
		if len(b) != audio.WAVHeaderSize+2*samples24k {
			t.Errorf("wav: %d bytes, want %d", len(b), audio.WAVHeaderSize+2*samples24k)
		}
	case FormatPCM:
		if len(b) != 2*samples24k {
			t.Errorf("pcm: %d bytes, want %d", len(b), 2*samples24k)
		}
	case FormatMuLaw:
		if want := samples24k / 3; abs(len(b)-want) > 2 {
			t.Errorf("mulaw: %d samples, want %d at 8 kHz", len(b), want)
		}
	case FormatOpus:
		pages := parseOgg(t, b)
		var head []byte = pages[0].packet
		preSkip := int(binary.LittleEndian.Uint16(head[10:]))
		last := pages[len(pages)-1]
		if pages[0].flags&2 == 0 || last.flags&4 == 0 {
			t.Errorf("opus: BOS/EOS flags %x … %x", pages[0].flags, last.flags)
		}
		if got := int(last.granule) - preSkip; got != 2*samples24k {
			t.Errorf("opus: %d samples at 48 kHz, want %d", got, 2*samples24k)
		}
		decodeWith(t, "opusinfo", b, ".opus", nil)
	case FormatFLAC:
		out := decodeWith(t, "flac", b, ".flac", []string{"-d", "-c", "--force-raw-format", "--endian=little", "--sign=signed"})
		if out != nil && len(out) != 2*samples24k {
			t.Errorf("flac: decodes to %d bytes, want %d", len(out), 2*samples24k)
		}
	case FormatMP3:
		if len(b) < 4 || b[0] != 0xFF || b[1]&0xE0 != 0xE0 {
			t.Errorf("mp3: does not start with a frame sync: % x", b[:min(4, len(b))])
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// decodeWith runs a decoder on b saved with ext; it skips when the tool is
// missing (fails under CI=true: `make deps` installs it) and returns stdout.
func decodeWith(t *testing.T, tool string, b []byte, ext string, args []string) []byte {
	t.Helper()
	if _, err := exec.LookPath(tool); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s not installed: run make deps", tool)
		}
		t.Logf("%s not installed: decoder check skipped", tool)
		return nil
	}
	p := filepath.Join(t.TempDir(), "a"+ext)
	os.WriteFile(p, b, 0o644)
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(tool, append(args, p)...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", tool, p, err, stdout.String(), stderr.String())
	}
	if tool == "opusinfo" && strings.Contains(stdout.String()+stderr.String(), "WARNING") {
		t.Errorf("opusinfo warns:\n%s%s", stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}

type oggPage struct {
	flags   byte
	granule int64
	packet  []byte // the page's body
}

// parseOgg reads Ogg pages, checking each page's CRC.
func parseOgg(t *testing.T, b []byte) []oggPage {
	t.Helper()
	var pages []oggPage
	for len(b) > 0 {
		if len(b) < 27 || string(b[:4]) != "OggS" {
			t.Fatalf("ogg: no page at %d bytes from the end", len(b))
		}
		n := int(b[26])
		size := 27 + n
		body := 0
		for _, l := range b[27 : 27+n] {
			body += int(l)
		}
		page := append([]byte(nil), b[:size+body]...)
		crc := binary.LittleEndian.Uint32(page[22:])
		binary.LittleEndian.PutUint32(page[22:], 0)
		if got := encode.OggCRC(page); got != crc {
			t.Fatalf("ogg: page %d CRC %08x, computed %08x", len(pages), crc, got)
		}
		pages = append(pages, oggPage{flags: b[5], granule: int64(binary.LittleEndian.Uint64(b[6:])), packet: b[size : size+body]})
		b = b[size+body:]
	}
	return pages
}

// TestStreamFalseHasExactWAVSizes: "stream": false answers one WAV with exact
// RIFF and data sizes and a Content-Length, which soxi reads as the true
// duration; the samples equal the streamed answer's.
func TestStreamFalseHasExactWAVSizes(t *testing.T) {
	_, ts, logs := startServer(t, defaultOptions(), &engine.Calibration{})
	streamed := post(context.Background(), ts.URL, `{"input":"Hello there. General Kenobi."}`)
	whole := post(context.Background(), ts.URL, `{"input":"Hello there. General Kenobi.","stream":false}`)
	if whole.status != 200 || streamed.status != 200 {
		t.Fatalf("%d %d", whole.status, streamed.status)
	}
	if cl := whole.header.Get("Content-Length"); cl != strconv.Itoa(len(whole.body)) {
		t.Errorf("Content-Length %q for %d bytes", cl, len(whole.body))
	}
	if binary.LittleEndian.Uint32(whole.body[4:]) != uint32(len(whole.body)-8) || binary.LittleEndian.Uint32(whole.body[40:]) != uint32(len(whole.body)-44) {
		t.Errorf("sizes in the header are not exact")
	}
	if binary.LittleEndian.Uint32(streamed.body[40:]) != audio.StreamingSize {
		t.Errorf("streamed header lacks the streaming size")
	}
	if !bytes.Equal(whole.body[44:], streamed.body[44:]) {
		t.Errorf("stream false samples differ from the streamed ones")
	}
	waitFor(t, "a request log saying stream false", func() bool { return strings.Contains(logs.String(), `"stream":false`) })
	if _, err := exec.LookPath("soxi"); err == nil {
		p := filepath.Join(t.TempDir(), "a.wav")
		os.WriteFile(p, whole.body, 0o644)
		out, err := exec.Command("soxi", "-D", p).Output()
		if err != nil {
			t.Fatal(err)
		}
		want := float64(len(whole.body)-44) / 2 / 24000
		if got, _ := strconv.ParseFloat(strings.TrimSpace(string(out)), 64); got != want {
			t.Errorf("soxi -D = %s, want %v", out, want)
		}
	}
}

// TestSampleRateResamples: pcm at 8000 and 16000 is the 24 kHz answer's
// length scaled (libsoxr keeps the count to the sample), the header says
// the rate, and mulaw is 8 kHz.
func TestSampleRateResamples(t *testing.T) {
	_, ts, _ := startServer(t, defaultOptions(), &engine.Calibration{})
	n := 2 * 12 * 1440 // "Hello there." at 24 kHz, bytes
	for _, rate := range []int{8000, 16000, 24000} {
		r := post(context.Background(), ts.URL, `{"input":"Hello there.","response_format":"pcm","sample_rate":`+strconv.Itoa(rate)+`}`)
		if r.status != 200 || r.header.Get("X-Sample-Rate") != strconv.Itoa(rate) {
			t.Fatalf("rate %d: %d %v %s", rate, r.status, r.header, r.body)
		}
		if want := n * rate / 24000; abs(len(r.body)-want) > 4 {
			t.Errorf("rate %d: %d bytes, want %d", rate, len(r.body), want)
		}
	}
	r := post(context.Background(), ts.URL, `{"input":"Hello there.","response_format":"mulaw"}`)
	if r.header.Get("X-Sample-Rate") != "8000" || abs(len(r.body)-n/2/3) > 2 {
		t.Errorf("mulaw: rate %s, %d bytes", r.header.Get("X-Sample-Rate"), len(r.body))
	}
}

// TestVoicesRequest: {"voices": true} lists the engine's voices with
// language and engine, without taking a place in the queue.
func TestVoicesRequest(t *testing.T) {
	opts := defaultOptions()
	opts.QueueMaxDepth = 1
	s, ts, _ := startServer(t, opts, &engine.Calibration{})
	s.Gate().Acquire() // the queue is full; the list still answers
	defer s.Gate().Release()
	r := post(context.Background(), ts.URL, `{"voices":true}`)
	if r.status != 200 {
		t.Fatalf("%d %s", r.status, r.body)
	}
	var list VoiceList
	if err := json.Unmarshal(r.body, &list); err != nil {
		t.Fatal(err)
	}
	if list.Engine != "calibration" || list.Default != "calibration" || len(list.Voices) != 1 || list.Voices[0] != (engine.VoiceInfo{Name: "calibration", Language: "und", Engine: "calibration"}) {
		t.Errorf("voice list = %+v", list)
	}
}
