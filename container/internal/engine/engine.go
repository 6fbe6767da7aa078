// Package engine defines what the server asks of a speech engine and holds
// the calibration engine, which produces silence after a fixed amount of
// compute per segment so the gate, the scheduler and load tools can be
// measured without a real model.
package engine

import (
	"context"
	"errors"
	"math"
	"time"
)

// Segment is one unit of synthesis: a sentence or clause of a request.
type Segment struct {
	// Text is the segment's text.
	Text string
	// Voice is a name from the engine's Voices.
	Voice string
	// Speed is the speaking rate factor, 1 being normal.
	Speed float64
}

// Emit receives PCM16 mono samples as the engine produces them. An error
// (the client went away) tells the engine to stop. The server keeps samples
// until its client has taken them, so an engine must not change a slice it
// has emitted.
type Emit func(samples []int16) error

// Engine turns segments into audio. Synthesize must be safe to call from as
// many goroutines as the engine was configured with workers.
type Engine interface {
	// Name is the engine's ENGINE value, echoed in X-Engine.
	Name() string
	// SampleRate is the rate of every sample the engine emits.
	SampleRate() int
	// Voices lists the voice names a request may ask for, sorted.
	Voices() []string
	// DefaultVoice is used when a request names none.
	DefaultVoice() string
	// Synthesize produces seg's audio through emit, in order, one or more
	// calls. It returns ctx's error when ctx ends first.
	Synthesize(ctx context.Context, seg Segment, emit Emit) error
	// Close releases the engine's resources.
	Close() error
}

// Calibration is the calibration engine: no speech, only silence emitted
// after SegmentCompute per segment. The compute is a wait, not a busy loop:
// it holds a synthesis slot for the configured time the way a GPU-bound model
// would, without taking CPU from the load generator on the same machine.
type Calibration struct {
	// SegmentCompute is how long each segment takes before its audio.
	SegmentCompute time.Duration
}

// CalibrationSampleRate is the calibration engine's sample rate.
const CalibrationSampleRate = 24000

// calibrationRuneAudio is how much (silent) audio each rune of text yields,
// about a normal speaking rate.
const calibrationRuneAudio = 60 * time.Millisecond

// Name implements Engine.
func (c *Calibration) Name() string { return "calibration" }

// SampleRate implements Engine.
func (c *Calibration) SampleRate() int { return CalibrationSampleRate }

// Voices implements Engine.
func (c *Calibration) Voices() []string { return []string{"calibration"} }

// DefaultVoice implements Engine.
func (c *Calibration) DefaultVoice() string { return "calibration" }

// Synthesize implements Engine: it waits SegmentCompute, then emits silence
// as long as the text would take to say at speed, in chunks of at most 100 ms.
func (c *Calibration) Synthesize(ctx context.Context, seg Segment, emit Emit) error {
	if c.SegmentCompute > 0 {
		t := time.NewTimer(c.SegmentCompute)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
	speed := seg.Speed
	if speed <= 0 {
		speed = 1
	}
	runes := len([]rune(seg.Text))
	total := int(math.Round(float64(runes) * calibrationRuneAudio.Seconds() * CalibrationSampleRate / speed))
	if total < 1 {
		total = 1
	}
	const chunk = CalibrationSampleRate / 10
	buf := make([]int16, chunk)
	for total > 0 {
		n := min(total, chunk)
		if err := emit(buf[:n]); err != nil {
			return err
		}
		total -= n
	}
	return ctx.Err()
}

// Close implements Engine.
func (c *Calibration) Close() error { return nil }

// ErrSegmentTimeout is the cause of a segment's context when the segment ran
// past its time limit (SEGMENT_TIMEOUT) and the scheduler gave up on it.
var ErrSegmentTimeout = errors.New("segment time limit exceeded")

type limitKey struct{}

// WithLimitSignal returns ctx carrying exceeded, a channel the scheduler closes
// when the segment ran past its time limit. Unlike ctx's own cancellation
// (which a departed client also causes), the channel closes only on a time
// limit, and it closes even when ctx was already canceled: an engine that
// holds an external resource (a worker process) kills it when it closes.
func WithLimitSignal(ctx context.Context, exceeded <-chan struct{}) context.Context {
	return context.WithValue(ctx, limitKey{}, exceeded)
}

// LimitExceeded returns the channel WithLimitSignal put in ctx, or nil (a nil
// channel never becomes ready) when ctx carries none.
func LimitExceeded(ctx context.Context) <-chan struct{} {
	ch, _ := ctx.Value(limitKey{}).(<-chan struct{})
	return ch
}

// VoiceMixer is an Engine that accepts voice names beyond Voices: Kokoro's
// weighted mixes such as "af_bella(2)+af_sky(1)". CheckVoice says whether a
// name will synthesize, and if not, why (naming the part at fault).
type VoiceMixer interface {
	CheckVoice(name string) error
}

// VoiceLanguager is an Engine that knows each voice's language.
type VoiceLanguager interface {
	// VoiceLanguage returns the voice's language as a BCP 47-like tag
	// (espeak-ng's language names: en-us, en, fr, pt-br…).
	VoiceLanguage(name string) string
}

// VoiceInfo describes one voice for the voice list.
type VoiceInfo struct {
	Name     string `json:"name"`
	Language string `json:"language"`
	Engine   string `json:"engine"`
}

// ListVoices returns eng's voices with their languages ("und" when the
// engine does not say).
func ListVoices(eng Engine) []VoiceInfo {
	var out []VoiceInfo
	for _, v := range eng.Voices() {
		lang := "und"
		if l, ok := eng.(VoiceLanguager); ok {
			lang = l.VoiceLanguage(v)
		}
		out = append(out, VoiceInfo{Name: v, Language: lang, Engine: eng.Name()})
	}
	return out
}
