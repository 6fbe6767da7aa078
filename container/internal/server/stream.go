package server

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// DefaultStreamBufferBytes is STREAM_BUFFER_BYTES's default: 256 MiB of
// synthesized audio (PCM16) held for readers slower than synthesis, over
// all requests together; about 90 minutes of 24 kHz audio.
const DefaultStreamBufferBytes = 256 << 20

// MinStreamBufferBytes is the smallest STREAM_BUFFER_BYTES: 1 MiB, about
// 20 s of 24 kHz audio.
const MinStreamBufferBytes = 1 << 20

// streamBuffers holds, for every request in flight, the audio synthesized
// and not yet written to its client. Synthesis never waits for a reader:
// a segment's audio goes here at once, so a request's whole audio is
// synthesized at the engine's pace and its place in the queue gate is given
// back then (the shield counts requests waiting for or running on the
// engine, docs/design.md "Queue gate"), however slowly its client reads. A request's own buffer is bounded
// by its text (MAX_TEXT_CHARS); all of them together by max. Past max the
// slowest stream is cut (enforceLocked).
//
// One mutex guards every stream's queue and the total: a push or pop is a
// few instructions, and a cut must see every stream at one instant.
type streamBuffers struct {
	max int64 // 0: no bound
	now func() time.Time

	mu      sync.Mutex
	total   int64
	streams map[*stream]struct{}
}

func newStreamBuffers(max int64) *streamBuffers {
	return &streamBuffers{max: max, now: time.Now, streams: map[*stream]struct{}{}}
}

// Bytes returns the audio bytes held for readers now.
func (b *streamBuffers) Bytes() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// stream is one request's buffer: the chunks its scheduler job pushed and
// its handler has not taken yet, and the handler's write in progress (to
// tell how slow its client is).
type stream struct {
	b *streamBuffers
	// ready holds a token when a chunk may be waiting.
	ready chan struct{}
	// cancel ends the request's context with the cut's reason; abort makes
	// the handler's write in progress fail at once.
	cancel context.CancelCauseFunc
	abort  func()

	// Under b.mu:
	q []chunk
	// bytes counts the audio in q and what the handler holds itself (a
	// "stream": false answer being assembled).
	bytes int64
	// writing is set while the handler is in a write; due is when that
	// write would be taken by a reader as fast as real time: its start plus
	// the duration of its audio.
	writing bool
	due     time.Time
	cut     *bufferCut
	closed  bool
}

// bufferCut is why a stream was cut: the total bound was reached and this
// stream's reader was the slowest.
type bufferCut struct {
	max      int64
	behind   time.Duration // how long its write had waited past its audio's duration (negative: not yet)
	writing  bool          // whether it was in a write at all
	buffered int64         // what it held
}

func (c *bufferCut) Error() string {
	how := "its client was taking everything it was sent, and it held the most"
	if c.writing {
		how = fmt.Sprintf("its write in progress had waited %s past the duration of its audio", c.behind.Round(time.Millisecond))
	}
	return fmt.Sprintf("the audio held for clients slower than synthesis reached %d bytes (STREAM_BUFFER_BYTES) and this stream's client was the slowest (%s; %d bytes held for it): the stream is cut",
		c.max, how, c.buffered)
}

// open registers a request's stream. cancel ends the request if it is cut;
// abort makes a write in progress fail at once (it is called only while the
// handler is in a write, so never after the handler has returned).
func (b *streamBuffers) open(cancel context.CancelCauseFunc, abort func()) *stream {
	st := &stream{b: b, ready: make(chan struct{}, 1), cancel: cancel, abort: abort}
	b.mu.Lock()
	b.streams[st] = struct{}{}
	b.mu.Unlock()
	return st
}

// close unregisters the stream and frees what it held. The handler calls it
// before it returns.
func (st *stream) close() {
	b := st.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if st.closed {
		return
	}
	st.closed = true
	st.dropLocked()
	delete(b.streams, st)
}

// dropLocked frees the stream's queue and its accounted bytes.
func (st *stream) dropLocked() {
	st.b.total -= st.bytes
	st.bytes = 0
	clear(st.q)
	st.q = nil
}

