package encode

import (
	"math"
	"testing"
)

// DecodeMuLaw is the G.711 inverse of EncodeMuLaw, the check of its round trip.
func DecodeMuLaw(u byte) int16 {
	u = ^u
	sign := u & 0x80
	exp := int(u>>4) & 7
	mant := int(u & 0x0F)
	v := ((mant << 3) + 0x84) << exp
	v -= 0x84
	if sign != 0 {
		return int16(-v)
	}
	return int16(v)
}

// G.711 μ-law by the formula: the code points every table agrees on, and
// decode(encode(x)) within the segment's quantization step.
func TestMuLawG711(t *testing.T) {
	for in, want := range map[int16]byte{0: 0xFF, 1: 0xFF, -1: 0x7F, 32767: 0x80, -32768: 0x00} {
		if got := EncodeMuLaw(in); got != want {
			t.Errorf("EncodeMuLaw(%d) = %#x, want %#x", in, got, want)
		}
	}
	for x := -32768; x <= 32767; x += 7 {
		y := DecodeMuLaw(EncodeMuLaw(int16(x)))
		step := 4.0
		if ax := math.Abs(float64(x)); ax > 4 {
			step = ax / 16 // a μ-law segment holds 16 steps of its doubling width
		}
		if d := math.Abs(float64(int(y) - x)); d > step+8 && math.Abs(float64(x)) < 32635 {
			t.Fatalf("decode(encode(%d)) = %d", x, y)
		}
	}
}

// The resampler keeps its state across calls: feeding a signal in odd-sized
// chunks gives the length of the rate ratio to within a sample, with the
// flushed tail.
func TestResamplerStreams(t *testing.T) {
	for _, to := range []int{8000, 16000, 24000, 48000} {
		r, err := NewResampler(22050, to)
		if err != nil {
			t.Fatal(err)
		}
		in := make([]int16, 22050*2)
		for i := range in {
			in[i] = int16(8000 * math.Sin(float64(i)*2*math.Pi*440/22050))
		}
		n := 0
		for i := 0; i < len(in); i += 1237 {
			out, err := r.Process(in[i:min(i+1237, len(in))])
			if err != nil {
				t.Fatal(err)
			}
			n += len(out)
		}
		tail, err := r.Flush()
		if err != nil {
			t.Fatal(err)
		}
		n += len(tail)
		r.Close()
		if want := 2 * to; n < want-1 || n > want+1 {
			t.Errorf("22050→%d: %d samples for 2 s, want %d", to, n, want)
		}
	}
}
