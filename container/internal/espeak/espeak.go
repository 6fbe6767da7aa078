// Package espeak binds libespeak-ng through cgo: speech synthesis for the
// espeak engine and IPA phonemes for the kokoro engine's G2P.
//
// libespeak-ng keeps global state and is not thread-safe, so every call into
// it in this process holds one process-wide lock. The espeak engine gets
// parallelism from a pool of worker processes (see Pool and README.md).
package espeak

/*
#cgo LDFLAGS: -lespeak-ng
#include <stdlib.h>
#include "espeak_helper.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"unsafe"
)

// SampleRate is the rate libespeak-ng synthesizes at.
const SampleRate = 22050

// bufferMillis is how much audio libespeak-ng hands to the callback at a
// time. Synthesis runs far faster than real time, so a larger buffer costs
// almost nothing in time to first audio and saves the worker pool pipe writes.
const bufferMillis = 300

// DefaultRate is espeak-ng's normal speaking rate in words per minute; a
// request's speed multiplies it.
const DefaultRate = 175

// Voices are the voice names the espeak engine offers, checked at load.
var Voices = []string{"en", "en-gb-scotland", "en-gb-x-rp", "en-us"}

// DefaultVoice is the voice used when a request names none.
const DefaultVoice = "en-us"

var (
	mu        sync.Mutex // guards every call into libespeak-ng and the fields below
	initErr   error
	initDone  bool
	curVoice  string
	curRate   int
	curEmit   func([]int16) error
	emitErr   error
	errNoInit = errors.New("espeak-ng: espeak_Initialize failed (is espeak-ng-data installed?)")
)

// ensureInit initializes libespeak-ng once. Callers hold mu.
func ensureInit() error {
	if initDone {
		return initErr
	}
	initDone = true
	rate := int(C.helper_init(C.int(bufferMillis)))
	if rate <= 0 {
		initErr = errNoInit
	} else if rate != SampleRate {
		initErr = fmt.Errorf("espeak-ng: sample rate is %d, want %d", rate, SampleRate)
	}
	return initErr
}

// Init initializes libespeak-ng in this process and checks that every voice
// in Voices loads.
func Init() error {
	mu.Lock()
	defer mu.Unlock()
	if err := ensureInit(); err != nil {
		return err
	}
	for _, v := range Voices {
		if err := setVoice(v); err != nil {
			return err
		}
	}
	return nil
}

// setVoice selects voice. Callers hold mu.
func setVoice(voice string) error {
	if voice == curVoice {
		return nil
	}
	cs := C.CString(voice)
	defer C.free(unsafe.Pointer(cs))
	if C.helper_set_voice(cs) != 0 {
		return fmt.Errorf("espeak-ng: voice %q is not installed", voice)
	}
	curVoice = voice
	curRate = 0 // a voice change resets the rate
	return nil
}

// RateFor returns the espeak-ng words-per-minute rate for a speed factor.
func RateFor(speed float64) int {
	if speed <= 0 {
		speed = 1
	}
	return int(math.Round(DefaultRate * speed))
}

//export goSynthChunk
func goSynthChunk(wav *C.short, n C.int) C.int {
	if curEmit == nil || emitErr != nil {
		return 1
	}
	samples := unsafe.Slice((*int16)(unsafe.Pointer(wav)), int(n))
	// The buffer belongs to libespeak-ng: hand the receiver its own copy.
	if err := curEmit(append([]int16(nil), samples...)); err != nil {
		emitErr = err
		return 1 // abort synthesis
	}
	return 0
}

// Synthesize speaks text in this process with voice at rate (words per
// minute), passing audio to emit as libespeak-ng produces it. Calls are
// serialized by the process-wide lock; an error from emit stops synthesis and
// is returned.
func Synthesize(text, voice string, rate int, emit func([]int16) error) error {
	mu.Lock()
	defer mu.Unlock()
	if err := ensureInit(); err != nil {
		return err
	}
	if err := setVoice(voice); err != nil {
		return err
	}
	if rate != curRate {
		if C.helper_set_rate(C.int(rate)) != 0 {
			return fmt.Errorf("espeak-ng: rate %d rejected", rate)
		}
		curRate = rate
	}
	curEmit, emitErr = emit, nil
	defer func() { curEmit, emitErr = nil, nil }()
	cs := C.CString(text)
	defer C.free(unsafe.Pointer(cs))
	rc := C.helper_synth(cs, C.size_t(len(text)+1))
	if emitErr != nil {
		return emitErr
	}
	if rc != 0 {
		return errors.New("espeak-ng: espeak_Synth failed")
	}
	return nil
}

// Phonemes returns the IPA phonemes of text in voice's language (for example
// "en-us"), clause results joined by single spaces, as espeak-ng's
// espeak_TextToPhonemes produces them. Punctuation is not kept: callers that
// need it split it off first.
func Phonemes(text, voice string) (string, error) {
	mu.Lock()
	defer mu.Unlock()
	if err := ensureInit(); err != nil {
		return "", err
	}
	if err := setVoice(voice); err != nil {
		return "", err
	}
	cs := C.CString(text)
	defer C.free(unsafe.Pointer(cs))
	ptr := unsafe.Pointer(cs)
	var parts []string
	for ptr != nil {
		out := C.helper_text_to_phonemes(&ptr)
		if out == nil {
			break
		}
		if s := strings.TrimSpace(C.GoString(out)); s != "" {
			parts = append(parts, s)
		}
	}
	return strings.Join(parts, " "), nil
}
