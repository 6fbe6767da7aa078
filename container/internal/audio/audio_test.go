package audio

import (
	"encoding/binary"
	"math"
	"testing"
)

func TestWAVHeaderFields(t *testing.T) {
	h := WAVHeader(22050)
	if len(h) != WAVHeaderSize {
		t.Fatalf("header is %d bytes, want %d", len(h), WAVHeaderSize)
	}
	le := binary.LittleEndian
	checks := []struct {
		name      string
		got, want uint32
	}{
		{"riff size", le.Uint32(h[4:]), StreamingSize},
		{"fmt size", le.Uint32(h[16:]), 16},
		{"format", uint32(le.Uint16(h[20:])), 1},
		{"channels", uint32(le.Uint16(h[22:])), 1},
		{"rate", le.Uint32(h[24:]), 22050},
		{"byte rate", le.Uint32(h[28:]), 44100},
		{"block align", uint32(le.Uint16(h[32:])), 2},
		{"bits", uint32(le.Uint16(h[34:])), 16},
		{"data size", le.Uint32(h[40:]), StreamingSize},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	for off, tag := range map[int]string{0: "RIFF", 8: "WAVE", 12: "fmt ", 36: "data"} {
		if string(h[off:off+4]) != tag {
			t.Errorf("bytes %d-%d = %q, want %q", off, off+4, h[off:off+4], tag)
		}
	}
}

func TestPCM16(t *testing.T) {
	got := FloatToPCM16([]float32{0, 0.5, -0.5, 1.5, -2, float32(math.NaN())})
	want := []int16{0, 16384, -16384, 32767, -32767, 0}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("sample %d = %d, want %d", i, got[i], want[i])
		}
	}
	b := PCM16Bytes(nil, []int16{1, -2})
	if len(b) != 4 || int16(binary.LittleEndian.Uint16(b)) != 1 || int16(binary.LittleEndian.Uint16(b[2:])) != -2 {
		t.Errorf("PCM16Bytes = %v", b)
	}
}
