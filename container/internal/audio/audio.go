// Package audio encodes synthesized samples for the wire: little-endian PCM16
// and a streaming WAV header whose sizes say "unknown length".
package audio

import (
	"encoding/binary"
	"math"
)

// StreamingSize is the RIFF and data chunk size written into a streaming WAV
// header: the length is not known when the header is sent, and readers treat
// 0xFFFFFFFF as "read until the end of the stream".
const StreamingSize = 0xFFFFFFFF

// WAVHeaderSize is the length in bytes of the header WAVHeader returns.
const WAVHeaderSize = 44

// WAVHeader returns a 44-byte canonical WAV header for PCM16 mono audio at
// sampleRate, with streaming (unknown) RIFF and data sizes.
func WAVHeader(sampleRate int) []byte {
	h := make([]byte, WAVHeaderSize)
	copy(h[0:4], "RIFF")
	binary.LittleEndian.PutUint32(h[4:8], StreamingSize)
	copy(h[8:12], "WAVE")
	copy(h[12:16], "fmt ")
	binary.LittleEndian.PutUint32(h[16:20], 16) // fmt chunk size
	binary.LittleEndian.PutUint16(h[20:22], 1)  // PCM
	binary.LittleEndian.PutUint16(h[22:24], 1)  // mono
	binary.LittleEndian.PutUint32(h[24:28], uint32(sampleRate))
	binary.LittleEndian.PutUint32(h[28:32], uint32(sampleRate*2)) // byte rate
	binary.LittleEndian.PutUint16(h[32:34], 2)                    // block align
	binary.LittleEndian.PutUint16(h[34:36], 16)                   // bits per sample
	copy(h[36:40], "data")
	binary.LittleEndian.PutUint32(h[40:44], StreamingSize)
	return h
}

// SetWAVSizes writes the exact RIFF and data sizes into wav, a header from
// WAVHeader followed by all of its samples: the form of a non-streamed answer
// ("stream": false), whose length tools such as soxi then report exactly.
func SetWAVSizes(wav []byte) {
	if len(wav) < WAVHeaderSize {
		return
	}
	binary.LittleEndian.PutUint32(wav[4:8], uint32(len(wav)-8))
	binary.LittleEndian.PutUint32(wav[40:44], uint32(len(wav)-WAVHeaderSize))
}

// PCM16Bytes appends samples to dst as little-endian 16-bit PCM and returns
// the extended slice.
func PCM16Bytes(dst []byte, samples []int16) []byte {
	for _, s := range samples {
		dst = binary.LittleEndian.AppendUint16(dst, uint16(s))
	}
	return dst
}

// FloatToPCM16 converts samples in [-1, 1] to PCM16, clipping values outside
// that range and mapping NaN to 0.
func FloatToPCM16(samples []float32) []int16 {
	out := make([]int16, len(samples))
	for i, f := range samples {
		switch {
		case math.IsNaN(float64(f)):
			out[i] = 0
		case f >= 1:
			out[i] = math.MaxInt16
		case f <= -1:
			out[i] = -math.MaxInt16
		default:
			out[i] = int16(math.Round(float64(f) * math.MaxInt16))
		}
	}
	return out
}
