package bench

import "time"

// DefaultStallJitter is the allowance added to the stall budget before a step's p95 stall fails it. A
// real-time player buffers a little before it starts, and the client's own scheduling, the network and the
// TCP stack jitter arrivals by a few milliseconds to tens of milliseconds; 50 ms is below what a listener
// notices as a gap (a short pause between words is 100-200 ms) and above that noise. Config.StallJitter
// replaces it.
const DefaultStallJitter = 50 * time.Millisecond

// Chunk is one arrival of audio on a response stream: when it arrived, as an offset from the first audio
// byte, and how many audio bytes (after any WAV header) it carried.
type Chunk struct {
	At    time.Duration
	Bytes int64
}

// Stall is the playback continuity of one response: the longest time by which an audio byte arrived after a
// real-time player, started at the first audio byte, would have needed it. Chunk i's first sample is needed
// at (audio bytes before it ÷ frame bytes) ÷ rate seconds after the first audio byte; its lateness is its
// arrival minus that. Stall is the largest lateness, never negative, and 0 when rate or frame is not
// positive (the sample rate is unknown).
//
// The schedule is fixed at the first audio byte (the definition in docs/design.md, "Playback continuity"): a
// stream that pauses for 300 ms leaves every later byte late by that much until the stream catches up by
// arriving faster than real time. The stall is therefore the longest silence a listener hears once audio
// has started, whatever the shape of the gaps.
func Stall(chunks []Chunk, rate, frame int) time.Duration {
	var worst time.Duration
	var before int64
	for _, c := range chunks {
		if late := lateness(c.At, before, rate, frame); late > worst {
			worst = late
		}
		before += c.Bytes
	}
	return worst
}

// lateness is how late audio arriving at offset at comes when before audio bytes preceded it.
func lateness(at time.Duration, before int64, rate, frame int) time.Duration {
	if rate <= 0 || frame <= 0 {
		return 0
	}
	due := time.Duration(float64(before/int64(frame)) / float64(rate) * float64(time.Second))
	return at - due
}