// push queues c without ever waiting for the reader. If the total passes
// the bound, the streams furthest behind are cut until it does not; push
// returns the cut's error when this stream is one of them (synthesis for it
// stops), and the request's context error once it has ended.
func (st *stream) push(c chunk) error {
	b := st.b
	b.mu.Lock()
	if st.cut != nil {
		b.mu.Unlock()
		return st.cut
	}
	if st.closed {
		b.mu.Unlock()
		return context.Canceled
	}
	n := 2 * int64(len(c.samples))
	st.q = append(st.q, c)
	st.bytes += n
	b.total += n
	b.enforceLocked()
	err := error(nil)
	if st.cut != nil {
		err = st.cut
	}
	b.mu.Unlock()
	select {
	case st.ready <- struct{}{}:
	default:
	}
	return err
}

// hold accounts n more bytes the handler keeps itself (a "stream": false
// answer is assembled whole before it is written); it reports the cut if the
// bound made this stream the one to go.
func (st *stream) hold(n int) *bufferCut {
	b := st.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if st.cut != nil {
		return st.cut
	}
	st.bytes += int64(n)
	b.total += int64(n)
	b.enforceLocked()
	return st.cut
}

// pop takes the next chunk, waiting for one until ctx ends.
func (st *stream) pop(ctx context.Context) (chunk, error) {
	b := st.b
	for {
		b.mu.Lock()
		if len(st.q) > 0 {
			c := st.q[0]
			st.q[0] = chunk{}
			st.q = st.q[1:]
			n := 2 * int64(len(c.samples))
			st.bytes -= n
			b.total -= n
			b.mu.Unlock()
			return c, nil
		}
		b.mu.Unlock()
		select {
		case <-st.ready:
		case <-ctx.Done():
			return chunk{}, ctx.Err()
		}
	}
}

// beginWrite marks the handler in a write that a reader as fast as real time
// would have taken by due, after running setDeadline (the write's deadline)
// under the same lock a cut takes: a cut either comes first and the write is
// refused, or comes after and aborts it. It returns the cut's error if the
// stream has been cut.
func (st *stream) beginWrite(due time.Time, setDeadline func()) *bufferCut {
	b := st.b
	b.mu.Lock()
	defer b.mu.Unlock()
	if st.cut != nil {
		return st.cut
	}
	setDeadline()
	st.writing, st.due = true, due
	return nil
}

// endWrite marks the write done.
func (st *stream) endWrite() {
	b := st.b
	b.mu.Lock()
	defer b.mu.Unlock()
	st.writing = false
}

// cutReason returns the cut's error, or nil if the stream was not cut.
func (st *stream) cutReason() *bufferCut {
	b := st.b
	b.mu.Lock()
	defer b.mu.Unlock()
	return st.cut
}

// behindLocked is how slow the stream's reader is now: in a write, how long
// past the duration of its audio the write has waited (a reader as fast as
// real time takes any write within that duration once the socket buffers
// are full; one that reads nothing falls further behind every second). This
// gives the socket buffers no credit, unlike CLIENT_LAG_LIMIT's measure: a
// client that reads nothing is the slowest from its first blocked write on,
// not once the audio in its socket buffers has played. A handler not in a
// write is waiting for audio or encoding it: its client has taken all it was
// given, so it is not behind at all (ok false).
func (st *stream) behindLocked(now time.Time) (time.Duration, bool) {
	if !st.writing {
		return 0, false
	}
	return now.Sub(st.due), true
}

// enforceLocked cuts streams, the slowest first (behindLocked), until the
// total is within the bound. Only streams holding audio are candidates
// (cutting one that holds nothing frees nothing); streams not in a write
// come after every stream in one, the one holding the most first.
func (b *streamBuffers) enforceLocked() {
	if b.max <= 0 {
		return
	}
	now := b.now()
	for b.total > b.max {
		var victim *stream
		var vBehind time.Duration
		var vWriting bool
		for st := range b.streams {
			if st.bytes == 0 || st.cut != nil {
				continue
			}
			behind, writing := st.behindLocked(now)
			switch {
			case victim == nil,
				writing && !vWriting,
				writing == vWriting && writing && behind > vBehind,
				writing == vWriting && !writing && st.bytes > victim.bytes:
				victim, vBehind, vWriting = st, behind, writing
			}
		}
		if victim == nil {
			return
		}
		victim.cutLocked(&bufferCut{max: b.max, behind: vBehind, writing: vWriting, buffered: victim.bytes})
	}
}

// cutLocked cuts the stream: its queue is freed, its request's context ends
// with the reason, and a write in progress fails at once.
func (st *stream) cutLocked(c *bufferCut) {
	st.cut = c
	st.dropLocked()
	st.cancel(c)
	if st.writing && st.abort != nil {
		st.abort()
	}
}
