// Package encode turns an engine's PCM16 mono samples into the response
// formats, incrementally: each call takes the samples of one chunk and
// returns the bytes that can be sent now, so every format streams as the
// segments are produced. Resampling goes through libsoxr, Opus through
// libopus (in Ogg pages written here), MP3 through LAME and FLAC through
// libFLAC, all Debian packages linked with cgo.
package encode

import (
	"fmt"

	"github.com/speech-infra/speech-infra/container/internal/audio"
)

// Encoder encodes one response. It is not safe for concurrent use; Close
// must be called once the response is done (it frees C memory).
type Encoder interface {
	// Encode appends to dst what samples (at the engine's rate) encode to
	// now; encoders that work in frames keep a partial frame for later.
	Encode(dst []byte, samples []int16) ([]byte, error)
	// Finish appends everything still held (resampler tail, last frame,
	// end-of-stream marks). Encode must not be called after it.
	Finish(dst []byte) ([]byte, error)
	// Close frees the encoder's resources.
	Close()
}

// Spec names an encoding: a format, the engine's rate and the rate asked
// for (0 for the format's default).
type Spec struct {
	Format     string
	NativeRate int
	SampleRate int
}

// Format names (the request's response_format values).
const (
	WAV   = "wav"
	PCM   = "pcm"
	Opus  = "opus"
	MuLaw = "mulaw"
	MP3   = "mp3"
	FLAC  = "flac"
)

// OutputRate is the sample rate a client receives for spec: the rate asked
// for, else 8000 for mulaw, 48000 for opus (the rate Ogg Opus granules and
// decoders use), else the engine's.
func OutputRate(spec Spec) int {
	switch {
	case spec.SampleRate > 0:
		return spec.SampleRate
	case spec.Format == MuLaw:
		return 8000
	case spec.Format == Opus:
		return 48000
	}
	return spec.NativeRate
}

// ContentType is the response's Content-Type for format.
func ContentType(format string) string {
	switch format {
	case WAV:
		return "audio/wav"
	case Opus:
		return "audio/ogg; codecs=opus"
	case MuLaw:
		return "audio/basic"
	case MP3:
		return "audio/mpeg"
	case FLAC:
		return "audio/flac"
	}
	return "audio/pcm"
}

// New returns an encoder for spec.
func New(spec Spec) (Encoder, error) {
	out := OutputRate(spec)
	var rs *Resampler
	newRS := func(to int) error {
		if to == spec.NativeRate {
			return nil
		}
		var err error
		rs, err = NewResampler(spec.NativeRate, to)
		return err
	}
	switch spec.Format {
	case WAV, PCM:
		if err := newRS(out); err != nil {
			return nil, err
		}
		p := &pcmEncoder{rs: rs}
		if spec.Format == WAV {
			p.header = audio.WAVHeader(out)
		}
		return p, nil
	case MuLaw:
		if err := newRS(8000); err != nil {
			return nil, err
		}
		return &pcmEncoder{rs: rs, mulaw: true}, nil
	case Opus:
		if err := newRS(OpusEncodeRate); err != nil {
			return nil, err
		}
		return newOpusEncoder(rs, spec.NativeRate)
	case MP3:
		if err := newRS(out); err != nil {
			return nil, err
		}
		return newMP3Encoder(rs, out)
	case FLAC:
		if err := newRS(out); err != nil {
			return nil, err
		}
		return newFLACEncoder(rs, out)
	}
	return nil, fmt.Errorf("encode: unknown format %q", spec.Format)
}

// resample runs samples through rs when there is one.
func resample(rs *Resampler, samples []int16) ([]int16, error) {
	if rs == nil {
		return samples, nil
	}
	return rs.Process(samples)
}

func flushResampler(rs *Resampler) ([]int16, error) {
	if rs == nil {
		return nil, nil
	}
	return rs.Flush()
}

// pcmEncoder writes PCM16 (with a streaming WAV header first for wav) or
// G.711 μ-law.
type pcmEncoder struct {
	rs      *Resampler
	header  []byte
	mulaw   bool
	started bool
}

func (p *pcmEncoder) put(dst []byte, s []int16) []byte {
	if !p.started {
		p.started = true
		dst = append(dst, p.header...)
	}
	if p.mulaw {
		return MuLawBytes(dst, s)
	}
	return audio.PCM16Bytes(dst, s)
}

func (p *pcmEncoder) Encode(dst []byte, samples []int16) ([]byte, error) {
	s, err := resample(p.rs, samples)
	if err != nil {
		return dst, err
	}
	return p.put(dst, s), nil
}

func (p *pcmEncoder) Finish(dst []byte) ([]byte, error) {
	s, err := flushResampler(p.rs)
	if err != nil {
		return dst, err
	}
	return p.put(dst, s), nil
}

func (p *pcmEncoder) Close() {
	if p.rs != nil {
		p.rs.Close()
	}
}
