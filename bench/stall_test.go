package bench

import (
	"testing"
	"time"
)

// TestStall: synthetic chunk timelines at 1000 Hz mono PCM16 (2 bytes a frame, so 200 bytes = 100 ms).
func TestStall(t *testing.T) {
	const ms = time.Millisecond
	tests := []struct {
		name   string
		chunks []Chunk
		want   time.Duration
	}{
		{"empty", nil, 0},
		{"one chunk", []Chunk{{0, 200}}, 0},
		{"on time: each chunk before the player needs it", []Chunk{{0, 200}, {50 * ms, 200}, {150 * ms, 200}, {199 * ms, 200}}, 0},
		{"exactly on time", []Chunk{{0, 200}, {100 * ms, 200}, {200 * ms, 200}}, 0},
		{"late once, then catches up", []Chunk{{0, 200}, {180 * ms, 200}, {200 * ms, 200}, {300 * ms, 200}}, 80 * ms},
		{"starved: every chunk later than the last", []Chunk{{0, 200}, {150 * ms, 200}, {300 * ms, 200}, {450 * ms, 200}}, 150 * ms},
		{"one long gap mid-stream", []Chunk{{0, 400}, {100 * ms, 400}, {900 * ms, 200}}, 500 * ms},
		{"a half frame is not yet playable", []Chunk{{0, 201}, {101 * ms, 1}}, 1 * ms},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Stall(tt.chunks, 1000, 2); got != tt.want {
				t.Errorf("Stall = %v, want %v", got, tt.want)
			}
		})
	}
	if got := Stall([]Chunk{{0, 2}, {time.Hour, 2}}, 0, 2); got != 0 {
		t.Errorf("unknown rate: Stall = %v, want 0", got)
	}
}

// TestStallMatchesStream: ReadStream's incremental stall is Stall over the chunks it recorded.
func TestStallMatchesStream(t *testing.T) {
	audio := make([]byte, 300)
	res, err, _ := read(t, &stream{parts: [][]byte{append(wavHeader(1000), audio...), audio, make([]byte, 7), audio}}, StreamOptions{Chunks: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Chunks) != 4 || res.Stall == 0 {
		t.Fatalf("chunks %v, stall %v", res.Chunks, res.Stall)
	}
	if got := Stall(res.Chunks, res.SampleRate, 2); got != res.Stall {
		t.Errorf("Stall(chunks) = %v, ReadStream's = %v", got, res.Stall)
	}
}
